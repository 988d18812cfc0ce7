// Tutorial A's Transformer learns to reverse digit strings: 3 1 4 1 5 -> 5 1 4 1 3.
// A task with something real to learn, small enough to train in a few seconds, that
// exercises every part of tutorial A: padding (lengths 3..6), padding_mask, sequence_mask,
// the PAD position row, the context mask, and greedy decoding from <s> until </s>.
//
//   build/examples/reverse [--steps N] [--seed S]   (--help lists every option)
#include "examples/common/cli.hpp"
#include "examples/common/training.hpp"
#include "examples/common/data_parallel.hpp"
#include <xtgrad/nn/parallel/distributed.hpp>
#include <xtgrad/nn/tutorial_a/tutorial_a.hpp>
#include <xtgrad/optim/optimizer.hpp>
#include <xtgrad/optim/schedule.hpp>
#include <xtgrad/xtgrad.hpp>

#include "examples/common/cli11.hpp"

#include <algorithm>

using namespace xtgrad;
namespace ta = xtgrad::nn::tutorial_a;

namespace {

constexpr std::int64_t kBos = 10, kEos = 11, kVocab = 12;  // ids: 0 PAD, 1..9 digits, 10 <s>, 11 </s>
constexpr std::size_t kMaxLen = 6;

Ids zeros(const Shape& shape) {
    Ids ids = Ids::from_shape(shape);
    ids.fill(0);
    return ids;
}

// Row i of a (n, width) id matrix as a (1, L) matrix, its first L entries (default: all).
Ids row(const Ids& m, std::size_t i, std::size_t L = 0) {
    const std::size_t width = m.shape()[1];
    if (L == 0) L = width;
    Ids r = Ids::from_shape({1, L});
    std::copy(m.data() + i * width, m.data() + i * width + L, r.data());
    return r;
}

struct Batch {
    Ids src, src_len, tgt_in, tgt_len, target;  // target flattened, 0 (ignored) past </s>
};

// Random digit strings of length 3..kMaxLen, padded with 0.
Batch make_batch(std::size_t n, Generator& gen) {
    Batch b{zeros({n, kMaxLen}), Ids::from_shape({n}), zeros({n, kMaxLen + 1}), Ids::from_shape({n}),
            zeros({n, kMaxLen + 1})};  // target as (n, L+1); flattened for the loss
    std::uniform_int_distribution<std::size_t> len(3, kMaxLen);
    std::uniform_int_distribution<std::int64_t> digit(1, 9);
    for (std::size_t i = 0; i < n; ++i) {
        // row 0 has the full length: tutorial A pads a batch to its longest sequence
        const std::size_t L = i == 0 ? kMaxLen : len(gen.engine());
        for (std::size_t t = 0; t < L; ++t) b.src(i, t) = digit(gen.engine());
        b.src_len(i) = static_cast<std::int64_t>(L);
        b.tgt_len(i) = static_cast<std::int64_t>(L + 1);
        b.tgt_in(i, 0) = kBos;  // <s> reversed...
        for (std::size_t t = 0; t < L; ++t) {
            b.tgt_in(i, t + 1) = b.src(i, L - 1 - t);
            b.target(i, t) = b.src(i, L - 1 - t);  // reversed... </s>
        }
        b.target(i, L) = kEos;
    }
    return b;
}

std::string show(const Ids& ids) {
    std::string s;
    for (std::int64_t id : ids) {
        if (id == 0 || id == kEos) break;
        if (id != kBos) s += std::to_string(id) + " ";
    }
    return s;
}

// Greedy decoding of one source row: start from <s>, append the argmax of the last
// position until </s> (or the maximum length).
Ids greedy(const ta::Transformer& model, const Ids& src, const Ids& src_len) {
    NoGradGuard no_grad;
    Ids out = zeros({1, kMaxLen + 1});
    out(0, 0) = kBos;
    for (std::size_t t = 1; t <= kMaxLen; ++t) {
        Ids prefix = Ids::from_shape({1, t});
        for (std::size_t j = 0; j < t; ++j) prefix(0, j) = out(0, j);
        const Tensor logits = model.forward(src, src_len, prefix, Ids{static_cast<std::int64_t>(t)}).logits;
        const Ids next = argmax(narrow(logits, 1, t - 1, 1), -1);
        out(0, t) = next(0, 0);
        if (next(0, 0) == kEos) break;
    }
    return out;
}

// The attention maps of the first test string (full length, so no padding) into the report.
void report_attention(RunReport& report, const ta::Transformer& model, const Batch& test) {
    if (!report.enabled()) return;
    NoGradGuard no_grad;
    const Ids src = row(test.src, 0), tgt = row(test.tgt_in, 0);
    const ta::TransformerOutput out = model.forward(src, Ids{test.src_len(0)}, tgt, Ids{test.tgt_len(0)});
    auto words = [](const Ids& ids) {
        std::vector<std::string> w;
        for (std::int64_t id : ids) w.push_back(id == kBos ? "<s>" : id == kEos ? "</s>" : id == 0 ? "PAD" : std::to_string(id));
        return w;
    };
    const std::vector<std::string> s = words(src), t = words(tgt);
    const Mask dec_self = nn::decoder_self_mask(tgt, "reverse");  // the later positions (no padding: full length)
    report.attention("encoder self-attention", out.enc_self_attn, s, s, 4);
    report.attention("decoder self-attention", out.dec_self_attn, t, t, 4, &dec_self);
    report.attention("decoder-encoder attention", out.ctx_attn, t, s, 4);
}

// Heatmaps (SVG) of the last layer's every head for the first padded test string: the
// encoder's self-attention (PAD keys masked), the decoder's (later and PAD keys masked) and the
// decoder-encoder attention, whose trained heads read the source backwards (an anti-diagonal).
void write_heatmaps(const ta::Transformer& model, const Batch& test, std::size_t heads, const std::string& out) {
    NoGradGuard no_grad;
    // A batch of two: a short string (padded: shown) and a full-length one (the batch's padded
    // length must be its longest string's, as tutorial A's encoder checks).
    std::size_t i = 0, j = 0;
    while (i + 1 < test.src_len.size() && static_cast<std::size_t>(test.src_len(i)) == kMaxLen) ++i;
    while (j + 1 < test.src_len.size() && static_cast<std::size_t>(test.src_len(j)) != kMaxLen) ++j;
    Ids src = Ids::from_shape({2, kMaxLen}), tgt = Ids::from_shape({2, kMaxLen + 1});
    for (std::size_t c = 0; c < kMaxLen; ++c) src(0, c) = test.src(i, c), src(1, c) = test.src(j, c);
    for (std::size_t c = 0; c <= kMaxLen; ++c) tgt(0, c) = test.tgt_in(i, c), tgt(1, c) = test.tgt_in(j, c);
    const ta::TransformerOutput o =
        model.forward(src, Ids{test.src_len(i), test.src_len(j)}, tgt, Ids{test.tgt_len(i), test.tgt_len(j)});
    auto words = [](const Ids& ids) {
        std::vector<std::string> w;
        for (std::int64_t id : ids) w.push_back(id == kBos ? "<s>" : id == kEos ? "</s>" : id == 0 ? "PAD" : std::to_string(id));
        return w;
    };
    const std::vector<std::string> s = words(row(src, 0)), t = words(row(tgt, 0));
    struct Kind {
        const char* name;
        const std::vector<Tensor>& layers;
        const std::vector<std::string>& queries;
        const std::vector<std::string>& keys;
        Mask masked;
        const char* query_axis;
        const char* key_axis;
    };
    const Kind kinds[] = {
        {"enc_self_attn", o.enc_self_attn, s, s, nn::key_padding_mask(src, src, "reverse"), "queries: source digits",
         "keys: source digits (PAD masked)"},
        {"dec_self_attn", o.dec_self_attn, t, t, nn::decoder_self_mask(tgt, "reverse"), "queries: decoder inputs",
         "keys: decoder inputs (later and PAD masked)"},
        {"ctx_attn", o.ctx_attn, t, s, nn::key_padding_mask(tgt, src, "reverse"), "queries: decoder inputs",
         "keys: source digits (PAD masked)"}};
    const std::size_t layer = o.ctx_attn.size() - 1;
    for (const Kind& k : kinds)
        for (std::size_t h = 0; h < heads; ++h) {
            nn::AttentionMap map = nn::select_attention_map(k.layers[layer], heads, 0, h, k.queries, k.keys, k.masked, "reverse");
            map.title = fmt::format("{}, layer {}, head {}", k.name, layer, h);
            map.query_axis = k.query_axis;
            map.key_axis = k.key_axis;
            nn::write_attention_svg(fmt::format("{}/{}_layer{}_head{}.svg", out, k.name, layer, h), map);
        }
    fmt::print("attention heatmaps of '{}' (3 kinds x {} heads, layer {}) -> {}/*.svg\n", show(row(src, 0)), heads, layer, cli::shown(out));
}

}  // namespace

