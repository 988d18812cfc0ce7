// The engine's one observer list (autograd/engine.hpp): every event of a pass, in the order of
// the chain rule, to every observer; added observers sit between the trace printer and the
// debugger's stops, anomaly check and post-accumulate-grad hooks; a scope removes its observer.
#include <xtgrad/autograd/engine.hpp>
#include <xtgrad/autograd/node.hpp>
#include <xtgrad/autograd/ops.hpp>
#include <xtgrad/autograd/post_accumulate_hooks.hpp>
#include <xtgrad/autograd/tensor.hpp>
#include "tests/test_util.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

TEST_SUITE_BEGIN("engine");

using namespace xtgrad;

namespace {

// Writes each event as a word: "before:MulBackward", "acc:MulBackward/0", "ran:...", "leaf:w", ...
class Recorder : public detail::BackwardObserver {
public:
    explicit Recorder(std::vector<std::string>& log, std::string tag = "") : log_(log), tag_(std::move(tag)) {}
    void begin() override { log_.push_back(tag_ + "begin"); }
    void before_node(std::size_t, const Node& node, const TensorImpl&, const Array&) override {
        log_.push_back(tag_ + "before:" + node.op());
    }
    void accumulated(const Node& node, std::size_t input, const Shape&, bool) override {
        log_.push_back(tag_ + "acc:" + node.op() + "/" + std::to_string(input));
    }
    void node_ran(const Node& node) override { log_.push_back(tag_ + "ran:" + node.op()); }
    void leaf_done(TensorImpl& leaf) override { log_.push_back(tag_ + "leaf:" + leaf.name); }
    void after_node(const Node& node) override { log_.push_back(tag_ + "after:" + node.op()); }
    void end() override { log_.push_back(tag_ + "end"); }

private:
    std::vector<std::string>& log_;
    std::string tag_;
};

}  // namespace

TEST_CASE("backward observers: every event in chain-rule order, then the post-accumulate hooks") {
    Tensor w = Tensor::from_vector({1, 2}, {2}, true);
    w.set_name("w");
    const Tensor x = Tensor::from_vector({3, 4}, {2});
    std::vector<std::string> log;
    register_post_accumulate_grad_hook(w, [&](TensorImpl&) { log.push_back("post-accumulate hook"); });
    {
        Recorder recorder(log);
        detail::ObserverScope scope(&recorder);
        sum(w * x).backward();
    }
    const std::vector<std::string> want{"begin",
                                        "before:SumBackward", "acc:SumBackward/0", "ran:SumBackward", "after:SumBackward",
                                        "before:MulBackward", "acc:MulBackward/0", "ran:MulBackward",
                                        "leaf:w", "post-accumulate hook",  // the recorder is listed before the hooks
                                        "after:MulBackward", "end"};
    CHECK(log == want);
    CHECK(w.grad_array()(1) == doctest::Approx(4));
}

TEST_CASE("backward observers: nested scopes are told in order, and a closed scope hears nothing") {
    const std::size_t built_in = detail::backward_observers().size();
    Tensor w = Tensor::from_vector({1, 2}, {2}, true);
    std::vector<std::string> log;
    Recorder outer(log, "outer "), inner(log, "inner ");
    {
        detail::ObserverScope a(&outer);
        {
            detail::ObserverScope b(&inner);
            CHECK(detail::backward_observers().size() == built_in + 2);
            sum(w).backward();
        }
        CHECK(detail::backward_observers().size() == built_in + 1);
    }
    CHECK(detail::backward_observers().size() == built_in);
    REQUIRE(log.size() >= 2);
    CHECK(log[0] == "outer begin");
    CHECK(log[1] == "inner begin");
    const std::size_t heard = log.size();
    sum(w).backward();
    CHECK(log.size() == heard);  // both scopes are closed
}
