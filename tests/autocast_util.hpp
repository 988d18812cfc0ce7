// The helpers the autocast tests share (tests/autocast_test.cpp: the products, the Linear layer
// and the models; tests/autocast_ops_test.cpp: matmul, conv1d, attention and the fp32 ops;
// tests/autocast_copies_test.cpp: the bf16 copies of weights and inputs autocast keeps;
// tests/autocast_scope_test.cpp: the scope, the refusal where bf16 is slow, allow_slower_bf16).
#pragma once

#include "tests/test_util.hpp"

#include <xtgrad/autograd/autocast.hpp>
#include <xtgrad/autograd/speed_switches.hpp>
#include <xtgrad/gemm/blas.hpp>
#include <xtgrad/gemm/small_gemm.hpp>
#include <xtgrad/random/random.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace xtgrad::autocast_test {

// Whether a case can test bf16 products here; held for the case's length:
//   const Bf16Here bf16; if (!bf16) return;
// Where bf16 is faster than fp32, true. Where it is slower (no AVX512-BF16, or a CPU whose bf16
// dot products are slower than its fp32 FMAs), it first asserts the refusal — Scope(bf16) and a
// bf16 gemm throw Error with the reason — then allows slower bf16 for the case
// (autocast::allow_slower_bf16) and is true, so the numbers are still checked on such a CPU.
// Where bf16 is unavailable (the OpenBLAS backend), it asserts the refusal and is false, so no
// case passes without asserting anything.
// Where the medium blocks small_gemm takes stay in fp32 by default (the bf16 small kernel's
// vdpbf16ps pays only at >= 1.25x the fp32 rate: not on an Intel with AMX, where oneDNN's
// products are fast and vdpbf16ps runs at half the fp32 rate), a case's small model would round
// nothing and its bf16 result would equal fp32's: it holds them in that kernel for the case, as
// on the CPUs where it is the default, so the cases check bf16's rounding on every CPU with it.
class Bf16Here {
public:
    Bf16Here() {
        const autocast::Bf16Speed speed = autocast::bf16_speed();
        if (speed == autocast::Bf16Speed::faster) {
            hold_medium_blocks_in_bf16();
            return;
        }
        REQUIRE(!autocast::slower_bf16_allowed());  // no case leaves it on
        const std::string reason = autocast::bf16_unsupported_reason();
        REQUIRE(reason.size() > 20);
        test::expect_error([] { const autocast::Scope s(DType::bf16); }, {"autocast(bf16): ", reason.c_str()});
        float a = 1.f, b = 2.f, c = 0.f;
        test::expect_error([&] { gemm(DType::bf16, false, false, 1, 1, 1, 1.f, &a, &b, 0.f, &c); },
                           {"gemm (bf16): ", reason.c_str()});
        CHECK(c == 0.f);  // refused before writing
        if (speed == autocast::Bf16Speed::unavailable) {
            runs_ = false;
            return;
        }
        autocast::allow_slower_bf16(true);
        allowed_ = true;
        CHECK(autocast::bf16_unsupported_reason().empty());
        hold_medium_blocks_in_bf16();
    }
    ~Bf16Here() {
        if (allowed_) autocast::allow_slower_bf16(false);
        if (medium_blocks_set_) detail::set_speed_switch(detail::kSmallGemmBf16Switch, false);
    }
    Bf16Here(const Bf16Here&) = delete;
    Bf16Here& operator=(const Bf16Here&) = delete;
    explicit operator bool() const { return runs_; }

private:
    // last in the constructor: a REQUIRE that throws before it leaves nothing to undo
    void hold_medium_blocks_in_bf16() {
        if (detail::medium_blocks_in_bf16() || !small_gemm_bf16_available()) return;
        detail::set_speed_switch(detail::kSmallGemmBf16Switch, true);
        medium_blocks_set_ = true;
    }
    bool runs_ = true;
    bool allowed_ = false;
    bool medium_blocks_set_ = false;
};

// Values rounded to bf16 (the floats they stand for).
inline std::vector<float> rounded(const std::vector<float>& v) {
    std::vector<float> r(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) r[i] = round_to_bf16(v[i]);
    return r;
}
inline Tensor rounded(const Tensor& t) {
    Array a = t.data();
    for (float& x : a) x = round_to_bf16(x);
    return Tensor(std::move(a));
}

// bf16_product_in_fp32's shortest side set to `rows` for a scope.
class MinSide {
public:
    explicit MinSide(int rows) : previous_(detail::bf16_min_side()) { detail::set_bf16_min_side(rows); }
    ~MinSide() { detail::set_bf16_min_side(previous_); }
    MinSide(const MinSide&) = delete;
    MinSide& operator=(const MinSide&) = delete;

private:
    int previous_;
};

// ||a - b|| / ||b||
inline double relative_distance(const Array& a, const Array& b) {
    REQUIRE(a.shape() == b.shape());
    double d = 0, n = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        d += std::pow(static_cast<double>(a.data()[i]) - b.data()[i], 2);
        n += std::pow(static_cast<double>(b.data()[i]), 2);
    }
    return std::sqrt(d / std::max(n, 1e-300));
}

// f's output and its inputs' gradients (backward of sum(out · R), R fixed), with autocast on or off.
struct Run {
    Array out;
    std::vector<Array> grads;
};
template <class F>
Run run(F&& f, const std::vector<Tensor>& inputs, DType dtype) {
    std::vector<Tensor> in;
    for (const Tensor& t : inputs) in.push_back(Tensor(t.data(), true));
    Tensor out;
    {
        const autocast::Scope scope(dtype);
        out = f(in);
    }
    Generator g(7);
    const Tensor r = randn(out.shape(), g);
    sum(mul(out, r)).backward();  // outside the scope: the node decides its precision
    Run result{out.data(), {}};
    for (const Tensor& t : in) result.grads.push_back(t.grad_array());
    return result;
}

// Autocast's output and gradients are near fp32's (bf16's relative error, ~2^-9 per operand,
// summed over a product's terms: well under 1 %), and differ from them (the products did round).
template <class F>
double check_near_fp32(F&& f, const std::vector<Tensor>& inputs, double tolerance = 1e-2) {
    const Run fp32 = run(f, inputs, DType::fp32), bf16 = run(f, inputs, DType::bf16);
    const double d = relative_distance(bf16.out, fp32.out);
    CHECK(d < tolerance);
    CHECK(d > 1e-5);  // bf16 really ran
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        CAPTURE(i);
        CHECK(relative_distance(bf16.grads[i], fp32.grads[i]) < tolerance);
    }
    return d;  // the output's distance from fp32, for the caller's own check
}

}  // namespace xtgrad::autocast_test
