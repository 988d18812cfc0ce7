// Weight gradients handed straight to the optimizer's step in backward (autograd/gradient_consumer.hpp):
// the same updates bit for bit, the NaN scan replaced by a proof, and every case where something
// else could see the gradient (or no proof holds) left to the usual path.
#include <xtgrad/autograd/anomaly.hpp>
#include <xtgrad/autograd/gradient_consumer.hpp>
#include <xtgrad/autograd/post_accumulate_hooks.hpp>
#include <xtgrad/autograd/speed_switches.hpp>
#include <xtgrad/gemm/blas.hpp>
#include <xtgrad/gemm/small_gemm.hpp>
#include <xtgrad/nn/layers.hpp>
#include <xtgrad/optim/in_backward.hpp>
#include <xtgrad/optim/optimizer.hpp>
#include <xtgrad/simd/vector_kernels.hpp>
#include <xtgrad/threads/parallel.hpp>
#include <xtgrad/simd/cpu_isa.hpp>
#include "tests/speed_switch_scope.hpp"
#include "tests/test_util.hpp"

#include <array>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

TEST_SUITE_BEGIN("optim");

using namespace xtgrad;
using namespace xtgrad::optim;

namespace {

// A Linear on 7 rows and a kernel-1 Conv1d on one batch item of length 7: each weight's gradient
// is one product over 7 rows, small operands for a big gradient, so its kernel proves it finite
// and hands it over. The biases' gradients are column sums: always stored.
// With a side past 256 both weights' products are skinny_tn's (handed to Adam as their factors
// where gemm_ld routes them to a skinny_tn kernel), small_gemm's stored; widths off a multiple
// of 16 give each row a tail.
using Sizes = std::array<std::size_t, 3>;  // in, hidden, out
constexpr Sizes kFactored{300, 288, 48}, kSmallGemm{64, 96, 48};
struct Skinny : nn::Module {
    explicit Skinny(Sizes s = kFactored) : Skinny(s[0], s[1], s[2]) {}
    Skinny(std::size_t in, std::size_t hidden, std::size_t out)
        : in_(in), hidden_(hidden),
          fc(register_module("fc", std::make_shared<nn::Linear>(in, hidden))),
          conv(register_module("conv", std::make_shared<nn::Conv1d>(hidden, out, 1))) {}
    std::size_t in_, hidden_;
    std::shared_ptr<nn::Linear> fc;
    std::shared_ptr<nn::Conv1d> conv;
    bool fc_twice = false;  // a second use of fc: its weight then gets two contributions
    Tensor loss(int step) const {
        const Tensor x = test::rnd({7, in_}, static_cast<std::uint64_t>(300 + step));
        Tensor h = relu(fc->forward(x));  // (7, hidden)
        if (fc_twice) h = h + relu(fc->forward(x * 0.5f));
        const Tensor y = conv->forward(reshape(transpose(h, 0, 1), {1, static_cast<long>(hidden_), 7}));  // (1, out, 7)
        return sum(y * y);
    }
};

// How many of Skinny(sizes)'s two weight gradients (7 rows) Adam takes as their factors in a step:
// the switch on and the product on a skinny_tn kernel (AVX-512's or AVX2's). The cases below turn
// the switch on, whatever this CPU's default, so that every CPU whose gemm_ld routes to the
// skinny kernels runs that path.
std::size_t factored_per_step(Sizes s) {
    const int in = static_cast<int>(s[0]), hidden = static_cast<int>(s[1]), out = static_cast<int>(s[2]);
    if (!detail::speed_switch_on(detail::kGradientAsFactorsSwitch)) return 0;
    return std::size_t{detail::product_on_skinny_tn_kernel(hidden, in, 7)} +
           std::size_t{detail::product_on_skinny_tn_kernel(out, hidden, 7)};
}
bool factors_taken(Sizes s = kFactored) { return factored_per_step(s) == 2; }

bool same_bits(const Array& a, const Array& b) {
    return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

using MakeOptimizer = std::function<std::unique_ptr<Optimizer>(std::vector<Tensor>)>;

struct Handed {
    std::size_t gradients, as_factors;
};

// Trains two copies of Skinny(in, hidden, out), one stepping after backward and one in it, and
// checks every parameter and state buffer bit for bit. Returns how many gradients were handed
// over, and how many of them as their factors.
Handed check_identical(const MakeOptimizer& make, const std::vector<std::string>& keys, int steps = 4,
                       Sizes sizes = kFactored) {
    manual_seed(11);
    Skinny after(sizes);
    manual_seed(11);
    Skinny inside(sizes);
    std::unique_ptr<Optimizer> opt_after = make(after.parameters()), opt_inside = make(inside.parameters());
    const std::size_t before = detail::consumed_gradients(), before_factors = detail::consumed_as_factors();
    {
        OptimizerInBackward in_backward(*opt_inside);
        for (int s = 0; s < steps; ++s) {
            opt_after->zero_grad();
            after.loss(s).backward();
            opt_after->step();
            inside.loss(s).backward();
        }
    }
    const std::vector<Tensor> pa = after.parameters(), pi = inside.parameters();
    REQUIRE(pa.size() == pi.size());
    for (std::size_t i = 0; i < pa.size(); ++i) {
        CAPTURE(pa[i].name());
        CHECK(same_bits(pa[i].data(), pi[i].data()));
        CHECK(opt_after->step_count(pa[i]) == steps);
        CHECK(opt_inside->step_count(pi[i]) == steps);
        CHECK_FALSE(pi[i].has_grad());
        for (const std::string& key : keys) {
            const Array *a = opt_after->state(pa[i], key), *b = opt_inside->state(pi[i], key);
            REQUIRE(a != nullptr);
            REQUIRE(b != nullptr);
            CHECK(same_bits(*a, *b));
        }
    }
    return {detail::consumed_gradients() - before, detail::consumed_as_factors() - before_factors};
}

// One backward of `model` with Adam in backward; returns how many gradients were handed over.
std::size_t consumed_in_one_backward(Skinny& model, Adam& opt) {
    OptimizerInBackward in_backward(opt);
    const std::size_t before = detail::consumed_gradients();
    model.loss(0).backward();
    return detail::consumed_gradients() - before;
}

}  // namespace

TEST_CASE("gradient consumer: Adam, AdamW and SGD take the weights' gradients from the kernels, bit for bit") {
    // two weights per backward handed over (the biases' column sums are stored as always); Adam's
    // as their factors where the product runs on a skinny_tn kernel, SGD's stored
    const test::SpeedSwitchScope as_factors(detail::kGradientAsFactorsSwitch, true);
    const std::size_t adam_factors = factors_taken() ? 8 : 0;
    const auto handed = [](Handed h, std::size_t gradients, std::size_t as_factors) {
        CHECK(h.gradients == gradients);
        CHECK(h.as_factors == as_factors);
    };
    handed(check_identical([](std::vector<Tensor> p) { return std::make_unique<Adam>(std::move(p), AdamOptions(1e-2)); },
                           {"exp_avg", "exp_avg_sq"}),
           8, adam_factors);
    handed(check_identical(
               [](std::vector<Tensor> p) { return std::make_unique<AdamW>(std::move(p), AdamWOptions(1e-2).weight_decay(0.1)); },
               {"exp_avg", "exp_avg_sq"}),
           8, adam_factors);
    handed(check_identical(
               [](std::vector<Tensor> p) {
                   return std::make_unique<Adam>(std::move(p), AdamOptions(1e-2).weight_decay(0.01));  // L2 in the gradient
               },
               {"exp_avg", "exp_avg_sq"}),
           8, adam_factors);
    handed(check_identical(
               [](std::vector<Tensor> p) { return std::make_unique<SGD>(std::move(p), SGDOptions(0.05).momentum(0.9)); },
               {"momentum_buffer"}),
           8, 0);
}

TEST_CASE("gradient consumer: as factors, rows with tails and the skinny kernels off are bit for bit too") {
    const test::SpeedSwitchScope as_factors(detail::kGradientAsFactorsSwitch, true);
    const MakeOptimizer adam = [](std::vector<Tensor> p) { return std::make_unique<Adam>(std::move(p), AdamOptions(1e-2)); };
    SUBCASE("widths 301, 290 and 37: every row ends in a partial vector") {
        const Handed h = check_identical(adam, {"exp_avg", "exp_avg_sq"}, 3, {301, 290, 37});
        CHECK(h.gradients == 6);
        CHECK(h.as_factors == (factors_taken({301, 290, 37}) ? 6u : 0u));
    }
    SUBCASE("products small_gemm takes (no side past 256): handed over stored") {
        // (96, 64, 7) and (48, 96, 7): small_gemm's on AVX-512 (its medium blocks), on AVX2 the
        // bigger one is skinny_tn's
        const std::size_t small = std::size_t{small_gemm_takes(96, 64, 7)} + std::size_t{small_gemm_takes(48, 96, 7)};
        CHECK(small >= 1);
        if (factors_taken()) CHECK(factored_per_step(kSmallGemm) == 2 - small);
        const Handed h = check_identical(adam, {"exp_avg", "exp_avg_sq"}, 2, kSmallGemm);
        CHECK(h.gradients == 4);
        CHECK(h.as_factors == 2 * factored_per_step(kSmallGemm));
    }
    SUBCASE("the Winter Games' feed-forward: its (2048, 512) weight as factors, its (512, 2048) one stored") {
        // 2048 columns make a rank-7 panel of 56 KiB, past L1: Adam declines it (vec::adam_update_product_pays)
        const auto shape = [](std::size_t rows, std::size_t cols) {
            return vec::RankKGradient{.rows = rows, .cols = cols, .rank = 7, .a = nullptr, .a_row = 0, .a_rank = 0,
                                      .b = nullptr, .b_rank = 0, .b_col = 0};
        };
        CHECK(vec::adam_update_product_pays(shape(2048, 512)));
        CHECK_FALSE(vec::adam_update_product_pays(shape(512, 2048)));
        const Handed h = check_identical(adam, {"exp_avg", "exp_avg_sq"}, 2, {512, 2048, 512});
        CHECK(h.gradients == 4);
        const bool on_kernel = detail::speed_switch_on(detail::kGradientAsFactorsSwitch) &&
                               detail::product_on_skinny_tn_kernel(2048, 512, 7);
        CHECK(h.as_factors == (on_kernel ? 2u : 0u));
    }
    SUBCASE("a gradient over 8 to 16 rows: stored, bit for bit (the factored update makes at most 7)") {
        for (const std::size_t rows : {8, 12, 16}) {
            CAPTURE(rows);
            CHECK_FALSE(detail::product_on_skinny_tn_kernel(288, 300, static_cast<int>(rows)));
            const auto run = [rows](bool in_backward_step) {
                Tensor w = test::rnd({288, 300}, 6, 0.1f);
                Adam opt({w}, AdamOptions(1e-2));
                std::unique_ptr<OptimizerInBackward> in_backward;
                if (in_backward_step) in_backward = std::make_unique<OptimizerInBackward>(opt);
                for (int step = 0; step < 2; ++step) {
                    const Tensor x = test::rnd({rows, 300}, static_cast<std::uint64_t>(40 + step));
                    const Tensor y = linear(x, w);
                    sum(y * y).backward();
                    if (!in_backward_step) opt.step(), opt.zero_grad();
                }
                return w.data();
            };
            const std::size_t before = detail::consumed_gradients(), before_factors = detail::consumed_as_factors();
            const Array inside = run(true);
            CHECK(detail::consumed_gradients() == before + 2);  // handed over, proven finite
            CHECK(detail::consumed_as_factors() == before_factors);
            CHECK(same_bits(inside, run(false)));
        }
    }
    SUBCASE("XTGRAD_GRADIENT_AS_FACTORS off: handed over stored, as before") {
        const test::SpeedSwitchScope off(detail::kGradientAsFactorsSwitch, false);
        const Handed h = check_identical(adam, {"exp_avg", "exp_avg_sq"}, 2);
        CHECK(h.gradients == 4);
        CHECK(h.as_factors == 0);
    }
    SUBCASE("XTGRAD_SKINNY_GEMM off: the products run on the backend, so the gradients are stored") {
        const test::SpeedSwitchScope off(detail::kSkinnyGemmSwitch, false);
        CHECK_FALSE(factors_taken());
        const Handed h = check_identical(adam, {"exp_avg", "exp_avg_sq"}, 2);
        CHECK(h.gradients == 4);
        CHECK(h.as_factors == 0);
    }
    SUBCASE("the baseline kernels: as factors where gemm_ld routes to the AVX2 skinny_tn kernel, else stored") {
        const IsaScope baseline(Isa::baseline);
        // oneDNN on an AVX2 CPU but the Zen 3 (or on AVX-512 under this scope) sends the skinny
        // kernels nothing: gemm/blas.cpp
        CHECK(factors_taken() == detail::skinny_kernels_route());
        const Handed h = check_identical(adam, {"exp_avg", "exp_avg_sq"}, 2);
        CHECK(h.gradients == 4);
        CHECK(h.as_factors == 2 * factored_per_step(kFactored));
    }
}

TEST_CASE("gradient consumer: bit-identical on two threads") {
    const test::SpeedSwitchScope as_factors(detail::kGradientAsFactorsSwitch, true);
    set_num_threads(2);
    const Handed h = check_identical([](std::vector<Tensor> p) { return std::make_unique<Adam>(std::move(p), AdamOptions(1e-2)); },
                                     {"exp_avg", "exp_avg_sq"});
    set_num_threads(1);
    CHECK(h.gradients == 8);
    CHECK(h.as_factors == (factors_taken() ? 8u : 0u));
}

TEST_CASE("gradient consumer: not offered where something else sees or adds to the gradient") {
    SUBCASE("a register_hook hook on the weight sees its gradient") {
        manual_seed(1);
        Skinny m;
        Adam opt(m.parameters(), AdamOptions(1e-2));
        int calls = 0;
        m.fc->weight.register_hook([&](const Array& g) {
            ++calls;
            return g;
        });
        CHECK(consumed_in_one_backward(m, opt) == 1);  // conv.weight only
        CHECK(calls == 1);
        CHECK(opt.step_count(m.fc->weight) == 1);
    }
    SUBCASE("another post-accumulate hook sees .grad before the step") {
        manual_seed(1);
        Skinny m;
        Adam opt(m.parameters(), AdamOptions(1e-2));
        bool saw_grad = false;
        register_post_accumulate_grad_hook(m.conv->weight, [&](TensorImpl& leaf) { saw_grad = leaf.grad != nullptr; });
        CHECK(consumed_in_one_backward(m, opt) == 1);  // fc.weight only
        CHECK(saw_grad);
        CHECK(opt.step_count(m.conv->weight) == 1);
    }
    SUBCASE("a weight used twice gets the sum of two gradients") {
        manual_seed(1);
        Skinny m;
        m.fc_twice = true;
        Adam opt(m.parameters(), AdamOptions(1e-2));
        CHECK(consumed_in_one_backward(m, opt) == 1);  // conv.weight only
        CHECK(opt.step_count(m.fc->weight) == 1);
    }
    SUBCASE("anomaly mode checks every gradient") {
        manual_seed(1);
        Skinny m;
        Adam opt(m.parameters(), AdamOptions(1e-2));
        AnomalyGuard anomaly;
        CHECK(consumed_in_one_backward(m, opt) == 0);
        CHECK(opt.step_count(m.fc->weight) == 1);
    }
    SUBCASE("keep_grad: the first backward's gradient is handed over and kept, the next one adds and is refused") {
        const test::SpeedSwitchScope as_factors(detail::kGradientAsFactorsSwitch, true);
        manual_seed(1);
        Skinny after;
        manual_seed(1);
        Skinny inside;
        Adam opt_after(after.parameters(), AdamOptions(1e-2)), opt_inside(inside.parameters(), AdamOptions(1e-2));
        OptimizerInBackward in_backward(opt_inside, InBackwardOptions().keep_grad(true));
        const std::size_t before = detail::consumed_gradients(), before_factors = detail::consumed_as_factors();
        after.loss(0).backward();
        opt_after.step();
        inside.loss(0).backward();
        CHECK(detail::consumed_gradients() - before == 2);
        CHECK(detail::consumed_as_factors() == before_factors);  // kept: so stored, never as factors
        REQUIRE(inside.fc->weight.has_grad());
        CHECK(same_bits(inside.fc->weight.grad_array(), after.fc->weight.grad_array()));
        CHECK(same_bits(inside.conv->weight.data(), after.conv->weight.data()));
        test::expect_error([&] { inside.loss(1).backward(); }, {"OptimizerInBackward", "keep_grad", "zero_grad()"});
    }
}

TEST_CASE("gradient consumer: without a proof of finiteness the gradient is stored and scanned as always") {
    SUBCASE("a NaN input: an Error naming the weight, which is not updated") {
        manual_seed(2);
        Tensor w = Tensor::ones({40, 30}, true).set_name("w");
        Adam opt({w}, AdamOptions(1e-2));
        OptimizerInBackward in_backward(opt);
        Array x = test::rnd({7, 30}, 5).data();
        x(3, 4) = std::numeric_limits<float>::quiet_NaN();
        const std::size_t before = detail::consumed_gradients();
        test::expect_error([&] { sum(linear(Tensor(x), w)).backward(); }, {"Adam.step", "'w'", "nan"});
        CHECK(detail::consumed_gradients() == before);
        CHECK(w.data()(0, 0) == 1.f);
        CHECK(opt.step_count(w) == 0);
    }
    SUBCASE("values too big to rule out an overflow: scanned, and an overflow found is an Error") {
        manual_seed(2);
        Tensor w = Tensor::ones({40, 30}, true).set_name("w");
        Adam opt({w}, AdamOptions(1e-2));
        OptimizerInBackward in_backward(opt);
        Array x = xt::zeros<float>({7, 30});
        Array c = xt::zeros<float>({7, 40});
        for (std::size_t t = 0; t < 7; ++t) x(t, 0) = 3e19f, c(t, 0) = 3e19f;  // dW(0, 0) = 7 · 9e38: inf
        const std::size_t before = detail::consumed_gradients();
        test::expect_error([&] { sum(linear(Tensor(x), w) * Tensor(c)).backward(); }, {"Adam.step", "'w'", "inf"});
        CHECK(detail::consumed_gradients() == before);
        CHECK(opt.step_count(w) == 0);
    }
    SUBCASE("the bound fails but the gradient is finite: stored, scanned and stepped as after backward") {
        const auto run = [](bool in_backward_step) {
            Tensor w = Tensor::ones({40, 30}, true).set_name("w");
            Adam opt({w}, AdamOptions(1e-2));
            std::unique_ptr<OptimizerInBackward> in_backward;
            if (in_backward_step) in_backward = std::make_unique<OptimizerInBackward>(opt);
            Array x = xt::zeros<float>({7, 30});
            Array c = xt::zeros<float>({7, 40});
            x(1, 0) = 1e19f;  // row 1 of x, row 0 of dy: no product of the two is ever summed
            c(0, 0) = 1e19f;
            sum(linear(Tensor(x), w) * Tensor(c)).backward();
            if (!in_backward_step) opt.step();
            return w.data();
        };
        const std::size_t before = detail::consumed_gradients();
        const Array inside = run(true);
        CHECK(detail::consumed_gradients() == before);
        CHECK(same_bits(inside, run(false)));
    }
    SUBCASE("set_check_finite(false): handed over unproven, as torch steps on whatever it gets") {
        const test::SpeedSwitchScope as_factors(detail::kGradientAsFactorsSwitch, true);
        for (const std::size_t in : {30, 300}) {  // stored (small_gemm's product), and as its factors on a skinny_tn kernel
            CAPTURE(in);
            Tensor w = Tensor::ones({40, in}, true).set_name("w");
            Adam opt({w}, AdamOptions(1e-2));
            opt.set_check_finite(false);
            OptimizerInBackward in_backward(opt);
            Array x = xt::zeros<float>({std::size_t{7}, in});
            x(2, 5) = std::numeric_limits<float>::infinity();
            x(1, 4) = 1.f;  // column 4's gradient: finite, so its weights step
            const std::size_t before = detail::consumed_gradients(), before_factors = detail::consumed_as_factors();
            sum(linear(Tensor(x), w)).backward();
            CHECK(detail::consumed_gradients() == before + 1);
            const bool factored = in == 300 && detail::product_on_skinny_tn_kernel(40, 300, 7);
            CHECK(detail::consumed_as_factors() == before_factors + (factored ? 1 : 0));
            CHECK(std::isnan(w.data()(0, 5)));
            CHECK(w.data()(0, 4) != 1.f);  // the rest of the row stepped
        }
    }
}

TEST_CASE("gradient consumer: product_provably_finite") {
    std::vector<float> a(7 * 3, 1e18f), b(7 * 4, 1e18f);
    CHECK(detail::product_provably_finite(a.data(), a.size(), b.data(), b.size(), 7, 1000));
    b[5] = 3e19f;  // 7 · 1e18 · 3e19 = 2.1e38 > FLT_MAX / 2 = 1.7e38
    CHECK_FALSE(detail::product_provably_finite(a.data(), a.size(), b.data(), b.size(), 7, 1000));
    b[5] = -1e19f;  // the sign does not matter: 7e37 < 1.7e38
    CHECK(detail::product_provably_finite(a.data(), a.size(), b.data(), b.size(), 7, 1000));
    a[20] = std::numeric_limits<float>::quiet_NaN();
    CHECK_FALSE(detail::product_provably_finite(a.data(), a.size(), b.data(), b.size(), 7, 1000));
    a[20] = -std::numeric_limits<float>::infinity();
    CHECK_FALSE(detail::product_provably_finite(a.data(), a.size(), b.data(), b.size(), 7, 1000));
    a[20] = 1.f;
    CHECK(detail::product_provably_finite(a.data(), a.size(), b.data(), b.size(), 7, 1000));
    // operands bigger than the product: scanning the product is cheaper, so no proof is tried
    CHECK_FALSE(detail::product_provably_finite(a.data(), a.size(), b.data(), b.size(), 7, 48));
    CHECK(detail::product_provably_finite(a.data(), a.size(), b.data(), b.size(), 7, 49));
}

TEST_SUITE_END();
