#include "examples/common/training.hpp"

#include "examples/common/file_identity.hpp"
#include <xtgrad/io/safetensors.hpp>

#include <filesystem>
#include <unistd.h>

namespace xtgrad::examples {

namespace fs = std::filesystem;

void require_writable_folder(const std::string& dir, const std::string& option) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec || !fs::is_directory(dir)) cli::usage_error("{} '{}': cannot create the folder ({})", option, dir, ec ? ec.message() : "a file is in the way");
    if (::access(dir.c_str(), W_OK | X_OK) != 0) cli::usage_error("{} '{}': the folder cannot be written", option, dir);
}

void require_regular_file(const std::string& path, const std::string& option) {
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);
    if (!fs::exists(st)) cli::usage_error("{} '{}': no such file", option, path);
    if (!fs::is_regular_file(st))
        cli::usage_error("{} '{}': not a regular file (a {})", option, path,
                         fs::is_directory(st) ? "folder" : fs::is_fifo(st) ? "fifo" : "special file");
    if (::access(path.c_str(), R_OK) != 0) cli::usage_error("{} '{}': the file cannot be read", option, path);
}

void require_writable_parent(const std::string& path, const std::string& option) {
    if (path.empty() || path.back() == '/') cli::usage_error("{} '{}': needs a file name", option, path);
    const fs::path parent = fs::path(path).parent_path();
    require_writable_folder(parent.empty() ? "." : parent.string(), option);
    if (fs::is_directory(path)) cli::usage_error("{} '{}': is a folder", option, path);
}

void require_writable_file(const std::string& path, const std::string& option) {
    require_writable_parent(path, option);
    std::error_code ec;
    if (fs::is_symlink(fs::symlink_status(path, ec)) && !fs::exists(fs::status(path, ec)))
        cli::usage_error("{} '{}': a symbolic link to nothing that exists (or a loop of them); only a regular file or "
                         "a new path is written", option, path);
    const fs::file_status st = fs::status(path, ec);  // through symbolic links, as the writer goes
    if (fs::exists(st) && !fs::is_regular_file(st))
        cli::usage_error("{} '{}': not a regular file (a {}); only a regular file or a new path is written", option, path,
                         fs::is_directory(st) ? "folder" : fs::is_fifo(st) ? "fifo"
                         : fs::is_character_file(st) ? "character device" : "special file");
}

void require_model_budget(double parameters, const std::string& what) {
    const double bytes = parameters * 16;  // value, gradient, Adam's two moments
    constexpr double kBudget = 64.0 * (1ull << 30);
    if (!(bytes <= kBudget))
        cli::usage_error("{}: {:.3g} parameters would need {:.3g} GiB for training (the limit is 64 GiB)", what, parameters,
                         bytes / (1ull << 30));
}

void add_run_options(CLI::App& app, RunOptions& o, const std::string& unit) {
    app.add_option("--resume", o.resume,
                   fmt::format("continue from this checkpoint: a run checkpoint restores the model, Adam's state, the "
                               "schedule, the {} count and the generators, so the run goes on bit-identically; a "
                               "model-only file (e.g. written by PyTorch, or by --save-init) starts a fresh run from "
                               "its weights",
                               unit));
    app.add_option("--save-init", o.save_init,
                   "write the seeded initial state_dict (model-only safetensors) to this file before training");
    app.add_option("--save-every", o.save_every,
                   fmt::format("also save the run checkpoint every N {}s (0: only at the end)", unit))
        ->capture_default_str()
        ->transform(cli::count_at_least(0));
    app.add_flag("--detect-anomaly", o.detect_anomaly,
                 "when a loss or gradient norm is not finite, re-run that step in anomaly mode (AnomalyGuard) to "
                 "name the op and the module where the NaN/Inf is born");
    app.add_flag("--no-report", o.no_report,
                 "do not write OUT/report.html, the run's page (loss and learning rate per step, per-module gradient "
                 "norms and update ratios, activations, attention maps, the backward graph; docs/report.md), which is "
                 "otherwise rewritten every few seconds while training");
}

void add_total_option(CLI::App& app, long& total, const std::string& unit, const std::string& what) {
    app.add_option(fmt::format("--{}s", unit), total,
                   fmt::format("total {}s ({}); with --resume, including those already done (equal: only evaluate)",
                               unit, what))
        ->capture_default_str()
        ->transform(cli::count_in(0, 1 << 24));  // optimizer steps are kept as float32: exact to 2^24
}

