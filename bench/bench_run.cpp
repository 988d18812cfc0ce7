#include "bench/bench_run.hpp"

#include "bench/backend_fields.hpp"
#include "bench/gemm_ceiling.hpp"
#include "bench/workloads.hpp"
#include <xtgrad/autograd/speed_switches.hpp>
#include <xtgrad/gemm/blas.hpp>
#include <xtgrad/gemm/gemm_profile.hpp>
#include <xtgrad/optim/in_backward.hpp>
#include <xtgrad/optim/optimizer.hpp>
#include <xtgrad/xtgrad.hpp>

#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>

namespace xtgrad::bench {

namespace {

// --paired-ceiling: each product's best of this many runs (after one untimed)
constexpr int kPairedCeilingReps = 2;

// ---- timing ------------------------------------------------------------------------------------

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0, Clock::time_point t1) {
    return std::chrono::duration<double, std::milli>(t1 - t0).count();
}

}  // namespace

Stats stats(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    const double med = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    return {med, v.front(), v.back()};
}

// CPU time of the whole process (all threads, spinning OpenBLAS workers included): next to
// the wall time it shows whether a step was descheduled (a busy machine) or spun.
namespace {

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

// What measuring each speed switch needs (speed_switch_tags: "one-thread,optimizer"), by name:
// bench/results.py leaves blank a cell whose run could not act
nlohmann::ordered_json switch_tags() {
    nlohmann::ordered_json d = nlohmann::ordered_json::object();
    for (const detail::EnvSwitch* s : detail::kSpeedSwitches) d[s->name] = detail::speed_switch_tags(*s);
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

}  // namespace

std::vector<nlohmann::ordered_json> run_config(const std::string& config, const BenchOptions& o) {
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
        r["switch_tags"] = switch_tags();
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

}  // namespace xtgrad::bench
