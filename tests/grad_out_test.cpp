// The gradient-write contract (autograd/node.hpp): a backward kernel overwrites a fresh
// gradient buffer and adds into a running one. Each kernel-writing op is checked both ways: its
// input used twice (the second write finds a running sum) must get the sum of both gradients.
#include <xtgrad/autograd/ops/softmax.hpp>
#include <xtgrad/autograd/grad.hpp>
#include <xtgrad/autograd/gradcheck.hpp>
#include <xtgrad/autograd/node.hpp>
#include <xtgrad/autograd/ops.hpp>
#include <xtgrad/random/random.hpp>
#include <xtgrad/threads/parallel.hpp>
#include "test_util.hpp"

#include <doctest/doctest.h>

#include <stdexcept>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

TEST_SUITE_BEGIN("engine");

using namespace xtgrad;

namespace {
// d/dx of sum(f(x) * r1) + sum(f(x) * r2): two nodes of f write x's gradient, the second one
// into a running sum; it must equal d/dx of sum(f(x) * (r1 + r2)), one write. Returns the largest
// difference between the two (CHECKed below to be rounding only).
float two_consumers_error(const std::string& op, const std::function<Tensor(const Tensor&)>& f, Tensor x) {
    INFO("op: ", op);
    x.zero_grad();  // an earlier check may have left a gradient in this tensor (it was another op's input)
    const Shape out_shape = f(x).shape();
    const Tensor r1 = test::rnd(out_shape, 11), r2 = test::rnd(out_shape, 12);
    sum(f(x) * r1 + f(x) * r2).backward();
    const Array twice = x.grad_array();
    x.zero_grad();
    sum(f(x) * (r1 + r2)).backward();
    const float error = test::max_abs_diff(twice, x.grad_array());
    x.zero_grad();
    return error;
}
}  // namespace

