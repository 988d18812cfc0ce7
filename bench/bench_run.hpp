// One configuration timed in this process: xtgrad_bench's measurement (bench/bench.cpp is its
// command line). Internal to the benchmark.
//
// Each step is timed in phases: zero (optimizer zero_grad), fwd (forward + loss), bwd
// (backward), opt (optimizer step), and step (all of it, end to end, including freeing the
// graph). With --optimizer-in-backward the optimizer steps inside backward
// (optim::OptimizerInBackward): no opt phase, bwd includes the updates. infer is a forward in
// eval() mode without gradients. For each: median, min and max over --steps steps after
// --warmup untimed ones; GFLOP/s from the analytic count of matmul FLOPs (bench/workloads.cpp;
// backward = 2 x forward); peak RSS of the process (getrusage ru_maxrss).
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
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace xtgrad::bench {

struct BenchOptions {
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

// The result lines of `config` (winter, seed-b or seed-d) under `o`: one, or with o.alternate
// one per side (on, then off). Expects o checked (bench.cpp) and the threads applied.
std::vector<nlohmann::ordered_json> run_config(const std::string& config, const BenchOptions& o);

struct Stats {
    double median, min, max;
};
// The median (the mean of the middle two for an even count), min and max of a non-empty list
Stats stats(std::vector<double> v);

}  // namespace xtgrad::bench
