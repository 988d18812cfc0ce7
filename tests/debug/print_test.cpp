// The gdb helpers' text (autograd/debug.hpp) and the break filter behind before_node.
#include "test_util.hpp"
#include "winter_games_small.hpp"

#include <algorithm>
#include <csignal>
#include <limits>

using namespace xtgrad;

TEST_SUITE_BEGIN("debug");

namespace {
volatile std::sig_atomic_t traps = 0;
void count_trap(int) { traps = traps + 1; }
}  // namespace

TEST_CASE("describe a parameter, a node and the graph") {
    test::WinterGames w = test::winter_games_loss();
    const Tensor& weight = w.model->encoder->layers->operator[](0).enc_self_attn->W_Q->weight;
    const std::string p = debug::describe(*weight.impl());
    CHECK(p.starts_with("\"encoder.layers.0.enc_self_attn.W_Q.weight\" (16,16) float32 requires_grad leaf grad=none ["));
    CHECK(p.find("... (256 values)]") != std::string::npos);

    const std::string n = debug::describe(*w.loss.grad_fn());
    CHECK(n.starts_with("CrossEntropyBackward (outside any module), created at autograd/ops/cross_entropy.cpp:"));
    // The logits: nothing holds them (the loss's backward saved its probabilities), so the
    // node shows their shape and says their values are gone.
    CHECK(n.find("\n  input 0: tensor (7,9) float32 requires_grad grad_fn=ReshapeBackward grad=none (values freed)") !=
          std::string::npos);

    const std::string g = debug::graph_string(*w.loss.impl(), 3);
    CHECK(g.starts_with("CrossEntropyBackward -> ()\n`- ReshapeBackward -> (7,9)\n   `- LinearBackward -> (1,7,9)  in projection\n"));
    CHECK(g.find("projection.weight (9,16)") != std::string::npos);
}

TEST_CASE("a shared tensor is shown once in the tree") {
    Tensor x = Tensor::from_vector({1, 2}, {2}, true).set_name("x");
    Tensor h = x * 2.f;
    const std::string g = debug::graph_string(*(h + h).impl(), 5);
    CHECK(g.find("(shown above)") != std::string::npos);
}

TEST_CASE("a graph deeper than kMaxGraphDepth is shown that deep, not as text growing with depth squared") {
    Tensor x = Tensor::from_vector({1}, {1}, true).set_name("x");
    Tensor y = x;
    for (int i = 0; i < 3000; ++i) y = y * 1.f;
    const std::string g = debug::graph_string(*y.impl(), std::numeric_limits<int>::max());
    CHECK(std::count(g.begin(), g.end(), '\n') == debug::kMaxGraphDepth + 2);  // the levels, then "..."
    CHECK(g.find("`- ...") != std::string::npos);
    CHECK(g.find("x (1)") == std::string::npos);  // the leaf lies deeper
}

TEST_CASE("break filters: by op, by module path (a path matches its sub-modules, not its siblings)") {
    test::WinterGames w = test::winter_games_loss();
    const std::size_t before = debug::state.matches;
    debug::break_on_op("SoftmaxBackward");
    debug::break_on_module("encoder.layers.0");
    w.loss.backward();
    debug::clear_breaks();
    CHECK(debug::state.matches - before == 1);  // one softmax in the first encoder layer
    CHECK(debug::state.grad_out == nullptr);    // cleared once the node ran

    Node node("MulBackward", {}, {}, nullptr);
    {
        ModuleScope scope("encoder.layers.01");
        Node sibling("MulBackward", {}, {}, nullptr);
        debug::break_on_module("encoder.layers.0");
        CHECK_FALSE(debug::matches(sibling));
    }
    ModuleScope scope("encoder.layers.0.pos_ffn");
    Node child("MulBackward", {}, {}, nullptr);
    CHECK(debug::matches(child));
    debug::break_on_op("AddBackward");
    CHECK_FALSE(debug::matches(child));
    debug::clear_breaks();
    CHECK(debug::matches(node));  // no filter: every node
}