TEST_CASE("every kernel-writing op adds into a running gradient instead of overwriting it") {
    const Tensor x = test::rnd({3, 4}, 1);
    CHECK(two_consumers_error("softmax", [](const Tensor& t) { return softmax(t, 1); }, x) < 1e-5f);
    CHECK(two_consumers_error("softmax dim 0", [](const Tensor& t) { return softmax(t, 0); }, x) < 1e-5f);
    CHECK(two_consumers_error("log_softmax", [](const Tensor& t) { return log_softmax(t, -1); }, x) < 1e-5f);
    CHECK(two_consumers_error("gelu", [](const Tensor& t) { return gelu(t); }, x) < 1e-5f);
    CHECK(two_consumers_error("gelu tanh", [](const Tensor& t) { return gelu(t, GeluApproximation::tanh); }, x) < 1e-5f);
    CHECK(two_consumers_error("masked_fill", [](const Tensor& t) { return masked_fill(t, Mask{true, false, true, false}, 0.f); }, x) < 1e-5f);
    CHECK(two_consumers_error("tril", [](const Tensor& t) { return tril(t); }, x) < 1e-5f);
    CHECK(two_consumers_error("max", [](const Tensor& t) { return max(t, 1); }, x) < 1e-5f);
    CHECK(two_consumers_error("narrow", [](const Tensor& t) { return narrow(t, 1, 1, 2); }, x) < 1e-5f);
    CHECK(two_consumers_error("dropout", [](const Tensor& t) {
        Generator g(3);  // the same mask for both calls
        return dropout(t, 0.5f, true, g);
    }, x) < 1e-5f);
    CHECK(two_consumers_error("relu_dropout", [](const Tensor& t) {
        Generator g(3);
        return relu_dropout(t, 0.5f, true, g);
    }, x) < 1e-5f);
    CHECK(two_consumers_error("cross_entropy", [](const Tensor& t) { return cross_entropy(t, Ids{1, -100, 3}, -100, 0.1f); }, x) < 1e-5f);

    const Tensor w = test::rnd({4}, 2), b = test::rnd({4}, 3);
    CHECK(two_consumers_error("layer_norm x", [&](const Tensor& t) { return layer_norm(t, w, b); }, x) < 1e-5f);
    CHECK(two_consumers_error("layer_norm weight", [&](const Tensor& t) { return layer_norm(x, t, b); }, w) < 1e-5f);
    CHECK(two_consumers_error("layer_norm bias", [&](const Tensor& t) { return layer_norm(x, w, t); }, b) < 1e-5f);

    const Tensor m = test::rnd({4, 5}, 4), lw = test::rnd({5, 4}, 5), lb = test::rnd({5}, 6);
    CHECK(two_consumers_error("matmul a", [&](const Tensor& t) { return matmul(t, m); }, x) < 1e-5f);
    CHECK(two_consumers_error("matmul b", [&](const Tensor& t) { return matmul(x, t); }, m) < 1e-5f);
    CHECK(two_consumers_error("linear x", [&](const Tensor& t) { return linear(t, lw, lb); }, x) < 1e-5f);
    CHECK(two_consumers_error("linear weight", [&](const Tensor& t) { return linear(x, t, lb); }, lw) < 1e-5f);
    CHECK(two_consumers_error("linear bias", [&](const Tensor& t) { return linear(x, lw, t); }, lb) < 1e-5f);

    // batched, with a broadcast operand (several products write one slice of its gradient)
    const Tensor ba = test::rnd({2, 3, 4}, 7), bb = test::rnd({4, 2}, 8), bc = test::rnd({1, 4, 2}, 9);
    CHECK(two_consumers_error("batched matmul a", [&](const Tensor& t) { return matmul(t, bc); }, ba) < 1e-5f);
    CHECK(two_consumers_error("batched matmul broadcast b", [&](const Tensor& t) { return matmul(ba, t); }, bc) < 1e-5f);
    CHECK(two_consumers_error("2-D b under a batched a", [&](const Tensor& t) { return matmul(ba, t); }, bb) < 1e-5f);

    const Tensor cx = test::rnd({2, 3, 5}, 10), cw = test::rnd({4, 3, 3}, 13), cb = test::rnd({4}, 14);
    const Tensor cw1 = test::rnd({4, 3, 1}, 15);
    CHECK(two_consumers_error("conv1d x", [&](const Tensor& t) { return conv1d(t, cw, cb, 1); }, cx) < 1e-5f);
    CHECK(two_consumers_error("conv1d x, K = 1", [&](const Tensor& t) { return conv1d(t, cw1, cb); }, cx) < 1e-5f);
    CHECK(two_consumers_error("conv1d weight", [&](const Tensor& t) { return conv1d(cx, t, cb, 1); }, cw) < 1e-5f);
    CHECK(two_consumers_error("conv1d bias", [&](const Tensor& t) { return conv1d(cx, cw, t, 1); }, cb) < 1e-5f);

    const Tensor table = test::rnd({6, 3}, 16);
    CHECK(two_consumers_error("embedding", [](const Tensor& t) { return embedding(t, Ids{{1, 4}, {4, 0}}, 0); }, table) < 1e-5f);

    // the fused attention core: every input of both nodes, with and without dropout
    const Tensor aq = test::rnd({2, 3, 4}, 17), ak = test::rnd({2, 5, 4}, 18), aadd = test::rnd({3, 5}, 19);
    const Tensor aw = test::rnd({2, 3, 5}, 20), av = test::rnd({2, 5, 2}, 21);
    const auto weights = [&](const Tensor& q, const Tensor& k, const Tensor& add) {
        return attention_weights(q, k, 0.5f, nullptr, 0.f, add);
    };
    const auto context = [&](const Tensor& w, const Tensor& v, float p) {
        Generator g(3);  // the same mask for both calls
        return dropout_matmul(w, v, p, true, g);
    };
    CHECK(two_consumers_error("attention_weights q", [&](const Tensor& t) { return weights(t, ak, aadd); }, aq) < 1e-5f);
    CHECK(two_consumers_error("attention_weights k", [&](const Tensor& t) { return weights(aq, t, aadd); }, ak) < 1e-5f);
    CHECK(two_consumers_error("attention_weights additive", [&](const Tensor& t) { return weights(aq, ak, t); }, aadd) < 1e-5f);
    for (const float p : {0.f, 0.5f}) {
        CHECK(two_consumers_error("dropout_matmul weights", [&](const Tensor& t) { return context(t, av, p); }, aw) < 1e-5f);
        CHECK(two_consumers_error("dropout_matmul v", [&](const Tensor& t) { return context(aw, t, p); }, av) < 1e-5f);
    }
}

