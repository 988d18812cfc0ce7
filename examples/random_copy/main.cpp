// Tutorial B's training run ("Build your own Transformer", "Training the model"): its
// Transformer at the tutorial's size trained on random tokens, printing the loss per step.
//
//   src, tgt = random ids in [1, 5000), shape (64, 100)
//   logits = model(src, tgt[:, :-1]);  loss = CE(logits, tgt[:, 1:], ignore_index = 0)
//   Adam(lr 1e-4, betas (0.9, 0.98), eps 1e-9)
//
// As the tutorials' README notes, the falling loss (≈ ln 5000 + a little at the start,
// about 0.7 lower after 10 steps) is the model memorising this one random batch, not
// learning a language: there is nothing to learn in random tokens.
#include "autograd/blas.hpp"
#include "examples/common/data_parallel.hpp"
#include "nn/parallel/distributed.hpp"
#include "nn/tutorial_b/transformer.hpp"
#include "optim/optimizer.hpp"
#include "xtgrad.hpp"

#include <CLI/CLI.hpp>

#include <chrono>
#include <cmath>

using namespace xtgrad;

int main(int argc, char** argv) {
    std::size_t batch = 64, len = 100, vocab = 5000, d_model = 512, heads = 8, layers = 6, d_ff = 2048;
    long steps = 10;
    float dropout_p = 0.1f;
    double lr = 1e-4;
    std::uint64_t seed = 0;
    int threads = 2;
    CLI::App app{"Train tutorial B's Transformer on random tokens (the tutorial's training run)."};
    app.add_option("--batch", batch, "sequences per batch")->capture_default_str();
    app.add_option("--len", len, "sequence length")->capture_default_str();
    app.add_option("--vocab", vocab, "source and target vocabulary size")->capture_default_str();
    app.add_option("--d-model", d_model)->capture_default_str();
    app.add_option("--heads", heads)->capture_default_str();
    app.add_option("--layers", layers)->capture_default_str();
    app.add_option("--d-ff", d_ff)->capture_default_str();
    app.add_option("--dropout", dropout_p)->capture_default_str();
    app.add_option("--lr", lr, "Adam learning rate (the tutorial's 1e-4)")->capture_default_str();
    app.add_option("--steps", steps, "training steps (the tutorial runs 100)")->capture_default_str();
    app.add_option("--seed", seed)->capture_default_str();
    app.add_option("--threads", threads, "OpenBLAS threads")->capture_default_str();
    CLI11_PARSE(app, argc, argv);
    const examples::DataParallel dp("random_copy");  // under mpirun: each rank trains on its share of the batch
    try {
        set_blas_threads(dp.threads(threads));
        manual_seed(seed);
        nn::tutorial_b::Transformer model(vocab, vocab, d_model, heads, layers, d_ff, len, dropout_p);
        Generator gen(seed + 1);
        const Ids src = dp.shard(randint({batch, len}, 1, static_cast<std::int64_t>(vocab), gen));
        const Ids tgt = dp.shard(randint({batch, len}, 1, static_cast<std::int64_t>(vocab), gen));
        const nn::tutorial_b::ShiftedTargets shifted = nn::tutorial_b::shift_targets(tgt);
        const Ids tgt_in = shifted.input, target = shifted.target;  // tgt[:, :-1], tgt[:, 1:] flattened
        nn::parallel::DistributedDataParallel ddp(model);
        optim::Adam opt(model.parameters(), {.lr = lr, .betas = {0.9, 0.98}, .eps = 1e-9});
        fmt::print("tutorial B Transformer: {:.1f} M parameters, batch {} x {}, vocab {}; ln {} = {:.3f}\n",
                   model.num_parameters() / 1e6, batch, len, vocab, vocab, std::log(static_cast<double>(vocab)));
        model.train();
        for (long step = 1; step <= steps; ++step) {
            const auto t0 = std::chrono::steady_clock::now();
            opt.zero_grad();
            Tensor logits = ddp.forward(src, tgt_in);
            Tensor loss = cross_entropy(reshape(logits, {-1, static_cast<long>(vocab)}), target, /*ignore_index=*/0);
            loss.backward();
            opt.step();
            const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            fmt::print("Epoch: {}, Loss: {:.4f}   ({:.2f} s)\n", step, dp.mean(loss.item()), sec);
            std::fflush(stdout);
        }
        return 0;
    } catch (const std::exception& e) {
        return dp.fail(e);
    }
}
