// Exercise 07's grader: xtgrad's MultiHeadAttention with your switches, on the recorded run's
// weights and input, against what the notebook returned (symptom.hpp).
#include "exercise.hpp"
#include "grading.hpp"
#include "symptom.hpp"

#include <algorithm>
#include <cstdlib>
#include <utility>

// one verdict: its message alone when not empty, one passed assertion when it is
#define GRADE_CLOSE_MSG(msg)                \
    do {                                    \
        const std::string grade_m_ = (msg); \
        if (grade_m_.empty())               \
            CHECK(grade_m_.empty());        \
        else                                \
            FAIL_CHECK(grade_m_);           \
    } while (0)

using namespace xtgrad;
namespace ta = xtgrad::nn::tutorial_a;

TEST_SUITE_BEGIN("07_find_the_erratum");

namespace {
// The recorded run: MultiHeadAttention(64, 8) built after manual_seed(5), self-attention on
// randn(1, 5, 64) drawn from Generator(6), no mask.
nn::AttentionResult rerun(const ta::Errata& switches) {
    manual_seed(5);
    const ta::MultiHeadAttention mha(64, 8, 0.f, switches);
    Generator gen(6);
    const Tensor x = randn({1, 5, 64}, gen);
    NoGradGuard no_grad;
    return mha.forward(x, x, x);
}
// The mean over every head's queries of the largest attention weight: 1 = each query looks at
// one key only, 1/5 = uniform over the 5 keys.
double mean_largest_weight(const Tensor& attention) {
    const Array& a = attention.data();
    const std::size_t rows = a.size() / 5;
    double total = 0;
    for (std::size_t r = 0; r < rows; ++r) total += *std::max_element(a.data() + r * 5, a.data() + r * 5 + 5);
    return total / static_cast<double>(rows);
}
// The first elements of a row-major array, in the given shape (head 0's map, position 0's features).
Array leading(const Tensor& t, const Shape& shape) {
    Array out = xt::zeros<float>(shape);
    std::copy_n(t.data().data(), out.size(), out.data());
    return out;
}
}  // namespace

TEST_CASE("07_find_the_erratum: how peaked the attention is") {
    const nn::AttentionResult got = rerun(ex07::notebook_switches());
    GRADE_SCALAR("the mean of each query's largest attention weight", mean_largest_weight(got.weights),
                 symptom::kMeanLargestWeight, 1e-4);
}

// head 0's map and the output against the recording: two messages, "" where they match.
static std::pair<std::string, std::string> maps_and_output(const ta::Errata& switches) {
    const nn::AttentionResult got = rerun(switches);
    const std::string map = grading::mismatch("head 0's attention map (queries x keys)", leading(got.weights, {5, 5}),
                                              symptom::head0_map(), 1e-4);
    std::string out = grading::mismatch("the output of position 0, features 0..7", leading(got.context, {8}),
                                        symptom::output_row0(), 1e-4);
    // the maps right and the output not: what differs acts after the attention
    if (map.empty() && !out.empty())
        out += "; the attention maps match, so the difference comes after the attention: which switch acts there?";
    return {map, out};
}

TEST_CASE("07_find_the_erratum: head 0's attention map and the output") {
    const auto [map, out] = maps_and_output(ex07::notebook_switches());
    GRADE_CLOSE_MSG(map);
    GRADE_CLOSE_MSG(out);
}

// The grader's own check (exercises/check.sh runs it with XTGRAD_GRADER_SELF_TEST=1): the two
// right switches and a third that acts after the attention: the output's message says where.
TEST_CASE("grader_self_test: wrong answers, 07_find_the_erratum" *
          doctest::skip(std::getenv("XTGRAD_GRADER_SELF_TEST") == nullptr)) {
    ta::Errata all;
    all.split = ta::HeadSplit::view_only;
    all.scale = ta::ScaleRule::dk_over_heads;
    all.layer_norm = ta::LayerNormKind::custom;
    const auto [map, out] = maps_and_output(all);
    CHECK(map.empty());
    CHECK_MESSAGE(out.find("the attention maps match, so the difference comes after the attention") != std::string::npos, out);
}

TEST_SUITE_END();
