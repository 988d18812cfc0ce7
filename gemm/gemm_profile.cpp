#include <xtgrad/gemm/gemm_profile.hpp>

#include <xtgrad/autograd/env_switch.hpp>
#include <xtgrad/autograd/error.hpp>
#include <xtgrad/gemm/blas.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <mutex>
#include <tuple>

namespace xtgrad {

namespace {

struct Profile {
    using Key = std::tuple<bool, bool, int, int, int>;
    std::mutex mutex;
    std::map<Key, GemmShapeStats> shapes;
    // Read before main, where an Error would end the program: a bad value is kept, and the first
    // product (gemm_profiling()) throws it, unless set_gemm_profiling has decided by then.
    // One atomic for the hot path (each product reads it): off, on, or the environment's bad value.
    std::atomic<detail::SwitchValue> state{detail::switch_value(detail::kGemmProfileSwitch)};
    const bool print_at_exit = state.load() == detail::SwitchValue::on;
    ~Profile() {
        if (!print_at_exit || shapes.empty()) return;
        const std::string report = gemm_profile_report();
        std::fputs(report.c_str(), stderr);
    }
};

Profile& profile() {
    static Profile p;
    return p;
}
// Constructed before main, so XTGRAD_GEMM_PROFILE is read once and the exit report is printed
// after every static object that may still multiply matrices.
[[maybe_unused]] const bool constructed = (profile(), true);

}  // namespace

void set_gemm_profiling(bool on) {
    profile().state.store(on ? detail::SwitchValue::on : detail::SwitchValue::off, std::memory_order_relaxed);
}

bool gemm_profiling() {
    const detail::SwitchValue s = profile().state.load(std::memory_order_relaxed);
    if (s == detail::SwitchValue::invalid) detail::fail_invalid_switch(detail::kGemmProfileSwitch);
    return s == detail::SwitchValue::on;
}

void reset_gemm_profile() {
    std::lock_guard<std::mutex> lock(profile().mutex);
    profile().shapes.clear();
}

std::vector<GemmShapeStats> gemm_profile() {
    std::vector<GemmShapeStats> all;
    {
        std::lock_guard<std::mutex> lock(profile().mutex);
        for (const auto& [key, stats] : profile().shapes) all.push_back(stats);
    }
    std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.ms > b.ms; });
    return all;
}

std::string gemm_profile_report() {
    const std::vector<GemmShapeStats> all = gemm_profile();
    double total = 0;
    for (const GemmShapeStats& s : all) total += s.ms;
    // the backend, unless choosing it fails (a bad XTGRAD_GEMM_BACKEND, reported where it was read)
    std::string backend;
    try {
        backend = fmt::format(", the backend {} ({})", gemm_backend_name(), gemm_backend_kernel());
    } catch (const Error&) {
    }
    std::string out = fmt::format("GEMM profile: {} shapes, {:.1f} ms in all (summed over calling threads){}\n",
                                  all.size(), total, backend);
    out += fmt::format("{:>6} {:>19} {:>9} {:>11} {:>9} {:>7}\n", "layout", "M x N x K", "calls", "ms", "GFLOP/s",
                       "share");
    for (const GemmShapeStats& s : all)
        out += fmt::format("{:>5}{} {:>19} {:>9} {:>11.1f} {:>9.1f} {:>6.1f}%\n", s.trans_a ? 'T' : 'N',
                           s.trans_b ? 'T' : 'N', fmt::format("{}x{}x{}", s.M, s.N, s.K), s.calls, s.ms, s.gflops(),
                           total > 0 ? 100 * s.ms / total : 0.0);
    return out;
}

namespace detail {

void record_gemm(bool trans_a, bool trans_b, int M, int N, int K, double ms) {
    std::lock_guard<std::mutex> lock(profile().mutex);
    GemmShapeStats& s = profile().shapes[{trans_a, trans_b, M, N, K}];
    s.trans_a = trans_a, s.trans_b = trans_b, s.M = M, s.N = N, s.K = K;
    ++s.calls;
    s.ms += ms;
}

}  // namespace detail

}  // namespace xtgrad
