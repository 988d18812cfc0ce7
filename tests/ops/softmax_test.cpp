#include "tests/test_util.hpp"

#include <cmath>
#include <limits>

TEST_SUITE_BEGIN("ops");

using namespace xtgrad;
using test::rnd;
using V = std::vector<Tensor>;

TEST_CASE("softmax rows sum to one along any axis and pass gradcheck") {
    Tensor a = rnd({2, 3, 4}, 1, 2.f);
    for (int dim : {0, 1, 2, -1}) {
        Tensor s = softmax(a, dim);
        Tensor total = sum(s, {dim});
        for (float v : total.data()) CHECK(v == doctest::Approx(1.f));
        CHECK(gradcheck([dim](const V& x) { return softmax(x[0], dim); }, {a}));
        CHECK(gradcheck([dim](const V& x) { return log_softmax(x[0], dim); }, {a}));
    }
}

TEST_CASE("softmax is stable for large logits") {
    Tensor a = Tensor::from_vector({1000.f, 1001.f, 999.f}, {1, 3});
    Tensor s = softmax(a, 1);
    CHECK(s.data()(0, 1) == doctest::Approx(0.665241f));
    CHECK(std::isfinite(log_softmax(a, 1).data()(0, 2)));
    CHECK(log_softmax(a, 1).data()(0, 2) == doctest::Approx(-2.407606f));
}

TEST_CASE("a fully masked softmax row is an error, not a silent NaN") {
    // Documented behaviour (docs/ops.md): PyTorch returns NaN for a row that is all -inf;
    // xtgrad refuses it and names the row. A finite fill (-1e9) gives uniform weights.
    Tensor a = rnd({2, 3}, 3);
    Mask all_of_row_1 = Mask::from_shape({2, 1});  // row 1 fully masked
    all_of_row_1(0, 0) = false;
    all_of_row_1(1, 0) = true;
    test::expect_error([&] { softmax(masked_fill(a, all_of_row_1, -INFINITY), -1); },
                      {"softmax", "row 1", "entirely -inf", "-1e9"});
    test::expect_error([&] { log_softmax(masked_fill(a, all_of_row_1, -INFINITY), -1); }, {"log_softmax", "row 1"});
    Tensor uniform = softmax(masked_fill(a, all_of_row_1, -1e9f), -1);
    CHECK(uniform.data()(1, 0) == doctest::Approx(1.f / 3.f));
}

TEST_CASE("a softmax row of NaN says NaN, not fully masked") {
    Tensor a = Tensor::from_vector({1.f, 2.f, NAN, NAN, -INFINITY, NAN}, {2, 3});
    for (bool log : {false, true}) {
        try {
            log ? log_softmax(a, -1) : softmax(a, -1);
            FAIL("expected an xtgrad::Error");
        } catch (const Error& e) {
            const std::string msg = e.what();
            CHECK(msg.find("row 1") != std::string::npos);
            CHECK(msg.find("NaN") != std::string::npos);
            CHECK(msg.find("position 0") != std::string::npos);
            CHECK(msg.find("-inf") == std::string::npos);
        }
    }
}

TEST_SUITE_END();
