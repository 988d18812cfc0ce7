#include "bench/workloads.hpp"

#include <xtgrad/nn/tutorial_b/transformer.hpp>
#include <xtgrad/nn/tutorial_c/tutorial_c.hpp>
#include <xtgrad/nn/tutorial_d/tutorial_d.hpp>
#include <xtgrad/xtgrad.hpp>

#include <fmt/format.h>

namespace xtgrad::bench {
namespace {

// ---- analytic matmul FLOPs of one forward pass (2·M·N·K per product) ----------------------
// Counted: every Linear / Conv1d(kernel 1) product and the two attention products per head.
// Not counted: elementwise work (softmax, layer norm, residuals, Adam). A training step is
// counted as 3 x forward: each product's backward is two products of the same size (dX, dW).

// One multi-head attention: q from Lq positions, k and v from Lk, per batch item.
double mha_flops(double B, double Lq, double Lk, double d, double h, double dk, double dv) {
    const double proj = 2 * B * (Lq * d * h * dk      // W_Q
                                 + Lk * d * h * dk    // W_K
                                 + Lk * d * h * dv    // W_V
                                 + Lq * h * dv * d);  // output projection
    const double attn = 2 * B * h * Lq * Lk * (dk + dv);  // q kᵀ and weights · v
    return proj + attn;
}

// Position-wise feed-forward d -> dff -> d over `tokens` positions.
double ffn_flops(double tokens, double d, double dff) { return 2 * 2 * tokens * d * dff; }

// winter: 6 encoder + 6 decoder layers, d 512, 8 heads of 64, d_ff 2048, batch 1, 7 + 7 tokens,
// projection to the 9 target words.
double winter_flops() {
    const double B = 1, Ls = 7, Lt = 7, d = 512, h = 8, dk = 64, dff = 2048, V = 9;
    const double enc = mha_flops(B, Ls, Ls, d, h, dk, dk) + ffn_flops(B * Ls, d, dff);
    const double dec = mha_flops(B, Lt, Lt, d, h, dk, dk) + mha_flops(B, Lt, Ls, d, h, dk, dk) + ffn_flops(B * Lt, d, dff);
    return 6 * (enc + dec) + 2 * B * Lt * d * V;
}

// seed-b: 6 + 6 layers, d 512, 8 heads, d_ff 2048, src 100 and tgt 99 tokens, fc to 5000.
double seed_b_flops(double B) {
    const double Ls = 100, Lt = 99, d = 512, h = 8, dk = 64, dff = 2048, V = 5000;
    const double enc = mha_flops(B, Ls, Ls, d, h, dk, dk) + ffn_flops(B * Ls, d, dff);
    const double dec = mha_flops(B, Lt, Lt, d, h, dk, dk) + mha_flops(B, Lt, Ls, d, h, dk, dk) + ffn_flops(B * Lt, d, dff);
    return 6 * (enc + dec) + 2 * B * Lt * d * V;
}

// seed-d: encoder_layers + 6 layers, d 512, `heads` heads, d_ff 2048, batch 32, S 10, T 20.
double seed_d_flops(double heads, double encoder_layers) {
    const double N = 32, S = 10, T = 20, d = 512, dk = d / heads, dff = 2048;
    const double enc = mha_flops(N, S, S, d, heads, dk, dk) + ffn_flops(N * S, d, dff);
    const double dec = mha_flops(N, T, T, d, heads, dk, dk) + mha_flops(N, T, S, d, heads, dk, dk) + ffn_flops(N * T, d, dff);
    return encoder_layers * enc + 6 * dec;
}


}  // namespace

Workload winter() {
    Workload w;
    manual_seed(0);
    auto model = std::make_shared<nn::tutorial_c::Transformer>(nn::tutorial_c::Config());
    const Ids enc{{1, 2, 3, 4, 5, 6, 7}}, dec{{7, 1, 2, 3, 4, 5, 6}};
    const Ids target{1, 2, 3, 4, 5, 6, 8};
    w.what = "tutorial C, batch 1, 7+7 tokens, Adam";
    w.fwd_flops = winter_flops();
    w.opt = std::make_unique<optim::Adam>(model->parameters(), optim::AdamOptions(1e-3));
    w.forward = [model, enc, dec, target] { return cross_entropy(model->forward(enc, dec).logits, target); };
    w.backward = [](const Tensor& loss) { loss.backward(); };
    w.model = model;
    return w;
}

Workload seed_b(std::size_t batch) {
    Workload w;
    manual_seed(0);
    const std::size_t vocab = 5000, len = 100;
    auto model = std::make_shared<nn::tutorial_b::Transformer>(vocab, vocab, 512, 8, 6, 2048, len, 0.1f);
    Generator gen(1);
    const Ids src = randint({batch, len}, 1, static_cast<std::int64_t>(vocab), gen);
    const Ids tgt = randint({batch, len}, 1, static_cast<std::int64_t>(vocab), gen);
    const nn::tutorial_b::ShiftedTargets shifted = nn::tutorial_b::shift_targets(tgt);
    const Ids tgt_in = shifted.input, target = shifted.target;  // tgt[:, :-1], tgt[:, 1:] flattened
    w.what = fmt::format("tutorial B, batch {} x 100, Adam", batch);
    w.fwd_flops = seed_b_flops(static_cast<double>(batch));
    w.opt = std::make_unique<optim::Adam>(model->parameters(),
                                          optim::AdamOptions(1e-4).betas({0.9, 0.98}).eps(1e-9));
    w.forward = [model, src, tgt_in, target] {
        // The logits as a temporary: reshape relabels their buffer and cross_entropy writes its
        // probabilities over it (ops.hpp), one (B·99, 5000) block instead of three.
        return cross_entropy(reshape(model->forward(src, tgt_in), {-1, 5000}), target, /*ignore_index=*/0);
    };
    w.backward = [](const Tensor& loss) { loss.backward(); };
    w.model = model;
    return w;
}

Workload seed_d(std::size_t heads, std::size_t encoder_layers, bool adam) {
    Workload w;
    manual_seed(0);
    namespace td = nn::tutorial_d;
    auto model = std::make_shared<td::Transformer>(
        td::TransformerOptions(512, heads, encoder_layers));
    Generator gen(1);
    const Tensor src = rand({10, 32, 512}, gen), tgt = rand({20, 32, 512}, gen);
    const Array grad_out = randn({20, 32, 512}, gen).data();
    w.what = fmt::format("tutorial D, nhead {}, {}+6 layers, src (10, 32, 512), tgt (20, 32, 512), {}", heads,
                         encoder_layers, adam ? "Adam" : "no optimizer");
    w.fwd_flops = seed_d_flops(static_cast<double>(heads), static_cast<double>(encoder_layers));
    if (adam) w.opt = std::make_unique<optim::Adam>(model->parameters(), optim::AdamOptions(1e-4));
    w.forward = [model, src, tgt] { return model->forward(src, tgt); };
    w.backward = [grad_out](const Tensor& out) { out.backward(grad_out); };
    w.model = model;
    return w;
}

}  // namespace xtgrad::bench
