#include <xtgrad/autograd/name_guess.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <vector>

namespace xtgrad::detail {

std::size_t name_distance(const std::string& a, const std::string& b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                              std::tolower(static_cast<unsigned char>(b[j - 1]));
            const std::size_t next = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
            diagonal = row[j];
            row[j] = next;
        }
    }
    return row[b.size()];
}

namespace {
// " Did you mean 'X'?" for the seen name nearest to wanted, when it is near (a third of its letters)
std::string nearest(const std::string& wanted, const std::set<std::string>& seen) {
    const std::string* best = nullptr;
    std::size_t best_distance = 0;
    for (const std::string& s : seen)
        if (const std::size_t d = name_distance(wanted, s); best == nullptr || d < best_distance)
            best = &s, best_distance = d;
    if (best == nullptr || best_distance > std::max<std::size_t>(2, wanted.size() / 3)) return "";
    return fmt::format(" Did you mean '{}'?", *best);
}
}  // namespace

std::string guessed_op(const std::string& wanted, const std::set<std::string>& ops) {
    if (std::string guess = nearest(wanted, ops); !guess.empty()) return guess;
    for (const std::string& op : ops)  // a node is named by its op's backward
        if (name_distance(op, wanted + "Backward") == 0)
            return fmt::format(" Did you mean '{}'? (a node is named by its op's backward)", op);
    return "";
}

std::string guessed_module(const std::string& wanted, const std::set<std::string>& paths,
                           const std::set<std::string>& modules) {
    if (std::string guess = nearest(wanted, paths); !guess.empty()) return guess;
    for (const std::string& m : modules)  // a path is the whole path from the model, not its end
        for (std::size_t at = m.find("." + wanted); at != std::string::npos; at = m.find("." + wanted, at + 1)) {
            const std::size_t end = at + 1 + wanted.size();
            if (end == m.size() || m[end] == '.')
                return fmt::format(" Did you mean '{}'? (a module path starts at the model)", m.substr(0, end));
        }
    return "";
}

std::string listed(const std::set<std::string>& names, std::size_t at_most) {
    std::string s;
    std::size_t n = 0;
    for (const std::string& name : names) {
        if (n++ == at_most) return s + fmt::format(", ... ({} in all)", names.size());
        s += (s.empty() ? "" : ", ") + name;
    }
    return s;
}

}  // namespace xtgrad::detail
