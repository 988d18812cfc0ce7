// own_gemm_probe: would an own large-GEMM kernel beat oneDNN's sgemm on the step's products? They
// are ~90 % of seed-d's one-thread step; docs/performance.md ("What is left") gives the answer on
// the Zen 5 (no: 0.82-0.95x its speed). This times, one thread, at tutorial D's shapes
// (640 decoder rows, 320 encoder rows, d 512, d_ff 2048), dnnl_sgemm against a textbook
// BLIS-style AVX-512 kernel written here:
//   pack op(B) (KC, NC) into 32-column slivers and op(A) (MC, KC) into MR-row slivers, zero
//   padded; an MR x 32 register tile (MR x 2 zmm accumulators, two loads of B and MR broadcasts
//   of A per k, no spills: 24 FMAs per 14 loads at MR 12); C += the tile after the first KC.
// each with the operands hot (one set, reused) and cold (--sets sets taken in turn, more than the
// caches hold), the two alternating so a busy host slows both alike. It checks the kernel's C
// against oneDNN's (max |difference| over max |C|) and fails past 1e-5. Built with -Dgemm=onednn;
// the kernel runs where the CPU has AVX-512 (else the probe says so).
//
//   build/bench/own_gemm_probe [--reps R] [--sets S] [--kc KC] [--mc MC] [--mr 8|12|14]
#include <xtgrad/simd/cpu_isa.hpp>
#include "bench/timing.hpp"
#include "examples/common/cli.hpp"

#include "examples/common/cli11.hpp"
#include <fmt/core.h>
#include <immintrin.h>
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

using namespace xtgrad;
using bench::median;
using bench::ms_of;
using bench::randn_buffer;

namespace {

constexpr int kNr = 32;  // two zmm of C's columns per tile row

#define XTGRAD_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl")))

// C (m <= MR, n <= 32; ldc) = or += Ap (kc, MR) · Bp (kc, 32), both packed k-major.
template <int MR>
XTGRAD_AVX512 __attribute__((always_inline)) inline void micro_tile(int kc, const float* __restrict Ap, const float* __restrict Bp, float* C, int ldc,
                                     bool accumulate, int m, int n) {
    __m512 c0[MR], c1[MR];
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) c0[i] = c1[i] = _mm512_setzero_ps();
    for (int k = 0; k < kc; ++k) {
        const __m512 b0 = _mm512_load_ps(Bp + k * kNr), b1 = _mm512_load_ps(Bp + k * kNr + 16);
        _mm_prefetch(reinterpret_cast<const char*>(Bp + (k + 8) * kNr), _MM_HINT_T0);
#pragma GCC unroll 16
        for (int i = 0; i < MR; ++i) {
            const __m512 a = _mm512_set1_ps(Ap[k * MR + i]);
            c0[i] = _mm512_fmadd_ps(a, b0, c0[i]);
            c1[i] = _mm512_fmadd_ps(a, b1, c1[i]);
        }
    }
    if (m == MR && n == kNr) {  // a whole tile: plain stores
#pragma GCC unroll 16
        for (int i = 0; i < MR; ++i) {
            float* c = C + static_cast<std::ptrdiff_t>(i) * ldc;
            if (accumulate) {
                c0[i] = _mm512_add_ps(c0[i], _mm512_loadu_ps(c));
                c1[i] = _mm512_add_ps(c1[i], _mm512_loadu_ps(c + 16));
            }
            _mm512_storeu_ps(c, c0[i]);
            _mm512_storeu_ps(c + 16, c1[i]);
        }
        return;
    }
    const __mmask16 k0 = n >= 16 ? 0xffff : static_cast<__mmask16>((1u << n) - 1);
    const __mmask16 k1 = n >= 32 ? 0xffff : n <= 16 ? 0 : static_cast<__mmask16>((1u << (n - 16)) - 1);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {  // unrolled: the accumulators stay in registers
        if (i >= m) break;
        float* c = C + static_cast<std::ptrdiff_t>(i) * ldc;
        if (accumulate) {
            c0[i] = _mm512_add_ps(c0[i], _mm512_maskz_loadu_ps(k0, c));
            c1[i] = _mm512_add_ps(c1[i], _mm512_maskz_loadu_ps(k1, c + 16));
        }
        _mm512_mask_storeu_ps(c, k0, c0[i]);
        _mm512_mask_storeu_ps(c + 16, k1, c1[i]);
    }
}

struct Blocking {
    int kc, mc, nc;
};

