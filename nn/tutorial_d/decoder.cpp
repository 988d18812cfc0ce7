#include "nn/tutorial_d/decoder.hpp"

#include "nn/init.hpp"

namespace xtgrad::nn::tutorial_d {

TransformerDecoder::TransformerDecoder(const TransformerLayerOptions& layer, std::size_t num_layers, bool final_norm) {
    layers = register_module("layers", std::make_shared<ModuleList<TransformerDecoderLayer>>());
    // num_layers clones of one layer, as torch.nn (equal initial values, separate parameters)
    init::as_clones(num_layers, [&] { layers->push_back(std::make_shared<TransformerDecoderLayer>(layer)); });
    if (final_norm) norm = register_module("norm", std::make_shared<LayerNorm>(layer.d_model, layer.layer_norm_eps));
}

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
