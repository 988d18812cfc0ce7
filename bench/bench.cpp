// xtgrad_bench: times training steps and forward passes of the tutorials' models, for the
// side-by-side comparison with PyTorch (bench/torch_bench.py runs the same configurations;
// bench/run.sh prints both in one table; docs/performance.md has the numbers and a profile).
//
//   build-perf/bench/xtgrad_bench --config winter --threads 1
//   build-perf/bench/xtgrad_bench --config all --steps 3 --warmup 1 --threads 2 --json
//
// Configurations (bench/workloads.hpp): winter (tutorial C at its size), seed-b (tutorial B at
// its size, batch --batch), seed-d (tutorial D's Transformer; --d-heads, --d-encoder-layers, --adam).
//
// With several configs the binary runs itself once per config, so each peak RSS is its own. How
// a configuration is timed (phases, --alternate, --paired-ceiling): bench/bench_run.hpp.
#include "bench/bench_run.hpp"
#include "examples/common/cli.hpp"
#include <xtgrad/autograd/autocast.hpp>
#include <xtgrad/autograd/speed_switches.hpp>
#include <xtgrad/gemm/blas.hpp>
#include <xtgrad/gemm/small_gemm.hpp>
#include <xtgrad/simd/cpu_isa.hpp>
#include <xtgrad/threads/parallel.hpp>

#include "examples/common/cli11.hpp"
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

using namespace xtgrad;
using bench::BenchOptions;
using bench::stats;

namespace {

void print_text(const nlohmann::ordered_json& r) {
    const std::string side = r.contains("alternated") ? fmt::format(" ({} {}, alternating)", r["alternated"]["switch"].get<std::string>(),
                                                                     r["alternated"]["side"].get<std::string>())
                                                      : "";
    fmt::print("{}{}: {}; {:.1f} M parameters; xtgrad, {} thread(s); forward matmuls {:.3f} GFLOP; peak RSS {}\n",
               r["config"].get<std::string>(), side, r["what"].get<std::string>(), r["params"].get<double>() / 1e6,
               r["threads"].get<int>(), r["fwd_matmul_gflop"].get<double>(),
               r["peak_rss_mib"].is_null() ? std::string("not read (--paired-ceiling)")
                                           : fmt::format("{:.0f} MiB", r["peak_rss_mib"].get<double>()));
    fmt::print("  step CPU time (all threads) {:.1f} ms\n", r["step_cpu_ms"].get<double>());
    if (const auto& bc = r["block_cache"]; !bc.is_null())
        fmt::print("  large blocks: peak live {:.0f} MiB, live + cached {:.0f} MiB at most, {:.0f} MiB cached at the end; "
                   "requests reused {}, resized {}, mapped {}; new pages per timed step {:.1f} MiB; {} pieces\n",
                   bc["peak_live_mib"].get<double>(), bc["peak_mapped_mib"].get<double>(), bc["cached_mib"].get<double>(),
                   bc["reused"].get<std::size_t>(), bc["resized"].get<std::size_t>(), bc["mapped"].get<std::size_t>(),
                   bc["new_mib_per_timed_step"].get<double>(), bc["pieces"].get<std::size_t>());
    fmt::print("  {:6} {:>10} {:>10} {:>10} {:>8}\n", "phase", "median ms", "min ms", "max ms", "GFLOP/s");
    for (const auto& [name, s] : r["phases"].items())
        fmt::print("  {:6} {:10.2f} {:10.2f} {:10.2f} {:>8}\n", name, s["median_ms"].get<double>(),
                   s["min_ms"].get<double>(), s["max_ms"].get<double>(),
                   s["gflops"].is_null() ? std::string("-") : fmt::format("{:.1f}", s["gflops"].get<double>()));
    if (r.contains("paired_ceiling")) {
        const auto& p = r["paired_ceiling"];
        auto g = p["step_gflops"].get<std::vector<double>>();
        for (const auto& v : p["infer_gflops"]) g.push_back(v.get<double>());
        fmt::print("  x the GEMM ceiling measured before each step and inference (paired; it read {:.0f}-{:.0f} GFLOP/s), the median:",
                   *std::min_element(g.begin(), g.end()), *std::max_element(g.begin(), g.end()));
        for (const auto& [phase, v] : p["x_ceiling"].items()) fmt::print(" {} {:.3f}", phase, v.get<double>());
        fmt::print("\n");
    }
}

// --alternate's summary: per phase, the median over the pairs of off's time over on's (above 1: on
// is faster; a pair's ratio, as the host can move a step 1.5x within seconds) and the pairs on won
void print_alternation(const nlohmann::ordered_json& on, const nlohmann::ordered_json& off) {
    fmt::print("{} off over on (above 1: on is faster), the median of the pairs' ratios; pairs on won:\n",
               on["alternated"]["switch"].get<std::string>());
    for (const auto& [phase, samples] : on["alternated"]["samples"].items()) {
        const auto& b = off["alternated"]["samples"][phase];
        std::vector<double> ratios;
        int won = 0;
        for (std::size_t j = 0; j < samples.size(); ++j) {
            ratios.push_back(b[j].get<double>() / samples[j].get<double>());
            won += samples[j].get<double>() < b[j].get<double>();
        }
        fmt::print("  {:6} {:6.3f}  {} of {}\n", phase, stats(ratios).median, won, samples.size());
    }
}

// Runs this binary again with --config `config` and the other arguments unchanged.
int run_child(const std::string& config, int argc, char** argv) {
    std::vector<std::string> args{"/proc/self/exe", "--config", config};
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--config") {
            ++i;
            continue;
        }
        if (a.rfind("--config=", 0) == 0) continue;
        args.push_back(a);
    }
    std::vector<char*> cargs;
    for (std::string& a : args) cargs.push_back(a.data());
    cargs.push_back(nullptr);
    std::fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) {
        execv("/proc/self/exe", cargs.data());
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

// Exit 3: --alternate names a switch that cannot act in this process (this CPU, GEMM backend or
// environment), though the command is well formed. bench/compare_builds.sh --switches all skips
// such a switch and fails on 2, the user's own mistake.
constexpr int kCannotMeasureHere = 3;
template <typename... Args>
int cannot_measure_here(fmt::format_string<Args...> format, Args&&... args) {
    fmt::print(stderr, "xtgrad_bench: {} (cannot be measured here: exit {})\n", fmt::format(format, std::forward<Args>(args)...),
               kCannotMeasureHere);
    return kCannotMeasureHere;
}

}  // namespace

