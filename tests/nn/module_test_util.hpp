// Helpers the module tests of every tutorial share.
#pragma once

#include <xtgrad/nn/module.hpp>
#include "tests/test_util.hpp"
#include <xtgrad/xtgrad.hpp>

#include <nlohmann/json.hpp>
#include <xtensor/xmath.hpp>

#include <cstdint>
#include <fstream>
#include <initializer_list>
#include <set>
#include <string>
#include <vector>

namespace xtgrad::test {

// The FFN's ReLU has a kink at 0: a finite-difference step of gradcheck's default 1e-2 that
// crosses it (a pre-activation within 1e-2 of 0, common among hundreds) gives a wrong
// numeric slope. Steps of 1e-3 rarely cross it and stay far above float32 noise here.
inline const GradcheckOptions kReluSafe = [] {
    GradcheckOptions o;
    o.eps = 1e-3;
    return o;
}();

// xs, then the trainable parameters of m: everything gradcheck should perturb.
inline std::vector<Tensor> with_parameters(const nn::Module& m, std::vector<Tensor> xs = {}) {
    for (const Tensor& p : m.parameters())
        if (p.requires_grad()) xs.push_back(p);
    return xs;
}

// A file of a committed fixture case (tests/fixtures/small/CASE/FILE), and its meta.json parsed.
inline std::string fixture_path(const std::string& case_name, const std::string& file) {
    return std::string(XTGRAD_FIXTURE_DIR) + "/small/" + case_name + "/" + file;
}
inline nlohmann::json fixture_meta(const std::string& case_name) {
    std::ifstream in(fixture_path(case_name, "meta.json"));
    REQUIRE(in);
    return nlohmann::json::parse(in);
}

// The state names torch listed in a fixture's meta.json ("params" or "buffers"), in torch's order.
inline std::vector<std::string> meta_names(const std::string& case_name, const char* list) {
    const nlohmann::json meta = fixture_meta(case_name);  // a named json: the loop below refers into it
    std::vector<std::string> out;
    for (const auto& p : meta.at(list)) out.push_back(p.at("name").get<std::string>());
    return out;
}

// The names of m's parameters that train (trainable) or are frozen (not), in order.
inline std::vector<std::string> names_where(const nn::Module& m, bool trainable) {
    std::vector<std::string> out;
    for (auto& [name, t] : m.named_parameters())
        if (t.requires_grad() == trainable) out.push_back(name);
    return out;
}

// One token id as a (1, 1) batch (a braced Ids{{1}} is ambiguous for xtensor).
inline Ids single_token(std::int64_t id) {
    Ids out = Ids::from_shape({1, 1});
    out(0, 0) = id;
    return out;
}

// The names of a named_parameters() / named_buffers() list, in order.
inline std::vector<std::string> names_of(const nn::NamedTensors& list) {
    std::vector<std::string> out;
    for (auto& [name, t] : list) out.push_back(name);
    return out;
}

// A module built from its Options and the same module from its positional constructor, each
// after the same seed: the state names and every initial value agree (docs/architecture.md, "Module options").
template <class FromOptions, class Positional>
void same_module(FromOptions&& from_options, Positional&& positional) {
    manual_seed(3);
    auto a = from_options();
    manual_seed(3);
    auto b = positional();
    const nn::NamedTensors pa = a.named_parameters(), pb = b.named_parameters();
    REQUIRE(names_of(pa) == names_of(pb));
    CHECK_FALSE(pa.empty());
    for (std::size_t i = 0; i < pa.size(); ++i) {
        CAPTURE(pa[i].first);
        CHECK(pa[i].second.shape() == pb[i].second.shape());
        CHECK(xt::all(xt::equal(pa[i].second.data(), pb[i].second.data())));
    }
}

// One module forward's result for comparing two paths through it: the output, the backward op
// names behind it (read before backward releases the graph), and, after a backward of
// sum(out · r) with r fixed, every parameter's gradient and then each input's.
struct PathRun {
    Array out;
    std::vector<Array> grads;
    std::set<std::string> ops;
};
inline PathRun backward_through(const Tensor& out, const nn::Module& m, std::initializer_list<const Tensor*> inputs) {
    PathRun r{out.data(), {}, ops_behind(out)};
    sum(out * rnd(out.shape(), 5)).backward();
    for (const Tensor& p : m.parameters()) r.grads.push_back(p.grad_array());
    for (const Tensor* t : inputs) r.grads.push_back(t->grad_array());
    return r;
}

// A multi-head attention through the packed heads (nn::attention_on_packed_heads) against its split
// path: "" when the packed one took one attention node and no permute, the split one its permutes,
// and both gave the same output and gradients bit for bit, but for the first `rounded_grads`
// (parameters' gradients whose products sum rows in another order, equal to float rounding:
// tutorial D sequence first); else what differs. The test case CHECKs it is "".
inline std::string packed_heads_path_differences(const PathRun& packed, const PathRun& split,
                                                 std::size_t rounded_grads = 0) {
    std::string diff;
    const auto note = [&](const std::string& what) { diff += (diff.empty() ? "" : "; ") + what; };
    if (packed.ops.count("AttentionContextBackward") != 1) note("the packed path has no single AttentionContextBackward");
    if (packed.ops.count("PermuteBackward") != 0) note("the packed path permutes");  // no transposes, no head copies
    if (split.ops.count("PermuteBackward") != 1) note("the split path does not permute");
    if (!(packed.out == split.out)) note("output");
    if (packed.grads.size() != split.grads.size()) return diff + "; gradient counts";
    for (std::size_t i = 0; i < packed.grads.size(); ++i) {
        const Array &a = packed.grads[i], &b = split.grads[i];
        const bool same = i < rounded_grads ? a.shape() == b.shape() && max_abs_diff(a, b) <= 1e-5f * (1.f + xt::amax(xt::abs(b))())
                                            : a == b;
        if (a.size() == 0) note("gradient " + std::to_string(i) + " not computed");
        else if (!same) note("gradient " + std::to_string(i));
    }
    return diff;
}

}  // namespace xtgrad::test
