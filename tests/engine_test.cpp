#include <xtgrad/autograd/ops.hpp>
#include <xtgrad/autograd/debug.hpp>
#include <xtgrad/autograd/format.hpp>
#include <xtgrad/autograd/grad_mode.hpp>
#include <xtgrad/autograd/gradcheck.hpp>
#include <xtgrad/optim/optimizer.hpp>
#include "test_util.hpp"
#include "under_asan.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>

TEST_SUITE_BEGIN("engine");

using namespace xtgrad;

TEST_CASE("a reused tensor gets the sum of both gradients") {
    Tensor x = Tensor::from_vector({1, 2, 3}, {3}, true);
    Tensor y = sum(x * x + x);  // dy/dx = 2x + 1
    y.backward();
    CHECK(x.grad_array()(0) == doctest::Approx(3));
    CHECK(x.grad_array()(2) == doctest::Approx(7));
}

// ---- who keeps the values (autograd/tensor.hpp) ----

namespace {
// loss = sum((x·wᵀ + b) * c): AddBackward saves nothing, so x·wᵀ is needed by no backward;
// MulBackward saves both of its operands.
Tensor lean_loss(const std::vector<Tensor>& in) { return sum((linear(in[0], in[1]) + in[2]) * in[3]); }
std::vector<Tensor> lean_inputs() {
    return {test::rnd({2, 3}, 1), test::rnd({4, 3}, 2), test::rnd({4}, 3), test::rnd({2, 4}, 4)};
}
}  // namespace

TEST_CASE("an intermediate's values are freed once no Tensor and no backward needs them") {
    const std::vector<Tensor> in = lean_inputs();
    std::weak_ptr<const TensorValues> h_values, a_values, leaf_values;
    Tensor loss;
    {
        Tensor h = linear(in[0], in[1]);
        Tensor a = h + in[2];
        h_values = h.values_ptr();
        a_values = a.values_ptr();
        loss = sum(a * in[3]);
        CHECK_FALSE(h_values.expired());  // a Tensor keeps the values
    }
    CHECK(h_values.expired());        // freed before backward: no Tensor, no closure
    CHECK_FALSE(a_values.expired());  // MulBackward saved it
    Tensor doubled;
    {
        Tensor leaf = test::rnd({3}, 5);
        leaf_values = leaf.values_ptr();
        doubled = sum(leaf * 2.f);  // saves nothing
    }
    CHECK_FALSE(leaf_values.expired());  // a leaf never loses its values
    doubled.backward();

    // The graph still knows the freed tensor's shape, and says its values are gone.
    const ImplPtr& a_impl = loss.grad_fn()->inputs()[0]->grad_fn->inputs()[0];
    const ImplPtr& h_impl = a_impl->grad_fn->inputs()[0];
    CHECK(h_impl->shape() == Shape{2, 4});
    CHECK(h_impl->lock_values() == nullptr);
    const std::string add_node = debug::describe(*a_impl->grad_fn);
    CHECK(add_node.find("input 0: tensor (2,4) float32 requires_grad grad_fn=LinearBackward grad=none (values freed)") !=
          std::string::npos);
    CHECK(add_node.find("input 1: tensor (4) float32 requires_grad leaf grad=none [") != std::string::npos);
    CHECK(debug::describe(*a_impl).find("grad_fn=AddBackward grad=none [") != std::string::npos);  // saved: shown

    // Backward gives the gradients of a graph that kept everything, and gradcheck agrees.
    loss.backward();
    const std::vector<Tensor> ref = lean_inputs();
    Tensor h = linear(ref[0], ref[1]), a = h + ref[2];
    Tensor ref_loss = sum(a * ref[3]);
    ref_loss.backward();
    for (std::size_t i = 0; i < in.size(); ++i) CHECK(test::max_abs_diff(in[i].grad_array(), ref[i].grad_array()) == 0.f);
    CHECK(loss.item() == ref_loss.item());
    CHECK(gradcheck(lean_loss, lean_inputs()));
}

