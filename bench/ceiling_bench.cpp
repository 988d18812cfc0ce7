// ceiling_bench: what this machine can do at most, so the benchmark's GFLOP/s have a scale.
// Prints the CPU model, the FMA-throughput peak of one core with AVX-512 and with AVX2 (a timed
// loop of independent FMAs, each ISA's loop compiled for it and chosen at run time, so one
// build runs everywhere) and the best sgemm of the process's GEMM backend (oneDNN or OpenBLAS:
// XTGRAD_GEMM_BACKEND) at a few of the benchmark's shapes on 1 and 2 threads; where bf16
// autocast runs, also the bf16 dot-product peak and the same products with bf16 operands. bench/run.sh prints it
// before the table and divides the GEMM-heavy phases by it. One row more times seed-d's projection
// with its operands cold, as a training step finds them (read from memory, not from the cache a
// loop on one set of buffers keeps them in): the gap between the two is what a step's products
// lose to memory, not to the kernel.
//
//   build/bench/ceiling_bench [--json] [--reps N]
#include <xtgrad/autograd/autocast.hpp>
#include <xtgrad/autograd/page_moves.hpp>
#include <xtgrad/gemm/blas.hpp>
#include <xtgrad/simd/cpu_peak.hpp>
#include <xtgrad/threads/parallel.hpp>
#include "bench/backend_fields.hpp"
#include "bench/gemm_ceiling.hpp"
#include "examples/common/cli.hpp"

#include "examples/common/cli11.hpp"
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

using namespace xtgrad;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// "AMD EPYC (family 26, model 2)": the model name and the family / model numbers, which tell
// CPU generations apart when the name does not (a VM shows only "AMD EPYC").
std::string cpu_model() {
    std::ifstream in("/proc/cpuinfo");
    std::string line, name = "unknown", family, model;
    const auto value = [](const std::string& l) { return l.substr(l.find(':') + 2); };
    while (std::getline(in, line)) {
        if (line.rfind("model name", 0) == 0 && name == "unknown") name = value(line);
        if (line.rfind("cpu family", 0) == 0 && family.empty()) family = value(line);
        if (line.rfind("model\t", 0) == 0 && model.empty()) model = value(line);
    }
    return fmt::format("{} (family {}, model {})", name, family, model);
}

// The probes: 4 M steps of 12 chains, ~0.2 s each (simd/cpu_peak.hpp), the best of kPeakRuns. One
// second-long run, as before, read 127-195 GFLOP/s on a Zen 5 guest whose other tenants took
// turns on its core, where short runs read 198-207 and oneDNN's sgemm reached 214.
constexpr long kIterations = 4'000'000;
constexpr int kPeakRuns = 5;

// The best of kPeakRuns runs of a peak probe; 0 where it does not run (no such instructions).
double best_peak(double (*probe)(long), long iterations) {
    double best = 0;
    for (int r = 0; r < kPeakRuns && iterations > 0; ++r) best = std::max(best, probe(iterations));
    return best;
}

// Best of `reps` runs (after one untimed), as the FMA loop: the ceiling, not the typical.
double best_of(int reps, double flops, const std::function<void()>& fn) {
    fn();
    double best = 1e30;
    for (int r = 0; r < reps; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        fn();
        best = std::min(best, seconds_since(t0));
    }
    return flops / best / 1e9;
}

// Operand sets the cold row cycles through: more bytes than any last-level cache the project has met.
constexpr std::size_t kColdBytes = std::size_t(256) << 20;

}  // namespace

