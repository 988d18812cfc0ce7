// narrow_product_probe: oneDNN's sgemm on products whose C is narrow (at most 512 columns, more
// rows), as stored and reoriented, one thread: Aᵀ·B against Cᵀ = Bᵀ·A transposed into place,
// A·B against A·(Bᵀ)ᵀ with B transposed first (the transposes timed in), and A·Bᵀ (a Linear's
// forward, B its (N, K) weight) against A·(Bᵀ) on Bᵀ made once and kept, as inference keeps it
// (autograd/transposed_weights.hpp; XTGRAD_INFERENCE_WEIGHTS_TRANSPOSED follows these rows).
// gemm/blas.cpp reorients where this measured faster (its comment has the Zen 5 numbers); run it
// on a new CPU to check the rules still hold there. The last column is what gemm_ld does now. Built with -Dgemm=onednn.
//
//   build/bench/narrow_product_probe [--reps R]
#include <xtgrad/gemm/blas.hpp>
#include <xtgrad/gemm/transpose.hpp>
#include <xtgrad/threads/parallel.hpp>
#include "bench/timing.hpp"
#include "examples/common/cli.hpp"

#include "examples/common/cli11.hpp"
#include <fmt/core.h>
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include <string>
#include <vector>

using namespace xtgrad;
using bench::median;
using bench::ms_of;
using bench::randn_buffer;

namespace {

enum class Layout { TN, NN, NT };  // Aᵀ·B (A stored (K, M)), A·B, A·Bᵀ (B stored (N, K))

struct Case {
    const char* what;
    Layout layout;
    int M, N, K;
};

int run(int reps) {
    omp_set_num_threads(1);
    set_num_threads(1);
    set_blas_threads(1);
    const Case cases[] = {
        {"dW1 = dyT x, feed-forward (2048, 512)", Layout::TN, 2048, 512, 6336},
        {"dW1 half (a thread's rows on 2 threads)", Layout::TN, 1024, 512, 6336},
        {"dW1, tutorial D's decoder (640 rows)", Layout::TN, 2048, 512, 640},
        {"dW1, tutorial D's encoder (320 rows)", Layout::TN, 2048, 512, 320},
        {"dW, vocabulary (5000, 512)", Layout::TN, 5000, 512, 6336},
        {"dW, projection (512, 512): not narrow", Layout::TN, 512, 512, 6400},
        {"dx = dy W, projection, 512 inputs", Layout::NN, 3168, 512, 512},
        {"dx = dy W, feed-forward's first layer", Layout::NN, 3200, 512, 2048},
        {"dx = dy W, vocabulary (K 5000)", Layout::NN, 3168, 512, 5000},
        {"dx, 256 columns", Layout::NN, 3200, 256, 1024},
        {"dx, 1024 columns: not narrow", Layout::NN, 3200, 1024, 1024},
        {"dx, tutorial D's decoder (640 rows)", Layout::NN, 640, 512, 512},
        {"dx, tutorial D's encoder (320 rows)", Layout::NN, 320, 512, 2048},
        {"y = x WT, projection, tutorial D's decoder", Layout::NT, 640, 512, 512},
        {"y = x WT, projection, tutorial D's encoder", Layout::NT, 320, 512, 512},
        {"y = x WT, feed-forward's second, decoder", Layout::NT, 640, 512, 2048},
        {"y = x WT, feed-forward's second, encoder", Layout::NT, 320, 512, 2048},
        {"y = x WT, a thread's half on 2 threads", Layout::NT, 320, 256, 512},
        {"y = x WT, projection, tutorial B (3200 rows)", Layout::NT, 3200, 512, 512},
        {"y = x WT, 2048 columns: not narrow", Layout::NT, 640, 2048, 512},
    };
    fmt::print("one thread, {} runs each, median ms (GFLOP/s)\n", reps);
    fmt::print("{:<42} {:>20} {:>18} {:>18} {:>18}\n", "product (M, N, K)", "", "as stored", "reoriented",
               "gemm_ld");
    for (const Case& c : cases) {
        const int M = c.M, N = c.N, K = c.K;
        const bool ta = c.layout == Layout::TN, tb = c.layout == Layout::NT;
        const int lda = ta ? M : K, ldb = tb ? K : N;
        const std::vector<float> A = randn_buffer(std::size_t(M) * K, 1), B = randn_buffer(std::size_t(K) * N, 2);
        std::vector<float> C(std::size_t(M) * N), scratch(std::size_t(M) * N + std::size_t(K) * N);
        const auto as_stored = [&] {
            dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, 1.f, A.data(), lda, B.data(), ldb, 0.f, C.data(), N);
        };
        const auto reoriented = [&] {
            switch (c.layout) {
                case Layout::TN:  // T (N, M) = Bᵀ·A, then C = Tᵀ
                    dnnl_sgemm('T', 'N', N, M, K, 1.f, B.data(), N, A.data(), lda, 0.f, scratch.data(), M);
                    detail::add_transposed(scratch.data(), M, N, M, 0.f, C.data(), N);
                    break;
                case Layout::NN:  // Bᵀ (N, K) first, then A·(Bᵀ)ᵀ
                    detail::transpose(B.data(), K, N, N, scratch.data(), K);
                    dnnl_sgemm('N', 'T', M, N, K, 1.f, A.data(), lda, scratch.data(), K, 0.f, C.data(), N);
                    break;
                case Layout::NT:  // A·(Bᵀ) on Bᵀ (K, N) kept, made once below (as inference keeps it)
                    dnnl_sgemm('N', 'N', M, N, K, 1.f, A.data(), lda, scratch.data(), N, 0.f, C.data(), N);
                    break;
            }
        };
        if (c.layout == Layout::NT) detail::transpose(B.data(), N, K, K, scratch.data(), N);
        const auto door = [&] { gemm_ld(ta, tb, M, N, K, 1.f, A.data(), lda, B.data(), ldb, 0.f, C.data(), N); };
        std::vector<double> t1, t2, t3;
        for (int r = 0; r < reps; ++r) {  // alternate, so a busy machine slows all alike
            t1.push_back(ms_of(as_stored));
            t2.push_back(ms_of(reoriented));
            t3.push_back(ms_of(door));
        }
        const double flop = 2.0 * M * N * K;
        const auto cell = [&](double ms) { return fmt::format("{:>9.3f} ({:>5.0f})", ms, flop / ms / 1e6); };
        fmt::print("{:<42} {:>20} {:>18} {:>18} {:>18}\n", c.what,
                   fmt::format("{} {}x{}x{}", ta ? "TN" : tb ? "NT" : "NN", M, N, K), cell(median(t1)), cell(median(t2)),
                   cell(median(t3)));
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    int reps = 5;
    CLI::App app{"oneDNN's sgemm on narrow products, as stored against reoriented, one thread.", "narrow_product_probe"};
    app.add_option("--reps", reps, "timed runs per way")->capture_default_str()->transform(cli::count_in(1, 10000));
    return cli::run_main(app, argc, argv, [&] {
        // its gemm_ld column compares xtgrad's door with oneDNN's own calls: on oneDNN only
        if (std::string(gemm_backend_name()) != "onednn")
            cli::usage_error("narrow_product_probe measures oneDNN, and the GEMM backend is {} here "
                             "(XTGRAD_GEMM_BACKEND): unset it", gemm_backend_name());
        return run(reps);
    });
}
