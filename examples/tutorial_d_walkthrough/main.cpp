// Tutorial D walk-through: builds each module of "Transformer源代码解释之PyTorch篇" at the
// tutorial's shapes and prints each stage's shape, as the tutorial does (docs/tutorial_d.md
// shows the same code beside the tutorial's PyTorch).
#include "examples/common/cli.hpp"
#include <xtgrad/nn/tutorial_d/tutorial_d.hpp>
#include <xtgrad/xtgrad.hpp>

using namespace xtgrad;
using namespace xtgrad::nn::tutorial_d;

namespace {
void show(const char* what, const Tensor& t) { fmt::print("{:<58} {}\n", what, shape_str(t.shape())); }
}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Build each module of tutorial D at the tutorial's shapes and print each stage's shape.",
                 "tutorial_d_walkthrough"};
    if (std::optional<int> status = cli::parse_or_exit(app, argc, argv)) return *status;
    try {
        manual_seed(0);
        Generator& gen = default_generator();
        NoGradGuard no_grad;  // a shape walk-through: no training here

        fmt::print("== 位置编码 (positional encoding)\n");
        Tensor X = randn({2, 4, 10}, gen);
        show("positional_encoding(X (2, 4, 10), 10, dropout_p 0.1)", positional_encoding(X, 10, 0.1f));

        fmt::print("== 多头注意力 (MultiheadAttention(100, 4, dropout 0.1)), src (L 2, N 4, E 100)\n");
        MultiheadAttention multihead_attn(100, 4, 0.1f);
        multihead_attn.eval();
        Tensor src = randn({2, 4, 100}, gen);
        auto [attn_output, attn_output_weights] = multihead_attn.forward(src, src, src);
        show("attn_output", attn_output);
        show("attn_output_weights (N, L, S), averaged over the heads", attn_output_weights);
        show("in_proj_weight [3E, E]", multihead_attn.in_proj_weight);

        fmt::print("== Encoder (d_model 512, nhead 8, dim_feedforward 2048)\n");
        TransformerEncoderLayer encoder_layer(512, 8);
        encoder_layer.eval();
        show("TransformerEncoderLayer(src (32, 10, 512))", encoder_layer.forward(randn({32, 10, 512}, gen)));
        TransformerEncoder transformer_encoder(encoder_layer, 6);  // 6 deep copies of encoder_layer
        transformer_encoder.eval();
        show("TransformerEncoder(6 layers)(src (10, 32, 512))", transformer_encoder.forward(randn({10, 32, 512}, gen)));

        fmt::print("== Decoder\n");
        TransformerDecoderLayer decoder_layer(512, 8);
        TransformerDecoder transformer_decoder(decoder_layer, 6);
        transformer_decoder.eval();
        Tensor memory = rand({10, 32, 512}, gen), tgt = rand({20, 32, 512}, gen);
        show("TransformerDecoder(6 layers)(tgt (20, 32, 512), memory (10, 32, 512))", transformer_decoder.forward(tgt, memory));

        fmt::print("== Transformer (nhead 16, 12 encoder layers, as the tutorial's example)\n");
        Transformer transformer_model(TransformerOptions().nhead(16).num_encoder_layers(12));
        transformer_model.eval();
        Tensor causal = Transformer::generate_square_subsequent_mask(20);
        show("generate_square_subsequent_mask(20)", causal);
        show("Transformer(src (10, 32, 512), tgt (20, 32, 512), tgt_mask)",
             transformer_model.forward(rand({10, 32, 512}, gen), tgt, {}, causal));
        fmt::print("parameters: {:.1f} M\n", transformer_model.num_parameters() / 1e6);
        return 0;
    } catch (const std::exception& e) {
        fmt::print(stderr, "tutorial_d_walkthrough: {}\n", e.what());
        return cli::kRuntimeError;
    }
}
