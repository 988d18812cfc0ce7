// The Winter Games translation of tutorial C, trained end to end with Adam:
//   'I like the 2022 Beijing Winter Games' -> '我 爱 2022 北京 冬 奥会'
//
// It trains the tutorial's model (d_model 512, d_ff 2048, d_k = d_v = 64, 6+6 layers, 8 heads)
// on the one sentence pair, then prints the teacher-forced prediction (what the tutorial
// prints) and the greedy translation (what translating means: start at 'S', feed each
// predicted word back, stop at 'E'), draws attention heatmaps with the tutorial's showgraph
// (nn/tutorial_c/showgraph.hpp: on a fixed 0..1 scale unless --scale auto). The run is saved first (safetensors, the tutorial's PyTorch names, plus Adam's
// state, the epoch and the generator: --resume continues it bit-identically).
//
// Defaults converge for every seed tried. `--tutorial-settings` runs the lesson as written: its
// vocabularies ('I' and '我' = 0 = PAD, three words = 4), its hard-coded positions, lr 1e-3
// without warm-up, 20 epochs, its printout and its teacher-forced test; it does not translate
// (docs/tutorial_c.md shows both runs side by side and explains each difference).
#include "examples/common/cli.hpp"
#include "examples/common/progress.hpp"
#include "examples/common/training.hpp"
#include <xtgrad/nn/checkpoint.hpp>
#include <xtgrad/nn/tutorial_c/tutorial_c.hpp>
#include <xtgrad/optim/optimizer.hpp>
#include <xtgrad/optim/schedule.hpp>
#include <xtgrad/xtgrad.hpp>

#include "examples/common/cli11.hpp"
#include <fmt/ranges.h>

#include <map>

using namespace xtgrad;
namespace tc = xtgrad::nn::tutorial_c;

