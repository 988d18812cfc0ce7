// Ops that take a buffer instead of copying it: reshape of a temporary (Tensor::take_array),
// cross_entropy over temporary logits, reshape's and add's backward passing the engine's gradient
// on (Node::pass_on), cross_entropy's backward over its saved probabilities (Node::take_saved).
#include <xtgrad/autograd/debug.hpp>
#include <xtgrad/autograd/ops.hpp>
#include "../test_util.hpp"

#include <doctest/doctest.h>

#include <utility>
#include <vector>

TEST_SUITE_BEGIN("memory");

using namespace xtgrad;

namespace {
// logits (6, 5) = x (6, 4) wᵀ (4 -> 5), from a fresh copy of the leaves
struct LinearCe {
    Tensor x = test::rnd({6, 4}, 1), w = test::rnd({5, 4}, 2);
    Ids target{0, 4, 2, 2, 1, 3};
};
}  // namespace

TEST_CASE("reshape of a temporary relabels its buffer; of a tensor in use, copies it") {
    const Tensor x = test::rnd({2, 6}, 1);
    Tensor h = x * 2.f;
    const float* buffer = h.ptr();
    const Tensor copied = reshape(h, {3, 4});  // h is still used below
    CHECK(copied.ptr() != buffer);
    CHECK(h.shape() == Shape{2, 6});
    CHECK(h.ptr() == buffer);
    const Tensor relabelled = reshape(std::move(h), {3, 4});
    CHECK(relabelled.ptr() == buffer);
    CHECK(relabelled.data() == copied.data());
    CHECK(view(x * 1.f, {12}).shape() == Shape{12});
    // a leaf's values, or values a backward saved, are never taken
    const Tensor leaf_view = reshape(Tensor(x.data()), {12});
    CHECK(leaf_view.numel() == 12);
    Tensor saved = x * 3.f;
    const Tensor product = saved * saved;  // MulBackward saved it
    CHECK_FALSE(saved.sole_holder());
    const float* saved_buffer = saved.ptr();
    CHECK(reshape(std::move(saved), {12}).ptr() != saved_buffer);
    test::expect_error([&] { (void)std::move(Tensor(x.data())).take_array(); }, {"take_array", "shares its values"});
    sum(product).backward();
    CHECK(test::max_abs_diff(x.grad_array(), Array(18.f * x.data())) < 1e-5f);
}

TEST_CASE("unsqueeze and squeeze of temporaries keep the gradients exact") {
    const Tensor x = test::rnd({3, 4}, 1);
    const Tensor y = squeeze(unsqueeze(x * 2.f, 0), 0);
    sum(y * y).backward();
    CHECK(test::max_abs_diff(x.grad_array(), Array(8.f * x.data())) < 1e-5f);
}

TEST_CASE("cross_entropy over temporary logits: the same loss and gradients, bit for bit") {
    LinearCe a, b;
    const Tensor la = cross_entropy(linear(a.x, a.w), a.target);  // temporary: probabilities over the logits
    const Tensor logits = linear(b.x, b.w);
    const Tensor lb = cross_entropy(logits, b.target);  // still in use: probabilities in a new block
    CHECK(logits.numel() == 30);
    CHECK(la.item() == lb.item());
    la.backward();
    lb.backward();
    CHECK(a.w.grad_array() == b.w.grad_array());
    CHECK(a.x.grad_array() == b.x.grad_array());
    // with label smoothing and an ignored row, through reshape of a temporary
    LinearCe c, d;
    const Tensor lc = cross_entropy(reshape(linear(c.x, c.w), {6, 5}), c.target, /*ignore_index=*/2, 0.1f);
    const Tensor ld_logits = linear(d.x, d.w);
    const Tensor ld = cross_entropy(reshape(ld_logits, {6, 5}), d.target, 2, 0.1f);
    CHECK(lc.item() == ld.item());
    lc.backward();
    ld.backward();
    CHECK(c.w.grad_array() == d.w.grad_array());
}

TEST_CASE("cross_entropy's backward writes over its probabilities only on the graph's last run") {
    LinearCe a, b;
    const Tensor la = cross_entropy(linear(a.x, a.w), a.target);
    la.backward(/*retain_graph=*/true);  // the probabilities stay for a second backward
    const Array probs = la.grad_fn()->saved("probs");
    CHECK(probs.shape() == std::vector<std::size_t>{6, 5});
    CHECK(std::abs(xt::sum(probs)() - 6.f) < 1e-5f);  // rows of probabilities, untouched
    la.backward();
    const Tensor lb = cross_entropy(linear(b.x, b.w), b.target);
    lb.backward();
    CHECK(test::max_abs_diff(a.w.grad_array(), Array(2.f * b.w.grad_array())) < 1e-6f);
}

TEST_CASE("a debugger stop at CrossEntropyBackward keeps its saved probabilities") {
    LinearCe a;
    const Tensor loss = cross_entropy(linear(a.x, a.w), a.target);
    debug::break_on_op("CrossEntropyBackward");
    CHECK(debug::stops_at(*loss.grad_fn()));
    loss.backward();
    debug::clear_breaks();
    CHECK_FALSE(debug::stops_at(*loss.grad_fn()));
    LinearCe b;
    cross_entropy(linear(b.x, b.w), b.target).backward();
    CHECK(a.w.grad_array() == b.w.grad_array());
}

TEST_CASE("add and reshape pass the engine's gradient on; a retained or hooked gradient is copied") {
    const Tensor x = test::rnd({2, 3}, 1);
    Tensor h = x * 1.f;
    h.retain_grad();
    Tensor r = reshape(h + h, {6});
    r.retain_grad();
    int hooked = 0;
    r.register_hook([&](const Array& g) {
        ++hooked;
        return g;
    });
    sum(r * 3.f).backward();
    CHECK(hooked == 1);
    CHECK(r.grad_array() == Array(xt::ones<float>({6}) * 3.f));  // kept, not moved away
    CHECK(h.grad_array() == Array(xt::ones<float>({2, 3}) * 6.f));
    CHECK(x.grad_array() == Array(xt::ones<float>({2, 3}) * 6.f));
    // the same graph with no retained gradient: the same result
    const Tensor y = test::rnd({2, 3}, 1);
    const Tensor hy = y * 1.f;
    sum(reshape(hy + hy, {6}) * 3.f).backward();
    CHECK(y.grad_array() == x.grad_array());
}

TEST_SUITE_END();
