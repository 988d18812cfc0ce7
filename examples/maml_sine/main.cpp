// MAML on sine waves (Finn et al., 2017): learn an initialisation from which ONE gradient step on
// ten points of a new sine wave fits that wave. The outer gradient goes through the inner SGD
// step, so it needs the gradient of a gradient: xtgrad::grad with create_graph
// (docs/higher_order.md).
//
//   build/examples/maml_sine [--meta-steps N] [--first-order] [--seed S]   (--help lists every option)
//
// A task is y = a sin(x - φ), a in [0.1, 5], φ in [0, π], x in [-5, 5]. Each meta-step samples
// tasks, adapts the weights θ on each task's support points with one SGD step,
//     θ' = θ - α ∇θ L_support(θ)                  (recorded: create_graph)
// and moves θ with Adam along ∇θ Σ L_query(θ') — whose chain rule runs through ∇θ L_support, i.e.
// the Hessian of the support loss. --first-order drops that term (FOMAML: the inner gradient as a
// constant). The baseline is the usual alternative: the same network trained on all tasks' points
// at once. At the end both are adapted to unseen tasks; the table is the query error after k steps.
#include "examples/common/cli.hpp"
#include <xtgrad/optim/optimizer.hpp>
#include <xtgrad/xtgrad.hpp>

#include "examples/common/cli11.hpp"

#include <cmath>
#include <numbers>
#include <vector>

using namespace xtgrad;

namespace {

using Params = std::vector<Tensor>;

// x (N, 1) -> (N, 1): two hidden layers of 40 ReLUs, as the paper's
Tensor net(const Params& p, const Tensor& x) {
    const Tensor h1 = relu(linear(x, p[0], p[1]));
    const Tensor h2 = relu(linear(h1, p[2], p[3]));
    return linear(h2, p[4], p[5]);
}

Params init_params(Generator& gen) {
    Params p;
    for (auto [out, in] : {std::pair{40, 1}, std::pair{40, 40}, std::pair{1, 40}}) {
        Tensor w = Tensor::zeros({std::size_t(out), std::size_t(in)});
        nn::init::kaiming_uniform_(w, std::sqrt(5.0), gen);  // nn.Linear's default
        Tensor b = Tensor::zeros({std::size_t(out)});
        const double bound = 1.0 / std::sqrt(static_cast<double>(in));
        nn::init::uniform_(b, -bound, bound, gen);
        p.push_back(w.requires_grad_(true));
        p.push_back(b.requires_grad_(true));
    }
    return p;
}

struct Task {
    float amplitude, phase;
    Tensor points(std::size_t n, Generator& gen, Tensor& y) const {
        Tensor x = Tensor::zeros({n, 1});
        y = Tensor::zeros({n, 1});
        for (std::size_t i = 0; i < n; ++i) {
            const float v = gen.uniform(-5.f, 5.f);
            x.mutable_data()(i, 0) = v;
            y.mutable_data()(i, 0) = amplitude * std::sin(v - phase);
        }
        return x;
    }
};
Task sample_task(Generator& gen) { return {gen.uniform(0.1f, 5.f), gen.uniform(0.f, std::numbers::pi_v<float>)}; }

Tensor mse(const Tensor& y, const Tensor& target) {
    const Tensor d = sub(y, target);
    return mean(mul(d, d));
}

// θ - α ∇θ L(θ): recorded (create_graph) so that a loss of the result can be differentiated in θ
Params sgd_step(const Params& p, const Tensor& loss, float alpha, bool record) {
    const std::vector<Tensor> g = grad({loss}, p, {}, GradOptions().create_graph(record));
    Params adapted;
    for (std::size_t i = 0; i < p.size(); ++i) adapted.push_back(sub(p[i], mul(g[i], alpha)));
    return adapted;
}

// query error after 0, 1, 5 and 10 SGD steps from p on unseen tasks (the same tasks for every p)
std::vector<double> adaptation_curve(const Params& p, float alpha, std::uint64_t seed, std::size_t tasks) {
    const std::vector<int> marks{0, 1, 5, 10};
    std::vector<double> err(marks.size(), 0.0);
    Generator gen(seed);
    for (std::size_t t = 0; t < tasks; ++t) {
        const Task task = sample_task(gen);
        Tensor ys, yq;
        const Tensor xs = task.points(10, gen, ys), xq = task.points(100, gen, yq);
        Params q;
        for (const Tensor& w : p) q.push_back(w.detach().requires_grad_(true));
        for (int step = 0, m = 0; step <= marks.back(); ++step) {
            if (step == marks[m]) {
                NoGradGuard no_grad;
                err[m++] += mse(net(q, xq), yq).item() / static_cast<double>(tasks);
            }
            if (step == marks.back()) break;
            Params next = sgd_step(q, mse(net(q, xs), ys), alpha, false);
            for (Tensor& w : next) w = w.detach().requires_grad_(true);
            q = std::move(next);
        }
    }
    return err;
}

}  // namespace

