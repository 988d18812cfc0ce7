// The one path by which a run checkpoint's metadata fields are read (nn/checkpoint.cpp): every
// field a file supplies is looked up, bounded and type-checked here, and every failure is an
// xtgrad::Error naming the file and the field. JSON fields (the optimizer's param_groups, the
// schedule's state) have their nesting counted before any parser or dump() recurses into them,
// and are checked against what this program's optimizer writes itself before they reach it.
#pragma once

#include "optim/optimizer.hpp"

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

namespace xtgrad::nn::detail {

class RunFields {
public:
    // JSON fields nest at most this deep (param_groups: list, group, betas = 3).
    static constexpr int kMaxNesting = 4;

    RunFields(std::string path, const std::map<std::string, std::string>& metadata)
        : path_(std::move(path)), metadata_(metadata) {}

    const std::string& text(const std::string& key) const;  // required
    // A whole number in [min, max], written in plain decimal digits.
    long whole_number(const std::string& key, long min, long max) const;
    // Parsed JSON, refused before parsing if it nests deeper than kMaxNesting.
    nlohmann::json parsed_json(const std::string& key) const;

    // The optimizer's param_groups, checked against the group `optimizer` writes: one group,
    // "params" numbering its parameters, every hyperparameter it keeps present with the same
    // type and in range (lr, eps, weight_decay, momentum, dampening >= 0; betas in [0, 1)).
    nlohmann::json param_groups(const optim::Optimizer& optimizer) const;
    // The schedule's state: {"last_epoch": n >= 0, "_last_lr": [lr >= 0], ...}.
    std::string schedule() const;

    [[noreturn]] void fail_field(const std::string& key, const std::string& why) const;

private:
    std::string path_;
    const std::map<std::string, std::string>& metadata_;
};

// The optimizer entries of a run file ("state.<i>.<key>", the prefix "optimizer." removed) are
// complete for `optimizer`: every parameter with a step has each buffer the optimizer keeps
// (Adam: exp_avg and exp_avg_sq; SGD with momentum: momentum_buffer), and a run that did steps
// (epoch > 0) holds some optimizer state. `group` is the checked param_groups[0].
void check_optimizer_entries(const std::string& path, const optim::Optimizer& optimizer,
                             const nlohmann::json& group,
                             const std::vector<std::pair<std::string, Array>>& entries, long epoch);

}  // namespace xtgrad::nn::detail
