// The doctest main of the xtgrad test suite: one binary, one TU per family of tests.
// The GEMM backend (XTGRAD_GEMM_BACKEND) is chosen first: every product of the suite runs on it,
// so an invalid value or a backend that cannot load ends the run at once, with its message
// (exit 2), instead of failing each test (and aborting in doctest's INFO while unwinding).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/gemm/blas.hpp>

#include <cstdio>

int main(int argc, char** argv) {
    try {
        (void)xtgrad::gemm_backend_name();
    } catch (const xtgrad::Error& e) {
        std::fprintf(stderr, "xtgrad_tests: %s\n", e.what());
        return 2;
    }
    return doctest::Context(argc, argv).run();
}
