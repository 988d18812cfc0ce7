// The oneDNN GEMM backend (meson -Dgemm=onednn, the default): dnnl_sgemm, row-major.
//
// Threads. Debian's oneDNN threads with OpenMP (libgomp), whose idle threads busy-wait
// (GOMP_SPINCOUNT, read once when libgomp loads, before any code of ours runs) on the core that
// xtgrad's pool or an OpenBLAS thread wants next: on 2 cores every op after a GEMM then waits out
// a scheduler quantum (torch needs OMP_WAIT_POLICY=PASSIVE here for that reason). So no OpenMP
// thread is ever started: every calling thread keeps its OpenMP thread count at 1 (the ICV is
// per thread in libgomp, hence the thread_local), and blas.cpp splits a big product into row or
// column blocks over xtgrad's own pool, one single-threaded dnnl_sgemm per block. One pool for
// every kernel; measured against oneDNN's own 2-thread OpenMP GEMM in docs/performance.md
// ("Design choices").
#include <xtgrad/gemm/gemm_backend.hpp>

#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include <algorithm>
#include <atomic>

#include <xtgrad/autograd/error.hpp>

namespace xtgrad::detail {

namespace {
std::atomic<int> product_threads{1};

void single_openmp_thread() {
    thread_local bool set = false;
    if (!set) {
        omp_set_num_threads(1);
        set = true;
    }
}
}  // namespace

void backend_sgemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                   const float* B, int ldb, float beta, float* C, int ldc) {
    single_openmp_thread();
    const dnnl_status_t status = dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', M, N, K, alpha, A, lda, B, ldb,
                                            beta, C, ldc);
    if (status != dnnl_success)
        fail("gemm: dnnl_sgemm failed (status {}) on ({}, {}, {}) lda {} ldb {} ldc {}", static_cast<int>(status), M, N,
             K, lda, ldb, ldc);
}

const char* backend_name() { return "onednn"; }
void backend_set_threads(int n) { product_threads.store(std::max(1, n)); }
int backend_threads() { return product_threads.load(); }
bool backend_threads_itself() { return false; }
bool backend_prefers_skinny_kernels() { return false; }

}  // namespace xtgrad::detail
