#!/usr/bin/env bash
# The exercises and the test template against an INSTALLED xtgrad, as a learner uses them: a copy
# of exercises/ outside the checkout, built with its Makefile (pkg-config xtgrad), then
# exercises/check.sh on the two programs; the template built with its documented command.
# usage: exercises/check_installed.sh PREFIX WORKDIR
set -euo pipefail
prefix=$(realpath "$1"); work=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"; mkdir -p "$work"
libdir=$(dirname "$(find "$prefix" -name 'libxtgrad.so.0' | head -n 1)")
export PKG_CONFIG_PATH="$libdir/pkgconfig"
cp -r "$here" "$work/exercises"
cxx=g++
command -v ccache >/dev/null && cxx="ccache g++"
echo "-- make exercises exercises_solved (a copy of exercises/, pkg-config xtgrad)"
make -C "$work/exercises" -j "${XTGRAD_JOBS:-2}" CXX="$cxx" exercises exercises_solved >"$work/make.log" 2>&1 ||
  { tail -n 30 "$work/make.log"; exit 1; }
bash "$work/exercises/check.sh" "$work/exercises/exercises_solved" "$work/exercises/exercises"
echo "-- template/my_test.cpp with its documented command"
cd "$work/exercises/template"
# shellcheck disable=SC2046  # pkg-config's words are meant to split
$cxx -std=c++20 -g my_test.cpp -o my_test $(pkg-config --cflags --libs xtgrad) \
    -Wl,-rpath,"$(pkg-config --variable=libdir xtgrad)"
./my_test
