// Forward mode (lesson 10, docs/learn/10_forward_mode.md): a jvp and a vjp of one function, then
// the Jacobian of f(x) = tanh(W x) built two ways and timed: func::jacfwd (one jvp per input
// element) and func::jacrev (one vjp per output element), for tall, wide and square W.
//
//   build/examples/forward_mode [--sizes N:M,...] [--repeats R]   (--help lists every option)
//
// func::jvp and func::jacfwd are forward mode on dual tensors (autograd/forward_ad.hpp): a jvp is
// one forward carrying tangents, so jacfwd wins as soon as the inputs are fewer than the outputs,
// give or take the dual tensors' bookkeeping on ops this small.
#include "examples/common/cli.hpp"
#include <xtgrad/autograd/func.hpp>
#include <xtgrad/xtgrad.hpp>

#include "examples/common/cli11.hpp"

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

using namespace xtgrad;

namespace {

// The best of `repeats` runs of body, in milliseconds.
template <class Body>
double best_ms(int repeats, Body&& body) {
    double best = 1e300;
    for (int r = 0; r < repeats; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        body();
        best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    return best;
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::string> sizes{"4:256", "256:4", "32:8", "32:32", "32:64", "32:128", "32:256"};
    int repeats = 5;
    CLI::App app{"jvp and vjp, and jacfwd against jacrev on tall and wide functions.", "forward_mode"};
    // each N:M two counts from 1 to 4096 (std::stoul took "0x4" as 0, " 4" as 4, "-4" as 2^64 - 4)
    const CLI::Validator n_or_m = cli::count_in(1, 4096);
    const CLI::Validator size_pair(
        [&n_or_m](std::string& text) -> std::string {
            const auto colon = text.find(':');
            if (colon == std::string::npos) return "'" + text + "' is not N:M";
            std::string n = text.substr(0, colon), m = text.substr(colon + 1);
            for (std::string* half : {&n, &m})
                if (std::string why = n_or_m(*half); !why.empty()) return "in '" + text + "': " + why;
            text = n + ":" + m;
            return {};
        },
        "N:M");
    app.add_option("--sizes", sizes, "the n:m of each timed f: R^n -> R^m, each from 1 to 4096")
        ->delimiter(',')
        ->capture_default_str()
        ->transform(size_pair);
    app.add_option("--repeats", repeats, "timed runs of each, the best kept")->capture_default_str()->transform(cli::count_in(1, 1000));
    return cli::run_main(app, argc, argv, [&] {
        Generator gen(0);
        // 1. One jvp and one vjp of f(x) = tanh(W x), W (3, 2): J v, a column's worth; uᵀ J, a row's.
        const Tensor w = randn({3, 2}, gen), x = Tensor::from_vector({0.5f, -1.f}, {2});
        const func::Fn f = [&](const std::vector<Tensor>& in) { return tanh(matmul(w, in[0])); };
        const Tensor v = Tensor::from_vector({1.f, 0.f}, {2}), u = Tensor::from_vector({1.f, 0.f, 0.f}, {3});
        fmt::print("J v   (v = e0, J's first column): {}\n", func::jvp(f, {x}, {v}).second);
        fmt::print("uᵀ J  (u = e0, J's first row):    {}\n", func::vjp(f, {x}).second(u)[0]);
        fmt::print("J:\n{}\n", func::jacrev(f)({x})[0]);

        // 2. jacfwd against jacrev.
        fmt::print("\nJacobian of tanh(W x), W (m, n), best of {} runs:\n", repeats);
        fmt::print("    n     m   jacfwd ms   jacrev ms   faster   max |jacfwd - jacrev|\n");
        for (const std::string& s : sizes) {
            const auto colon = s.find(':');  // checked above: two counts
            const std::size_t n = std::stoul(s.substr(0, colon)), m = std::stoul(s.substr(colon + 1));
            const Tensor wm = randn({m, n}, gen), xm = randn({n}, gen);
            const func::Fn g = [&](const std::vector<Tensor>& in) { return tanh(matmul(wm, in[0])); };
            Tensor jf, jr;
            const double fwd = best_ms(repeats, [&] { jf = func::jacfwd(g)({xm})[0]; });
            const double rev = best_ms(repeats, [&] { jr = func::jacrev(g)({xm})[0]; });
            fmt::print("{:5d} {:5d} {:11.3f} {:11.3f}   {:6}   {:.2g}\n", n, m, fwd, rev, fwd < rev ? "jacfwd" : "jacrev",
                       static_cast<double>(xt::amax(xt::abs(jf.data() - jr.data()))()));
        }
        return cli::kSuccess;
    });
}