int main(int argc, char** argv) {
    bool json = false;
    int reps = 5;
    CLI::App app{"This machine's ceiling: CPU model, FMA peak per core (AVX-512, AVX2), the GEMM backend's best sgemm.",
                 "ceiling_bench"};
    app.add_flag("--json", json, "one JSON object");
    app.add_option("--reps", reps, "timed runs per measurement (the best counts)")->capture_default_str()->transform(cli::count_in(1, 1000));
    app.footer(cli::cli_footer("Threads: the sgemm rows run on 1 and 2 threads each (there is no --threads)."));
    return cli::run_main(app, argc, argv, [&] {
        nlohmann::ordered_json r;
        r["framework"] = "machine";
        r["cpu"] = cpu_model();
        r["cores"] = std::thread::hardware_concurrency();
        // What a page costs at its first write, new and just moved: the library's own measure
        // (autograd/page_moves.hpp), which turns the block cache on where moved pages are cheap.
        const memory::PageMoveCost& pages = memory::page_move_cost();
        r["page_fault_us"] = pages.measured ? nlohmann::ordered_json(pages.fresh_us) : nlohmann::ordered_json(nullptr);
        r["page_move_us"] = pages.measured ? nlohmann::ordered_json(pages.moved_us) : nlohmann::ordered_json(nullptr);
        __builtin_cpu_init();
        const auto peak_or_null = [](double gflops) {
            return gflops > 0 ? nlohmann::ordered_json(gflops) : nlohmann::ordered_json(nullptr);
        };
        r["fma_avx512_gflops_per_core"] = peak_or_null(best_peak(fma_peak_avx512_gflops, kIterations));
        r["fma_avx2_gflops_per_core"] = peak_or_null(best_peak(fma_peak_avx2_gflops, kIterations));
        bench::add_backend_fields(r);
        const std::vector<bench::CeilingShape>& shapes = bench::ceiling_shapes();
        // Each shape on 1 and 2 threads, with fp32 or bf16 operands (fp32 accumulation either way).
        const auto gemm_rates = [&](DType operands) {
            nlohmann::ordered_json rates = nlohmann::ordered_json::array();
            for (const bench::CeilingShape& s : shapes)
                for (int threads : {1, 2}) {
                    set_num_threads(threads);
                    set_blas_threads(threads);
                    const double g = bench::best_gemm_rate(s, reps, operands);
                    rates.push_back({{"shape", s.what}, {"threads", threads}, {"gflops", g}});
                }
            return rates;
        };
        r["sgemm"] = gemm_rates(DType::fp32);
        {  // seed-d's projection on 1 thread, each call on operands no other call touched lately
            const bench::CeilingShape& s = shapes[3];
            set_num_threads(1);
            set_blas_threads(1);
            const std::size_t a = std::size_t(s.M) * s.K, b = std::size_t(s.K) * s.N, c = std::size_t(s.M) * s.N;
            const std::size_t sets = kColdBytes / ((a + b + c) * sizeof(float));
            std::vector<float> A(sets * a, 0.1f), B(sets * b, 0.2f), C(sets * c);
            const double g = best_of(reps, 2.0 * s.M * s.N * s.K * double(sets), [&] {
                for (std::size_t i = 0; i < sets; ++i)
                    gemm(DType::fp32, false, s.trans_b, s.M, s.N, s.K, 1.f, A.data() + i * a, B.data() + i * b, 0.f,
                         C.data() + i * c);
            });
            r["sgemm_cold"] = {{"shape", s.what}, {"threads", 1}, {"sets", sets}, {"gflops", g}};
        }
        // The bf16 ceiling, where autocast runs (oneDNN on an AVX512-BF16 CPU): the dot-product
        // peak and gemm(DType::bf16) on the same shapes (operands converted to bf16 included).
        // Measured where oneDNN runs them on the CPU's own instructions, even where they are slower
        // than fp32 (autocast then refuses them: r["bf16_speed"]); this measures how much slower.
        // Not where there is no bf16 product at all (ONEDNN_MAX_CPU_ISA=AVX2 on this CPU).
        const bool bf16_runs = std::string(gemm_backend_name()) == "onednn" && __builtin_cpu_supports("avx512bf16") &&
                               autocast::bf16_speed() != autocast::Bf16Speed::unavailable;
        r["bf16_speed"] = autocast::bf16_speed_name(autocast::bf16_speed());
        r["bf16_dot_gflops_per_core"] = peak_or_null(best_peak(bf16_dot_peak_gflops, bf16_runs ? kIterations : 0));
        autocast::allow_slower_bf16(true);
        r["bf16_gemm"] = bf16_runs ? gemm_rates(DType::bf16) : nlohmann::ordered_json::array();
        autocast::allow_slower_bf16(false);
        set_num_threads(1);
        if (json) {
            fmt::print("{}\n", r.dump());
            return cli::kSuccess;
        }
        const auto num = [](const nlohmann::ordered_json& v) { return v.is_null() ? std::string("n/a") : fmt::format("{:.0f}", v.get<double>()); };
        fmt::print("CPU: {}, {} cores\n", r["cpu"].get<std::string>(), r["cores"].get<unsigned>());
        fmt::print("FMA peak per core: AVX-512 {} GFLOP/s, AVX2 {} GFLOP/s\n", num(r["fma_avx512_gflops_per_core"]),
                   num(r["fma_avx2_gflops_per_core"]));
        const auto us = [](const nlohmann::ordered_json& v) { return v.is_null() ? std::string("n/a") : fmt::format("{:.2f}", v.get<double>()); };
        fmt::print("First write to a page: new {} µs, just moved (mremap) {} µs; moves are {} here (below {} µs: "
                   "the block cache is on by default)\n",
                   us(r["page_fault_us"]), us(r["page_move_us"]), memory::page_moves_cheap() ? "cheap" : "dear",
                   memory::kCheapMoveMicroseconds);
        const auto print_rates = [](const nlohmann::ordered_json& rates) {
            for (const auto& g : rates)
                fmt::print("  {:<36} {} thread(s) {:6.0f} GFLOP/s\n", g["shape"].get<std::string>(), g["threads"].get<int>(),
                           g["gflops"].get<double>());
        };
        fmt::print("sgemm ({}, kernel {}), best of {}:\n", gemm_backend_name(), gemm_backend_kernel(), reps);
        print_rates(r["sgemm"]);
        const auto& cold = r["sgemm_cold"];
        fmt::print("  {:<36} 1 thread(s) {:6.0f} GFLOP/s with cold operands ({} sets, {} MiB, one after another)\n",
                   cold["shape"].get<std::string>(), cold["gflops"].get<double>(), cold["sets"].get<std::size_t>(),
                   kColdBytes >> 20);
        if (!r["bf16_gemm"].empty()) {
            fmt::print("bf16 dot-product peak per core (vdpbf16ps): {} GFLOP/s; autocast's bf16 products here: {}\n",
                       num(r["bf16_dot_gflops_per_core"]), r["bf16_speed"].get<std::string>());
            fmt::print("gemm with bf16 operands (autocast), best of {}:\n", reps);
            print_rates(r["bf16_gemm"]);
        }
        return cli::kSuccess;
    });
}