std::string non_finite_name(double v) { return std::isnan(v) ? "NaN" : v > 0 ? "Inf" : "-Inf"; }

TrainingRun::TrainingRun(const RunOptions& options, std::string unit, std::string checkpoint, nn::Module& model,
                         nn::RunState run, std::map<std::string, std::string> metadata)
    : options_(options), unit_(std::move(unit)), checkpoint_(std::move(checkpoint)), model_(model), run_(std::move(run)),
      metadata_(std::move(metadata)) {
    if (!run_.optimizer) fail("TrainingRun: needs an optimizer");
    checkpoint_before_ = stamp_of(checkpoint_);
}

namespace {

const std::string kRunCheckpointKey = "xtgrad.run";

// The metadata of the file at `path` if it is a safetensors file, else nothing.
std::optional<std::map<std::string, std::string>> safetensors_metadata_of(const std::string& path) {
    try {
        return load_safetensors_metadata(path);
    } catch (const Error&) {
        return std::nullopt;
    }
}

}  // namespace

void TrainingRun::check_options(long total) const {
    if (options_.resume.empty() && total < 1) cli::usage_error("--{}s must be >= 1 (got {}); 0 only with --resume", unit_, total);
    if (!options_.resume.empty()) require_regular_file(options_.resume, "--resume");
    if (!options_.save_init.empty()) check_save_init();
    if (checkpoint_.empty() && options_.save_every > 0) cli::usage_error("--save-every needs --out (where to save)");
    // the checkpoint is written after training: a path it can never be written to is refused now
    if (!checkpoint_.empty() && options_.writes) require_writable_file(checkpoint_, "--out");
}

// A new run (not --resume of this very file) whose checkpoint path holds another run: that run
// is kept beside it as NAME.previous at this run's first save, never overwritten unseen.
std::string TrainingRun::replaced_run() const {
    if (checkpoint_.empty() || !options_.writes || !checkpoint_before_ || same_file(checkpoint_, options_.resume)) return {};
    const auto meta = safetensors_metadata_of(checkpoint_);
    if (!meta || meta->count(kRunCheckpointKey) == 0) return {};
    return fmt::format("{} {}", unit_, meta->count("epoch") ? meta->at("epoch") : "?");
}

void TrainingRun::keep_replaced_run() {
    if (replaced_.empty()) return;
    std::error_code ec;
    const fs::path target = fs::canonical(checkpoint_, ec);  // through a symbolic link, as the writer goes
    if (ec) return;  // gone since the run began: nothing left to keep
    const fs::path previous = target.string() + ".previous";
    fs::remove(previous, ec);
    fs::create_hard_link(target, previous, ec);  // the old file's blocks, no copy
    if (ec) fs::copy_file(target, previous, fs::copy_options::overwrite_existing, ec);
    if (ec)  // the save does not go over a run it could not keep
        fail("cannot keep the run {} holds ({}) as {} ({}), so it is not replaced", cli::shown(checkpoint_), replaced_,
             cli::shown(previous.string()), ec.message());
    const std::string shown = fs::is_symlink(checkpoint_) ? previous.string() : checkpoint_ + ".previous";
    fmt::print("kept the run {} held ({}) as {}\n", cli::shown(checkpoint_), replaced_, cli::shown(shown));
    replaced_.clear();
}

// --save-init is written before --resume is read: it must never land on a run's file.
void TrainingRun::check_save_init() const {
    const std::string& path = options_.save_init;
    require_writable_file(path, "--save-init");
    if (same_file(path, options_.resume))
        cli::usage_error("--save-init '{}' is the --resume file '{}': the initial weights would replace the run it "
                         "resumes (give --save-init another file)", path, options_.resume);
    if (same_file(path, checkpoint_))
        cli::usage_error("--save-init '{}' is this run's checkpoint '{}': give --save-init another file", path, checkpoint_);
    const auto meta = safetensors_metadata_of(path);
    if (meta && meta->count(kRunCheckpointKey) != 0)
        cli::usage_error("--save-init '{}' holds a training run ({} {}); the initial weights never overwrite one (give "
                         "--save-init another file)", path, meta->count("epoch") ? meta->at("epoch") : "?",
                         "epochs or steps done");
}

