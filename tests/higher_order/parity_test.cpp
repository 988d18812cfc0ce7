// Higher-order autograd against PyTorch (tests/fixtures/higher_order, made by
// tools/make_higher_order_fixtures.py with create_graph=True, torch.autograd.functional and
// forward_ad in float64): each case prints its worst error relative to the result's scale.
#include <xtgrad/autograd/func.hpp>
#include <xtgrad/autograd/grad.hpp>
#include <xtgrad/io/npy.hpp>
#include <xtgrad/nn/tutorial_d/functional.hpp>
#include "tests/test_util.hpp"
#include "tools/parity/fixture.hpp"
#include "tools/parity/models.hpp"

#include <cmath>
#include <string>

TEST_SUITE_BEGIN("higher_order");

using namespace xtgrad;
using V = std::vector<Tensor>;

namespace {
struct Fixture {
    std::string dir;
    explicit Fixture(const std::string& name) : dir(std::string(XTGRAD_FIXTURE_DIR) + "/higher_order/" + name + "/") {}
    Tensor operator()(const std::string& name) const { return Tensor(load_npy_float(dir + name + ".npy")); }
};

// max |ours - torch| / max(1, max |torch|): float32 against float64, checked; the case's worst is
// printed once at its end (the closing note quotes these)
struct Worst {
    double error = 0;
    std::string what;
    ~Worst() { MESSAGE("worst error " << error << " (" << what << ")"); }
};
thread_local Worst* current_worst = nullptr;

void expect_close(const std::string& what, const Tensor& ours, const Tensor& torch, double tol = 2e-6) {
    REQUIRE_MESSAGE(ours.shape() == torch.shape(), what);
    double worst = 0, scale = 1;
    for (std::size_t i = 0; i < torch.numel(); ++i) {
        worst = std::max(worst, std::abs(static_cast<double>(ours.ptr()[i]) - torch.ptr()[i]));
        scale = std::max(scale, std::abs(static_cast<double>(torch.ptr()[i])));
    }
    if (current_worst != nullptr && worst / scale >= current_worst->error) {
        current_worst->error = worst / scale;
        current_worst->what = what;
    }
    CHECK_MESSAGE(worst / scale < tol, what << ": " << worst / scale);
}

// One per test case: collects its comparisons' worst error.
struct WorstScope {
    Worst worst;
    WorstScope() { current_worst = &worst; }
    ~WorstScope() { current_worst = nullptr; }
};

Tensor mlp(const V& p, const Tensor& x) { return linear(tanh(linear(x, p[0], p[1])), p[2], p[3]); }
V mlp_params(const Fixture& f) { return {f("w1"), f("b1"), f("w2"), f("b2")}; }
}  // namespace

TEST_CASE("parity: the full Hessian of a 2-layer MLP's loss equals torch's") {
    const WorstScope worst;
    const Fixture f("mlp_hessian");
    const Tensor x = f("x"), target = f("target");
    const func::Fn loss = [&](const V& p) {
        const Tensor d = sub(mlp(p, x), target);
        return mean(mul(d, d));
    };
    const V p = mlp_params(f);
    const auto H = func::hessian(loss)(p);
    // the blocks laid out as torch's Hessian of the flattened parameters
    std::size_t total = 0;
    for (const Tensor& t : p) total += t.numel();
    Array flat = empty_array({total, total});
    std::size_t row = 0;
    for (std::size_t i = 0; i < p.size(); ++i) {
        std::size_t col = 0;
        for (std::size_t j = 0; j < p.size(); ++j) {
            const std::size_t ni = p[i].numel(), nj = p[j].numel();
            for (std::size_t a = 0; a < ni; ++a)
                for (std::size_t b = 0; b < nj; ++b) flat(row + a, col + b) = H[i][j].ptr()[a * nj + b];
            col += nj;
        }
        row += p[i].numel();
    }
    expect_close("loss", loss(p), f("loss"));
    expect_close("Hessian", Tensor(flat), f("hessian"));
}

TEST_CASE("parity: a gradient penalty |dD/dx|^2 and its gradient in the critic's weights") {
    const WorstScope worst;
    const Fixture f("gradient_penalty");
    V p = mlp_params(f);
    for (Tensor& t : p) t.requires_grad_(true);
    Tensor x = f("x").requires_grad_(true);
    const Tensor gx = grad({sum(mlp(p, x))}, {x}, {}, GradOptions().create_graph(true))[0];
    const Tensor penalty = mean(sum(mul(gx, gx), {1}));
    const V g = grad({penalty}, p, {}, GradOptions().allow_unused(true));
    expect_close("penalty", penalty, f("penalty"));
    const char* names[] = {"grad_w1", "grad_b1", "grad_w2", "grad_b2"};
    for (std::size_t i = 0; i < 4; ++i)
        expect_close(names[i], g[i].defined() ? g[i] : Tensor::zeros(p[i].shape()), f(names[i]));
    CHECK_FALSE(g[3].defined());  // the output bias does not reach dD/dx
}

TEST_CASE("parity: one MAML step on sine regression (a gradient through an SGD step)") {
    const WorstScope worst;
    const Fixture f("maml_sine");
    V p = mlp_params(f);
    for (Tensor& t : p) t.requires_grad_(true);
    const auto mse = [](const Tensor& y, const Tensor& target) {
        const Tensor d = sub(y, target);
        return mean(mul(d, d));
    };
    const Tensor inner = mse(mlp(p, f("xs")), f("ys"));
    const V g = grad({inner}, p, {}, GradOptions().create_graph(true));
    V adapted;
    for (std::size_t i = 0; i < p.size(); ++i) adapted.push_back(sub(p[i], mul(g[i], 0.1f)));
    const Tensor outer = mse(mlp(adapted, f("xq")), f("yq"));
    const V meta = grad({outer}, p);
    expect_close("inner loss", inner, f("inner_loss"));
    expect_close("outer loss", outer, f("outer_loss"));
    const char* names[] = {"grad_w1", "grad_b1", "grad_w2", "grad_b2"};
    for (std::size_t i = 0; i < 4; ++i) expect_close(names[i], meta[i], f(names[i]));
}

