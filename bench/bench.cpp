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
// Each step is timed in phases: zero (optimizer zero_grad), fwd (forward + loss), bwd
// (backward), opt (optimizer step), and step (all of it, end to end, including freeing the
// graph). With --optimizer-in-backward the optimizer steps inside backward
// (optim::OptimizerInBackward): no opt phase, bwd includes the updates. infer is a forward in
// eval() mode without gradients. For each: median, min and max over --steps steps after
// --warmup untimed ones; GFLOP/s from the analytic count of matmul FLOPs below (backward =
// 2 x forward); peak RSS of the process (getrusage ru_maxrss).
// With several configs the binary runs itself once per config, so each peak RSS is its own.
//
// --alternate XTGRAD_X measures one speed switch on against off in this process: the steps (and
// the inferences) alternate on, off, off, on, on, off, ... (each side first in half the pairs),
// --warmup and --steps of each side, so a host whose speed drifts moves both sides alike (runs in
// separate processes, minutes apart, read 0.76x and 1.14x for one switch on one host). It prints
// one result per side, each with its own medians and its samples in pair order.
//
// --paired-ceiling measures the GEMM ceiling (bench/gemm_ceiling.hpp: ceiling_bench's products,
// hot, the best of 2 runs each) again before each timed step and inference, and reads each one
// against the ceiling just measured: "× the ceiling" as the median over the steps of each step's
// ratio, so that a host whose speed moves between ceiling_bench and the steps (a product's rate
// read 98 and 160 GFLOP/s an hour apart on one guest) moves both sides of the ratio alike.
#include "bench/backend_fields.hpp"
#include "bench/gemm_ceiling.hpp"
#include "bench/workloads.hpp"
#include "examples/common/cli.hpp"
#include <xtgrad/autograd/speed_switches.hpp>
#include <xtgrad/gemm/blas.hpp>
#include <xtgrad/gemm/gemm_profile.hpp>
#include <xtgrad/optim/in_backward.hpp>
#include <xtgrad/optim/optimizer.hpp>
#include <xtgrad/xtgrad.hpp>

#include "examples/common/cli11.hpp"
#include <nlohmann/json.hpp>

#include <sys/resource.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>

using namespace xtgrad;
using bench::Workload;

namespace {

struct Options {
    std::vector<std::string> configs;
    int steps = 5, warmup = 2, threads = 1;
    std::size_t batch = 64;
    std::size_t d_heads = 8, d_encoder_layers = 6;
    bool adam = false, no_infer = false, json = false;
    bool optimizer_in_backward = false;  // the optimizer steps inside backward (optim::OptimizerInBackward)
    std::string autocast;  // "" (fp32) or "bf16": forward and loss inside autocast::Scope(DType::bf16)
    bool allow_slower_bf16 = false;  // autocast::allow_slower_bf16: measure bf16 where it is slower than fp32
    std::string alternate;  // a settable speed switch's name: on and off step by step (see the top)
    bool paired_ceiling = false;  // the GEMM ceiling before each timed step and inference (see the top)
};

// --paired-ceiling: each product's best of this many runs (after one untimed)
constexpr int kPairedCeilingReps = 2;

// ---- timing ------------------------------------------------------------------------------------

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0, Clock::time_point t1) {
    return std::chrono::duration<double, std::milli>(t1 - t0).count();
}

struct Stats {
    double median, min, max;
};
Stats stats(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    const double med = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    return {med, v.front(), v.back()};
}

// CPU time of the whole process (all threads, spinning OpenBLAS workers included): next to
// the wall time it shows whether a step was descheduled (a busy machine) or spun.
double process_cpu_ms() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

double peak_rss_mib() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

// Each speed switch's default on this CPU (autograd/speed_switches.hpp), by name
nlohmann::ordered_json switch_defaults() {
    nlohmann::ordered_json d = nlohmann::ordered_json::object();
    for (const detail::EnvSwitch* s : detail::kSpeedSwitches) d[s->name] = s->unset_means();
    return d;
}

// The switches the environment sets (a run with one off is no default run), and the one
// --alternate sets for this side: name -> on
nlohmann::ordered_json switches_set(const std::string& alternated, bool on) {
    nlohmann::ordered_json d = nlohmann::ordered_json::object();
    for (const detail::EnvSwitch* s : detail::kSpeedSwitches)
        if (const char* v = std::getenv(s->name); v != nullptr && *v != '\0') d[s->name] = detail::read_switch(*s);
    if (!alternated.empty()) d[alternated] = on;
    return d;
}