// C (M, N) = op(A) · op(B), row-major, one thread.
template <int MR>
XTGRAD_AVX512 void own_sgemm(bool ta, bool tb, int M, int N, int K, const float* A, int lda, const float* B, int ldb,
                             float* C, int ldc, Blocking blk, std::vector<float>& a_pack, std::vector<float>& b_pack) {
    const int mc_max = (blk.mc + MR - 1) / MR * MR, nc_max = (blk.nc + kNr - 1) / kNr * kNr;
    a_pack.resize(static_cast<std::size_t>(mc_max) * blk.kc + 16);
    b_pack.resize(static_cast<std::size_t>(nc_max) * blk.kc + 16);
    const auto aligned = [](std::vector<float>& v) {
        return reinterpret_cast<float*>((reinterpret_cast<std::uintptr_t>(v.data()) + 63) & ~std::uintptr_t{63});
    };
    float* const Ap = aligned(a_pack);
    float* const Bp = aligned(b_pack);
    const auto a_at = [&](int i, int k) { return ta ? A[static_cast<std::ptrdiff_t>(k) * lda + i] : A[static_cast<std::ptrdiff_t>(i) * lda + k]; };
    const auto b_at = [&](int k, int j) { return tb ? B[static_cast<std::ptrdiff_t>(j) * ldb + k] : B[static_cast<std::ptrdiff_t>(k) * ldb + j]; };
    for (int jc = 0; jc < N; jc += blk.nc) {
        const int nc = std::min(blk.nc, N - jc);
        for (int pc = 0; pc < K; pc += blk.kc) {
            const int kc = std::min(blk.kc, K - pc);
            for (int jr = 0; jr < nc; jr += kNr) {  // op(B)[pc:, jc + jr:] -> (kc, 32)
                float* dst = Bp + static_cast<std::size_t>(jr) * kc;
                const int nr = std::min(kNr, nc - jr);
                if (!tb && nr == kNr) {
                    for (int k = 0; k < kc; ++k) {
                        const float* src = B + static_cast<std::ptrdiff_t>(pc + k) * ldb + jc + jr;
                        _mm512_store_ps(dst + k * kNr, _mm512_loadu_ps(src));
                        _mm512_store_ps(dst + k * kNr + 16, _mm512_loadu_ps(src + 16));
                    }
                } else {
                    for (int j = 0; j < kNr; ++j)
                        for (int k = 0; k < kc; ++k) dst[k * kNr + j] = j < nr ? b_at(pc + k, jc + jr + j) : 0.f;
                }
            }
            for (int ic = 0; ic < M; ic += blk.mc) {
                const int mc = std::min(blk.mc, M - ic);
                for (int ir = 0; ir < mc; ir += MR) {  // op(A)[ic + ir:, pc:] -> (kc, MR)
                    float* dst = Ap + static_cast<std::size_t>(ir) * kc;
                    const int mr = std::min(MR, mc - ir);
                    if (ta) {
                        for (int k = 0; k < kc; ++k)
                            for (int i = 0; i < MR; ++i) dst[k * MR + i] = i < mr ? a_at(ic + ir + i, pc + k) : 0.f;
                    } else {
                        for (int i = 0; i < MR; ++i)
                            for (int k = 0; k < kc; ++k) dst[k * MR + i] = i < mr ? a_at(ic + ir + i, pc + k) : 0.f;
                    }
                }
                for (int jr = 0; jr < nc; jr += kNr)
                    for (int ir = 0; ir < mc; ir += MR)
                        micro_tile<MR>(kc, Ap + static_cast<std::size_t>(ir) * kc, Bp + static_cast<std::size_t>(jr) * kc,
                                       C + static_cast<std::ptrdiff_t>(ic + ir) * ldc + jc + jr, ldc, pc > 0,
                                       std::min(MR, mc - ir), std::min(kNr, nc - jr));
            }
        }
    }
}

using OwnSgemm = void (*)(bool, bool, int, int, int, const float*, int, const float*, int, float*, int, Blocking,
                          std::vector<float>&, std::vector<float>&);

OwnSgemm kernel_for(int mr) {
    switch (mr) {
        case 8: return own_sgemm<8>;
        case 14: return own_sgemm<14>;
        default: return own_sgemm<12>;
    }
}

struct Case {
    const char* what;
    bool ta, tb;
    int M, N, K;
};

struct Operands {
    std::vector<std::vector<float>> a, b;
};

Operands make_operands(const Case& c, int sets) {
    Operands o;
    for (int s = 0; s < sets; ++s) {
        o.a.push_back(randn_buffer(static_cast<std::size_t>(c.M) * c.K, 2 * s + 1));
        o.b.push_back(randn_buffer(static_cast<std::size_t>(c.K) * c.N, 2 * s + 2));
    }
    return o;
}

