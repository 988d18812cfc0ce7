// The OpenBLAS GEMM backend (meson -Dgemm=openblas): cblas_sgemm, row-major, threaded by
// OpenBLAS's own pthreads (openblas_set_num_threads). Kept in its own translation unit:
// <cblas.h> and xtensor-blas cannot share one.
#include <xtgrad/gemm/gemm_backend.hpp>

#include <cblas.h>

#include <xtgrad/autograd/error.hpp>

namespace xtgrad::detail {

void backend_sgemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                   const float* B, int ldb, float beta, float* C, int ldc) {
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, M, N, K, alpha,
                A, lda, B, ldb, beta, C, ldc);
}

// autocast::Scope(DType::bf16) refuses this backend before any product gets here.
void backend_gemm_bf16(bool, bool, int M, int N, int K, float, const std::uint16_t*, int, const std::uint16_t*, int, float,
                       float*, int) {
    fail("gemm (bf16): the OpenBLAS backend has no bf16 matrix product ({} x {} x {}); build with -Dgemm=onednn", M, N,
         K);
}

const char* backend_name() { return "openblas"; }
const char* backend_kernel() { return openblas_get_corename(); }
void backend_set_threads(int n) { openblas_set_num_threads(n); }
int backend_threads() { return openblas_get_num_threads(); }
bool backend_threads_itself() { return true; }
// OpenBLAS packs the whole weight before multiplying 7 rows: the skinny kernels stream it
// instead (1.6-2x faster, docs/performance.md).
bool backend_slow_on_narrow_c() { return false; }
bool backend_nt_slower_than_nn() { return false; }
bool backend_prefers_skinny_kernels() { return true; }

}  // namespace xtgrad::detail
