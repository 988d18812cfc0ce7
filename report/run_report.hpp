// RunReport: one self-contained HTML page per training run (TensorBoard and torchviz in one
// file, with no server and no network): the loss and learning-rate curves, per-module gradient
// norms and update/weight ratios, activation statistics from forward hooks, every attention map
// of every layer and head, and the backward graph of one step, clickable node by node.
//
//   RunReport report("out/report.html", {.title = "my run"});
//   report.attach(model);                        // per-module statistics from here on
//   for (long step = 1; step <= steps; ++step) {
//       report.begin_step(step);                 // forward hooks record this step's activations
//       opt.zero_grad();
//       Tensor loss = cross_entropy(model.forward(x), y);
//       report.backward(loss);                   // loss.backward(); the first one also keeps its graph
//       report.gradients();                      // per-module gradient norms, before the update
//       opt.step();
//       report.end_step({{"loss", loss.item()}, {"lr", opt.lr()}});  // update ratios; rewrites the page if due
//   }
//   report.attention("encoder self-attention", weights, words, words);
//   report.finish();                             // the page stops reloading itself
//
// The page is rewritten atomically (io/atomic_file.hpp) at most every
// Options::write_interval seconds while the run is live, and reloads itself every few seconds
// until finish(). A RunReport made with an empty path is off: every call does nothing (and
// backward() only runs backward), so a program has one code path whether or not it reports.
// Everything recorded is on the page as JSON and downloadable from it as CSV or JSON; curves
// longer than ~2000 points are drawn from min/max buckets, so a 10,000-step page stays fast.
// Labels (titles, token words, module and scalar names) are text: nothing given to a RunReport
// can end the page's script or inject markup, and bytes that are not UTF-8 are shown as U+FFFD,
// which the page notes (and stderr, once). A loss or statistic that is NaN or infinite is kept
// apart from "not measured" (JSON "nan", "inf", "-inf" against null) and shown as such; a run
// ended by an exception (the report destroyed during unwinding) or by finish_with_error() says
// so. Every call that refuses its arguments throws an Error and changes nothing
// (docs/reliability.md). Not thread-safe: one thread calls a report (the training loop's, where
// the attached model's forward hooks run); serialise calls from others yourself (docs/report.md).
#pragma once

