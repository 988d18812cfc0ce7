#include <xtgrad/nn/attention_map.hpp>

#include <xtgrad/io/atomic_file.hpp>
#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/utf8_text.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <ostream>
#include <string_view>

namespace xtgrad::nn {

namespace {

// matplotlib's viridis at 9 stops, linearly interpolated; t in 0..1.
std::string viridis(float t) {
    static const std::array<std::array<float, 3>, 9> stops = {{{68, 1, 84}, {71, 44, 122}, {59, 81, 139}, {44, 113, 142},
                                                               {33, 144, 141}, {39, 173, 129}, {92, 200, 99},
                                                               {170, 220, 50}, {253, 231, 37}}};
    t = std::clamp(t, 0.f, 1.f) * 8.f;
    const std::size_t i = std::min<std::size_t>(static_cast<std::size_t>(t), 7);
    const float f = t - static_cast<float>(i);
    auto mix = [&](int c) { return static_cast<int>(std::lround(stops[i][c] * (1 - f) + stops[i + 1][c] * f)); };
    return fmt::format("#{:02x}{:02x}{:02x}", mix(0), mix(1), mix(2));
}

// A label as SVG text: well-formed UTF-8 (each stray byte U+FFFD), the characters XML gives a
// meaning escaped (an apostrophe may stay: attributes are double-quoted) and the control bytes
// and characters XML 1.0 forbids (C0 but tab and newline; U+FFFE, U+FFFF) as U+FFFD: raw bytes must
// not make the file unreadable.
std::string escape(const std::string& s) {
    static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
    const std::string text = valid_utf8(s);
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        const std::string_view rest = std::string_view(text).substr(i, 3);
        if (rest == "\xEF\xBF\xBE" || rest == "\xEF\xBF\xBF") {  // U+FFFE, U+FFFF: not XML characters either
            out += kReplacement;
            i += 2;
        } else if (c == '<') out += "&lt;";
        else if (c == '>') out += "&gt;";
        else if (c == '&') out += "&amp;";
        else if (c == '"') out += "&quot;";
        else if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n') out += kReplacement;
        else out += c;
    }
    return out;
}

// A label as a terminal shows it: control and stray bytes as \xHH (no escape sequence reaches it).
std::string shown(const std::string& s) { return escaped_for_message(s, /*keep_newlines=*/false); }

// Where a value sits in the colour range, 0..1: the one mapping both views use.
float position(const AttentionMap& map, float v) {
    const auto [lo, hi] = map.colour_range();
    return std::clamp((v - lo) / std::max(hi - lo, 1e-12f), 0.f, 1.f);
}

}  // namespace

std::pair<float, float> AttentionMap::colour_range() const {
    if (scale == AttentionScale::probability || weights.size() == 0) return {0.f, 1.f};
    return {*std::min_element(weights.begin(), weights.end()), *std::max_element(weights.begin(), weights.end())};
}

bool AttentionMap::nearly_uniform() const {
    if (weights.dimension() != 2) return false;
    for (std::size_t r = 0; r < weights.shape()[0]; ++r) {
        float lo = 2.f, hi = 0.f;
        for (std::size_t c = 0; c < weights.shape()[1]; ++c)
            if (const float v = weights(r, c); v > 1e-4f && !is_masked(r, c)) lo = std::min(lo, v), hi = std::max(hi, v);
        if (hi > 0.f && hi > 1.25f * lo) return false;
    }
    return true;
}

void check_attention_map(const AttentionMap& map, const char* who) {
    const Array& w = map.weights;
    if (w.dimension() != 2 || w.shape()[0] != map.query_words.size() || w.shape()[1] != map.key_words.size())
        fail("{}: attention weights of shape {} do not fit {} query words (rows) and {} key words (columns)", who,
             shape_str(w.shape()), map.query_words.size(), map.key_words.size());
    if (map.has_mask() && map.masked.shape() != w.shape())
        fail("{}: the mask of '{}' has shape {}, the attention weights {}: one flag per (query, key) cell", who,
             shown(map.title), shape_str(map.masked.shape()), shape_str(w.shape()));
    for (float v : w)
        if (!std::isfinite(v))
            fail("{}: the attention weights of '{}' hold {}: a map of probabilities must be finite", who, shown(map.title),
                 v);
}

