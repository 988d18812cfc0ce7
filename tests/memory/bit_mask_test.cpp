// BitMask (autograd/bit_mask.hpp): a bit per element for relu's and dropout's backward.
#include <xtgrad/autograd/bit_mask.hpp>
#include <xtgrad/autograd/ops.hpp>
#include <xtgrad/threads/parallel.hpp>
#include "../test_util.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

TEST_SUITE_BEGIN("memory");

using namespace xtgrad;

namespace {
// bit i = (i % 3 == 0) || (i % 7 == 5): no period that lines up with a 32-bit word
bool bit_pattern(std::size_t i) { return i % 3 == 0 || i % 7 == 5; }
}  // namespace

TEST_CASE("pack_bits and for_each_bit round-trip every element, partial last words included") {
    for (std::size_t n : {0u, 1u, 31u, 32u, 33u, 64u, 100u, 1000u}) {
        CAPTURE(n);
        BitMask m({n});
        CHECK(m.words() == (n + 31) / 32);
        pack_bits(m, bit_pattern);
        std::size_t expected_on = 0;
        for (std::size_t i = 0; i < n; ++i) {
            CHECK(m[i] == bit_pattern(i));
            expected_on += bit_pattern(i);
        }
        CHECK(m.count() == expected_on);  // no stray bits past the end
        std::vector<float> seen(n, -1.f);
        for_each_bit(m, [&](std::size_t i, float on) { seen[i] = on; });
        for (std::size_t i = 0; i < n; ++i) CHECK(seen[i] == (bit_pattern(i) ? 1.f : 0.f));
        const Mask as_bools = m.to_mask();
        CHECK(as_bools.size() == n);
        for (std::size_t i = 0; i < n; ++i) CHECK(as_bools.data()[i] == bit_pattern(i));
    }
}