int main(int argc, char** argv) {
    long steps = 400;
    std::uint64_t seed = 0;
    int threads = 1;
    std::string out = "reverse_out";
    examples::RunOptions run_options;
    CLI::App app{"Train tutorial A's Transformer to reverse digit strings.", "reverse"};
    examples::add_total_option(app, steps, "step", "batches of 64");
    app.add_option("--seed", seed, "seed of the initial weights (manual_seed) and, + 1, of the batches")
        ->capture_default_str()
        ->transform(cli::seed_value());
    cli::add_threads_option(app, threads);
    app.add_option("--out", out, "folder for the run (reverse.safetensors) and report.html (created; must be writable; "
                                "--out '' writes nothing)")->capture_default_str();
    examples::add_run_options(app, run_options, "step");
    return cli::run_main(app, argc, argv, [&] {
      // Under mpirun each rank trains on its share of every batch; rank 0 alone prints and writes.
      const examples::DataParallel dp("reverse");
      run_options.writes = dp.rank() == 0;
      try {
        if (!out.empty()) examples::require_writable_folder(out, "--out");
        cli::apply_threads(dp.threads(threads));
        manual_seed(seed);
        Generator gen(seed + 1);
        ta::Transformer model(kVocab, kMaxLen, kVocab, kMaxLen + 1, /*layers*/ 2, /*model_dim*/ 64, /*heads*/ 4,
                              /*ffn_dim*/ 128, /*dropout*/ 0.1f);
        nn::parallel::DistributedDataParallel ddp(model);
        optim::Adam opt(model.parameters(), optim::AdamOptions(1e-3).betas({0.9, 0.98}).eps(1e-9));
        optim::LRScheduler schedule(opt, optim::linear_warmup(1e-3, 50));
        examples::TrainingRun run(run_options, "step", out.empty() ? std::string() : fmt::format("{}/reverse.safetensors", out), model,
                                  {.optimizer = &opt,
                                   .schedule = &schedule,
                                   .generators = {{"default", &default_generator()}, {"data", &gen}}},
                                  {{"seed", std::to_string(seed)}});
        run.check_options(steps);
        run.start_report(out, {.title = fmt::format("reverse: seed {}", seed), .graph_module = "encoder.encoder_layers.0"});
        const long done = run.start(steps);
        fmt::print("tutorial A Transformer (2 layers, d 64, 4 heads): {} parameters\n", model.num_parameters());
        model.train();
        for (long step = done + 1; step <= steps; ++step) {
            Batch b = make_batch(64, gen);
            for (Ids* part : {&b.src, &b.src_len, &b.tgt_in, &b.tgt_len, &b.target}) *part = dp.shard(*part);
            // This process's part of the loss's mean (its counted target tokens over all): shares of
            // different sizes average to the gradient and loss of one process.
            const double share = dp.share(static_cast<std::size_t>(
                std::count_if(b.target.begin(), b.target.end(), [](std::int64_t t) { return t != 0; })));
            ddp.set_gradient_weight(share);
            const double loss = run.step(step, [&] {
                Tensor logits = ddp.forward(b.src, b.src_len, b.tgt_in, b.tgt_len).logits;
                Ids target = b.target;
                target.reshape({target.size()});
                // std::move: no copy of the logits (reshape relabels them, cross_entropy overwrites them)
                Tensor l = cross_entropy(reshape(std::move(logits), {-1, kVocab}), target, /*ignore_index=*/0);
                run.backward(l);
                return l;
            });
            run.done(step, steps);
            if (step == 1 || step % 50 == 0) fmt::print("step {:4d}  loss {:.4f}\n", step, dp.mean(loss, share));
        }
        if (done == steps) run.finish_untrained();
        model.eval();
        const Batch test = make_batch(200, gen);
        std::size_t right = 0;
        for (std::size_t i = 0; i < 200; ++i) {
            const Ids src = row(test.src, i, static_cast<std::size_t>(test.src_len(i)));  // unpadded
            const Ids len = Ids{test.src_len(i)};
            const Ids decoded = greedy(model, src, len);
            const bool ok = show(decoded) == show(row(test.target, i));
            right += ok;
            if (i < 5) fmt::print("  {:<14} -> {:<14} {}\n", show(src), show(decoded), ok ? "ok" : "wrong");
        }
        fmt::print("greedy decoding: {}/200 test strings reversed exactly\n", right);
        report_attention(run.report(), model, test);
        if (!out.empty() && dp.rank() == 0) write_heatmaps(model, test, 4, out);
        run.report().finish();
        return cli::kSuccess;
      } catch (const std::exception& e) {
        if (dp.active()) dp.fail(e);  // ends the whole job (MPI_Abort): the other ranks never wait
        throw;
      }
    });
}
