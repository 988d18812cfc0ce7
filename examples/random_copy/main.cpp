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
//
// After the run it draws the decoder's self-attention of one layer and head (--map-layer,
// --map-head) for the first sequence as OUT/dec_self_attn_layer{L}_head{H}.svg: the later
// positions, which the causal mask hides, hatched.
//
// Like winter_games it saves the run (OUT/random_copy.safetensors: model, Adam's state, the step
// count and the generators) and --resume continues it bit-identically; --steps is the total.
#include "examples/common/cli.hpp"
#include "examples/common/training.hpp"
#include "examples/common/data_parallel.hpp"
#include <xtgrad/nn/parallel/distributed.hpp>
#include <xtgrad/nn/tutorial_b/transformer.hpp>
#include <xtgrad/optim/optimizer.hpp>
#include <xtgrad/xtgrad.hpp>

#include "examples/common/cli11.hpp"
#include <xtensor/xview.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>

using namespace xtgrad;

namespace {

// Where the heatmap SVG comes from: --map-layer (negative counts from the last) and --map-head.
struct MapChoice {
    long layer = -1;
    std::size_t head = 0;
};

// Every attention map of every layer and head into the report, for the first sequence of the
// batch (its first 32 tokens at most, so that the page stays light at the tutorial's length 100),
// and the chosen layer and head of the decoder's self-attention as an SVG heatmap (svg_folder, ""
// for none). Where 3 kinds of maps of every layer and head would pass the cells a report holds
// (RunReport::kMaxAttentionCells), fewer tokens, and past ~85 layers the first layers only.
// Tutorial B's attention returns the context only: the modules keep their weights for this one
// forward (MultiHeadAttention::keep_attention_weights).
void show_attention(RunReport& report, const std::string& svg_folder, const MapChoice& choice,
                    nn::tutorial_b::Transformer& model, std::size_t heads, const Ids& src, const Ids& tgt_in) {
    if (!report.enabled() && svg_folder.empty()) return;
    const std::size_t shown_layers = std::min(model.encoder_layers->size(), RunReport::kMaxAttentionCells / (3 * heads));
    std::size_t tokens = 32;  // 12 layers of 8 heads: 30
    while (tokens > 1 && 3 * shown_layers * heads * tokens * tokens > RunReport::kMaxAttentionCells) --tokens;
    const std::size_t n = std::min(tokens, src.shape(1)), m = std::min(tokens, tgt_in.shape(1));
    const Ids s = xt::view(src, xt::range(0, 1), xt::range(0, n)), t = xt::view(tgt_in, xt::range(0, 1), xt::range(0, m));
    std::vector<nn::tutorial_b::MultiHeadAttention*> all;
    for (const auto& layer : *model.encoder_layers) all.push_back(layer->self_attn.get());
    for (const auto& layer : *model.decoder_layers) {
        all.push_back(layer->self_attn.get());
        all.push_back(layer->cross_attn.get());
    }
    for (auto* a : all) a->keep_attention_weights(true);
    {
        NoGradGuard no_grad;
        model.eval();  // no dropout in the maps
        (void)model.forward(s, t);
        model.train();
    }
    std::vector<Tensor> enc, dec, cross;
    for (const auto& layer : *model.encoder_layers) enc.push_back(layer->self_attn->attention_weights());
    for (const auto& layer : *model.decoder_layers) {
        dec.push_back(layer->self_attn->attention_weights());
        cross.push_back(layer->cross_attn->attention_weights());
    }
    for (auto* a : all) a->keep_attention_weights(false);
    auto words = [](const Ids& ids) {
        std::vector<std::string> w;
        for (std::int64_t id : ids) w.push_back(std::to_string(id));
        return w;
    };
    const std::vector<std::string> sw = words(s), tw = words(t);
    const Mask dec_self = nn::decoder_self_mask(t, "random_copy");  // the later positions (random tokens: no padding)
    if (report.enabled()) {
        const auto first = [&](const std::vector<Tensor>& all_layers) {
            return std::vector<Tensor>(all_layers.begin(), all_layers.begin() + static_cast<long>(shown_layers));
        };
        report.attention("encoder self-attention", first(enc), sw, sw);
        report.attention("decoder self-attention", first(dec), tw, tw, 0, &dec_self);
        report.attention("decoder-encoder attention", first(cross), tw, sw);
        if (shown_layers < enc.size())
            report.result("attention maps", fmt::format("layers 0-{} of {} (a report holds {} cells)", shown_layers - 1,
                                                        enc.size(), RunReport::kMaxAttentionCells));
    }
    if (svg_folder.empty()) return;
    const std::size_t layer = static_cast<std::size_t>(choice.layer < 0 ? static_cast<long>(dec.size()) + choice.layer : choice.layer);
    // dec[layer]: (1, heads, m, m); the decoder's self-attention shows the causal mask as hatched cells
    nn::AttentionMap map =
        nn::select_attention_map(dec[layer], 0, 0, choice.head, tw, tw, dec_self, "random_copy");
    map.title = fmt::format("dec_self_attn, layer {}, head {} (sequence 0, first {} tokens)", layer, choice.head, m);
    map.query_axis = "queries: decoder inputs (token ids)";
    map.key_axis = "keys: decoder inputs (later positions masked)";
    const std::string path = fmt::format("{}/dec_self_attn_layer{}_head{}.svg", svg_folder, layer, choice.head);
    nn::write_attention_svg(path, map);
    fmt::print("attention heatmap (decoder self-attention, layer {}, head {}) -> {}\n", layer, choice.head, cli::shown(path));
}

}  // namespace