int main(int argc, char** argv) {
    BenchOptions o;
    CLI::App app{"Time training steps and forward passes of the tutorials' Transformers (bench/torch_bench.py is the "
                 "PyTorch side).",
                 "xtgrad_bench"};
    app.add_option("--config", o.configs, "winter, seed-b, seed-d or all (repeatable)")
        ->check(CLI::IsMember({"winter", "seed-b", "seed-d", "all"}));
    // At most a million each: --alternate doubles them, and a sum past INT_MAX ran no step (then a crash)
    app.add_option("--steps", o.steps, "timed steps")->capture_default_str()->transform(cli::count_in(1, 1000000));
    app.add_option("--warmup", o.warmup, "untimed steps first")->capture_default_str()->transform(cli::count_in(0, 1000000));
    cli::add_threads_option(app, o.threads);
    app.add_option("--batch", o.batch, "seed-b batch size")->capture_default_str()->transform(cli::count_in(1, 4096));
    app.add_option("--d-heads", o.d_heads, "seed-d nhead (torch's default 8; the tutorial's example: 16)")->capture_default_str()
        ->transform(cli::count_in(1, 512));
    app.add_option("--d-encoder-layers", o.d_encoder_layers, "seed-d encoder layers (torch's default 6; the example: 12)")
        ->capture_default_str()
        ->transform(cli::count_in(1, 64));
    app.add_flag("--adam", o.adam, "seed-d: also take an Adam step");
    app.add_flag("--optimizer-in-backward", o.optimizer_in_backward,
                 "the optimizer steps inside backward, each parameter as its gradient completes "
                 "(optim::OptimizerInBackward); bit-identical updates, no opt phase");
    app.add_flag("--no-infer", o.no_infer, "skip the inference (no-grad) forward");
    app.add_flag("--json", o.json, "one JSON object per config and line");
    bool list_switches = false;
    app.add_flag("--list-switches", list_switches,
                 "print each speed switch, its default on this CPU and what a measurement of it needs, one per line, "
                 "and exit (\"XTGRAD_POOL_SPIN on workers\": the words are speed_switch_tags', "
                 "autograd/speed_switches.hpp); a switch the environment sets is noted on stderr");
    app.add_option("--autocast", o.autocast, "bf16: forward and loss under autocast::Scope(DType::bf16) (matmul, linear, "
                   "conv1d and attention products in bf16, the rest fp32), as torch_bench.py --autocast bf16")
        ->check(CLI::IsMember({"bf16"}));
    CLI::Option* alternate = app.add_option("--alternate", o.alternate,
                   "one speed switch (--list-switches), on against off in this process: steps and inferences alternate "
                   "on, off, off, on, ..., --warmup (at least 1) and --steps of each side; one result per side (its peak "
                   "RSS, block cache figures and XTGRAD_GEMM_PROFILE's table are the process's, both sides)");
    app.add_flag("--paired-ceiling", o.paired_ceiling,
                 "before each timed step and inference, measure the GEMM ceiling again (ceiling_bench's products, hot, "
                 "best of 2 each; about a second on one thread) and read that step against it: x_ceiling, the median of "
                 "the steps' ratios; no peak RSS (the ceiling's operands would count)");
    app.add_flag("--allow-slower-bf16", o.allow_slower_bf16,
                 "with --autocast bf16: run it even on a CPU where bf16 products are slower than fp32 (where "
                 "autocast::Scope refuses; autograd/autocast.hpp), to measure how much slower");
    app.footer(cli::cli_footer("With several configs the binary runs itself once per config (each peak RSS is its own).\n"
                               "Exit 3: --alternate names a switch that cannot act in this process (no AMX tiles, no bf16 "
                               "products, or the environment keeps it out)."));
    // run_main: a list or table that could not be written (a full device, a closed stdout) is exit 1
    return cli::run_main(app, argc, argv, [&] {
        if (list_switches) {  // bench/compare_builds.sh and tests/bench/switch_cli_tests.sh read the list here
            for (const detail::EnvSwitch* s : detail::kSpeedSwitches) {
                const std::string tags = detail::speed_switch_tags(*s);
                fmt::print("{} {}{}{}\n", s->name, s->unset_means() ? "on" : "off", tags.empty() ? "" : " ", tags);
            }
            // The list is the CPU's defaults (the scripts read it); a switch the environment sets differs in this
            // process, said on stderr so that a reader who set one is not misled. Only a note: a closed or full
            // stderr loses it, not the list's exit status.
            for (const detail::EnvSwitch* s : detail::kSpeedSwitches) {
                const detail::SwitchValue v = detail::switch_value(*s);
                if (v != detail::SwitchValue::on && v != detail::SwitchValue::off) continue;
                const bool on = v == detail::SwitchValue::on;
                const std::string note = fmt::format(
                    "note: {}={} in the environment: {} in this process (the list gives the default)\n", s->name,
                    on ? 1 : 0, on ? "on" : "off");
                std::fputs(note.c_str(), stderr);
            }
            return 0;
        }
        if (o.configs.empty() || std::find(o.configs.begin(), o.configs.end(), "all") != o.configs.end())
            o.configs = {"winter", "seed-b", "seed-d"};
        // seed-d steps no optimizer without --adam: the flag would be dropped, and the run read as one in backward
        if (o.optimizer_in_backward && !o.adam && std::find(o.configs.begin(), o.configs.end(), "seed-d") != o.configs.end()) {
            cli::usage_error("--optimizer-in-backward: seed-d takes no optimizer step without --adam");
        }
        // --paired-ceiling's ceiling is fp32's; autocast's targets are against torch's autocast and xtgrad's fp32
        if (o.paired_ceiling && !o.autocast.empty())
            cli::usage_error("--paired-ceiling: the ceiling is fp32's products, and --autocast {} runs bf16 ones", o.autocast);
        if (o.paired_ceiling && alternate->count() > 0)
            cli::usage_error("--paired-ceiling and --alternate pair each step with something else: give one of them");
        if (alternate->count() > 0) {  // checked here, before any config is built
            const detail::EnvSwitch* s = detail::speed_switch_named(o.alternate);
            if (s == nullptr) cli::usage_error("--alternate: '{}' is not a speed switch (--list-switches lists them)",
                                                 detail::shown_env_value(o.alternate));
            if (!detail::speed_switch_settable(*s))
                cli::usage_error("--alternate: {} is fixed when the process starts; compare it across processes "
                                 "(bench/compare_builds.sh --switches {})", o.alternate, o.alternate);
            // A switch that does nothing in this run would measure noise as its effect
            if ((s->acts & detail::kActsOnWorkers) && o.threads < 2)
                cli::usage_error("--alternate: {} acts on the pool's workers, and --threads {} has none (2 or more)",
                                 o.alternate, o.threads);
            if ((s->acts & detail::kActsOnOneThread) && o.threads > 1)
                cli::usage_error("--alternate: {} acts on one thread only, and --threads {} runs more", o.alternate,
                                 o.threads);
            if ((s->acts & detail::kActsOnOptimizer) && !o.adam &&
                std::find(o.configs.begin(), o.configs.end(), "seed-d") != o.configs.end())
                cli::usage_error("--alternate: {} acts on the optimizer's step, and seed-d takes none without --adam",
                                 o.alternate);
            if ((s->acts & detail::kActsInBackward) && !o.optimizer_in_backward)
                cli::usage_error("--alternate: {} acts on the optimizer's step in backward only: add --optimizer-in-backward",
                                 o.alternate);
            if ((s->acts & detail::kActsUnderAutocast) && o.autocast.empty())
                cli::usage_error("--alternate: {} acts under --autocast bf16 only", o.alternate);
            // These two act inside the AVX-512 skinny kernels only (gemm/skinny_avx512.cpp)
            if ((s == &detail::kSkinnyPrefetchL2Switch || s == &detail::kSkinnyStreamedGradientSwitch) &&
                active_isa() != Isa::avx512)
                return cannot_measure_here("--alternate: {} acts in the AVX-512 skinny kernels, and this process runs "
                                           "the {} ones (no AVX-512, or XTGRAD_ISA=baseline)",
                                           o.alternate, isa_name(active_isa()));
            if ((s == &detail::kSkinnyGemmSwitch || s == &detail::kGradientAsFactorsSwitch) &&
                !detail::skinny_kernels_route())
                return cannot_measure_here("--alternate: {} acts on the skinny kernels' products, and gemm_ld sends "
                                           "them nothing here (oneDNN on an AVX2 CPU but the Zen 3, or "
                                           "XTGRAD_ISA=baseline)", o.alternate);
            if (s == &detail::kSmallGemmAmxSwitch && !small_gemm_amx_available())
                return cannot_measure_here("--alternate: {} chooses AMX's tiles for small_gemm_bf16, and this process has "
                                           "none (no AMX-BF16, not granted by Linux, or XTGRAD_ISA=baseline)", o.alternate);
            if (s == &detail::kSmallGemmAmxSwitch && !detail::medium_blocks_in_bf16())
                return cannot_measure_here("--alternate: {} acts on the medium blocks in bf16, which "
                                           "XTGRAD_SMALL_GEMM_BF16=0 or XTGRAD_SMALL_GEMM=0 keeps out of small_gemm_bf16",
                                           o.alternate);
            if ((s->acts & detail::kActsOnInference) && o.no_infer)
                cli::usage_error("--alternate: {} acts on the inference, which --no-infer skips", o.alternate);
            // The process's first step is cold (pages, JIT kernels): without a warm-up it fell on one side
            if (o.warmup < 1)
                cli::usage_error("--alternate: --warmup {} leaves the process's first, cold step on one side; give 1 or more",
                                 o.warmup);
        }
        // bf16 refused here (a backend without a bf16 product, a CPU where it is slower): a usage
        // error before any config is built, as the other options'; with --alternate, exit 3, after
        // the usage errors above (a mistake in the command is one on every machine)
        if (!o.autocast.empty()) {
            autocast::allow_slower_bf16(o.allow_slower_bf16);
            try {
                const autocast::Scope can_run(DType::bf16);
            } catch (const Error& e) {
                if (alternate->count() > 0 && detail::speed_switch_named(o.alternate) != nullptr)
                    return cannot_measure_here("--alternate {} runs under --autocast bf16: {}", o.alternate, e.what());
                cli::usage_error("--autocast bf16: {}", e.what());
            }
        }

        if (o.configs.size() > 1) {  // one process per config: each peak RSS is its own
            for (const std::string& c : o.configs)
                if (int rc = run_child(c, argc, argv)) return rc;
            return 0;
        }
        cli::apply_threads(o.threads);
        autocast::allow_slower_bf16(o.allow_slower_bf16);
        const std::vector<nlohmann::ordered_json> results = bench::run_config(o.configs.front(), o);
        for (const nlohmann::ordered_json& r : results) {
            if (o.json)
                fmt::print("{}\n", r.dump());
            else
                print_text(r);
        }
        if (!o.json && results.size() == 2) print_alternation(results[0], results[1]);
        return 0;
    });
}
