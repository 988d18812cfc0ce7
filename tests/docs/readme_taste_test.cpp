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
    Tensor w = Tensor::from_vector({0.5f, -1, 0, 1, -0.5f, 0.5f}, {3, 2}, true);
    Ids target = {1, 0};                                // the class each row of x should get
    Tensor loss = cross_entropy(matmul(x, w), target);  // mean over the rows of -log softmax(x w)[row, target]
    loss.backward();                                    // d loss / d x and d loss / d w, into x.grad and w.grad
    fmt::print("{}\n{}\n{}\n", loss, x.grad(), w.grad());
    CHECK(gradcheck([&](const std::vector<Tensor>& v) { return cross_entropy(matmul(v[0], v[1]), target); }, {x, w}));
    // --- README.md "A taste" ends
    const std::string shown = R"(
tensor(2.5182, shape=(), grad_fn=<CrossEntropyBackward>)
tensor([[ 0.0220, -0.0147, -0.0147],
        [-0.7450,  0.4967,  0.4967]], shape=(2,3))
tensor([[-1.9720,  1.9720],
        [-2.4540,  2.4540],
        [-2.9360,  2.9360]], shape=(3,2))
)";
    CHECK(printed.text() == shown.substr(1));
    // gradcheck ran a backward of its own on x and w and left their gradients as loss.backward() made them.
    CHECK(shown.find(fmt::format("\n{}\n{}\n", x.grad(), w.grad())) != std::string::npos);
}

TEST_SUITE_END();
