#include "nn/checkpoint.hpp"

#include "autograd/error.hpp"
#include "nn/safetensors.hpp"

namespace xtgrad::nn {

namespace {

const std::string kRunKey = "xtgrad.run", kOptimizerPrefix = "optimizer.";

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
    auto nibble = [&](char c) -> std::uint8_t {
        if (c >= '0' && c <= '9') return static_cast<std::uint8_t>(c - '0');
        if (c >= 'a' && c <= 'f') return static_cast<std::uint8_t>(c - 'a' + 10);
        fail("{}: not lowercase hex (character '{}')", what, c);
    };
    if (text.size() % 2 != 0) fail("{}: odd number of hex digits ({})", what, text.size());
    std::vector<std::uint8_t> out(text.size() / 2);
    for (std::size_t i = 0; i < out.size(); ++i)
        out[i] = static_cast<std::uint8_t>(nibble(text[2 * i]) << 4 | nibble(text[2 * i + 1]));
    return out;
}

const std::string& required(const std::map<std::string, std::string>& meta, const std::string& key, const std::string& path) {
    auto it = meta.find(key);
    if (it == meta.end()) fail("load '{}': a run checkpoint without the metadata entry '{}'", path, key);
    return it->second;
}

long parse_epoch(const std::string& text, const std::string& path) {
    std::size_t used = 0;
    long epoch = -1;
    try {
        epoch = std::stol(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != text.size() || epoch < 0) fail("load '{}': epoch '{}' is not a whole number >= 0", path, text);
    return epoch;
}

}  // namespace

void save(const Module& module, const std::string& path, const std::map<std::string, std::string>& metadata) {
    save_run(path, module, RunState{}, metadata);
}

void save_run(const std::string& path, const Module& module, const RunState& run,
              const std::map<std::string, std::string>& metadata) {
    NamedArrays arrays;
    for (const auto& [name, t] : module.state_dict()) arrays.emplace_back(name, t.data());
    std::map<std::string, std::string> meta = metadata;
    const bool is_run = run.optimizer || run.schedule || !run.generators.empty() || run.epoch != 0;
    if (is_run) {
        meta.insert_or_assign(kRunKey, std::string("1"));
        meta.insert_or_assign("epoch", std::to_string(run.epoch));
        if (run.optimizer) {
            optim::OptimizerState o = run.optimizer->state_dict();
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
        if (!is_run || name.rfind(kOptimizerPrefix, 0) != 0) state.emplace_back(name, Tensor(std::move(a)));
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

LoadedRun load_run(const std::string& path, Module& module, RunState& run) {
    SafetensorsFile file = load_safetensors(path);
    LoadedRun out;
    out.has_run_state = file.metadata.count(kRunKey) != 0;
    if (!out.has_run_state) {
        load_model(module, file.tensors, false, true, path);
        out.metadata = std::move(file.metadata);
        return out;
    }
    // Read and check everything the run needs before anything changes.
    const long epoch = parse_epoch(required(file.metadata, "epoch", path), path);
    std::vector<std::vector<std::uint8_t>> generator_states;
    for (const auto& [name, gen] : run.generators) {
        const std::string key = fmt::format("generator.{}", name);
        generator_states.push_back(from_hex(required(file.metadata, key, path), key));
    }
    optim::OptimizerState opt_state;
    if (run.optimizer) {
        opt_state.param_groups = required(file.metadata, "optimizer.param_groups", path);
        for (const auto& [name, a] : file.tensors)
            if (name.rfind(kOptimizerPrefix, 0) == 0) opt_state.tensors.emplace_back(name.substr(kOptimizerPrefix.size()), a);
    }
    const std::string schedule = run.schedule ? required(file.metadata, "schedule", path) : "";

    // The model first (all or nothing); if the run state then does not fit, the model's
    // previous values are put back.
    NamedArrays previous;
    for (const auto& [name, t] : module.state_dict()) previous.emplace_back(name, t.data());
    load_model(module, file.tensors, true, true, path);
    try {
        std::vector<Generator> checked;
        for (const auto& bytes : generator_states) checked.emplace_back().set_state(bytes);
        if (run.optimizer) run.optimizer->load_state_dict(opt_state);
        if (run.schedule) run.schedule->load_state_dict(schedule);
        for (std::size_t i = 0; i < checked.size(); ++i) *run.generators[i].second = checked[i];
    } catch (const Error& e) {
        load_model(module, previous, false, true, path);
        fail("load '{}': {}", path, e.what());
    }
    run.epoch = epoch;
    out.metadata = std::move(file.metadata);
    return out;
}

}  // namespace xtgrad::nn
