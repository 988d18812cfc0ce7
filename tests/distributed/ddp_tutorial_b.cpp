// Tutorial B's training run on random tokens (examples/random_copy at a small size), data
// parallel when launched by mpirun: the program run_mpi_test.sh runs alone and as 2 processes.
//
//   ddp_tutorial_b --batch 8 --steps 5 --out w.safetensors          # one process: the reference
//   mpirun -np 2 ddp_tutorial_b --batch 8 --steps 5 --compare w.safetensors
//
// Rank 0 prints "step K loss L" per step (the global loss) and, with --compare, the largest
// difference of the final parameters from the reference file (the attention key biases apart:
// see below). --micro-batches M splits each
// rank's share into M backward passes, all but the last under no_sync(). --exit-rank/--hang-rank
// make one rank die (std::_Exit) or stop (sleep) at --fault-step: the fault tests; --freeze-rank
// freezes a parameter on one rank only, which DistributedDataParallel must refuse on every rank;
// --misuse makes the other mistakes it must refuse on every rank alike (see its help).
#include "examples/common/data_parallel.hpp"
#include <xtgrad/nn/checkpoint.hpp>
#include <xtgrad/nn/layers.hpp>
#include <xtgrad/nn/parallel/distributed.hpp>
#include <xtgrad/nn/parallel/distributed_sampler.hpp>
#include <xtgrad/io/safetensors.hpp>
#include <xtgrad/nn/tutorial_b/transformer.hpp>
#include <xtgrad/optim/optimizer.hpp>
#include <xtgrad/xtgrad.hpp>

#include "examples/common/cli11.hpp"
#include "tests/distributed/two_layers.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

using namespace xtgrad;

namespace {
using test::TwoLayers;

// --misuse unused: rank `at` leaves fc2 out of its forward (find_unused_parameters false). It used
// to refuse alone, and the other ranks waited for its buckets until the timeout.
void unused_on_one_rank(const examples::DataParallel& dp, int at) {
    TwoLayers model;
    model.skip_fc2 = dp.rank() == at;
    nn::parallel::DistributedDataParallel ddp(model);
    Generator gen(2);
    sum(ddp.forward(Tensor(randn({5, 3}, gen)))).backward();
}
}  // namespace

