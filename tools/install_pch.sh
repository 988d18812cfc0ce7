#!/usr/bin/env bash
# meson install's last step (meson.build, option learner_pch): compiles the installed
# <xtgrad/xtgrad.hpp> into a GCC precompiled header next to it, so that a learner's program
# built with `g++ -std=c++20 -O0 [-g] ... $(pkg-config --cflags --libs xtgrad)` reads one
# file instead of parsing xtensor's and xsimd's templates again (docs/api.md, "Compiling fast").
# GCC uses it only when the flags that shape the header match: -std=c++20, -O0, no -m, -D, -f
# or -pthread flag the build did not have; otherwise it quietly parses the headers as before.
# It is compiled from the installed files, with pkg-config's own flags, so the two always agree.
#   tools/install_pch.sh INCLUDEDIR LIBDIR COMPILER...   (relative to the prefix; run by meson install)
set -euo pipefail
root=${MESON_INSTALL_DESTDIR_PREFIX:?run by meson install}
includedir=$1 libdir=$2; shift 2
[ "${1:-}" = ccache ] && shift   # a precompiled header is not worth caching
staged() { case $1 in /*) echo "${DESTDIR:-}$1" ;; *) echo "$root/$1" ;; esac; }   # meson keeps outside-prefix dirs absolute
inc=$(staged "$includedir")
header="$inc/xtgrad/xtgrad.hpp"
pc_dir="$(staged "$libdir")/pkgconfig"
command -v pkg-config >/dev/null || { echo "install_pch: no pkg-config, no precompiled header" >&2; exit 0; }
# Under DESTDIR the .pc file names the final prefix: the staged headers are found first.
read -r -a flags <<<"$(PKG_CONFIG_PATH="$pc_dir" pkg-config --cflags xtgrad)"
# A folder of variants (GCC tries each file in NAME.gch/): users may add their own flags' there.
out_dir="$header.gch"
mkdir -p "$out_dir"
tmp=$(mktemp "$out_dir/.O0-g.gch.XXXXXX")
trap 'rm -f "$tmp"' EXIT
# -w: the header compiled as a main file warns "#pragma once in main file", which no flag names.
"$@" -std=c++20 -O0 -g -w -I"$inc" "${flags[@]}" -x c++-header "$header" -o "$tmp"
chmod 0644 "$tmp"                  # mktemp's 0600 would hide it from every other user
mv -f "$tmp" "$out_dir/O0-g.gch"   # whole or not at all: a cut file would be an invalid header
echo "install_pch: $out_dir/O0-g.gch ($(du -m "$out_dir/O0-g.gch" | cut -f1) MB) for -std=c++20 -O0 [-g]"
