// The bodies of simd/vector_kernels.hpp, written once over xsimd's architecture tag and
// compiled once per instruction set (vector_kernels_baseline.cpp, vector_kernels_avx512.cpp).
// Internal. Only xsimd and the C library here: everything this header makes the compiler emit
// is either inline or a template of Arch, so the AVX-512 file cannot hand the baseline code
// an AVX-512 copy of a shared function.
#pragma once

#include <xtgrad/simd/vector_kernels.hpp>

#include <xsimd/xsimd.hpp>

#include <cmath>
#include <cstddef>

namespace xtgrad::vec::detail {

// One instruction set's kernels, as plain function pointers (vector_kernels.cpp picks a table).
struct KernelTable {
    double (*exp_shifted_sum)(const float*, float*, std::size_t, float, bool);
    void (*adam_update)(const AdamCoefficients&, float*, const float*, float*, float*, std::size_t);
};

template <class Arch>
struct Kernels {
    using Batch = xsimd::batch<float, Arch>;
    static constexpr std::size_t lanes = Batch::size;

    // x, y: (n). Why SIMD by hand: std::exp is a scalar libm call per element (~6x slower than
    // xsimd::exp's polynomial); the per-lane partial sums keep the additions independent.
    static double exp_shifted_sum(const float* x, float* y, std::size_t n, float shift, bool store) {
        const Batch s(shift);
        Batch acc(0.f);
        std::size_t k = 0;
        for (; k + lanes <= n; k += lanes) {
            const Batch e = xsimd::exp(Batch::load_unaligned(x + k) - s);
            if (store) e.store_unaligned(y + k);
            acc += e;
        }
        double sum = xsimd::hadd(acc);
        for (; k < n; ++k) {
            const float e = std::exp(x[k] - shift);
            if (store) y[k] = e;
            sum += e;
        }
        return sum;
    }

    // w, g, m, v: (n). Memory-bound (7 floats of traffic per parameter), but the plain loop does
    // not vectorise: without -fno-math-errno, std::sqrt keeps a scalar call for errno. The tail
    // goes through the same batch code on a padded copy, so each element gets the same
    // operations (and the compiler's same FMA contractions) wherever it sits, in either
    // instruction set: the update does not depend on the vector width.
    static void adam_batch(const AdamCoefficients& c, float* w, const float* g, float* m, float* v) {
        const Batch wi = Batch::load_unaligned(w);
        const Batch gi = Batch::load_unaligned(g) + Batch(c.l2) * wi;
        const Batch mi = Batch(c.b1) * Batch::load_unaligned(m) + Batch(c.one_minus_b1) * gi;
        const Batch vi = Batch(c.b2) * Batch::load_unaligned(v) + Batch(c.one_minus_b2) * gi * gi;
        mi.store_unaligned(m);
        vi.store_unaligned(v);
        (wi * Batch(c.decay) - Batch(c.step_size) * mi / (xsimd::sqrt(vi) * Batch(c.inv_sqrt_bc2) + Batch(c.eps)))
            .store_unaligned(w);
    }

    static void adam_update(const AdamCoefficients& c, float* w, const float* g, float* m, float* v, std::size_t n) {
        std::size_t i = 0;
        for (; i + lanes <= n; i += lanes) adam_batch(c, w + i, g + i, m + i, v + i);
        if (i == n) return;
        float tw[lanes] = {}, tg[lanes] = {}, tm[lanes] = {}, tv[lanes] = {};  // zero padding: sqrt(0) + eps > 0
        const std::size_t rest = n - i;
        for (std::size_t k = 0; k < rest; ++k) tw[k] = w[i + k], tg[k] = g[i + k], tm[k] = m[i + k], tv[k] = v[i + k];
        adam_batch(c, tw, tg, tm, tv);
        for (std::size_t k = 0; k < rest; ++k) w[i + k] = tw[k], m[i + k] = tm[k], v[i + k] = tv[k];
    }

    static constexpr KernelTable table{&exp_shifted_sum, &adam_update};
};

// Defined in vector_kernels_baseline.cpp and (when built) vector_kernels_avx512.cpp.
const KernelTable& baseline_kernels();
const KernelTable& avx512_kernels();

}  // namespace xtgrad::vec::detail