TEST_CASE("a kept intermediate keeps its values; retain_grad still gives its gradient") {
    const std::vector<Tensor> in = lean_inputs();
    Tensor h = linear(in[0], in[1]);
    h.retain_grad();
    const Array h_before = h.data();
    Tensor loss = sum((h + in[2]) * in[3]);
    loss.backward();
    CHECK(test::max_abs_diff(h.data(), h_before) == 0.f);
    REQUIRE(h.has_grad());
    CHECK(test::max_abs_diff(h.grad_array(), in[3].data()) == 0.f);  // d loss / d h = c
    std::weak_ptr<const TensorValues> values = h.values_ptr();
    Tensor copy = h;
    h = Tensor();
    CHECK_FALSE(values.expired());  // a copy is the same tensor
    copy = Tensor();
    CHECK(values.expired());
}

TEST_CASE("a Tensor made from a graph pointer: shape always, values while a closure holds them") {
    const std::vector<Tensor> in = lean_inputs();
    Tensor loss = lean_loss(in);
    const ImplPtr& a_impl = loss.grad_fn()->inputs()[0]->grad_fn->inputs()[0];
    const ImplPtr& h_impl = a_impl->grad_fn->inputs()[0];

    Tensor h(h_impl);  // values freed: the shape, and an Error for the values
    CHECK(h.shape() == Shape{2, 4});
    CHECK(h.numel() == 8);
    CHECK(h.size(-1) == 4);
    test::expect_error([&] { (void)h.data(); }, {"(2,4)", "LinearBackward", "freed"});
    test::expect_error([&] { (void)h.detach(); }, {"freed"});

    Tensor a(a_impl);  // saved by MulBackward: the values come back
    Tensor x = in[0];
    const Array expected = linear(x, in[1]).data() + in[2].data();
    CHECK(test::max_abs_diff(a.data(), expected) == 0.f);  // a read: no new version
    Tensor a2(a.graph_ptr());  // the same two parts
    CHECK(a2.values_ptr() == a.values_ptr());
    CHECK(a2.impl_ptr() == a.impl_ptr());
    a = Tensor();
    a2 = Tensor();
    CHECK(a_impl->leaf_values == nullptr);  // the graph does not keep them; the closure still has them
    CHECK(a_impl->lock_values() != nullptr);

    loss.backward();  // the graph pointers did not disturb backward
    const std::vector<Tensor> ref = lean_inputs();
    lean_loss(ref).backward();
    for (std::size_t i = 0; i < in.size(); ++i) CHECK(test::max_abs_diff(in[i].grad_array(), ref[i].grad_array()) == 0.f);
}

TEST_CASE("relu(linear(x, w)): the product is freed before backward, relu keeps only its output") {
    Tensor x = test::rnd({3, 5}, 1), w = test::rnd({4, 5}, 2);
    std::weak_ptr<const TensorValues> product;
    Tensor y;
    {
        Tensor h = linear(x, w);
        product = h.values_ptr();
        y = relu(h);
    }
    CHECK(product.expired());  // LinearBackward saved x and w, ReluBackward its output
    Tensor loss = sum(y * y);
    loss.backward();
    // d/dw sum(relu(x·wᵀ)²) = (2 relu(x·wᵀ))ᵀ · x, with relu(x·wᵀ) recomputed here.
    Tensor ref_y = relu(linear(x.detach(), w.detach()));
    Array expected = empty_array({4, 5});
    expected.fill(0.f);
    for (std::size_t i = 0; i < 4; ++i)
        for (std::size_t j = 0; j < 5; ++j)
            for (std::size_t n = 0; n < 3; ++n) expected(i, j) += 2.f * ref_y.data()(n, i) * x.data()(n, j);
    CHECK(test::max_abs_diff(w.grad_array(), expected) < 1e-5f);
    CHECK(gradcheck([](const std::vector<Tensor>& in) { return sum(pow(relu(linear(in[0], in[1])), 2.f)); },
                    {test::rnd({3, 5}, 1), test::rnd({4, 5}, 2)}));
}

// ---- the version counter: a backward never reads values written after it saved them ----

TEST_CASE("writing through data() after a backward saved the values makes that backward throw") {
    Tensor x = Tensor::from_vector({0.5f, -1.f, 2.f}, {3}, true);
    Tensor y = exp(x).set_name("y");
    Tensor l = sum(y * y);
    y.mutable_data().fill(0.f);  // today: a silent zero gradient
    test::expect_error([&] { l.backward(); }, {"MulBackward", "'y' (3), the output of ExpBackward,",
                                               "modified by an inplace operation", "version 1", "version 0"});
}

