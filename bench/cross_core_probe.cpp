// cross_core_probe: how long a thread takes to read an activation-sized buffer that it wrote
// itself against one the other pool thread just wrote. A row kernel (bias, relu, dropout, layer
// norm) runs on rows a split product wrote just before; where the product split C by columns, or
// a thread's share moved, half its rows sit in the other core's cache (docs/performance.md, "Two
// threads on the Zen 5"). Each case takes xtgrad's pool at 2 threads, as the kernels do.
//
//   build/bench/cross_core_probe [--reps N] [--floats N]
#include <xtgrad/threads/parallel.hpp>
#include "bench/timing.hpp"
#include "examples/common/cli.hpp"

#include "examples/common/cli11.hpp"
#include <fmt/core.h>

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <thread>
#include <vector>

using namespace xtgrad;
using bench::micros_since;
using Clock = std::chrono::steady_clock;

namespace {

volatile float sink = 0;  // keeps the sums

void write_range(float* x, std::size_t i0, std::size_t i1, int rep) {
    for (std::size_t i = i0; i < i1; ++i) x[i] = static_cast<float>((i + static_cast<std::size_t>(rep)) & 7);
}

// The range's sum in 16 lanes (vectorized without reassociating a single accumulator).
void read_range(const float* x, std::size_t i0, std::size_t i1) {
    float acc[16] = {};
    std::size_t i = i0;
    for (; i + 16 <= i1; i += 16)
        for (std::size_t j = 0; j < 16; ++j) acc[j] += x[i + j];
    for (; i < i1; ++i) acc[0] += x[i];
    float s = 0;
    for (float a : acc) s += a;
    sink = sink + s;
}

// Runs writer on 2 chunks, chunk 1 on the worker (chunk 0 waits, 1 s at most, until it started:
// else the caller, done with its own, would take it), then times reader on 2 chunks: the read's
// µs, or a negative value where the worker did not run its chunk of the write.
template <class Write, class Read>
double one_case(const Write& writer, const Read& reader) {
    const pthread_t caller = pthread_self();
    std::atomic<bool> second_started{false}, worker_wrote{false};
    parallel_for(2, 1, [&](std::size_t c, std::size_t) {
        if (c == 1) {
            worker_wrote = !pthread_equal(pthread_self(), caller);
            second_started = true;
        } else {
            const Clock::time_point t0 = Clock::now();
            while (!second_started && micros_since(t0) < 1e6) std::this_thread::yield();  // one CPU: let it run
        }
        writer(c);
    });
    const Clock::time_point t0 = Clock::now();
    parallel_for(2, 1, [&](std::size_t c, std::size_t) { reader(c); });
    const double us = micros_since(t0);
    return worker_wrote ? us : -1;
}

int run(int reps, std::size_t n) {
    set_num_threads(2);
    std::vector<float> buffer(n);
    float* x = buffer.data();
    const std::size_t half = n / 2;
    struct Case {
        const char* what;
        std::vector<double> us;
    } cases[] = {{"this thread wrote it all, reads it all", {}},
                 {"the other thread wrote it all, this one reads it all", {}},
                 {"each wrote half, each reads the half it wrote", {}},
                 {"each wrote half, each reads the other's half", {}}};
    for (int rep = 0; rep < reps; ++rep) {
        const double t[4] = {
            one_case([&](std::size_t c) { if (c == 0) write_range(x, 0, n, rep); },
                     [&](std::size_t c) { if (c == 0) read_range(x, 0, n); }),
            one_case([&](std::size_t c) { if (c == 1) write_range(x, 0, n, rep); },
                     [&](std::size_t c) { if (c == 0) read_range(x, 0, n); }),
            one_case([&](std::size_t c) { write_range(x, c * half, c == 0 ? half : n, rep); },
                     [&](std::size_t c) { read_range(x, c * half, c == 0 ? half : n); }),
            one_case([&](std::size_t c) { write_range(x, c * half, c == 0 ? half : n, rep); },
                     [&](std::size_t c) { read_range(x, c == 0 ? half : 0, c == 0 ? n : half); })};
        for (int k = 0; k < 4; ++k)
            if (t[k] >= 0) cases[k].us.push_back(t[k]);
    }
    fmt::print("{} floats ({:.2f} MB), 2 threads, median µs over {} reps:\n", n, static_cast<double>(n) * 4 / 1e6, reps);
    for (const Case& c : cases) fmt::print("  {:8.1f}  {} ({} reps)\n", bench::median(c.us), c.what, c.us.size());
    return cli::kSuccess;
}

}  // namespace

int main(int argc, char** argv) {
    int reps = 200;
    int floats = 640 * 512;  // seed-d's decoder activations (640, 512)
    CLI::App app{"How long a thread reads a buffer it wrote against one the other pool thread just wrote.",
                 "cross_core_probe"};
    app.add_option("--reps", reps, "repetitions of each case")->capture_default_str()->transform(cli::count_in(1, 100000));
    app.add_option("--floats", floats, "the buffer's length")
        ->capture_default_str()
        ->transform(cli::count_in(32, 1 << 26));  // up to 256 MB
    app.footer(cli::cli_footer("Threads: always 2 (the caller and one worker; there is no --threads)."));
    return cli::run_main(app, argc, argv, [&] { return run(reps, static_cast<std::size_t>(floats)); });
}