AttentionMap select_attention_map(const Tensor& weights, std::size_t heads, std::size_t batch, std::size_t head,
                                  const std::vector<std::string>& query_words, const std::vector<std::string>& key_words,
                                  const Mask& masked, const char* who) {
    const Shape s = weights.shape();
    const bool per_head = s.size() == 4, flat_heads = s.size() == 3 && heads > 0;
    if (s.size() != 4 && s.size() != 3)
        fail("{}: attention weights of shape {}: expected (batch, heads, queries, keys), (batch·heads, queries, keys) "
             "or (batch, queries, keys)", who, shape_str(s));
    const std::size_t batches = per_head || !flat_heads ? s[0] : s[0] / heads;
    const std::size_t head_count = per_head ? s[1] : flat_heads ? heads : 1;
    if (flat_heads && s[0] % heads != 0)
        fail("{}: {} rows of attention weights (shape {}) are not a whole number of batches of {} heads", who, s[0],
             shape_str(s), heads);
    if (batch >= batches) fail("{}: batch element {} is out of range: the weights (shape {}) hold {}", who, batch, shape_str(s), batches);
    if (head >= head_count) fail("{}: head {} is out of range: the weights (shape {}) hold {} heads", who, head, shape_str(s), head_count);
    const std::size_t lq = s[s.size() - 2], lk = s[s.size() - 1];
    const std::size_t offset = ((per_head || flat_heads) ? (batch * head_count + head) : batch) * lq * lk;
    AttentionMap map;
    map.weights = empty_array({lq, lk});
    std::copy_n(weights.data().data() + offset, lq * lk, map.weights.data());
    map.query_words = query_words;
    map.key_words = key_words;
    if (masked.dimension() != 0) {
        const std::size_t md = masked.dimension();
        if ((md != 2 && md != 3) || masked.shape()[md - 2] != lq || masked.shape()[md - 1] != lk || (md == 3 && batch >= masked.shape()[0]))
            fail("{}: a mask of shape {} does not fit ({}, {}) maps of batch element {}: expected (queries, keys) or "
                 "(batch, queries, keys)", who, shape_str(masked.shape()), lq, lk, batch);
        map.masked = Mask::from_shape({lq, lk});
        std::copy_n(masked.data() + (md == 3 ? batch * lq * lk : 0), lq * lk, map.masked.data());
    }
    check_attention_map(map, who);
    return map;
}

bool AttentionMap::is_masked(std::size_t row, std::size_t col) const {
    if (!has_mask()) return false;
    if (masked.dimension() != 2 || row >= masked.shape()[0] || col >= masked.shape()[1])
        fail("AttentionMap::is_masked: cell ({}, {}) is outside the mask of shape {}", row, col, shape_str(masked.shape()));
    return masked(row, col);
}

std::string attention_legend(const AttentionMap& map) {
    const auto [lo, hi] = map.colour_range();
    std::string text = map.scale == AttentionScale::probability
                           ? std::string("colour scale 0..1 (probabilities)")
                           : fmt::format("colour scale stretched to this map's {:.3f}..{:.3f} (auto)", lo, hi);
    if (map.has_mask() && std::find(map.masked.begin(), map.masked.end(), true) != map.masked.end())
        text += "; × masked (hidden by the model's mask)";
    if (map.nearly_uniform()) text += "; nearly uniform: every query spreads its attention evenly";
    return text;
}