TEST_CASE("parity: an HVP of tutorial A's own LayerNorm") {
    const WorstScope worst;
    const Fixture f("layer_norm_a_hvp");
    nn::LayerNormUnbiased ln(5);
    const Tensor r = f("r");
    // the module's forward on the parameters hvp differentiates (torch.func.functional_call's idea):
    // gamma and beta are handles, so the module computes with the tensors given
    const func::Fn value = [&](const V& v) {
        ln.gamma = v[1];
        ln.beta = v[2];
        return sum(mul(ln.forward(v[0]), r));
    };
    const auto [y, hv] = func::hvp(value, {f("x"), f("a_2"), f("b_2")}, {f("v_x"), f("v_a"), f("v_b")});
    expect_close("value", y, f("value"));
    expect_close("H v (x)", hv[0], f("hvp_x"));
    expect_close("H v (a_2)", hv[1], f("hvp_a"));
    expect_close("H v (b_2)", hv[2], f("hvp_b"));
}

TEST_CASE("parity: jvp (forward mode) and jacfwd = jacrev on softmax, layer_norm, attention and multi-head attention, against forward_ad") {
    const WorstScope worst;
    const Mask causal = [] {
        Mask m = xt::zeros<bool>(Shape{3, 3});
        for (std::size_t i = 0; i < 3; ++i)
            for (std::size_t j = i + 1; j < 3; ++j) m(i, j) = true;
        return m;
    }();
    struct Case {
        const char* name;
        std::size_t inputs;
        func::Fn f;
    };
    const std::vector<Case> cases{
        {"jvp_softmax", 1, [](const V& v) { return softmax(v[0], -1); }},
        {"jvp_layer_norm", 3, [](const V& v) { return layer_norm(v[0], v[1], v[2]); }},
        {"jvp_attention", 3, [&](const V& v) {
             const Tensor w = attention_weights(v[0], v[1], 1.f / std::sqrt(4.f), &causal, -test::kInf);
             return matmul(w, v[2]);
         }},
        // F.multi_head_attention_forward, self-attention with 2 heads: x and the 4 weights
        {"jvp_multihead_attention", 5, [](const V& v) {
             return nn::tutorial_d::multi_head_attention_forward(v[0], v[0], v[0], 4, 2, v[1], v[2], Tensor(), Tensor(),
                                                                 false, 0.f, v[3], v[4], false, {}, false)
                 .attn_output;
         }},
    };
    for (const Case& c : cases) {
        INFO(c.name);
        const Fixture f(c.name);
        V in, tangents;
        for (std::size_t i = 0; i < c.inputs; ++i) {
            in.push_back(f("input" + std::to_string(i)));
            tangents.push_back(f("tangent" + std::to_string(i)));
        }
        const auto [y, jv] = func::jvp(c.f, in, tangents);
        expect_close(std::string(c.name) + " output", y, f("output"));
        expect_close(std::string(c.name) + " jvp", jv, f("jvp"));
        expect_close(std::string(c.name) + " jvp by double backward", func::jvp_by_double_backward(c.f, in, tangents).second,
                     f("jvp"));
        const V jr = func::jacrev(c.f)(in), jf = func::jacfwd(c.f)(in);
        for (std::size_t i = 0; i < c.inputs; ++i) {
            expect_close(std::string(c.name) + " jacrev " + std::to_string(i), jr[i], f("jacobian" + std::to_string(i)));
            expect_close(std::string(c.name) + " jacfwd " + std::to_string(i), jf[i], f("jacobian" + std::to_string(i)));
        }
    }
}

TEST_CASE("parity: an HVP of tutorial C's Transformer loss, every parameter, at the suite's small sizes") {
    const WorstScope worst;
    // the model in the state of its parity fixture; loss = sum(logits * R) as the fixtures define it
    const parity::Fixture model_fixture(std::string(XTGRAD_FIXTURE_DIR) + "/small/transformer_c");
    const Fixture f("transformer_c_hvp");
    nn::tutorial_c::Transformer model(parity::transformer_c_config(model_fixture));
    model.load_state_dict(model_fixture.state());
    model.eval();
    V params, v;
    std::vector<std::string> names;
    for (const auto& [name, p] : model.named_parameters())
        if (p.requires_grad()) {
            names.push_back(name);
            params.push_back(p);
            v.push_back(f("v." + name));
        }
    const Tensor logits = model.forward(model_fixture.ids("input.enc_inputs"), model_fixture.ids("input.dec_inputs")).logits;
    const Tensor loss = sum(mul(logits, Tensor(model_fixture.floats("R"))));
    const V g = grad({loss}, params, {}, GradOptions().create_graph(true));
    V outs, seeds;  // a gradient that is constant in the parameters adds nothing to H v
    for (std::size_t i = 0; i < g.size(); ++i)
        if (g[i].requires_grad()) {
            outs.push_back(g[i]);
            seeds.push_back(v[i]);
        }
    const V hv = grad(outs, params, seeds, GradOptions().allow_unused(true));
    for (std::size_t i = 0; i < params.size(); ++i)
        expect_close("H v " + names[i], hv[i].defined() ? hv[i] : Tensor::zeros(params[i].shape()), f("hvp." + names[i]),
                     1e-5);
}

TEST_SUITE_END();
