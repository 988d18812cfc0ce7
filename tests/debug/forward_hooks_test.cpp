// Module forward hooks and forward pre-hooks (nn/forward_hooks.hpp), as torch's
// register_forward_hook / register_forward_pre_hook: what they see, when they run, removal,
// nesting, errors. Tutorial B's layers hooked end to end: tests/nn/tutorial_b_test.cpp.
#include <xtgrad/nn/layers.hpp>
#include "test_util.hpp"

#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

using namespace xtgrad;
using nn::Module;

TEST_SUITE_BEGIN("debug");

namespace {

Tensor input(const Shape& shape) {
    Array a = empty_array(shape);
    for (std::size_t i = 0; i < a.size(); ++i) a.data()[i] = 0.1f * static_cast<float>(i % 7) - 0.3f;
    return Tensor(a, true);
}

// Two Linear children in a row, and a struct output: the hook sees its tensor fields.
struct PairOutput {
    Tensor y;
    std::vector<Tensor> hidden;
    Mask unused;  // not a tensor: left out
};

class HookedTwoLayers : public Module {
public:
    HookedTwoLayers() {
        fc1 = register_module("fc1", std::make_shared<nn::Linear>(3, 4));
        fc2 = register_module("fc2", std::make_shared<nn::Linear>(4, 2));
    }
    PairOutput forward(const Tensor& x, const Mask& mask) const {
        auto scope = enter(x, mask);
        Tensor h = fc1->forward(x);
        return scope.output(PairOutput{fc2->forward(h), {h}, mask});
    }
    // An overload that calls the other: one forward, its hooks run once.
    PairOutput forward(const Tensor& x) const {
        auto scope = enter(x);
        return scope.output(forward(x, Mask{true}));
    }
    std::shared_ptr<nn::Linear> fc1, fc2;
};

class TupleModule : public Module {
public:
    std::tuple<Tensor, Tensor> forward(const Tensor& a, const std::vector<Tensor>& rest) const {
        auto scope = enter(a, rest);
        return scope.output(std::make_tuple(a * 2.f, a + rest.at(0)));
    }
};

bool same(const Tensor& a, const Tensor& b) { return a.impl() == b.impl(); }

}  // namespace

TEST_CASE("forward hook captures a Linear's output and its input, once per forward") {
    nn::Linear fc(3, 2);
    std::vector<Tensor> inputs, outputs;
    const Module* who = nullptr;
    auto handle = fc.register_forward_hook([&](const Module& m, const std::vector<Tensor>& in, const std::vector<Tensor>& out) {
        who = &m;
        inputs = in;
        outputs = out;
    });
    Tensor x = input({5, 3});
    Tensor y = fc.forward(x);
    CHECK(who == &fc);
    REQUIRE(inputs.size() == 1);
    REQUIRE(outputs.size() == 1);
    CHECK(same(inputs[0], x));
    CHECK(same(outputs[0], y));  // the very tensor forward returns, graph and all
    CHECK(outputs[0].shape() == Shape{5, 2});
    CHECK(outputs[0].grad_fn() != nullptr);
    CHECK(handle.active());
}

TEST_CASE("forward pre-hook runs before forward with the tensor inputs; ids and masks are left out") {
    HookedTwoLayers model;
    std::vector<std::string> events;
    std::vector<Tensor> pre_inputs;
    auto pre = model.register_forward_pre_hook([&](const Module&, const std::vector<Tensor>& in) {
        events.push_back("pre");
        pre_inputs = in;
    });
    auto fc1_hook = model.fc1->register_forward_hook(
        [&](const Module&, const std::vector<Tensor>&, const std::vector<Tensor>&) { events.push_back("fc1"); });
    auto post = model.register_forward_hook(
        [&](const Module&, const std::vector<Tensor>&, const std::vector<Tensor>& out) {
            events.push_back("post " + std::to_string(out.size()));
        });
    Tensor x = input({2, 3});
    model.forward(x, Mask{true, false});
    CHECK(events == std::vector<std::string>{"pre", "fc1", "post 2"});  // y and hidden[0]; not the mask
    REQUIRE(pre_inputs.size() == 1);
    CHECK(same(pre_inputs[0], x));
}

TEST_CASE("hooks see the tensor fields of output structs, tuples and vectors") {
    HookedTwoLayers model;
    std::vector<Tensor> outputs;
    auto h = model.register_forward_hook(
        [&](const Module&, const std::vector<Tensor>&, const std::vector<Tensor>& out) { outputs = out; });
    PairOutput r = model.forward(input({2, 3}), Mask{true, true});
    REQUIRE(outputs.size() == 2);
    CHECK(same(outputs[0], r.y));
    CHECK(same(outputs[1], r.hidden[0]));
    CHECK(outputs[1].shape() == Shape{2, 4});

    TupleModule tuple;
    std::vector<Tensor> ins, outs;
    auto t = tuple.register_forward_hook([&](const Module&, const std::vector<Tensor>& in, const std::vector<Tensor>& out) {
        ins = in;
        outs = out;
    });
    Tensor a = input({3}), b = input({3});
    auto [twice, total] = tuple.forward(a, {b});
    REQUIRE(ins.size() == 2);
    CHECK(same(ins[1], b));
    REQUIRE(outs.size() == 2);
    CHECK(same(outs[0], twice));
    CHECK(same(outs[1], total));
}

