// Each autocast op other than the Linear layer (tests/autocast_test.cpp): matmul, matmul_nt,
// conv1d and the fused attention nodes, forward and every gradient near their fp32 results (the
// bf16 bound of tests/autocast_util.hpp), and the ops autocast leaves in fp32 equal to fp32 bit
// for bit.
#include "tests/autocast_util.hpp"
#include "tests/test_util.hpp"

#include <xtgrad/gemm/small_gemm.hpp>

TEST_SUITE_BEGIN("ops");

using namespace xtgrad;
using namespace xtgrad::autocast_test;
using test::rnd;

TEST_CASE("autocast matmul and matmul_nt, batched and broadcast, forward and backward near fp32") {
    const Bf16Here here;
    if (!here) return;
    check_near_fp32([](const std::vector<Tensor>& v) { return matmul(v[0], v[1]); }, {rnd({3, 40, 32}, 4), rnd({3, 32, 50}, 5)});
    check_near_fp32([](const std::vector<Tensor>& v) { return matmul(v[0], v[1]); }, {rnd({2, 70, 40}, 6), rnd({40, 50}, 7)});
    check_near_fp32([](const std::vector<Tensor>& v) { return matmul_nt(v[0], v[1], 0.25f); },
                    {rnd({2, 3, 40, 64}, 8), rnd({2, 3, 50, 64}, 9)});
    // a small product runs in fp32 (bf16_product_in_fp32): the fp32 op's result, bit for bit
    const Tensor a = rnd({5, 8}, 10), b = rnd({8, 6}, 11);
    Tensor c;
    {
        const autocast::Scope bf16(DType::bf16);
        c = matmul(a, b);
    }
    CHECK(test::max_abs_diff(c.data(), matmul(a, b).data()) == 0.f);
}

TEST_CASE("autocast conv1d, kernel 1 and 3, forward and backward near fp32") {
    const Bf16Here here;
    if (!here) return;
    const double kernel_1 = check_near_fp32([](const std::vector<Tensor>& v) { return conv1d(v[0], v[1], v[2]); },
                                            {rnd({2, 64, 40}, 12), rnd({96, 64, 1}, 13), rnd({96}, 14)});
    const double kernel_3 = check_near_fp32([](const std::vector<Tensor>& v) { return conv1d(v[0], v[1], v[2], 1); },
                                            {rnd({2, 32, 40}, 15), rnd({48, 32, 3}, 16), rnd({48}, 17)});
    CHECK(kernel_1 < 1e-2);  // the outputs' distances from fp32: bf16's rounding, no more
    CHECK(kernel_3 < 1e-2);
}

TEST_CASE("autocast fused attention: the score and context products in bf16, softmax in fp32") {
    const Bf16Here here;
    if (!here) return;
    Generator gen(3);
    // (batch 2, heads 2, 300 positions, 64): every block product (300 x 300 x 64, 300 x 64 x 300)
    // is past the sizes small_gemm takes, so each runs in bf16
    check_near_fp32([](const std::vector<Tensor>& v) { return attention_weights(v[0], v[1], 0.125f, nullptr, 0.f); },
                    {rnd({2, 2, 300, 64}, 18), rnd({2, 2, 300, 64}, 19)});
    check_near_fp32(
        [&](const std::vector<Tensor>& v) {
            return attention_context(v[0], v[1], v[2], 0.125f, nullptr, 0.f, Tensor(), 0.f, false, gen);
        },
        {rnd({2, 2, 300, 64}, 20), rnd({2, 2, 300, 64}, 21), rnd({2, 2, 300, 64}, 22)});
    // 40 positions: on AVX-512 small_gemm takes the blocks (40 x 40 x 64), faster there than a
    // bf16 matmul set up per block: its bf16 kernel where AVX512-BF16 pays, else its fp32
    // kernels, and then the weights equal fp32's
    const Tensor q40 = rnd({2, 4, 40, 64}, 18), k40 = rnd({2, 4, 40, 64}, 19);
    if (small_gemm_takes(40, 40, 64) && !detail::medium_blocks_in_bf16()) {
        Tensor w40;
        {
            const autocast::Scope bf16(DType::bf16);
            w40 = attention_weights(q40, k40, 0.125f, nullptr, 0.f);
        }
        CHECK(test::max_abs_diff(w40.data(), attention_weights(q40, k40, 0.125f, nullptr, 0.f).data()) == 0.f);
    } else {
        check_near_fp32([](const std::vector<Tensor>& v) { return attention_weights(v[0], v[1], 0.125f, nullptr, 0.f); },
                        {q40, k40});
    }
    // short sentences (small products, in fp32): the weights equal softmax(q kᵀ · s) bit for bit
    const Tensor q = rnd({1, 2, 5, 8}, 23), k = rnd({1, 2, 5, 8}, 24);
    Tensor w;
    {
        const autocast::Scope bf16(DType::bf16);
        w = attention_weights(q, k, 0.5f, nullptr, 0.f);
    }
    CHECK(test::max_abs_diff(w.data(), softmax(matmul_nt(q, k, 0.5f), -1).data()) == 0.f);
}

TEST_CASE("under autocast, softmax, layer_norm and cross_entropy run in fp32: bit for bit") {
    const Bf16Here here;
    if (!here) return;
    const Tensor x = rnd({6, 10}, 25), g = rnd({10}, 26), b = rnd({10}, 27);
    const Ids target{1, 2, 3, 4, 5, 6};
    const Array s = softmax(x, -1).data(), ln = layer_norm(x, g, b).data(), ce = cross_entropy(x, target).data();
    const autocast::Scope bf16(DType::bf16);
    CHECK(test::max_abs_diff(softmax(x, -1).data(), s) == 0.f);
    CHECK(test::max_abs_diff(layer_norm(x, g, b).data(), ln) == 0.f);
    CHECK(test::max_abs_diff(cross_entropy(x, target).data(), ce) == 0.f);
}

TEST_SUITE_END();
