// The vector kernels (simd/vector_kernels.hpp) in every instruction set this build and CPU
// have (simd/cpu_isa.hpp): against a double-precision reference, and against each other.
#include "tests/reference_gemm.hpp"
#include "tests/test_util.hpp"

#include <xtgrad/simd/cpu_isa.hpp>
#include <xtgrad/simd/vector_kernels.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

using namespace xtgrad;

TEST_SUITE_BEGIN("ops");

namespace {

std::vector<Isa> available_isas() {
    std::vector<Isa> out{Isa::baseline};
    if (avx512_available()) out.push_back(Isa::avx512);
    return out;
}

// Sizes around both vector widths (8, 16) and their tails.
const std::size_t kSizes[] = {0, 1, 7, 8, 9, 15, 16, 17, 31, 33, 100, 1000};

struct AdamState {
    std::vector<float> w, g, m, v;
};

AdamState adam_state(std::size_t n) {
    return {test::random_buffer(n, 1), test::random_buffer(n, 2), test::random_buffer(n, 3), test::random_buffer(n, 4)};
}

// Bit-for-bit equality (memcmp is never handed an empty vector's null data()).
bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

const vec::AdamCoefficients kAdam{.b1 = 0.9f, .one_minus_b1 = 0.1f, .b2 = 0.999f, .one_minus_b2 = 0.001f,
                                  .l2 = 0.01f, .decay = 1.f, .step_size = 1e-3f, .inv_sqrt_bc2 = 1.5f, .eps = 1e-8f};

}  // namespace

TEST_CASE("exp_shifted_sum equals a double-precision reference in every instruction set") {
    for (Isa isa : available_isas()) {
        IsaScope scope(isa);
        for (std::size_t n : kSizes) {
            CAPTURE(isa_name(isa));
            CAPTURE(n);
            const std::vector<float> x = test::random_buffer(n, 7);
            std::vector<float> y(n, -1.f);
            const float shift = 0.5f;
            double ref = 0;
            for (float xi : x) ref += std::exp(static_cast<double>(xi) - shift);
            const double sum = vec::exp_shifted_sum(x.data(), y.data(), n, shift, true);
            CHECK(std::abs(sum - ref) <= 1e-6 * (1 + ref));
            double worst = 0;
            for (std::size_t k = 0; k < n; ++k) {
                const double e = std::exp(static_cast<double>(x[k]) - shift);
                worst = std::max(worst, std::abs(y[k] - e) / e);
            }
            CHECK(worst < 4e-7);  // a few ulps of float
            std::vector<float> untouched(n, -1.f);
            CHECK(vec::exp_shifted_sum(x.data(), untouched.data(), n, shift, false) == sum);
            CHECK(std::all_of(untouched.begin(), untouched.end(), [](float u) { return u == -1.f; }));
        }
    }
}

TEST_CASE("max_value is the largest value that is not NaN, in every instruction set") {
    const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    for (Isa isa : available_isas()) {
        IsaScope scope(isa);
        for (std::size_t n : kSizes) {
            CAPTURE(isa_name(isa));
            CAPTURE(n);
            std::vector<float> x = test::random_buffer(n, 11);
            const float expected = n == 0 ? -inf : *std::max_element(x.begin(), x.end());
            CHECK(vec::max_value(x.data(), n) == expected);
            if (n == 0) continue;
            for (std::size_t at : {std::size_t{0}, n / 2, n - 1}) {  // a NaN anywhere is passed over
                std::vector<float> with_nan = x;
                with_nan[at] = nan;
                float rest = -inf;
                for (std::size_t k = 0; k < n; ++k)
                    if (k != at) rest = std::max(rest, x[k]);
                CHECK(vec::max_value(with_nan.data(), n) == rest);
            }
            std::vector<float> all_nan(n, nan), masked(n, -inf);
            CHECK(vec::max_value(all_nan.data(), n) == -inf);
            CHECK(vec::max_value(masked.data(), n) == -inf);
            masked[n - 1] = 2.5f;  // the tail, or the last lane
            CHECK(vec::max_value(masked.data(), n) == 2.5f);
        }
    }
}

TEST_CASE("dot equals a double-precision reference in every instruction set") {
    for (Isa isa : available_isas()) {
        IsaScope scope(isa);
        for (std::size_t n : kSizes) {
            CAPTURE(isa_name(isa));
            CAPTURE(n);
            const std::vector<float> a = test::random_buffer(n, 12), b = test::random_buffer(n, 13);
            double ref = 0, magnitude = 0;
            for (std::size_t k = 0; k < n; ++k) {
                ref += static_cast<double>(a[k]) * b[k];
                magnitude += std::abs(static_cast<double>(a[k]) * b[k]);
            }
            CHECK(std::abs(vec::dot(a.data(), b.data(), n) - ref) <= 1e-6 * (1 + magnitude));
        }
    }
}

