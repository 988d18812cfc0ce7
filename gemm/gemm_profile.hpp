// GEMM profile: how long each matrix-product shape took, summed over a run, to see which of a
// model's products run far from the machine's peak (docs/performance.md, "Where the time goes").
//
//   XTGRAD_GEMM_PROFILE=1 build/bench/xtgrad_bench --config seed-d --threads 2   # table on stderr at exit
//   set_gemm_profiling(true); train(); fmt::print("{}", gemm_profile_report());    # from code
//
// Each call of gemm_ld (gemm/blas.hpp: every product of xtgrad's ops, whether it goes to the
// backend, split over the pool or not, or to the skinny kernels) is timed on the thread that makes it. Batched attention products run one slice per call on each
// pool thread, so their times add up the threads' times: compare GFLOP/s against one core's peak.
// Off by default, when it costs each product one relaxed atomic load.
#pragma once

#include <string>
#include <vector>

namespace xtgrad {

struct GemmShapeStats {
    bool trans_a = false, trans_b = false;
    int M = 0, N = 0, K = 0;
    long calls = 0;
    double ms = 0;  // summed over the calls
    double gflops() const { return ms > 0 ? 2.0 * M * N * K * static_cast<double>(calls) / ms / 1e6 : 0; }
};

// On or off for the whole process; XTGRAD_GEMM_PROFILE=1 turns it on at start and prints the
// report to stderr when the process exits (0 or unset: off; any other value is an Error at the
// first product, or from check_environment, unless set_gemm_profiling has decided first).
void set_gemm_profiling(bool on);
bool gemm_profiling();
void reset_gemm_profile();
// The shapes seen so far, longest total time first.
std::vector<GemmShapeStats> gemm_profile();
// One line per shape: layout, M x N x K, calls, total ms, GFLOP/s, share of all GEMM time.
std::string gemm_profile_report();

namespace detail {
// Adds one timed call (blas.cpp calls it while profiling is on).
void record_gemm(bool trans_a, bool trans_b, int M, int N, int K, double ms);
}  // namespace detail

}  // namespace xtgrad