// Each option recorded in the run must equal this command's, except the learning rate, which
// a resumed run may change (docs/checkpoints.md). Checked before the file is loaded, so that a
// model of other sizes is a usage error naming the option rather than a shape mismatch.
void TrainingRun::check_same_options(const std::map<std::string, std::string>& file) const {
    for (const auto& [key, value] : metadata_) {
        const auto it = file.find(key);
        if (key == kLrKey || it == file.end() || it->second == value) continue;
        cli::usage_error("--resume {}: that run has --{} {}, this command --{} {} (pass the same options to continue "
                         "it; only --lr may change)", options_.resume, key, it->second, key, value);
    }
}

long TrainingRun::start(long total) {
    replaced_ = replaced_run();
    const long done = resume(total);
    if (done == total) replaced_.clear();  // nothing trained: nothing saved over it
    if (!replaced_.empty())
        fmt::print("{} holds another run ({}): this run replaces it at its first save and keeps it as {}.previous "
                   "(--resume {} continues it instead)\n", cli::shown(checkpoint_), replaced_, cli::shown(checkpoint_),
                   cli::shown(checkpoint_));
    return done;
}

long TrainingRun::resume(long total) {
    if (!options_.save_init.empty() && options_.writes) {
        nn::save(model_, options_.save_init, {{"what", "initial state_dict"}});
        fmt::print("saved the initial weights to {}\n", options_.save_init);
    }
    if (options_.resume.empty()) return 0;
    const std::map<std::string, std::string> file = load_safetensors_metadata(options_.resume);
    if (file.count(kRunCheckpointKey) != 0) check_same_options(file);
    const nn::LoadedRun loaded = nn::load_run(options_.resume, model_, run_);
    if (!loaded.has_run_state) {
        fmt::print("resumed from {} (model only: weights loaded; fresh optimizer, {} 0)\n", options_.resume, unit_);
        return 0;
    }
    if (total < run_.epoch)
        cli::usage_error("--{}s {} is fewer than the {} {}s already done in {} (--{}s is the total)", unit_, total,
                         run_.epoch, unit_, options_.resume, unit_);
    fmt::print("resumed from {} ({} {} done)\n", options_.resume, unit_, run_.epoch);
    apply_lr(file);
    keep_earlier_page();
    return run_.epoch;
}

void TrainingRun::start_report(const std::string& out, RunReport::Options options) {
    if (out.empty() || options_.no_report || !options_.writes) return;
    // a folder or fifo there made finish() fail only after the whole training: refused before it
    require_writable_file(out + "/report.html", "--out");
    report_ = std::make_unique<RunReport>(out + "/report.html", std::move(options));
    report_->attach(model_);
}

// The page of the run --resume continues (report.html next to its checkpoint) gives this page
// its steps up to the resume. A page that is missing or unreadable costs only those steps: said,
// and the run goes on.
void TrainingRun::keep_earlier_page() {
    if (!report_->enabled()) return;
    const std::string page = (std::filesystem::path(options_.resume).parent_path() / "report.html").string();
    if (!std::filesystem::is_regular_file(page)) {  // a fifo there is no page either (and would block a reader)
        fmt::print("no {} (a regular file) beside the resumed run: this run's page starts at {} {}\n", page, unit_, run_.epoch + 1);
        return;
    }
    try {
        report_->continue_from(report::read_data(page), run_.epoch);
    } catch (const Error& e) {
        fmt::print("the resumed run's page is not kept ({}): this run's page starts at {} {}\n", e.what(), unit_,
                   run_.epoch + 1);
    }
}

// The command's --lr (metadata "lr", written with fmt's shortest round-trip form) replaces the
// run's from the next step on; said when it differs.
void TrainingRun::apply_lr(const std::map<std::string, std::string>& file) {
    const auto mine = metadata_.find(kLrKey);
    if (mine == metadata_.end()) return;
    // With a schedule the lr comes from its function of the command's --lr at the next step.
    if (!run_.schedule) run_.optimizer->set_lr(std::stod(mine->second));
    const auto theirs = file.find(kLrKey);
    if (theirs != file.end() && theirs->second != mine->second)
        fmt::print("--lr {} replaces the run's {} from {} {} on\n", mine->second, theirs->second, unit_, run_.epoch + 1);
}