void write_attention_svg(const std::string& path, const AttentionMap& map) {
    check_attention_map(map, "write_attention_svg");
    const auto rows = static_cast<int>(map.query_words.size()), cols = static_cast<int>(map.key_words.size());
    const int cell = 48, left = 140, top = 80, bottom = 110, bar_gap = 24, bar_width = 18, bar_labels = 56;
    const int grid_right = left + cell * cols;
    const int width = grid_right + bar_gap + bar_width + bar_labels, height = top + cell * std::max(rows, 1) + bottom;
    const auto range = map.colour_range();  // a pair, not a binding: Clang 14's lambdas cannot take bindings
    write_file_atomically(path, [&](std::ostream& out) {
        out << fmt::format(R"svg(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" font-family="Noto Sans CJK SC, Noto Sans, sans-serif">)svg",
                           width, height)
            << "\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
            << fmt::format(R"svg(<text x="{}" y="30" font-size="18" text-anchor="middle">{}</text>)svg", width / 2,
                           escape(map.title))
            << "\n"
            << fmt::format(R"svg(<text x="{}" y="54" font-size="12" text-anchor="middle" fill="#555">{}</text>)svg",
                           width / 2, escape(attention_legend(map)))
            << "\n"
            << R"svg(<defs><pattern id="masked" width="8" height="8" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="8" height="8" fill="#e0e0e0"/><line x1="0" y1="0" x2="0" y2="8" stroke="#a0a0a0" stroke-width="3"/></pattern></defs>)svg"
            << "\n";
        // The cells, each with its value (dark text on the light end of viridis); a masked cell
        // hatched grey with "×", so a hidden key never reads as a learned weight of 0.
        for (int r = 0; r < rows; ++r)
            for (int c = 0; c < cols; ++c) {
                const float v = map.weights(r, c), t = position(map, v);
                const int x = left + cell * c, y = top + cell * r;
                if (map.is_masked(static_cast<std::size_t>(r), static_cast<std::size_t>(c))) {
                    out << fmt::format(R"svg(<rect class="masked" x="{}" y="{}" width="{}" height="{}" fill="url(#masked)"><title>masked ({:.4f})</title></rect>)svg",
                                       x, y, cell, cell, v)
                        << fmt::format(R"svg(<text x="{}" y="{}" font-size="16" text-anchor="middle" dominant-baseline="middle" fill="#555">×</text>)svg",
                                       x + cell / 2, y + cell / 2)
                        << "\n";
                    continue;
                }
                out << fmt::format(R"svg(<rect x="{}" y="{}" width="{}" height="{}" fill="{}"><title>{:.4f}</title></rect>)svg",
                                   x, y, cell, cell, viridis(t), v)
                    << fmt::format(R"svg(<text x="{}" y="{}" font-size="12" text-anchor="middle" dominant-baseline="middle" fill="{}">{:.2f}</text>)svg",
                                   x + cell / 2, y + cell / 2, t > 0.6f ? "black" : "white", v)
                    << "\n";
            }
        // Query words on y (rows), key words on x (columns), as tutorial C's showgraph.
        for (int r = 0; r < rows; ++r)
            out << fmt::format(R"svg(<text x="{}" y="{}" font-size="16" text-anchor="end" dominant-baseline="middle">{}</text>)svg",
                               left - 8, top + cell * r + cell / 2, escape(map.query_words[r]))
                << "\n";
        for (int c = 0; c < cols; ++c) {
            const int x = left + cell * c + cell / 2, y = top + cell * rows + 8;
            out << fmt::format(R"svg(<text x="{}" y="{}" font-size="16" text-anchor="end" dominant-baseline="middle" transform="rotate(-90 {} {})">{}</text>)svg",
                               x, y, x, y, escape(map.key_words[c]))
                << "\n";
        }
        // The axis titles: keys under the rotated key words, queries left of the query words.
        const int grid_bottom = top + cell * rows;
        out << fmt::format(R"svg(<text class="axis-title" x="{}" y="{}" font-size="14" font-weight="bold" text-anchor="middle">{}</text>)svg",
                           left + cell * cols / 2, grid_bottom + bottom - 16, escape(map.key_axis))
            << "\n"
            << fmt::format(R"svg(<text class="axis-title" x="18" y="{}" font-size="14" font-weight="bold" text-anchor="middle" transform="rotate(-90 18 {})">{}</text>)svg",
                           top + cell * rows / 2, top + cell * rows / 2, escape(map.query_axis))
            << "\n";
        // The colour bar: 20 steps from hi (top) to lo (bottom), labelled at both ends and the middle.
        const int bar_x = grid_right + bar_gap, bar_h = cell * std::max(rows, 1), steps = 20;
        for (int i = 0; i < steps; ++i) {
            const float t = 1.f - (static_cast<float>(i) + 0.5f) / steps;
            out << fmt::format(R"svg(<rect x="{}" y="{:.1f}" width="{}" height="{:.1f}" fill="{}"/>)svg", bar_x,
                               top + bar_h * static_cast<float>(i) / steps, bar_width,
                               bar_h / static_cast<float>(steps) + 0.5f, viridis(t));
        }
        out << "\n";
        for (const float t : {0.f, 0.5f, 1.f})
            out << fmt::format(R"svg(<text x="{}" y="{:.1f}" font-size="12" dominant-baseline="middle">{:.2f}</text>)svg",
                               bar_x + bar_width + 4, top + bar_h * (1.f - t), range.first + (range.second - range.first) * t)
                << "\n";
        out << "</svg>\n";
    });
}

std::string attention_text(const AttentionMap& map) {
    check_attention_map(map, "attention_text");
    static const char* shades[] = {"  ", "░░", "▒▒", "▓▓", "██"};
    std::string out = fmt::format("{:>10}  {}\n", "", shown(map.query_axis));
    for (std::size_t r = 0; r < map.query_words.size(); ++r) {
        out += fmt::format("{:>10} │", shown(map.query_words[r]));
        for (std::size_t c = 0; c < map.key_words.size(); ++c)
            out += map.is_masked(r, c) ? "××" : shades[std::min(4, static_cast<int>(position(map, map.weights(r, c)) * 5.f))];
        out += "│\n";
    }
    std::string keys = shown(map.key_axis) + ": ";
    for (std::size_t c = 0; c < map.key_words.size(); ++c) {
        if (c) keys += ' ';
        keys += shown(map.key_words[c]);
    }
    return out + "           " + keys + "\n           " + attention_legend(map) + "\n";
}

}  // namespace xtgrad::nn