#include <xtgrad/autograd/array.hpp>
#include <xtgrad/autograd/tensor.hpp>

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace xtgrad {

namespace nn {
class Module;
}

class RunReport {
public:
    struct Options {
        std::string title = "xtgrad run";
        double write_interval = 3.0;  // seconds between rewrites while live (0: every end_step)
        long stats_every = 1;         // per-module statistics every this many steps (>= 1)
        std::string graph_module{};   // draw only this module's part of the graph ("": all); one
                                      // that no op is in: an Error at the first backward, before it runs
        int graph_depth = -1;         // nodes below the graph's top (-1: no limit; below -1: an Error)
    };

    RunReport(std::string path, Options options);
    explicit RunReport(std::string path) : RunReport(std::move(path), Options{}) {}
    ~RunReport();  // writes a last page (not live) if finish() was not called; never throws
    RunReport(const RunReport&) = delete;
    RunReport& operator=(const RunReport&) = delete;

    bool enabled() const { return !path_.empty(); }
    const std::string& path() const { return path_; }

    // Per-module statistics from this model on: forward hooks on it and every sub-module
    // (activation mean, std, fraction of zeros of each module's first output) and its
    // parameters grouped by module path (gradient norms, update/weight ratios). One model per
    // report: a second attach is an Error.
    void attach(nn::Module& model);

    // A resumed run's page keeps the steps before the resume: the scalars and per-module
    // statistics of `data` (report::read_data of the earlier run's page) up to `through_step`,
    // the step the run resumes after. Once, before the first begin_step or log (else the kept
    // steps would not increase, and the next resume refused this page); a page of another shape
    // is an Error naming the field, and nothing is kept.
    void continue_from(const std::string& data, long through_step);

    // Opens step `step` (0 to kMaxStep, and more than the last step opened): the hooks record
    // activations until end_step. A step begun again before its end_step is dropped, with the
    // weights gradients() copied in it (they would measure two steps' updates as one).
    // The page's script holds steps as doubles, exact only up to 2^53: past it, its axis hung.
    static constexpr long kMaxStep = long{1} << 53;
    void begin_step(long step);
    // loss.backward(); on the first call also keeps the graph long enough to draw it (with
    // each node's gradient norm) into the page.
    void backward(const Tensor& loss);
    // After backward, before the optimizer's step: each module's gradient norm, and a copy of
    // its weights to measure the update by.
    void gradients();
    // Closes the step: logs the scalars (e.g. {"loss", ...}, {"lr", ...}), measures
    // |update| / |weight| per module, rewrites the page if write_interval has passed (if that
    // write fails, training goes on and the next one tries again; write() and finish() throw).
    void end_step(const std::vector<std::pair<std::string, double>>& scalars);
    // A scalar at any step (validation loss at the end of an epoch, ...).
    void log(long step, const std::string& name, double value);

    // Attention maps of one kind ("encoder self-attention"): one weights tensor per layer,
    // (B, heads, queries, keys) or (B·heads, queries, keys) with heads given; the first batch
    // element is shown. queries/keys label the rows and columns; masked (queries, keys) or
    // (B, queries, keys), true = not attended, if given, marks the cells the mask hid (the
    // tutorials' own masks: nn::key_padding_mask, nn::decoder_self_mask). Replaces earlier maps
    // of that kind. An Error, with nothing replaced: weights or a mask with a batch of 0 (no
    // element to show), a NaN or infinite weight (named by layer, head, query and key), shapes
    // and labels that do not agree.
    // The page holds every cell as JSON text (~20 bytes, a mask's 2 more), so a map is at most
    // kMaxAttentionTokens queries or keys and kMaxAttentionMapCells cells, and the report at most
    // kMaxAttentionCells cells over all its kinds (a page of 5-7 MB; 1000 × 1000 maps made one of
    // 176 MB): past either, an Error naming the sizes and the limit, nothing replaced. Show the
    // first tokens instead. The tutorials' maps are inside: random_copy shows 32 tokens, 6 layers,
    // 8 heads and 3 kinds (147 456 cells), winter_games 7 tokens.
    static constexpr std::size_t kMaxAttentionTokens = 512;
    static constexpr std::size_t kMaxAttentionMapCells = 128 * 128;
    static constexpr std::size_t kMaxAttentionCells = std::size_t{1} << 18;
    static constexpr std::size_t kMaxAttentionKinds = 64;  // a page's selector lists them all
    void attention(const std::string& kind, const std::vector<Tensor>& layers, const std::vector<std::string>& queries,
                   const std::vector<std::string>& keys, std::size_t heads = 0, const Mask* masked = nullptr);

    // What the run produced, shown at the top of the page: a translation, an accuracy, a sample
    // ("greedy", "我 爱 2022 北京 冬 奥会 E"). Lines keep the order of their first call; a name
    // given again replaces its text. An empty name is an Error.
    void result(const std::string& name, const std::string& text);

    // Writes the page now (live until finish()).
    void write();
    // The run is over: writes the page for the last time, not live. What would change the page
    // after it (begin_step, end_step, log, attention, result, attach, continue_from) is an Error:
    // the last page is written, so it would be lost without a word.
    void finish();
    // The run stopped on an error (a NaN loss, an exception caught by the program): the last
    // page says "error" and the reason instead of "finished". Throws, as finish(), if the page
    // cannot be written.
    void finish_with_error(const std::string& reason);

    // The page's data, as embedded (for tests and tools/report_compare).
    std::string data_json() const;

private:
    struct Impl;
    std::string path_;
    std::unique_ptr<Impl> impl_;
};

// The pages' data and HTML, shared with tools/report_compare.
namespace report {
// The JSON data a report page embeds; throws an Error naming the file if it has none.
std::string read_data(const std::string& html_path);
// Checks that `data` is a report's data as write_comparison reads it: JSON nested at most 16
// deep, valid UTF-8, an object with "scalars", each a list of steps (increasing, 0 to
// RunReport::kMaxStep) with a value for each, and "stats" of that shape if any: what the page's
// script reads (it threw on another shape, and hung on a step past 2^53). An Error starting with `who`
// ("the report data of 'a/report.html'") names the field where text that is not JSON goes wrong.
void check_data(const std::string& data, const std::string& who);
// A page comparing runs (curves overlaid), from the data of each, written atomically.
void write_comparison(const std::string& path, const std::vector<std::pair<std::string, std::string>>& named_data);
}  // namespace report

}  // namespace xtgrad
