// Each call goes to the kernels of the active instruction set (simd/cpu_isa.hpp).
#include <xtgrad/simd/vector_kernels.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/simd/cpu_isa.hpp>
#include <xtgrad/simd/vector_kernels_impl.hpp>
#include "xtgrad_simd_config.hpp"

namespace xtgrad::vec {

namespace {
const detail::KernelTable& active() {
#if XTGRAD_HAVE_AVX512_KERNELS
    if (active_isa() == Isa::avx512) return detail::avx512_kernels();
#endif
    return detail::baseline_kernels();
}
}  // namespace

float max_value(const float* x, std::size_t n) { return active().max_value(x, n); }

double dot(const float* a, const float* b, std::size_t n) { return active().dot(a, b, n); }

double exp_shifted_sum(const float* x, float* y, std::size_t n, float shift, bool store) {
    return active().exp_shifted_sum(x, y, n, shift, store);
}

void adam_update(const AdamCoefficients& c, float* w, const float* g, float* m, float* v, std::size_t n,
                 std::size_t prefetch_bytes) {
    active().adam_update(c, w, g, m, v, n, prefetch_bytes);
}

void adam_update_product(const AdamCoefficients& c, float* w, float* m, float* v, const RankKGradient& g,
                         std::size_t row0, std::size_t row1, std::size_t prefetch_bytes) {
    if (g.rank < 1 || g.rank > kMaxGradientRank)
        fail("adam_update_product: a gradient of rank {}, outside 1..{} (an internal error)", g.rank, kMaxGradientRank);
    active().adam_update_product(c, w, m, v, g, row0, row1, prefetch_bytes);
}

void mt_twist(std::uint32_t* state) { active().mt_twist(state); }

void mt_temper(const std::uint32_t* x, std::size_t n, std::uint32_t* out) { active().mt_temper(x, n, out); }

void bernoulli_bytes(const std::uint32_t* words, std::size_t m, std::uint64_t bound, std::uint8_t* out) {
    active().bernoulli_bytes(words, m, bound, out);
}

}  // namespace xtgrad::vec