TEST_CASE("a backward kernel overwrites a fresh buffer (garbage in it is never read) and adds to a running one") {
    // softmax over rows of 3: y = softmax(x), g = 1 -> dx = y (1 - Σ y) = 0
    const Array y{{0.2f, 0.3f, 0.5f}}, g{{1.f, 1.f, 1.f}};
    Array dx{{std::numeric_limits<float>::quiet_NaN(), 7.f, -7.f}};
    softmax_backward(g.data(), y.data(), GradOut::overwrite(dx.data(), dx.size()), 1, 3, 1, false);
    for (float v : dx) CHECK(v == doctest::Approx(0.f));
    Array running{{1.f, 2.f, 3.f}};
    const Array g2{{1.f, 0.f, 0.f}};  // dx = y (g - 0.2) = (0.16, -0.06, -0.1)
    softmax_backward(g2.data(), y.data(), GradOut::add_into(running.data(), running.size()), 1, 3, 1, false);
    CHECK(running(0, 0) == doctest::Approx(1.16f));
    CHECK(running(0, 1) == doctest::Approx(1.94f));
    CHECK(running(0, 2) == doctest::Approx(2.9f));

    Array buf{std::numeric_limits<float>::quiet_NaN(), 1.f};
    GradOut fresh = GradOut::overwrite(buf.data(), buf.size());
    CHECK(fresh.beta() == 0.f);
    fresh.zeroed();  // a scatter-add starts from zeros, after which the buffer is a running sum
    CHECK(buf(0) == 0.f);
    CHECK(buf(1) == 0.f);
    CHECK(fresh.beta() == 1.f);
    CHECK_FALSE(GradOut());
}

TEST_CASE("GradOut::part and zeroed give a fresh buffer its zeros on 1 and 2 threads (over the pool past 64 K elements)") {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (int threads : {1, 2}) {
        INFO("threads: ", threads);
        set_num_threads(threads);
        for (std::size_t n : {std::size_t{10}, std::size_t{3} << 17}) {  // serial, and split over the pool
            INFO("elements: ", n);
            std::vector<float> buf(n, nan);
            const std::size_t offset = n / 3, count = n / 3;  // a packed weight's middle block
            const GradOut part = GradOut::overwrite(buf.data(), n).part(offset, count);
            CHECK(part.data() == buf.data() + offset);
            CHECK(part.size() == count);
            CHECK(part.beta() == 0.f);  // the block itself is the kernel's to overwrite
            std::size_t zeros = 0, untouched = 0;
            for (std::size_t i = 0; i < n; ++i) {
                const bool inside = i >= offset && i < offset + count;
                zeros += !inside && buf[i] == 0.f;
                untouched += inside && std::isnan(buf[i]);
            }
            CHECK(zeros == n - count);
            CHECK(untouched == count);
            std::vector<float> running(n, 2.f);  // a running sum keeps its values
            CHECK(GradOut::add_into(running.data(), n).part(offset, count).beta() == 1.f);
            CHECK(running == std::vector<float>(n, 2.f));
            GradOut whole = GradOut::overwrite(buf.data(), n);
            whole.zeroed();
            CHECK(std::count(buf.begin(), buf.end(), 0.f) == static_cast<std::ptrdiff_t>(n));
        }
    }
    set_num_threads(1);
}

TEST_CASE("a kernel writing a gradient of the wrong shape is an Error naming the op and both shapes") {
    const Tensor x = test::rnd({2, 3}, 1);
    const Tensor y = make_result(Array(x.data()), "WrongShapeBackward", {x}, {}, [](Node& self, const Array&) {
        GradOut dx = self.grad_out(0, {3, 2});
        dx.zeroed();
    });
    test::expect_error([&] { sum(y).backward(); }, {"WrongShapeBackward", "gradient for input 0 has shape (3,2)", "the input has shape (2,3)"});
}

