// small_gemm: the baseline kernels (gemm/small_gemm_impl.hpp), or their AVX-512 build where
// simd/cpu_isa.hpp chose it.
#include <xtgrad/gemm/small_gemm.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/speed_switches.hpp>
#include <xtgrad/gemm/bf16_convert.hpp>
#include <xtgrad/gemm/gemm_door.hpp>
#include <xtgrad/gemm/small_gemm_impl.hpp>
#include <xtgrad/simd/amx.hpp>
#include <xtgrad/simd/cpu_isa.hpp>
#include "xtgrad_simd_config.hpp"

#include <algorithm>

namespace xtgrad {

namespace {
bool on_avx512() {
#if XTGRAD_HAVE_AVX512_KERNELS
    return active_isa() == Isa::avx512;
#else
    return false;
#endif
}
}  // namespace

bool small_gemm_takes(int M, int N, int K) {
    if (small_gemm_fits(M, N, K)) return true;
    // the medium blocks: see small_gemm.hpp
    return on_avx512() && std::min(M, N) >= kMediumGemmMinSide && N <= kMediumGemmMaxSide &&
           K <= kMediumGemmMaxSide && static_cast<long>(M) * N * K <= kMediumGemmMacs;
}

void small_gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                const float* B, int ldb, float beta, float* C, int ldc) {
    // dot-product tiles only where B's copy would cost as much as the product (small_gemm_impl.hpp);
    // on AVX-512, whose 16-lane sums cost more and whose copy transposes whole blocks, only for at
    // most 16 columns (bench/matmul_primitive_probe: q·kᵀ on 20 x 20 x 64 slices 52 GFLOP/s with
    // dots, 68-73 packed; on 10 x 10 x 64, 50 with dots, 29 packed)
    const bool dots = small_gemm_fits(M, N, K);
#if XTGRAD_HAVE_AVX512_KERNELS
    if (on_avx512())
        return detail::small_gemm_avx512(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, dots && N <= 16);
#endif
    detail::small::Kernels<xsimd::default_arch>::run(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc,
                                                     dots);
}

bool small_gemm_bf16_available() {
#if XTGRAD_HAVE_AVX512_BF16_KERNELS
    return on_avx512() && detail::bf16_row_uses_avx512_bf16();
#else
    return false;
#endif
}

bool small_gemm_amx_available() {
#if XTGRAD_HAVE_AMX_KERNELS
    return small_gemm_bf16_available() && amx_bf16_permitted();
#else
    return false;
#endif
}

// XTGRAD_SMALL_GEMM_AMX's default: wherever the tiles run. Measured on the Intel Xeon, the one CPU
// met with AMX: seed-b's bf16 step 1.10-1.11x faster on the tiles than on vdpbf16ps (every pair),
// 1.01-1.08x faster than with the blocks in fp32 (XTGRAD_SMALL_GEMM_BF16; docs/performance.md).
bool detail::small_gemm_amx_by_cpu() { return small_gemm_amx_available(); }

void small_gemm_bf16(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                     const float* B, int ldb, float beta, float* C, int ldc) {
    // before any kernel packs: a negative size wrote before the AMX kernel's buffers (a no-context attack)
    detail::check_sizes("small_gemm_bf16", trans_a, trans_b, M, N, K, lda, ldb, ldc);
    if (M == 0 || N == 0) return;
#if XTGRAD_HAVE_AMX_KERNELS
    if (small_gemm_amx_available() && detail::speed_switch_on(detail::kSmallGemmAmxSwitch))
        return detail::small_gemm_bf16_amx(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
#endif
#if XTGRAD_HAVE_AVX512_BF16_KERNELS
    if (small_gemm_bf16_available())
        return detail::small_gemm_bf16_avx512(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
#endif
    fail("small_gemm_bf16: {}", XTGRAD_HAVE_AVX512_BF16_KERNELS ? "this CPU has no AVX512-BF16 (or XTGRAD_ISA chose no AVX-512)"
                                                                : "this build has no AVX512-BF16 kernel");
}

}  // namespace xtgrad
