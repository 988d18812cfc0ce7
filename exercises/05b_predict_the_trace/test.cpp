// Exercise 05b's grader: runs the model you predicted and compares its trace line by line. Lines
// are counted from 1, as the other graders count cases; the trace itself numbers its steps from 0
// ("[xtgrad backward 0]"), so each message gives both.
#include "exercise.hpp"
#include "diagnose.hpp"

#include <algorithm>
#include <cctype>
#include <optional>

using namespace xtgrad;

TEST_SUITE_BEGIN("05b_predict_the_trace");

namespace {

// The model of the questions, two hidden layers with relu or tanh between, on 300 points of 3
// classes: f(logits, loss) runs while the layers live.
template <class F>
void with_model(bool use_tanh, F&& f) {
    manual_seed(0);
    nn::Linear fc1(2, 64), fc2(64, 64), fc3(64, 3);
    Generator gen(1);
    const Tensor x = randn({300, 2}, gen);
    Ids labels = Ids::from_shape({300});
    for (std::size_t i = 0; i < 300; ++i) labels(i) = static_cast<std::int64_t>(i / 100);
    const auto act = [&](const Tensor& t) { return use_tanh ? tanh(t) : relu(t); };
    const Tensor logits = fc3.forward(act(fc2.forward(act(fc1.forward(x)))));
    f(logits, cross_entropy(logits, labels));
}

// The trace (op, gradient shape, norm) of one backward of the two-hidden-layer MLP.
std::vector<TraceTable::Row> run(bool use_tanh) {
    std::vector<TraceTable::Row> rows;
    with_model(use_tanh, [&](const Tensor&, const Tensor& loss) {
        TraceTable table;
        loss.backward();
        rows = table.rows();
    });
    return rows;
}

std::string line_str(const std::string& op, const Shape& grad) { return fmt::format("{} {}", op, shape_str(grad)); }

bool has_op(const std::vector<ex05b::TraceLine>& lines, const std::string& op) {
    return std::any_of(lines.begin(), lines.end(), [&](const ex05b::TraceLine& l) { return l.op == op; });
}

// Why a prediction has the wrong number of lines, for the usual habits; "" if none fits.
std::string count_cause(const std::vector<ex05b::TraceLine>& mine, const std::vector<TraceTable::Row>& ran) {
    if (mine.empty()) return "";
    if (has_op(mine, "AccumulateGrad"))
        return "; xtgrad's trace has no AccumulateGrad lines (torch's habit): a parameter is a leaf, not a node";
    if (has_op(mine, "MatmulBackward") || has_op(mine, "AddBackward") || has_op(mine, "MmBackward"))
        return "; a Linear is one node, LinearBackward: its product and its bias together";
    if (!ran.empty() && !has_op(mine, ran.front().op))
        return "; the loss's own node is a line too, the first: backward() starts there";
    return "";
}

}  // namespace

TEST_CASE("05b_predict_the_trace: a. the two-hidden-layer MLP's backward, line by line") {
    const std::vector<TraceTable::Row> ran = run(false);
    const std::vector<ex05b::TraceLine> mine = ex05b::predicted_trace();
    const std::string reveal_lines =
        grading::reveal() ? fmt::format(" [the engine ran {} lines]", ran.size()) : " (XTGRAD_REVEAL=1 shows the count)";
    std::string m;
    if (mine.size() != ran.size())
        m = fmt::format("a. you predicted {} lines, {} than the engine ran: one line per node that made a tensor "
                        "needing a gradient, from the loss down{} (predict them all, then run this again){}",
                        mine.size(), mine.size() < ran.size() ? "fewer" : "more", count_cause(mine, ran), reveal_lines);
    // the same ops from the other end: the forward's order, the mistake grader 11 names too
    bool reversed = mine.size() == ran.size() && mine.size() > 1;
    for (std::size_t i = 0; i < ran.size() && reversed; ++i) reversed = mine[ran.size() - 1 - i].op == ran[i].op;
    for (std::size_t i = 0; i < ran.size() && m.empty(); ++i) {
        if (mine[i].op == ran[i].op && mine[i].grad == ran[i].grad_shape) continue;
        const bool op_differs = mine[i].op != ran[i].op;
        const Shape& s = mine[i].grad;
        const bool transposed = s.size() == 2 && ran[i].grad_shape.size() == 2 && s[0] == ran[i].grad_shape[1] &&
                                s[1] == ran[i].grad_shape[0];
        std::string cause;
        if (reversed)
            cause = "; your lines are the forward's order, reversed? The engine runs from the loss down: the loss's node "
                    "first, fc1's last";
        else if (!op_differs && ran[i].grad_shape.empty())
            cause = "; the loss is a 0-d tensor (a scalar: no dimensions), and so is d loss / d loss";
        else if (!op_differs)
            cause = transposed ? "; transposed? A gradient has its tensor's shape: (rows, features), as the output"
                               : " (the gradient flowing in is d loss / d that node's output: its shape is the output's)";
        m = fmt::format("a. line {} of {} ([xtgrad backward {}] in the trace): you predicted {}; the engine's {} differs{}{}",
                        i + 1, ran.size(), i, line_str(mine[i].op, mine[i].grad), op_differs ? "op" : "shape", cause,
                        grading::reveal() ? " [the engine ran " + line_str(ran[i].op, ran[i].grad_shape) + "]"
                                          : " (XTGRAD_REVEAL=1 shows the line)");
    }
    GRADE(m);
}

