#include "nn/tutorial_d/transformer.hpp"

#include "autograd/error.hpp"
#include "autograd/ops.hpp"
#include "nn/init.hpp"

#include <limits>

namespace xtgrad::nn::tutorial_d {

TransformerLayerOptions TransformerOptions::layer() const {
    return {.d_model = d_model,
            .nhead = nhead,
            .dim_feedforward = dim_feedforward,
            .dropout = dropout,
            .activation = activation,
            .layer_norm_eps = layer_norm_eps,
            .batch_first = batch_first,
            .norm_first = norm_first};
}

Transformer::Transformer(const TransformerOptions& o) : options(o) {
    encoder = register_module("encoder", std::make_shared<TransformerEncoder>(o.layer(), o.num_encoder_layers,
                                                                              /*final_norm=*/true, o.pe, o.pe_max_len));
    decoder = register_module("decoder",
                              std::make_shared<TransformerDecoder>(o.layer(), o.num_decoder_layers, /*final_norm=*/true));
    for (Tensor& p : parameters())
        if (p.dim() > 1) init::xavier_uniform_(p);
}

Tensor Transformer::forward(const Tensor& src, const Tensor& tgt, const AttentionMask& src_mask,
                            const AttentionMask& tgt_mask, const AttentionMask& memory_mask,
                            const AttentionMask& src_key_padding_mask, const AttentionMask& tgt_key_padding_mask,
                            const AttentionMask& memory_key_padding_mask) const {
    auto scope = enter(src, tgt, src_mask, tgt_mask, memory_mask, src_key_padding_mask, tgt_key_padding_mask, memory_key_padding_mask);
    // src: (S, N, E), tgt: (T, N, E), or batch first
    if (!src.defined() || !tgt.defined() || src.dim() != 3 || tgt.dim() != 3)
        module_error(*this, "Transformer", fmt::format("src and tgt must be 3-D, got {} and {}",
                                                       src.defined() ? shape_str(src.shape()) : "undefined",
                                                       tgt.defined() ? shape_str(tgt.shape()) : "undefined"));
    const int batch_axis = options.batch_first ? 0 : 1;
    if (src.size(batch_axis) != tgt.size(batch_axis))
        module_error(*this, "Transformer", fmt::format("the batch number of src and tgt must be equal, got src {} and "
                                                       "tgt {} (batch axis {})",
                                                       shape_str(src.shape()), shape_str(tgt.shape()), batch_axis));
    if (src.size(2) != options.d_model || tgt.size(2) != options.d_model)
        module_error(*this, "Transformer", fmt::format("the feature number of src and tgt must be equal to d_model {}, "
                                                       "got src {} and tgt {}",
                                                       options.d_model, shape_str(src.shape()), shape_str(tgt.shape())));
    const Tensor memory = encoder->forward(src, src_mask, src_key_padding_mask);
    return scope.output(decoder->forward(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask));
}

Tensor Transformer::generate_square_subsequent_mask(std::size_t sz) {
    // the tutorial: (triu(ones) == 1).T marks j <= i as kept; the rest (j > i) becomes -inf
    Array mask = xt::zeros<float>({sz, sz});
    for (std::size_t i = 0; i < sz; ++i)
        for (std::size_t j = i + 1; j < sz; ++j) mask(i, j) = -std::numeric_limits<float>::infinity();
    return Tensor(std::move(mask));
}

}  // namespace xtgrad::nn::tutorial_d
