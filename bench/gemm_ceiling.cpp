#include "bench/gemm_ceiling.hpp"

#include <xtgrad/gemm/blas.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>

namespace xtgrad::bench {

const std::vector<CeilingShape>& ceiling_shapes() {
    static const std::vector<CeilingShape> shapes{{"2048x2048x2048", 2048, 2048, 2048, false},
                                                  {"6400x2048x512 (FFN up, x·Wᵀ)", 6400, 2048, 512, true},
                                                  {"6400x512x2048 (FFN down, x·Wᵀ)", 6400, 512, 2048, true},
                                                  {"640x512x512 (seed-d projection)", 640, 512, 512, true},
                                                  {"100x100x64 (one attention slice)", 100, 100, 64, true}};
    return shapes;
}

double best_gemm_rate(const CeilingShape& s, int reps, DType operands) {
    std::vector<float> A(static_cast<std::size_t>(s.M) * s.K, 0.1f), B(static_cast<std::size_t>(s.K) * s.N, 0.2f),
        C(static_cast<std::size_t>(s.M) * s.N);
    const auto product = [&] { gemm(operands, false, s.trans_b, s.M, s.N, s.K, 1.f, A.data(), B.data(), 0.f, C.data()); };
    product();  // untimed: the operands' pages and the backend's kernel for this shape
    double best = 1e30;
    for (int r = 0; r < reps; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        product();
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return 2.0 * s.M * s.N * s.K / best / 1e9;
}

double gemm_ceiling_now(int reps) {
    double best = 0;
    for (const CeilingShape& s : ceiling_shapes()) best = std::max(best, best_gemm_rate(s, reps, DType::fp32));
    return best;
}

}  // namespace xtgrad::bench
