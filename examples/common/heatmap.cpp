#include "examples/common/heatmap.hpp"

#include "autograd/atomic_file.hpp"
#include "autograd/error.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <ostream>

namespace xtgrad::examples {

namespace {

// matplotlib's viridis at 9 stops, linearly interpolated.
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

std::string escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        if (c == '<') out += "&lt;";
        else if (c == '>') out += "&gt;";
        else if (c == '&') out += "&amp;";
        else out += c;
    }
    return out;
}

void check_labels(const Array& w, const std::vector<std::string>& rows, const std::vector<std::string>& cols) {
    if (w.dimension() != 2 || w.shape()[0] != rows.size() || w.shape()[1] != cols.size())
        fail("heatmap: weights of shape {} do not fit {} row and {} column labels", shape_str(w.shape()), rows.size(),
             cols.size());
}

}  // namespace

void write_heatmap_svg(const std::string& path, const Array& w, const std::vector<std::string>& rows,
                       const std::vector<std::string>& cols, const std::string& title) {
    check_labels(w, rows, cols);
    const int cell = 48, left = 110, top = 70, bottom = 120;
    const int width = left + cell * static_cast<int>(cols.size()) + 20;
    const int height = top + cell * static_cast<int>(rows.size()) + bottom;
    // colours span min..max of the map, as matplotlib's matshow
    const float lo = *std::min_element(w.begin(), w.end()), hi = *std::max_element(w.begin(), w.end());
    const float span = std::max(hi - lo, 1e-12f);
    write_file_atomically(path, [&](std::ostream& out) {
        out << fmt::format(R"svg(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" font-family="Noto Sans CJK SC, Noto Sans, sans-serif">)svg",
                           width, height)
            << "\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
            << fmt::format(R"svg(<text x="{}" y="30" font-size="18" text-anchor="middle">{}</text>)svg", width / 2, escape(title)) << "\n"
            << fmt::format(R"svg(<text x="{}" y="52" font-size="12" text-anchor="middle" fill="#555">colour: {:.3f} (dark) to {:.3f} (yellow)</text>)svg",
                           width / 2, lo, hi) << "\n";
        for (std::size_t r = 0; r < rows.size(); ++r)
            for (std::size_t c = 0; c < cols.size(); ++c) {
                const float v = w(r, c);
                out << fmt::format(R"svg(<rect x="{}" y="{}" width="{}" height="{}" fill="{}"><title>{:.3f}</title></rect>)svg",
                                   left + cell * static_cast<int>(c), top + cell * static_cast<int>(r), cell, cell,
                                   viridis((v - lo) / span), v)
                    << "\n";
            }
        for (std::size_t r = 0; r < rows.size(); ++r)
            out << fmt::format(R"svg(<text x="{}" y="{}" font-size="16" text-anchor="end" dominant-baseline="middle">{}</text>)svg",
                               left - 8, top + cell * static_cast<int>(r) + cell / 2, escape(rows[r]))
                << "\n";
        for (std::size_t c = 0; c < cols.size(); ++c) {
            const int x = left + cell * static_cast<int>(c) + cell / 2, y = top + cell * static_cast<int>(rows.size()) + 8;
            out << fmt::format(R"svg(<text x="{}" y="{}" font-size="16" text-anchor="end" dominant-baseline="middle" transform="rotate(-90 {} {})">{}</text>)svg",
                               x, y, x, y, escape(cols[c]))
                << "\n";
        }
        out << "</svg>\n";
    });
}

std::string text_heatmap(const Array& w, const std::vector<std::string>& rows, const std::vector<std::string>& cols) {
    check_labels(w, rows, cols);
    static const char* shades[] = {"  ", "░░", "▒▒", "▓▓", "██"};
    std::string out;
    for (std::size_t r = 0; r < rows.size(); ++r) {
        out += fmt::format("{:>10} │", rows[r]);
        for (std::size_t c = 0; c < cols.size(); ++c) {
            const int level = std::clamp(static_cast<int>(std::lround(w(r, c) * 4.f)), 0, 4);
            out += shades[level];
        }
        out += "│\n";
    }
    std::string keys = "keys: ";
    for (std::size_t c = 0; c < cols.size(); ++c) keys += (c ? " " : "") + cols[c];
    return out + "           " + keys + "\n";
}

}  // namespace xtgrad::examples
