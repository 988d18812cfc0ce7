// torch.nn's layers (nn/layers.hpp) take their <Layer>Options as the PyTorch C++ frontend
// (nn/layer_options.hpp): a layer built from its Options is the layer its positional
// constructor builds, the setters chain, and bad options throw an Error naming the layer.
#include <xtgrad/nn/layers.hpp>
#include "tests/nn/module_test_util.hpp"
#include "tests/test_util.hpp"

#include <limits>

TEST_SUITE_BEGIN("nn");

using namespace xtgrad;
using namespace xtgrad::nn;
using test::same_module;

TEST_CASE("layer options: Linear, Embedding, Conv1d, LayerNorm, LayerNormUnbiased build the positional layer") {
    same_module([] { return Linear(LinearOptions(4, 3)); }, [] { return Linear(4, 3); });
    same_module([] { return Linear(LinearOptions(4, 3).bias(false)); }, [] { return Linear(4, 3, false); });
    same_module([] { return Embedding(EmbeddingOptions(5, 3).padding_idx(2)); }, [] { return Embedding(5, 3, 2); });
    same_module([] { return Conv1d(Conv1dOptions(4, 6, 3).padding(1).bias(false)); }, [] { return Conv1d(4, 6, 3, 1, false); });
    same_module([] { return LayerNorm(LayerNormOptions(5).eps(1e-6f)); }, [] { return LayerNorm(5, 1e-6f); });
    same_module([] { return LayerNormUnbiased(LayerNormUnbiasedOptions(5)); }, [] { return LayerNormUnbiased(5); });
    CHECK_FALSE(Linear(LinearOptions(4, 3).bias(false)).bias.defined());
    CHECK(Conv1d(Conv1dOptions(4, 6, 3).padding(2)).padding == 2);
    CHECK(LayerNorm(LayerNormOptions(5).eps(1e-6f)).eps == 1e-6f);
    CHECK(LayerNormUnbiased(LayerNormUnbiasedOptions(5).epsilon(1e-3f)).epsilon == 1e-3f);
}

TEST_CASE("layer options: torch's defaults; the layers without parameters keep their option") {
    const LinearOptions linear(4, 3);
    CHECK(linear.bias());
    CHECK_FALSE(EmbeddingOptions(5, 3).padding_idx().has_value());
    const Conv1dOptions conv(4, 6, 3);
    CHECK(conv.padding() == 0);
    CHECK(conv.bias());
    CHECK(LayerNormOptions(5).eps() == 1e-5f);
    CHECK(LayerNormUnbiasedOptions(5).epsilon() == 1e-6f);  // tutorial A's
    CHECK(DropoutOptions().p() == 0.5f);
    CHECK(DropoutOptions().generator() == nullptr);
    CHECK(GELUOptions().approximate() == GeluApproximation::none);
    Generator gen(1);
    CHECK(Dropout(DropoutOptions(0.25f).generator(&gen)).p == Dropout(0.25f, &gen).p);
    CHECK(GELU(GELUOptions().approximate(GeluApproximation::tanh)).approximate == GELU(GeluApproximation::tanh).approximate);
    CHECK(Softmax(SoftmaxOptions(-1)).dim == Softmax(-1).dim);
    const EmbeddingFromPretrainedOptions pretrained;
    CHECK(pretrained.freeze());
    CHECK_FALSE(pretrained.padding_idx().has_value());
}

TEST_CASE("layer options: every setter returns the options it set, for chaining") {
    LinearOptions linear(4, 3);
    CHECK(&linear.bias(false) == &linear);
    CHECK(&linear.in_features(5).out_features(6) == &linear);
    CHECK(linear.in_features() == 5);
    EmbeddingOptions embedding(5, 3);
    CHECK(&embedding.padding_idx(1) == &embedding);
    Conv1dOptions conv(4, 6, 3);
    CHECK(&conv.padding(1).bias(false) == &conv);
    LayerNormOptions norm(5);
    CHECK(&norm.eps(1e-3f) == &norm);
    LayerNormUnbiasedOptions unbiased(5);
    CHECK(&unbiased.epsilon(1e-3f) == &unbiased);
    DropoutOptions dropout;
    CHECK(&dropout.p(0.1f).generator(nullptr) == &dropout);
    GELUOptions gelu;
    CHECK(&gelu.approximate(GeluApproximation::tanh) == &gelu);
    SoftmaxOptions softmax(0);
    CHECK(&softmax.dim(1) == &softmax);
    EmbeddingFromPretrainedOptions pretrained;
    CHECK(&pretrained.freeze(false).padding_idx(0) == &pretrained);
}

TEST_CASE("layer options: Embedding's padding_idx follows torch (negative counts from the end; -1 positional = none)") {
    CHECK(Embedding(EmbeddingOptions(5, 3).padding_idx(-1)).padding_idx == 4);
    CHECK(Embedding(EmbeddingOptions(5, 3).padding_idx(-5)).padding_idx == 0);
    CHECK(Embedding(5, 3).padding_idx == -1);
    const Embedding padded(EmbeddingOptions(5, 3).padding_idx(-2));
    for (std::size_t j = 0; j < 3; ++j) CHECK(padded.weight.data()(3, j) == 0.f);  // row 5 - 2 starts at zero
    auto table = Embedding::from_pretrained(Tensor::ones({3, 2}), EmbeddingFromPretrainedOptions().freeze(false).padding_idx(1));
    auto positional = Embedding::from_pretrained(Tensor::ones({3, 2}), /*freeze=*/false, /*padding_idx=*/1);
    CHECK(table->weight.requires_grad());
    CHECK(table->padding_idx == 1);
    CHECK(positional->weight.requires_grad());
    CHECK(positional->padding_idx == 1);
    CHECK(xt::all(xt::equal(table->weight.data(), positional->weight.data())));
}

TEST_CASE("layer options: bad options throw an Error naming the layer and the value") {
    test::expect_error([] { Embedding(EmbeddingOptions(3, 2).padding_idx(3)); }, {"Embedding", "padding_idx 3", "3 embeddings"});
    test::expect_error([] { Embedding(EmbeddingOptions(3, 2).padding_idx(-4)); }, {"Embedding", "padding_idx -4"});
    test::expect_error([] { Embedding::from_pretrained(Tensor::ones({3, 2}), EmbeddingFromPretrainedOptions().padding_idx(7)); },
                       {"Embedding", "padding_idx 7"});
    test::expect_error([] { Conv1d(Conv1dOptions(4, 6, 0)); }, {"Conv1d", "kernel_size"});
    test::expect_error([] { LayerNorm(LayerNormOptions(5).eps(-1e-5f)); }, {"LayerNorm", "eps", "-1e-05"});
    test::expect_error([] { LayerNormUnbiased(LayerNormUnbiasedOptions(5).epsilon(std::numeric_limits<float>::quiet_NaN())); },
                       {"LayerNormUnbiased", "epsilon", "nan"});
    test::expect_error([] { Dropout(DropoutOptions(1.5f)); }, {"Dropout", "1.5"});
    CHECK(Linear(LinearOptions(0, 3)).weight.shape() == Shape{3, 0});  // an empty layer is valid, as torch
}

TEST_SUITE_END();
