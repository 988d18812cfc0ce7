// The precompiled header of the targets that compile many files of their own (meson's cpp_pch):
// the exercises (52 files, one by one: each is a learner's standalone file) and the suite's unity
// groups. Parsing <xtgrad/xtgrad.hpp>, xtensor with it, was ~3 s of each such compile. Each file
// still includes what it uses (exercises/Makefile, against the install, and -Db_pch=false builds
// have no precompiled header). doctest stays out: the suite's and the exercises' main.cpp define
// DOCTEST_CONFIG_IMPLEMENT(_WITH_MAIN) before they include doctest.
#include <xtgrad/xtgrad.hpp>