TEST_CASE("adam_update gives every element the same bits in every instruction set, and the reference's value") {
    for (std::size_t n : kSizes) {
        CAPTURE(n);
        const AdamState start = adam_state(n);
        // The reference: the update's formula in double.
        std::vector<double> ref(n);
        for (std::size_t i = 0; i < n; ++i) {
            const double g = start.g[i] + double(kAdam.l2) * start.w[i];
            const double m = double(kAdam.b1) * start.m[i] + double(kAdam.one_minus_b1) * g;
            const double v = double(kAdam.b2) * start.v[i] + double(kAdam.one_minus_b2) * g * g;
            ref[i] = start.w[i] * double(kAdam.decay) -
                     double(kAdam.step_size) * m / (std::sqrt(v) * kAdam.inv_sqrt_bc2 + kAdam.eps);
        }
        std::vector<AdamState> results;
        for (Isa isa : available_isas()) {
            IsaScope scope(isa);
            AdamState s = start;
            vec::adam_update(kAdam, s.w.data(), s.g.data(), s.m.data(), s.v.data(), n);
            double worst = 0;
            for (std::size_t i = 0; i < n; ++i) worst = std::max(worst, std::abs(s.w[i] - ref[i]) / (1 + std::abs(ref[i])));
            CAPTURE(isa_name(isa));
            CHECK(worst < 1e-6);
            results.push_back(std::move(s));
            // the prefetching path (one thread's update): the same bits, also where the distance ahead is past the end
            AdamState p = start;
            vec::adam_update(kAdam, p.w.data(), p.g.data(), p.m.data(), p.v.data(), n, vec::kAdamPrefetchBytes);
            results.push_back(std::move(p));
        }
        for (const AdamState& r : results) {
            CHECK(same_bits(r.w, results[0].w));
            CHECK(same_bits(r.m, results[0].m));
            CHECK(same_bits(r.v, results[0].v));
        }
    }
}

TEST_CASE("adam_update_product: the update on the gradient its factors make, bit for bit, rank 1 to 7") {
    // The stored gradient made as the factored kernel makes it (vector_kernels.hpp: k = 0's
    // product rounded, then one fused multiply-add per k), then adam_update on it: the same bits,
    // in either instruction set, for any split of the rows (the threads'), a panel past L1 (2100
    // columns at rank 7: Adam declines those, the kernel still takes them), rows ending in a partial vector.
    for (Isa isa : available_isas()) {
        IsaScope scope(isa);
        CAPTURE(isa_name(isa));
        for (int rank = 1; rank <= vec::kMaxGradientRank; ++rank)
            for (const auto& shape : {std::pair<std::size_t, std::size_t>{1, 1}, {3, 17}, {9, 100}, {9, 2100}}) {
                const std::size_t rows = shape.first, cols = shape.second;  // named: clang 14 cannot capture bindings
                CAPTURE(rank);
                CAPTURE(rows);
                CAPTURE(cols);
                const std::size_t n = rows * cols;
                // a: (rows, rank) read transposed, as a Linear's dyᵀ; b: (cols, rank), as a Conv1d's xᵀ
                const std::vector<float> a = test::random_buffer(rows * rank, 5), b = test::random_buffer(cols * rank, 6);
                const vec::RankKGradient g{.rows = rows, .cols = cols, .rank = rank, .a = a.data(), .a_row = rank,
                                           .a_rank = 1, .b = b.data(), .b_rank = 1, .b_col = rank};
                AdamState stored = adam_state(n);
                for (std::size_t r = 0; r < rows; ++r)
                    for (std::size_t c = 0; c < cols; ++c) {
                        float sum = a[r * rank] * b[c * rank];
                        for (int k = 1; k < rank; ++k) sum = std::fma(a[r * rank + k], b[c * rank + k], sum);
                        stored.g[r * cols + c] = sum;
                    }
                AdamState made = stored;
                vec::adam_update(kAdam, stored.w.data(), stored.g.data(), stored.m.data(), stored.v.data(), n);
                vec::adam_update_product(kAdam, made.w.data(), made.m.data(), made.v.data(), g, 0, rows / 2);
                vec::adam_update_product(kAdam, made.w.data(), made.m.data(), made.v.data(), g, rows / 2, rows,
                                         vec::kAdamPrefetchBytes);
                CHECK(same_bits(made.w, stored.w));
                CHECK(same_bits(made.m, stored.m));
                CHECK(same_bits(made.v, stored.v));
            }
    }
}

