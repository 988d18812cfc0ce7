// The attention maps of a run report (RunReport::attention): one kind's weights, checked against
// their labels and mask, made into the maps the page draws. Internal.
#pragma once

#include <xtgrad/autograd/array.hpp>
#include <xtgrad/autograd/tensor.hpp>

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace xtgrad::report {

struct AttentionMaps {
    std::string kind;      // as given, made valid UTF-8
    nlohmann::json maps;   // one per layer and head, as the page's "attention" holds them
    bool kind_replaced = false, labels_replaced = false;  // invalid bytes shown as U+FFFD (the page notes it)
};

// RunReport::attention's arguments, recorded at `step`; an Error (in RunReport::attention's
// words) for what it refuses, so the caller replaces nothing. `cells_kept`: the cells of the
// report's maps of other kinds, which count against RunReport::kMaxAttentionCells.
AttentionMaps attention_maps(const std::string& kind, const std::vector<Tensor>& layers,
                             const std::vector<std::string>& queries, const std::vector<std::string>& keys,
                             std::size_t heads, const Mask* masked, long step, std::size_t cells_kept);

}  // namespace xtgrad::report