int run(int reps, int sets, Blocking blk, int mr) {
    omp_set_num_threads(1);
    const Case cases[] = {
        {"y = x W1T, feed-forward up, decoder", false, true, 640, 2048, 512},
        {"y = h W2T, feed-forward down, decoder", false, true, 640, 512, 2048},
        {"y = x WT, projection, encoder", false, true, 320, 512, 512},
        {"y = x WT, q k v at once, decoder", false, true, 640, 1536, 512},
        {"dx = dy W2, decoder", false, false, 640, 2048, 512},
        {"dx = dy W1, decoder", false, false, 640, 512, 2048},
        {"dW2 = dyT h (512, 2048)", true, false, 512, 2048, 640},
        {"dW1 = dyT x (2048, 512), as stored", true, false, 2048, 512, 640},
    };
    const OwnSgemm own = kernel_for(mr);
    std::vector<float> a_pack, b_pack;
    fmt::print("one thread, {} runs each, median GFLOP/s; cold: {} operand sets in turn; own kernel {} x {}, KC {}, MC {}\n",
               reps, sets, mr, kNr, blk.kc, blk.mc);
    fmt::print("{:<40} {:>16} {:>9} {:>9} {:>11} {:>9} {:>9} {:>11}\n", "product", "(M, N, K)", "oneDNN", "own",
               "own/oneDNN", "cold oDNN", "cold own", "own/oneDNN");
    double sum_onednn = 0, sum_own = 0;
    for (const Case& c : cases) {
        const int lda = c.ta ? c.M : c.K, ldb = c.tb ? c.K : c.N;
        const Operands hot = make_operands(c, 1), cold = make_operands(c, sets);
        std::vector<float> c_onednn(static_cast<std::size_t>(c.M) * c.N), c_own(c_onednn.size());
        const auto onednn = [&](const Operands& o, int s) {
            dnnl_sgemm(c.ta ? 'T' : 'N', c.tb ? 'T' : 'N', c.M, c.N, c.K, 1.f, o.a[s].data(), lda, o.b[s].data(), ldb, 0.f,
                       c_onednn.data(), c.N);
        };
        const auto mine = [&](const Operands& o, int s) {
            own(c.ta, c.tb, c.M, c.N, c.K, o.a[s].data(), lda, o.b[s].data(), ldb, c_own.data(), c.N, blk, a_pack, b_pack);
        };
        onednn(hot, 0);
        mine(hot, 0);
        float diff = 0, scale = 0;
        for (std::size_t i = 0; i < c_own.size(); ++i) {
            if (!std::isfinite(c_own[i]) || !std::isfinite(c_onednn[i]))  // std::max would drop a NaN
                xtgrad::fail("C[{}] is {} from the kernel and {} from oneDNN on {}: not finite", i, c_own[i],
                             c_onednn[i], c.what);
            diff = std::max(diff, std::fabs(c_own[i] - c_onednn[i]));
            scale = std::max(scale, std::fabs(c_onednn[i]));
        }
        if (!(diff <= 1e-5f * scale))
            xtgrad::fail("the kernel's C differs from oneDNN's by {} (max |C| {}) on {}", diff, scale,
                             c.what);
        for (int w = 0; w < 3; ++w) onednn(hot, 0), mine(hot, 0);
        std::vector<double> t[4];
        for (int r = 0; r < reps; ++r) {
            t[0].push_back(ms_of([&] { onednn(hot, 0); }));
            t[1].push_back(ms_of([&] { mine(hot, 0); }));
            t[2].push_back(ms_of([&] { onednn(cold, (2 * r) % sets); }));
            t[3].push_back(ms_of([&] { mine(cold, (2 * r + 1) % sets); }));
        }
        const double gflop = 2.0 * c.M * c.N * c.K / 1e6;  // per ms: GFLOP/s
        double m[4];
        for (int i = 0; i < 4; ++i) m[i] = median(t[i]);
        sum_onednn += m[0] + m[2];
        sum_own += m[1] + m[3];
        fmt::print("{:<40} {:>16} {:>9.0f} {:>9.0f} {:>11.2f} {:>9.0f} {:>9.0f} {:>11.2f}\n", c.what,
                   fmt::format("{} {}x{}x{}", c.ta ? "TN" : c.tb ? "NT" : "NN", c.M, c.N, c.K), gflop / m[0],
                   gflop / m[1], m[0] / m[1], gflop / m[2], gflop / m[3], m[2] / m[3]);
    }
    fmt::print("all products, hot and cold: oneDNN {:.2f} ms, own {:.2f} ms (own is {:.2f}x oneDNN's speed)\n", sum_onednn,
               sum_own, sum_onednn / sum_own);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    int reps = 15, sets = 24, mr = 12;
    Blocking blk{256, 144, 2048};
    CLI::App app{"oneDNN's sgemm against a textbook AVX-512 kernel on tutorial D's products, one thread.",
                 "own_gemm_probe"};
    app.add_option("--reps", reps, "timed runs per way")->capture_default_str()->transform(cli::count_in(1, 10000));
    app.add_option("--sets", sets, "operand sets taken in turn for the cold columns")
        ->capture_default_str()
        ->transform(cli::count_in(1, 64));
    app.add_option("--kc", blk.kc, "the kernel's K block")->capture_default_str()->transform(cli::count_in(16, 4096));
    app.add_option("--mc", blk.mc, "the kernel's M block")->capture_default_str()->transform(cli::count_in(8, 4096));
    app.add_option("--mr", mr, "rows of the register tile: 8, 12 or 14")
        ->capture_default_str()
        ->check(CLI::Validator(
            [](std::string& v) { return v == "8" || v == "12" || v == "14" ? std::string() : "'" + v + "' is not 8, 12 or 14"; },
            "8|12|14"));
    return cli::run_main(app, argc, argv, [&] {
        if (active_isa() != Isa::avx512)
            cli::usage_error("the kernel runs on AVX-512, and xtgrad's kernels run {} here{}",
                             isa_name(active_isa()), avx512_available() ? " (XTGRAD_ISA)" : ": the CPU has no AVX-512");
        return run(reps, sets, blk, mr);
    });
}
