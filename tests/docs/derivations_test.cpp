// docs/derivations.md, checked: each derived gradient formula of the page is written here as a
// plain double-precision loop over the arrays (no xtgrad op, no autograd) and compared with the
// gradient xtgrad's backward computes for the same inputs and the same upstream gradient g.
// If the page and the code ever disagree, one of these fails.
#include "tests/test_util.hpp"

#include <cmath>
#include <functional>
#include <vector>

TEST_SUITE_BEGIN("docs");

using namespace xtgrad;
using test::rnd;

namespace {

// The upstream gradient g: random, shaped like the op's output.
Array upstream(const Shape& shape, std::uint64_t seed) { return rnd(shape, seed + 50).data(); }

// Runs y = f(), then y.backward(g); returns g.
Array backprop(const Tensor& y, std::uint64_t seed) {
    Array g = upstream(y.shape(), seed);
    y.backward(g);
    return g;
}

// Max |a - b| over two arrays of the same shape, a given as doubles.
double worst(const std::vector<double>& want, const Array& got) {
    REQUIRE(want.size() == got.size());
    double w = 0;
    for (std::size_t i = 0; i < want.size(); ++i) w = std::max(w, std::abs(want[i] - got.data()[i]));
    return w;
}

constexpr double kTol = 2e-5;

}  // namespace

TEST_CASE("derivations: Linear (matmul) — dx = g W, dW = gᵀ x, db = Σ_rows g") {
    const std::size_t N = 5, in = 4, out = 3;
    Tensor x = rnd({N, in}, 1), W = rnd({out, in}, 2), b = rnd({out}, 3);
    const Array g = backprop(linear(x, W, b), 4);
    std::vector<double> dx(N * in, 0), dW(out * in, 0), db(out, 0);
    for (std::size_t n = 0; n < N; ++n)
        for (std::size_t o = 0; o < out; ++o) {
            db[o] += g(n, o);
            for (std::size_t i = 0; i < in; ++i) {
                dx[n * in + i] += g(n, o) * W.data()(o, i);
                dW[o * in + i] += g(n, o) * x.data()(n, i);
            }
        }
    CHECK(worst(dx, x.grad_array()) < kTol);
    CHECK(worst(dW, W.grad_array()) < kTol);
    CHECK(worst(db, b.grad_array()) < kTol);
}

TEST_CASE("derivations: Conv1d with kernel 1 is a Linear over channels at every position") {
    const std::size_t B = 2, Cin = 3, Cout = 4, L = 5;
    Tensor x = rnd({B, Cin, L}, 5), W = rnd({Cout, Cin, 1}, 6), b = rnd({Cout}, 7);
    const Array g = backprop(conv1d(x, W, b), 8);
    std::vector<double> dx(B * Cin * L, 0), dW(Cout * Cin, 0), db(Cout, 0);
    for (std::size_t n = 0; n < B; ++n)
        for (std::size_t o = 0; o < Cout; ++o)
            for (std::size_t l = 0; l < L; ++l) {
                db[o] += g(n, o, l);
                for (std::size_t c = 0; c < Cin; ++c) {
                    dW[o * Cin + c] += g(n, o, l) * x.data()(n, c, l);
                    dx[(n * Cin + c) * L + l] += W.data()(o, c, 0) * g(n, o, l);
                }
            }
    CHECK(worst(dx, x.grad_array()) < kTol);
    CHECK(worst(dW, W.grad_array()) < kTol);
    CHECK(worst(db, b.grad_array()) < kTol);
}

TEST_CASE("derivations: broadcasting — a broadcast input's gradient is g summed over the broadcast axes") {
    Tensor a = rnd({3, 1}, 9), b = rnd({1, 4}, 10);
    const Array g = backprop(a * b, 11);
    std::vector<double> da(3, 0), db(4, 0);
    for (std::size_t i = 0; i < 3; ++i)
        for (std::size_t j = 0; j < 4; ++j) {
            da[i] += g(i, j) * b.data()(0, j);
            db[j] += g(i, j) * a.data()(i, 0);
        }
    CHECK(worst(da, a.grad_array()) < kTol);
    CHECK(worst(db, b.grad_array()) < kTol);
}

