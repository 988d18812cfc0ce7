#!/usr/bin/env bash
# A learner's edit-compile-run against the installed xtgrad: compiles and links
# tests/install_consumer/learner.cpp (25 lines: <xtgrad/xtgrad.hpp>, a tiny MLP, 3 Adam steps, a
# gradcheck) with pkg-config's flags, then runs it; ROUNDS times per flag set, and prints the
# median wall time of compile+link and of the whole edit-compile-run, and whether GCC used the
# installed precompiled header (tools/install_pch.sh: -std=c++20 -O0 with or without -g). No
# ccache: every round compiles from scratch, as a learner's edited file does.
#
#   meson configure build -Dprefix=/tmp/xtprefix && meson install -C build
#   bash bench/learner_compile.sh /tmp/xtprefix [ROUNDS]
set -euo pipefail
prefix=$(realpath "$1"); rounds=${2:-5}
here=$(cd "$(dirname "$0")/.." && pwd)
libdir=$(dirname "$(find "$prefix" -name 'libxtgrad.so.0' | head -n 1)")
export PKG_CONFIG_PATH="$libdir/pkgconfig"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
read -r -a flags <<<"$(pkg-config --cflags --libs xtgrad)"
median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg); $(g++ --version | head -n 1)"
printf '%-10s %16s %22s  %s\n' flags "compile+link (s)" "edit-compile-run (s)" "precompiled header"
for opt in "-O0" "-O0 -g" "-O1 -g"; do
  : >"$work/compile" && : >"$work/total"
  for _ in $(seq "$rounds"); do
    t0=$(date +%s%N)
    # shellcheck disable=SC2086  # the optimisation flags are meant to split
    g++ -std=c++20 $opt "$here/tests/install_consumer/learner.cpp" -o "$work/learner" "${flags[@]}" \
        -Wl,-rpath,"$libdir"
    t1=$(date +%s%N)
    "$work/learner" >/dev/null
    t2=$(date +%s%N)
    echo $(((t1 - t0) / 1000000)) >>"$work/compile"   # ms
    echo $(((t2 - t0) / 1000000)) >>"$work/total"
  done
  # shellcheck disable=SC2086
  used=$(g++ -std=c++20 $opt -H -fsyntax-only "$here/tests/install_consumer/learner.cpp" "${flags[@]}" 2>&1 |
         grep -c '^! .*xtgrad\.hpp\.gch' || true)
  printf '%-10s %16.2f %22.2f  %s\n' "$opt" "$(median <"$work/compile" | awk '{print $1 / 1000}')" \
    "$(median <"$work/total" | awk '{print $1 / 1000}')" "$([ "$used" -gt 0 ] && echo used || echo "not used")"
done
