// Exercise 04, solved. Masked entries need no special case: A is exactly 0 there, so
// dS = A ⊙ (dA − ⟨dA, A⟩) is 0 there too, as MaskedFillBackward would make it.
#include "exercise.hpp"

namespace ex04 {

using namespace xtgrad;

// dA = g vᵀ, then softmax's backward per row (exercise 02): dS = A ⊙ (dA − ⟨dA, A⟩).
Array scores_grad(const Array& v, const Array& A, const Array& g) {
    const std::size_t Lq = A.shape(0), Lk = A.shape(1), dv = v.shape(1);
    Array dS = xt::zeros<float>({Lq, Lk});
    for (std::size_t i = 0; i < Lq; ++i) {
        double dot = 0;  // ⟨dA, A⟩ of row i
        for (std::size_t j = 0; j < Lk; ++j) {
            double dA = 0;
            for (std::size_t c = 0; c < dv; ++c) dA += static_cast<double>(g(i, c)) * v(j, c);
            dS(i, j) = static_cast<float>(dA);
            dot += dA * A(i, j);
        }
        for (std::size_t j = 0; j < Lk; ++j) dS(i, j) = static_cast<float>(A(i, j) * (dS(i, j) - dot));
    }
    return dS;
}

AttentionGrads attention_backward(const Array& q, const Array& k, const Array& v, const Mask& masked, float scale,
                                  const Array& A, const Array& g) {
    (void)masked;  // A == 0 where masked: see above
    const std::size_t Lq = q.shape(0), Lk = k.shape(0), d = q.shape(1), dv = v.shape(1);
    AttentionGrads out{xt::zeros<float>(q.shape()), xt::zeros<float>(k.shape()), xt::zeros<float>(v.shape())};
    for (std::size_t i = 0; i < Lq; ++i)  // dv = Aᵀ g
        for (std::size_t j = 0; j < Lk; ++j)
            for (std::size_t c = 0; c < dv; ++c) out.dv(j, c) += A(i, j) * g(i, c);
    const Array dS = scores_grad(v, A, g);
    for (std::size_t i = 0; i < Lq; ++i)  // S = q kᵀ · scale
        for (std::size_t j = 0; j < Lk; ++j)
            for (std::size_t c = 0; c < d; ++c) {
                out.dq(i, c) += dS(i, j) * k(j, c) * scale;
                out.dk(j, c) += dS(i, j) * q(i, c) * scale;
            }
    return out;
}

}  // namespace ex04
