// A learner's program against the installed xtgrad, the size of a first experiment: a tiny MLP,
// three Adam steps, a gradcheck. bench/learner_compile.sh times its edit-compile-run at -O0;
// tests/install_consumer/run.sh builds and runs it once.
#include <xtgrad/xtgrad.hpp>

#include <fmt/core.h>

using namespace xtgrad;

int main() {
    manual_seed(0);
    nn::Linear fc1(4, 8), fc2(8, 3);
    Tensor x = randn({5, 4}, default_generator());
    Ids y = {0, 1, 2, 1, 0};
    optim::Adam opt(fc1.parameters(), optim::AdamOptions(1e-2));
    for (int step = 0; step < 3; ++step) {
        opt.zero_grad();
        Tensor loss = cross_entropy(fc2.forward(relu(fc1.forward(x))), y);
        loss.backward();
        opt.step();
        fmt::print("step {} loss {:.4f}\n", step, loss.item());
    }
    const GradcheckResult ok = gradcheck([&](const std::vector<Tensor>& in) { return sum(tanh(matmul(in[0], in[1]))); },
                              {randn({2, 3}, default_generator(), true), randn({3, 2}, default_generator(), true)});
    fmt::print("gradcheck {}\n", ok ? "passed" : "failed");
    return ok ? 0 : 1;
}
