// A batch of 0 sequences, or sequences of length 0, through each tutorial's Transformer: it
// passes (an empty result, as in PyTorch) or gets an xtgrad::Error naming the module — never
// a crash, a SIGFPE or garbage.
#include "tests/test_util.hpp"

#include <xtgrad/nn/tutorial_b/tutorial_b.hpp>
#include <xtgrad/nn/tutorial_c/tutorial_c.hpp>
#include <xtgrad/nn/tutorial_d/tutorial_d.hpp>

TEST_SUITE_BEGIN("nn");

using namespace xtgrad;

namespace {

// Runs f; passes if it returns, or if it throws an Error whose message names `module`: the
// module's type, or (an op's error inside it) its path, "in module '...'".
template <class F>
void passes_or_names(F&& f, const char* module, const char* what) {
    CAPTURE(what);
    try {
        f();
        CHECK(true);
    } catch (const Error& e) {
        const std::string msg = e.what();
        CHECK_MESSAGE((msg.find(module) != std::string::npos || msg.find("in module '") != std::string::npos),
                      "'" << module << "' is not in: " << msg);
    }
}

}  // namespace

TEST_CASE("empty batches and sequences: tutorial B's Transformer") {
    nn::tutorial_b::Transformer model(10, 10, 16, 2, 1, 32, 8, 0.f);
    passes_or_names([&] {
        Tensor y = model.forward(Ids::from_shape({0, 5}), Ids::from_shape({0, 5}));
        CHECK(y.numel() == 0);
    }, "Transformer", "batch 0");
    passes_or_names([&] { model.forward(xt::ones<std::int64_t>({2, 0}), xt::ones<std::int64_t>({2, 3})); },
                    "Transformer", "source length 0");
}

TEST_CASE("empty batches and sequences: tutorial C's Transformer") {
    nn::tutorial_c::Transformer model(
        nn::tutorial_c::Config().d_model(16).d_ff(32).d_k(4).d_v(4).n_layers(1).n_heads(2));
    passes_or_names([&] {
        nn::tutorial_c::TransformerOutput out = model.forward(Ids::from_shape({0, 7}), Ids::from_shape({0, 7}));
        CHECK(out.logits.numel() == 0);
    }, "Transformer", "batch 0");
    // torch's Conv1d refuses a length-0 input too; the error names the feed-forward that ran it.
    test::expect_error([&] { model.forward(xt::ones<std::int64_t>({1, 0}), xt::ones<std::int64_t>({1, 3})); },
                       {"tutorial_c::PoswiseFeedForwardNet 'encoder.layers.0.pos_ffn'", "(1,0,16)", "length 0"});
}

TEST_CASE("empty batches and sequences: tutorial D's Transformer (torch.nn.Transformer)") {
    nn::tutorial_d::Transformer model(nn::tutorial_d::TransformerOptions(16, 2, 1, 1).dim_feedforward(32).dropout(0.f));
    passes_or_names([&] {
        Tensor y = model.forward(Tensor::zeros({5, 0, 16}), Tensor::zeros({4, 0, 16}));  // (S, N, E), N = 0
        CHECK(y.numel() == 0);
    }, "Transformer", "batch 0");
    passes_or_names([&] { model.forward(Tensor::zeros({0, 2, 16}), Tensor::zeros({3, 2, 16})); },
                    "Transformer", "source length 0");
}

TEST_SUITE_END();
