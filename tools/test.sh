#!/usr/bin/env bash
# The whole test suite, from a fresh clone: install, build (warnings are errors), test,
# then build and test again under AddressSanitizer + UBSan. `.ci/run` runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${XTGRAD_JOBS:-2}  # compiles, suite processes and doc blocks at once
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "tools/test.sh: XTGRAD_JOBS must be a whole number >= 1, got '$jobs'" >&2; exit 2; }
# XTGRAD_ASAN_DIR (the sanitizer build's folder, kept): meson wipes and reconfigures it, so only a
# new or empty folder or a meson build folder, never a folder of other files
asan_keep=${XTGRAD_ASAN_DIR:-}
if [[ -n $asan_keep && -e $asan_keep ]] && ! [[ -d $asan_keep && ( -d $asan_keep/meson-private || -z $(ls -A "$asan_keep") ) ]]; then
  echo "tools/test.sh: XTGRAD_ASAN_DIR='$asan_keep' must be a new or empty folder or a meson build folder (it is wiped and configured for the sanitizers)" >&2
  exit 2
fi
# The fuzz phase's times (below), checked here too: libFuzzer takes 'x' or 0 as no limit (CI never ends)
for var in XTGRAD_FUZZ_SECONDS XTGRAD_FUZZ_NEW_SECONDS; do
  [[ -z ${!var:-} || ${!var} =~ ^[1-9][0-9]{0,6}$ ]] ||
    { echo "tools/test.sh: $var must be a whole number of seconds from 1 to 9999999, got '${!var}'" >&2; exit 2; }
done
bash tools/install_deps.sh
# Every script below runs Debian's python3, the one install_deps.sh installed (and its packages
# with it), not whatever `python3` a version manager puts first on PATH: pyenv's shim, a bash
# script that execs pyenv, took 0.37 s per start on the Zen 5 PVM guest against 0.03 s, and the
# examples' checks start python3 ~90 times (that phase: 164 -> 119 s). A folder that stays, as
# the build folders do: meson records the python3 it found there for build-ci's own commands.
mkdir -p build-ci-python
ln -sfn /usr/bin/python3 build-ci-python/python3
export PATH="$PWD/build-ci-python:$PATH"
bash tools/lint.sh

# Each phase's start, in seconds since the suite began (the CI time docs/architecture.md records).
stamp() { echo "[$(printf '%5d' "$SECONDS") s] $*"; }
total_passed=0
total_failed=0

# DIR's doctest suite on all $jobs cores, in ranges (tools/suite_ranges.sh), then counted
run_suite() {
  bash tools/suite_ranges.sh "$1" "$jobs"
  count_suite "$1"
}
# Adds the ranges' results in DIR (tools/suite_ranges.sh wrote them) to the totals. doctest's
# summary counts the cases outside a range as passed, so a range adds its size minus its failures;
# one that ends without a summary (a crash, a sanitizer abort) or with a nonzero status and no
# failure counted adds one failure.
count_suite() {
  local dir=$1 k first last n=0 ranges=0
  if ! [ -s "$dir/test.ranges" ]; then
    echo "the suite in $dir does not start"; total_failed=$((total_failed + 1)); return
  fi
  while read -r k first last; do
    local log="$dir/test.$k.log" size=$((last - first + 1)) failed
    n=$last ranges=$((ranges + 1))
    grep -E "ERROR|FATAL|runtime error|Sanitizer" "$log" | head -n 40 || true
    failed=$(sed -nE 's/.*test cases:.*\| *([0-9]+) failed.*/\1/p' "$log" 2>/dev/null || true)
    if [ -z "$failed" ]; then
      echo "range $k: no summary (log $log)"; tail -n 5 "$log" 2>/dev/null; total_failed=$((total_failed + 1)); continue
    fi
    [ "$(cat "$dir/test.$k.status")" -eq 0 ] || [ "$failed" -gt 0 ] || failed=1
    total_passed=$((total_passed + size - failed))
    total_failed=$((total_failed + failed))
  done <"$dir/test.ranges"
  echo "$n test cases in $ranges ranges, $jobs at a time: $(grep -l "Status: SUCCESS" "$dir"/test.*.log | wc -l) ranges passed"
}

# configure DIR (meson options after it) with warnings as errors
configure() {
  local dir=$1; shift
  meson setup "$dir" "$@" -Dwerror=true --wipe >/dev/null 2>&1 || meson setup "$dir" "$@" -Dwerror=true >/dev/null
}
# DIR's doctest suite and the parity tool; adds to the totals
test_build() {
  local dir=$1
  stamp "== tests ($dir)"
  run_suite "$dir"
  stamp "== parity tool on the committed fixtures ($dir)"
  if ! "$dir/tools/parity" --all tests/fixtures/small --quiet; then total_failed=$((total_failed + 1)); fi
}