int main(int argc, char** argv) {
    std::size_t batch = 64, len = 100, vocab = 5000, d_model = 512, heads = 8, layers = 6, d_ff = 2048;
    long steps = 10;
    float dropout_p = 0.1f;
    double lr = 1e-4;
    std::uint64_t seed = 0;
    int threads = 2;
    std::string out = "random_copy_out";
    MapChoice map_choice;
    examples::RunOptions run_options;
    CLI::App app{"Train tutorial B's Transformer on random tokens (the tutorial's training run).\n"
                 "Saves the run to OUT/random_copy.safetensors (docs/checkpoints.md).",
                 "random_copy"};
    auto size = [&](const char* name, std::size_t& v, const char* what, std::size_t max) {
        app.add_option(name, v, what)->capture_default_str()->transform(cli::count_in(1, max));
    };
    size("--batch", batch, "sequences per batch", 1 << 16);
    size("--len", len, "sequence length (>= 2: the target is shifted by one)", 1 << 16);
    size("--vocab", vocab, "source and target vocabulary size (>= 2: id 0 is padding)", 1 << 24);
    size("--d-model", d_model, "embedding size (a multiple of --heads)", 65536);
    size("--heads", heads, "attention heads", 1024);
    size("--layers", layers, "encoder and decoder layers", 1024);
    size("--d-ff", d_ff, "feed-forward size", 1 << 20);
    app.add_option("--dropout", dropout_p, "dropout probability")->capture_default_str()->check(cli::finite_range(0, 0.99));
    app.add_option("--lr", lr, "Adam learning rate (the tutorial's 1e-4; an absurd one, e.g. 1e30, makes step 2 "
                               "fail: how tests/examples/run_cli_tests.sh checks the stop)")
        ->capture_default_str()
        ->check(cli::positive_finite());
    examples::add_total_option(app, steps, "step", "the tutorial runs 10");
    app.add_option("--seed", seed, "torch.manual_seed(seed) before the model is built; the random batch comes next from the same generator")
        ->capture_default_str()
        ->transform(cli::seed_value());
    cli::add_threads_option(app, threads);
    app.add_option("--out", out, "folder for the checkpoint, report.html and the heatmap SVG (created; must be writable)")
        ->capture_default_str();
    app.add_option("--map-layer", map_choice.layer, "decoder layer of the heatmap SVG (negative: from the last)")
        ->capture_default_str()
        ->transform(cli::count_in(-1000, 999));  // the model's own count is checked before training
    app.add_option("--map-head", map_choice.head, "head of the heatmap SVG")->capture_default_str()->transform(cli::count_in(0, 999));
    examples::add_run_options(app, run_options, "step");
    return cli::run_main(app, argc, argv, [&] {
      // Under mpirun each rank trains on its share of the batch; rank 0 alone prints and writes.
      const examples::DataParallel dp("random_copy");
      run_options.writes = dp.rank() == 0;
      try {
        if (len < 2) cli::usage_error("--len must be >= 2 (the targets are shifted by one), got {}", len);
        if (vocab < 2) cli::usage_error("--vocab must be >= 2 (id 0 is padding), got {}", vocab);
        if (d_model % heads != 0) cli::usage_error("--d-model {} is not a multiple of --heads {}", d_model, heads);
        const long n_layers = static_cast<long>(layers);
        if (map_choice.layer < -n_layers || map_choice.layer >= n_layers)
            cli::usage_error("--map-layer {} is out of range for {} layers (use 0..{}, or -1..-{} from the last)",
                             map_choice.layer, layers, n_layers - 1, n_layers);
        if (map_choice.head >= heads)
            cli::usage_error("--map-head {} is out of range for {} heads (use 0..{})", map_choice.head, heads, heads - 1);
        const double d = static_cast<double>(d_model), v = static_cast<double>(vocab);
        examples::require_model_budget(static_cast<double>(layers) * (12 * d * d + 4 * d * static_cast<double>(d_ff)) +
                                           3 * v * d,
                                       "the model size options");
        // Activations kept for backward: per token the logits and ~16 d-sized tensors per layer, and
        // attention's scores, (batch, heads, len, len) per attention — 3 per encoder/decoder layer
        // pair (encoder self, decoder self, cross) — kept ~3 times (scores, softmax, dropout).
        const double b = static_cast<double>(batch), l = static_cast<double>(len);
        const double per_token = b * l * (v + d * 16 * static_cast<double>(layers));
        const double scores = b * static_cast<double>(heads) * l * l * 3 * 3 * static_cast<double>(layers);
        const double activations = per_token + scores;
        if (activations * 4 > 64.0 * (1ull << 30))
            cli::usage_error("--batch {} x --len {}: one step would need about {:.3g} GiB of activations, {:.3g} GiB of "
                             "them attention scores ({} heads x len^2 per sequence; the limit is 64 GiB)",
                             batch, len, activations * 4 / (1ull << 30), scores * 4 / (1ull << 30), heads);
        examples::require_writable_folder(out, "--out");
        cli::apply_threads(dp.threads(threads));
        manual_seed(seed);
        nn::tutorial_b::Transformer model(vocab, vocab, d_model, heads, layers, d_ff, len, dropout_p);
        nn::parallel::DistributedDataParallel ddp(model);
        optim::Adam opt(model.parameters(), optim::AdamOptions(lr).betas({0.9, 0.98}).eps(1e-9));
        // torch.randint(1, vocab, (batch, len)) for src, then tgt, from the generator that built the
        // model, as the tutorial's script draws them (a resume restores the generator after these draws).
        const Ids src = dp.shard(randint({batch, len}, 1, static_cast<std::int64_t>(vocab), default_generator()));
        const Ids tgt = dp.shard(randint({batch, len}, 1, static_cast<std::int64_t>(vocab), default_generator()));
        examples::TrainingRun run(run_options, "step", fmt::format("{}/random_copy.safetensors", out), model,
                                  {.optimizer = &opt, .generators = {{"default", &default_generator()}}},
                                  {{"seed", std::to_string(seed)}, {"batch", std::to_string(batch)},
                                   {"len", std::to_string(len)}, {"vocab", std::to_string(vocab)},
                                   {"d-model", std::to_string(d_model)}, {"heads", std::to_string(heads)},
                                   {"layers", std::to_string(layers)}, {"d-ff", std::to_string(d_ff)},
                                   {"dropout", fmt::format("{}", dropout_p)}, {"lr", fmt::format("{}", lr)}});
        run.check_options(steps);
        run.start_report(out, {.title = fmt::format("random_copy: batch {} x {}, vocab {}, lr {:g}, seed {}", batch, len,
                                                    vocab, lr, seed),
                               .graph_module = "encoder_layers.0"});
        const long done = run.start(steps);
        const nn::tutorial_b::ShiftedTargets shifted = nn::tutorial_b::shift_targets(tgt);
        const Ids tgt_in = shifted.input, target = shifted.target;  // tgt[:, :-1], tgt[:, 1:] flattened
        // This process's part of the loss's mean (its target tokens over all), so that uneven shares of
        // a batch average to the gradient and loss of one process.
        const double share = dp.share(static_cast<std::size_t>(std::count_if(target.begin(), target.end(), [](std::int64_t t) { return t != 0; })));
        ddp.set_gradient_weight(share);
        fmt::print("tutorial B Transformer: {:.1f} M parameters, batch {} x {}, vocab {}; ln {} = {:.3f}\n",
                   model.num_parameters() / 1e6, batch, len, vocab, vocab, std::log(static_cast<double>(vocab)));
        model.train();
        for (long step = done + 1; step <= steps; ++step) {
            const auto t0 = std::chrono::steady_clock::now();
            const double loss = run.step(step, [&] {
                Tensor logits = ddp.forward(src, tgt_in);
                // std::move: reshape relabels the logits' buffer and cross_entropy writes its
                // probabilities over it (torch's view shares it), instead of two more copies
                Tensor l = cross_entropy(reshape(std::move(logits), {-1, static_cast<long>(vocab)}), target,
                                         /*ignore_index=*/0);
                run.backward(l);
                return l;
            });
            run.done(step, steps);
            const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            fmt::print("Epoch: {}, Loss: {:.4f}   ({:.2f} s)\n", step, dp.mean(loss, share), sec);
            std::fflush(stdout);
        }
        if (done == steps) run.finish_untrained();
        show_attention(run.report(), run_options.writes ? out : std::string(), map_choice, model, heads, src, tgt_in);
        run.report().finish();
        fmt::print("saved {}\n", cli::shown(run.checkpoint()));
        return cli::kSuccess;
      } catch (const std::exception& e) {
        if (dp.active()) dp.fail(e);  // ends the whole job (MPI_Abort): the other ranks never wait
        throw;
      }
    });
}
