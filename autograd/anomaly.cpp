#include <xtgrad/autograd/anomaly.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/grad_mode.hpp>
#include <xtgrad/autograd/node.hpp>
#include <xtgrad/autograd/tensor.hpp>

#include <xtgrad/threads/parallel.hpp>

#include <atomic>
#include <cmath>
#include <cstdint>
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

std::size_t non_finite_at(const float* p, std::size_t n) {
    const std::size_t i = detail::first_non_finite(p, n);
    return i == n ? npos : i;
}

std::string where_text(const std::string& module_path, const SourceLocation& where) {
    const std::string module = module_path.empty() ? "outside any module" : "in module '" + module_path + "'";
    return fmt::format("it ran {}; the node was created at {}", module, detail::describe_location(where));
}

}  // namespace

bool anomaly_detection_enabled() { return anomaly_enabled; }
void set_anomaly_detection(bool on) { anomaly_enabled = on; }

namespace detail {

std::size_t first_non_finite(const float* p, std::size_t n) {
    // A float is NaN or ±Inf exactly when its 8 exponent bits are all ones. OR-ing that test over
    // a block is an integer reduction the compiler vectorises (a float one it may not reorder).
    std::atomic<bool> found{false};
    parallel_for(n, std::size_t{1} << 16, [&](std::size_t i0, std::size_t i1) {
        std::uint32_t bad = 0;
        for (std::size_t i = i0; i < i1; ++i) {
            std::uint32_t bits;
            std::memcpy(&bits, p + i, sizeof bits);
            bad |= static_cast<std::uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
        }
        if (bad != 0) found.store(true, std::memory_order_relaxed);
    });
    if (!found.load()) return n;
    for (std::size_t i = 0; i < n; ++i)  // the rare case: find the first one
        if (!std::isfinite(p[i])) return i;
    return n;
}


std::string describe_location(const SourceLocation& where) {
    // Relative to the project root: meson.build maps the build folder's path away.
    return fmt::format("{}:{} ({})", where.file_name(), where.line_number(), where.function_name());
}

void check_forward_anomaly(const Array& out, const char* op, const std::vector<Tensor>& inputs,
                           const SourceLocation& where) {
    const std::size_t bad = non_finite_at(out.data(), out.size());
    if (bad == npos) return;
    const std::size_t nan = first_nan(out.data() + bad, out.size() - bad);
    if (nan == npos) {
        // Only infinities: deliberate in a -inf mask fill and in whatever is computed from it.
        if (std::strcmp(op, "MaskedFillBackward") == 0) return;
        for (const Tensor& in : inputs)
            if (in.defined() && non_finite_at(in.ptr(), in.numel()) != npos) return;
    }
    const std::size_t at = nan == npos ? bad : bad + nan;
    if (nan != npos) {
        // A NaN an input already held was born before this op: in a leaf's values, or in a result
        // made while anomaly mode was off. Say so, rather than blame its first consumer.
        for (std::size_t i = 0; i < inputs.size(); ++i) {
            const Tensor& in = inputs[i];
            if (!in.defined()) continue;
            const std::size_t held = first_nan(in.ptr(), in.numel());
            if (held == npos) continue;
            fail("anomaly mode: {} produced NaN in forward (element {} of its output of shape {}), but its input {}{} "
                 "of shape {} already held NaN (element {}): it came in with that tensor (a leaf's values, or a "
                 "result made while anomaly mode was off), not from this op; {}",
                 op, at, shape_str(out.shape()), i, in.name().empty() ? "" : " '" + in.name() + "'",
                 shape_str(in.shape()), held, where_text(current_module_path(), where));
        }
    }
    fail("anomaly mode: {} produced {} in forward (element {} of its output of shape {}) from {}; {}", op,
         nan == npos ? fmt::format("{}", out.data()[at]) : "NaN", at, shape_str(out.shape()),
         nan == npos ? "finite inputs" : "inputs without NaN: it was born here", where_text(current_module_path(), where));
}

void check_backward_anomaly(const Node& node) {
    for (std::size_t i = 0; i < node.inputs().size(); ++i) {
        const ImplPtr& in = node.inputs()[i];
        if (!in || !in->incoming) continue;
        const Array& g = *in->incoming;
        const std::size_t bad = non_finite_at(g.data(), g.size());
        if (bad == npos) continue;
        const float v = g.data()[bad];
        fail("anomaly mode: {} produced {} in backward: the gradient of its input {}{} {} holds it at element {}; {}",
             node.op(), std::isnan(v) ? "NaN" : fmt::format("{}", v), i, in->name.empty() ? "" : " '" + in->name + "'",
             shape_str(g.shape()), bad, where_text(node.module_path(), node.where()));
    }
}

}  // namespace detail

}  // namespace xtgrad
