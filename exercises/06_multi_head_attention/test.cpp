// Exercise 06's grader: your multi-head attention against nn::tutorial_d::MultiheadAttention
// (torch.nn.MultiheadAttention's arithmetic) with the same parameters: outputs, then gradients.
#include "exercise.hpp"
#include "diagnose.hpp"

#include <cmath>
#include <cstdlib>
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

// The module's forward from the pieces, right or as a usual slip makes it: the likely causes of
// a wrong output.
enum class Slip { none, split_no_permute, merge_no_permute, scale_embed, scale_tutorial_a, one_block, v_from_k, no_in_bias };
Array pieces(const Tensor& query, const Tensor& key, const Tensor& value, const td::MultiheadAttention& m, Slip slip) {
    NoGradGuard no_grad;
    const long E = static_cast<long>(m.embed_dim), h = static_cast<long>(m.num_heads), hd = static_cast<long>(m.head_dim);
    const long Lq = static_cast<long>(query.shape()[0]), Lk = static_cast<long>(key.shape()[0]),
               N = static_cast<long>(query.shape()[1]);
    const auto rows = [&](const Tensor& x, long block) {
        if ((slip == Slip::one_block && block == 1) || (slip == Slip::v_from_k && block == 2)) --block;
        const auto first = static_cast<std::size_t>(block * E), count = static_cast<std::size_t>(E);
        return slip == Slip::no_in_bias ? linear(x, narrow(m.in_proj_weight, 0, first, count))
                                        : linear_rows(x, m.in_proj_weight, m.in_proj_bias, first, count);
    };
    const auto split = [&](const Tensor& t, long L) {
        // tutorial A's erratum 3: (N·h, L, hd) cut straight from consecutive memory
        return slip == Slip::split_no_permute ? reshape(t, {N, h, L, hd}) : permute(reshape(t, {L, N, h, hd}), {1, 2, 0, 3});
    };
    nn::AttentionOptions o;
    o.scale = 1.f / std::sqrt(static_cast<float>(slip == Slip::scale_embed         ? E
                                                 : slip == Slip::scale_tutorial_a ? static_cast<float>(hd) / static_cast<float>(h)
                                                                                   : hd));
    const Tensor ctx = nn::scaled_dot_product_attention(split(rows(query, 0), Lq), split(rows(key, 1), Lk), split(rows(value, 2), Lk), o).context;
    const Tensor merged = slip == Slip::merge_no_permute ? reshape(ctx, {Lq, N, E}) : reshape(permute(ctx, {2, 0, 1, 3}), {Lq, N, E});
    return m.out_proj->forward(merged).data();
}
// A wrong output, with the slip it matches named.
std::string output_off(const std::string& what, const Tensor& got, const Tensor& query, const Tensor& key,
                       const Tensor& value, const td::MultiheadAttention& m, const Array& want) {
    const auto as = [&](Slip s) { return pieces(query, key, value, m, s); };
    return grading::diagnose(
        what, got.data(), want, 1e-5,
        {{"the heads are cut by a reshape to (N, h, L, head_dim) without the permute: tutorial A's erratum 3 (reshape "
          "to (L, N, h, head_dim), then permute)",
          as(Slip::split_no_permute)},
         {"the heads are merged by a reshape without the permute back to (Lq, N, h, head_dim)", as(Slip::merge_no_permute)},
         {"the scale is 1/√E: it is 1/√head_dim, the width of one head", as(Slip::scale_embed)},
         {"the scale is tutorial A's 1/√(head_dim / h) (erratum 4): it is 1/√head_dim", as(Slip::scale_tutorial_a)},
         {"k uses q's rows of in_proj_weight: W_q is rows [0, E), W_k [E, 2E), W_v [2E, 3E)",
          as(Slip::one_block)},
         {"v uses k's rows of in_proj_weight: W_q is rows [0, E), W_k [E, 2E), W_v [2E, 3E)", as(Slip::v_from_k)},
         {"the in-projection leaves out in_proj_bias: each of q, k, v adds its block of the bias", as(Slip::no_in_bias)}});
}
// A gradient's verdict once the output matches: a gradient of 0 means no path reached it.
std::string grad_off(const std::string& what, const Array& got, const Array& want) {
    std::string m = grading::diagnose(what, got, want, 1e-4);
    if (m.empty()) return m;
    if (xt::all(xt::equal(got, 0.f)))
        return fmt::format("{}: 0 everywhere, though the output matches: no gradient reached it. Is it left out (in_proj_bias "
                           "starts at 0, so leaving it out changes no output here), or used only through .data() or "
                           "detach()?",
                           what);
    return m + " (the output matches: a value computed outside the graph, with .data() or detach()?)";
}
std::string no_graph(bool output_matches) {
    return output_matches ? "your output matches but has no graph: it was computed outside it (.data(), Tensor(array) or "
                            "detach()?), so no gradient can flow"
                          : "your output depends on no input or parameter (no graph): are the TODOs still returning a "
                            "constant?";
}
}  // namespace

TEST_CASE("06_multi_head_attention: output (Lq, N, E)") {
    Setup mine, ref;
    const Tensor want = ref.m.forward(ref.query, ref.key, ref.value).attn_output;
    try {
        const Tensor got = ex06::multi_head_attention(mine.query, mine.key, mine.value, mine.m);
        GRADE(output_off("attention output, the lesson's module", got, mine.query, mine.key, mine.value, mine.m, want.data()));
    } catch (const std::exception& e) {
        GRADE(grading::threw("the lesson's module (Lq 4, Lk 3, batch 2, E 8, 2 heads)", e));
    }
}

