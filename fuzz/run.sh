#!/usr/bin/env bash
# Runs one fuzz target built by fuzz/build.sh for a fixed time, from its seeds plus the corpus
# it grew in earlier runs (OUT_DIR/corpus/TARGET). Exits 1 if libFuzzer found a crash, a
# sanitizer report, an uncaught exception, a leak or a hang (the reproducer is written to
# OUT_DIR/findings/), 0 otherwise; the last line gives the executions.
#   fuzz/run.sh OUT_DIR TARGET SECONDS      TARGET: safetensors | npy | writers | run_checkpoint | report_compare
#                                                   | fixture_meta | command_line
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 3 ] || { echo "usage: fuzz/run.sh OUT_DIR TARGET SECONDS" >&2; exit 2; }
out=$1 target=$2 seconds=$3
# libFuzzer reads -max_total_time=x as 0, and 0 is no limit: a run that never ends
[[ $seconds =~ ^[1-9][0-9]{0,6}$ ]] || { echo "fuzz/run.sh: SECONDS must be a whole number from 1 to 9999999, got '$seconds'" >&2; exit 2; }
case $target in safetensors | npy | writers | run_checkpoint | report_compare | fixture_meta | command_line) ;; *)
  echo "fuzz/run.sh: TARGET must be safetensors, npy, writers, run_checkpoint, report_compare, fixture_meta or command_line, got '$target'" >&2; exit 2 ;;
esac
mkdir -p "$out/corpus/$target" "$out/findings"
dict=()
[ -f "fuzz/$target.dict" ] && dict=(-dict="fuzz/$target.dict")
log="$out/$target.log" status=0
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  "$out/${target}_fuzzer" "$out/corpus/$target" "$out/seeds/$target" "${dict[@]}" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="$out/findings/$target-" >"$log" 2>&1 || status=$?
execs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+)/\1/p' "$log" | tail -n 1)
if [ "$status" -ne 0 ]; then
  grep -E "ERROR|runtime error|terminate|deadly signal|Test unit written" "$log" | head -n 20 || true
  echo "fuzz $target: FAILED after ${execs:-?} executions (exit $status; log $log)"
  exit 1
fi
echo "fuzz $target: ${execs:-?} executions in $seconds s, no crash"