stamp "== build build-ci (--buildtype=release)"
configure build-ci --buildtype=release
t0=$SECONDS
ninja -C build-ci -j "$jobs"
stamp "== built build-ci in $((SECONDS - t0)) s"
test_build build-ci
# The other GEMM backend, chosen at run time (gemm/gemm_backend.hpp): the suite and the parity
# tool again with every product on OpenBLAS (tests/gemm_test.cpp checks it against a double
# reference). The suite also takes the other allocator there: the block cache the other way from
# this machine's default (measured at run time, autograd/page_moves.hpp), so the cache's own tests
# and the heap's both run on every machine.
other_cache=$(build-ci/bench/xtgrad_bench --list-switches | awk '$1 == "XTGRAD_BLOCK_CACHE" { print ($2 == "on") ? 0 : 1 }')
[ -n "$other_cache" ] || { echo "xtgrad_bench --list-switches names no XTGRAD_BLOCK_CACHE"; exit 1; }
stamp "== tests (build-ci, XTGRAD_GEMM_BACKEND=openblas, XTGRAD_BLOCK_CACHE=$other_cache)"
export XTGRAD_GEMM_BACKEND=openblas
XTGRAD_BLOCK_CACHE=$other_cache run_suite build-ci
stamp "== parity tool on the committed fixtures (build-ci, XTGRAD_GEMM_BACKEND=openblas)"
if ! build-ci/tools/parity --all tests/fixtures/small --quiet; then total_failed=$((total_failed + 1)); fi
unset XTGRAD_GEMM_BACKEND
# The sanitizer build compiles from here on in the background, at the lowest priority (nice 19),
# and then runs its suite and the parity tool there: the phases below leave a core idle for minutes
# (the examples, the install consumers and the browser run one process at a time), and the build
# and its suite take that time instead of adding their own minutes at the end; a foreground process
# loses ~1.5 % of a core to them. Its results are counted at the end. It is
# out of tree (a folder outside the checkout), as users build: the suite must pass whatever the
# build folder (recorded source locations are relative to the project). A fresh folder each run
# (removed afterwards if all passed) unless XTGRAD_ASAN_DIR names one to keep. Only what runs is built (the
# library, the suite, the parity tool): the release build compiled the rest with warnings as
# errors, and building it again here took as long as the rest together (265 against 250 s).
asan_dir="${XTGRAD_ASAN_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/xtgrad-ci-asan.XXXXXX")}"
# Line tables only (-g1 after the debug build's -g): a sanitizer's report needs file and line,
# and the full debug info cost 8 % more compile time. Unity groups of 12 files, not the default 6:
# at -O0 under the sanitizers a group's time is mostly the headers it parses and the templates it
# instantiates, shared by its files (two groups of 6 joined: 31.0 -> 23.1 s of CPU). Each group of
# 12 is two of the default's joined, so a name two files both define fails here as it would there.
# Compiled by Clang 14 (installed for the fuzz targets), not GCC 12: at -O0 under the sanitizers it
# compiles the library, the suite and the parity tool in 320 s of CPU against GCC's 758 s (the Zen 5
# PVM guest, no ccache), and the suite then runs 1.1x as long (211 against 184 s of CPU). The release
# build above is GCC's, so both compilers build the library with warnings as errors. Clang's UBSan
# also checks pointer arithmetic on null, which GCC's does not.
asan_options=(--buildtype=debug -Db_sanitize=address,undefined -Db_lundef=false -Dcpp_args=-g1 -Dunity_size=12)
stamp "== build $asan_dir (clang++-14, ${asan_options[*]}), in the background at nice 19"
CC=clang-14 CXX=clang++-14 configure "$asan_dir" "${asan_options[@]}"
asan_log="$asan_dir/ci-build.log"
rm -f "$asan_dir/ci-built-at" "$asan_dir/ci-parity.status"
# Its own session (setsid), so an interrupted run kills the whole group: no ninja, compiler or
# suite process is left behind. A new session is also a new autogroup where the kernel has them
# (/proc/sys/kernel/sched_autogroup_enabled): groups share the CPU as equals whatever their
# processes' nice, so the group itself is set to nice 19 as well (without it the phases beside it
# slowed: the OpenBLAS build 123 -> 277 s). The build's end, then the parity tool's status, go to files.
setsid nice -n 19 bash -c '{ echo 19 >"/proc/$$/autogroup"; } 2>/dev/null || true
  ninja -C "$1" -j "$2" tests/xtgrad_tests tools/parity >"$1/ci-build.log" 2>&1 || exit 1
  date +%s >"$1/ci-built-at"
  export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
  bash tools/suite_ranges.sh "$1" "$2"
  "$1/tools/parity" --all tests/fixtures/small --quiet >"$1/ci-parity.log" 2>&1
  echo $? >"$1/ci-parity.status"' bash "$asan_dir" "$jobs" &
