// Tutorial D walk-through: builds each module of "Transformer源代码解释之PyTorch篇" at the
// tutorial's shapes and prints each stage's shape, as the tutorial does, and at a small size
// the values: masks, per-head and averaged attention weights, outputs (docs/tutorial_d.md
// shows the same code beside the tutorial's PyTorch).
#include "examples/common/cli.hpp"
#include <xtgrad/nn/tutorial_d/tutorial_d.hpp>
#include <xtgrad/xtgrad.hpp>

#include <filesystem>

using namespace xtgrad;
using namespace xtgrad::nn::tutorial_d;

namespace {
void show(const char* what, const Tensor& t) { fmt::print("{:<58} {}\n", what, shape_str(t.shape())); }

// A boolean mask as torch prints one: tensor([[False,  True], ...]) (2-D).
std::string mask_str(const Mask& m) {
    std::string s = "tensor([";
    for (std::size_t i = 0; i < m.shape(0); ++i) {
        s += i ? ",\n        [" : "[";
        for (std::size_t j = 0; j < m.shape(1); ++j) s += fmt::format("{}{}", j ? ", " : "", m(i, j) ? " True" : "False");
        s += "]";
    }
    return s + "])";
}

// Tutorial D's masks and attention weights as values, at a size small enough to read:
// 4 positions, a batch of 2 whose second sequence ends in one padding token, 2 heads of 4.
void values_at_a_small_size(Generator& gen, const std::string& out) {
    constexpr std::size_t L = 4, N = 2, E = 8, heads = 2;
    fmt::print("== 遮挡机制 (masks), values: L = S = {}, N = {}\n", L, N);
    Tensor causal = Transformer::generate_square_subsequent_mask(L);
    fmt::print("attn_mask = generate_square_subsequent_mask({}): 0 keeps a key, -inf masks it (a later position)\n{}\n",
               L, to_string(causal));
    Mask padding = xt::zeros<bool>({N, L});
    padding(1, L - 1) = true;
    fmt::print("key_padding_mask (N, S): True masks a key; sequence 1 ends in padding\n{}\n", mask_str(padding));
    AttentionMask merged = AttentionMask(causal).merged_with(AttentionMask(padding).reshaped({N, 1, L}));
    fmt::print("merged (N, L, S): attn_mask.masked_fill(key_padding_mask, -inf), as multi_head_attention_forward does\n{}\n",
               to_string(merged.additive()));

    fmt::print("== MultiheadAttention({}, {}) on src (L {}, N {}, E {}), eval, with both masks: values\n", E, heads, L, N, E);
    MultiheadAttention attention(E, heads);
    attention.eval();
    Tensor src = randn({L, N, E}, gen);
    auto [output, per_head] = attention.forward(src, src, src, padding, true, causal, /*average_attn_weights=*/false);
    fmt::print("attn_output_weights per head (N, h, L, S), average_attn_weights=False: each row sums to 1, "
               "masked keys get 0\n{}\n", to_string(per_head));
    auto averaged = attention.forward(src, src, src, padding, true, causal).attn_output_weights;
    fmt::print("attn_output_weights (N, L, S), the default: the mean of the heads\n{}\n", to_string(averaged));
    fmt::print("attn_output (L, N, E)\n{}\n", to_string(output));

    // The heatmap of sequence 1, head 0: the causal mask and the padded key hatched, not 0.
    const std::vector<std::string> words = {"w0", "w1", "w2", "PAD"};
    const Mask hidden = xt::isinf(merged.to_additive().data());
    nn::AttentionMap map = nn::select_attention_map(per_head, heads, 1, 0, words, words, hidden, "tutorial_d_walkthrough");
    map.title = "MultiheadAttention, sequence 1, head 0";
    map.query_axis = "queries (positions)";
    map.key_axis = "keys (positions; PAD masked)";
    std::filesystem::create_directories(out);
    const std::string path = out + "/mha_seq1_head0.svg";
    nn::write_attention_svg(path, map);
    fmt::print("heatmap of sequence 1, head 0 -> {}\n{}", cli::shown(path), nn::attention_text(map));
}
}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Build each module of tutorial D at the tutorial's shapes and print each stage's shape; "
                 "show the masks, attention weights and outputs at a small size.",
                 "tutorial_d_walkthrough"};
    std::string out = "tutorial_d_out";
    app.add_option("--out", out, "folder for the attention heatmap (SVG)")->capture_default_str();
    // run_main: an error is "tutorial_d_walkthrough: message" and exit 1; output that could not be written is exit 1
    return cli::run_main(app, argc, argv, [&] {
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

        values_at_a_small_size(gen, out);

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
    });
}
