// The doctest main of the xtgrad test suite: one binary, one TU per family of tests.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
