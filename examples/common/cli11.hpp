// CLI11, the command-line parser of every xtgrad program, compiled without optimization.
//
// Why: CLI11 2.1.2 (Debian 12) is header-only, with no precompiled mode, so each of the ~25
// programs that parse options compiles all of it again; at -O3 that is most of a program's
// compile (a trivial program with CLI11 takes ~14 s on the 2-core CI machines). Parsing a few
// options is never a hot path, so its functions are compiled as at -O0 (GCC's optimize pragma):
// the examples' main.cpp compiles in ~10 instead of ~15 s, a minute of cold CI in all.
//
// The standard headers CLI11 uses are included first, outside the pragma: a template defined
// inside it keeps -O0 wherever it is used, and std::vector at -O0 in a benchmark's loop would
// measure the pragma, not the kernel. Include this header, never <CLI/CLI.hpp>, so the first
// inclusion is always this one (tools/lint.sh checks it).
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iomanip>
#include <iostream>
#include <iterator>
#include <limits>
#include <locale>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <sys/stat.h>
#include <sys/types.h>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("O0")
#include <CLI/CLI.hpp>
#pragma GCC pop_options
#else
#include <CLI/CLI.hpp>
#endif