TEST_CASE("softmax gives the same values, to float rounding, with either instruction set's kernels") {
    Generator gen(3);
    const Tensor x = randn({4, 8, 37}, gen);  // rows of 37: two AVX-512 batches and a tail
    const Array first = softmax(x, -1).data();
    for (Isa isa : available_isas()) {
        IsaScope scope(isa);
        const Array y = softmax(x, -1).data();
        CAPTURE(isa_name(isa));
        CHECK(xt::amax(xt::abs(y - first))() < 1e-7f);
        CHECK(xt::allclose(xt::sum(y, {2}), 1.f, 1e-6, 1e-6));
    }
}

TEST_CASE("the instruction set: names, the scope restores it, avx512 only where the CPU has it") {
    CHECK(std::string(isa_name(Isa::baseline)) == "baseline");
    CHECK(std::string(isa_name(Isa::avx512)) == "avx512");
    const Isa before = active_isa();
    {
        IsaScope scope(Isa::baseline);
        CHECK(active_isa() == Isa::baseline);
    }
    CHECK(active_isa() == before);
    if (avx512_available()) {
        IsaScope scope(Isa::avx512);
        CHECK(active_isa() == Isa::avx512);
    } else {
        test::expect_error([] { set_isa(Isa::avx512); }, {"set_isa(avx512)", "AVX-512"});
        CHECK(active_isa() == before);
    }
}

TEST_CASE("the random draws' kernels give the scalar definitions' bits in every instruction set") {
    // scalar references: std::mt19937's twist and tempering, and torch's bernoulli_ compare
    const auto temper = [](std::uint32_t y) {
        y ^= y >> 11;
        y ^= (y << 7) & 0x9D2C5680u;
        y ^= (y << 15) & 0xEFC60000u;
        return y ^ (y >> 18);
    };
    std::vector<std::uint32_t> seed_state(624);
    for (std::size_t i = 0; i < seed_state.size(); ++i)
        seed_state[i] = static_cast<std::uint32_t>(i * 2654435761u + 12345u);
    std::vector<std::uint32_t> twisted = seed_state;
    for (std::size_t i = 0; i < 624; ++i) {  // the textbook twist, one word at a time
        const std::uint32_t y = (twisted[i] & 0x80000000u) | (twisted[(i + 1) % 624] & 0x7FFFFFFFu);
        twisted[i] = twisted[(i + 397) % 624] ^ (y >> 1) ^ ((y & 1u) != 0 ? 0x9908B0DFu : 0u);
    }
    // words whose 53-bit values sit on both sides of the bounds below
    const std::uint64_t bound = (std::uint64_t{1} << 52) + 3;
    std::vector<std::uint32_t> words;
    for (std::uint64_t r : {std::uint64_t{0}, bound - 1, bound, bound + 1, (std::uint64_t{1} << 53) - 1,
                            std::uint64_t{0xFFFFFFFFu}, std::uint64_t{1} << 32})
        for (std::uint32_t high_junk : {0u, 0xFFE00000u}) {  // bits above the 53 are ignored
            words.push_back(static_cast<std::uint32_t>(r >> 32) | high_junk);
            words.push_back(static_cast<std::uint32_t>(r));
        }
    for (std::uint32_t i = 0; i < 40; ++i) words.push_back(i * 0x9E3779B9u);
    const std::size_t m = words.size() / 2;
    for (Isa isa : available_isas()) {
        IsaScope scope(isa);
        CAPTURE(isa_name(isa));
        std::vector<std::uint32_t> state = seed_state;
        vec::mt_twist(state.data());
        CHECK(state == twisted);
        for (std::size_t n : kSizes) {
            CAPTURE(n);
            const std::size_t k = std::min<std::size_t>(n, 624);
            std::vector<std::uint32_t> out(k);
            vec::mt_temper(twisted.data(), k, out.data());
            for (std::size_t i = 0; i < k; ++i) CHECK(out[i] == temper(twisted[i]));
        }
        for (std::uint64_t b : {std::uint64_t{0}, bound, std::uint64_t{1} << 53}) {
            CAPTURE(b);
            std::vector<std::uint8_t> kept(m, 7);
            vec::bernoulli_bytes(words.data(), m, b, kept.data());
            for (std::size_t k = 0; k < m; ++k) {
                const std::uint64_t r = (static_cast<std::uint64_t>(words[2 * k] & 0x1FFFFFu) << 32) | words[2 * k + 1];
                CHECK(kept[k] == (r < b ? 1 : 0));
            }
        }
    }
}
