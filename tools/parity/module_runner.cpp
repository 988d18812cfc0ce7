#include "tools/parity/module_runner.hpp"

#include <xtgrad/autograd/error.hpp>

#include <cmath>
#include <cstdint>
#include <map>
#include <set>

#include <fmt/format.h>
#include <xtensor/xview.hpp>

namespace xtgrad::parity {

Tensor Inputs::tensor(const std::string& name) {
    auto it = tensors_.find(name);
    if (it != tensors_.end()) return it->second;
    bool differentiable = false;
    for (const json& in : f_.meta().value("inputs", json::array()))
        if (in.value("name", "") == name) differentiable = in.value("differentiable", false);
    Tensor t(f_.floats("input." + name), differentiable);
    t.set_name("input." + name);
    tensors_.emplace(name, t);
    return t;
}

namespace {

double max_abs(const Array& a) {
    double m = 0;
    for (float v : a)
        if (std::isfinite(v)) m = std::max(m, static_cast<double>(std::abs(v)));
    return m;
}

void compare_any(const Fixture& f, Report& r, const std::string& key, const Tensor* t, const Ids* ids, const Mask* mask) {
    if (!f.has(key)) return r.fail(key, "the fixture has no such file");
    const std::string dtype = f.dtype(key);
    if (dtype == "bool" || dtype == "|b1") {
        if (!mask) return r.fail(key, "expected a bool output, the runner gave none");
        return r.compare_exact(key, *mask, f.mask(key));
    }
    if (dtype == "int64" || dtype == "<i8") {
        if (!ids) return r.fail(key, "expected an int64 output, the runner gave none");
        return r.compare_exact(key, *ids, f.ids(key));
    }
    if (!t || !t->defined()) return r.fail(key, "expected a float output, the runner gave none");
    r.compare(key, t->data(), f.floats(key), f.tolerance());
}

template <class Map>
auto* lookup(Map& m, const std::string& k) {
    auto it = m.find(k);
    return it == m.end() ? nullptr : &it->second;
}

}  // namespace

void check_module(const Fixture& f, Report& r, nn::Module* module, const Forward& forward) {
    if (module) {
        module->load_state_dict(f.state(), /*strict=*/true);
        module->eval();
    }
    Inputs in(f);
    Outputs out = forward(in);

    compare_any(f, r, "output", out.output.defined() ? &out.output : nullptr,
                out.output_ids.size() ? &out.output_ids : nullptr, out.output_mask.size() ? &out.output_mask : nullptr);
    for (const json& a : f.meta().value("aux", json::array())) {
        const std::string name = a.at("name");
        compare_any(f, r, "aux." + name, lookup(out.aux, name), lookup(out.aux_ids, name), lookup(out.aux_masks, name));
    }
    if (!f.has("R")) return;

    // Backward with upstream gradient R: loss = sum(output * R).
    Array R = f.floats("R");
    R.reshape(out.output.shape());
    out.output.backward(R);

    const json grads = f.meta().value("grads", json::object());
    std::vector<std::string> keys;
    for (const json& n : grads.value("inputs", json::array())) keys.push_back("grad.input." + n.get<std::string>());
    for (const json& n : grads.value("params", json::array())) keys.push_back("grad.param." + n.get<std::string>());
    double S = 0;  // the case's largest gradient, the scale of near-zero tensors
    for (const std::string& k : keys) S = std::max(S, max_abs(f.floats(k)));
    std::set<std::string> near_zero;
    for (const json& k : f.meta().value("near_zero_in_f64", json::array())) near_zero.insert(k.get<std::string>());

    std::map<std::string, Tensor> params;
    if (module)
        for (auto& [name, t] : module->named_parameters()) params.emplace(name, t);
    const Tolerance tol = f.tolerance();
    const std::map<std::string, Allowance> kinks = kink_allowances(f.meta(), f.dir() + "/meta.json");
    for (const std::string& key : keys) {
        const auto kink = kinks.find(key);
        const Allowance extra = kink == kinks.end() ? Allowance{} : kink->second;
        const bool is_input = key.rfind("grad.input.", 0) == 0;
        const std::string name = key.substr(is_input ? 11 : 11);
        Tensor t;
        if (is_input) {
            auto it = in.used().find(name);
            if (it != in.used().end()) t = it->second;
        } else if (auto it = params.find(name); it != params.end()) {
            t = it->second;
        }
        if (!t.defined()) {
            r.fail(key, "no such " + std::string(is_input ? "input was used" : "parameter in the module"));
            continue;
        }
        const Array ref = f.floats(key);
        const Array got = t.has_grad() ? t.grad_array() : Array(xt::zeros<float>(ref.shape()));
        if (near_zero.count(key)) {
            r.compare(key, got, ref, tol, S, extra);
        } else if (name.size() >= 12 && name.compare(name.size() - 12, 12, "in_proj_bias") == 0 && ref.size() % 3 == 0) {
            // torch.nn.MultiheadAttention's k-block of the bias has an analytically zero gradient
            const std::size_t E = ref.size() / 3;
            for (int blk = 0; blk < 3; ++blk) {
                Array g = xt::view(got, xt::range(blk * E, (blk + 1) * E)), rf = xt::view(ref, xt::range(blk * E, (blk + 1) * E));
                r.compare(key + "[" + "qkv"[blk] + "]", g, rf, tol, blk == 1 ? S : -1, extra);
            }
        } else {
            r.compare(key, got, ref, tol, -1, extra);
        }
    }
}

}  // namespace xtgrad::parity