TEST_CASE("write_and_pack_bits writes every element once, then its bit from what it wrote, on 1 and 2 threads") {
    const int before = num_threads();
    for (int threads : {1, 2})
        for (std::size_t n : {0u, 1u, 31u, 32u, 33u, 100u, 300'001u}) {  // 300 001: over the pool, a partial last word
            CAPTURE(threads);
            CAPTURE(n);
            set_num_threads(threads);
            std::vector<int> writes(n, 0);
            std::vector<float> out(n, -1.f);
            BitMask m({n});
            write_and_pack_bits(
                m,
                [&](std::size_t i) {
                    ++writes[i];
                    out[i] = bit_pattern(i) ? 2.f : 0.f;
                },
                [&](std::size_t i) { return out[i] > 1.f; });  // reads the value just written
            CHECK(std::count(writes.begin(), writes.end(), 1) == static_cast<long>(n));
            std::size_t expected_on = 0;
            for (std::size_t i = 0; i < n; ++i) expected_on += bit_pattern(i);
            CHECK(m.count() == expected_on);  // no stray bits past the end
            bool all = true;
            for (std::size_t i = 0; i < n; ++i) all = all && m[i] == bit_pattern(i);
            CHECK(all);
        }
    set_num_threads(before);
}

TEST_CASE("two masks at once: each its own bits in one pass, and masks of different sizes an Error that writes nothing") {
    const int before = num_threads();
    for (int threads : {1, 2})
        for (std::size_t n : {0u, 1u, 33u, 300'001u}) {
            CAPTURE(threads);
            CAPTURE(n);
            set_num_threads(threads);
            BitMask a({n}), b({n});
            std::vector<int> writes(n, 0);
            write_and_pack_bits(
                std::array<BitMask*, 2>{&a, &b}, [&](std::size_t i) { ++writes[i]; },
                [](std::size_t i) { return bit_pattern(i); }, [](std::size_t i) { return i % 3 == 0; });
            CHECK(std::count(writes.begin(), writes.end(), 1) == static_cast<long>(n));
            std::size_t wrong = 0, visits = 0;
            std::vector<float> seen(n, -1.f);
            for_each_bit(std::array<const BitMask*, 2>{&a, &b}, [&](std::size_t i, float x, float y) {
                seen[i] = x + 2.f * y;  // element ranges: one thread per element
            });
            for (std::size_t i = 0; i < n; ++i) {
                wrong += seen[i] != static_cast<float>(bit_pattern(i)) + 2.f * static_cast<float>(i % 3 == 0);
                visits += seen[i] >= 0.f;
            }
            CHECK(wrong == 0);
            CHECK(visits == n);
        }
    set_num_threads(before);
    BitMask big({100}), small({10});
    bool ran = false;
    test::expect_error([&] { for_each_bit(std::array<const BitMask*, 2>{&big, &small}, [&](std::size_t, float, float) { ran = true; }); },
                       {"for_each_bit", "same number of bits", "(100)", "(10)"});
    test::expect_error(
        [&] {
            write_and_pack_bits(std::array<BitMask*, 2>{&big, &small}, [&](std::size_t) { ran = true; },
                                [](std::size_t) { return true; }, [](std::size_t) { return true; });
        },
        {"write_and_pack_bits", "same number of bits", "(100)", "(10)"});
    CHECK_FALSE(ran);
    CHECK(big.count() == 0);
    CHECK(small.count() == 0);
}

TEST_CASE("BitMask keeps its shape; a shape whose count overflows is an Error") {
    const BitMask m({2, 3, 5});
    CHECK(m.shape() == Shape{2, 3, 5});
    CHECK(m.size() == 30);
    CHECK(m.count() == 0);  // every bit clear at first
    const std::size_t huge = std::numeric_limits<std::size_t>::max() / 2 + 1;
    test::expect_error([&] { BitMask overflow({huge, 4}); }, {"bit mask"});
}

TEST_CASE("packing and expanding split over the pool give the same bits as one thread") {
    const std::size_t n = 300'001;  // above the pool's threshold, not a multiple of 32
    const int before = num_threads();
    std::vector<BitMask> masks;
    std::vector<std::vector<float>> expanded;
    for (int threads : {1, 2}) {
        set_num_threads(threads);
        BitMask m({n});
        pack_bits(m, bit_pattern);
        std::vector<float> e(n);
        for_each_bit(m, [&](std::size_t i, float on) { e[i] = on; });
        masks.push_back(std::move(m));
        expanded.push_back(std::move(e));
    }
    set_num_threads(before);
    CHECK(masks[0].to_mask() == masks[1].to_mask());
    CHECK(expanded[0] == expanded[1]);
    CHECK(masks[0].count() == masks[1].count());
}

TEST_CASE("relu keeps a bit per element for backward, not its output") {
    Tensor x = Tensor(Array{{-1.f, 0.f, 2.f}, {3.f, -0.f, std::nanf("")}}, true);
    std::weak_ptr<const TensorValues> output;
    Tensor loss;
    {
        const Tensor y = relu(x);
        output = y.values_ptr();
        CHECK(y.grad_fn()->saved_names() == std::vector<std::string>{"result_positive"});
        const BitMask& positive = y.grad_fn()->saved_bits("result_positive");
        CHECK(positive.to_mask() == Mask{{false, false, true}, {true, false, false}});
        loss = sum(y * Tensor(Array{{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}}));
    }
    // the mul saved relu's output for its own backward; without it, relu alone would let it go
    CHECK_FALSE(output.expired());
    loss.backward();
    // dx = g where the output was positive, else 0 (NaN's output is NaN: not positive, gradient 0)
    CHECK(x.grad_array() == Array{{0.f, 0.f, 3.f}, {4.f, 0.f, 0.f}});
    test::expect_error([&] { (void)relu(test::rnd({2}, 1)).grad_fn()->saved("result_positive"); },
                       {"ReluBackward", "result_positive", "holds bits values, not float"});
}

TEST_CASE("relu(linear(x)) followed by dropout keeps neither the product nor relu's output") {
    const Tensor x = test::rnd({8, 16}, 1), w = test::rnd({32, 16}, 2);
    Generator gen(3);
    std::weak_ptr<const TensorValues> product, activation;
    Tensor y;
    {
        const Tensor h = linear(x, w);
        const Tensor a = relu(h);
        product = h.values_ptr();
        activation = a.values_ptr();
        y = dropout(a, 0.5f, true, gen);
    }
    CHECK(product.expired());
    CHECK(activation.expired());  // before: ReluBackward kept it, 32x its bits
    CHECK(y.grad_fn()->saved_bits("mask").size() == 8 * 32);
    sum(y).backward();
    // reference: the same draws as a float mask, the derivative of relu from the pre-activation
    Generator again(3);
    const Tensor ref = dropout(Tensor(xt::ones<float>({8, 32}), true), 0.5f, true, again);
    const Array h = linear(x.detach(), w.detach()).data();
    const Array& kept_scale = ref.data();
    Array dh = empty_array({8, 32});
    for (std::size_t i = 0; i < dh.size(); ++i) dh.data()[i] = h.data()[i] > 0.f ? kept_scale.data()[i] : 0.f;
    Array expected_dw = xt::zeros<float>({32, 16});  // dW = dhᵀ x
    for (std::size_t i = 0; i < 8; ++i)
        for (std::size_t o = 0; o < 32; ++o)
            for (std::size_t k = 0; k < 16; ++k) expected_dw(o, k) += dh(i, o) * x.data()(i, k);
    CHECK(test::max_abs_diff(w.grad_array(), expected_dw) < 1e-4f);
}

TEST_CASE("relu and dropout: gradcheck through the bit masks") {
    Generator gen(5);
    const Tensor x = test::rnd({3, 37}, 4);  // 111 elements: three full words and a partial one
    CHECK(gradcheck([&](const std::vector<Tensor>& in) { return relu(in[0]); }, {x}));
    CHECK(gradcheck(
        [&](const std::vector<Tensor>& in) {
            Generator fixed(6);  // the same mask for every evaluation
            return dropout(in[0], 0.3f, true, fixed);
        },
        {x}));
}

TEST_SUITE_END();
