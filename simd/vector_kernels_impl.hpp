// The bodies of simd/vector_kernels.hpp, written once over xsimd's architecture tag and
// compiled once per instruction set (vector_kernels_baseline.cpp, vector_kernels_avx512.cpp).
// Internal. Only xsimd, the intrinsics and the C library here: everything this header makes the compiler emit
// is either inline or a template of Arch, so the AVX-512 file cannot hand the baseline code
// an AVX-512 copy of a shared function.
#pragma once

#include <xtgrad/simd/vector_kernels.hpp>

#include <xsimd/xsimd.hpp>

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <type_traits>
#include <vector>

namespace xtgrad::vec::detail {

// One instruction set's kernels, as plain function pointers (vector_kernels.cpp picks a table).
struct KernelTable {
    float (*max_value)(const float*, std::size_t);
    double (*dot)(const float*, const float*, std::size_t);
    double (*exp_shifted_sum)(const float*, float*, std::size_t, float, bool);
    void (*adam_update)(const AdamCoefficients&, float*, const float*, float*, float*, std::size_t, std::size_t);
    void (*adam_update_product)(const AdamCoefficients&, float*, float*, float*, const RankKGradient&, std::size_t,
                                std::size_t, std::size_t);
    void (*mt_twist)(std::uint32_t*);
    void (*mt_temper)(const std::uint32_t*, std::size_t, std::uint32_t*);
    void (*bernoulli_bytes)(const std::uint32_t*, std::size_t, std::uint64_t, std::uint8_t*);
};

// The Mersenne Twister's constants (std::mt19937's).
inline constexpr std::size_t kMtStateSize = 624, kMtShiftSize = 397;


template <class Arch>
struct Kernels {
    using Batch = xsimd::batch<float, Arch>;
    static constexpr std::size_t lanes = Batch::size;

    // x: (n). A chain of scalar maxima waits ~3 cycles per element (softmax's first pass over
    // every attention row); lanes run independent chains. max(x, acc) keeps acc where x is NaN
    // (the vector instruction returns its second operand then), as std::max(acc, x) does: NaN
    // never enters a lane. The maximum is exact, so the lanes' order changes nothing.
    static float max_value(const float* x, std::size_t n) {
        constexpr float lowest = -std::numeric_limits<float>::infinity();
        Batch acc(lowest);
        std::size_t k = 0;
        for (; k + lanes <= n; k += lanes) acc = xsimd::max(Batch::load_unaligned(x + k), acc);
        alignas(64) float lane[lanes];
        acc.store_aligned(lane);
        float mx = lowest;
        for (const float l : lane) mx = std::max(mx, l);
        for (; k < n; ++k) mx = std::max(mx, x[k]);
        return mx;
    }

    // a, b: (n). Σ a[k] b[k]: per lane in float (fused multiply-adds), the lanes then the tail
    // added in double (softmax's backward, Σ g·y over a row).
    static double dot(const float* a, const float* b, std::size_t n) {
        Batch acc(0.f);
        std::size_t k = 0;
        for (; k + lanes <= n; k += lanes) acc = xsimd::fma(Batch::load_unaligned(a + k), Batch::load_unaligned(b + k), acc);
        double sum = xsimd::hadd(acc);
        for (; k < n; ++k) sum += static_cast<double>(a[k]) * b[k];
        return sum;
    }

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
    static void adam_batch(const AdamCoefficients& c, float* w, Batch grad, float* m, float* v) {
        const Batch wi = Batch::load_unaligned(w);
        const Batch gi = grad + Batch(c.l2) * wi;
        const Batch mi = Batch(c.b1) * Batch::load_unaligned(m) + Batch(c.one_minus_b1) * gi;
        const Batch vi = Batch(c.b2) * Batch::load_unaligned(v) + Batch(c.one_minus_b2) * gi * gi;
        mi.store_unaligned(m);
        vi.store_unaligned(v);
        (wi * Batch(c.decay) - Batch(c.step_size) * mi / (xsimd::sqrt(vi) * Batch(c.inv_sqrt_bc2) + Batch(c.eps)))
            .store_unaligned(w);
    }