asan_pid=$!
asan_start=$SECONDS
trap 'kill -- -"$asan_pid" 2>/dev/null || true' EXIT
# A build without oneDNN (meson option gemm=openblas, for machines that lack it) compiles, links
# and runs: its library and the parity tool (the suite ran on OpenBLAS just above).
# Unity groups of 12, as the sanitizer build's (the release build above compiled the default's):
# 285 -> 244 s of CPU alone on the Zen 5 PVM guest. At -O1: the release build above compiled every
# file at -O3 with warnings as errors but gemm_backend.cpp's few lines for a build without oneDNN,
# and the parity tool takes 0.3 s either way; 244 -> 188 s of CPU (the Zen 5 PVM guest, no ccache).
openblas_options=(--buildtype=release -Doptimization=1 -Dgemm=openblas -Dunity_size=12)
stamp "== build build-ci-openblas (${openblas_options[*]}: the library and the parity tool)"
configure build-ci-openblas "${openblas_options[@]}"
t0=$SECONDS
ninja -C build-ci-openblas -j "$jobs" tools/parity
stamp "== built build-ci-openblas in $((SECONDS - t0)) s; parity tool on the committed fixtures"
if ! build-ci-openblas/tools/parity --all tests/fixtures/small --quiet; then total_failed=$((total_failed + 1)); fi
stamp "== meson install, then a user's program built with pkg-config and with CMake (two -march, g++ and clang++), and a data-parallel one under mpirun (build-ci)"
prefix="$PWD/build-ci/prefix"
rm -rf "$prefix"
meson configure build-ci -Dprefix="$prefix" >/dev/null && meson install -C build-ci --quiet >/dev/null
if bash tests/install_consumer/run.sh "$prefix" build-ci/consumer; then
  total_passed=$((total_passed + 1))
else
  echo "install consumer FAILED"; total_failed=$((total_failed + 1))
fi
# The exercises (exercises/README.md): the solutions pass, and as shipped each exercise fails
# with its expected message; in tree, then a copy built against the install with its Makefile.
stamp "== exercises, in tree and against the install (build-ci)"
if bash exercises/check.sh build-ci/exercises/exercises_solved build-ci/exercises/exercises &&
   bash exercises/check_installed.sh "$prefix" build-ci/exercises-installed; then
  total_passed=$((total_passed + 1))
else
  echo "exercises FAILED"; total_failed=$((total_failed + 1))
