// narrow_product_probe: oneDNN's sgemm on products whose C is narrow (at most 512 columns, more
// rows), as stored and reoriented, one thread: Aᵀ·B against Cᵀ = Bᵀ·A transposed into place, and
// A·B against A·(Bᵀ)ᵀ with B transposed first (the transposes timed in). gemm/blas.cpp reorients
// where this measured faster (its comment has the Zen 5 numbers); run it on a new CPU to check the
// rule still holds there. The last column is what gemm_ld does now. Built with -Dgemm=onednn.
//
//   build/bench/narrow_product_probe [--reps R]
#include <xtgrad/gemm/blas.hpp>
#include <xtgrad/gemm/transpose.hpp>
#include <xtgrad/threads/parallel.hpp>
#include "bench/timing.hpp"
#include "examples/common/cli.hpp"

#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include <vector>

using namespace xtgrad;
using bench::median;
using bench::ms_of;
using bench::randn_buffer;

namespace {

struct Case {
    const char* what;
    bool trans_a;  // Aᵀ·B (A stored (K, M)), else A·B; B is stored (K, N) in both
    int M, N, K;
};

int run(int reps) {
    omp_set_num_threads(1);
    set_num_threads(1);
    set_blas_threads(1);
    const Case cases[] = {
        {"dW1 = dyT x, feed-forward (2048, 512)", true, 2048, 512, 6336},
        {"dW1 half (a thread's rows on 2 threads)", true, 1024, 512, 6336},
        {"dW1, tutorial D's decoder (640 rows)", true, 2048, 512, 640},
        {"dW1, tutorial D's encoder (320 rows)", true, 2048, 512, 320},
        {"dW, vocabulary (5000, 512)", true, 5000, 512, 6336},
        {"dW, projection (512, 512): not narrow", true, 512, 512, 6400},
        {"dx = dy W, projection, 512 inputs", false, 3168, 512, 512},
        {"dx = dy W, feed-forward's first layer", false, 3200, 512, 2048},
        {"dx = dy W, vocabulary (K 5000)", false, 3168, 512, 5000},
        {"dx, 256 columns", false, 3200, 256, 1024},
        {"dx, 1024 columns: not narrow", false, 3200, 1024, 1024},
    };
    fmt::print("one thread, {} runs each, median ms (GFLOP/s)\n", reps);
    fmt::print("{:<42} {:>20} {:>18} {:>18} {:>18}\n", "product (M, N, K)", "", "as stored", "reoriented",
               "gemm_ld");
    for (const Case& c : cases) {
        const int M = c.M, N = c.N, K = c.K;
        const int lda = c.trans_a ? M : K;
        const std::vector<float> A = randn_buffer(std::size_t(M) * K, 1), B = randn_buffer(std::size_t(K) * N, 2);
        std::vector<float> C(std::size_t(M) * N), scratch(std::size_t(M) * N + std::size_t(K) * N);
        const char ta = c.trans_a ? 'T' : 'N';
        const auto as_stored = [&] { dnnl_sgemm(ta, 'N', M, N, K, 1.f, A.data(), lda, B.data(), N, 0.f, C.data(), N); };
        const auto reoriented = [&] {
            if (c.trans_a) {  // T (N, M) = Bᵀ·A, then C = Tᵀ
                dnnl_sgemm('T', 'N', N, M, K, 1.f, B.data(), N, A.data(), lda, 0.f, scratch.data(), M);
                detail::add_transposed(scratch.data(), M, N, M, 0.f, C.data(), N);
            } else {  // Bᵀ (N, K) first, then A·(Bᵀ)ᵀ
                detail::transpose(B.data(), K, N, N, scratch.data(), K);
                dnnl_sgemm('N', 'T', M, N, K, 1.f, A.data(), lda, scratch.data(), K, 0.f, C.data(), N);
            }
        };
        const auto door = [&] { gemm_ld(c.trans_a, false, M, N, K, 1.f, A.data(), lda, B.data(), N, 0.f, C.data(), N); };
        std::vector<double> t1, t2, t3;
        for (int r = 0; r < reps; ++r) {  // alternate, so a busy machine slows all alike
            t1.push_back(ms_of(as_stored));
            t2.push_back(ms_of(reoriented));
            t3.push_back(ms_of(door));
        }
        const double flop = 2.0 * M * N * K;
        const auto cell = [&](double ms) { return fmt::format("{:>9.3f} ({:>5.0f})", ms, flop / ms / 1e6); };
        fmt::print("{:<42} {:>20} {:>18} {:>18} {:>18}\n", c.what,
                   fmt::format("{} {}x{}x{}", c.trans_a ? "TN" : "NN", M, N, K), cell(median(t1)), cell(median(t2)),
                   cell(median(t3)));
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    int reps = 5;
    CLI::App app{"oneDNN's sgemm on narrow products, as stored against reoriented, one thread.", "narrow_product_probe"};
    app.add_option("--reps", reps, "timed runs per way")->capture_default_str()->check(CLI::Range(1, 10000));
    return cli::run_main(app, argc, argv, [&] { return run(reps); });
}