    // ahead > 0: each of the four streams asks for its line `ahead` bytes on (one prefetch per
    // 64-byte line; an integer until it is an address, and prefetches never fault, so past the
    // end is harmless). The bits are the same either way.
    static constexpr std::size_t kLineFloats = 64 / sizeof(float);
    static void prefetch_ahead(const float* p, std::size_t ahead) {
        __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<std::uintptr_t>(p) + ahead));
    }

    static void adam_update(const AdamCoefficients& c, float* w, const float* g, float* m, float* v, std::size_t n,
                            std::size_t ahead) {
        std::size_t i = 0;
        for (; i + lanes <= n; i += lanes) {
            if (ahead != 0 && i % kLineFloats == 0)
                for (const float* p : {static_cast<const float*>(w), g, static_cast<const float*>(m), static_cast<const float*>(v)})
                    prefetch_ahead(p + i, ahead);
            adam_batch(c, w + i, Batch::load_unaligned(g + i), m + i, v + i);
        }
        if (i == n) return;
        float tg[lanes] = {};
        for (std::size_t k = 0; k < n - i; ++k) tg[k] = g[i + k];
        adam_tail(c, w + i, Batch::load_unaligned(tg), m + i, v + i, n - i);
    }

    // The last rest < lanes elements through the same batch code on a padded copy.
    static void adam_tail(const AdamCoefficients& c, float* w, Batch grad, float* m, float* v, std::size_t rest) {
        float tw[lanes] = {}, tm[lanes] = {}, tv[lanes] = {};  // zero padding: sqrt(0) + eps > 0
        for (std::size_t k = 0; k < rest; ++k) tw[k] = w[k], tm[k] = m[k], tv[k] = v[k];
        adam_batch(c, tw, grad, tm, tv);
        for (std::size_t k = 0; k < rest; ++k) w[k] = tw[k], m[k] = tm[k], v[k] = tv[k];
    }

    // The factor b as the kernel reads it: batch q of columns holds rank vectors, b's rows k at
    // columns [q·lanes, (q + 1)·lanes), one after another (zero past cols). A batch's rank loads
    // are one contiguous stream; as rank rows, 8 KiB apart for 2048 columns, they met in L1's sets.
    static void fill_panel(const RankKGradient& g, float* panel) {
        const std::size_t batches = (g.cols + lanes - 1) / lanes;
        std::fill(panel, panel + batches * static_cast<std::size_t>(g.rank) * lanes, 0.f);
        for (std::size_t n = 0; n < g.cols; ++n)
            for (int k = 0; k < g.rank; ++k)
                panel[(n / lanes * static_cast<std::size_t>(g.rank) + static_cast<std::size_t>(k)) * lanes + n % lanes] =
                    g.b[k * g.b_rank + static_cast<std::ptrdiff_t>(n) * g.b_col];
    }

    // x·y + z rounded once, as the skinny kernel's _mm512_fmadd_ps: xsimd 8's fma for AVX-512 is
    // its generic x * y + z, which GCC fuses and clang at -O0 (the sanitizer build) does not.
    static Batch fused_multiply_add(const Batch& x, const Batch& y, const Batch& z) {
        if constexpr (lanes == 16)
            return _mm512_fmadd_ps(x.data, y.data, z.data);
        else
            return _mm256_fmadd_ps(x.data, y.data, z.data);
    }

    // Gradient row r, batch by batch: its lanes are a[0]·b₀ then a multiply-add per k in k order
    // (the stored product's sum, vector_kernels.hpp); then that batch's update.
    template <int K>
    static void adam_product_row(const AdamCoefficients& c, float* w, float* m, float* v, const RankKGradient& g,
                                 const float* panel, std::size_t r, std::size_t ahead) {
        Batch a[K];
        for (int k = 0; k < K; ++k) a[k] = Batch(g.a[static_cast<std::ptrdiff_t>(r) * g.a_row + k * g.a_rank]);
        const auto product = [&](const float* batch) {
            Batch sum = a[0] * Batch::load_aligned(batch);
            // the product rounded, as the kernel rounds it: else the compiler may fuse it into the
            // next multiply-add as that one's addend (a₁b₁ rounded, then + a₀b₀: other bits)
            asm("" : "+v"(sum.data));
            for (int k = 1; k < K; ++k) sum = fused_multiply_add(a[k], Batch::load_aligned(batch + k * lanes), sum);
            return sum;
        };
        w += r * g.cols, m += r * g.cols, v += r * g.cols;
        std::size_t n = 0;
        const float* batch = panel;
        for (; n + lanes <= g.cols; n += lanes, batch += K * lanes) {
            if (ahead != 0 && n % kLineFloats == 0)
                for (const float* p : {static_cast<const float*>(w), static_cast<const float*>(m), static_cast<const float*>(v)})
                    prefetch_ahead(p + n, ahead);
            adam_batch(c, w + n, product(batch), m + n, v + n);
        }
        // the panel's padding is zero: lanes past the row sum to 0
        if (n < g.cols) adam_tail(c, w + n, product(batch), m + n, v + n, g.cols - n);
    }

    static void adam_update_product(const AdamCoefficients& c, float* w, float* m, float* v, const RankKGradient& g,
                                    std::size_t row0, std::size_t row1, std::size_t ahead) {
        // per thread, on 64-byte lines (a split load costs; gemm/skinny_avx512.hpp), grown, never shrunk
        thread_local std::vector<float, xsimd::aligned_allocator<float, 64>> panel;
        const std::size_t panel_size = (g.cols + lanes - 1) / lanes * lanes * static_cast<std::size_t>(g.rank);
        if (panel.size() < panel_size) panel.resize(panel_size);
        fill_panel(g, panel.data());
        const auto rows = [&](auto rank) {
            for (std::size_t r = row0; r < row1; ++r)
                adam_product_row<decltype(rank)::value>(c, w, m, v, g, panel.data(), r, ahead);
        };
        switch (g.rank) {  // 1 <= rank <= kMaxGradientRank
            case 1: return rows(std::integral_constant<int, 1>{});
            case 2: return rows(std::integral_constant<int, 2>{});
            case 3: return rows(std::integral_constant<int, 3>{});
            case 4: return rows(std::integral_constant<int, 4>{});
            case 5: return rows(std::integral_constant<int, 5>{});
            case 6: return rows(std::integral_constant<int, 6>{});
            default: return rows(std::integral_constant<int, 7>{});
        }
    }

    // One word of the twist: the top bit of `cur` and the low 31 of `next`, shifted and xored into
    // the word 397 ahead. Branch-free (the odd case's matrix as a mask), so the loops vectorise.
    static std::uint32_t mt_twisted(std::uint32_t cur, std::uint32_t next, std::uint32_t far) {
        const std::uint32_t y = (cur & 0x80000000u) | (next & 0x7FFFFFFFu);
        return far ^ (y >> 1) ^ (0x9908B0DFu & (0u - (y & 1u)));
    }

    // Mt19937::temper's steps (its operator() draws one number with them)
    static std::uint32_t mt_tempered(std::uint32_t y) {
        y ^= y >> 11;
        y ^= (y << 7) & 0x9D2C5680u;
        y ^= (y << 15) & 0xEFC60000u;
        return y ^ (y >> 18);
    }

    // x: (624,) rewritten in place in order. Word i reads words i + 1 (not yet rewritten) and
    // i + 397, which wraps to the already rewritten word i - 227 from i = 227 on: both loops have a
    // dependence distance of at least 227 words, far more than a vector.
    static void mt_twist(std::uint32_t* state) {
        std::uint32_t* __restrict x = state;
        constexpr std::size_t wrap = kMtStateSize - kMtShiftSize;  // 227
        for (std::size_t i = 0; i < wrap; ++i) x[i] = mt_twisted(x[i], x[i + 1], x[i + kMtShiftSize]);
        for (std::size_t i = wrap; i < kMtStateSize - 1; ++i) x[i] = mt_twisted(x[i], x[i + 1], x[i - wrap]);
        x[kMtStateSize - 1] = mt_twisted(x[kMtStateSize - 1], x[0], x[kMtShiftSize - 1]);
    }

    static void mt_temper(const std::uint32_t* x, std::size_t n, std::uint32_t* out) {
        const std::uint32_t* __restrict in = x;
        std::uint32_t* __restrict o = out;
        for (std::size_t i = 0; i < n; ++i) o[i] = mt_tempered(in[i]);
    }

    // words: (m, 2) = (high, low) words of each element's random64, read as one little-endian
    // 64-bit lane (low dword = high word), its halves swapped back. r < 2^53 and bound <= 2^53,
    // so the compare may be signed: AVX2 has only that one for 64-bit lanes.
    static void bernoulli_bytes(const std::uint32_t* words, std::size_t m, std::uint64_t bound, std::uint8_t* out) {
        const std::int64_t b = static_cast<std::int64_t>(bound);
        std::uint8_t* __restrict o = out;
        for (std::size_t k = 0; k < m; ++k) {
            std::uint64_t lane;
            std::memcpy(&lane, words + 2 * k, sizeof lane);
            const auto r = static_cast<std::int64_t>(((lane << 32) | (lane >> 32)) & 0x001FFFFFFFFFFFFFull);
            o[k] = static_cast<std::uint8_t>(r < b);
        }
    }

    static constexpr KernelTable table{&max_value, &dot, &exp_shifted_sum, &adam_update, &adam_update_product, &mt_twist, &mt_temper, &bernoulli_bytes};
};

// Defined in vector_kernels_baseline.cpp and (when built) vector_kernels_avx512.cpp.
const KernelTable& baseline_kernels();
const KernelTable& avx512_kernels();

}  // namespace xtgrad::vec::detail
