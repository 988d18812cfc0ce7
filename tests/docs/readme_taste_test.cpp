// README.md's "A taste", compiled and run as shown. The lines between the markers are the
// README's snippet without its #include and using lines; tests/docs/run_doc_blocks.py checks
// that they stay identical (the README's block says `doc-check: snippet-of` this file).
#include "test_util.hpp"

#include <cmath>
#include <cstdio>
#include <string>
#include <unistd.h>

TEST_SUITE_BEGIN("examples");

using namespace xtgrad;

namespace {
// What the body writes to stdout (fmt::print), captured through a temporary file.
class CaptureStdout {
public:
    CaptureStdout() : file_(std::tmpfile()), saved_(dup(fileno(stdout))) {
        std::fflush(stdout);
        dup2(fileno(file_), fileno(stdout));
    }
    ~CaptureStdout() { restore(); if (file_) std::fclose(file_); }
    std::string text() {
        restore();
        std::string out;
        std::rewind(file_);
        for (int c; (c = std::fgetc(file_)) != EOF;) out += static_cast<char>(c);
        return out;
    }
private:
    void restore() {
        if (saved_ < 0) return;
        std::fflush(stdout);
        dup2(saved_, fileno(stdout));
        close(saved_);
        saved_ = -1;
    }
    std::FILE* file_;
    int saved_;
};
}  // namespace

TEST_CASE("README: A taste") {
    CaptureStdout printed;
    // --- README.md "A taste" begins
    Tensor x = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3}, /*requires_grad=*/true);
    Tensor w = Tensor::ones({3, 2}, true);
    Tensor loss = sum(softmax(matmul(x, w), -1) * x.size(0));
    loss.backward();                       // x.grad_array(), w.grad_array() now hold d loss / d x, d loss / d w
    fmt::print("{}\n", loss);              // tensor(4.0000, shape=(), grad_fn=<SumBackward>)
    CHECK(gradcheck([](const std::vector<Tensor>& v) { return softmax(v[0], -1); }, {x}));  // in a doctest
    // --- README.md "A taste" ends
    CHECK(printed.text() == "tensor(4.0000, shape=(), grad_fn=<SumBackward>)\n");
    // Each softmax row sums to 1 whatever its input, so the loss is 2 rows * 2 = 4 and its
    // gradients are zero up to float32 rounding. gradcheck zeroes and refills its inputs'
    // gradients (x's), so d loss / d x is checked on a fresh graph; w is not gradcheck's.
    CHECK(loss.item() == doctest::Approx(4.0));
    REQUIRE(w.grad_array().size() == 6);
    for (float g : w.grad_array()) CHECK(std::abs(g) < 1e-6f);
    Tensor x2 = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3}, true);
    sum(softmax(matmul(x2, w), -1) * x2.size(0)).backward();
    REQUIRE(x2.grad_array().size() == 6);
    for (float g : x2.grad_array()) CHECK(std::abs(g) < 1e-6f);
}

TEST_SUITE_END();
