// Curvature (lesson 9, docs/learn/09_second_derivatives.md): second derivatives through
// grad(create_graph), then the spiral MLP of lesson 5 trained by plain gradient descent while
// power iteration on Hessian-vector products (func::hvp) measures the top eigenvalue λ of its
// loss's Hessian: the sharpness, which gradient descent with step lr keeps below about 2 / lr.
//
//   build/examples/curvature [--lr LR] [--epochs N] [--every K]   (--help lists every option)
#include "examples/common/cli.hpp"
#include "examples/common/spiral_data.hpp"
#include <xtgrad/autograd/func.hpp>
#include <xtgrad/xtgrad.hpp>

#include "examples/common/cli11.hpp"

#include <cmath>
#include <vector>

using namespace xtgrad;

namespace {

using Params = std::vector<Tensor>;

// Σ a·b over every tensor of two lists (the parameters as one long vector).
double dot(const Params& a, const Params& b) {
    double s = 0;
    for (std::size_t i = 0; i < a.size(); ++i) s += sum(mul(a[i], b[i])).item();
    return s;
}

// The top eigenvalue of the Hessian of loss at p, by power iteration: v <- Hv / |Hv|, λ = v·Hv.
// (It finds the eigenvalue largest in magnitude; for this loss that is the top one.)
double top_eigenvalue(const func::Fn& loss, const Params& p, int iterations, Generator& gen) {
    Params v;
    for (const Tensor& t : p) v.push_back(randn(t.shape(), gen));
    double lambda = 0;
    for (int it = 0; it < iterations; ++it) {
        const double norm = std::sqrt(dot(v, v));
        for (Tensor& t : v) t = mul(t, static_cast<float>(1 / norm));
        const Params hv = func::hvp(loss, p, v).second;
        lambda = dot(v, hv);
        v = hv;
    }
    return lambda;
}

}  // namespace

int main(int argc, char** argv) {
    double lr = 0.5;
    long epochs = 1000, every = 100;
    int iterations = 20;
    CLI::App app{"Second derivatives, and the sharpness of the spiral MLP under gradient descent.", "curvature"};
    app.add_option("--lr", lr, "gradient descent's step")->capture_default_str()->check(cli::positive_finite());
    app.add_option("--epochs", epochs, "full-batch steps")->capture_default_str()->transform(cli::count_in(0, 1000000));
    app.add_option("--every", every, "measure the sharpness every K steps")->capture_default_str()->transform(cli::count_in(1, 1000000));
    app.add_option("--iterations", iterations, "power iterations per measurement")->capture_default_str()->transform(cli::count_in(1, 1000));
    return cli::run_main(app, argc, argv, [&] {
        // 1. A second derivative by the engine: tanh at 0.5, differentiated twice.
        const Tensor x = Tensor::scalar(0.5f, true);
        const Tensor y = tanh(x);
        const Tensor dy = grad({y}, {x}, {}, GradOptions().create_graph(true))[0];  // 1 - y², with its graph
        const Tensor d2y = grad({dy}, {x})[0];
        fmt::print("tanh at x = 0.5: y = {:.6f}, dy/dx = {:.6f}, d2y/dx2 = {:.6f}\n", y.item(), dy.item(), d2y.item());

        // 2. Lesson 5's spiral MLP, 2-64-3, its parameters as a list so the loss is a function of them.
        manual_seed(0);
        Generator gen(0);
        Tensor points;
        Ids labels;
        make_spirals(points, labels, gen);
        nn::Linear fc1(2, 64), fc2(64, 3);
        Params p{fc1.weight, fc1.bias, fc2.weight, fc2.bias};
        const func::Fn loss = [&](const Params& q) {
            return cross_entropy(linear(relu(linear(points, q[0], q[1])), q[2], q[3]), labels);
        };
        fmt::print("spiral MLP 2-64-3, full-batch gradient descent, lr {:g} (2/lr = {:.4g})\n", lr, 2 / lr);
        Generator probe(1);  // the power iteration's start
        for (long epoch = 0; epoch <= epochs; ++epoch) {
            const Tensor l = loss(p);
            if (!std::isfinite(l.item()))  // diverged: the step is past 2 / sharpness, every later number garbage
                fail("curvature: the loss is {} at epoch {}: gradient descent at lr {:g} diverged (a stable lr stays "
                     "below 2 / sharpness)", l.item(), epoch, lr);
            if (epoch % every == 0 || epoch == epochs)
                fmt::print("epoch {:5d}  loss {:.4f}  sharpness {:.4f}\n", epoch, l.item(),
                           top_eigenvalue(loss, p, iterations, probe));
            if (epoch == epochs) break;
            const Params g = grad({l}, p);
            for (std::size_t i = 0; i < p.size(); ++i) p[i] = sub(p[i], mul(g[i], static_cast<float>(lr))).detach().requires_grad_(true);
        }
        return cli::kSuccess;
    });
}
