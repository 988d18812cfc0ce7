// The seam between xtgrad's one GEMM door (gemm/blas.cpp) and the library doing the big
// products. Exactly one backend is compiled in, chosen by the meson option `gemm`:
//   onednn   (gemm/gemm_onednn.cpp)   oneDNN's dnnl_sgemm; the default (docs/performance.md
//                                         measures it at ~2x OpenBLAS 0.3.21 on AVX-512 CPUs)
//   openblas (gemm/gemm_openblas.cpp) OpenBLAS's cblas_sgemm
// Internal: only blas.cpp includes this header.
#pragma once

#include <cstdint>

namespace xtgrad::detail {

// Row-major C (M, N) = alpha · op(A) · op(B) + beta · C on the calling thread's share of the
// backend's threads (blas.cpp splits big products over xtgrad's pool for oneDNN). M, N, K > 0.
void backend_sgemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                   const float* B, int ldb, float beta, float* C, int ldc);

// Row-major C (M, N) = alpha · op(A) · op(B) + beta · C with A and B in bfloat16 (their 16
// bits), C in fp32, summed in fp32, on the calling thread. OpenBLAS: an Error (no bf16 GEMM).
void backend_gemm_bf16(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const std::uint16_t* A, int lda,
                       const std::uint16_t* B, int ldb, float beta, float* C, int ldc);

// The backend's name, as the meson option spells it ("onednn" or "openblas").
const char* backend_name();

// The kernel family the backend chose for this CPU: OpenBLAS's core name ("Cooperlake", or
// "Haswell" when OPENBLAS_CORETYPE pins it), oneDNN's instruction set ("avx512_core_bf16").
const char* backend_kernel();

// How many threads one backend_sgemm call may use (OpenBLAS: its own pthreads; oneDNN: the
// OpenMP threads of the calling thread, which blas.cpp keeps at 1, see gemm_onednn.cpp).
void backend_set_threads(int n);
int backend_threads();

// True when the backend threads each product itself (OpenBLAS); false when blas.cpp must split
// a big product over xtgrad's pool (oneDNN, kept single-threaded per call).
bool backend_threads_itself();

// True when the backend runs products with a narrow C (at most 512 columns, more rows) well below
// its speed on wide ones, so blas.cpp reorients them (oneDNN; blas.cpp has the measurements).
bool backend_slow_on_narrow_c();

// True when the backend runs A·Bᵀ below its A·B on the same shapes on some CPUs, so that a weight
// kept transposed pays (oneDNN; autograd/transposed_weights.hpp has the measurements).
bool backend_nt_slower_than_nn();

// True when xtgrad's skinny kernels (gemm/skinny_gemm.hpp) beat this backend on products
// with a side of at most kSkinnyRows (bench/skinny_bench measures both).
bool backend_prefers_skinny_kernels();

}  // namespace xtgrad::detail
