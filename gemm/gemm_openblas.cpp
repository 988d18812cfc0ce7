// The OpenBLAS GEMM backend (XTGRAD_GEMM_BACKEND=openblas; the default of a -Dgemm=openblas
// build): cblas_sgemm, row-major, threaded by OpenBLAS's own pthreads (openblas_set_num_threads).
// OpenBLAS is loaded with dlopen when this backend is first chosen, not linked: a loaded OpenBLAS
// starts its thread server at once, whose threads spin ~0.1 s of CPU before they sleep, in every
// program, including the ones that run on oneDNN. Kept in its own translation unit: <cblas.h>
// and xtensor-blas cannot share one.
#include <xtgrad/gemm/gemm_backend.hpp>

#include <cblas.h>
#include <dlfcn.h>

#include <xtgrad/autograd/error.hpp>

#include <algorithm>
#include <cstdlib>
#include <string>

namespace xtgrad::detail {

namespace {
// named: a unity build puts both backends in one file, and each calls its entry points sgemm
namespace openblas_impl {

// The soname of Debian's libopenblas0 (any of its pthread, openmp or serial variants, through
// the alternatives link); the same in every distribution that packages OpenBLAS.
constexpr const char* kLibrary = "libopenblas.so.0";

// The functions used, typed by <cblas.h>'s own declarations.
struct OpenBlas {
    decltype(&cblas_sgemm) sgemm;
    decltype(&openblas_set_num_threads) set_num_threads;
    decltype(&openblas_get_num_threads) get_num_threads;
    decltype(&openblas_get_corename) get_corename;
};

// The loader's reason (dlerror() may have none: a symbol found with the value 0, a preloaded
// dlopen that fails silently).
const char* loader_says() {
    const char* why = dlerror();
    return why ? why : "the loader gave no reason";
}

// Who chose OpenBLAS, for the message: the variable, or the build (a -Dgemm=openblas build's
// default). And the way out: the other backend where this build has it.
std::string chosen_by() {
    const char* env = std::getenv("XTGRAD_GEMM_BACKEND");
    return env && *env ? "XTGRAD_GEMM_BACKEND=openblas: " : "the OpenBLAS GEMM backend (this build's default): ";
}
const char* way_out() {
    return onednn_built() ? "install Debian's libopenblas0, or unset XTGRAD_GEMM_BACKEND (oneDNN)"
                          : "install Debian's libopenblas0";
}

template <class F>
F symbol(void* library, const char* name) {
    void* f = dlsym(library, name);
    if (!f) fail("{}{} has no usable {} ({}); {}", chosen_by(), kLibrary, name, loader_says(), way_out());
    return reinterpret_cast<F>(f);
}

OpenBlas load() {
    // Never closed: its threads and the functions' addresses live as long as the process.
    void* library = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
    if (!library) fail("{}cannot load {} ({}); {}", chosen_by(), kLibrary, loader_says(), way_out());
    dlerror();  // clear: a symbol of value 0 leaves dlsym's result null without an error of its own
    const OpenBlas api{symbol<decltype(&cblas_sgemm)>(library, "cblas_sgemm"),
                       symbol<decltype(&openblas_set_num_threads)>(library, "openblas_set_num_threads"),
                       symbol<decltype(&openblas_get_num_threads)>(library, "openblas_get_num_threads"),
                       symbol<decltype(&openblas_get_corename)>(library, "openblas_get_corename")};
    api.set_num_threads(1);  // one thread per product until set_blas_threads, as oneDNN (OpenBLAS starts at every core)
    return api;
}

// Loaded on the first call (a failed load throws and is tried again on the next).
const OpenBlas& api() {
    static const OpenBlas loaded = load();
    return loaded;
}

void sgemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda, const float* B,
           int ldb, float beta, float* C, int ldc) {
    api().sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, M, N, K,
                alpha, A, lda, B, ldb, beta, C, ldc);
}

// autocast::Scope(DType::bf16) refuses this backend before any product gets here.
void gemm_bf16(bool, bool, int M, int N, int K, float, const std::uint16_t*, int, const std::uint16_t*, int,
               const float*, float, float*, int) {
    fail("gemm (bf16): the OpenBLAS backend has no bf16 matrix product ({} x {} x {}); unset XTGRAD_GEMM_BACKEND "
         "(oneDNN) for bf16",
         M, N, K);
}

const char* kernel() { return api().get_corename(); }
// At least 1, as oneDNN's count (OpenBLAS takes 0 or less as every core); OpenBLAS caps it at
// the thread count it was built for (64 in Debian's).
void set_threads(int n) { api().set_num_threads(std::max(1, n)); }
int threads() { return api().get_num_threads(); }

}  // namespace openblas_impl
}  // namespace

const GemmBackend& openblas_backend() {
    using namespace openblas_impl;
    static const GemmBackend backend{
        "openblas", sgemm, gemm_bf16, kernel, set_threads, threads,
        /*threads_itself=*/true,
        /*slow_on_narrow_c=*/false,
        /*nt_slower_than_nn=*/false,
        // OpenBLAS packs the whole weight before multiplying 7 rows: the skinny kernels stream
        // it instead (1.6-2x faster, docs/performance.md).
        /*prefers_skinny_kernels=*/true,
        /*pack_bf16_b=*/nullptr,
        /*gemm_bf16_packed=*/nullptr,
    };
    (void)api();  // loaded now: a missing OpenBLAS is an Error where the backend is chosen
    return backend;
}

}  // namespace xtgrad::detail
