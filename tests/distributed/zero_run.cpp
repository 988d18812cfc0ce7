// A data-parallel training run with plain Adam or ZeroRedundancyOptimizer, saved and resumed
// through the run checkpoint: the program tests/distributed/run_zero_test.sh runs under
// mpirun -np 1, 2 and 3.
//
//   zero_run --model c --optimizer zero --steps 6                       # Winter Games (tutorial C)
//   zero_run --model b --optimizer zero --steps 3 --save FILE           # tutorial B, random tokens
//   zero_run --model b --optimizer adam --steps 6 --resume FILE         # continues step 4..6
//
// Rank 0 prints "parameters P" (trained), "step K loss L" (the global loss, 9 decimals), then one
// line per rank with the bytes of optimizer state it holds and its peak RSS
// ("memory rank R state_bytes B peak_rss_kib K").
// --kill-rank R --kill-step K: rank R kills itself (SIGKILL) in the middle of step K, after its
// forward, before its gradients are shared: the fault test.
// --no-ddp: each rank steps on its own gradients (no DistributedDataParallel); --differ-rank R with
// --differ shape, frozen, lr or consolidate-to: rank R builds another vocabulary, freezes the last
// parameter, builds Adam with another lr, consolidates the checkpoint on another rank, or its
// optimizer factory returns nothing;
// --fresh-if-refused: a resume the optimizer refuses is printed ("rank R refused: ...") and the run
// starts from step 1 instead; --agreed-errors: an Error expected on every rank alike is printed by
// each ("zero_run rank R of N: ..."), which then exits with status 3 after a barrier, instead of
// ending the job at the first one (MPI_Abort would cut the others' lines). The cross-rank checks' tests.
#include "examples/common/cli.hpp"
#include "examples/common/data_parallel.hpp"
#include <xtgrad/nn/checkpoint.hpp>
#include <xtgrad/nn/parallel/distributed.hpp>
#include <xtgrad/nn/parallel/distributed_sampler.hpp>
#include <xtgrad/nn/parallel/process_group.hpp>
#include <xtgrad/nn/parallel/zero_optimizer.hpp>
#include <xtgrad/nn/tutorial_b/transformer.hpp>
#include <xtgrad/nn/tutorial_c/tutorial_c.hpp>
#include <xtgrad/optim/optimizer.hpp>
#include <xtgrad/xtgrad.hpp>

#include "examples/common/cli11.hpp"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <memory>
#include <type_traits>
#include <sys/resource.h>

using namespace xtgrad;
namespace tc = xtgrad::nn::tutorial_c;

namespace {

long peak_rss_kib() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss;  // KiB on Linux
}

std::size_t adam_state_bytes(const optim::Optimizer& opt) {
    std::size_t bytes = 0;
    for (const Tensor& p : opt.params())
        for (const char* key : {"exp_avg", "exp_avg_sq"})
            if (const Array* a = opt.state(p, key)) bytes += a->size() * sizeof(float);
    return bytes;
}

// The module without DistributedDataParallel, with the wrapper's forward and module() (--no-ddp).
template <class M>
struct Local {
    M& m;
    template <class... Args>
    auto forward(Args&&... args) { return m.forward(std::forward<Args>(args)...); }
    M& module() { return m; }
};

}  // namespace