TEST_CASE("a backward of the user's own that throws another type stops backward with an Error naming the op") {
    const Tensor x = test::rnd({2}, 1);
    const Tensor y = make_result(Array(x.data()), "LearnerBackward", {x}, {},
                                 [](Node&, const Array&) { throw std::runtime_error("learner bug"); });
    test::expect_error([&] { sum(y).backward(); }, {"LearnerBackward's backward threw: learner bug"});
    const Tensor z = make_result(Array(x.data()), "ThrowsIntBackward", {x}, {}, [](Node&, const Array&) { throw 3; });
    test::expect_error([&] { sum(z).backward(); }, {"ThrowsIntBackward's backward threw a non-standard exception"});
}

TEST_CASE("a backward handing in a gradient for an input the node does not have is an Error naming the op and the index") {
    const Tensor x = test::rnd({2}, 1);
    const Tensor a = make_result(Array(x.data()), "PastInputsBackward", {x}, {},
                                 [](Node& self, const Array& g) { self.accumulate(1, Array(g)); });
    test::expect_error([&] { sum(a).backward(); }, {"PastInputsBackward", "accumulate(1)", "it has 1 input (0 to 0)"});
    const Tensor b = make_result(Array(x.data()), "PastInputsBackward", {x}, {},
                                 [](Node& self, const Array& g) { self.accumulate(3, g); });
    test::expect_error([&] { sum(b).backward(); }, {"PastInputsBackward", "accumulate(3)"});
    CHECK_FALSE(x.has_grad());  // the refused backwards left no gradient behind
    // asking past the inputs is how an op's optional input not given reads (a linear without bias)
    const Tensor c = make_result(Array(x.data()), "OptionalInputBackward", {x}, {}, [](Node& self, const Array& g) {
        CHECK_FALSE(self.needs_grad(2));
        CHECK_FALSE(static_cast<bool>(self.grad_out(2, {2})));
        self.accumulate(0, g);
    });
    sum(c).backward();
    CHECK(x.has_grad());
}

TEST_CASE("a backward that takes a fresh grad_out buffer and never writes it is an Error, not uninitialised values") {
    const Tensor x = test::rnd({3}, 1), w = test::rnd({3}, 2);
    const Tensor y = make_result(Array(x.data() * w.data()), "ForgotBackward", {x, w}, {}, [](Node& self, const Array& g) {
        if (self.needs_grad(0)) self.accumulate(0, Array(g));
        GradOut dw = self.grad_out(1, {3});  // asked for, then forgotten (a learner's TODO)
        (void)dw;
    });
    test::expect_error([&] { sum(y).backward(); }, {"ForgotBackward", "took grad_out(1) and never wrote it", "input 1"});
    CHECK_FALSE(w.has_grad());
    // each way in to the buffer counts as writing it: GradOut::write, data() (a GEMM's output), zeroed()
    const Tensor z = make_result(Array(x.data() * w.data()), "WritesBackward", {x, w}, {}, [](Node& self, const Array& g) {
        self.grad_out(0, {3}).write([&](float* d, auto store) {
            for (std::size_t i = 0; i < 3; ++i) store(d[i], 2.f * g[i]);
        });
        float* dw = self.grad_out(1, {3}).data();
        for (std::size_t i = 0; i < 3; ++i) dw[i] = 3.f * g[i];
    });
    sum(z).backward();
    CHECK(test::max_abs_diff(x.grad_array(), Array(xt::ones<float>({3}) * 2.f)) == 0.f);
    CHECK(test::max_abs_diff(w.grad_array(), Array(xt::ones<float>({3}) * 3.f)) == 0.f);
}

