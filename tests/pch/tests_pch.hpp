// The suite's precompiled header (meson's cpp_pch, tests/meson.build): <xtgrad/xtgrad.hpp>,
// xtensor with it, parsed once instead of once per unity group. Each test file still includes
// what it uses (the sanitizer and -Db_pch=false builds compile them the same). doctest stays out:
// tests/main.cpp defines DOCTEST_CONFIG_IMPLEMENT before it includes doctest.
#include <xtgrad/xtgrad.hpp>
