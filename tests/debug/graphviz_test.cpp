// DOT export (autograd/graphviz.hpp): clusters by module, parameters by name, depth limit.
#include "test_util.hpp"
#include "winter_games_small.hpp"

#include <xtgrad/nn/layers.hpp>

#include <regex>

using namespace xtgrad;

TEST_SUITE_BEGIN("debug");

namespace {

std::size_t count(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

std::size_t op_boxes(const std::string& dot) { return count(dot, "style=\"rounded,filled\""); }

struct MLP : nn::Module {
    std::shared_ptr<nn::Linear> fc1 = register_module("fc1", std::make_shared<nn::Linear>(2, 4));
    std::shared_ptr<nn::Linear> fc2 = register_module("fc2", std::make_shared<nn::Linear>(4, 3));
    Tensor forward(const Tensor& x) const {
        auto scope = enter(x);
        return scope.output(fc2->forward(relu(fc1->forward(x))));
    }
};

}  // namespace

TEST_CASE("an MLP's graph: ops as boxes, parameters by name, one cluster per module") {
    manual_seed(0);
    MLP mlp;
    Tensor x = test::rnd({5, 2}, 1);
    Tensor loss = sum(mlp.forward(x));
    const std::string dot = to_dot(loss);
    CHECK(dot.starts_with("digraph xtgrad {"));
    CHECK(dot.find("subgraph cluster_fc1 {") != std::string::npos);
    CHECK(dot.find("subgraph cluster_fc2 {") != std::string::npos);
    CHECK(dot.find("\"fc1.weight\\n(4,2)\"") != std::string::npos);
    CHECK(dot.find("\"fc2.bias\\n(3)\"") != std::string::npos);
    CHECK(dot.find("\"LinearBackward\\n(5,4)\"") != std::string::npos);
    CHECK(dot.find("\"input\\n(5,2)\"") != std::string::npos);
    CHECK(op_boxes(dot) == 4);  // Sum, Linear, Relu, Linear
    // fc1.weight sits inside fc1's cluster
    const std::size_t cluster = dot.find("subgraph cluster_fc1 {"), end = dot.find("}", cluster);
    CHECK(dot.find("fc1.weight", cluster) < end);
}

TEST_CASE("a module prefix no op is in is an Error naming it and the modules where the path stops") {
    manual_seed(0);
    MLP mlp;
    const Tensor loss = sum(mlp.forward(test::rnd({5, 2}, 1)));
    test::expect_error([&] { (void)to_dot(loss, {.module_prefix = "fc3"}); },
                       {"to_dot (module_prefix): no op of the graph is in module 'fc3'", "modules are: fc1, fc2"});
    test::expect_error([&] { (void)to_dot(loss, {.module_prefix = "fc"}); }, {"module 'fc'"});  // a prefix of a name is no module
    const test::WinterGames w = test::winter_games_loss();
    test::expect_error([&] { (void)to_dot(w.loss, {.module_prefix = "encoder.layers.5"}); },
                       {"module 'encoder.layers.5'", "the graph's modules under 'encoder.layers' are: encoder.layers.0"});
    test::expect_error([&] { (void)to_dot(w.loss, {.module_prefix = "Encoder"}); }, {"modules are: decoder, encoder, projection"});
    CHECK_FALSE(to_dot(w.loss, {.module_prefix = "encoder.layers.0"}).empty());
}

TEST_CASE("one encoder layer of the tutorial C Transformer, by module prefix") {
    test::WinterGames w = test::winter_games_loss();
    const std::string dot = to_dot(w.loss, {.module_prefix = "encoder.layers.0"});
    CHECK(dot.find("subgraph cluster_encoder_layers_0 {") != std::string::npos);
    CHECK(dot.find("label=\"encoder.layers.0\"") != std::string::npos);
    CHECK(dot.find("subgraph cluster_encoder_layers_0_enc_self_attn_W_Q {") != std::string::npos);
    CHECK(dot.find("encoder.layers.0.enc_self_attn.W_Q.weight") != std::string::npos);
    CHECK(dot.find("SoftmaxBackward") != std::string::npos);
    CHECK(dot.find("decoder.layers") == std::string::npos);          // nothing of the decoder
    CHECK(dot.find("from encoder\\nAddBackward") != std::string::npos);  // the embeddings come in as a stub
    // nested clusters are labelled relative to their parent
    CHECK(dot.find("label=\"enc_self_attn\"") != std::string::npos);
    CHECK(dot.find("label=\"W_Q\"") != std::string::npos);
}

TEST_CASE("the depth limit keeps the drawing small and marks where it was cut") {
    test::WinterGames w = test::winter_games_loss();
    const std::string all = to_dot(w.loss), two = to_dot(w.loss, {.max_depth = 2});
    CHECK(op_boxes(two) == 3);  // the loss, the reshape of the logits, the projection
    CHECK(op_boxes(all) > 50);
    CHECK(two.find("\"... ") != std::string::npos);
    // With a prefix, depth counts only the module's own nodes, from its topmost one.
    const std::string layer = to_dot(w.loss, {.module_prefix = "encoder.layers.0"});
    const std::string top = to_dot(w.loss, {.max_depth = 0, .module_prefix = "encoder.layers.0"});
    CHECK(op_boxes(top) == 1);
    CHECK(top.find("\"LayerNormBackward\\n(1,7,16)\"") != std::string::npos);  // pos_ffn's norm, the layer's output
    CHECK(op_boxes(to_dot(w.loss, {.max_depth = 3, .module_prefix = "encoder.layers.0"})) < op_boxes(layer));
}

TEST_CASE("value and gradient summaries, from the tensors and from a trace") {
    manual_seed(0);
    MLP mlp;
    Tensor loss = sum(mlp.forward(test::rnd({5, 2}, 1)));
    TraceTable trace;
    loss.backward(/*retain_graph=*/true);
    const std::string dot = to_dot(loss, {.values = true, .grads = true, .trace = &trace});
    CHECK(std::regex_search(dot, std::regex(R"(fc1\.weight\\n\(4,2\)\\n\|v\| = [0-9.]+\\n\|g\| = [0-9.]+)")));
    CHECK(std::regex_search(dot, std::regex(R"(ReluBackward\\n\(5,4\)\\n\|v\| = [0-9.]+\\n\|g\| = [0-9.]+)")));
}

TEST_CASE("a graph freed by backward cannot be drawn") {
    Tensor x = test::rnd({2}, 1);
    Tensor y = sum(x * x);
    y.backward();
    test::expect_error([&] { (void)to_dot(y); }, {"to_dot", "freed", "retain_graph"});
}

TEST_CASE("a leaf draws as itself") {
    Tensor x = Tensor::ones({2}, true).set_name("w");
    CHECK(to_dot(x).find("\"w\\n(2)\"") != std::string::npos);
}

TEST_SUITE_END();
