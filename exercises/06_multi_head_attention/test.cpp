// Exercise 06's grader: your multi-head attention against nn::tutorial_d::MultiheadAttention
// (torch.nn.MultiheadAttention's arithmetic) with the same parameters: outputs, then gradients.
#include "exercise.hpp"
#include "diagnose.hpp"

#include <cmath>
#include <set>

using namespace xtgrad;
namespace td = xtgrad::nn::tutorial_d;

TEST_SUITE_BEGIN("06_multi_head_attention");

namespace {
constexpr std::size_t L = 4, S = 3, N = 2, E = 8, kHeads = 2;
struct Seeded {
    explicit Seeded(std::uint64_t seed) { manual_seed(seed); }
};
// The module and its inputs, the same numbers on every call (seeded).
struct Setup {
    Setup() {
        Generator gen(11);
        query = randn({L, N, E}, gen).requires_grad_(true);
        key = randn({S, N, E}, gen).requires_grad_(true);
        value = randn({S, N, E}, gen).requires_grad_(true);
    }
    Seeded seeded{7};  // before m: its parameters' initial values
    td::MultiheadAttention m{E, kHeads};
    Tensor query, key, value;
};
}  // namespace

TEST_CASE("06_multi_head_attention: output (Lq, N, E)") {
    Setup mine, ref;
    const Tensor got = ex06::multi_head_attention(mine.query, mine.key, mine.value, mine.m);
    const Tensor want = ref.m.forward(ref.query, ref.key, ref.value).attn_output;
    GRADE(grading::diagnose("attention output, the lesson's module", got.data(), want.data(), 1e-5));
}

TEST_CASE("06_multi_head_attention: gradients of the inputs and the parameters") {
    Setup mine, ref;
    const Tensor got = ex06::multi_head_attention(mine.query, mine.key, mine.value, mine.m);
    if (!got.requires_grad()) {
        GRADE("your output depends on no input or parameter (no graph): are the TODOs still returning a constant?");
        return;
    }
    sum(got * got).backward();
    const Tensor want = ref.m.forward(ref.query, ref.key, ref.value).attn_output;
    sum(want * want).backward();
    const std::pair<const char*, std::pair<const Tensor*, const Tensor*>> grads[] = {
        {"d loss / d out_proj.weight", {&mine.m.out_proj->weight, &ref.m.out_proj->weight}},
        {"d loss / d in_proj_weight", {&mine.m.in_proj_weight, &ref.m.in_proj_weight}},
        {"d loss / d in_proj_bias", {&mine.m.in_proj_bias, &ref.m.in_proj_bias}},
        {"d loss / d query", {&mine.query, &ref.query}},
        {"d loss / d key", {&mine.key, &ref.key}}};
    std::string m;
    for (const auto& [what, t] : grads)
        if (m.empty()) m = grading::diagnose(what, grading::grad_or_zeros(*t.first), t.second->grad_array(), 1e-4);
    GRADE(m);
}

namespace {
// Random modules and inputs: sequence lengths, batch, width and heads change with the seed.
struct Random {
    explicit Random(std::uint64_t seed)
        : L(1 + seed % 4), S(1 + (seed * 3) % 5), N(1 + seed % 2), heads(std::vector<std::size_t>{1, 2, 4}[seed % 3]),
          E(heads * (2 + seed % 3)), seed(seed), seeded(100 + seed), m(E, heads) {
        Generator gen(200 + seed);
        query = randn({L, N, E}, gen).requires_grad_(true);
        key = randn({S, N, E}, gen).requires_grad_(true);
        value = randn({S, N, E}, gen).requires_grad_(true);
    }
    std::size_t L, S, N, heads, E;
    std::uint64_t seed;
    Seeded seeded;
    td::MultiheadAttention m;
    Tensor query, key, value;
    std::string where() const {
        return fmt::format("Lq {}, Lk {}, batch {}, E {}, {} heads, seed {}", L, S, N, E, heads, seed);
    }
};

// Your function must not call the module's own forward, and its graph holds the pieces.
std::string built_from_pieces(std::uint64_t seed) {
    Random r(seed);
    int calls = 0;
    const nn::HookHandle hook = r.m.register_forward_pre_hook([&](const nn::Module&, const std::vector<Tensor>&) { ++calls; });
    const Tensor got = ex06::multi_head_attention(r.query, r.key, r.value, r.m);
    if (calls > 0)
        return "your function called the module's own forward: the exercise is to build multi-head attention from "
               "linear, reshape, permute and attention, and match the module";
    const std::set<std::string> ops = grading::ops_in_graph(got);
    for (const char* piece : {"LinearBackward", "ReshapeBackward", "PermuteBackward"})
        if (!ops.count(piece))
            return fmt::format("your output's graph has no {}: multi-head attention is built from the in-projection "
                               "(linear), the head split (reshape, permute) and attention",
                               piece);
    return "";
}

std::string random_case(std::uint64_t seed) {
    Random mine(seed), ref(seed);
    const Tensor got = ex06::multi_head_attention(mine.query, mine.key, mine.value, mine.m);
    const Tensor want = ref.m.forward(ref.query, ref.key, ref.value).attn_output;
    if (std::string m = grading::diagnose("attention output, " + mine.where(), got.data(), want.data(), 1e-5); !m.empty())
        return m;
    if (!got.requires_grad()) return "your output depends on no input or parameter (no graph)";
    sum(got * got).backward();
    sum(want * want).backward();
    if (std::string m = grading::diagnose("d loss / d in_proj_weight, " + mine.where(), grading::grad_or_zeros(mine.m.in_proj_weight),
                                          ref.m.in_proj_weight.grad_array(), 1e-4);
        !m.empty())
        return m + " (the output matches: a value computed outside the graph, with .data() or detach()?)";
    return grading::diagnose("d loss / d value, " + mine.where(), grading::grad_or_zeros(mine.value),
                             ref.value.grad_array(), 1e-4);
}

template <class F>
std::string all_seeds(F&& f) {
    for (std::uint64_t seed = 1; seed <= 10; ++seed)
        if (std::string m = f(seed); !m.empty()) return m;
    return "";
}
}  // namespace

TEST_CASE("06_multi_head_attention: 10 random modules and inputs (lengths, batch, width, heads), output then grads") {
    GRADE(all_seeds(random_case));
}

TEST_CASE("06_multi_head_attention: built from the pieces, not by the module's own forward") {
    GRADE(all_seeds(built_from_pieces));
}

TEST_SUITE_END();
