// The report's graph collapsed by module (report/collapsed_graph.hpp): one box per module two
// levels below the drawn one, its ops counted, an arrow where a gradient crosses between two.
#include <xtgrad/report/collapsed_graph.hpp>

#include <xtgrad/autograd/ops.hpp>
#include <xtgrad/nn/layers.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <string>

TEST_SUITE_BEGIN("debug");

using namespace xtgrad;

namespace {

class Block : public nn::Module {
public:
    Block() {
        inner = register_module("inner", std::make_shared<nn::Linear>(3, 3));
        out = register_module("out", std::make_shared<nn::Linear>(3, 2));
    }
    Tensor forward(const Tensor& x) const {
        auto scope = enter(x);
        return scope.output(out->forward(relu(inner->forward(x))));
    }
    std::shared_ptr<nn::Linear> inner, out;
};

class Net : public nn::Module {
public:
    Net() { block = register_module("block", std::make_shared<Block>()); }
    Tensor forward(const Tensor& x) const {
        auto scope = enter(x);
        return scope.output(block->forward(x));
    }
    std::shared_ptr<Block> block;
};

const report::ModuleBox* box_named(const report::CollapsedGraph& g, const std::string& module) {
    const auto it = std::find_if(g.boxes.begin(), g.boxes.end(), [&](const report::ModuleBox& b) { return b.module == module; });
    return it == g.boxes.end() ? nullptr : &*it;
}

}  // namespace

TEST_CASE("collapse_by_module: a box per module two levels down, ops counted, arrows between boxes") {
    Net net;
    Tensor loss = sum(net.forward(Tensor::from_vector({1.f, -2.f, 0.5f, 3.f, 1.f, -1.f}, {2, 3})));
    std::vector<DotNode> nodes;
    DotOptions o;
    o.nodes = &nodes;
    const std::string dot = to_dot(loss, o);
    const report::CollapsedGraph whole = report::collapse_by_module(dot, nodes, "");
    const report::ModuleBox* block = box_named(whole, "block.inner");
    REQUIRE(block != nullptr);
    CHECK(block->ops.at("LinearBackward") == 1);
    CHECK(block->parameters == 2);
    REQUIRE(box_named(whole, "block.out") != nullptr);
    CHECK(box_named(whole, "(inputs)") != nullptr);
    std::size_t held = 0;
    for (const report::ModuleBox& b : whole.boxes) held += b.nodes.size();
    CHECK(held == nodes.size());  // every node in exactly one box
    CHECK(whole.boxes.size() < nodes.size());
    // inner's output flows into block's relu, whose output flows into out: arrows between boxes only
    CHECK(whole.dot.find(" -> ") != std::string::npos);
    for (const report::ModuleBox& b : whole.boxes) CHECK(whole.dot.find(b.id + " -> " + b.id + ";") == std::string::npos);

    // Drawn from "block": its children are the boxes, named below it
    std::vector<DotNode> part;
    o.module_prefix = "block";
    o.nodes = &part;
    const report::CollapsedGraph below = report::collapse_by_module(to_dot(loss, o), part, "block");
    REQUIRE(box_named(below, "block.inner") != nullptr);
    CHECK(below.dot.find("label=\"inner\\n1 op, 2 parameters\"") != std::string::npos);
}

TEST_SUITE_END();