namespace {

const tc::Config kLesson{};

struct Settings {
    // The model's sizes, as plain variables for CLI11 to bind; main() builds the options from them.
    std::size_t d_model = kLesson.d_model(), d_ff = kLesson.d_ff(), d_k = kLesson.d_k(), d_v = kLesson.d_v(),
                n_layers = kLesson.n_layers(), n_heads = kLesson.n_heads();
    double lr = 3e-4;
    long warmup = 0;
    long epochs = 10;
    std::uint64_t seed = 0;
    int threads = 2;
    std::string out = "winter_games_out";
    examples::RunOptions run;
    int layer = -1, head = 0;  // heatmaps: -1 = last layer
    nn::AttentionScale scale = nn::AttentionScale::probability;
    bool tutorial_settings = false, literal_positions = false, check = false, quiet = false;
    std::string autocast;  // "" (fp32) or "bf16": the forwards under autocast::Scope(DType::bf16)
    bool allow_slower_bf16 = false;  // autocast::allow_slower_bf16
};

// The words of a row of ids, through number_dict, up to and including the first `end`
// (greedy_decode pads after it); a fixed-vocabulary row also ends at PAD (0).
std::vector<std::string> words(const Ids& ids, const std::vector<std::string>& number_dict, std::int64_t end, bool pad_ends) {
    std::vector<std::string> out;
    for (std::int64_t id : ids) {
        if (pad_ends && id == 0) break;
        out.push_back(number_dict.at(static_cast<std::size_t>(id)));
        if (id == end) break;
    }
    return out;
}

// The lesson's printout of the test: ['爱', '爱', 'E', ...]
std::string python_list(const std::vector<std::string>& words) {
    std::string s;
    for (const std::string& w : words) s += fmt::format("{}'{}'", s.empty() ? "" : ", ", w);
    return "[" + s + "]";
}

void show_heatmaps(const tc::TransformerOutput& out, const tc::Batch& batch, const Settings& s) {
    // The sentences' words, not the ids' (the lesson's ids do not name their words: 4 is three).
    const std::vector<std::string> src = tc::split(tc::sentences()[0]);
    const std::vector<std::string> dec = tc::split(tc::sentences()[1]);
    // The masks the model used: PAD keys (with --tutorial-settings, 'I' and '我' are id 0) and,
    // in the decoder's self-attention, the later words.
    const Ids &enc_ids = batch.enc_inputs, &dec_ids = batch.dec_inputs;
    // x: the words of the keys, y: the words of the queries (the tutorial labels x with the
    // source words for every map, also the decoder's self-attention, whose keys are its inputs).
    struct Map {
        const char* name;
        const std::vector<Tensor>& layers;
        const std::vector<std::string>& x_words;
        const std::vector<std::string>& y_words;
        Mask masked;
        const char* query_axis;
        const char* key_axis;
    };
    const Map maps[] = {
        {"enc_self_attn", out.enc_self_attns, src, src, tc::get_attn_pad_mask(enc_ids, enc_ids),
         "queries: source words", "keys: source words (PAD masked)"},
        {"dec_self_attn", out.dec_self_attns, dec, dec, nn::decoder_self_mask(dec_ids, "winter_games"),
         "queries: decoder inputs", "keys: decoder inputs (later and PAD masked)"},
        {"dec_enc_attn", out.dec_enc_attns, src, dec, tc::get_attn_pad_mask(dec_ids, enc_ids),
         "queries: decoder inputs", "keys: source words (PAD masked)"}};
    for (const Map& m : maps) {
        const int layer = s.layer < 0 ? static_cast<int>(m.layers.size()) + s.layer : s.layer;
        tc::ShowgraphOptions options;
        options.layer = layer, options.head = static_cast<std::size_t>(s.head), options.scale = s.scale;
        options.title = fmt::format("{}, layer {}, head {}", m.name, layer, s.head);
        options.query_axis = m.query_axis, options.key_axis = m.key_axis, options.masked = m.masked;
        const std::string path = fmt::format("{}/{}_layer{}_head{}.svg", s.out, m.name, layer, s.head);
        const nn::AttentionMap map = tc::showgraph(m.layers, m.x_words, m.y_words, path, options);
        if (!s.quiet) fmt::print("\n{} -> {}\n{}", options.title, cli::shown(path), nn::attention_text(map));
    }
}

// Every map of every layer and head into the report, with the words on both axes and the cells
// the model's own masks hid: PAD keys (with --tutorial-settings, 'I' and '我' are id 0) and, in
// the decoder's self-attention, the later words. Past the cells a report holds
// (RunReport::kMaxAttentionCells: ~1 800 layers × heads), the first layers only, and the page says so.
void report_attention(RunReport& report, const tc::TransformerOutput& out, const tc::Batch& batch) {
    const std::vector<std::string> src = tc::split(tc::sentences()[0]);
    const std::vector<std::string> dec = tc::split(tc::sentences()[1]);
    const Ids &enc_ids = batch.enc_inputs, &dec_ids = batch.dec_inputs;
    const Mask enc_self = tc::get_attn_pad_mask(enc_ids, enc_ids), dec_enc = tc::get_attn_pad_mask(dec_ids, enc_ids);
    const Mask dec_self = nn::decoder_self_mask(dec_ids, "winter_games");
    const std::size_t layers = out.enc_self_attns.size();
    if (layers == 0) return;
    // a batch of one sentence: a layer's weights hold its cells
    const std::size_t per_layer =
        out.enc_self_attns[0].data().size() + out.dec_self_attns[0].data().size() + out.dec_enc_attns[0].data().size();
    const std::size_t shown = std::min(layers, RunReport::kMaxAttentionCells / per_layer);
    const auto first = [&](const std::vector<Tensor>& all) {
        return std::vector<Tensor>(all.begin(), all.begin() + static_cast<long>(shown));
    };
    report.attention("encoder self-attention", first(out.enc_self_attns), src, src, 0, &enc_self);
    report.attention("decoder self-attention", first(out.dec_self_attns), dec, dec, 0, &dec_self);
    report.attention("decoder-encoder attention", first(out.dec_enc_attns), dec, src, 0, &dec_enc);
    if (shown < layers)
        report.result("attention maps", fmt::format("layers 0-{} of {} (a report holds {} cells)", shown - 1, layers,
                                                    RunReport::kMaxAttentionCells));
}

// Every check that needs no training, so a bad option never costs (or throws away) a run.
void validate(const Settings& s) {
    const long layers = static_cast<long>(s.n_layers), heads = static_cast<long>(s.n_heads);
    if (s.layer < -layers || s.layer >= layers)
        cli::usage_error("--layer {} is out of range for {} layers (use 0..{}, or -1..-{} from the last)", s.layer, layers,
                         layers - 1, layers);
    if (s.head < 0 || s.head >= heads) cli::usage_error("--head {} is out of range for {} heads (use 0..{})", s.head, heads, heads - 1);
    const double d = static_cast<double>(s.d_model), ff = static_cast<double>(s.d_ff),
                 h = static_cast<double>(s.n_heads), dk = static_cast<double>(s.d_k),
                 dv = static_cast<double>(s.d_v);
    const double attention = d * h * (2 * dk + dv) + h * dv * d + 2 * d, ffn = 2 * d * ff + 2 * d;
    examples::require_model_budget(static_cast<double>(s.n_layers) * (3 * attention + 2 * ffn) + 32 * d,
                                   "the model size options");
    examples::require_writable_folder(s.out, "--out");
}

}  // namespace