TEST_CASE("derivations: Embedding — dW[v] = Σ over positions holding v of g, nothing for padding_idx") {
    Tensor W = rnd({5, 3}, 12);
    const Ids ids = {{1, 0, 3}, {3, 3, 0}};
    const Array g = backprop(embedding(W, ids, /*padding_idx=*/0), 13);
    std::vector<double> dW(5 * 3, 0);
    for (std::size_t i = 0; i < ids.size(); ++i) {
        const auto v = static_cast<std::size_t>(ids.data()[i]);
        if (v == 0) continue;
        for (std::size_t d = 0; d < 3; ++d) dW[v * 3 + d] += g.data()[i * 3 + d];
    }
    CHECK(worst(dW, W.grad_array()) < kTol);
}

TEST_CASE("derivations: dropout — dx = g ⊙ keep / (1 - p) with the forward's own mask") {
    const float p = 0.3f;
    Tensor x = test::positive({6, 7}, 14);  // nonzero, so y != 0 exactly where the element was kept
    x.requires_grad_(true);
    Generator gen(15);
    Tensor y = dropout(x, p, /*training=*/true, gen);
    const Array g = backprop(y, 16);
    std::vector<double> dx(x.numel());
    for (std::size_t i = 0; i < dx.size(); ++i) dx[i] = y.data().data()[i] != 0.f ? g.data()[i] / (1.0 - p) : 0.0;
    CHECK(worst(dx, x.grad_array()) < kTol);
}

TEST_CASE("derivations: ReLU and GELU (exact and tanh)") {
    Tensor x = rnd({4, 5}, 17);
    SUBCASE("ReLU: dx = g ⊙ [x > 0]") {
        const Array g = backprop(relu(x), 18);
        std::vector<double> dx(x.numel());
        for (std::size_t i = 0; i < dx.size(); ++i) dx[i] = x.data().data()[i] > 0 ? g.data()[i] : 0.0;
        CHECK(worst(dx, x.grad_array()) < kTol);
    }
    SUBCASE("GELU exact: d/dx x Φ(x) = Φ(x) + x φ(x)") {
        const Array g = backprop(gelu(x), 19);
        std::vector<double> dx(x.numel());
        for (std::size_t i = 0; i < dx.size(); ++i) {
            const double v = x.data().data()[i];
            const double Phi = 0.5 * (1 + std::erf(v / std::sqrt(2.0))), phi = std::exp(-v * v / 2) / std::sqrt(2 * M_PI);
            dx[i] = g.data()[i] * (Phi + v * phi);
        }
        CHECK(worst(dx, x.grad_array()) < kTol);
    }
    SUBCASE("GELU tanh: u = c(x + 0.044715 x³), d/dx ½x(1 + tanh u) = ½(1 + t) + ½x(1 - t²) c (1 + 3·0.044715 x²)") {
        const Array g = backprop(gelu(x, GeluApproximation::tanh), 20);
        std::vector<double> dx(x.numel());
        const double c = std::sqrt(2 / M_PI);
        for (std::size_t i = 0; i < dx.size(); ++i) {
            const double v = x.data().data()[i], t = std::tanh(c * (v + 0.044715 * v * v * v));
            dx[i] = g.data()[i] * (0.5 * (1 + t) + 0.5 * v * (1 - t * t) * c * (1 + 3 * 0.044715 * v * v));
        }
        CHECK(worst(dx, x.grad_array()) < kTol);
    }
}

TEST_CASE("derivations: softmax dx = y ⊙ (g - ⟨g, y⟩); log-softmax dx = g - exp(y) Σ g") {
    Tensor x = rnd({3, 6}, 21);
    for (bool log : {false, true}) {
        CAPTURE(log);
        x.zero_grad();
        Tensor y = log ? log_softmax(x, -1) : softmax(x, -1);
        const Array g = backprop(y, 22);
        std::vector<double> dx(x.numel());
        for (std::size_t r = 0; r < 3; ++r) {
            double dot = 0, gsum = 0;
            for (std::size_t k = 0; k < 6; ++k) {
                dot += g(r, k) * y.data()(r, k);
                gsum += g(r, k);
            }
            for (std::size_t k = 0; k < 6; ++k)
                dx[r * 6 + k] = log ? g(r, k) - std::exp(y.data()(r, k)) * gsum : y.data()(r, k) * (g(r, k) - dot);
        }
        CHECK(worst(dx, x.grad_array()) < kTol);
    }
}

