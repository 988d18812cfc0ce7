// Exercise 05's grader: your forward against the same layers composed by hand, your training
// steps against a reference run from the same initial weights, then the accuracy it reaches.
#include "exercise.hpp"
#include "diagnose.hpp"

#include <string>

using namespace xtgrad;

TEST_SUITE_BEGIN("05_mlp_spiral");

namespace {
struct Seeded {
    explicit Seeded(std::uint64_t seed) { manual_seed(seed); }
};
// A model with the same initial weights on every call for a seed, and the spirals.
struct Setup {
    explicit Setup(std::uint64_t seed = 0) : seeded(seed) { ex05::make_spirals(x, y, 1); }
    Seeded seeded;
    ex05::MLP model;
    Tensor x;
    Ids y;
};
Tensor reference_forward(const ex05::MLP& m, const Tensor& x) {
    return linear(relu(linear(x, m.fc1->weight, m.fc1->bias)), m.fc2->weight, m.fc2->bias);
}
double accuracy(const Tensor& logits, const Ids& y) {
    const Ids pred = argmax(logits, 1);
    std::size_t right = 0;
    for (std::size_t i = 0; i < y.size(); ++i) right += pred(i) == y(i);
    return static_cast<double>(right) / static_cast<double>(y.size());
}
}  // namespace

TEST_CASE("05_mlp_spiral: forward, 4 seeded initial weights") {
    std::string m;
    for (std::uint64_t seed = 0; seed < 4 && m.empty(); ++seed) {
        Setup s(seed);
        const Tensor h = linear(s.x, s.model.fc1->weight, s.model.fc1->bias);
        m = grading::diagnose(fmt::format("logits of model.forward(x), weights of manual_seed({})", seed),
                              s.model.forward(s.x).data(), reference_forward(s.model, s.x).data(), 1e-5,
                              {{"it is fc2(fc1(x)): the relu between them is missing",
                                linear(h, s.model.fc2->weight, s.model.fc2->bias).data()}});
    }
    GRADE(m);
}

// The losses of three steps against a reference run, and against a run that never zeroes the
// gradients: matching that one names the cause.
TEST_CASE("05_mlp_spiral: the losses of the first three training steps") {
    Setup mine, ref, stale;
    optim::Adam mine_opt(mine.model.parameters(), optim::AdamOptions(1e-2));
    optim::Adam ref_opt(ref.model.parameters(), optim::AdamOptions(1e-2));
    optim::Adam stale_opt(stale.model.parameters(), optim::AdamOptions(1e-2));
    std::string m;
    for (int step = 1; step <= 3 && m.empty(); ++step) {
        const float got = ex05::train_step(mine.model, mine_opt, mine.x, mine.y);
        ref_opt.zero_grad();
        Tensor loss = cross_entropy(reference_forward(ref.model, ref.x), ref.y);
        loss.backward();
        ref_opt.step();
        Tensor stale_loss = cross_entropy(reference_forward(stale.model, stale.x), stale.y);  // no zero_grad
        stale_loss.backward();
        stale_opt.step();
        m = grading::diagnose_scalar(
            "loss of training step " + std::to_string(step), got, loss.item(), 1e-5,
            {{step == 1 ? "" : "steps before this one matched, then it drifts: the gradients accumulate across steps "
                               "(.grad sums every backward until zero_grad): zero_grad?",
              step == 1 ? loss.item() + 1e9 : stale_loss.item()}},
            step == 1 ? "" : "steps before this one matched: does each step run backward and opt.step() once?");
    }
    GRADE(m);
}

TEST_CASE("05_mlp_spiral: 300 steps of Adam reach 95% accuracy") {
    Setup s;
    optim::Adam opt(s.model.parameters(), optim::AdamOptions(1e-2));
    for (int step = 0; step < 300; ++step) ex05::train_step(s.model, opt, s.x, s.y);
    NoGradGuard no_grad;
    const double acc = accuracy(s.model.forward(s.x), s.y);
    GRADE(acc >= 0.95 ? "" : fmt::format("accuracy after 300 steps: {:.1f}% of the 300 points, 95% needed", 100 * acc));
}

TEST_SUITE_END();
