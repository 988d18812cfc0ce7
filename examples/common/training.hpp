// What the training examples share around their own loop: the run options (--resume,
// --save-init, --save-every, --detect-anomaly, --no-report), the checks made before any training
// starts, checkpoints that hold the whole run (nn::save_run), a step that stops on a non-finite
// loss or gradient norm instead of training on garbage, and the run's report page
// (OUT/report.html, report/run_report.hpp).
#pragma once

#include <xtgrad/autograd/anomaly.hpp>
#include <xtgrad/autograd/error.hpp>
#include "examples/common/cli.hpp"
#include "examples/common/file_identity.hpp"
#include <xtgrad/nn/checkpoint.hpp>
#include <xtgrad/report/run_report.hpp>

#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace xtgrad::examples {

// Usage checks (cli::UsageError, exit 2), made before any training.
void require_writable_folder(const std::string& dir, const std::string& option);   // creates it, writes a probe file
void require_regular_file(const std::string& path, const std::string& option);     // not missing, a folder or a fifo
void require_writable_parent(const std::string& path, const std::string& option);  // the file's folder can be written
void require_writable_file(const std::string& path, const std::string& option);    // ... and it is a regular file or new
// A model of this many parameters (with Adam: 4 floats each, 16 bytes) must fit a sane budget.
void require_model_budget(double parameters, const std::string& what);

struct RunOptions {
    std::string resume, save_init;
    long save_every = 0;
    bool detect_anomaly = false;
    bool no_report = false;
    bool writes = true;  // false on the ranks other than 0 of a data-parallel run: they never write a file
};
// unit: "epoch" or "step", the count that --epochs / --steps totals.
void add_run_options(CLI::App& app, RunOptions& options, const std::string& unit);
// --epochs / --steps: the run's total, what counting it means (`what`), 0 only with --resume.
void add_total_option(CLI::App& app, long& total, const std::string& unit, const std::string& what);

// One training run: resumes, saves, and runs checked steps. `run` names the optimizer,
// schedule and generators the checkpoint holds.
class TrainingRun {
public:
    TrainingRun(const RunOptions& options, std::string unit, std::string checkpoint, nn::Module& model, nn::RunState run,
                std::map<std::string, std::string> metadata);

    // Before any training: the option checks that need no model (total >= 1 unless --resume,
    // --resume a regular file, --save-init's folder writable); the checkpoint's folder must be
    // writable already.
    void check_options(long total) const;
    // Writes --save-init (the seeded initial state_dict), then loads --resume. Returns the
    // count already done (0 for a fresh run or a model-only file); total must be >= it, and
    // the run's metadata (the options that define the run: seed, sizes, dropout...) must equal
    // this command's, except "lr": the command's learning rate applies from the next step on.
    long start(long total);
    // schedule.step, zero_grad, forward_backward() (returns the loss tensor after its backward),
    // then opt.step only if the loss and the gradient norm are finite and no op threw.
    template <typename ForwardBackward>
    double step(long n, ForwardBackward&& forward_backward);
    // After step n of total: saves every --save-every and at the end (n == total).
    void done(long n, long total);
    // Saves the run now (done() calls it; so does a program that saves mid-run).
    void save_now();
    // At the end of a run that had nothing left to do (total == the resumed count): saves only to a
    // new path; a file already there (the resumed run, or another) is left as it was.
    void finish_untrained();
    const std::string& checkpoint() const { return checkpoint_; }
    // The run's files, for the end of its output: where its page is, and the checkpoint with
    // its size and what fills it (a run file holds the optimizer's state too: several times the
    // weights). Empty when it wrote neither.
    std::string files_summary() const;

    // The metadata key of the learning rate, the one option a resumed run may change.
    static constexpr const char* kLrKey = "lr";

    // The report page OUT/report.html, updated every few seconds while training (off with
    // --no-report, without an output folder, or on a rank other than 0): attaches the model.
    void start_report(const std::string& out, RunReport::Options options);
    // The report (off until start_report): steps are logged by step(); attention maps by the example.
    RunReport& report() { return *report_; }
    // What forward_backward calls instead of loss.backward(): the report keeps the first graph.
    void backward(const Tensor& loss) { report_->backward(loss); }

private:
    long resume(long total);  // start() but for the note on a run it replaces
    void check_save_init() const;
    std::string replaced_run() const;  // "epoch 4" when the checkpoint path holds another run, else ""
    void keep_replaced_run();          // that run linked to NAME.previous, before the first save over it
    void check_same_options(const std::map<std::string, std::string>& file) const;
    void apply_lr(const std::map<std::string, std::string>& file);
    void keep_earlier_page();
    // Throws the Error that ends the run at step n: what went wrong, that nothing was saved
    // after it, and (--detect-anomaly) what anomaly mode finds re-running the step.
    [[noreturn]] void stop(long n, const std::string& what, const std::vector<std::vector<std::uint8_t>>& rng,
                                      const std::function<void()>& rerun);
    const RunOptions& options_;
    std::string unit_, checkpoint_;
    nn::Module& model_;
    nn::RunState run_;
    std::map<std::string, std::string> metadata_;
    long last_saved_ = -1;
    std::unique_ptr<RunReport> report_ = std::make_unique<RunReport>("");
    std::optional<FileStamp> checkpoint_before_;  // the checkpoint file as this run found it
    std::string replaced_;                         // replaced_run() until that run is kept aside
};

// "NaN", "Inf", "-Inf"
std::string non_finite_name(double v);

template <typename ForwardBackward>
double TrainingRun::step(long n, ForwardBackward&& forward_backward) {
    std::vector<std::vector<std::uint8_t>> rng;  // for a --detect-anomaly re-run of this very step
    for (const auto& [name, gen] : run_.generators) rng.push_back(gen->state());
    if (run_.schedule) run_.schedule->step();
    run_.optimizer->zero_grad();
    report_->begin_step(n);
    const std::function<void()> rerun = [&] { forward_backward(); };
    double loss = 0, norm = 0;
    try {
        loss = forward_backward().item();
        norm = optim::grad_norm(run_.optimizer->params());
    } catch (const Error& e) {  // an op refused its input (e.g. overflowed scores): the same stop
        stop(n, e.what(), rng, rerun);
    }
    if (!std::isfinite(loss) || !std::isfinite(norm)) {
        const std::string what = !std::isfinite(loss) ? fmt::format("the loss is {}", non_finite_name(loss))
                                                      : fmt::format("the loss is {:g} but the gradient norm is {}", loss,
                                                                    non_finite_name(norm));
        stop(n, what, rng, rerun);
    }
    report_->gradients();
    run_.optimizer->step();
    report_->end_step({{"loss", loss}, {"lr", run_.optimizer->lr()}});
    return loss;
}

}  // namespace xtgrad::examples
