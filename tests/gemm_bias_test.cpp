// gemm_bias (gemm/blas.hpp): a layer's y = op(A)·op(B) + bias, the bias in the bf16 product's
// epilogue where oneDNN's matmul runs it, else one pass after the product. Every route gives the
// bits of the product followed by add_bias_rows: fp32, bf16 on the backend (one call, and split
// over the pool by rows and by columns), the shapes that stay in fp32 under bf16, the medium
// blocks in small_gemm's bf16 kernel, K = 0; and a null bias is the plain product.
#include "tests/autocast_util.hpp"
#include "tests/reference_gemm.hpp"

#include <xtgrad/gemm/blas.hpp>
#include <xtgrad/threads/parallel.hpp>

#include <cstring>
#include <vector>

TEST_SUITE_BEGIN("ops");

using namespace xtgrad;

namespace {
struct Case {
    bool tb;
    int M, N, K;
};

// Whether gemm_bias equals the product then add_bias_rows, bit for bit (and with a null bias the
// plain product; with K = 0 the bias in every row); with given bf16 copies when `given`
bool same_bits(DType dt, const Case& c, bool given) {
    const std::vector<float> A = test::random_buffer(static_cast<std::size_t>(c.M) * c.K, 1);
    const std::vector<float> B = test::random_buffer(static_cast<std::size_t>(c.K) * c.N, 2);
    const std::vector<float> bias = test::random_buffer(static_cast<std::size_t>(c.N), 3);
    std::vector<std::uint16_t> A16(A.size()), B16(B.size());
    if (!A.empty()) convert_to_bf16(A.data(), 1, static_cast<int>(A.size()), static_cast<int>(A.size()), A16.data());
    if (!B.empty()) convert_to_bf16(B.data(), 1, static_cast<int>(B.size()), static_cast<int>(B.size()), B16.data());
    const std::uint16_t* a16 = given && !A.empty() ? A16.data() : nullptr;
    const std::uint16_t* b16 = given && !B.empty() ? B16.data() : nullptr;
    const std::size_t n = static_cast<std::size_t>(c.M) * c.N;
    std::vector<float> fused(n, -7.f), separate(n, -7.f), plain(n, -7.f), unbiased(n, -9.f);
    gemm_bias(dt, false, c.tb, c.M, c.N, c.K, A.data(), a16, B.data(), b16, bias.data(), fused.data());
    gemm(dt, false, c.tb, c.M, c.N, c.K, 1.f, A.data(), a16, B.data(), b16, 0.f, separate.data());
    add_bias_rows(separate.data(), c.M, c.N, c.N, bias.data());
    bool same = std::memcmp(fused.data(), separate.data(), n * sizeof(float)) == 0;
    gemm_bias(dt, false, c.tb, c.M, c.N, c.K, A.data(), a16, B.data(), b16, nullptr, unbiased.data());
    gemm(dt, false, c.tb, c.M, c.N, c.K, 1.f, A.data(), a16, B.data(), b16, 0.f, plain.data());
    same = same && std::memcmp(unbiased.data(), plain.data(), n * sizeof(float)) == 0;
    if (c.K == 0)  // no terms: the bias alone in every row
        for (int i = 0; i < c.M; ++i)
            same = same && std::memcmp(fused.data() + static_cast<std::size_t>(i) * c.N, bias.data(), c.N * sizeof(float)) == 0;
    return same;
}

const Case kCases[] = {
    {true, 640, 2048, 512},  // a feed-forward layer's x·Wᵀ: the backend's bf16 product, split by rows on 2 threads
    {true, 64, 1536, 512},   // more columns than rows: split by columns, each block its bias's columns
    {false, 96, 300, 130},   // A·B, odd sizes
    {false, 2048, 256, 512}, // A·B with a narrow B: B transposed first where the backend is slow on a narrow C
    {true, 7, 512, 512},     // a 7-token sentence: stays in fp32 under bf16
    {true, 20, 24, 64},      // small: fp32 small_gemm
    {true, 40, 48, 64},      // medium: small_gemm's bf16 kernel where it runs
    {true, 5, 9, 0},         // K = 0
};
}  // namespace

TEST_CASE("gemm_bias equals the product followed by add_bias_rows, bit for bit, in fp32 and bf16, on 1 and 2 threads") {
    const auto check = [](DType dt, const Case& c, bool given) {
        CAPTURE(static_cast<int>(dt));
        CAPTURE(c.tb);
        CAPTURE(c.M);
        CAPTURE(c.N);
        CAPTURE(c.K);
        CAPTURE(given);
        CHECK(same_bits(dt, c, given));
    };
    for (int threads : {1, 2}) {
        CAPTURE(threads);
        set_num_threads(threads);
        set_blas_threads(threads);
        for (const Case& c : kCases) check(DType::fp32, c, false);
        const autocast_test::Bf16Here here;
        if (here)
            for (const Case& c : kCases)
                for (bool given : {false, true}) check(DType::bf16, c, given);
    }
    set_num_threads(1);
    set_blas_threads(1);
}

TEST_CASE("add_bias_rows adds the bias to every row within the row stride and nothing past a row's N columns") {
    std::vector<float> C(3 * 5, 1.f);
    const float bias[] = {1.f, 2.f, 3.f};
    add_bias_rows(C.data(), 3, 3, 5, bias);
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 5; ++j) CHECK(C[i * 5 + j] == (j < 3 ? 1.f + bias[j] : 1.f));
    add_bias_rows(C.data(), 3, 3, 5, nullptr);  // no bias: unchanged
    CHECK(C[0] == 2.f);
    const std::vector<float> before = C;
    test::expect_error([&] { add_bias_rows(C.data(), 3, 6, 5, bias); }, {"add_bias_rows: ", "ldc = 5"});
    test::expect_error([&] { add_bias_rows(C.data(), -1, 3, 5, bias); }, {"add_bias_rows: ", "M = -1"});
    test::expect_error([&] { add_bias_rows(C.data(), 3, -2, 5, bias); }, {"add_bias_rows: ", "N = -2"});
    CHECK(C == before);  // refused before writing
}

TEST_CASE("gemm_bias refuses bad sizes, null operands and a bias inside C before writing, in fp32 and bf16") {
    std::vector<float> A(64, 1.f), B(64, 1.f), C(64, 3.f), bias(8, 1.f);
    const std::vector<float> before = C;
    std::vector<DType> types{DType::fp32};
    const autocast_test::Bf16Here here;
    if (here) types.push_back(DType::bf16);
    for (DType dt : types) {
        CAPTURE(static_cast<int>(dt));
        const auto call = [&](int M, int N, const float* a, const float* b, const float* bias_in) {
            gemm_bias(dt, false, true, M, N, 8, a, nullptr, b, nullptr, bias_in, C.data());
        };
        test::expect_error([&] { call(-1, 8, A.data(), B.data(), bias.data()); }, {"gemm_bias: ", "negative size", "M = -1"});
        test::expect_error([&] { call(8, -8, A.data(), B.data(), bias.data()); }, {"gemm_bias: ", "N = -8"});
        test::expect_error([&] { call(8, 8, nullptr, B.data(), bias.data()); }, {"gemm_bias: null A"});
        test::expect_error([&] { call(8, 8, A.data(), nullptr, bias.data()); }, {"gemm_bias: null B"});
        test::expect_error([&] { call(8, 8, A.data(), B.data(), C.data() + 3); }, {"gemm_bias: the bias", "overlaps C"});
        CHECK(C == before);
    }
}

TEST_SUITE_END();
