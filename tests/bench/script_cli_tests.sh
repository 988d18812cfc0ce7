#!/usr/bin/env bash
# The benchmark scripts: bench/run.sh (--table, its argument checks, the OpenBLAS kernel it asks
# for), bench/pin_cpu.sh and bench/compare_builds.sh --args, on fake runs where a real one would take
# minutes. Run by tests/run_examples.sh.
#   tests/bench/script_cli_tests.sh BUILD_DIR
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=../cli_test_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../cli_test_lib.sh" "$@"

echo "== bench/run.sh --table: each ratio uses torch's faster OpenBLAS setting and names its kernel"
# Two torch runs of one config (OpenBLAS pinned to Haswell, and its own Cooperlake detection)
# that each win one phase, an xtgrad fp32 run and an autocast run.
cat > "$out/bench.jsonl" <<'JSON'
{"framework":"xtgrad","config":"seed-d","threads":1,"batch":null,"autocast":null,"peak_rss_mib":700,"step_cpu_ms":100,"phases":{"fwd":{"median_ms":40,"gflops":null},"bwd":{"median_ms":60,"gflops":null}}}
{"framework":"torch","config":"seed-d","threads":1,"batch":null,"autocast":null,"openblas_env":"pinned","openblas_core":"Haswell","peak_rss_mib":900,"step_cpu_ms":200,"phases":{"fwd":{"median_ms":80,"gflops":null},"bwd":{"median_ms":100,"gflops":null}}}
{"framework":"torch","config":"seed-d","threads":1,"batch":null,"autocast":null,"openblas_env":"own detection","openblas_core":"Cooperlake","peak_rss_mib":900,"step_cpu_ms":150,"phases":{"fwd":{"median_ms":50,"gflops":null},"bwd":{"median_ms":120,"gflops":null}}}
{"framework":"xtgrad","config":"seed-d","threads":1,"batch":null,"autocast":"bf16","bf16_speed":"slower","peak_rss_mib":700,"step_cpu_ms":60,"phases":{"fwd":{"median_ms":30,"gflops":null},"bwd":{"median_ms":30,"gflops":null}}}
{"framework":"torch","config":"seed-d","threads":1,"batch":null,"autocast":"bf16","openblas_env":"pinned","openblas_core":"Haswell","peak_rss_mib":900,"step_cpu_ms":100,"phases":{"fwd":{"median_ms":40,"gflops":null},"bwd":{"median_ms":60,"gflops":null}}}
JSON
expect 0 "bench/run.sh --table" bash "$src/bench/run.sh" --table "$out/bench.jsonl"
says "| fwd | 40.0 | 50.0 | 0.80 | Haswell (pinned) 80.0 / **Cooperlake 50.0** |"
says "| bwd | 60.0 | 100.0 | 0.60 | **Haswell (pinned) 100.0** / Cooperlake 120.0 |"
says "| seed-d, autocast bf16 | 1 | fwd | 30.0 | 40.0 | 0.75 | Haswell (pinned) | - | - | - | 0.75 |"
says "xtgrad (seed-d) ran with --allow-slower-bf16 to measure by how much"
# --rounds: three xtgrad runs of one config (fwd 40, 90, 45 ms) read as their median run, 45 ms;
# torch's Cooperlake runs (fwd 50, 30, 70) as theirs, 50 ms, not its luckiest round's 30
{ cat "$out/bench.jsonl"
  for fwd in 90 45; do
    echo '{"framework":"xtgrad","config":"seed-d","threads":1,"batch":null,"autocast":null,"peak_rss_mib":700,"step_cpu_ms":100,"phases":{"fwd":{"median_ms":'$fwd',"gflops":null},"bwd":{"median_ms":60,"gflops":null}}}'
  done
  for fwd in 30 70; do
    echo '{"framework":"torch","config":"seed-d","threads":1,"batch":null,"autocast":null,"openblas_env":"own detection","openblas_core":"Cooperlake","peak_rss_mib":900,"step_cpu_ms":150,"phases":{"fwd":{"median_ms":'$fwd',"gflops":null},"bwd":{"median_ms":120,"gflops":null}}}'
  done; } > "$out/rounds.jsonl"
