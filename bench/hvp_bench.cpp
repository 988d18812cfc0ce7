// What a Hessian-vector product costs next to a gradient (docs/higher_order.md): tutorial D's
// Transformer at seed-d's sizes (d_model 512, 8 heads, 6 + 6 layers, src (10, 32, 512), tgt
// (20, 32, 512)), loss = sum(output · R), with respect to every parameter.
//   gradient  forward + grad(loss, params)                          (the kernels, as backward())
//   hvp       forward + grad(loss, params, create_graph) + grad(g, params, v)
// Prints the medians and their ratio; the theory says 2-4x (a backward of a backward).
// Then forward mode next to them, along a random direction of the source (no grad mode, as an
// inference-time jvp):
//   forward   the loss alone, no grad mode
//   jvp       the loss on a dual source (make_dual, forward with tangents, unpack_dual)
// The theory: a jvp is one forward plus its tangent's (~2-3x a forward, each product twice),
// below a vjp (the gradient line: a forward that records and a backward).
//
//   build/bench/hvp_bench [--steps 3] [--threads 1]
#include "bench/timing.hpp"
#include "examples/common/cli.hpp"
#include <xtgrad/xtgrad.hpp>

#include "examples/common/cli11.hpp"
#include <fmt/core.h>

using namespace xtgrad;

int main(int argc, char** argv) {
    int steps = 3, threads = 1;
    CLI::App app{"Time a Hessian-vector product against a gradient on seed-d (tutorial D's Transformer).", "hvp_bench"};
    app.add_option("--steps", steps, "timed repetitions of each")->capture_default_str()->transform(cli::count_in(1, 100));
    app.add_option("--threads", threads, "threads")->capture_default_str()->transform(cli::count_in(1, 256));
    return cli::run_main(app, argc, argv, [&] {
        set_num_threads(threads);
        manual_seed(0);
        nn::tutorial_d::Transformer model(nn::tutorial_d::TransformerOptions(512, 8, 6));
        model.eval();  // no dropout: both passes see the same function
        Generator gen(1);
        const Tensor src = rand({10, 32, 512}, gen), tgt = rand({20, 32, 512}, gen);
        const Tensor r = randn({20, 32, 512}, gen);
        const std::vector<Tensor> params = model.parameters();
        std::vector<Tensor> v;
        for (const Tensor& p : params) v.push_back(randn(p.shape(), gen));
        const auto loss = [&] { return sum(mul(model.forward(src, tgt), r)); };
        const auto gradient = [&] { grad({loss()}, params); };
        const auto hvp = [&] {
            const std::vector<Tensor> g = grad({loss()}, params, {}, GradOptions().create_graph(true));
            std::vector<Tensor> outs, seeds;
            for (std::size_t i = 0; i < g.size(); ++i)
                if (g[i].requires_grad()) {
                    outs.push_back(g[i]);
                    seeds.push_back(v[i]);
                }
            grad(outs, params, seeds, GradOptions().allow_unused(true));
        };
        const Tensor src_tangent = randn(src.shape(), gen);
        const auto forward = [&] {
            NoGradGuard no_grad;
            loss();
        };
        const auto jvp = [&] {
            NoGradGuard no_grad;
            forward_ad::DualLevel level;
            const Tensor dual = forward_ad::make_dual(src, src_tangent);
            forward_ad::unpack_dual(sum(mul(model.forward(dual, tgt), r)));
        };
        gradient();  // warm-up: the pool, the block cache, oneDNN's kernels
        hvp();
        jvp();
        std::vector<double> tg, th, tf, tj;
        for (int i = 0; i < steps; ++i) {
            tg.push_back(bench::ms_of(gradient));
            th.push_back(bench::ms_of(hvp));
            tf.push_back(bench::ms_of(forward));
            tj.push_back(bench::ms_of(jvp));
        }
        const double g_ms = bench::median(tg), h_ms = bench::median(th), f_ms = bench::median(tf), j_ms = bench::median(tj);
        fmt::print("seed-d, {} thread(s), {} parameters: gradient {:.0f} ms, hvp {:.0f} ms (medians of {}): hvp / gradient = {:.2f}\n",
                   threads, params.size(), g_ms, h_ms, steps, h_ms / g_ms);
        fmt::print("forward mode along the source: forward {:.0f} ms, jvp {:.0f} ms: jvp / forward = {:.2f}, "
                   "jvp / vjp (the gradient) = {:.2f}\n",
                   f_ms, j_ms, j_ms / f_ms, j_ms / g_ms);
        return 0;
    });
}