// One side's timings (all of a run's steps when nothing alternates): phase -> each step's ms
struct Side {
    std::map<std::string, std::vector<double>> times;
    std::vector<double> step_cpu;
};

// With --alternate, the side of step (or inference) i: pairs on-off, off-on, on-off, ...
bool on_side(int i) { return (i % 2 == 0) == ((i / 2) % 2 == 0); }

std::vector<nlohmann::ordered_json> run(const std::string& config, const Options& o) {
    Workload w = config == "winter"   ? bench::winter()
                 : config == "seed-b" ? bench::seed_b(o.batch)
                                      : bench::seed_d(o.d_heads, o.d_encoder_layers, o.adam);
    w.params = w.model->num_parameters();
    if (o.autocast == "bf16") {  // as torch.autocast: the forward and loss in the scope, backward outside
        w.what += ", autocast bf16";
        if (autocast::bf16_speed() == autocast::Bf16Speed::slower && autocast::slower_bf16_allowed())
            w.what += " (slower than fp32 on this CPU, run as --allow-slower-bf16 asks)";
        w.forward = [fwd = w.forward] {
            const autocast::Scope bf16(DType::bf16);
            return fwd();
        };
    }
    std::unique_ptr<optim::OptimizerInBackward> in_backward;
    if (o.optimizer_in_backward && w.opt) {
        in_backward = std::make_unique<optim::OptimizerInBackward>(*w.opt);
        w.what += ", optimizer step in backward";
    }
    const std::vector<std::string> names{"zero", "fwd", "bwd", "opt", "step"};
    const detail::EnvSwitch* alternated = o.alternate.empty() ? nullptr : detail::speed_switch_named(o.alternate);
    const int sides = alternated ? 2 : 1;  // side 0: on (or the only one), side 1: off
    const auto side_of = [&](int i) { return alternated && !on_side(i) ? 1 : 0; };
    const auto set_side = [&](int i) {
        if (alternated) detail::set_speed_switch(*alternated, side_of(i) == 0);
    };
    std::vector<Side> by_side(static_cast<std::size_t>(sides));
    const int warmup = o.warmup * sides, timed = o.steps * sides;
    w.model->train();
    std::size_t new_bytes_before_timed = 0;  // the block cache's new pages before the timed steps
    // XTGRAD_GEMM_PROFILE=1 counts the timed steps and inferences alone: a warm-up's products write
    // fresh pages, whose faults (~10 µs a page on a PVM guest) made its rates look like the kernel's.
    const bool profiling = gemm_profiling();
    // --paired-ceiling: the ceiling before each timed step (then inference), in GFLOP/s
    std::vector<double> step_ceilings, infer_ceilings;
    const auto ceiling_now = [&] {
        if (profiling) set_gemm_profiling(false);  // the ceiling's products are not the step's
        return bench::gemm_ceiling_now(kPairedCeilingReps);
    };
    for (int i = 0; i < warmup + timed; ++i) {
        if (i == warmup) new_bytes_before_timed = memory::block_cache_stats().new_bytes;
        if (o.paired_ceiling && i >= warmup) step_ceilings.push_back(ceiling_now());
        if (profiling) set_gemm_profiling(i >= warmup);
        set_side(i);
        const double cpu0 = process_cpu_ms();
        const auto t0 = Clock::now();
        Clock::time_point t1, t2, t3, t4;
        {
            if (w.opt)
                w.opt->zero_grad();
            else
                w.model->zero_grad();
            t1 = Clock::now();
            const Tensor out = w.forward();
            t2 = Clock::now();
            w.backward(out);
            t3 = Clock::now();
            if (w.opt && !in_backward) w.opt->step();
            t4 = Clock::now();
        }  // the loss and what is left of the graph are freed here, inside "step"
        const auto t5 = Clock::now();
        const double cpu = process_cpu_ms() - cpu0;
        if (i < warmup) continue;
        if (alternated && detail::speed_switch_on(*alternated) != (side_of(i) == 0))  // a step filed under the other side
            fail("--alternate: step {} ran with {} {} but is filed under {}", i, o.alternate,
                 detail::speed_switch_on(*alternated) ? "on" : "off", side_of(i) == 0 ? "on" : "off");
        auto& [times, step_cpu] = by_side[static_cast<std::size_t>(side_of(i))];
        step_cpu.push_back(cpu);
        times["zero"].push_back(ms_since(t0, t1));
        times["fwd"].push_back(ms_since(t1, t2));
        times["bwd"].push_back(ms_since(t2, t3));
        if (w.opt && !in_backward) times["opt"].push_back(ms_since(t3, t4));
        times["step"].push_back(ms_since(t0, t5));
    }
    const std::size_t new_bytes_timed = memory::block_cache_stats().new_bytes - new_bytes_before_timed;
    std::vector<std::string> order;
    for (const std::string& n : names)
        if (by_side[0].times.count(n)) order.push_back(n);
    if (!o.no_infer) {
        w.model->eval();
        NoGradGuard no_grad;
        for (int i = 0; i < warmup + timed; ++i) {
            if (o.paired_ceiling && i >= warmup) infer_ceilings.push_back(ceiling_now());
            if (profiling) set_gemm_profiling(i >= warmup);
            set_side(i);
            const auto t0 = Clock::now();
            { const Tensor out = w.forward(); }
            if (i >= warmup)
                by_side[static_cast<std::size_t>(side_of(i))].times["infer"].push_back(ms_since(t0, Clock::now()));
        }
        order.push_back("infer");
    }
    // One side's result line (with --alternate, side 0 is the switch on, 1 off)
    const auto result_of = [&](int side) {
        const auto& [times, step_cpu] = by_side[static_cast<std::size_t>(side)];
        const std::map<std::string, double> flop_factor{{"zero", 0}, {"fwd", 1}, {"bwd", 2}, {"opt", 0}, {"step", 3}, {"infer", 1}};
        nlohmann::ordered_json r;
        r["framework"] = "xtgrad";
        r["config"] = config;
        r["what"] = w.what;
        r["threads"] = o.threads;
        r["optimizer_in_backward"] = in_backward != nullptr;
        r["autocast"] = o.autocast.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(o.autocast);
        r["bf16_speed"] = o.autocast.empty() ? nlohmann::ordered_json(nullptr)
                                              : nlohmann::ordered_json(autocast::bf16_speed_name(autocast::bf16_speed()));
        bench::add_backend_fields(r);
        r["batch"] = config == "seed-b" ? nlohmann::ordered_json(o.batch) : nlohmann::ordered_json(nullptr);
        r["params"] = w.params;
        r["steps"] = o.steps;
        r["warmup"] = o.warmup;
        r["fwd_matmul_gflop"] = w.fwd_flops / 1e9;
        // --paired-ceiling's operands (up to ~100 MiB a product) would count: no peak RSS then
        r["peak_rss_mib"] = o.paired_ceiling ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(peak_rss_mib());
        r["step_cpu_ms"] = stats(step_cpu).median;  // CPU time of all threads per step (median)
        // Large blocks (autograd/array_allocator.hpp): live at most, and how requests were served
        const memory::BlockCacheStats bc = memory::block_cache_stats();
        r["switch_defaults"] = switch_defaults();
        r["switches_set"] = switches_set(o.alternate, side == 0);
        r["block_cache"] = bc.enabled ? nlohmann::ordered_json{{"peak_live_mib", static_cast<double>(bc.peak_live_bytes) / (1 << 20)},
                                                               {"peak_mapped_mib", static_cast<double>(bc.peak_mapped_bytes) / (1 << 20)},
                                                               {"cached_mib", static_cast<double>(bc.cached_bytes) / (1 << 20)},
                                                               {"reused", bc.reused},
                                                               {"resized", bc.resized},
                                                               {"mapped", bc.mapped},
                                                               {"pieces", bc.pieces},
                                                               {"new_mib_per_timed_step",
                                                                static_cast<double>(new_bytes_timed) /
                                                                    (1 << 20) / timed}}
                                      : nlohmann::ordered_json(nullptr);
        nlohmann::ordered_json phases;
        for (const std::string& n : order) {
            const Stats st = stats(times.at(n));
            const double f = flop_factor.at(n);
            phases[n] = {{"median_ms", st.median},
                         {"min_ms", st.min},
                         {"max_ms", st.max},
                         {"gflops", f > 0 ? nlohmann::ordered_json(f * w.fwd_flops / (st.median * 1e-3) / 1e9)
                                          : nlohmann::ordered_json(nullptr)}};
        }
        r["phases"] = phases;
        if (o.paired_ceiling) {  // each timed step's ratio to the ideal at the ceiling measured just before it
            nlohmann::ordered_json x;
            const auto paired = [&](const std::vector<double>& ms, const std::vector<double>& ceilings, double factor) {
                std::vector<double> ratios;
                for (std::size_t j = 0; j < ms.size(); ++j)
                    ratios.push_back(ms[j] * ceilings[j] * 1e6 / (factor * w.fwd_flops));
                return stats(ratios).median;
            };
            std::vector<double> fwd_bwd;
            for (std::size_t j = 0; j < times.at("fwd").size(); ++j) fwd_bwd.push_back(times.at("fwd")[j] + times.at("bwd")[j]);
            x["fwd"] = paired(times.at("fwd"), step_ceilings, 1);
            x["bwd"] = paired(times.at("bwd"), step_ceilings, 2);
            x["fwd+bwd"] = paired(fwd_bwd, step_ceilings, 3);
            x["step"] = paired(times.at("step"), step_ceilings, 3);
            if (times.count("infer")) x["infer"] = paired(times.at("infer"), infer_ceilings, 1);
            r["paired_ceiling"] = {{"reps", kPairedCeilingReps}, {"step_gflops", step_ceilings},
                                   {"infer_gflops", infer_ceilings}, {"x_ceiling", x}};
        }
        if (alternated) {  // each step's ms in pair order: sample j of one side and of the other are a pair
            nlohmann::ordered_json samples;
            for (const std::string& n : order) samples[n] = times.at(n);
            r["alternated"] = {{"switch", o.alternate}, {"side", side == 0 ? "on" : "off"}, {"samples", samples}};
        }
        return r;
    };
    std::vector<nlohmann::ordered_json> results;
    for (int side = 0; side < sides; ++side) results.push_back(result_of(side));
    return results;
}

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

}  // namespace

