#include <xtgrad/report/attention_maps.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/utf8_text.hpp>
#include <xtgrad/report/run_report.hpp>

#include <cmath>
#include <utility>

namespace xtgrad::report {

AttentionMaps attention_maps(const std::string& raw_kind, const std::vector<Tensor>& layers,
                             const std::vector<std::string>& raw_queries, const std::vector<std::string>& raw_keys,
                             std::size_t heads, const Mask* masked, long step, std::size_t cells_kept) {
    AttentionMaps out;
    out.kind = valid_utf8(raw_kind, &out.kind_replaced);
    const std::string& kind = out.kind;
    const auto labels = [&](const std::vector<std::string>& raw) {
        std::vector<std::string> valid;
        for (const std::string& l : raw) {
            bool replaced = false;
            valid.push_back(valid_utf8(l, &replaced));
            out.labels_replaced = out.labels_replaced || replaced;
        }
        return valid;
    };
    const std::vector<std::string> queries = labels(raw_queries), keys = labels(raw_keys);
    const std::size_t md = masked == nullptr ? 0 : masked->dimension();
    if (masked != nullptr && md == 3 && masked->shape()[0] == 0)
        fail("RunReport::attention: '{}': mask {} has a batch of 0: no batch element to show", kind, shape_str(masked->shape()));
    out.maps = nlohmann::json::array();
    std::size_t cells = 0;  // of this call's maps
    for (std::size_t layer = 0; layer < layers.size(); ++layer) {
        if (!layers[layer].defined()) fail("RunReport::attention: '{}' layer {}: the weights tensor is undefined", kind, layer);
        const Array& w = std::as_const(layers[layer]).data();
        const Shape shape(w.shape().begin(), w.shape().end());
        if (shape.size() != 3 && shape.size() != 4)
            fail("RunReport::attention: '{}' layer {}: weights {} are neither (B, heads, queries, keys) nor (B*heads, queries, keys)",
                 kind, layer, shape_str(shape));
        if (shape[0] == 0)  // tutorial D's weights for a batch of 0 sequences
            fail("RunReport::attention: '{}' layer {}: weights {} have a batch of 0: no batch element to show", kind, layer,
                 shape_str(shape));
        const std::size_t q = shape[shape.size() - 2], k = shape.back();
        const std::size_t n_heads = shape.size() == 4 ? shape[1] : heads;
        if (n_heads == 0)
            fail("RunReport::attention: '{}' layer {}: weights {} need heads between 1 and {} (got {})", kind, layer,
                 shape_str(shape), shape[0], heads);
        if (shape.size() == 3 && shape[0] % n_heads != 0)
            fail("RunReport::attention: '{}' layer {}: weights {} are not a whole number of batches of {} heads", kind,
                 layer, shape_str(shape), n_heads);
        // (B, heads, q, k) carries its own count: a `heads` that says otherwise is a caller's mix-up
        if (shape.size() == 4 && heads != 0 && heads != shape[1])
            fail("RunReport::attention: '{}' layer {}: weights {} have {} heads, the call says {}", kind, layer,
                 shape_str(shape), shape[1], heads);
        if (queries.size() != q || keys.size() != k)
            fail("RunReport::attention: '{}' layer {}: {} query and {} key labels for weights {} of {} queries and {} keys",
                 kind, layer, queries.size(), keys.size(), shape_str(shape), q, k);
        if (masked != nullptr && ((md != 2 && md != 3) || masked->shape()[md - 2] != q || masked->shape()[md - 1] != k))
            fail("RunReport::attention: '{}': mask {} is neither (queries, keys) = ({},{}) nor (B, queries, keys)", kind,
                 shape_str(masked->shape()), q, k);
        // the page's size, checked before any map is made (q, k at most 512 first: q · k cannot wrap)
        if (q > RunReport::kMaxAttentionTokens || k > RunReport::kMaxAttentionTokens || q * k > RunReport::kMaxAttentionMapCells)
            fail("RunReport::attention: '{}' layer {}: weights {} make maps of {} queries × {} keys, past the limit of {} "
                 "queries or keys and {} cells a map (RunReport::kMaxAttentionTokens, kMaxAttentionMapCells): show the "
                 "first tokens", kind, layer, shape_str(shape), q, k, RunReport::kMaxAttentionTokens,
                 RunReport::kMaxAttentionMapCells);
        cells += n_heads * q * k;  // at most the weights' element count
        if (cells_kept + cells > RunReport::kMaxAttentionCells)
            fail("RunReport::attention: '{}': its maps through layer {} ({} heads of {} × {} there) hold {} cells and the "
                 "report's other attention kinds {}: past the limit of {} cells a report holds (RunReport::kMaxAttentionCells, "
                 "a page of a few MB)", kind, layer, n_heads, q, k, cells, cells_kept, RunReport::kMaxAttentionCells);
        for (std::size_t h = 0; h < n_heads; ++h) {
            std::vector<std::vector<float>> rows(q, std::vector<float>(k));
            for (std::size_t i = 0; i < q; ++i)
                for (std::size_t j = 0; j < k; ++j) {
                    const float v = w.data()[(h * q + i) * k + j];
                    if (!std::isfinite(v))  // weights are probabilities; the page's 0..1 scale has no colour for these
                        fail("RunReport::attention: '{}' layer {} head {}: the weight of query {} for key {} is {}", kind, layer,
                             h, i, j, v);
                    rows[i][j] = v;
                }
            nlohmann::json map{{"kind", kind}, {"layer", layer}, {"head", h}, {"step", step},
                               {"queries", queries}, {"keys", keys}, {"weights", rows}, {"masked", nullptr}};
            if (masked != nullptr) {
                std::vector<std::vector<int>> hidden(q, std::vector<int>(k));
                for (std::size_t i = 0; i < q; ++i)
                    for (std::size_t j = 0; j < k; ++j) hidden[i][j] = masked->data()[i * k + j] ? 1 : 0;  // batch element 0
                map["masked"] = hidden;
            }
            out.maps.push_back(std::move(map));
        }
    }
    return out;
}

}  // namespace xtgrad::report
