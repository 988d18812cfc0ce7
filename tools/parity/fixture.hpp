// Parity fixtures (docs/fixtures.md): a folder of .npy files and a meta.json
// holding one module's PyTorch reference. This is the reading and comparing half of the
// `parity` tool; runners (tools/parity/cases_*.cpp) rebuild each module from the fixture's
// config, run it and hand the tensors to a Report.
#pragma once

#include <xtgrad/autograd/tensor.hpp>
#include <xtgrad/nn/module.hpp>
#include "tools/parity/fixture_meta.hpp"

#include <nlohmann/json.hpp>

#include <climits>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace xtgrad::parity {

struct Tolerance {
    double rtol = 1e-4, atol = 1e-6;
};

class Fixture {
public:
    explicit Fixture(std::string dir);  // reads meta.json (read_fixture_meta); throws Error if absent or malformed

    const std::string& dir() const { return dir_; }
    const json& meta() const { return meta_; }
    std::string case_name() const { return meta_.value("case", ""); }
    std::string module() const { return meta_.value("module", ""); }
    std::string variant() const { return meta_.value("variant", "default"); }
    std::string kind() const { return meta_.value("kind", "module"); }
    const json& config() const;
    json options() const;  // {} when absent
    Tolerance tolerance() const;

    // Files by key (the file name without .npy, e.g. "input.x", "grad.param.weight").
    bool has(const std::string& key) const;
    Array floats(const std::string& key) const;
    Ids ids(const std::string& key) const;
    Mask mask(const std::string& key) const;
    std::string dtype(const std::string& key) const;  // from meta.files; "" if unknown

    // Every param.* file (parameters and buffers) as a state dict.
    nn::NamedTensors state() const;

    // Config values, or an Error naming DIR/meta.json and config.KEY: a whole number in [lowest,
    // highest] (a size or a count unless told), a finite number; a string or bool when present
    // (a value of another type is an Error, never the fallback).
    long cfg_int(const std::string& key, long lowest = 0, long highest = INT_MAX) const;
    double cfg_float(const std::string& key) const;
    std::string cfg_str(const std::string& key, const std::string& fallback = "") const;
    bool cfg_bool(const std::string& key, bool fallback = false) const;
    std::string option(const std::string& key, const std::string& fallback) const;

private:
    std::string path(const std::string& key) const;
    std::string dir_;
    json meta_;
};

struct Comparison {
    std::string name;
    double max_abs = 0, scale = 0, allowed = 0;
    bool passed = true;
    std::string note;  // e.g. "near-zero: compared against the case's gradient scale"
};

class Report {
public:
    void compare(const std::string& name, const Array& got, const Array& ref, const Tolerance& tol, double scale_override = -1,
                 const Allowance& extra = {});
    void compare_exact(const std::string& name, const Ids& got, const Ids& ref);
    void compare_exact(const std::string& name, const Mask& got, const Mask& ref);
    // Equal to within max_ulps float32 steps (0: bit for bit, -0 == +0).
    void compare_ulps(const std::string& name, const Array& got, const Array& ref, long max_ulps);
    void fail(const std::string& name, const std::string& why);
    bool passed() const;
    const std::vector<Comparison>& rows() const { return rows_; }
    std::string summary() const;  // one line per tensor

private:
    std::vector<Comparison> rows_;
};

using Runner = std::function<void(const Fixture&, Report&)>;

void register_runner(const std::string& module_id, Runner runner);
const Runner* find_runner(const std::string& module_id);
std::vector<std::string> registered_modules();

// Whole modules built from a fixture's config (register_module_runner registers them), for the
// "init" fixtures (tools/make_rng_fixtures.py): manual_seed(meta.seed), build, compare the
// trainable parameters with the ones torch drew.
using Builder = std::function<std::shared_ptr<nn::Module>(const Fixture&)>;
void register_builder(const std::string& module_id, Builder build);
const Builder* find_builder(const std::string& module_id);

// Runs one fixture folder. `supported` is false when no runner knows its module.
struct Outcome {
    std::string case_name, module;
    bool supported = false;
    Report report;
    std::string error;  // an exception thrown while running
    bool passed() const { return supported && error.empty() && report.passed(); }
};
Outcome run_fixture(const std::string& dir);

// The case folders under a suite root (those holding a meta.json), sorted.
std::vector<std::string> case_dirs(const std::string& root);

}  // namespace xtgrad::parity
