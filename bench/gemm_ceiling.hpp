// The GEMM ceiling (docs/performance.md, "The machine's ceiling"): the best rate the process's GEMM backend
// reaches on the benchmark's products, each run hot (the same operands again), the best of a few
// runs. bench/ceiling_bench prints it once per run; xtgrad_bench --paired-ceiling measures it
// again before each timed step, so that a step's "× the ceiling" is read against the rate the
// host gives at that moment (this project's guests moved a product's rate 1.5x within seconds).
#pragma once

#include <xtgrad/gemm/dtype.hpp>

#include <vector>

namespace xtgrad::bench {

struct CeilingShape {
    const char* what;
    int M, N, K;
    bool trans_b;  // x·Wᵀ, W stored (N, K), as a Linear multiplies
};

// The benchmark's big products (seed-b at batch 64: 6400 rows), a square one, seed-d's 640 rows
// and one attention slice: the shapes whose best rate is the ceiling.
const std::vector<CeilingShape>& ceiling_shapes();

// GFLOP/s of C = op(A)·op(B) at `s`, operands rounded to `operands` (fp32 accumulation either
// way), on the threads xtgrad is set to: the best of `reps` runs after one untimed.
double best_gemm_rate(const CeilingShape& s, int reps, DType operands);

// The ceiling now: the best of best_gemm_rate over ceiling_shapes(), fp32. Its operands are
// allocated for the call and freed after it.
double gemm_ceiling_now(int reps);

}  // namespace xtgrad::bench
