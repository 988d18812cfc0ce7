// The program the gdb test (tests/gdb/run_gdb_test.sh) and docs/debugging.md debug: one
// training step of tutorial C's Winter Games Transformer at a small size (d_model 16,
// 2 heads, 2+2 layers). Built with -g in every build type (-O3 -g in release), so gdb has its
// types; the tensors gdb prints live in globals, which optimisation cannot remove.
#include <xtgrad/nn/tutorial_c/tutorial_c.hpp>
#include <xtgrad/xtgrad.hpp>

#include <cstdio>
#include <limits>

namespace gdb_target {
xtgrad::Tensor loss;       // the loss of the step
xtgrad::Tensor w_q;        // encoder.layers.0.enc_self_attn.W_Q.weight
xtgrad::nn::Module* model = nullptr;                                 // the whole Transformer, by its base
xtgrad::nn::tutorial_c::MultiHeadAttention* attention = nullptr;    // encoder.layers.0.enc_self_attn

// Arrays the printer test prints and compares with PyTorch's repr of the same values
// (tests/gdb/expected_reprs.txt, written by tools/gdb/make_repr_fixture.py: keep the two in step).
// Every value is ((i * 37) % 101 - 50) / 8 times a power of two: exact in float32 on both sides.
xtgrad::Array scalar, empty, vector, matrix, five_d, long_vector, wide, five_d_big, huge, small, integral, non_finite;
xtgrad::Ids ids, empty_ids;
xtgrad::Mask mask;
xtgrad::BitMask bits;      // (2,3), elements 0, 2 and 4 set, as relu and dropout save them
xtgrad::Tensor leaf;       // `vector` as a leaf that requires grad
xtgrad::Tensor leaf_gradient;  // d sum(tanh(leaf)²) / d leaf with create_graph: its nodes are backward pass 1's

xtgrad::Array pattern(const xtgrad::Shape& shape, float scale) {
    xtgrad::Array a = xtgrad::empty_array(shape);
    for (std::size_t i = 0; i < a.size(); ++i) a.data()[i] = static_cast<float>(static_cast<long>(i * 37 % 101) - 50) / 8.f * scale;
    return a;
}

void make_printer_arrays() {
    scalar = pattern({}, 1.f);
    empty = pattern({0, 3}, 1.f);
    vector = pattern({5}, 1.f);
    matrix = pattern({7, 9}, 1.f);
    five_d = pattern({2, 3, 4, 5, 6}, 1.f);
    long_vector = pattern({1001}, 1.f);
    wide = pattern({40, 50}, 1.f);
    five_d_big = pattern({3, 4, 5, 6, 7}, 1.f);
    huge = pattern({2048, 2048}, 1.f);  // 16 MB: the printers read only the values shown
    small = pattern({2, 3}, 1.f / 1048576.f);
    integral = pattern({2, 4}, 8.f);
    non_finite = pattern({4}, 1.f);
    non_finite.data()[0] = std::numeric_limits<float>::quiet_NaN();
    non_finite.data()[1] = std::numeric_limits<float>::infinity();
    non_finite.data()[2] = -std::numeric_limits<float>::infinity();
    ids = xtgrad::Ids{{1, 2, 3}, {4, 5, 6000}};
    empty_ids = xtgrad::Ids::from_shape({0});
    mask = xtgrad::Mask{{true, false}, {false, true}};
    bits = xtgrad::BitMask({2, 3});
    xtgrad::pack_bits(bits, [](std::size_t i) { return i % 2 == 0; });
    leaf = xtgrad::Tensor(vector, /*requires_grad=*/true);
    const xtgrad::Tensor t = xtgrad::tanh(leaf);
    leaf_gradient = xtgrad::grad({xtgrad::sum(t * t)}, {leaf}, {}, xtgrad::GradOptions().create_graph(true))[0];
}
}  // namespace gdb_target

int main() {
    using namespace xtgrad;
    gdb_target::make_printer_arrays();
    manual_seed(0);
    nn::tutorial_c::Transformer model(
        nn::tutorial_c::Config().d_model(16).d_ff(32).d_k(8).d_v(8).n_layers(2).n_heads(2));
    gdb_target::model = &model;
    gdb_target::attention = model.encoder->layers->operator[](0).enc_self_attn.get();
    gdb_target::w_q = gdb_target::attention->W_Q->weight;

    // 'I like the 2022 Beijing Winter Games' -> '我 爱 2022 北京 冬 奥会 E'
    const Ids enc{{1, 2, 3, 4, 5, 6, 7}}, dec{{7, 1, 2, 3, 4, 5, 6}}, target{1, 2, 3, 4, 5, 6, 8};
    gdb_target::loss = cross_entropy(model.forward(enc, dec).logits, target);
    gdb_target::loss.backward();
    std::printf("loss %.4f, |grad W_Q| %.6f\n", gdb_target::loss.item(), l2_norm(gdb_target::w_q.grad_array()));
    return 0;
}
