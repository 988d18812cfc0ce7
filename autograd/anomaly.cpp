#include "autograd/anomaly.hpp"

#include "autograd/error.hpp"
#include "autograd/grad_mode.hpp"
#include "autograd/node.hpp"
#include "autograd/tensor.hpp"

#include <cmath>
#include <cstring>
#include <string_view>

namespace xtgrad {

namespace {

thread_local bool anomaly_enabled = false;

constexpr std::size_t npos = static_cast<std::size_t>(-1);

std::size_t first_nan(const float* p, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i)
        if (std::isnan(p[i])) return i;
    return npos;
}

std::size_t first_non_finite(const float* p, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i)
        if (!std::isfinite(p[i])) return i;
    return npos;
}

std::string where_text(const std::string& module_path, const std::source_location& where) {
    const std::string module = module_path.empty() ? "outside any module" : "in module '" + module_path + "'";
    return fmt::format("it ran {}; the node was created at {}", module, detail::describe_location(where));
}

}  // namespace

bool anomaly_detection_enabled() { return anomaly_enabled; }
void set_anomaly_detection(bool on) { anomaly_enabled = on; }

namespace detail {

std::string describe_location(const std::source_location& where) {
    // Relative to the project root: meson.build maps the build folder's path away.
    return fmt::format("{}:{} ({})", where.file_name(), where.line(), where.function_name());
}

void check_forward_anomaly(const Array& out, const char* op, const std::vector<Tensor>& inputs,
                           const std::source_location& where) {
    const std::size_t bad = first_non_finite(out.data(), out.size());
    if (bad == npos) return;
    const std::size_t nan = first_nan(out.data() + bad, out.size() - bad);
    if (nan == npos) {
        // Only infinities: deliberate in a -inf mask fill and in whatever is computed from it.
        if (std::strcmp(op, "MaskedFillBackward") == 0) return;
        for (const Tensor& in : inputs)
            if (in.defined() && first_non_finite(in.ptr(), in.numel()) != npos) return;
    }
    const std::size_t at = nan == npos ? bad : bad + nan;
    fail("anomaly mode: {} produced {} in forward (element {} of its output of shape {}) from {}; {}", op,
         nan == npos ? fmt::format("{}", out.data()[at]) : "NaN", at, shape_str(out.shape()),
         nan == npos ? "finite inputs" : "its inputs", where_text(current_module_path(), where));
}

void check_backward_anomaly(const Node& node) {
    for (std::size_t i = 0; i < node.inputs().size(); ++i) {
        const ImplPtr& in = node.inputs()[i];
        if (!in || !in->incoming) continue;
        const Array& g = *in->incoming;
        const std::size_t bad = first_non_finite(g.data(), g.size());
        if (bad == npos) continue;
        const float v = g.data()[bad];
        fail("anomaly mode: {} produced {} in backward: the gradient of its input {}{} {} holds it at element {}; {}",
             node.op(), std::isnan(v) ? "NaN" : fmt::format("{}", v), i, in->name.empty() ? "" : " '" + in->name + "'",
             shape_str(g.shape()), bad, where_text(node.module_path(), node.where()));
    }
}

}  // namespace detail

}  // namespace xtgrad