TEST_CASE("mutable_ptr() and an optimizer step count as writes; reads never do, const or not") {
    Tensor x = test::rnd({2, 3}, 1), w = test::rnd({4, 3}, 2);
    w.requires_grad_().set_name("w");
    const std::uint64_t v0 = w.version();
    Tensor loss = sum(linear(x, w) * 2.f);
    // A learner reading a tensor after forward, through a non-const handle, to print one value:
    // no read counts as a write, so the backward below still runs.
    (void)w.data();
    (void)w.ptr();
    (void)w.data()(0, 0);
    (void)fmt::format("{}", w);
    (void)sum(w).item();
    CHECK(w.version() == v0);
    (void)w.mutable_ptr();
    CHECK(w.version() == v0 + 1);
    test::expect_error([&] { loss.backward(); }, {"LinearBackward", "'w' (4,3)", "modified by an inplace operation"});

    Tensor loss2 = sum(linear(x, w) * 2.f);
    loss2.backward();  // no write since the save: fine
    optim::SGD opt({w}, optim::SGDOptions(0.1));
    Tensor loss3 = sum(linear(x, w) * 2.f);
    opt.step();
    test::expect_error([&] { loss3.backward(); }, {"LinearBackward", "'w'", "version"});
}

// No write path escapes the count at compile time: data(), ptr() and values_ptr() hand out only
// read-only values, whatever the constness of the handle; writing takes mutable_data()/mutable_ptr().
static_assert(std::is_same_v<decltype(std::declval<Tensor&>().data()), const Array&>);
static_assert(std::is_same_v<decltype(std::declval<Tensor&>().ptr()), const float*>);
static_assert(std::is_same_v<decltype(std::declval<Tensor&>().values_ptr()), std::shared_ptr<const TensorValues>>);
static_assert(std::is_same_v<decltype(std::declval<Tensor&>().mutable_data()), Array&>);

TEST_CASE("reading a saved tensor after forward, as a learner would, never breaks backward") {
    Tensor x = Tensor::from_vector({1, 2, 3}, {3}, true).set_name("x");
    Tensor y = x * x;  // MulBackward saves x twice
    const float first = x.data()(0);  // a non-const handle: a read
    Tensor l = sum(y);
    fmt::print("{}\n", y);           // printing
    CHECK(l.item() == doctest::Approx(14.f));
    l.backward();
    CHECK(first == 1.f);
    CHECK(x.grad_array()(2) == doctest::Approx(6.f));  // d sum(x²) / dx = 2x
}

TEST_CASE("a write after backward, or into a tensor no backward saved, is fine") {
    Tensor x = Tensor::from_vector({1, 2}, {2}, true);
    Tensor h = x + 1.f;  // AddBackward saves nothing
    Tensor l = sum(h * 3.f);
    h.mutable_data().fill(7.f);
    l.backward();
    CHECK(x.grad_array()(0) == doctest::Approx(3.f));
    Tensor y = exp(x);
    Tensor l2 = sum(y);
    l2.backward();
    y.mutable_data().fill(0.f);  // the graph is gone
    CHECK(x.grad_array()(1) == doctest::Approx(3.f + std::exp(2.f)));
}

// ---- never crash: a long chain frees and backpropagates without recursion ----

TEST_CASE("a chain of 10^6 nodes backpropagates and frees without recursion") {
    // A recursive backward or teardown would overflow the 8 MB stack: 10^6 frames of 8 bytes fill it.
    // The sanitizer build, where each node costs many times more, takes 2 * 10^5: its frames are
    // over 40 bytes (ASan's redzones), so the same recursion overflows there too.
#if XTGRAD_UNDER_ASAN
    constexpr int n = 200'000;
#else
    constexpr int n = 1'000'000;
#endif
    Tensor x = Tensor::from_vector({1.f}, {1}, true);
    {
        Tensor y = x;
        for (int i = 0; i < n; ++i) y = y + 1.f;  // AddBackward saves nothing: only the graph grows
        CHECK(y.item() == doctest::Approx(1.f + n));
        y.backward();
        CHECK(x.grad_array()(0) == 1.f);
    }
    {
        Tensor y = x;
        for (int i = 0; i < n; ++i) y = y + 1.f;
    }  // freed here, never backpropagated: the teardown alone must not recurse
    CHECK(x.grad_array()(0) == 1.f);
}

TEST_SUITE_END();
