// Activations: look inside tutorial B's Transformer with forward hooks (nn/forward_hooks.hpp).
//
//   build/examples/activations [--module encoder_layers.0] [--layers N]
//
// Builds tutorial B's Transformer at a small size (d_model 16, 2 heads), registers a forward
// pre-hook and a forward hook on every module under --module, and runs one forward on a batch of
// two sentences. Each module prints when its forward starts (its tensor inputs) and when it ends
// (its outputs: shape, mean, standard deviation), indented by depth: the order in which the
// forward runs, what each module takes and makes. docs/debugging.md, "Capture activations".
#include "examples/common/cli.hpp"
#include "examples/common/module_path.hpp"
#include <xtgrad/nn/tutorial_b/tutorial_b.hpp>
#include <xtgrad/xtgrad.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

using namespace xtgrad;
namespace tb = xtgrad::nn::tutorial_b;

namespace {

std::string shapes(const std::vector<Tensor>& tensors) {
    std::string s;
    for (const Tensor& t : tensors) s += (s.empty() ? "" : ", ") + shape_str(t.shape());
    return s.empty() ? "no tensors" : s;
}

std::string stats(const Tensor& t) {
    const Array& a = t.data();
    double sum = 0, squares = 0;
    for (float v : a) sum += v;
    const double mean = a.size() ? sum / static_cast<double>(a.size()) : 0.0;
    for (float v : a) squares += (v - mean) * (v - mean);
    const double std = a.size() > 1 ? std::sqrt(squares / static_cast<double>(a.size() - 1)) : 0.0;
    return fmt::format("mean {:+.4f} std {:.4f}", mean, std);
}

// Hooks every module under `prefix` (itself included); the handles unregister them at the end.
std::string short_type(const nn::Module& m) {
    const std::string full = m.type_name();  // xtgrad::nn::tutorial_b::EncoderLayer
    return full.substr(full.rfind("::") == std::string::npos ? 0 : full.rfind("::") + 2);
}

void hook_under(nn::Module& m, const std::string& prefix, std::vector<nn::HookHandle>& handles) {
    const bool inside = m.path() == prefix || m.path().starts_with(prefix + ".") || prefix.empty();
    // Indented by depth below the --module path.
    auto depth_of = [](const std::string& path) {
        return path.empty() ? 0 : static_cast<std::size_t>(std::count(path.begin(), path.end(), '.')) + 1;
    };
    const std::size_t depth = depth_of(m.path()) - (inside ? depth_of(prefix) : 0);
    if (inside && m.type_name().find("ModuleList") == std::string::npos) {
        const std::string indent(2 * depth, ' ');
        handles.push_back(m.register_forward_pre_hook([indent](const nn::Module& mod, const std::vector<Tensor>& in) {
            fmt::print("{}{} {}: in {}\n", indent, mod.path().empty() ? "<root>" : mod.path(), short_type(mod), shapes(in));
        }));
        handles.push_back(m.register_forward_hook(
            [indent](const nn::Module& mod, const std::vector<Tensor>&, const std::vector<Tensor>& out) {
                fmt::print("{}{} -> {}  {}\n", indent, mod.path().empty() ? "<root>" : mod.path(), shapes(out),
                           out.empty() ? "" : stats(out[0]));
            }));
    }
    for (const auto& [name, child] : m.named_children()) hook_under(*child, prefix, handles);
}

}  // namespace

int main(int argc, char** argv) {
    std::string module = "encoder_layers.0";
    int layers = 2;
    CLI::App app{"Print what each module of tutorial B's Transformer takes and makes, with forward hooks.",
                 "activations"};
    app.add_option("--module", module, "hook the modules under this path (\"\" for every module)")->capture_default_str();
    app.add_option("--layers", layers, "encoder and decoder layers")->capture_default_str()->transform(cli::count_in(1, 12));
    return cli::run_main(app, argc, argv, [&] {
        manual_seed(0);
        tb::Transformer model(/*src_vocab_size=*/10, /*tgt_vocab_size=*/9, /*d_model=*/16, /*num_heads=*/2,
                              static_cast<std::size_t>(layers), /*d_ff=*/32, /*max_seq_length=*/8, /*dropout=*/0.1f);
        model.eval();
        examples::check_module_path(model, module);
        std::vector<nn::HookHandle> handles;
        hook_under(model, module, handles);
        const Ids src{{1, 2, 3, 4, 0}, {5, 6, 0, 0, 0}}, tgt{{1, 2, 3}, {4, 5, 6}};  // 0 = PAD
        NoGradGuard no_grad;
        const Tensor logits = model.forward(src, tgt);
        fmt::print("logits {}\n", shape_str(logits.shape()));
        return 0;
    });
}