expect 0 "bench/run.sh --table with three rounds" bash "$src/bench/run.sh" --table "$out/rounds.jsonl"
says "| fwd | 45.0 | 50.0 | 0.90 | Haswell (pinned) 80.0 / **Cooperlake 50.0** / Cooperlake 30.0 / Cooperlake 70.0 |"
# glibc's heap kept (MALLOC_MMAP_THRESHOLD_, bench/run.sh's kept_heap) is one more torch setting: the
# ratio reads the faster, the peak RSS torch's lower (the kept heap holds more)
cat > "$out/heap.jsonl" <<'JSON'
{"framework":"xtgrad","config":"seed-d","threads":1,"batch":null,"autocast":null,"peak_rss_mib":700,"step_cpu_ms":100,"phases":{"fwd":{"median_ms":40,"gflops":null}}}
{"framework":"torch","config":"seed-d","threads":1,"batch":null,"autocast":null,"openblas_env":"pinned","openblas_core":"Haswell","glibc_heap":"default","peak_rss_mib":900,"step_cpu_ms":200,"phases":{"fwd":{"median_ms":80,"gflops":null}}}
{"framework":"torch","config":"seed-d","threads":1,"batch":null,"autocast":null,"openblas_env":"pinned","openblas_core":"Haswell","glibc_heap":"kept","peak_rss_mib":950,"step_cpu_ms":150,"phases":{"fwd":{"median_ms":50,"gflops":null}}}
JSON
expect 0 "bench/run.sh --table with torch's heap kept" bash "$src/bench/run.sh" --table "$out/heap.jsonl"
says "| fwd | 40.0 | 50.0 | 0.80 | Haswell (pinned) 80.0 / **Haswell (pinned), heap kept 50.0** |"
says "| 700 / 900 | 100 / 150 |"
for bad_count in 0 -1 2x "" 1001 18446744073709551617; do
  expect 2 "bench/run.sh --rounds '$bad_count'" bash "$src/bench/run.sh" --configs winter --rounds "$bad_count"
  says "run.sh: --rounds must be a whole number from 1 to 1000, got '$bad_count'"
