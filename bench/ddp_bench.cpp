// ddp_bench: where a data-parallel training step of tutorial B (the benchmark's seed-b) spends
// its time, alone or under mpirun (docs/distributed.md, "Measured on this machine").
//
//   build/bench/ddp_bench --batch 16 --threads 2                      # 1 process x 2 threads
//   mpirun -np 2 --bind-to core build/bench/ddp_bench --batch 16 --threads 1   # 2 x 1, same global batch
//
// --batch is the global batch; each of N processes takes batch / N rows. Rank 0 prints the
// medians over --steps steps (after --warmup): the step, forward, backward's compute, the
// gradient hooks (copy into buckets, launch allreduces), the wait for the last allreduces, and
// Adam; then one blocking allreduce of all the gradients alone (its cost without overlap).
// One process without DDP is the plain step (--ddp forces the wrapper on).
#include <xtgrad/gemm/blas.hpp>
#include "bench/timing.hpp"
#include "examples/common/cli.hpp"
#include "examples/common/data_parallel.hpp"
#include <xtgrad/nn/parallel/distributed.hpp>
#include <xtgrad/nn/parallel/process_group.hpp>
#include <xtgrad/nn/tutorial_b/transformer.hpp>
#include <xtgrad/optim/optimizer.hpp>
#include <xtgrad/xtgrad.hpp>

#include "examples/common/cli11.hpp"

#include <algorithm>
#include <chrono>
#include <optional>

using namespace xtgrad;
using bench::median;

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

}  // namespace

int main(int argc, char** argv) {
    std::size_t batch = 16;
    int steps = 5, warmup = 1, threads = 1;
    bool force_ddp = false;
    CLI::App app{"Time tutorial B's training step, data-parallel under mpirun (docs/distributed.md).", "ddp_bench"};
    app.add_option("--batch", batch, "global batch (each of N processes takes batch / N rows)")
        ->capture_default_str()
        ->transform(cli::count_in(1, 1 << 16));
    app.add_option("--steps", steps, "timed steps")->capture_default_str()->transform(cli::count_in(1, 1 << 20));
    app.add_option("--warmup", warmup, "untimed steps first")->capture_default_str()->transform(cli::count_in(0, 1 << 20));
    cli::add_threads_option(app, threads);  // per process
    app.add_flag("--ddp", force_ddp, "wrap in DistributedDataParallel even in one process");
    return cli::run_main(app, argc, argv, [&] {
      const examples::DataParallel dp("ddp_bench");
      try {
        cli::apply_threads(threads);
        const std::size_t vocab = 5000, len = 100;
        manual_seed(0);
        nn::tutorial_b::Transformer model(vocab, vocab, 512, 8, 6, 2048, len, 0.1f);
        Generator gen(1);
        const Ids src = dp.shard(randint({batch, len}, 1, static_cast<std::int64_t>(vocab), gen));
        const auto shifted = nn::tutorial_b::shift_targets(dp.shard(randint({batch, len}, 1, static_cast<std::int64_t>(vocab), gen)));
        std::optional<nn::parallel::DistributedDataParallel<nn::tutorial_b::Transformer>> ddp;
        if (dp.active() || force_ddp) ddp.emplace(model);
        optim::Adam opt(model.parameters(), optim::AdamOptions(1e-4).betas({0.9, 0.98}).eps(1e-9));
        model.train();
        std::vector<double> step_ms, fwd_ms, bwd_ms, hook_ms, wait_ms, opt_ms;
        for (int s = 0; s < warmup + steps; ++s) {
            const nn::parallel::ReducerStats before = ddp ? ddp->stats() : nn::parallel::ReducerStats{};
            distributed::barrier("the step barrier");  // the ranks start each step together
            const auto t0 = Clock::now();
            opt.zero_grad();
            Tensor logits = ddp ? ddp->forward(src, shifted.input) : model.forward(src, shifted.input);
            Tensor loss = cross_entropy(reshape(logits, {-1, static_cast<long>(vocab)}), shifted.target, 0);
            const double fwd = ms_since(t0);
            const auto t1 = Clock::now();
            loss.backward();
            const double bwd = ms_since(t1);
            const auto t2 = Clock::now();
            opt.step();
            const double step = ms_since(t0), adam = ms_since(t2);
            if (s < warmup) continue;
            const nn::parallel::ReducerStats after = ddp ? ddp->stats() : nn::parallel::ReducerStats{};
            const double hooks = 1e3 * (after.hook_seconds - before.hook_seconds);
            const double wait = 1e3 * (after.wait_seconds - before.wait_seconds);
            step_ms.push_back(step);
            fwd_ms.push_back(fwd);
            bwd_ms.push_back(bwd - hooks - wait);
            hook_ms.push_back(hooks);
            wait_ms.push_back(wait);
            opt_ms.push_back(adam);
        }
        // All the gradients in one blocking allreduce, nothing to overlap with.
        std::vector<float> grads(model.num_parameters(), 1.f);
        const auto t3 = Clock::now();
        distributed::all_reduce(grads.data(), grads.size(), "the standalone allreduce");
        const double allreduce = ms_since(t3);
        fmt::print("tutorial B, global batch {} ({} per process), {} process(es) x {} thread(s), {} buckets, "
                   "{:.1f} MB of gradients\n", batch, src.shape()[0], dp.world(), threads,
                   ddp ? ddp->buckets().size() : 0, model.num_parameters() * 4 / 1e6);
        fmt::print("median ms: step {:.0f} = forward {:.0f} + backward compute {:.0f} + hooks {:.0f} + wait {:.0f} + "
                   "adam {:.0f}; standalone allreduce {:.0f}\n", median(step_ms), median(fwd_ms), median(bwd_ms),
                   median(hook_ms), median(wait_ms), median(opt_ms), allreduce);
        return cli::kSuccess;
      } catch (const std::exception& e) {
        if (dp.active()) dp.fail(e);  // ends the whole job (MPI_Abort): the other ranks never wait
        throw;
      }
    });
}
