// The exercises' precompiled header (meson's cpp_pch, exercises/meson.build): parsing
// <xtgrad/xtgrad.hpp>, xtensor with it, was ~3 s of each exercise file's 5-8 s compile. Each
// file still includes what it uses (the build against the install, exercises/Makefile, has no
// precompiled header), so this only makes the in-tree build faster. doctest stays out: main.cpp
// defines DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN before it includes doctest.
#include <xtgrad/xtgrad.hpp>