done
expect 2 "bench/run.sh --rounds with no value" bash "$src/bench/run.sh" --rounds
says "--rounds needs a value"
expect 2 "bench/run.sh --autocast fp16 (only bf16)" bash "$src/bench/run.sh" --autocast fp16
says "--autocast takes bf16"
expect 2 "bench/run.sh --seed-b-batch 0" bash "$src/bench/run.sh" --configs seed-b --seed-b-batch 0
says "run.sh: --seed-b-batch must be a whole number from 1 to 1000, got '0'"
# a batch for runs that have no seed-b would change nothing: refused, not ignored
expect 2 "bench/run.sh --seed-b-batch without seed-b" bash "$src/bench/run.sh" --configs winter --seed-b-batch 16
says "run.sh: --seed-b-batch sets the batch of the benchmark's seed-b runs; with --configs 'winter' it would change nothing"
expect 2 "bench/run.sh --seed-b-batch with --quick" bash "$src/bench/run.sh" --quick --seed-b-batch 16
says "run.sh: --quick runs seed-b at batch 8; --seed-b-batch would change nothing (give one of them)"
expect 2 "bench/run.sh --seed-b-batch with --compare-switches" bash "$src/bench/run.sh" --compare-switches --seed-b-batch 16
says "and --compare-switches (its seed-b runs are seed-b:2:16 and seed-b:2:64) it would change nothing"
expect 2 "bench/run.sh --seed-b-batch with --table" bash "$src/bench/run.sh" --seed-b-batch 16 --table "$out/bench.jsonl"
says "run.sh: --table prints a run's table again; --seed-b-batch would change nothing"
# --help from any folder (it read the script by a path relative to where it was started), and a lost help is exit 1
expect 0 "bench/run.sh --help from bench/" bash -c "cd '$src/bench' && bash run.sh --help"
says "shows the phases' GFLOP/s as a fraction of that peak."
expect 1 "bench/run.sh --help into a full device" bash -c "bash '$src/bench/run.sh' --help >/dev/full"
says "run.sh: could not write the help to the standard output"
# one file holding seed-b at two batches: a row per batch, each with its own numbers (both were one row, labelled by the first)
cat "$src/bench/results/2026-12-05-amd-f26-m2-run-seedb.jsonl" "$src/bench/results/2026-12-05-amd-f26-m2-run-seedb16.jsonl" >"$out/two_batches.jsonl"
expect 0 "bench/run.sh --table of seed-b at two batches" bash "$src/bench/run.sh" --table "$out/two_batches.jsonl"
says "| seed-b (batch 64) | 2 | step | 5942.2 | 10067.5 | 0.59 |"
says "| seed-b (batch 16) | 2 | step | 1429.5 | 2280.3 | 0.63 |"
expect 0 "bench/run.sh --help" bash "$src/bench/run.sh" --help
says "--seed-b-batch 16"
says "shows the phases' GFLOP/s as a fraction of that peak."
# every argument checked before the ceiling's minute and the configs' runs (it failed only when
# xtgrad_bench refused an unknown config, after the ceiling; a fifo as --out blocked the run)
expect 2 "bench/run.sh --configs with an unknown config" bash "$src/bench/run.sh" --configs "winter seed-x"
says "unknown config 'seed-x' in --configs"
mkfifo "$out/results.fifo"
expect 2 "bench/run.sh --out a fifo" bash "$src/bench/run.sh" --configs winter --out "$out/results.fifo"
says "exists and is not a regular file"
expect 2 "bench/run.sh --build with no value" bash "$src/bench/run.sh" --build
says "--build needs a value"
expect 2 "bench/run.sh --build a folder that is no build" bash "$src/bench/run.sh" --build "$out"
says "is not a meson build folder"
expect 2 "bench/run.sh --table a missing file" bash "$src/bench/run.sh" --table "$out/missing.jsonl"
says "is not a readable file"
printf '{"framework":"xtgrad"\n' > "$out/cut.jsonl"
expect 2 "bench/run.sh --table a line cut short" bash "$src/bench/run.sh" --table "$out/cut.jsonl"
says "line 1 of $out/cut.jsonl is not a JSON object"
printf '{"a":1}\n' > "$out/other.jsonl"
expect 2 "bench/run.sh --table a JSON line of another shape" bash "$src/bench/run.sh" --table "$out/other.jsonl"
says "holds a line that is no benchmark result (KeyError: 'framework')"

