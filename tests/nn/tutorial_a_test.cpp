// Tutorial A modules: gradcheck and bad-input tests (parity runs in tests/parity_test.cpp).
#include "tests/test_util.hpp"