TEST_CASE("grad_out past the 64 marked inputs starts as zeros, so one never written adds nothing") {
    std::vector<Tensor> ins;
    for (int i = 0; i < 70; ++i) ins.push_back(Tensor::ones({8}, true));
    const Tensor y = make_result(Array(xt::zeros<float>({8})), "ManyBackward", ins, {}, [](Node& self, const Array& g) {
        for (std::size_t i = 0; i < 70; ++i)
            if (i != 65) self.accumulate(i, g);
        GradOut forgotten = self.grad_out(65, {8});  // past the marks: zeros, not uninitialised memory
        (void)forgotten;
    });
    sum(y).backward();
    CHECK(test::max_abs_diff(ins[65].grad_array(), Array(xt::zeros<float>({8}))) == 0.f);
    CHECK(test::max_abs_diff(ins[64].grad_array(), Array(xt::ones<float>({8}))) == 0.f);
}

TEST_CASE("an input given twice: a running sum written before the fresh buffer of the same tensor is an Error") {
    const Tensor a = Tensor::from_vector({1.f, 2.f}, {2}, true);
    const auto ones = [](float* d, auto store) { store(d[0], 1.f), store(d[1], 1.f); };
    const Tensor bad = make_result(Array(a.data() * 2.f), "TwiceBackward", {a, a}, {}, [&](Node& self, const Array&) {
        const GradOut first = self.grad_out(0, {2}), second = self.grad_out(1, {2});  // fresh, then its running sum
        second.write(ones);  // added into uninitialised memory, then overwritten by the fresh one's first write
        first.write(ones);
    });
    test::expect_error([&] { sum(bad).backward(); }, {"TwiceBackward", "a running sum before the fresh buffer"});
    CHECK_FALSE(a.has_grad());
    // in the order grad_out handed them out: the sum of both
    const Tensor good = make_result(Array(a.data() * 2.f), "TwiceBackward", {a, a}, {}, [&](Node& self, const Array&) {
        const GradOut first = self.grad_out(0, {2}), second = self.grad_out(1, {2});
        first.write(ones);
        second.write(ones);
    });
    sum(good).backward();
    CHECK(test::max_abs_diff(a.grad_array(), Array(xt::ones<float>({2}) * 2.f)) == 0.f);
    // the library's own kernels with one tensor as both operands write in order
    const Tensor m = test::rnd({3, 3}, 4);
    CHECK(gradcheck([](const std::vector<Tensor>& v) { return matmul(v[0], v[0]); }, {m}));
    CHECK(gradcheck([](const std::vector<Tensor>& v) { return linear(v[0], v[0]); }, {m}));
}

TEST_CASE("GradOut::part outside the buffer, an empty backward and a throwing backward in ops are Errors") {
    const Tensor x = test::rnd({4}, 1);
    const Tensor y = make_result(Array(x.data()), "PartBackward", {x}, {}, [](Node& self, const Array& g) {
        (void)self.grad_out(0, {4}).part(3, 2);
        self.accumulate(0, g);
    });
    test::expect_error([&] { sum(y).backward(); }, {"GradOut::part: elements [3, 3 + 2) are not inside the buffer's 4"});
    const Tensor z = make_result(Array(x.data()), "PartBackward", {x}, {}, [](Node& self, const Array&) {
        (void)self.grad_out(0, {4}).part(std::numeric_limits<std::size_t>::max(), 2);
    });
    test::expect_error([&] { sum(z).backward(); }, {"GradOut::part", "not inside the buffer's 4"});
    CHECK_FALSE(x.has_grad());
    test::expect_error([&] { (void)make_result(Array(x.data()), "NullBackward", {x}, {}, Node::BackwardFn{}); },
                       {"NullBackward: make_result was given no backward function"});
    const Tensor w = differentiable(
        make_result(Array(x.data()), "InOpsBackward", {x}, {}, [](Node& self, const Array& g) { self.accumulate(0, g); }),
        [](const Node&, const Tensor&) -> std::vector<Tensor> { throw std::runtime_error("in-ops bug"); });
    test::expect_error([&] { (void)grad({sum(w)}, {x}, {}, GradOptions().create_graph(true)); },
                       {"InOpsBackward's backward in ops threw: in-ops bug"});
    CHECK_FALSE(x.has_grad());
}

TEST_SUITE_END();
