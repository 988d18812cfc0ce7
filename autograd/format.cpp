#include <xtgrad/autograd/format.hpp>

#include <xtgrad/autograd/error.hpp>

#include <cmath>
#include <ostream>

namespace xtgrad {

namespace {

constexpr std::size_t kSummarizeAbove = 1000;  // torch's threshold
constexpr std::size_t kEdge = 3;

// Values are printed with a shared format: fixed with 4 decimals, or scientific when the
// magnitudes are very large or very small (as torch does).
struct ValueFormat {
    bool sci = false;
    int width = 0;
    std::string operator()(float v) const { return sci ? fmt::format("{:>{}.4e}", v, width) : fmt::format("{:>{}.4f}", v, width); }
};

ValueFormat choose_format(const Array& a) {
    float lo = INFINITY, hi = 0;
    for (float v : a)
        if (std::isfinite(v) && v != 0) {
            lo = std::min(lo, std::abs(v));
            hi = std::max(hi, std::abs(v));
        }
    ValueFormat f;
    f.sci = hi >= 1e8f || (lo < 1e-4f && hi > 0) || (hi / lo > 1e3f && lo < 1e-2f);
    for (float v : a) f.width = std::max(f.width, static_cast<int>((f.sci ? fmt::format("{:.4e}", v) : fmt::format("{:.4f}", v)).size()));
    return f;
}

void render(std::string& out, const float* p, const Shape& s, std::size_t d, bool summarize, const ValueFormat& f,
            std::size_t indent) {
    const std::size_t n = s[d];
    std::size_t block = 1;
    for (std::size_t i = d + 1; i < s.size(); ++i) block *= s[i];
    out += "[";
    for (std::size_t i = 0; i < n; ++i) {
        if (summarize && n > 2 * kEdge && i == kEdge) {
            out += d + 1 == s.size() ? "..., " : "...,\n" + std::string(indent + 1, ' ');
            i = n - kEdge;
        }
        if (d + 1 == s.size())
            out += f(p[i]);
        else
            render(out, p + i * block, s, d + 1, summarize, f, indent + 1);
        if (i + 1 < n) out += d + 1 == s.size() ? ", " : ",\n" + std::string(d + 2 < s.size() ? 1 : 0, '\n') + std::string(indent + 1, ' ');
    }
    out += "]";
}

}  // namespace

std::string to_string(const Array& a) {
    const Shape s = shape_of(a);
    const ValueFormat f = choose_format(a);
    if (s.empty()) return f(a.data()[0]).substr(0);
    std::string out;
    render(out, a.data(), s, 0, a.size() > kSummarizeAbove, f, 7);
    return out;
}

std::string to_string(const Tensor& t) {
    if (!t.defined()) return "tensor(undefined)";
    std::string out = "tensor(" + to_string(t.data());
    out += ", shape=" + shape_str(t.shape());
    if (!t.name().empty()) out += ", name='" + t.name() + "'";
    if (t.grad_fn()) out += ", grad_fn=<" + t.grad_fn()->op() + ">";
    else if (t.requires_grad()) out += ", requires_grad=true";
    return out + ")";
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << to_string(t); }

}  // namespace xtgrad