int main(int argc, char** argv) {
    Options o;
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
                 "print each speed switch and its default on this CPU (\"XTGRAD_BLOCK_CACHE on\"), one per line, and exit");
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
    app.footer(cli::cli_footer("With several configs the binary runs itself once per config (each peak RSS is its own)."));
    // run_main: a list or table that could not be written (a full device, a closed stdout) is exit 1
    return cli::run_main(app, argc, argv, [&] {
        if (list_switches) {  // bench/compare_builds.sh and tests/examples/run_cli_tests.sh read the list here
            for (const detail::EnvSwitch* s : detail::kSpeedSwitches) fmt::print("{} {}\n", s->name, s->unset_means() ? "on" : "off");
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
        // bf16 refused here (a backend without a bf16 product, a CPU where it is slower): a usage
        // error before any config is built, as the other options'
        if (!o.autocast.empty()) {
            autocast::allow_slower_bf16(o.allow_slower_bf16);
            try {
                const autocast::Scope can_run(DType::bf16);
            } catch (const Error& e) {
                cli::usage_error("--autocast bf16: {}", e.what());
            }
        }
        if (alternate->count() > 0) {  // checked here, before any config is built
            const detail::EnvSwitch* s = detail::speed_switch_named(o.alternate);
            if (s == nullptr) cli::usage_error("--alternate: '{}' is not a speed switch (--list-switches lists them)",
                                                 detail::shown_env_value(o.alternate));
            if (!detail::speed_switch_settable(*s))
                cli::usage_error("--alternate: {} is fixed when the process starts; compare it across processes "
                                 "(bench/compare_builds.sh --switches {})", o.alternate, o.alternate);
            // A switch that does nothing in this run would measure noise as its effect
            if (s == &detail::kPoolSpinSwitch && o.threads < 2)
                cli::usage_error("--alternate: {} acts on the pool's workers, and --threads {} has none (2 or more)",
                                 o.alternate, o.threads);
            if ((s == &detail::kBf16SmallInFp32Switch || s == &detail::kSmallGemmBf16Switch) && o.autocast.empty())
                cli::usage_error("--alternate: {} acts under --autocast bf16 only", o.alternate);
            // The process's first step is cold (pages, JIT kernels): without a warm-up it fell on one side
            if (o.warmup < 1)
                cli::usage_error("--alternate: --warmup {} leaves the process's first, cold step on one side; give 1 or more",
                                 o.warmup);
        }
        if (o.paired_ceiling && alternate->count() > 0)
            cli::usage_error("--paired-ceiling and --alternate pair each step with something else: give one of them");

        if (o.configs.size() > 1) {  // one process per config: each peak RSS is its own
            for (const std::string& c : o.configs)
                if (int rc = run_child(c, argc, argv)) return rc;
            return 0;
        }
        cli::apply_threads(o.threads);
        autocast::allow_slower_bf16(o.allow_slower_bf16);
        const std::vector<nlohmann::ordered_json> results = run(o.configs.front(), o);
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
