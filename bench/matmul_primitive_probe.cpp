// matmul_primitive_probe: oneDNN's two doors to a matrix product, on one thread, at the
// benchmark's shapes: dnnl_sgemm (what gemm/gemm_onednn.cpp calls, one call per slice of a
// batched product) against the matmul primitive (one primitive per shape, created once, all
// slices of a batch in one execute, or one execute per slice as a per-(batch, head) kernel would),
// and, where gemm_ld would hand the product to it (small_gemm_takes), xtgrad's small_gemm
// (gemm/small_gemm.hpp) one slice at a time, and its bf16 kernel small_gemm_bf16 where the CPU
// has one (operands rounded: its results are not compared). Issue 12 asks for "its sgemm, or its matmul primitive where that is
// faster"; this measures which (docs/performance.md, "Design choices", has the finding). Built with -Dgemm=onednn.
//
//   build/bench/matmul_primitive_probe [--reps R]
#include <xtgrad/gemm/blas.hpp>
#include <xtgrad/random/random.hpp>
#include <xtgrad/gemm/small_gemm.hpp>
#include "bench/timing.hpp"
#include "examples/common/cli.hpp"

#include "examples/common/cli11.hpp"
#include <fmt/core.h>
#include <oneapi/dnnl/dnnl.hpp>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

using namespace xtgrad;
using bench::median;
using bench::ms_of;
using bench::randn_buffer;

namespace {

struct Case {
    const char* what;
    int batch, M, N, K;
    bool trans_b;          // B read as (N, K) rows: a Linear weight, or the keys of q kᵀ
    bool trans_a = false;  // A read as (K, M) rows: dk = dsᵀ·q of the attention backward
};

}  // namespace

int run(int reps);

int main(int argc, char** argv) {
    int reps = 9;
    CLI::App app{"oneDNN's dnnl_sgemm against its matmul primitive, one thread, at the benchmark's shapes.",
                 "matmul_primitive_probe"};
    app.add_option("--reps", reps, "timed runs per door")->capture_default_str()->transform(cli::count_in(1, 10000));
    return cli::run_main(app, argc, argv, [&] {
        // its gemm_backend column is oneDNN's sgemm, against oneDNN's primitive: on oneDNN only
        if (std::string(gemm_backend_name()) != "onednn")
            cli::usage_error("matmul_primitive_probe measures oneDNN, and the GEMM backend is {} here "
                             "(XTGRAD_GEMM_BACKEND): unset it", gemm_backend_name());
        return run(reps);
    });
}