TEST_CASE("a break filter that matched no node of a pass names the nearest op or module and the pass's ops") {
    test::WinterGames w = test::winter_games_loss();
    SUBCASE("a misspelt op") {
        debug::break_on_op("SoftMaxBackward");
        w.loss.backward();
        const std::string note = debug::unmatched_filter_note();
        CHECK(note.starts_with("xtgrad: break filter op 'SoftMaxBackward' matched none of the "));
        CHECK(note.find(" nodes of this backward pass. Did you mean 'SoftmaxBackward'? Its ops: ") != std::string::npos);
        CHECK(note.find("CrossEntropyBackward") != std::string::npos);
    }
    SUBCASE("a misspelt module path: the nearest path at the filter's depth") {
        debug::break_on_module("encoder.layer.0");
        w.loss.backward();
        const std::string note = debug::unmatched_filter_note();
        CHECK(note.find("module 'encoder.layer.0' matched none") != std::string::npos);
        CHECK(note.find("Did you mean 'encoder.layers.0'?") != std::string::npos);
        CHECK(note.find("Its modules: ") != std::string::npos);
        CHECK(note.find("decoder.layers.0.dec_self_attn") == std::string::npos);  // deeper than the filter's path
    }
    SUBCASE("an op named as the forward op, any case: its backward's name") {
        debug::break_on_op("softmax");
        w.loss.backward();
        CHECK(debug::unmatched_filter_note().find("Did you mean 'SoftmaxBackward'? (a node is named by its op's backward)") !=
              std::string::npos);
    }
    SUBCASE("a module path given from inside the model: the whole path") {
        debug::break_on_module("enc_self_attn");
        w.loss.backward();
        CHECK(debug::unmatched_filter_note().find("Did you mean 'encoder.layers.0.enc_self_attn'? (a module path starts "
                                                  "at the model)") != std::string::npos);
    }
    SUBCASE("an op that ran, but not in that module") {
        debug::break_on_op("SoftmaxBackward");
        debug::break_on_module("projection");
        w.loss.backward();
        CHECK(debug::unmatched_filter_note().find("Op 'SoftmaxBackward' ran, but not under module 'projection'.") !=
              std::string::npos);
    }
    SUBCASE("nothing near: no guess") {
        debug::break_on_op("Q");
        w.loss.backward();
        const std::string note = debug::unmatched_filter_note();
        CHECK(note.find("matched none") != std::string::npos);
        CHECK(note.find("Did you mean") == std::string::npos);
    }
    SUBCASE("a filter that matched, and no filter: no note") {
        debug::break_on_op("SoftmaxBackward");
        w.loss.backward();
        CHECK(debug::unmatched_filter_note().empty());
    }
    debug::clear_breaks();
    Tensor x = Tensor::from_vector({1, 2}, {2}, true);
    sum(x * x).backward();
    CHECK(debug::unmatched_filter_note().empty());
}

TEST_CASE("modules not registered in a parent keep the enclosing module path") {
    ModuleScope outer("encoder.layers.0.enc_self_attn");
    {
        ModuleScope inner("");
        CHECK(std::string(current_module_path()) == "encoder.layers.0.enc_self_attn");
    }
    ModuleScope other("decoder");
    CHECK(std::string(current_module_path()) == "decoder");
}

TEST_CASE("set_trap_on_match raises SIGTRAP on each match (what stops a debugger without a breakpoint)") {
    auto previous = std::signal(SIGTRAP, count_trap);
    traps = 0;
    debug::set_trap_on_match(true);
    debug::break_on_op("MulBackward");
    Tensor x = Tensor::from_vector({1, 2}, {2}, true);
    sum(x * x * 3.f).backward();  // two MulBackward nodes
    debug::set_trap_on_match(false);
    debug::clear_breaks();
    std::signal(SIGTRAP, previous);
    CHECK(traps == 2);
}

TEST_CASE("set_trap_on_match without a debugger or a handler does not kill the program with SIGTRAP") {
    const bool defaulted = std::signal(SIGTRAP, SIG_DFL) != SIG_ERR;  // the default action: terminate, core
    REQUIRE(defaulted);
    debug::set_trap_on_match(true);
    debug::break_on_op("MulBackward");
    Tensor x = Tensor::from_vector({1, 2}, {2}, true);
    sum(x * x * 3.f).backward();  // was killed here; now a message on stderr, once
    debug::set_trap_on_match(false);
    debug::clear_breaks();
    CHECK(x.grad_array()(1) == doctest::Approx(12.f));
}

TEST_SUITE_END();