echo "== bench/run.sh: OpenBLAS asked for an AVX-512 kernel where its own detection fell back to an older one"
# A fake torch run that prints the kernel OpenBLAS would report: OPENBLAS_CORETYPE's, else what
# a newer AVX-512 CPU gets from OpenBLAS 0.3.21's own detection (Prescott).
cat > "$out/fake_torch.sh" <<'SH'
echo "{\"framework\":\"torch\",\"openblas_env\":\"x\",\"openblas_core\":\"${OPENBLAS_CORETYPE:-Prescott}\"}"
SH
printf 'flags\t\t: fpu sse avx2 avx512f avx512_bf16\n' > "$out/cpuinfo_bf16"
printf 'flags\t\t: fpu sse avx2 avx512f\n' > "$out/cpuinfo_512"
printf 'flags\t\t: fpu sse avx2\n' > "$out/cpuinfo_avx2"
# shellcheck source=/dev/null
(
  source "$src/bench/run.sh"
  sub_fail=0  # bad() in this subshell cannot set the script's fail: the exit status carries it
  check() { if [[ "$2" == "$3" ]]; then ok "$1: '$2'"; else echo "  FAIL $1: '$2', expected '$3'"; sub_fail=1; fi; }
  check "avx512_kernel_to_name Prescott on an AVX512-BF16 CPU" "$(avx512_kernel_to_name "Prescott" "$out/cpuinfo_bf16")" Cooperlake
  check "... on an AVX-512 CPU without BF16" "$(avx512_kernel_to_name "Prescott Haswell" "$out/cpuinfo_512")" SkylakeX
  check "... where a run had SkylakeX" "$(avx512_kernel_to_name "Haswell SkylakeX" "$out/cpuinfo_bf16")" ""
  check "... on an AVX2 CPU" "$(avx512_kernel_to_name "Haswell" "$out/cpuinfo_avx2")" ""
  check "openblas_kernels_in" "$(openblas_kernels_in '{"openblas_core":"Haswell"}
{"gemm_backend":"openblas","gemm_kernel":"Cooperlake"}
{"gemm_backend":"onednn","gemm_kernel":"avx512_core_bf16"}')" "Haswell Cooperlake "
  if grep -qw avx512f /proc/cpuinfo; then
    check "both_openblas_ways on this AVX-512 CPU, OpenBLAS left to itself" \
      "$(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE bash -c "source '$src/bench/run.sh'; both_openblas_ways bash '$out/fake_torch.sh'" 2>/dev/null | grep -o '"openblas_core":"[A-Za-z]*"' | tr '\n' ' ')" \
      "\"openblas_core\":\"Prescott\" \"openblas_core\":\"$(grep -qw avx512_bf16 /proc/cpuinfo && echo Cooperlake || echo SkylakeX)\" "
  fi
  check "both_openblas_ways pinned to SkylakeX: no third run" \
    "$(OPENBLAS_CORETYPE=SkylakeX bash -c "source '$src/bench/run.sh'; both_openblas_ways bash '$out/fake_torch.sh'" 2>/dev/null | grep -o '"openblas_core":"[A-Za-z]*"' | tr '\n' ' ')" \
    "\"openblas_core\":\"SkylakeX\" \"openblas_core\":\"Prescott\" "
  exit "$sub_fail"
) || bad "bench/run.sh's OpenBLAS kernel choice (above)"

