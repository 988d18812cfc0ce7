// docs/tutorial_d.md's "The functional core", compiled and run as shown: the lines between the
// markers are the page's block without its #include and using lines (no blank lines, so
// tests/docs/run_doc_blocks.py finds them line for line), then checks of what its comments say.
#include "tests/nn/tutorial_d_util.hpp"

TEST_SUITE_BEGIN("tutorial_d");

using namespace xtgrad;
using namespace xtgrad::nn::tutorial_d;

TEST_CASE("tutorial D: the functional core as docs/tutorial_d.md shows it") {
    // --- docs/tutorial_d.md
    Generator& gen = default_generator();
    Tensor query = randn({4, 2, 8}, gen), memory = randn({5, 2, 8}, gen);  // (L, N, E), (S, N, E)
    Tensor in_proj_weight = randn({24, 8}, gen), in_proj_bias = Tensor::zeros({24});
    Tensor out_proj_weight = randn({8, 8}, gen), out_proj_bias = Tensor::zeros({8});
    // _in_projection_packed: q is k is v (self-attention): one product with the whole (3E, E) weight, chunked
    InProjection self = in_projection_packed(query, query, query, in_proj_weight, in_proj_bias);
    // k is v (encoder-decoder attention): q with rows 0:E, k and v from one product with rows E:3E
    InProjection cross = in_projection_packed(query, memory, memory, in_proj_weight, in_proj_bias);
    // multi_head_attention_forward, as the tutorial calls it: positional arguments, then keywords
    auto [attn_output, attn_output_weights] = multi_head_attention_forward(
        query, memory, memory,
        MultiheadAttentionForwardFuncOptions(/*embed_dim_to_check=*/8, /*num_heads=*/2, in_proj_weight, in_proj_bias,
                                             /*bias_k=*/{}, /*bias_v=*/{}, /*add_zero_attn=*/false, /*dropout_p=*/0.f,
                                             out_proj_weight, out_proj_bias)
            .training(false)
            .key_padding_mask(Mask(xt::zeros<bool>({2, 5})))
            .average_attn_weights(false));
    // attn_output (4, 2, 8); attn_output_weights (2, 2, 4, 5): per head
    // the modules, with their options
    MultiheadAttention mha(MultiheadAttentionOptions(8, 2).add_bias_kv(true).add_zero_attn(true));
    auto [out, weights] = mha.forward(query, memory, memory);  // weights (2, 4, 7): 5 keys + bias_k + the zero key
    TransformerEncoderLayer layer(TransformerEncoderLayerOptions(8, 2).dim_feedforward(16).activation("gelu"));
    TransformerEncoder encoder(layer, 3, std::make_shared<nn::LayerNorm>(8));  // 3 deep copies of layer, a final norm
    Transformer model(TransformerOptions(8, 2).dim_feedforward(16).custom_encoder(
        std::make_shared<TransformerEncoder>(layer, 2, nullptr, PositionalEncodingAt::none)));
    Tensor y = model.forward(memory, query, {}, Transformer::generate_square_subsequent_mask(4));  // (4, 2, 8)
    // --- end of docs/tutorial_d.md
    CHECK(self.q.shape() == Shape{4, 2, 8});
    CHECK(test::max_abs_diff(cross.q.data(), self.q.data()) < 1e-5f);
    CHECK(cross.k.shape() == Shape{5, 2, 8});
    CHECK(attn_output.shape() == Shape{4, 2, 8});
    CHECK(attn_output_weights.shape() == Shape{2, 2, 4, 5});
    CHECK(out.shape() == Shape{4, 2, 8});
    CHECK(weights.shape() == Shape{2, 4, 7});
    CHECK(encoder.layers->size() == 3);
    CHECK(model.encoder_as().layers->size() == 2);
    CHECK(y.shape() == Shape{4, 2, 8});
}

TEST_SUITE_END();
