// Exercise 06's grader: your multi-head attention against nn::tutorial_d::MultiheadAttention
// (torch.nn.MultiheadAttention's arithmetic) with the same parameters: outputs, then gradients.
#include "exercise.hpp"
#include "grading.hpp"

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
    GRADE_CLOSE("attention output", got.data(), want.data(), 1e-5);
}

TEST_CASE("06_multi_head_attention: gradients of the inputs and the parameters") {
    Setup mine, ref;
    const Tensor got = ex06::multi_head_attention(mine.query, mine.key, mine.value, mine.m);
    REQUIRE_MESSAGE(got.requires_grad(), "your output depends on no input or parameter (no graph): are the TODOs "
                                         "still returning a constant?");
    sum(got * got).backward();
    const Tensor want = ref.m.forward(ref.query, ref.key, ref.value).attn_output;
    sum(want * want).backward();
    GRADE_CLOSE("d loss / d out_proj.weight", grading::grad_or_zeros(mine.m.out_proj->weight),
                ref.m.out_proj->weight.grad_array(), 1e-4);
    GRADE_CLOSE("d loss / d in_proj_weight", grading::grad_or_zeros(mine.m.in_proj_weight),
                ref.m.in_proj_weight.grad_array(), 1e-4);
    GRADE_CLOSE("d loss / d in_proj_bias", grading::grad_or_zeros(mine.m.in_proj_bias),
                ref.m.in_proj_bias.grad_array(), 1e-4);
    GRADE_CLOSE("d loss / d query", grading::grad_or_zeros(mine.query), ref.query.grad_array(), 1e-4);
    GRADE_CLOSE("d loss / d key", grading::grad_or_zeros(mine.key), ref.key.grad_array(), 1e-4);
}

TEST_SUITE_END();