echo "== bench/pin_cpu.sh: one-thread rounds pinned, both sides to one CPU, the rounds to each CPU in turn"
# shellcheck source=/dev/null
(
  source "$src/bench/pin_cpu.sh"
  sub_fail=0
  check() { if [[ "$2" == "$3" ]]; then ok "$1: '$2'"; else echo "  FAIL $1: '$2', expected '$3'"; sub_fail=1; fi; }
  mapfile -t mine < <(/usr/bin/python3 -c 'import os; print(*sorted(os.sched_getaffinity(0)), sep="\n")')
  check "cpu_of_round on 2 threads: unpinned" "$(cpu_of_round 2 1)" ""
  if ((${#mine[@]} > 1)); then
    check "cpu_of_round 1 thread, round 1: the first CPU" "$(cpu_of_round 1 1)" "${mine[0]}"
    check "... round 2: the next" "$(cpu_of_round 1 2)" "${mine[1]}"
    check "... round ${#mine[@]} + 1: the first again" "$(cpu_of_round 1 $((${#mine[@]} + 1)))" "${mine[0]}"
  fi
  check "cpu_of_round where the process may use one CPU only: unpinned" \
    "$(taskset -c "${mine[0]}" bash -c "source '$src/bench/pin_cpu.sh'; cpu_of_round 1 2")" ""
  check "pin_round 1 thread, round 1: the command prefix" "$(pin_round 1 1; echo "${pin[*]}")" \
    "$( ((${#mine[@]} > 1)) && echo "taskset -c ${mine[0]}")"
  check "pin_round 2 threads: no prefix, nothing stamped" "$(pin_round 2 1; echo "${pin[*]}|$XTGRAD_BENCH_PINNED_CPU")" "|"
  check "results.py stamp records the CPU pinned to" \
    "$(echo '{"framework": "xtgrad"}' | XTGRAD_BENCH_PINNED_CPU=1 python3 "$src/bench/results.py" stamp | grep -o '"pinned_cpu": [0-9]*')" '"pinned_cpu": 1'
  check "... and nothing for a value that is no CPU number" \
    "$(echo '{"framework": "xtgrad"}' | XTGRAD_BENCH_PINNED_CPU=x1 python3 "$src/bench/results.py" stamp | grep -c pinned_cpu)" 0
  exit "$sub_fail"
) || bad "bench/pin_cpu.sh (above)"

echo "== bench/compare_builds.sh --args: options for every xtgrad_bench run of both sides"
# One build as both sides, one 1-step round: the table has no opt phase (the step ran in backward).
# Two full-size Winter models' first steps (~6 s on a quiet machine): 60 s, as the bench runs above.
EXPECT_LIMIT=60 expect 0 "bench/compare_builds.sh --args '--optimizer-in-backward ...'" bash "$src/bench/compare_builds.sh" \
  --before "$build" --after "$build" --runs winter:1 --rounds 1 --args "--optimizer-in-backward --steps 1 --warmup 0 --no-infer"
says "| winter:1 | step |"
if grep -qF "| opt |" "$out/last.log"; then bad "  ...has an opt phase: --args did not reach xtgrad_bench"; else ok "  ...no opt phase"; fi
expect 2 "bench/compare_builds.sh --args with an option xtgrad_bench does not take" bash "$src/bench/compare_builds.sh" \
  --before "$build" --after "$build" --runs winter:1 --rounds 1 --args "--bogus"
says "--bogus"
# every run entry and --out checked before the first run
for runs in "winter:1 seed-x:2" "winter:257" "seed-b:2:0" "winter"; do
  expect 2 "bench/compare_builds.sh --runs '$runs'" bash "$src/bench/compare_builds.sh" --before "$build" --after "$build" --runs "$runs"
  says "is not config:threads[:batch]"
done
[ -p "$out/results.fifo" ] || mkfifo "$out/results.fifo"
expect 2 "bench/compare_builds.sh --out a fifo" bash "$src/bench/compare_builds.sh" --before "$build" --after "$build" \
  --runs winter:1 --out "$out/results.fifo"
says "exists and is not a regular file"
expect 2 "bench/compare_builds.sh --rounds with no value" bash "$src/bench/compare_builds.sh" --before "$build" --after "$build" --rounds
says "--rounds needs a value"
# --before-env / --after-env: one build, two settings (the GEMM backend's measured so: docs/performance.md)
EXPECT_LIMIT=60 expect 0 "bench/compare_builds.sh --before-env / --after-env on one build" bash "$src/bench/compare_builds.sh" \
  --before "$build" --after "$build" --runs winter:1 --rounds 1 --args "--steps 1 --warmup 0 --no-infer" \
  --before-env XTGRAD_SMALL_GEMM=1 --after-env XTGRAD_SMALL_GEMM=0
says "| winter:1 | step |"
for env_word in "XTGRAD_SMALL_GEMM=0 XTGRAD_ISA=baseline" "no-equals-sign" "1X=2"; do
  expect 2 "bench/compare_builds.sh --before-env '$env_word'" bash "$src/bench/compare_builds.sh" --before "$build" \
    --after "$build" --runs winter:1 --before-env "$env_word"
  says "take one VAR=VALUE without spaces"
done
expect 2 "bench/compare_builds.sh --after-env with no value" bash "$src/bench/compare_builds.sh" --before "$build" --after "$build" --after-env
says "--after-env needs a value"

exit $fail
