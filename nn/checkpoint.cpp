#include <xtgrad/nn/checkpoint.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/nn/run_fields.hpp>
#include <xtgrad/io/safetensors.hpp>
#include <xtgrad/autograd/utf8_text.hpp>

#include <limits>
#include <set>
#include <string_view>

namespace xtgrad::nn {

namespace {

// A run's optimizer entries are "optimizer." + the optimizer's own names, which all begin with
// "state." (Optimizer::state_dict): a file's entries under "optimizer.state." are the run's, so a
// model with a child module named "optimizer" keeps its "optimizer.weight".
const std::string kRunKey = "xtgrad.run", kOptimizerPrefix = "optimizer.", kOptimizerStatePrefix = "optimizer.state.";

bool is_optimizer_entry(const std::string& name) { return name.rfind(kOptimizerStatePrefix, 0) == 0; }

std::string to_hex(const std::vector<std::uint8_t>& bytes) {
    static const char* digits = "0123456789abcdef";
    std::string out;
    out.reserve(bytes.size() * 2);
    for (std::uint8_t b : bytes) {
        out += digits[b >> 4];
        out += digits[b & 15];
    }
    return out;
}

std::vector<std::uint8_t> from_hex(const std::string& text, const std::string& what) {
    auto nibble = [&](std::size_t i) -> std::uint8_t {
        const char c = text[i];
        if (c >= '0' && c <= '9') return static_cast<std::uint8_t>(c - '0');
        if (c >= 'a' && c <= 'f') return static_cast<std::uint8_t>(c - 'a' + 10);
        // the byte escaped: a NUL would end the message, a stray UTF-8 byte make it no text
        fail("{}: not lowercase hex (byte {}: '{}')", what, i, escaped_for_message(std::string_view(&text[i], 1), false));
    };
    if (text.size() % 2 != 0) fail("{}: odd number of hex digits ({})", what, text.size());
    std::vector<std::uint8_t> out(text.size() / 2);
    for (std::size_t i = 0; i < out.size(); ++i)
        out[i] = static_cast<std::uint8_t>(nibble(2 * i) << 4 | nibble(2 * i + 1));
    return out;
}

}  // namespace

void save(const Module& module, const std::string& path, const std::map<std::string, std::string>& metadata) {
    save_run(path, module, RunState{}, metadata);
}

namespace {

// What load_run would refuse, refused before anything is written: a saved run always resumes.
void check_run_to_save(const std::string& path, const Module& module, const RunState& run,
                       const std::map<std::string, std::string>& metadata, bool is_run) {
    if (metadata.count(kRunKey))
        fail("save '{}': metadata entry '{}' is xtgrad's own run marker; a RunState makes a run checkpoint", path,
             kRunKey);
    if (!is_run) return;
    if (run.epoch < 0) fail("save '{}': epoch {} must be >= 0 (epochs or steps done)", path, run.epoch);
    std::set<std::string> names;
    for (const auto& [name, gen] : run.generators) {
        if (gen == nullptr) fail("save '{}': generator '{}' is a null pointer", path, name);
        if (!names.insert(name).second)
            fail("save '{}': two generators are named '{}'; load_run could not tell their states apart", path, name);
    }
    if (run.optimizer)
        for (const auto& [name, t] : module.state_dict())
            if (is_optimizer_entry(name))
                fail("save '{}': the model's entry '{}' begins with '{}', where a run checkpoint keeps the optimizer's "
                     "state; rename that module", path, name, kOptimizerStatePrefix);
}

}  // namespace

void save_run(const std::string& path, const Module& module, const RunState& run,
              const std::map<std::string, std::string>& metadata) {
    const bool is_run = run.optimizer || run.schedule || !run.generators.empty() || run.epoch != 0;
    check_run_to_save(path, module, run, metadata, is_run);
    NamedArrays arrays;
    for (const auto& [name, t] : module.state_dict()) arrays.emplace_back(name, t.data());
    std::map<std::string, std::string> meta = metadata;
    if (is_run) {
        meta.insert_or_assign(kRunKey, std::string("1"));
        meta.insert_or_assign("epoch", std::to_string(run.epoch));
        if (run.optimizer) {
            optim::OptimizerState o = run.optimizer->state_dict();
            detail::check_optimizer_entries("save", path, o.tensors, run.epoch);
            for (auto& [name, a] : o.tensors) arrays.emplace_back(fmt::format("{}{}", kOptimizerPrefix, name), std::move(a));
            meta.insert_or_assign("optimizer.param_groups", o.param_groups);
        }
        if (run.schedule) meta.insert_or_assign("schedule", run.schedule->state_dict());
        for (const auto& [name, gen] : run.generators) meta.insert_or_assign(fmt::format("generator.{}", name), to_hex(gen->state()));
    }
    meta.emplace("format", std::string("pt"));  // what PyTorch's safetensors loader expects
    save_safetensors(path, arrays, meta);
}

namespace {

// The file's model entries (its run state set aside), loaded into the module.
void load_model(Module& module, NamedArrays& tensors, bool is_run, bool strict, const std::string& path) {
    NamedTensors state;
    for (auto& [name, a] : tensors)
        if (!is_run || !is_optimizer_entry(name)) state.emplace_back(name, Tensor(std::move(a)));
    try {
        module.load_state_dict(state, strict);
    } catch (const Error& e) {
        fail("load '{}': {}", path, e.what());
    }
}

}  // namespace

std::map<std::string, std::string> load(Module& module, const std::string& path, bool strict) {
    SafetensorsFile file = load_safetensors(path);
    load_model(module, file.tensors, file.metadata.count(kRunKey) != 0, strict, path);
    return file.metadata;
}

namespace {

// What load_run changes, as it was before: put back whole if anything fails.
class RunSnapshot {
public:
    RunSnapshot(const Module& module, const RunState& run) : run_(run) {
        for (const auto& [name, t] : module.state_dict()) model_.emplace_back(name, t.data());
        if (run.optimizer) optimizer_ = run.optimizer->local_state_dict();
        if (run.schedule) schedule_ = run.schedule->state_dict();
    }
    void restore(Module& module, const std::string& path) {
        load_model(module, model_, false, true, path);
        if (run_.optimizer) run_.optimizer->load_state_dict(optimizer_);
        if (run_.schedule) run_.schedule->load_state_dict(schedule_);
    }

private:
    const RunState& run_;
    NamedArrays model_;
    optim::OptimizerState optimizer_;
    std::string schedule_;
};

// A run file's run state, read and checked (through RunFields) before anything is changed.
struct FileRun {
    long epoch = 0;
    std::vector<Generator> generators;  // in the order of RunState::generators
    optim::OptimizerState optimizer;
    std::string schedule;
};

FileRun read_run_fields(const std::string& path, const SafetensorsFile& file, const RunState& run) {
    const detail::RunFields fields(path, file.metadata);
    FileRun out;
    out.epoch = fields.whole_number("epoch", 0, std::numeric_limits<long>::max());
    for (const auto& [name, gen] : run.generators) {
        const std::string key = fmt::format("generator.{}", name);
        const std::string what = fmt::format("load '{}': metadata entry '{}'", path, key);
        const std::vector<std::uint8_t> state = from_hex(fields.text(key), what);
        try {
            out.generators.emplace_back().set_state(state);
        } catch (const Error& e) {
            fail("{}: {}", what, e.what());  // which generator, of several
        }
    }
    if (run.optimizer) {
        out.optimizer.param_groups = fields.param_groups();
        for (const auto& [name, a] : file.tensors)
            if (is_optimizer_entry(name)) out.optimizer.tensors.emplace_back(name.substr(kOptimizerPrefix.size()), a);
    }
    if (run.schedule) out.schedule = fields.schedule();
    return out;
}

}  // namespace

LoadedRun load_run(const std::string& path, Module& module, RunState& run) {
    SafetensorsFile file = load_safetensors(path);
    LoadedRun out;
    out.has_run_state = file.metadata.count(kRunKey) != 0;
    if (!out.has_run_state) {
        load_model(module, file.tensors, false, true, path);
        out.metadata = std::move(file.metadata);
        return out;
    }
    // Read and check every field the run needs, through RunFields, before anything changes.
    FileRun loaded;
    try {
        loaded = read_run_fields(path, file, run);
    } catch (const Error& e) {
        if (std::string_view(e.what()).starts_with("load '")) throw;
        fail("load '{}': {}", path, e.what());
    } catch (const nlohmann::json::exception& e) {  // RunFields checks types first: a gap there, still an Error
        fail("load '{}': {}", path, e.what());
    }

    // All or nothing: the model, optimizer and schedule are put back if any part does not fit;
    // the generators and the epoch change only after everything else did.
    RunSnapshot before(module, run);
    try {
        load_model(module, file.tensors, true, true, path);
        if (run.optimizer) {
            run.optimizer->load_state_dict(loaded.optimizer);  // checks every hyperparameter and entry
            detail::check_optimizer_entries("load", path, loaded.optimizer.tensors, loaded.epoch);
        }
        if (run.schedule) run.schedule->load_state_dict(loaded.schedule);
    } catch (const std::exception& e) {
        before.restore(module, path);
        const std::string why = e.what();
        if (why.rfind("load '", 0) == 0) throw Error(why);
        fail("load '{}': {}", path, why);
    }
    for (std::size_t i = 0; i < loaded.generators.size(); ++i) *run.generators[i].second = loaded.generators[i];
    run.epoch = loaded.epoch;
    out.metadata = std::move(file.metadata);
    return out;
}

}  // namespace xtgrad::nn