TEST_CASE("06_multi_head_attention: gradients of the inputs and the parameters") {
    Setup mine, ref;
    Tensor got;
    try {
        got = ex06::multi_head_attention(mine.query, mine.key, mine.value, mine.m);
    } catch (const std::exception& e) {
        GRADE(grading::threw("the lesson's module (Lq 4, Lk 3, batch 2, E 8, 2 heads)", e));
        return;
    }
    const Tensor want = ref.m.forward(ref.query, ref.key, ref.value).attn_output;
    if (!got.requires_grad()) {
        GRADE(no_graph(grading::diagnose("", got.data(), want.data(), 1e-5).empty()));
        return;
    }
    // a wrong output has wrong gradients too: the output's own message says why
    if (!grading::diagnose("", got.data(), want.data(), 1e-5).empty()) {
        GRADE("not graded until the output is right (above)");
        return;
    }
    sum(got * got).backward();
    sum(want * want).backward();
    const std::pair<const char*, std::pair<const Tensor*, const Tensor*>> grads[] = {
        {"d loss / d out_proj.weight", {&mine.m.out_proj->weight, &ref.m.out_proj->weight}},
        {"d loss / d in_proj_weight", {&mine.m.in_proj_weight, &ref.m.in_proj_weight}},
        {"d loss / d in_proj_bias", {&mine.m.in_proj_bias, &ref.m.in_proj_bias}},
        {"d loss / d query", {&mine.query, &ref.query}},
        {"d loss / d key", {&mine.key, &ref.key}}};
    std::string m;
    for (const auto& [what, t] : grads)
        if (m.empty()) m = grad_off(what, grading::grad_or_zeros(*t.first), t.second->grad_array());
    GRADE(m);
}

namespace {
// Random modules and inputs: sequence lengths, batch, width and heads change with the seed.
struct Random {
    explicit Random(std::uint64_t seed)
        : L(1 + seed % 4), S(1 + (seed * 3) % 5), N(1 + seed % 2), heads(std::vector<std::size_t>{1, 2, 4}[seed % 3]),
          E(heads * (2 + seed % 3)), seed(seed), seeded(100 + seed), m(E, heads) {
        Generator gen(200 + seed);
        // biases not 0 (torch starts them at 0): a left-out bias then shows in the output
        m.in_proj_bias.mutable_data() = randn({3 * E}, gen).data();
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
    if (std::string m = output_off("attention output, " + mine.where(), got, mine.query, mine.key, mine.value, mine.m, want.data());
        !m.empty())
        return m;
    if (!got.requires_grad()) return no_graph(true);
    sum(got * got).backward();
    sum(want * want).backward();
    if (std::string m = grad_off("d loss / d in_proj_weight, " + mine.where(), grading::grad_or_zeros(mine.m.in_proj_weight),
                                 ref.m.in_proj_weight.grad_array());
        !m.empty())
        return m;
    return grad_off("d loss / d value, " + mine.where(), grading::grad_or_zeros(mine.value), ref.value.grad_array());
}

template <class F>
std::string all_seeds(F&& f) {
    for (std::uint64_t seed = 1; seed <= 10; ++seed) try {
            if (std::string m = f(seed); !m.empty()) return m;
        } catch (const std::exception& e) {  // named with its case: a throw may depend on the sizes
            return grading::threw(Random(seed).where(), e);
        }
    return "";
}
}  // namespace

TEST_CASE("06_multi_head_attention: 10 random modules and inputs (lengths, batch, width, heads), output then grads") {
    GRADE(all_seeds(random_case));
}

TEST_CASE("06_multi_head_attention: built from the pieces, not by the module's own forward") {
    GRADE(all_seeds(built_from_pieces));
}

// The grader's own check (exercises/check.sh runs it with XTGRAD_GRADER_SELF_TEST=1): a left-out
// in_proj_bias is named, in the output of a random module and in the gradient of the lesson's.
TEST_CASE("grader_self_test: wrong answers, 06_multi_head_attention" *
          doctest::skip(std::getenv("XTGRAD_GRADER_SELF_TEST") == nullptr)) {
    Random r(1);
    const Tensor want = r.m.forward(r.query, r.key, r.value).attn_output;
    Tensor got;
    {
        const long E = static_cast<long>(r.E), h = static_cast<long>(r.heads), hd = E / h, N = static_cast<long>(r.N);
        const auto heads = [&](const Tensor& x, std::size_t block) {  // linear without the bias
            const Tensor p = linear(x, narrow(r.m.in_proj_weight, 0, block * r.E, r.E));
            return permute(reshape(p, {static_cast<long>(x.size(0)), N, h, hd}), {1, 2, 0, 3});
        };
        nn::AttentionOptions o;
        o.scale = 1.f / std::sqrt(static_cast<float>(hd));
        const Tensor ctx = nn::scaled_dot_product_attention(heads(r.query, 0), heads(r.key, 1), heads(r.value, 2), o).context;
        got = r.m.out_proj->forward(reshape(permute(ctx, {2, 0, 1, 3}), {static_cast<long>(r.L), N, E}));
    }
    std::string m = output_off("out", got, r.query, r.key, r.value, r.m, want.data());
    CHECK_MESSAGE(m.find("the in-projection leaves out in_proj_bias") != std::string::npos, m);
    m = grad_off("d loss / d in_proj_bias", xt::zeros<float>({std::size_t{24}}), Array(xt::ones<float>({std::size_t{24}})));
    CHECK_MESSAGE(m.find("d loss / d in_proj_bias: 0 everywhere, though the output matches: no gradient reached it") == 0, m);
    CHECK(no_graph(true).find("your output matches but has no graph") == 0);
}

TEST_SUITE_END();
