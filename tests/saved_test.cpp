// Saved values by name (Saved and Node::saved, autograd/node.hpp): what an op's backward reads, under
// the names torch gives them (grad_fn._saved_result, ...), read back by the same records.
#include <xtgrad/autograd/ops.hpp>
#include "test_util.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

TEST_SUITE_BEGIN("engine");

using namespace xtgrad;

TEST_CASE("softmax saves its result, and backward reads that very record") {
    const Tensor x = test::rnd({2, 3}, 1);
    const Tensor y = softmax(x, -1);
    const Node& node = *y.grad_fn();
    CHECK(node.saved_names() == std::vector<std::string>{"result"});
    CHECK(test::max_abs_diff(node.saved("result"), y.data()) == 0.f);
    CHECK(&node.saved("result") == &y.data());  // the output's own values, not a copy
}

TEST_CASE("layer_norm saves input, mean, rstd, weight and bias (as torch); mean and rstd are torch's per-row statistics") {
    const Tensor x = Tensor::from_vector({1, 2, 3, 4, -1, 0, 1, 6}, {2, 4}, true);
    const Tensor w = test::rnd({4}, 2), b = test::rnd({4}, 3);
    const Tensor y = layer_norm(x, w, b, 1e-5f);
    const Node& node = *y.grad_fn();
    CHECK(node.saved_names() == std::vector<std::string>{"input", "mean", "rstd", "weight", "bias"});
    const Array& mean = node.saved("mean");
    const Array& rstd = node.saved("rstd");
    REQUIRE(mean.size() == 2);
    CHECK(mean(0) == doctest::Approx(2.5f));
    CHECK(mean(1) == doctest::Approx(1.5f));
    CHECK(rstd(0) == doctest::Approx(1.f / std::sqrt(1.25f + 1e-5f)));  // biased variance 1.25
    CHECK(rstd(1) == doctest::Approx(1.f / std::sqrt(7.25f + 1e-5f)));
    const Tensor plain = layer_norm(x, Tensor(), Tensor());  // no weight, no bias: not saved
    CHECK(plain.grad_fn()->saved_names() == std::vector<std::string>{"input", "mean", "rstd"});
}

TEST_CASE("mul saves self and other; an unknown name is an Error listing the saved names") {
    const Tensor a = test::rnd({3}, 1), b = test::rnd({3}, 2);
    const Tensor y = a * b;
    const Node& node = *y.grad_fn();
    CHECK(node.saved_names() == std::vector<std::string>{"self", "other"});
    CHECK(&node.saved("self") == &a.data());
    CHECK(&node.saved("other") == &b.data());
    test::expect_error([&] { (void)node.saved("result"); },
                       {"MulBackward", "no saved value named 'result'", "it saved self, other"});
    test::expect_error([&] { (void)node.saved_ids("self"); }, {"MulBackward", "'self'", "float", "not int64"});
    const Tensor s = a + b;
    test::expect_error([&] { (void)s.grad_fn()->saved("self"); }, {"AddBackward", "it saved nothing"});
}

TEST_CASE("a saved value written in place, or freed by backward, throws when read by name") {
    Tensor a = test::rnd({3}, 1);
    const Tensor b = test::rnd({3}, 2);
    const Tensor y = a * b;
    a.mutable_data().fill(0.f);
    test::expect_error([&] { (void)y.grad_fn()->saved("self"); },
                       {"MulBackward", "(as 'self')", "modified by an inplace operation", "expected version"});
    (void)y.grad_fn()->saved("other");  // untouched: fine

    const Tensor z = exp(b);
    CHECK(z.grad_fn()->saved_names() == std::vector<std::string>{"result"});
    sum(z).backward();
    test::expect_error([&] { (void)z.grad_fn()->saved("result"); }, {"ExpBackward", "freed by an earlier backward", "retain_graph"});
}

TEST_CASE("ops save ids and masks under torch's names") {
    const Tensor table = test::rnd({5, 2}, 1);
    const Tensor e = embedding(table, Ids{3, 1});
    CHECK(e.grad_fn()->saved_ids("indices") == Ids{3, 1});
    const Tensor m = max(test::rnd({2, 3}, 2), 1);
    CHECK(m.grad_fn()->saved_names() == std::vector<std::string>{"indices"});
    const Tensor f = masked_fill(test::rnd({2}, 3), Mask{true, false}, 0.f);
    CHECK(f.grad_fn()->saved_mask("mask") == Mask{true, false});
    Generator g(0);
    const Tensor d = dropout(test::rnd({4}, 4), 0.5f, true, g);
    CHECK(d.grad_fn()->saved_bits("mask").size() == 4);  // a bit per element
    const Tensor mm = matmul(test::rnd({2, 3}, 5), test::rnd({3, 2}, 6));
    CHECK(mm.grad_fn()->saved_names() == std::vector<std::string>{"self", "mat2"});
}

TEST_CASE("the fused attention ops save q, k, the weights and the masks, never the scores or the dropped weights") {
    const Mask masked{false, true, false};
    const Tensor w = attention_weights(test::rnd({2, 4}, 1), test::rnd({3, 4}, 2), 0.5f, &masked, -1e9f);
    CHECK(w.grad_fn()->saved_names() == std::vector<std::string>{"query", "key", "result", "mask"});
    CHECK(w.grad_fn()->saved_mask("mask") == masked);  // as given: not broadcast to the scores
    Generator g(0);
    const Tensor c = dropout_matmul(w, test::rnd({3, 2}, 3), 0.5f, true, g);
    CHECK(c.grad_fn()->saved_names() == std::vector<std::string>{"self", "mat2", "mask"});
    CHECK(c.grad_fn()->saved_mask("mask").size() == 6);  // one byte per weight
    const Tensor e = dropout_matmul(w, test::rnd({3, 2}, 3), 0.5f, false, g);
    CHECK(e.grad_fn()->saved_names() == std::vector<std::string>{"self", "mat2"});
}

TEST_SUITE_END();
