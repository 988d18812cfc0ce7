// Exercise 07's grader: xtgrad's MultiHeadAttention with your switches, on the recorded run's
// weights and input, against what the notebook returned (symptom.hpp).
#include "exercise.hpp"
#include "grading.hpp"
#include "symptom.hpp"

#include <algorithm>

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

TEST_CASE("07_find_the_erratum: head 0's attention map and the output") {
    const nn::AttentionResult got = rerun(ex07::notebook_switches());
    GRADE_CLOSE("head 0's attention map (queries x keys)", leading(got.weights, {5, 5}),
                symptom::head0_map(), 1e-4);
    GRADE_CLOSE("the output of position 0, features 0..7", leading(got.context, {8}),
                symptom::output_row0(), 1e-4);
}

TEST_SUITE_END();