TEST_CASE("a forward overload calling another of the same module runs its hooks once") {
    HookedTwoLayers model;
    int pre = 0, post = 0;
    auto a = model.register_forward_pre_hook([&](const Module&, const std::vector<Tensor>&) { ++pre; });
    auto b = model.register_forward_hook([&](const Module&, const std::vector<Tensor>&, const std::vector<Tensor>&) { ++post; });
    model.forward(input({1, 3}));
    CHECK(pre == 1);
    CHECK(post == 1);
}

TEST_CASE("hooks of a module run only for that module's own forward") {
    HookedTwoLayers model;
    int fc1_calls = 0, fc2_calls = 0;
    Shape fc2_output;
    auto a = model.fc1->register_forward_hook([&](const Module&, const std::vector<Tensor>&, const std::vector<Tensor>&) { ++fc1_calls; });
    auto b = model.fc2->register_forward_hook([&](const Module& m, const std::vector<Tensor>&, const std::vector<Tensor>& out) {
        ++fc2_calls;
        CHECK(m.path() == "fc2");
        fc2_output = out.at(0).shape();
    });
    model.forward(input({2, 3}), Mask{true});
    model.fc1->forward(input({1, 3}));  // fc1 alone: fc2's hook does not run
    CHECK(fc1_calls == 2);
    CHECK(fc2_calls == 1);
    CHECK(fc2_output == Shape{2, 2});
}

TEST_CASE("remove(), the handle's end and keep() unregister or keep a hook") {
    nn::Linear fc(3, 2);
    int calls = 0;
    auto count = [&](const Module&, const std::vector<Tensor>&, const std::vector<Tensor>&) { ++calls; };
    {
        auto scoped = fc.register_forward_hook(count);
        fc.forward(input({1, 3}));
    }  // the handle is gone: so is the hook
    fc.forward(input({1, 3}));
    CHECK(calls == 1);
    CHECK_FALSE(fc.has_forward_hooks());

    auto removed = fc.register_forward_hook(count);
    removed.remove();
    removed.remove();  // idempotent
    CHECK_FALSE(removed.active());
    fc.forward(input({1, 3}));
    CHECK(calls == 1);

    fc.register_forward_hook(count).keep();  // stays for the module's life
    fc.forward(input({1, 3}));
    CHECK(calls == 2);
    CHECK(fc.has_forward_hooks());

    // A hook that removes itself while hooks run: the others still run this time.
    nn::Linear fc2(3, 2);
    nn::HookHandle self;
    int others = 0;
    self = fc2.register_forward_hook([&](const Module&, const std::vector<Tensor>&, const std::vector<Tensor>&) { self.remove(); });
    auto other = fc2.register_forward_hook([&](const Module&, const std::vector<Tensor>&, const std::vector<Tensor>&) { ++others; });
    fc2.forward(input({1, 3}));
    fc2.forward(input({1, 3}));
    CHECK_FALSE(self.active());
    CHECK(others == 2);
}

TEST_CASE("a hook outliving its module, and a handle outliving it, are harmless") {
    nn::HookHandle handle;
    {
        nn::Linear fc(3, 2);
        handle = fc.register_forward_hook([](const Module&, const std::vector<Tensor>&, const std::vector<Tensor>&) {});
        CHECK(handle.active());
    }
    CHECK_FALSE(handle.active());
    handle.remove();
}

TEST_CASE("a hook that throws: the Error names the module and the kind of hook") {
    HookedTwoLayers model;
    {
        auto h = model.fc1->register_forward_hook([](const Module&, const std::vector<Tensor>&, const std::vector<Tensor>&) {
            throw std::runtime_error("boom");
        });
        test::expect_error([&] { model.forward(input({2, 3}), Mask{true}); },
                           {"forward hook of module 'fc1' (xtgrad::nn::Linear) threw: boom"});
    }
    {
        auto h = model.register_forward_pre_hook([](const Module&, const std::vector<Tensor>& in) {
            if (in.at(0).size(-1) != 3) fail("my check: want 3 features, got {}", shape_str(in.at(0).shape()));
        });
        test::expect_error([&] { model.forward(input({2, 5}), Mask{true}); },
                           {"forward pre-hook of module '<root>' (", "HookedTwoLayers) threw: my check: want 3 features, got (2,5)"});
    }
    CHECK(std::string(current_module_path()).empty());  // the failed forward left no module scope behind
    CHECK(model.forward(input({2, 3}), Mask{true}).y.shape() == Shape{2, 2});
    test::expect_error([&] { (void)model.register_forward_hook(nullptr); }, {"register_forward_hook", "'<root>'", "empty"});
}

TEST_SUITE_END();
