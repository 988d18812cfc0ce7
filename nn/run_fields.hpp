// The one path by which a run checkpoint's metadata fields are read (nn/checkpoint.cpp): every
// field a file supplies is looked up, bounded and type-checked here, and every failure is an
// xtgrad::Error naming the file and the field. JSON fields (the optimizer's param_groups, the
// schedule's state) are parsed with their nesting and size bounded (io/bounded_json.hpp), so that
// neither dump() nor the memory parsed values take can run away; the optimizer's hyperparameters
// are then checked by Optimizer::load_state_dict.
#pragma once

#include <xtgrad/autograd/array.hpp>

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <utility>
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
    // Parsed JSON, refused while parsing if it nests deeper than kMaxNesting.
    nlohmann::json parsed_json(const std::string& key) const;

    // The optimizer's param_groups text, its nesting bounded. Optimizer::load_state_dict reads
    // and checks every field of it (typed, in range, all or nothing): one check, the optimizer's.
    const std::string& param_groups() const;
    // The schedule's state: {"last_epoch": n >= 0, "_last_lr": [lr >= 0], ...}.
    std::string schedule() const;

    [[noreturn]] void fail_field(const std::string& key, const std::string& why) const;

private:
    std::string path_;
    const std::map<std::string, std::string>& metadata_;
};

// A run that did steps (epoch > 0) holds optimizer state: a file without any "optimizer.state.*"
// entry would resume with zeroed moments (Optimizer::load_state_dict checks each parameter's
// entries, but an empty state is a valid one for an optimizer that never stepped). save_run
// applies the same check ("save"), so it never writes a file load_run would refuse.
void check_optimizer_entries(const char* verb, const std::string& path, const std::vector<std::pair<std::string, Array>>& entries,
                             long epoch);

}  // namespace xtgrad::nn::detail
