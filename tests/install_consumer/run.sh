#!/usr/bin/env bash
# A user's program built against an installed xtgrad, as a user would: with exactly
# `pkg-config --cflags --libs xtgrad`, and with CMake's find_package(xtgrad CONFIG), each at two
# -march settings (the baseline x86-64 and this machine's native one), then with Debian 12's
# clang++ 14 (the public headers compile with both compilers, warnings as errors), then run. First,
# that every public function taking a container links whatever the -march (containers.cpp).
# usage: tests/install_consumer/run.sh PREFIX WORKDIR
set -euo pipefail
prefix=$(realpath "$1"); work=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"; mkdir -p "$work"
libdir=$(dirname "$(find "$prefix" -name 'libxtgrad.so.0' | head -n 1)")
export PKG_CONFIG_PATH="$libdir/pkgconfig" LD_LIBRARY_PATH="$libdir"
soname=$(objdump -p "$libdir/libxtgrad.so" | awk '/SONAME/ {print $2}')
[ "$soname" = "libxtgrad.so.0" ] || { echo "SONAME is '$soname', expected libxtgrad.so.0"; exit 1; }
# One include root: the only xtgrad path in the flags is <prefix>/include (docs/api.md).
xt_includes=$(pkg-config --cflags-only-I xtgrad | tr ' ' '\n' | grep -c "^-I$prefix" || true)
[ "$xt_includes" -le 1 ] && ! pkg-config --cflags xtgrad | grep -q "include/xtgrad" ||
  { echo "pkg-config gives more than one xtgrad include path: $(pkg-config --cflags xtgrad)"; exit 1; }
# Every public type is the same whatever the user's -m flags: no exported function names xsimd's
# default allocator (its alignment, and so the mangled name, follows them), and a program calling
# every public function that takes a container links and runs at each setting (containers.cpp).
if nm -DC --defined-only "$libdir/libxtgrad.so" | grep -q 'xsimd::aligned_allocator'; then
  echo "libxtgrad.so exports functions whose containers use xsimd's default allocator (-march dependent):"
  nm -DC --defined-only "$libdir/libxtgrad.so" | grep 'xsimd::aligned_allocator' | head -n 5; exit 1
fi
for flags in "" -march=x86-64 -mavx2 -march=native; do
  echo "-- every public function that takes a container, pkg-config ${flags:-(its flags alone)}"
  # shellcheck disable=SC2046,SC2086  # pkg-config's words and the empty flags are meant to split
  g++ -std=c++20 -O0 $flags "$here/containers.cpp" -o "$work/containers" $(pkg-config --cflags --libs xtgrad)
  "$work/containers"
done
for march in x86-64 native; do
  echo "-- pkg-config, -march=$march"
  # shellcheck disable=SC2046  # pkg-config's words are meant to split
  g++ -std=c++20 -O1 -march=$march "$here/main.cpp" -o "$work/pc-$march" $(pkg-config --cflags --libs xtgrad)
  "$work/pc-$march"
  echo "-- CMake find_package(xtgrad CONFIG), -march=$march"
  cmake -S "$here" -B "$work/cmake-$march" -DCMAKE_PREFIX_PATH="$prefix" \
        -DCMAKE_CXX_FLAGS="-march=$march" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$work/cmake-$march" >/dev/null
  "$work/cmake-$march/consumer"
done
# A program that never calls check_environment still hears of a bad switch read before main
# (XTGRAD_MALLOC_NO_FASTBINS, autograd/malloc_tuning.hpp): an Error at its first tensor, not a silent default
echo "-- XTGRAD_MALLOC_NO_FASTBINS=yes: an Error at the first tensor"
# (in a subshell, whose report of the abort goes to the log too)
if (XTGRAD_MALLOC_NO_FASTBINS=yes "$work/pc-native") >"$work/bad_switch.log" 2>&1 ||
   ! grep -q "XTGRAD_MALLOC_NO_FASTBINS: 'yes' is neither 1" "$work/bad_switch.log"; then
  echo "a bad XTGRAD_MALLOC_NO_FASTBINS was not refused:"; head -n 5 "$work/bad_switch.log"; exit 1
fi
echo "-- clang++-14, pkg-config, -Wall -Wextra -Werror"
# shellcheck disable=SC2046
clang++-14 -std=c++20 -O1 -Wall -Wextra -Werror "$here/main.cpp" -o "$work/pc-clang" $(pkg-config --cflags --libs xtgrad)
"$work/pc-clang"
echo "-- clang++-14, CMake find_package(xtgrad CONFIG)"
cmake -S "$here" -B "$work/cmake-clang" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_COMPILER=clang++-14 \
      -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/cmake-clang" >/dev/null
"$work/cmake-clang/consumer"
# Data-parallel from the installed tree: built like any user program, run by mpirun on 2 processes
# when the library was built with MPI (pkg-config's variable mpi).
if [ "$(pkg-config --variable=mpi xtgrad)" = yes ] && command -v mpirun >/dev/null; then
  echo "-- DistributedDataParallel, pkg-config, mpirun -np 2"
  # shellcheck disable=SC2046
  g++ -std=c++20 -O1 "$here/ddp_main.cpp" -o "$work/ddp" $(pkg-config --cflags --libs xtgrad)
  timeout 120 mpirun -np 2 --oversubscribe --bind-to none --allow-run-as-root "$work/ddp"
  echo "-- DistributedDataParallel, CMake (xtgrad_WITH_MPI)"
  cmake -S "$here" -B "$work/cmake-ddp" -DCMAKE_PREFIX_PATH="$prefix" -DXTGRAD_CONSUMER_DDP=ON \
        -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$work/cmake-ddp" >/dev/null
  timeout 120 mpirun -np 2 --oversubscribe --bind-to none --allow-run-as-root "$work/cmake-ddp/ddp_consumer"
else
  echo "-- DistributedDataParallel: skipped (library built without MPI, or no mpirun)"
fi
echo "-- a learner's program (tests/install_consumer/learner.cpp) at -O0 -g, as bench/learner_compile.sh times it"
# The fast path: GCC reads the installed precompiled header (tools/install_pch.sh) instead of the
# headers; -H lists it as "! .../xtgrad.hpp.gch/O0-g.gch". Without it the program still builds, ~4x slower.
pch="$(pkg-config --variable=includedir xtgrad)/xtgrad/xtgrad.hpp.gch"
# shellcheck disable=SC2046
g++ -std=c++20 -O0 -g -H "$here/learner.cpp" -o "$work/learner" $(pkg-config --cflags --libs xtgrad) 2>"$work/learner.includes"
if [ -d "$pch" ]; then
  # shellcheck disable=SC2046
  grep -qF "! $pch/" "$work/learner.includes" ||
    { echo "the installed precompiled header $pch was not used at -O0 -g with pkg-config's flags:"; \
      g++ -std=c++20 -O0 -g -Winvalid-pch -fsyntax-only "$here/learner.cpp" $(pkg-config --cflags xtgrad) 2>&1 | head -n 5; exit 1; }
  echo "   (the precompiled header $pch/O0-g.gch was used)"
else
  echo "   (no precompiled header installed: -Dlearner_pch=false or not GCC)"
fi
"$work/learner" | tee "$work/learner.out"
grep -q "^gradcheck passed$" "$work/learner.out" || { echo "the learner's program did not pass its gradcheck"; exit 1; }
