// The program the gdb test (tests/gdb/run_gdb_test.sh) and docs/debugging.md debug: one
// training step of tutorial C's Winter Games Transformer at a small size (d_model 16,
// 2 heads, 2+2 layers). Built with -g in every build type (-O3 -g in release), so gdb has its
// types; the tensors gdb prints live in globals, which optimisation cannot remove.
#include "nn/tutorial_c/tutorial_c.hpp"
#include "xtgrad.hpp"

#include <cstdio>

namespace gdb_target {
xtgrad::Tensor loss;       // the loss of the step
xtgrad::Tensor w_q;        // encoder.layers.0.enc_self_attn.W_Q.weight
}  // namespace gdb_target

int main() {
    using namespace xtgrad;
    nn::tutorial_c::Config c;
    c.d_model = 16;
    c.d_ff = 32;
    c.d_k = c.d_v = 8;
    c.n_layers = 2;
    c.n_heads = 2;
    manual_seed(0);
    nn::tutorial_c::Transformer model(c);
    gdb_target::w_q = model.encoder->layers->operator[](0).enc_self_attn->W_Q->weight;

    // 'I like the 2022 Beijing Winter Games' -> '我 爱 2022 北京 冬 奥会 E'
    const Ids enc{{1, 2, 3, 4, 5, 6, 7}}, dec{{7, 1, 2, 3, 4, 5, 6}}, target{1, 2, 3, 4, 5, 6, 8};
    gdb_target::loss = cross_entropy(model.forward(enc, dec).logits, target);
    gdb_target::loss.backward();
    std::printf("loss %.4f, |grad W_Q| %.6f\n", gdb_target::loss.item(), l2_norm(gdb_target::w_q.grad_array()));
    return 0;
}
