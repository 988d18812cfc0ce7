// Tutorial D (nn/tutorial_d, torch.nn's Transformer): positional_encoding, the table, its dropout and its errors.
#include "tests/nn/tutorial_d_util.hpp"

#include <cmath>

TEST_SUITE_BEGIN("tutorial_d");

using namespace xtgrad;
using namespace xtgrad::test::tutorial_d;
using test::expect_error;
using test::rnd;

TEST_CASE("tutorial D: positional_encoding adds the float32 sinusoid table along the sequence axis") {
    const Tensor P = positional_table(6, 10);
    for (std::size_t pos = 0; pos < 6; ++pos)
        for (std::size_t i = 0; i < 5; ++i) {
            const double angle = pos / std::pow(10000.0, 2.0 * i / 10.0);
            CHECK(P.data()(pos, 2 * i) == doctest::Approx(std::sin(angle)).epsilon(1e-6));
            CHECK(P.data()(pos, 2 * i + 1) == doctest::Approx(std::cos(angle)).epsilon(1e-6));
        }
    // batch-first (the tutorial's documented layout) and sequence-first give the same encoding
    Tensor x = rnd({3, 6, 10}, 1);  // (N, L, E)
    const Tensor batch_first = positional_encoding(x, 10, /*dropout_p=*/0.f);
    const Tensor seq_first = positional_encoding(transpose(x, 0, 1), 10, 0.f, 512, /*seq_axis=*/0);
    CHECK(test::max_abs_diff(transpose(seq_first, 0, 1).data(), batch_first.data()) == 0.f);
    CHECK(batch_first.data()(2, 4, 1) == doctest::Approx(x.data()(2, 4, 1) + P.data()(4, 1)));
    CHECK(gradcheck([](const V& v) { return positional_encoding(v[0], 10, 0.f, 6, 1); }, {x}));
}

TEST_CASE("tutorial D: positional_encoding rejects odd features, long sequences and a wrong width") {
    expect_error([] { positional_encoding(rnd({2, 4, 9}), 9); }, {"positional_encoding", "even", "9"});
    expect_error([] { positional_encoding(rnd({2, 20, 8}), 8, 0.1f, 16); }, {"sequence length 20", "max_len 16"});
    expect_error([] { positional_encoding(rnd({2, 4, 8}), 10); }, {"(2,4,8)", "num_features 10"});
    expect_error([] { positional_encoding(rnd({4, 8}), 8); }, {"3-D", "(4,8)"});
}

TEST_CASE("tutorial D: positional_encoding drops with dropout_p as the tutorial's, in training only") {
    Tensor x = rnd({2, 50, 10}, 3);
    const Tensor plain = positional_encoding(x, 10, 0.f);
    // the tutorial's call positional_encoding(X, 10): dropout_p 0.1, and F.dropout's training = true
    Generator g1(5), g2(5);
    const Tensor dropped = positional_encoding(x, 10, 0.5f, 512, 1, /*training=*/true, &g1);
    std::size_t zeros = 0;
    for (std::size_t i = 0; i < dropped.numel(); ++i) {
        const float d = dropped.data().data()[i], p = plain.data().data()[i];
        if (d == 0.f) {
            ++zeros;
        } else {
            CHECK(d == doctest::Approx(2.f * p));  // kept values scaled by 1 / (1 - p)
        }
    }
    CHECK(zeros > 300);
    CHECK(zeros < 700);
    CHECK(test::max_abs_diff(positional_encoding(x, 10, 0.5f, 512, 1, true, &g2).data(), dropped.data()) == 0.f);
    // erratum 7: with training false (a module in eval mode passes it) nothing is dropped
    CHECK(test::max_abs_diff(positional_encoding(x, 10, 0.5f, 512, 1, /*training=*/false).data(), plain.data()) == 0.f);
    expect_error([&] { positional_encoding(x, 10, 1.5f); }, {"positional_encoding", "dropout_p", "1.5"});
}

TEST_SUITE_END();