namespace {

std::string size_text(double bytes) {
    if (bytes >= 1e9) return fmt::format("{:.1f} GB", bytes / 1e9);
    if (bytes >= 1e6) return fmt::format("{:.0f} MB", bytes / 1e6);
    if (bytes >= 1e3) return fmt::format("{:.0f} kB", bytes / 1e3);
    return fmt::format("{:.0f} bytes", bytes);
}

std::string count_text(double n) { return n >= 1e6 ? fmt::format("the {:.1f} M", n / 1e6) : fmt::format("the {:.0f}", n); }

}  // namespace

std::string TrainingRun::files_summary() const {
    std::string out;
    if (report_->enabled()) out += fmt::format("report: {} (open it in a browser)\n", cli::shown(report_->path()));
    if (last_saved_ < 0) return out;
    std::error_code error;
    const std::uintmax_t bytes = std::filesystem::file_size(checkpoint_, error);
    if (error) return out + fmt::format("saved {}\n", cli::shown(checkpoint_));
    std::size_t weights = 0;
    for (const Tensor& p : model_.parameters()) weights += p.numel();
    if (run_.epoch == 0)  // a model-only file resumed and nothing trained: no optimizer state yet
        return out + fmt::format("saved {} ({}: {} weights; no optimizer state yet)\n", cli::shown(checkpoint_),
                                 size_text(static_cast<double>(bytes)), count_text(static_cast<double>(weights)));
    // Adam keeps two moments per weight: a resumable run file is ~3x the weights alone.
    out += fmt::format("saved {} ({}: {} weights and the optimizer's state, what --resume needs to go on bit for bit; "
                       "the weights alone are {})\n",
                       cli::shown(checkpoint_), size_text(static_cast<double>(bytes)), count_text(static_cast<double>(weights)),
                       size_text(static_cast<double>(weights) * 4));
    return out;
}

void TrainingRun::save_now() {
    if (checkpoint_.empty() || !options_.writes) return;  // a program run without --out, or not rank 0
    keep_replaced_run();
    nn::save_run(checkpoint_, model_, run_, metadata_);
    last_saved_ = run_.epoch;
}

void TrainingRun::finish_untrained() {
    if (checkpoint_.empty() || !options_.writes) return;
    if (stamp_of(checkpoint_)) {  // the resumed file itself, or another run's: evaluating changes neither
        fmt::print("nothing left to train: {} is left as it was\n", cli::shown(checkpoint_));
        return;
    }
    save_now();  // a new path: it holds the resumed run, to go on from later
}

void TrainingRun::done(long n, long total) {
    run_.epoch = n;
    if (n == total || (options_.save_every > 0 && n % options_.save_every == 0)) save_now();
}

namespace {
// The Error that ends a run; the report page (if any) ends with the same reason (the step and the
// value), not only "error".
[[noreturn]] void end_run_with_error(RunReport* report, const std::string& reason) {
    if (report) {
        try {
            report->finish_with_error(reason);
        } catch (const Error& e) {
            throw Error(fmt::format("{}\n(the report page could not say so: {})", reason, e.what()));
        }
    }
    throw Error(reason);
}
}  // namespace

void TrainingRun::stop(long n, const std::string& what, const std::vector<std::vector<std::uint8_t>>& rng,
                                  const std::function<void()>& rerun) {
    std::string msg = fmt::format("{} {}: {}; training stopped before the optimizer step. ", unit_, n, what);
    // What is said about the checkpoint file is checked against the file itself.
    const bool unchanged = checkpoint_before_ && stamp_of(checkpoint_) == checkpoint_before_;
    msg += last_saved_ >= 0 ? fmt::format("The last good checkpoint, {} ({} {}), is kept.", checkpoint_, unit_, last_saved_)
                            : fmt::format("This run saved no checkpoint{}.",
                                          unchanged ? fmt::format("; {} is left as it was", checkpoint_) : std::string());
    if (!options_.detect_anomaly) end_run_with_error(report_.get(), fmt::format("{}\nRun with --detect-anomaly to find the op where it is born.", msg));
    for (std::size_t i = 0; i < rng.size(); ++i) run_.generators[i].second->set_state(rng[i]);  // the same dropout masks
    run_.optimizer->zero_grad();
    try {
        AnomalyGuard guard;
        rerun();
    } catch (const Error& e) {
        end_run_with_error(report_.get(), fmt::format("{}\nanomaly mode, re-running {} {}: {}", msg, unit_, n, e.what()));
    }
    end_run_with_error(report_.get(), fmt::format("{}\nanomaly mode, re-running {} {}: no op produced a NaN or an invalid infinity", msg, unit_, n));
}

}  // namespace xtgrad::examples
