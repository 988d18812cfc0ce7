// The seam between xtgrad's one GEMM door (gemm/blas.cpp) and the library doing the big
// products. Two backends; each process uses one, chosen when it first needs it by
// XTGRAD_GEMM_BACKEND (unset or empty: the build's default, the meson option `gemm`):
//   onednn   (gemm/gemm_onednn.cpp)   oneDNN's dnnl_sgemm and bf16 matmul; the default
//                                         (docs/performance.md measures it at ~2x OpenBLAS
//                                         0.3.21 on AVX-512 CPUs). Not in a -Dgemm=openblas build.
//   openblas (gemm/gemm_openblas.cpp) OpenBLAS's cblas_sgemm, loaded (dlopen) only when chosen:
//                                         a loaded OpenBLAS starts its threads, which spin ~0.1 s
//                                         of CPU at every start of a program that never uses them.
// A choice per process, never changed: what blas.cpp and autocast decide from the backend
// (its threads, its bf16 product, its slow shapes) is decided once.
// Internal: only the library's sources include this header.
#pragma once

#include <cstdint>
#include <memory>

namespace xtgrad::detail {

struct GemmBackend {
    // As XTGRAD_GEMM_BACKEND and the meson option spell it: "onednn" or "openblas".
    const char* name;

    // Row-major C (M, N) = alpha · op(A) · op(B) + beta · C on the calling thread's share of the
    // backend's threads (blas.cpp splits big products over xtgrad's pool for oneDNN). M, N, K > 0.
    void (*sgemm)(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                  const float* B, int ldb, float beta, float* C, int ldc);

    // The same with A and B in bfloat16 (their 16 bits), C in fp32, summed in fp32, on the
    // calling thread; bias (N floats, or null) added to every row of the finished sum, before
    // beta · C (only with alpha = 1 and beta = 0: gemm_bias). OpenBLAS: an Error (no bf16 GEMM;
    // autocast refuses it before).
    void (*gemm_bf16)(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const std::uint16_t* A, int lda,
                      const std::uint16_t* B, int ldb, const float* bias, float beta, float* C, int ldc);

    // The kernel family the backend chose for this CPU: OpenBLAS's core name ("Cooperlake", or
    // "Haswell" when OPENBLAS_CORETYPE pins it), oneDNN's instruction set ("avx512_core_bf16").
    const char* (*kernel)();

    // How many threads one sgemm call may use (OpenBLAS: its own pthreads; oneDNN: the OpenMP
    // threads of the calling thread, which blas.cpp keeps at 1, see gemm_onednn.cpp).
    void (*set_threads)(int n);
    int (*threads)();

    // True when the backend threads each product itself (OpenBLAS); false when blas.cpp must split
    // a big product over xtgrad's pool (oneDNN, kept single-threaded per call).
    bool threads_itself;

    // True when the backend runs products with a narrow C (at most 512 columns, more rows) well
    // below its speed on wide ones, so blas.cpp reorients them (oneDNN; blas.cpp has the measurements).
    bool slow_on_narrow_c;

    // True when the backend runs A·Bᵀ below its A·B on the same shapes on some CPUs, so that a
    // weight kept transposed pays (oneDNN; autograd/transposed_weights.hpp has the measurements).
    bool nt_slower_than_nn;

    // True when xtgrad's skinny kernels (gemm/skinny_gemm.hpp) beat this backend on products
    // with a side of at most kSkinnyRows (bench/skinny_bench measures both).
    bool prefers_skinny_kernels;

    // bf16 products on a B that many products read (inference's packed weights,
    // autograd/packed_weights.hpp). pack_bf16_b copies op(B) (K, N) into the layout the
    // backend's bf16 product on M rows reads fastest (null where it has none); gemm_bf16_packed
    // runs C (M, N) = A (M, K; row stride lda) · that copy + bias (N floats, or null) on the
    // calling thread, and returns false, C untouched, where it cannot run M rows on that layout.
    // Both null where the backend has no packed layout (OpenBLAS).
    std::shared_ptr<const void> (*pack_bf16_b)(bool trans_b, int M, int N, int K, const std::uint16_t* B, int ldb);
    bool (*gemm_bf16_packed)(int M, int N, int K, const std::uint16_t* A, int lda, const void* packed,
                             const float* bias, float* C, int ldc);
};

// The backend of this process: XTGRAD_GEMM_BACKEND's on the first call that succeeds (an invalid
// value, or a backend this build or machine lacks, is an Error, and the next call reads the
// variable again).
const GemmBackend& active_backend();

// The backend a value of XTGRAD_GEMM_BACKEND names (nullptr or empty: the build's default),
// loading it (OpenBLAS) if needed; an Error naming the variable and the value otherwise.
const GemmBackend& backend_from_env(const char* value);

// True when this build has oneDNN (meson -Dgemm=onednn, the default).
bool onednn_built();

// Each backend's table (gemm_openblas.cpp loads OpenBLAS on its first call; gemm_onednn.cpp is
// compiled only where oneDNN is built).
const GemmBackend& openblas_backend();
const GemmBackend& onednn_backend();

}  // namespace xtgrad::detail