int run(int reps) {
    using dnnl::memory;
    omp_set_num_threads(1);  // both doors on one thread, as xtgrad calls them (gemm_onednn.cpp)
    const Case cases[] = {
        {"attention scores q kT, 256 x 100x100x64", 256, 100, 100, 64, true},
        {"attention context w v, 256 x 100x64x100", 256, 100, 64, 100, false},
        {"attention dk = dsT q, 256 x 100x64x100", 256, 100, 64, 100, false, true},
        {"attention scores q kT, 256 x 99x99x64", 256, 99, 99, 64, true},
        {"seed-d decoder scores, 256 x 20x20x64", 256, 20, 20, 64, true},
        {"seed-d decoder context, 256 x 20x64x20", 256, 20, 64, 20, false},
        {"seed-d encoder scores, 256 x 10x10x64", 256, 10, 10, 64, true},
        {"seed-d encoder context, 256 x 10x64x10", 256, 10, 64, 10, false},
        {"seed-d decoder dk = dsT q, 256 x 20x64x20", 256, 20, 64, 20, false, true},
        {"seed-d encoder dk = dsT q, 256 x 10x64x10", 256, 10, 64, 10, false, true},
        {"Linear forward x WT 6400x2048x512", 1, 6400, 2048, 512, true},
        {"Linear forward x WT 6400x512x2048", 1, 6400, 512, 2048, true},
        {"Winter Games x WT 7x512x512", 1, 7, 512, 512, true},
        {"Winter Games x WT 7x2048x512", 1, 7, 2048, 512, true},
    };
    dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    dnnl::stream stream(engine);
    fmt::print("one thread, {} runs each, median ms (GFLOP/s); primitive creation timed once\n", reps);
    fmt::print("{:<46} {:>18} {:>18} {:>9} {:>10} {:>18} {:>18} {:>18}\n", "product", "dnnl_sgemm", "matmul primitive",
               "sgemm/mm", "create ms", "primitive per slice", "small_gemm per slice", "small_gemm_bf16");
    for (const Case& c : cases) {
        const std::size_t a_n = std::size_t(c.batch) * c.M * c.K, b_n = std::size_t(c.batch) * c.K * c.N,
                          c_n = std::size_t(c.batch) * c.M * c.N;
        const std::vector<float> A = randn_buffer(a_n, 1), B = randn_buffer(b_n, 2);
        std::vector<float> C1(c_n), C2(c_n);
        const memory::dim bt = c.batch, M = c.M, N = c.N, K = c.K;
        // Row-major slices; B either (K, N) rows or (N, K) rows read transposed (strides say which).
        const memory::dims a_strides = c.trans_a ? memory::dims{M * K, 1, M} : memory::dims{M * K, K, 1};
        const memory::desc a_md({bt, M, K}, memory::data_type::f32, a_strides);
        const memory::desc b_md({bt, K, N}, memory::data_type::f32,
                                c.trans_b ? memory::dims{K * N, 1, K} : memory::dims{K * N, N, 1});
        const memory::desc c_md({bt, M, N}, memory::data_type::f32, memory::dims{M * N, N, 1});
        dnnl::matmul primitive;
        const double create_ms = ms_of([&] {
            primitive = dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_md, b_md, c_md), engine));
        });
        memory a_mem(a_md, engine, const_cast<float*>(A.data())), b_mem(b_md, engine, const_cast<float*>(B.data())),
            c_mem(c_md, engine, C2.data());
        // The same product as a batch of 1, executed once per slice (pointers moved per slice).
        const memory::desc a1({1, M, K}, memory::data_type::f32, a_strides);
        const memory::desc b1({1, K, N}, memory::data_type::f32,
                              c.trans_b ? memory::dims{K * N, 1, K} : memory::dims{K * N, N, 1});
        const memory::desc c1({1, M, N}, memory::data_type::f32, memory::dims{M * N, N, 1});
        const dnnl::matmul per_slice(dnnl::matmul::primitive_desc(dnnl::matmul::desc(a1, b1, c1), engine));
        memory a1_mem(a1, engine, nullptr), b1_mem(b1, engine, nullptr), c1_mem(c1, engine, nullptr);
        // One slice at a time through `product` (gemm_backend or small_gemm).
        const auto per_slice_with = [&](auto product, std::vector<float>& out) {
            for (int s = 0; s < c.batch; ++s)
                product(c.trans_a, c.trans_b, c.M, c.N, c.K, 1.f, A.data() + std::size_t(s) * c.M * c.K,
                        c.trans_a ? c.M : c.K, B.data() + std::size_t(s) * c.K * c.N, c.trans_b ? c.K : c.N, 0.f,
                        out.data() + std::size_t(s) * c.M * c.N, c.N);
        };
        const auto by_sgemm = [&] { per_slice_with(gemm_backend, C1); };
        std::vector<float> C3(c_n);
        const bool small = small_gemm_takes(c.M, c.N, c.K);
        const auto by_small = [&] { per_slice_with(small_gemm, C3); };
        const bool bf16 = small && small_gemm_bf16_available();
        std::vector<float> C4(bf16 ? c_n : 0);
        const auto by_small_bf16 = [&] { per_slice_with(small_gemm_bf16, C4); };
        if (small) by_small();
        const auto by_primitive = [&] {
            primitive.execute(stream, {{DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, b_mem}, {DNNL_ARG_DST, c_mem}});
            stream.wait();
        };
        const auto by_slices = [&] {
            for (int sl = 0; sl < c.batch; ++sl) {
                a1_mem.set_data_handle(const_cast<float*>(A.data()) + std::size_t(sl) * c.M * c.K);
                b1_mem.set_data_handle(const_cast<float*>(B.data()) + std::size_t(sl) * c.K * c.N);
                c1_mem.set_data_handle(C2.data() + std::size_t(sl) * c.M * c.N);
                per_slice.execute(stream, {{DNNL_ARG_SRC, a1_mem}, {DNNL_ARG_WEIGHTS, b1_mem}, {DNNL_ARG_DST, c1_mem}});
            }
            stream.wait();
        };
        by_sgemm();
        by_primitive();
        double worst = 0;
        for (std::size_t i = 0; i < c_n; ++i) {
            worst = std::max(worst, double(std::abs(C1[i] - C2[i])));
            if (small) worst = std::max(worst, double(std::abs(C1[i] - C3[i])));
        }
        if (worst > 1e-3) fmt::print("  (the results differ by {:.3g})\n", worst);
        std::vector<double> t1, t2, t3, t4, t5;
        for (int r = 0; r < reps; ++r) {  // alternate, so a busy machine slows all alike
            t1.push_back(ms_of(by_sgemm));
            t2.push_back(ms_of(by_primitive));
            t3.push_back(ms_of(by_slices));
            if (small) t4.push_back(ms_of(by_small));
            if (bf16) t5.push_back(ms_of(by_small_bf16));
        }
        const double flop = 2.0 * c.batch * c.M * c.N * c.K, m1 = median(t1), m2 = median(t2), m3 = median(t3);
        const auto column = [&](bool ran, const std::vector<double>& t) {
            return ran ? fmt::format("{:>9.3f} ({:>5.0f})", median(t), flop / median(t) / 1e6) : std::string("-");
        };
        fmt::print("{:<46} {:>9.3f} ({:>5.0f}) {:>9.3f} ({:>5.0f}) {:>8.2f}x {:>10.2f} {:>9.3f} ({:>5.0f}) {:>18} {:>18}\n",
                   c.what, m1, flop / m1 / 1e6, m2, flop / m2 / 1e6, m1 / m2, create_ms, m3, flop / m3 / 1e6,
                   column(small, t4), column(bf16, t5));
    }
    return 0;
}
