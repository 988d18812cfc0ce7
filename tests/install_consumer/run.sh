#!/usr/bin/env bash
# A user's program built against an installed xtgrad, as a user would: with exactly
# `pkg-config --cflags --libs xtgrad`, and with CMake's find_package(xtgrad CONFIG), each at two
# -march settings (the baseline x86-64 and this machine's native one), then with Debian 12's
# clang++ 14 (the public headers compile with both compilers, warnings as errors), then run.
# usage: tests/install_consumer/run.sh PREFIX WORKDIR
set -euo pipefail
prefix=$(realpath "$1"); work=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"; mkdir -p "$work"
libdir=$(dirname "$(find "$prefix" -name 'libxtgrad.so.0' | head -n 1)")
export PKG_CONFIG_PATH="$libdir/pkgconfig" LD_LIBRARY_PATH="$libdir"
soname=$(objdump -p "$libdir/libxtgrad.so" | awk '/SONAME/ {print $2}')
[ "$soname" = "libxtgrad.so.0" ] || { echo "SONAME is '$soname', expected libxtgrad.so.0"; exit 1; }
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
echo "-- clang++-14, pkg-config, -Wall -Wextra -Werror"
# shellcheck disable=SC2046
clang++-14 -std=c++20 -O1 -Wall -Wextra -Werror "$here/main.cpp" -o "$work/pc-clang" $(pkg-config --cflags --libs xtgrad)
"$work/pc-clang"
echo "-- clang++-14, CMake find_package(xtgrad CONFIG)"
cmake -S "$here" -B "$work/cmake-clang" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_COMPILER=clang++-14 \
      -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/cmake-clang" >/dev/null
"$work/cmake-clang/consumer"