int main(int argc, char** argv) {
    Settings s;
    CLI::App app{"Train tutorial C's Transformer on the Winter Games sentence pair and translate it.\n"
                 "Saves the run to OUT/winter_games.safetensors (model + Adam state + epoch + generator; "
                 "docs/checkpoints.md), then draws the attention heatmaps.",
                 "winter_games"};
    auto size = [&](const char* name, std::size_t& v, const char* what, std::size_t max) {
        app.add_option(name, v, what)->capture_default_str()->transform(cli::count_in(1, max));
    };
    size("--d-model", s.d_model, "embedding size", 65536);
    size("--d-ff", s.d_ff, "feed-forward size", 1 << 20);
    size("--d-k", s.d_k, "per-head query/key size", 65536);
    size("--d-v", s.d_v, "per-head value size", 65536);
    size("--layers", s.n_layers, "encoder and decoder layers", 1024);
    size("--heads", s.n_heads, "attention heads", 1024);
    app.add_option("--lr", s.lr, "Adam learning rate (> 0; an absurd one, e.g. 1e4, drives the loss or the gradients to "
                                 "NaN/Inf in a few epochs: how tests/examples/run_cli_tests.sh checks the stop)")
        ->capture_default_str()
        ->check(cli::positive_finite());
    app.add_option("--warmup", s.warmup, "epochs of linear learning-rate warm-up (0 = none)")->capture_default_str()
        ->transform(cli::count_in(0, 1LL << 40));
    examples::add_total_option(app, s.epochs, "epoch", "one step each: the corpus is one pair");
    app.add_option("--seed", s.seed, "seed of the initial weights (manual_seed)")->capture_default_str()->transform(cli::seed_value());
    cli::add_threads_option(app, s.threads);
    app.add_option("--out", s.out, "folder for the checkpoint, the heatmaps and report.html (created; must be writable)")
        ->capture_default_str();
    examples::add_run_options(app, s.run, "epoch");
    app.add_option("--layer", s.layer, "layer of the heatmaps (-1 = last; checked before training)")
        ->capture_default_str()
        ->transform(cli::count_in(-1000, 999));
    app.add_option("--head", s.head, "head of the heatmaps (checked before training)")->capture_default_str()->transform(cli::count_in(0, 999));
    app.add_option("--scale", s.scale,
                   "heatmap colours: 'probability' (fixed 0..1, the default: attention weights are probabilities) or "
                   "'auto' (stretched over each map's min..max, as matplotlib's matshow; labelled so)")
        ->transform(CLI::CheckedTransformer(std::map<std::string, nn::AttentionScale>{
            {"probability", nn::AttentionScale::probability}, {"auto", nn::AttentionScale::auto_range}}));
    app.add_flag("--tutorial-settings", s.tutorial_settings,
                 "the lesson's run as written: its vocabularies ('I' and '我' = 0 = PAD; Beijing, Winter, Games = 4), "
                 "its hard-coded positions, lr 1e-3 without warm-up, 20 epochs, its printout and teacher-forced test "
                 "(an explicit --lr, --warmup or --epochs still counts)");
    app.add_flag("--literal-positions", s.literal_positions, "the tutorial's hard-coded positions (erratum)");
    app.add_flag("--check", s.check, "exit 1 unless the greedy translation is right");
    app.add_flag("--quiet", s.quiet, "print only the losses, the translations and the files written");
    app.add_option("--autocast", s.autocast,
                   "bf16: mixed precision, as torch.autocast(\"cpu\", dtype=torch.bfloat16): the products of every forward "
                   "(training and translating) in bf16 with fp32 sums, everything else and the weights in fp32 "
                   "(docs/autocast.md; an Error where bf16 is not faster than fp32: the OpenBLAS backend, a CPU without "
                   "AVX512-BF16 or with bf16 dot products slower than its fp32 FMAs)")
        ->check(CLI::IsMember({"bf16"}));
    app.add_flag("--allow-slower-bf16", s.allow_slower_bf16,
                 "with --autocast bf16: run it even where bf16 products are slower than fp32, to check the "
                 "translation under bf16 on such a CPU (autocast::allow_slower_bf16)");
    return cli::run_main(app, argc, argv, [&] {
        const tc::Vocabularies vocabularies = s.tutorial_settings ? tc::Vocabularies::lesson : tc::Vocabularies::fixed;
        const tc::Vocab input_vocab = tc::input_vocab(vocabularies), output_vocab = tc::output_vocab(vocabularies);
        if (s.tutorial_settings) {
            if (app.count("--lr") == 0) s.lr = 1e-3;
            if (app.count("--warmup") == 0) s.warmup = 0;
            if (app.count("--epochs") == 0) s.epochs = 20;
            s.literal_positions = true;
        }
        const DType operands = s.autocast == "bf16" ? DType::bf16 : DType::fp32;
        autocast::allow_slower_bf16(s.allow_slower_bf16);
        try {  // refused now, before validate makes --out: a usage error, nothing written
            const autocast::Scope can_run(operands);
        } catch (const Error& e) {
            cli::usage_error("--autocast bf16: {}", e.what());
        }
        validate(s);
        cli::apply_threads(s.threads);
        manual_seed(s.seed);
        tc::Transformer model(tc::Config()
                                  .src_vocab_size(input_vocab.size())  // len(input_vocab)
                                  .tgt_vocab_size(output_vocab.size())
                                  .d_model(s.d_model)
                                  .d_ff(s.d_ff)
                                  .d_k(s.d_k)
                                  .d_v(s.d_v)
                                  .n_layers(s.n_layers)
                                  .n_heads(s.n_heads)
                                  .positions(s.literal_positions ? tc::PositionScheme::literal
                                                                 : tc::PositionScheme::sequential));
        optim::Adam opt(model.parameters(), optim::AdamOptions(s.lr));
        optim::LRScheduler schedule(opt, optim::linear_warmup(s.lr, s.warmup));
        const std::string ckpt = fmt::format("{}/winter_games.safetensors", s.out);
        examples::TrainingRun run(s.run, "epoch", ckpt, model,
                                  {.optimizer = &opt, .schedule = &schedule, .generators = {{"default", &default_generator()}}},
                                  {{"seed", std::to_string(s.seed)}, {"d-model", std::to_string(s.d_model)},
                                   {"d-ff", std::to_string(s.d_ff)}, {"d-k", std::to_string(s.d_k)},
                                   {"d-v", std::to_string(s.d_v)}, {"layers", std::to_string(s.n_layers)},
                                   {"heads", std::to_string(s.n_heads)}, {"warmup", std::to_string(s.warmup)},
                                   {"tutorial-settings", s.tutorial_settings ? "1" : "0"},
                                   {"literal-positions", s.literal_positions ? "1" : "0"}, {"lr", fmt::format("{}", s.lr)}});
        run.check_options(s.epochs);
        run.start_report(s.out, {.title = fmt::format("winter_games{}: lr {:g}, warm-up {}, seed {}",
                                                      s.tutorial_settings ? " (the lesson's settings)" : "", s.lr,
                                                      s.warmup, s.seed),
                                 .graph_module = "encoder.layers.0"});

        const long done = run.start(s.epochs);
        fmt::print("tutorial C Transformer: d_model {}, d_ff {}, {} layers, {} heads, {:.1f} M parameters; "
                   "Adam lr {:g}, warm-up {} epochs, seed {}{}\n",
                   s.d_model, s.d_ff, s.n_layers, s.n_heads, model.num_parameters() / 1e6, s.lr,
                   s.warmup, s.seed, operands == DType::bf16 ? "; autocast bf16" : "");
        if (s.tutorial_settings)
            fmt::print("the lesson as written: vocabularies of {} and {} ids ('I' and '我' are 0 = PAD; Beijing, Winter, "
                       "Games are 4), hard-coded positions\n",
                       input_vocab.size(), output_vocab.size());
        const tc::Batch batch = tc::make_batch(tc::sentences(), input_vocab, output_vocab);
        const Ids& enc = batch.enc_inputs;
        const Ids& dec = batch.dec_inputs;
        Ids target = batch.target_batch;
        target.reshape({target.size()});  // target_batch.contiguous().view(-1)
        const std::int64_t start_id = tc::lookup(output_vocab, "S"), end_id = tc::lookup(output_vocab, "E");
        const std::vector<std::string> number_dict = tc::number_dict(output_vocab);
        examples::Progress progress(s.epochs, done);
        for (long epoch = done + 1; epoch <= s.epochs; ++epoch) {
            const double loss = run.step(epoch, [&] {
                Tensor l;
                {
                    const autocast::Scope mixed(operands);  // fp32 is no autocast
                    l = cross_entropy(model.forward(enc, dec).logits, target);
                }
                run.backward(l);  // outside the scope, as with torch.autocast: each node keeps its precision
                return l;
            });
            run.done(epoch, s.epochs);
            if (s.tutorial_settings)
                fmt::print("Epoch: {:04d} cost = {:.6f}\n", epoch, loss);  // the lesson's line
            else
                progress.update(epoch, loss);
        }
        if (done == s.epochs) run.finish_untrained();

        model.eval();
        NoGradGuard no_grad;
        const autocast::Scope mixed(operands);
        tc::TransformerOutput out = model.forward(enc, dec);
        const bool pad_ends = !s.tutorial_settings;  // the lesson's 0 is '我'
        const Ids predict = argmax(out.logits, 1);        // predict.data.max(1)[1]: teacher-forced
        const std::string teacher = fmt::format("{}", fmt::join(words(predict, number_dict, -1, pad_ends), " "));
        const std::string greedy = fmt::format(
            "{}", fmt::join(words(model.greedy_decode(enc, start_id, end_id), number_dict, end_id, pad_ends), " "));
        const std::string expected = tc::sentences()[2];
        if (s.tutorial_settings)  // the lesson's test line
            fmt::print("{} -> {}\n", tc::sentences()[0], python_list(words(predict, number_dict, -1, false)));
        fmt::print("\n{}\n  teacher-forced: {}\n  greedy:         {}   {}\n", tc::sentences()[0], teacher, greedy,
                   greedy == expected ? "(correct)" : "(wrong: expected " + expected + ")");
        report_attention(run.report(), out, batch);
        run.report().result("source", tc::sentences()[0]);
        run.report().result("teacher-forced", teacher);
        run.report().result("greedy", greedy + (greedy == expected ? "   (correct)" : "   (wrong: expected " + expected + ")"));
        run.report().finish();
        show_heatmaps(out, batch, s);  // after the save: a display problem never costs the training
        fmt::print("\n{}", run.files_summary());
        if (s.check && greedy != expected)  // the reason on stderr, where a script's log keeps it
            fail("--check: the greedy translation is '{}', not '{}'", greedy, expected);
        return cli::kSuccess;
    });
}
