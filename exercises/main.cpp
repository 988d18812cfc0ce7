// The exercises' test runner: doctest's own main. Run one exercise with -ts=NAME
// (e.g. -ts=01_sigmoid), list them with -lts.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