int main(int argc, char** argv) {
    long meta_steps = 3000;
    std::size_t meta_batch = 5;
    double inner_lr = 0.01, outer_lr = 1e-3;
    bool first_order = false;
    std::uint64_t seed = 0;
    CLI::App app{"MAML on sine waves: an initialisation that one gradient step adapts to a new task.", "maml_sine"};
    app.add_option("--meta-steps", meta_steps, "outer steps (each on --meta-batch tasks)")->capture_default_str()->transform(cli::count_in(1, 1000000));
    app.add_option("--meta-batch", meta_batch, "tasks per outer step")->capture_default_str()->transform(cli::count_in(1, 1000));
    app.add_option("--inner-lr", inner_lr, "the inner SGD step's rate α")->capture_default_str()->check(cli::positive_finite());
    app.add_option("--outer-lr", outer_lr, "Adam's rate for the initialisation")->capture_default_str()->check(cli::positive_finite());
    app.add_flag("--first-order", first_order, "drop the second-order term (FOMAML): the inner gradient taken without create_graph");
    app.add_option("--seed", seed, "seed of the weights and the tasks")->capture_default_str()->transform(cli::seed_value());
    return cli::run_main(app, argc, argv, [&] {
        const float alpha = static_cast<float>(inner_lr);
        Generator gen(seed);
        Params maml = init_params(gen), joint = init_params(gen);
        optim::Adam maml_opt(maml, optim::AdamOptions(outer_lr)), joint_opt(joint, optim::AdamOptions(outer_lr));
        fmt::print("MAML{} on sine waves: {} meta-steps of {} tasks, inner SGD step α = {}, Adam lr {}\n",
                   first_order ? " (first-order)" : "", meta_steps, meta_batch, inner_lr, outer_lr);
        for (long step = 1; step <= meta_steps; ++step) {
            Tensor meta_loss, joint_loss;
            for (std::size_t t = 0; t < meta_batch; ++t) {
                const Task task = sample_task(gen);
                Tensor ys, yq;
                const Tensor xs = task.points(10, gen, ys), xq = task.points(10, gen, yq);
                const Params adapted = sgd_step(maml, mse(net(maml, xs), ys), alpha, !first_order);
                const Tensor lq = mse(net(adapted, xq), yq);
                meta_loss = meta_loss.defined() ? add(meta_loss, lq) : lq;
                const Tensor lj = add(mse(net(joint, xs), ys), mse(net(joint, xq), yq));
                joint_loss = joint_loss.defined() ? add(joint_loss, lj) : lj;
            }
            maml_opt.zero_grad();
            mul(meta_loss, 1.f / static_cast<float>(meta_batch)).backward();
            maml_opt.step();
            joint_opt.zero_grad();
            mul(joint_loss, 0.5f / static_cast<float>(meta_batch)).backward();
            joint_opt.step();
            if (step == 1 || step % (meta_steps / 5 > 0 ? meta_steps / 5 : 1) == 0)
                fmt::print("meta-step {:5}  query loss after one step {:.4f}\n", step,
                           meta_loss.item() / static_cast<double>(meta_batch));
        }
        const std::uint64_t test_seed = seed + 1000;
        const std::vector<double> a = adaptation_curve(maml, alpha, test_seed, 50);
        const std::vector<double> b = adaptation_curve(joint, alpha, test_seed, 50);
        fmt::print("\nquery MSE on 50 unseen tasks after k SGD steps on 10 points (α = {}):\n", inner_lr);
        fmt::print("  {:<22} {:>8} {:>8} {:>8} {:>8}\n", "initialisation", "k = 0", "k = 1", "k = 5", "k = 10");
        fmt::print("  {:<22} {:8.3f} {:8.3f} {:8.3f} {:8.3f}\n", first_order ? "FOMAML" : "MAML", a[0], a[1], a[2], a[3]);
        fmt::print("  {:<22} {:8.3f} {:8.3f} {:8.3f} {:8.3f}\n", "joint training", b[0], b[1], b[2], b[3]);
        return 0;
    });
}