int main(int argc, char** argv) {
    std::string model_name = "b", optimizer = "zero", save, resume;
    std::size_t batch = 6, len = 12, vocab = 120, d_model = 32;
    long steps = 6, save_at = -1, kill_step = -1;
    double bucket_mb = 25;
    bool timeline = false, no_consolidate = false, no_ddp = false, fresh_if_refused = false, agreed_errors = false;
    int kill_rank = -1, differ_rank = -1;
    std::string differ = "shape";
    CLI::App app{"A data-parallel run with Adam or ZeroRedundancyOptimizer, saved and resumed."};
    app.add_option("--model", model_name, "b: tutorial B on random tokens; c: the Winter Games (tutorial C)")
        ->check(CLI::IsMember({"b", "c"}));
    app.add_option("--optimizer", optimizer, "adam (every rank keeps all of Adam's state) or zero (sharded)")
        ->check(CLI::IsMember({"adam", "zero"}));
    app.add_option("--batch", batch, "global batch (model b)")->capture_default_str();
    app.add_option("--vocab", vocab, "vocabulary (model b)")->capture_default_str();
    app.add_option("--d-model", d_model)->capture_default_str();
    app.add_option("--steps", steps, "train up to this step")->capture_default_str();
    app.add_option("--save", save, "write the run checkpoint here after step --save-at (default: the last)");
    app.add_option("--save-at", save_at);
    app.add_option("--resume", resume, "continue the run checkpoint FILE");
    app.add_option("--kill-rank", kill_rank, "this rank kills itself (SIGKILL) in step --kill-step");
    app.add_option("--kill-step", kill_step);
    app.add_option("--bucket-mb", bucket_mb, "DDP's bucket cap (the first bucket: the smaller of it and 1 MB)")
        ->check(xtgrad::cli::positive_finite())->capture_default_str();
    app.add_flag("--timeline", timeline, "print the last step's allreduces bucket by bucket, the share backward hid, "
                                          "and one blocking allreduce of every gradient");
    app.add_flag("--no-consolidate", no_consolidate, "save without consolidate_state_dict first (a misuse: an Error)");
    app.add_flag("--no-ddp", no_ddp, "no DistributedDataParallel: each rank's own gradients");
    app.add_option("--differ-rank", differ_rank, "this rank builds another model (--differ)");
    app.add_option("--differ", differ, "shape: one more word in the vocabulary; frozen: the last parameter frozen; lr: "
                                       "ten times Adam's lr; consolidate-to: consolidates on rank 1 instead of 0; factory: its "
                                       "optimizer factory returns nothing")
        ->check(CLI::IsMember({"shape", "frozen", "lr", "consolidate-to", "factory"}));
    app.add_flag("--fresh-if-refused", fresh_if_refused, "a refused --resume starts the run afresh");
    app.add_flag("--agreed-errors", agreed_errors, "an Error is every rank's: each prints it, exit 3 after a barrier");
    CLI11_PARSE(app, argc, argv);
    const examples::DataParallel dp("zero_run");
    try {
        manual_seed(0);
        std::unique_ptr<nn::Module> model;
        std::function<Tensor()> loss_of_step;
        Generator gen(1);
        double share = 1.0 / dp.world();
        Ids src, tgt;
        tc::Batch winter;
        Ids winter_target;
        const bool differs = dp.rank() == differ_rank;
        if (model_name == "b") {
            const std::size_t words = differs && differ == "shape" ? vocab + 1 : vocab;
            auto m = std::make_unique<nn::tutorial_b::Transformer>(words, vocab, d_model, 4, 2, 2 * d_model, len, 0.f);
            src = dp.shard(randint({batch, len}, 1, static_cast<std::int64_t>(vocab), gen));
            tgt = dp.shard(randint({batch, len}, 1, static_cast<std::int64_t>(vocab), gen));
            share = dp.share(src.shape()[0]);
            model = std::move(m);
        } else {
            // The Winter Games sentence pair; every rank computes the same one-row batch.
            model = std::make_unique<tc::Transformer>(tc::Config()
                                                          .src_vocab_size(tc::input_vocab(tc::Vocabularies::fixed).size())
                                                          .tgt_vocab_size(tc::output_vocab(tc::Vocabularies::fixed).size())
                                                          .d_model(d_model).d_ff(2 * d_model).d_k(8).d_v(8)
                                                          .n_layers(2).n_heads(4));
            winter = tc::make_batch(tc::sentences(), tc::input_vocab(tc::Vocabularies::fixed),
                                    tc::output_vocab(tc::Vocabularies::fixed));
            winter_target = winter.target_batch;
            winter_target.reshape({winter_target.size()});
        }
        if (differs && differ == "frozen") model->parameters().back().requires_grad_(false);
        std::unique_ptr<optim::Optimizer> opt;
        const optim::AdamOptions adam =
            optim::AdamOptions(differs && differ == "lr" ? 1e-2 : 1e-3).betas({0.9, 0.98}).eps(1e-9);
        nn::parallel::ZeroRedundancyOptimizer* zero = nullptr;
        if (optimizer == "zero") {
            const nn::parallel::ZeroRedundancyOptimizer::Factory factory = [&](std::vector<Tensor> p) {
                return differs && differ == "factory" ? nullptr : std::make_unique<optim::Adam>(std::move(p), adam);
            };
            auto z = std::make_unique<nn::parallel::ZeroRedundancyOptimizer>(model->parameters(), factory);
            zero = z.get();
            opt = std::move(z);
        } else {
            opt = std::make_unique<optim::Adam>(model->parameters(), adam);
        }
        std::size_t trained = 0;
        for (const Tensor& p : opt->params()) trained += p.numel();
        fmt::print("parameters {}\n", trained);  // what the gradient allreduce moves, in float32s
        nn::RunState run{.optimizer = opt.get(), .generators = {{"default", &default_generator()}}};
        if (!resume.empty()) {  // every rank reads the file
            try {
                nn::load_run(resume, *model, run);
            } catch (const Error& e) {
                if (!fresh_if_refused) throw;
                fmt::print(stderr, "rank {} refused: {}\n", dp.rank(), e.what());  // stdout is rank 0's alone
            }
        }
        // Wrapped after the resume: the construction broadcasts rank 0's (loaded) parameters.
        const auto forward_loss = [&](auto& ddp) -> Tensor {
            if constexpr (std::is_same_v<std::decay_t<decltype(ddp.module())>, tc::Transformer>) {
                return cross_entropy(ddp.forward(winter.enc_inputs, winter.dec_inputs).logits, winter_target);
            } else {
                const auto shifted = nn::tutorial_b::shift_targets(tgt);
                Tensor logits = ddp.forward(src, shifted.input);
                return cross_entropy(reshape(logits, {-1, static_cast<long>(vocab)}), shifted.target, 0);
            }
        };
        const auto steps_with = [&](auto& ddp, auto& typed) {
            for (long step = run.epoch + 1; step <= steps; ++step) {
                opt->zero_grad();
                Tensor loss = forward_loss(ddp);
                if (step == kill_step && dp.rank() == kill_rank) std::raise(SIGKILL);  // mid-step, before the allreduce
                loss.backward();
                opt->step();
                run.epoch = step;
                fmt::print("step {} loss {:.9f}\n", step, dp.mean(loss.item(), share));
                if (!save.empty() && step == (save_at > 0 ? save_at : steps)) {
                    if (zero && !no_consolidate)  // every rank: a collective
                        zero->consolidate_state_dict(differs && differ == "consolidate-to" ? 1 : 0);
                    if (dp.rank() == 0) nn::save_run(save, typed, run);
                    distributed::barrier("zero_run: checkpoint written");
                }
            }
        };
        const auto train = [&](auto& typed) {
            if (no_ddp) {
                Local<std::decay_t<decltype(typed)>> local{typed};
                return steps_with(local, typed);
            }
            nn::parallel::DistributedDataParallel ddp(
                typed, {.bucket_cap_mb = bucket_mb, .first_bucket_cap_mb = std::min(1.0, bucket_mb)});
            ddp.set_gradient_weight(share);
            steps_with(ddp, typed);
            if (!timeline) return;
            // rank 0's view of its last step (times in seconds since the step's first gradient hook)
            const nn::parallel::ReducerStats& st = ddp.stats();
            for (std::size_t k = 0; k < st.last_step.size(); ++k)
                fmt::print("bucket {} bytes {} launch {:.6f} finish {:.6f} wait {:.6f}\n", k, st.last_step[k].bytes,
                           st.last_step[k].launch, st.last_step[k].finish, st.last_step[k].wait);
            fmt::print("backward_end {:.6f} hidden {:.4f}\n", st.last_backward_end, nn::parallel::hidden_fraction(st));
            std::size_t n = 0;
            for (const auto& b : st.last_step) n += b.bytes / sizeof(float);
            std::vector<float> all(n, 1.f);
            double best = 1e30;
            for (int rep = 0; rep < 3; ++rep) {  // the fastest of 3: the link, not a neighbour's load
                distributed::barrier("zero_run: before the blocking allreduce");
                const auto t0 = std::chrono::steady_clock::now();
                distributed::all_reduce(all.data(), all.size(), "zero_run: blocking allreduce");
                best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
            }
            fmt::print("blocking_allreduce bytes {} seconds {:.6f}\n", n * sizeof(float), best);
        };
        if (model_name == "b") train(static_cast<nn::tutorial_b::Transformer&>(*model));
        else train(static_cast<tc::Transformer&>(*model));
        // Per rank: the optimizer state it holds and its peak RSS, gathered to rank 0 by a sum of slots.
        std::vector<double> mem(2 * static_cast<std::size_t>(dp.world()), 0.0);
        const std::size_t me = static_cast<std::size_t>(dp.rank());
        mem[2 * me] = static_cast<double>(zero ? zero->local_state_bytes() : adam_state_bytes(*opt));
        mem[2 * me + 1] = static_cast<double>(peak_rss_kib());
        distributed::all_reduce(mem.data(), mem.size(), "zero_run: memory report");
        for (int r = 0; r < dp.world(); ++r)
            fmt::print("memory rank {} state_bytes {:.0f} peak_rss_kib {:.0f}\n", r, mem[2 * static_cast<std::size_t>(r)],
                       mem[2 * static_cast<std::size_t>(r) + 1]);
        return 0;
    } catch (const std::exception& e) {
        if (!agreed_errors) return dp.fail(e);
        fmt::print(stderr, "zero_run rank {} of {}: {}\n", dp.rank(), dp.world(), e.what());
        std::fflush(stderr);
        try {
            distributed::barrier("zero_run: every rank's error printed");
        } catch (const std::exception&) {
            return dp.fail(e);  // the other ranks did not fail alike
        }
        return 3;
    }
}