int main(int argc, char** argv) {
    std::size_t batch = 8, len = 16, vocab = 200;
    long steps = 5, micro_batches = 1, fault_step = 2;
    int exit_rank = -1, hang_rank = -1;
    std::string out, compare;
    CLI::App app{"Tutorial B's random-token run, single-process or data-parallel under mpirun."};
    app.add_option("--batch", batch, "global batch")->capture_default_str();
    app.add_option("--steps", steps)->capture_default_str();
    app.add_option("--micro-batches", micro_batches, "backward passes per step per rank (no_sync on all but the last)")
        ->capture_default_str();
    app.add_option("--out", out, "rank 0 saves the final parameters here");
    app.add_option("--compare", compare, "prints the largest difference of the final parameters from this file");
    app.add_option("--exit-rank", exit_rank, "this rank exits (status 3) at --fault-step");
    app.add_option("--hang-rank", hang_rank, "this rank stops (sleeps) at --fault-step");
    app.add_option("--fault-step", fault_step)->capture_default_str();
    int freeze_rank = -1;
    app.add_option("--freeze-rank", freeze_rank, "this rank alone freezes the first parameter before wrapping (a misuse)");
    std::string misuse;
    int misuse_rank = 1;
    app.add_option("--misuse", misuse, "a misuse every rank must refuse alike: bucket-cap (--misuse-rank builds with "
                                       "other bucket caps), bad-cap (a negative one there), weight-one (every rank "
                                       "weighs its gradient 1), finalized (the group destroyed before wrapping), "
                                       "reinit (init_process_group again after that), unused (a parameter unused there)")
        ->check(CLI::IsMember({"bucket-cap", "bad-cap", "weight-one", "finalized", "reinit", "unused"}));
    app.add_option("--misuse-rank", misuse_rank)->capture_default_str();
    CLI11_PARSE(app, argc, argv);
    const examples::DataParallel dp("ddp_tutorial_b");
    try {
        if (misuse == "unused") {
            unused_on_one_rank(dp, misuse_rank);
            return 0;
        }
        manual_seed(0);
        nn::tutorial_b::Transformer model(vocab, vocab, 64, 4, 2, 128, len, /*dropout*/ 0.f);
        Generator gen(1);
        const Ids src = dp.shard(randint({batch, len}, 1, static_cast<std::int64_t>(vocab), gen));
        const Ids tgt = dp.shard(randint({batch, len}, 1, static_cast<std::int64_t>(vocab), gen));
        if (dp.rank() == freeze_rank) model.parameters().front().requires_grad_(false);
        nn::parallel::DDPOptions options;
        if (dp.rank() == misuse_rank && misuse == "bucket-cap") options.bucket_cap_mb = options.first_bucket_cap_mb = 1e-3;
        if (dp.rank() == misuse_rank && misuse == "bad-cap") options.bucket_cap_mb = -1;
        if (misuse == "finalized" || misuse == "reinit") distributed::destroy_process_group();
        if (misuse == "reinit") distributed::init_process_group();
        nn::parallel::DistributedDataParallel ddp(model, options);
        optim::Adam opt(model.parameters(), optim::AdamOptions(1e-4).betas({0.9, 0.98}).eps(1e-9));
        // Uneven shares (a batch N does not divide): each process's gradient and loss weigh by its rows.
        const std::size_t rows = src.shape()[0], per = rows / static_cast<std::size_t>(micro_batches);
        const double share = dp.share(rows);
        ddp.set_gradient_weight(misuse == "weight-one" ? 1.0 : share);
        if (per * static_cast<std::size_t>(micro_batches) != rows)
            fail("ddp_tutorial_b: {} rows per rank do not split into {} micro-batches", rows, micro_batches);
        for (long step = 1; step <= steps; ++step) {
            if (step == fault_step && dp.rank() == exit_rank) std::_Exit(3);
            while (step == fault_step && dp.rank() == hang_rank) std::this_thread::sleep_for(std::chrono::seconds(1));
            opt.zero_grad();
            double loss_sum = 0;
            const auto pass = [&](long m) {  // forward and backward of micro-batch m of this rank's rows
                std::vector<std::size_t> mine(per);
                for (std::size_t k = 0; k < per; ++k) mine[k] = static_cast<std::size_t>(m) * per + k;
                const auto shifted = nn::tutorial_b::shift_targets(nn::parallel::select_rows(tgt, mine));
                Tensor logits = ddp.forward(nn::parallel::select_rows(src, mine), shifted.input);
                Tensor loss = cross_entropy(reshape(logits, {-1, static_cast<long>(vocab)}), shifted.target, 0);
                loss = loss * (1.f / static_cast<float>(micro_batches));
                loss.backward();
                loss_sum += loss.item();
            };
            for (long m = 0; m + 1 < micro_batches; ++m) {
                const auto no_sync = ddp.no_sync();  // gradients only add up in .grad
                pass(m);
            }
            pass(micro_batches - 1);  // this backward averages the sum over the processes
            opt.step();
            fmt::print("step {} loss {:.6f}\n", step, dp.mean(loss_sum, share));
        }
        if (!out.empty()) dp.save(model, out);
        if (!compare.empty()) {
            const SafetensorsFile ref = load_safetensors(compare);
            // The attention key biases are left out: their exact gradient is zero (softmax ignores a
            // shift shared by a row's scores, and q . b_k is one), so what they get is rounding noise,
            // which Adam scales up to steps of ~lr in either direction, in one process as in two.
            float diff = 0, key_bias_diff = 0;
            std::size_t matched = 0;
            for (const auto& [name, a] : ref.tensors)
                for (const auto& [mine, t] : model.state_dict())
                    if (mine == name && a.size() == t.numel()) {
                        ++matched;
                        float& d = name.ends_with("W_k.bias") ? key_bias_diff : diff;
                        for (std::size_t k = 0; k < a.size(); ++k) d = std::max(d, std::abs(a.data()[k] - t.ptr()[k]));
                    }
            if (matched != model.state_dict().size())
                fail("ddp_tutorial_b: '{}' matches {} of the model's {} tensors", compare, matched, model.state_dict().size());
            fmt::print("W_k.bias (zero gradient up to rounding): max |parameter - reference| = {:.3g}\n", key_bias_diff);
            fmt::print("max |parameter - reference| = {:.3g}\n", diff);
        }
        return 0;
    } catch (const std::exception& e) {
        return dp.fail(e);
    }
}
