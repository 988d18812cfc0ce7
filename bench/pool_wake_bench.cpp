// pool_wake_bench: how long after a job is posted xtgrad's pool worker starts it, after the
// caller has worked alone for a while (the sequential stretch between two split kernels). Each
// split kernel waits that long for its second half (threads/parallel.cpp says why it spins the
// way it does).
//
//   build/bench/pool_wake_bench [--reps N]
#include <xtgrad/threads/parallel.hpp>
#include "bench/timing.hpp"
#include "examples/common/cli.hpp"

#include "examples/common/cli11.hpp"
#include <fmt/core.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <vector>

using namespace xtgrad;
using bench::micros_since;
using Clock = std::chrono::steady_clock;

namespace {

int run(int reps) {
    set_num_threads(2);
    fmt::print("the worker starts a 2-chunk job after (µs; median, 90th percentile, max over {} jobs):\n", reps);
    for (int gap : {0, 20, 100, 300, 1000, 3000}) {
        std::vector<double> start(static_cast<std::size_t>(reps));
        for (double& s : start) {
            const Clock::time_point g0 = Clock::now();
            while (micros_since(g0) < gap) {  // the caller busy alone, as in a sequential stretch
            }
            const Clock::time_point t0 = Clock::now();
            std::atomic<double> second{0};
            parallel_for(2, 1, [&](std::size_t c0, std::size_t) {
                if (c0 == 1) second = micros_since(t0);
            });
            s = second;
        }
        std::sort(start.begin(), start.end());
        const std::size_t n = start.size();
        fmt::print("  after {:>5} µs alone: {:7.1f} {:7.1f} {:7.1f}\n", gap, start[n / 2], start[n * 9 / 10], start[n - 1]);
    }
    return cli::kSuccess;
}

}  // namespace

int main(int argc, char** argv) {
    int reps = 31;
    CLI::App app{"How long xtgrad's pool worker takes to start a job after the caller worked alone for a gap.", "pool_wake_bench"};
    app.add_option("--reps", reps, "jobs per gap")->capture_default_str()->transform(cli::count_in(1, 100000));
    app.footer(cli::cli_footer("Threads: always 2 (the caller and one worker; there is no --threads)."));
    return cli::run_main(app, argc, argv, [&] { return run(reps); });
}
