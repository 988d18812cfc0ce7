// TraceTable (autograd/trace_table.hpp) and the XTGRAD_TRACE line format.
#include "test_util.hpp"
#include "winter_games_small.hpp"

#include <cstdio>

using namespace xtgrad;

TEST_SUITE_BEGIN("debug");

TEST_CASE("a tensor used by two consumers: its gradient is the sum of two contributions") {
    Tensor x = Tensor::from_vector({1, 2}, {2}, true).set_name("x");
    Tensor h = x * 2.f;
    TraceTable table;
    sum(h + exp(h)).backward();
    const TraceTable::Row* mul = table.find("MulBackward");
    REQUIRE(mul != nullptr);
    const TraceTable::Row* add = table.find("AddBackward");
    const TraceTable::Row* ex = table.find("ExpBackward");
    REQUIRE(add != nullptr);
    REQUIRE(ex != nullptr);
    CHECK(mul->from == std::vector<std::size_t>{add->step, ex->step});
    CHECK(table.rows().front().from.empty());  // the seed
    REQUIRE(table.leaves().size() == 1);
    CHECK(table.leaves()[0].name == "x");
    CHECK(table.leaves()[0].from == std::vector<std::size_t>{mul->step});
    CHECK_FALSE(table.leaves()[0].onto_earlier);
    const std::string text = table.str();
    CHECK(text.find(fmt::format("sum of 2: #{} #{}", add->step, ex->step)) != std::string::npos);
}

TEST_CASE("a broadcast gradient reduced to its input's shape is noted on the node") {
    Tensor a = test::rnd({4, 3}, 1), b = test::rnd({3}, 2);
    b.set_name("b");
    TraceTable table;
    sum(a + b).backward();
    const TraceTable::Row* add = table.find("AddBackward");
    REQUIRE(add != nullptr);
    REQUIRE(add->reductions.size() == 1);
    CHECK(add->reductions[0] == "reduced (4,3) -> (3) for input 1 'b'");
    CHECK(table.str().find("reduced (4,3) -> (3) for input 1 'b'") != std::string::npos);
}

TEST_CASE("a leaf's gradient added onto one from an earlier backward is marked") {
    Tensor w = Tensor::ones({2}, true).set_name("w");
    sum(w).backward();
    TraceTable table;
    sum(w * 3.f).backward();
    REQUIRE(table.leaves().size() == 1);
    CHECK(table.leaves()[0].onto_earlier);
    CHECK(table.str().find("(+ gradient of an earlier backward)") != std::string::npos);
}

TEST_CASE("the Transformer's trace: rows in order, norms, summed residuals and Q = K = V") {
    test::WinterGames w = test::winter_games_loss();
    TraceTable table;
    w.loss.backward();
    REQUIRE(table.rows().size() > 50);
    for (std::size_t i = 0; i < table.rows().size(); ++i) CHECK(table.rows()[i].step == i);
    CHECK(table.rows()[0].op == "CrossEntropyBackward");
    CHECK(table.rows()[0].grad_norm == doctest::Approx(1.0));
    // The encoder input feeds W_Q, W_K, W_V and the residual of the first layer: 4 contributions.
    const TraceTable::Row* emb = table.find("AddBackward", "encoder");
    REQUIRE(emb != nullptr);
    CHECK(emb->from.size() == 4);
    // Softmax of the attention runs in the attention module (the inline ScaledDotProductAttention).
    CHECK(table.find("SoftmaxBackward", "encoder.layers.0.enc_self_attn") != nullptr);
    bool wq = false;
    for (const TraceTable::Leaf& l : table.leaves()) wq |= l.name == "encoder.layers.0.enc_self_attn.W_Q.weight";
    CHECK(wq);
}

TEST_CASE("XTGRAD_TRACE's line format") {
    std::FILE* out = std::tmpfile();
    REQUIRE(out != nullptr);
    set_trace(true, out);
    Tensor x = Tensor::from_vector({1, 2}, {2}, true).set_name("x");
    sum(x * x).backward();
    set_trace(false);
    std::rewind(out);
    char line[256] = {};
    REQUIRE(std::fgets(line, sizeof line, out) != nullptr);
    CHECK(std::string(line).starts_with("[xtgrad backward   0] SumBackward            grad ()             |g| = 1"));
    REQUIRE(std::fgets(line, sizeof line, out) != nullptr);
    CHECK(std::string(line).find("MulBackward") != std::string::npos);
    CHECK(std::string(line).find("-> x(2), x(2)") != std::string::npos);
    std::fclose(out);
}

TEST_CASE("docs/debugging.md's trace table example: h feeds h * h (twice) and + h; b is broadcast") {
    Generator g(1);
    Tensor x = randn({4, 3}, g, true).set_name("x");
    Tensor b = Tensor::zeros({3}, true).set_name("b");
    TraceTable table;
    Tensor h = x + b;
    sum(h * h + h).backward();
    REQUIRE(table.rows().size() == 4);
    CHECK(table.rows()[3].op == "AddBackward");
    CHECK(table.rows()[3].from == std::vector<std::size_t>{1, 2, 2});
    CHECK(table.rows()[3].reductions == std::vector<std::string>{"reduced (4,3) -> (3) for input 1 'b'"});
    const std::string text = table.str();
    CHECK(text.find("sum of 3: #1 #2 #2\n                   reduced (4,3) -> (3) for input 1 'b'\n") != std::string::npos);
    CHECK(text.find("\nleaf  shape    |grad|      from\nx     (4,3)    ") != std::string::npos);
}

TEST_SUITE_END();