fi
stamp "== examples (build-ci)"
if bash tests/run_examples.sh build-ci; then total_passed=$((total_passed + 1)); else total_failed=$((total_failed + 1)); fi
# Data-parallel training (docs/distributed.md): 2 processes under mpirun match 1 process; a
# rank that dies or stops fails the job with an error instead of a hang; the examples' MPI mode.
stamp "== data-parallel over MPI, 2 processes on localhost (build-ci)"
if bash tests/distributed/run_mpi_test.sh build-ci; then total_passed=$((total_passed + 1)); else total_failed=$((total_failed + 1)); fi
# ZeroRedundancyOptimizer: plain DDP's losses on 2 and 3 processes, checkpoints saved by N
# processes resume on M, each process holds ~1/N of Adam's state.
stamp "== sharded optimizer (ZeRO-1) over MPI, 2 and 3 processes on localhost (build-ci)"
if bash tests/distributed/run_zero_test.sh build-ci; then total_passed=$((total_passed + 1)); else total_failed=$((total_failed + 1)); fi
# Two network namespaces joined by a veth pair as two hosts, OpenMPI over TCP only: the losses
# of one process, and the bytes on the wire per step against the cost model. Needs root (skips
# with a message where namespaces are not allowed).
stamp "== data-parallel across two network namespaces over TCP (build-ci)"
if bash tests/distributed/run_netns_test.sh build-ci; then total_passed=$((total_passed + 1)); else total_failed=$((total_failed + 1)); fi
# The run report page (docs/report.md) in headless Chromium: a short real run's page loads from
# disk with no console error and no request, its curves, selectors and graph work; a 10,000-step
# page loads in < 2 s. Debian's python3, whose packages (python3-selenium) apt installed.
stamp "== report page in headless Chromium (build-ci)"
if /usr/bin/python3 tests/report/browser_test.py build-ci; then total_passed=$((total_passed + 1)); else total_failed=$((total_failed + 1)); fi
# The learning tools on the release (-O3) build: gdb follows a gradient with the pretty-printers,
# and the commands of docs/debugging.md run (the graph example renders with Graphviz).
stamp "== gdb test (build-ci)"
if bash tests/gdb/run_gdb_test.sh build-ci; then total_passed=$((total_passed + 1)); else total_failed=$((total_failed + 1)); fi
stamp "== docs/debugging.md commands (build-ci)"
if bash tests/debug/run_doc_commands.sh build-ci; then total_passed=$((total_passed + 1)); else total_failed=$((total_failed + 1)); fi
# Every command block of README.md, docs/**/*.md and exercises/README.md runs, or its comment says what runs it
# (docs/architecture.md, "Docs that stay true"); blocks that need python3-torch are skipped without it.
stamp "== README.md, docs/**/*.md and exercises/README.md command blocks (build-ci)"
if python3 tests/docs/run_doc_blocks.py build-ci; then total_passed=$((total_passed + 1)); else total_failed=$((total_failed + 1)); fi
# The loaders against hostile files: each libFuzzer target (clang 14, ASan + UBSan) runs for a
# fixed time from the seeds xtgrad's writers make (docs/reliability.md says how to run longer):
# the safetensors and npy loaders 45 s each; the writers' round trip, load_run (run-checkpoint
# metadata and optimizer state, linked against build-ci's library), report_compare's inputs
# (a downloaded JSON, a report.html), the programs' command line and a parity fixture's meta.json
# 25 s each.
fuzz_seconds=${XTGRAD_FUZZ_SECONDS:-45}
fuzz_new_seconds=${XTGRAD_FUZZ_NEW_SECONDS:-25}
stamp "== libFuzzer targets, ${fuzz_seconds} s / ${fuzz_new_seconds} s each (build-ci/fuzz)"
# Each target is one process: two run at a time, one per core (the pairs take equal times); the
# last alone, beside the sanitizer build.
fuzz_targets=7
if bash fuzz/build.sh build-ci/fuzz build-ci >build-ci/fuzz-build.log 2>&1; then
  for pair in "safetensors npy $fuzz_seconds" "writers run_checkpoint $fuzz_new_seconds" \
              "report_compare command_line $fuzz_new_seconds" "fixture_meta - $fuzz_new_seconds"; do
    read -r first second seconds <<<"$pair"
    bash fuzz/run.sh build-ci/fuzz "$first" "$seconds" & first_pid=$!
    second_status=0
    if [ "$second" != - ]; then bash fuzz/run.sh build-ci/fuzz "$second" "$seconds" || second_status=$?; fi
    first_status=0; wait "$first_pid" || first_status=$?
    statuses=("$first_status")
    [ "$second" = - ] || statuses+=("$second_status")
    for status in "${statuses[@]}"; do
      if [ "$status" -eq 0 ]; then total_passed=$((total_passed + 1)); else total_failed=$((total_failed + 1)); fi
    done
  done
else
  tail -n 20 build-ci/fuzz-build.log; echo "fuzz build FAILED"; total_failed=$((total_failed + fuzz_targets))
fi
stamp "== waiting for the sanitizer build, its suite and parity tool ($asan_dir, started at $asan_start s)"
if ! wait "$asan_pid"; then
  tail -n 40 "$asan_log"; echo "sanitizer build FAILED (log $asan_log)"; exit 1
fi
trap - EXIT
built_at=$(($(cat "$asan_dir/ci-built-at") - $(date +%s) + SECONDS))
stamp "== built $asan_dir in the background from $asan_start to $built_at s; its suite and parity tool ran after it"
stamp "== tests ($asan_dir)"
count_suite "$asan_dir"
stamp "== parity tool on the committed fixtures ($asan_dir)"
if [ "$(cat "$asan_dir/ci-parity.status")" -ne 0 ]; then
  tail -n 20 "$asan_dir/ci-parity.log"; total_failed=$((total_failed + 1))
fi
# kept when anything failed: the ranges' full logs (test.K.log) are the sanitizers' reports
if [ "$total_failed" -gt 0 ]; then
  echo "the sanitizer build and its logs are kept in $asan_dir"
elif [ -z "${XTGRAD_ASAN_DIR:-}" ]; then
  rm -rf "$asan_dir"
fi

stamp "== done"
echo "$total_passed passed, $total_failed failed"
[ "$total_failed" -eq 0 ]
