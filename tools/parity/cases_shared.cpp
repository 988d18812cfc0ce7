// Runners for the building blocks every tutorial shares (docs/fixtures.md, section Config keys).
#include <xtgrad/autograd/ops.hpp>
#include <xtgrad/nn/layers.hpp>
#include "tools/parity/module_runner.hpp"
#include "tools/parity/register_all.hpp"

namespace xtgrad::parity {

using std::size_t;

void register_shared_runners() {
    register_module_runner<nn::Linear>(
        "linear",
        [](const Fixture& f) {
            return std::make_shared<nn::Linear>(f.cfg_int("in_features"), f.cfg_int("out_features"), f.cfg_bool("bias", true));
        },
        [](nn::Linear& m, Inputs& in) { return Outputs(m.forward(in.tensor("x"))); });

    auto embedding = [](const Fixture& f) {
        const json& c = f.config();
        const long pad = c.contains("padding_idx") && !c["padding_idx"].is_null() ? f.cfg_int("padding_idx", INT_MIN) : -1;
        return std::make_shared<nn::Embedding>(f.cfg_int("num_embeddings"), f.cfg_int("embedding_dim"), pad);
    };
    auto lookup = [](nn::Embedding& m, Inputs& in) { return Outputs(m.forward(in.ids("ids"))); };
    register_module_runner<nn::Embedding>("embedding", embedding, lookup);
    register_module_runner<nn::Embedding>("embedding_pad", embedding, lookup);

    register_module_runner<nn::Conv1d>(
        "conv1d",
        [](const Fixture& f) {
            return std::make_shared<nn::Conv1d>(f.cfg_int("in_channels"), f.cfg_int("out_channels"), f.cfg_int("kernel_size"),
                                                f.cfg_int("padding"));
        },
        [](nn::Conv1d& m, Inputs& in) { return Outputs(m.forward(in.tensor("x"))); });

    register_module_runner<nn::LayerNorm>(
        "layernorm_torch",
        [](const Fixture& f) {
            return std::make_shared<nn::LayerNorm>(f.cfg_int("normalized_shape"), static_cast<float>(f.cfg_float("eps")));
        },
        [](nn::LayerNorm& m, Inputs& in) { return Outputs(m.forward(in.tensor("x"))); });

    register_module_runner<nn::LayerNormUnbiased>(
        "layernorm_custom",
        [](const Fixture& f) {
            return std::make_shared<nn::LayerNormUnbiased>(f.cfg_int("features"), static_cast<float>(f.cfg_float("epsilon")));
        },
        [](nn::LayerNormUnbiased& m, Inputs& in) { return Outputs(m.forward(in.tensor("x"))); });

    register_runner("cross_entropy", [](const Fixture& f, Report& r) {
        check_module(f, r, nullptr, [&](Inputs& in) {
            return Outputs(cross_entropy(in.tensor("logits"), in.ids("target"), f.cfg_int("ignore_index", INT_MIN),
                                         static_cast<float>(f.cfg_float("label_smoothing"))));
        });
    });
}

}  // namespace xtgrad::parity
