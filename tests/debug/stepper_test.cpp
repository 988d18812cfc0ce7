// BackwardStepper (autograd/debug.hpp): one node per step, in the engine's order, with the
// same gradients as backward().
#include "test_util.hpp"
#include "winter_games_small.hpp"

using namespace xtgrad;

TEST_SUITE_BEGIN("debug");

namespace {

std::vector<std::string> engine_order(const Tensor& loss) {
    TraceTable trace;
    loss.backward();
    std::vector<std::string> ops;
    for (const TraceTable::Row& r : trace.rows()) ops.push_back(r.op + " @" + r.module_path);
    return ops;
}

}  // namespace

TEST_CASE("the stepper visits the Transformer's nodes in the engine's order, with the same gradients") {
    test::WinterGames ref = test::winter_games_loss(3), stepped = test::winter_games_loss(3);
    const std::vector<std::string> expected = engine_order(ref.loss);

    debug::BackwardStepper s(stepped.loss);
    std::vector<std::string> seen;
    CHECK(s.op() == "CrossEntropyBackward");
    CHECK(s.grad_out().size() == 1);
    CHECK(s.grad_out()(0) == 1.f);
    while (!s.done()) {
        CHECK(s.index() == seen.size());
        CHECK(s.output().grad_fn().get() == &s.node());
        CHECK(shape_of(s.grad_out()) == s.output().shape());  // its values may be freed; its shape never
        seen.push_back(s.op() + " @" + s.module_path());
        s.step();
    }
    CHECK(seen == expected);

    const nn::NamedTensors a = ref.model->named_parameters(), b = stepped.model->named_parameters();
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
        INFO(a[i].first);
        REQUIRE(a[i].second.has_grad() == b[i].second.has_grad());
        if (a[i].second.has_grad()) CHECK(test::max_abs_diff(a[i].second.grad_array(), b[i].second.grad_array()) == 0.f);
    }
}

TEST_CASE("stepping to a module: the gradient flowing into W_Q of the first encoder layer") {
    test::WinterGames w = test::winter_games_loss();
    debug::BackwardStepper s(w.loss);
    while (!s.done() && s.module_path() != "encoder.layers.0.enc_self_attn.W_Q") s.step();
    REQUIRE_FALSE(s.done());
    CHECK(s.op() == "LinearBackward");
    CHECK(s.grad_out().shape() == std::vector<std::size_t>{1, 7, 16});
    const Tensor& weight = w.model->encoder->layers->operator[](0).enc_self_attn->W_Q->weight;
    CHECK_FALSE(weight.has_grad());
    s.step();
    CHECK(weight.has_grad());
    s.run_to_end();
    CHECK(s.done());
    test::expect_error([&] { s.step(); }, {"BackwardStepper", "done"});
}

TEST_CASE("the stepper applies hooks before exposing a gradient, and checks its loss") {
    Tensor x = Tensor::from_vector({1, 2}, {2}, true);
    Tensor h = x * 2.f;
    h.register_hook([](const Array& g) { return Array(g * 5.f); });
    debug::BackwardStepper s(sum(h));
    CHECK(s.op() == "SumBackward");
    s.step();
    CHECK(s.op() == "MulBackward");
    CHECK(s.grad_out()(0) == 5.f);
    s.run_to_end();
    CHECK(x.grad_array()(1) == 10.f);
    test::expect_error([&] { debug::BackwardStepper bad(x * 2.f); }, {"BackwardStepper", "one-element"});
}

TEST_SUITE_END();
