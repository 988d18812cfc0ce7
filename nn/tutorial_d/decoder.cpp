#include <xtgrad/nn/tutorial_d/decoder.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/nn/tutorial_d/clone.hpp>

namespace xtgrad::nn::tutorial_d {

namespace {
const TransformerDecoderLayer& given_layer(const TransformerDecoderOptions& o) {
    if (!o.decoder_layer()) fail("TransformerDecoder: decoder_layer is null; give the layer to clone");
    return *o.decoder_layer();
}
}  // namespace

TransformerDecoder::TransformerDecoder(const TransformerDecoderOptions& o) {
    const TransformerDecoderLayer& decoder_layer = given_layer(o);
    layers = register_module("layers", std::make_shared<ModuleList<TransformerDecoderLayer>>());
    for (std::size_t i = 0; i < o.num_layers(); ++i) layers->push_back(deep_copy(decoder_layer));  // torch's _get_clones
    if (o.norm()) norm = register_module("norm", o.norm());
}

// The options only borrow the layer for the constructor, which copies it: a non-owning pointer.
TransformerDecoder::TransformerDecoder(const TransformerDecoderLayer& decoder_layer, std::size_t num_layers,
                                       std::shared_ptr<LayerNorm> final_norm)
    : TransformerDecoder(TransformerDecoderOptions(borrowed(decoder_layer), num_layers).norm(std::move(final_norm))) {}

Tensor TransformerDecoder::forward(const Tensor& tgt, const Tensor& memory, const AttentionMask& tgt_mask,
                                   const AttentionMask& memory_mask, const AttentionMask& tgt_key_padding_mask,
                                   const AttentionMask& memory_key_padding_mask) const {
    auto scope = enter(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask);
    // x: (T, N, E), memory: (S, N, E) (batch first if batch_first)
    Tensor x = tgt;
    for (const auto& layer : *layers)
        x = layer->forward(x, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask);
    return scope.output(norm ? norm->forward(x) : x);
}

}  // namespace xtgrad::nn::tutorial_d
