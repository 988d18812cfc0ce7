// The tutorials' models at the benchmark's shapes (xtgrad_bench's --config), each with its loss,
// its optimizer and the analytic matmul FLOPs of one forward pass; bench_run.cpp times them.
//
//   winter  tutorial C (Winter Games) at its size: 44.2 M parameters, batch 1, 7 + 7 tokens,
//           cross-entropy, Adam(lr 1e-3)
//   seed-b  tutorial B at its size: 51.8 M parameters (vocab 5000), src (B, 100) and
//           tgt[:, :-1] (B, 99), dropout 0.1, CE(ignore_index 0), Adam(1e-4, (0.9, 0.98), 1e-9)
//   seed-d  tutorial D: its Transformer at the defaults (d_model 512, nhead 8, 6 + 6 layers,
//           d_ff 2048, dropout 0.1), src (10, 32, 512), tgt (20, 32, 512), forward and backward
//           of a fixed random output gradient (Adam when asked)
#pragma once

#include <xtgrad/nn/module.hpp>
#include <xtgrad/optim/optimizer.hpp>
#include <xtgrad/autograd/tensor.hpp>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

namespace xtgrad::bench {

struct Workload {
    std::string what;
    std::size_t params = 0;
    double fwd_flops = 0;                            // matmul FLOPs of one forward pass
    std::shared_ptr<nn::Module> model;
    std::unique_ptr<optim::Optimizer> opt;           // null: no optimizer step
    std::function<Tensor()> forward;                 // the loss (or the output)
    std::function<void(const Tensor&)> backward;
};

Workload winter();
Workload seed_b(std::size_t batch);
// heads and encoder_layers: torch's defaults 8 and 6 (the tutorial's docstring example: 16, 12)
Workload seed_d(std::size_t heads, std::size_t encoder_layers, bool adam);

}  // namespace xtgrad::bench