TEST_CASE("05b_predict_the_trace: b. tanh in place of relu") {
    const std::vector<TraceTable::Row> relu_rows = run(false), tanh_rows = run(true);
    std::optional<std::string> replaced;
    for (std::size_t i = 0; i < relu_rows.size(); ++i)
        if (relu_rows[i].op == "ReluBackward") replaced = tanh_rows[i].op;
    REQUIRE(replaced.has_value());
    const std::string mine = ex05b::op_replacing_relu();
    const auto lower = [](std::string s) {
        for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        return s;
    };
    const std::size_t from = mine.find_first_not_of(" \t\n"), to = mine.find_last_not_of(" \t\n");
    const std::string trimmed = from == std::string::npos ? "" : mine.substr(from, to - from + 1);
    std::string cause = " (an op's node is named after the op, as torch's grad_fn)";
    if (trimmed != mine) cause = ": it has spaces around it";
    else if (lower(mine) == lower(*replaced)) cause = ": the name's capitals differ (names are CamelCase: ReluBackward)";
    else if (!mine.empty() && std::isdigit(static_cast<unsigned char>(mine.back())))
        cause = ": torch numbers its grad_fn names (…Backward0); xtgrad's names have no number";
    else if (mine.find("Backward") == std::string::npos)
        cause = ": a line names the op's node, the op's name followed by Backward (as ReluBackward)";
    GRADE(mine == *replaced ? ""
          : mine.empty()    ? "b. you named no op (\"\") for the line that replaces ReluBackward: is the TODO still there?"
                            : fmt::format("b. you named the op replacing ReluBackward \"{}\": that is not what the engine ran{}",
                                          mine, cause));
}

TEST_CASE("05b_predict_the_trace: c. the signs of the gradient flowing into fc3's node") {
    long want = 0, total = 0;
    with_model(false, [&](const Tensor& logits, const Tensor& loss) {
        const Tensor g = grad({loss}, {logits})[0];  // what fc3's LinearBackward receives
        total = static_cast<long>(g.numel());
        for (long i = 0; i < total; ++i) want += g.ptr()[i] < 0;
    });
    const long mine = ex05b::negative_entries_into_fc3();
    std::string cause;
    if (mine == 0) cause = "it is 0: is the TODO still there?";
    else if (mine == total) cause = fmt::format("that is all {}: some entries are positive", total);
    else if (mine == total - want) cause = "that is the count of the positive entries: which sign has p − 1?";
    else if (mine == 1) cause = "one row's worth: count over all 300 rows";
    else if (mine < 0 || mine > total) cause = fmt::format("the (300,3) gradient has {} entries", total);
    else cause = "derive d loss / d logits for cross-entropy (derivations.md) and look at each entry's sign";
    GRADE(mine == want ? ""
                       : fmt::format("c. you counted {} negative entries in the gradient flowing into fc3's LinearBackward: "
                                     "wrong; {}{}",
                                     mine, cause,
                                     grading::reveal() ? fmt::format(" [the engine's gradient has {}]", want)
                                                       : " (XTGRAD_REVEAL=1 shows the count)"));
}

TEST_SUITE_END();