TEST_CASE("derivations: cross-entropy — dx_k = (p_k - (1-ε) δ_kt - ε/C) / n_kept, ignored rows 0") {
    const std::size_t N = 4, C = 5;
    const float eps = 0.1f;
    Tensor x = rnd({N, C}, 23);
    const Ids target = {2, -100, 0, 4};
    Tensor loss = cross_entropy(x, target, /*ignore_index=*/-100, eps);
    loss.backward();
    const double kept = 3;
    std::vector<double> dx(N * C, 0);
    for (std::size_t n = 0; n < N; ++n) {
        if (target(n) == -100) continue;
        double mx = -1e300, s = 0;
        for (std::size_t k = 0; k < C; ++k) mx = std::max(mx, double(x.data()(n, k)));
        for (std::size_t k = 0; k < C; ++k) s += std::exp(x.data()(n, k) - mx);
        for (std::size_t k = 0; k < C; ++k) {
            const double p = std::exp(x.data()(n, k) - mx) / s;
            dx[n * C + k] = (p - (1 - eps) * (k == std::size_t(target(n))) - eps / C) / kept;
        }
    }
    CHECK(worst(dx, x.grad_array()) < kTol);
}

namespace {
// Per row of d: the gradient of the torch LayerNorm (biased var, eps inside the sqrt) and of
// tutorial A's (unbiased std, eps added to the std), both with weight w, from the page's formulas.
std::vector<double> layer_norm_dx(const Array& x, const Array& g, const Array& w, double eps, bool tutorial_a) {
    const std::size_t rows = x.shape()[0], d = x.shape()[1];
    std::vector<double> dx(rows * d);
    for (std::size_t r = 0; r < rows; ++r) {
        double mu = 0, ss = 0;
        for (std::size_t k = 0; k < d; ++k) mu += x(r, k);
        mu /= d;
        for (std::size_t k = 0; k < d; ++k) ss += (x(r, k) - mu) * (x(r, k) - mu);
        std::vector<double> h(d);  // h = g ⊙ w
        double hmean = 0;
        for (std::size_t k = 0; k < d; ++k) hmean += (h[k] = g(r, k) * w(k)) / d;
        if (!tutorial_a) {
            const double rstd = 1 / std::sqrt(ss / d + eps);
            double hx = 0;  // mean(h ⊙ x̂)
            for (std::size_t k = 0; k < d; ++k) hx += h[k] * (x(r, k) - mu) * rstd / d;
            for (std::size_t k = 0; k < d; ++k)
                dx[r * d + k] = rstd * (h[k] - hmean - (x(r, k) - mu) * rstd * hx);
        } else {
            const double s = std::sqrt(ss / (d - 1)), den = s + eps;
            double hu = 0;  // Σ h_i u_i
            for (std::size_t k = 0; k < d; ++k) hu += h[k] * (x(r, k) - mu);
            for (std::size_t k = 0; k < d; ++k)
                dx[r * d + k] = (h[k] - hmean) / den - (x(r, k) - mu) * hu / (den * den * (d - 1) * s);
        }
    }
    return dx;
}
}  // namespace

TEST_CASE("derivations: LayerNorm (torch's) dx = r (dx̂ - mean(dx̂) - x̂ mean(dx̂ ⊙ x̂))") {
    nn::LayerNorm ln(6);
    ln.weight.mutable_data() = rnd({6}, 24).data();
    Tensor x = rnd({3, 6}, 25);
    const Array g = backprop(ln.forward(x), 26);
    CHECK(worst(layer_norm_dx(x.data(), g, ln.weight.data(), 1e-5, false), x.grad_array()) < kTol);
}

TEST_CASE("derivations: tutorial A's LayerNorm — unbiased std, eps added to the std") {
    nn::LayerNormUnbiased ln(6);
    ln.gamma.mutable_data() = rnd({6}, 27).data();
    Tensor x = rnd({3, 6}, 28);
    const Array g = backprop(ln.forward(x), 29);
    CHECK(worst(layer_norm_dx(x.data(), g, ln.gamma.data(), 1e-6, true), x.grad_array()) < 1e-4);
}

