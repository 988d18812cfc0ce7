// Exercise 05b's grader: runs the model you predicted and compares its trace line by line.
#include "exercise.hpp"
#include "diagnose.hpp"

#include <optional>

using namespace xtgrad;

TEST_SUITE_BEGIN("05b_predict_the_trace");

namespace {

// The trace (op, gradient shape, norm) of one backward of the two-hidden-layer MLP.
std::vector<TraceTable::Row> run(bool use_tanh) {
    manual_seed(0);
    nn::Linear fc1(2, 64), fc2(64, 64), fc3(64, 3);
    Generator gen(1);
    const Tensor x = randn({300, 2}, gen);
    Ids labels = Ids::from_shape({300});
    for (std::size_t i = 0; i < 300; ++i) labels(i) = static_cast<std::int64_t>(i / 100);
    const auto act = [&](const Tensor& t) { return use_tanh ? tanh(t) : relu(t); };
    const Tensor loss = cross_entropy(fc3.forward(act(fc2.forward(act(fc1.forward(x))))), labels);
    TraceTable table;
    loss.backward();
    return table.rows();
}

std::string line_str(const std::string& op, const Shape& grad) { return fmt::format("{} {}", op, shape_str(grad)); }

}  // namespace

TEST_CASE("05b_predict_the_trace: a. the two-hidden-layer MLP's backward, line by line") {
    const std::vector<TraceTable::Row> ran = run(false);
    const std::vector<ex05b::TraceLine> mine = ex05b::predicted_trace();
    const std::string reveal_lines =
        grading::reveal() ? fmt::format(" [the engine ran {} lines]", ran.size()) : " (XTGRAD_REVEAL=1 shows the count)";
    std::string m;
    if (mine.size() != ran.size())
        m = fmt::format("a. you predicted {} lines, {} than the engine ran: one line per node that made a tensor "
                        "needing a gradient, from the loss down (predict them all, then run this again){}",
                        mine.size(), mine.size() < ran.size() ? "fewer" : "more", reveal_lines);
    for (std::size_t i = 0; i < ran.size() && m.empty(); ++i)
        if (mine[i].op != ran[i].op || mine[i].grad != ran[i].grad_shape)
            m = fmt::format("a. line {}: you predicted {}; the engine's {} differs{}{}", i, line_str(mine[i].op, mine[i].grad),
                            mine[i].op != ran[i].op ? "op" : "shape",
                            mine[i].op != ran[i].op ? "" : " (the gradient flowing in is d loss / d that node's output: "
                                                           "its shape is the output's)",
                            grading::reveal() ? " [the engine ran " + line_str(ran[i].op, ran[i].grad_shape) + "]"
                                              : " (XTGRAD_REVEAL=1 shows the line)");
    GRADE(m);
}

TEST_CASE("05b_predict_the_trace: b. tanh in place of relu") {
    const std::vector<TraceTable::Row> relu_rows = run(false), tanh_rows = run(true);
    std::optional<std::string> replaced;
    for (std::size_t i = 0; i < relu_rows.size(); ++i)
        if (relu_rows[i].op == "ReluBackward") replaced = tanh_rows[i].op;
    REQUIRE(replaced.has_value());
    const std::string mine = ex05b::op_replacing_relu();
    GRADE(mine == *replaced ? ""
                            : fmt::format("b. you named the op replacing ReluBackward \"{}\": that is not what the engine "
                                          "ran (an op's node is named after the op, as torch's grad_fn)",
                                          mine));
}

TEST_CASE("05b_predict_the_trace: c. the gradient flowing into the loss's node") {
    const std::vector<TraceTable::Row> ran = run(false);
    GRADE(grading::diagnose_scalar("c. |g| of CrossEntropyBackward", ex05b::loss_node_grad_norm(), ran.front().grad_norm, 1e-9));
}

TEST_SUITE_END();