TEST_CASE("derivations: scaled dot-product attention with a mask") {
    const std::size_t Lq = 3, Lk = 4, dk = 2, dv = 3;
    Tensor q = rnd({Lq, dk}, 30), k = rnd({Lk, dk}, 31), v = rnd({Lk, dv}, 32);
    Mask masked = xt::zeros<bool>({Lq, Lk});
    masked(0, 3) = masked(2, 1) = true;
    const float scale = 0.7f;
    nn::AttentionOptions options;
    options.scale = scale;
    options.masked = &masked;
    nn::AttentionResult r = nn::scaled_dot_product_attention(q, k, v, options);
    const Array g = backprop(r.context, 33);
    const Array& A = r.weights.data();
    // dA = g vᵀ; dS = A ⊙ (dA - rowsum(dA ⊙ A)), 0 where masked; dq = dS k·scale; dk = dSᵀ q·scale; dv = Aᵀ g.
    std::vector<double> dS(Lq * Lk), dq(Lq * dk, 0), dK(Lk * dk, 0), dV(Lk * dv, 0);
    for (std::size_t i = 0; i < Lq; ++i) {
        std::vector<double> dA(Lk, 0);
        double dot = 0;
        for (std::size_t j = 0; j < Lk; ++j) {
            for (std::size_t c = 0; c < dv; ++c) dA[j] += g(i, c) * v.data()(j, c);
            dot += dA[j] * A(i, j);
        }
        for (std::size_t j = 0; j < Lk; ++j) dS[i * Lk + j] = masked(i, j) ? 0.0 : A(i, j) * (dA[j] - dot);
    }
    for (std::size_t i = 0; i < Lq; ++i)
        for (std::size_t j = 0; j < Lk; ++j) {
            for (std::size_t c = 0; c < dk; ++c) {
                dq[i * dk + c] += dS[i * Lk + j] * k.data()(j, c) * scale;
                dK[j * dk + c] += dS[i * Lk + j] * q.data()(i, c) * scale;
            }
            for (std::size_t c = 0; c < dv; ++c) dV[j * dv + c] += A(i, j) * g(i, c);
        }
    CHECK(worst(dq, q.grad_array()) < kTol);
    CHECK(worst(dK, k.grad_array()) < kTol);
    CHECK(worst(dV, v.grad_array()) < kTol);
}

TEST_CASE("derivations: Adam — three steps of the bias-corrected update, and AdamW's decoupled decay") {
    for (bool decoupled : {false, true}) {
        CAPTURE(decoupled);
        Tensor p = rnd({5}, 34);
        const Array p0 = p.data();
        const optim::AdamOptions o = optim::AdamOptions(0.01).betas({0.9, 0.98}).eps(1e-8).weight_decay(0.1);
        optim::Adam adam({p}, o, decoupled);
        std::vector<double> want(p0.begin(), p0.end()), m(5, 0), v(5, 0);
        for (int t = 1; t <= 3; ++t) {
            const Tensor c = rnd({5}, 35 + t);  // the step's gradient: d sum(p ⊙ c) / dp = c
            adam.zero_grad();
            sum(p * c).backward();
            adam.step();
            for (std::size_t i = 0; i < 5; ++i) {
                double g = c.data()(i);
                if (decoupled) want[i] *= 1 - o.lr() * o.weight_decay();  // AdamW: decay the weight
                else g += o.weight_decay() * want[i];                     // Adam: L2 in the gradient
                m[i] = o.betas().first * m[i] + (1 - o.betas().first) * g;
                v[i] = o.betas().second * v[i] + (1 - o.betas().second) * g * g;
                const double mhat = m[i] / (1 - std::pow(o.betas().first, t));
                const double vhat = v[i] / (1 - std::pow(o.betas().second, t));
                want[i] -= o.lr() * mhat / (std::sqrt(vhat) + o.eps());
            }
        }
        CHECK(worst(want, p.data()) < 1e-6);
    }
}

TEST_SUITE_END();
