#!/usr/bin/env bash
# The project's own tools: tools/compare_losses.py, and the test scripts' job counts and fuzz times
# (tools/test.sh, tools/quickstart.sh, fuzz/build.sh, fuzz/run.sh, tests/docs/run_doc_blocks.py).
# Run by tests/run_examples.sh.
#   tests/tools/cli_tests.sh BUILD_DIR
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=../cli_test_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../cli_test_lib.sh" "$@"

echo "== tools/compare_losses.py: two logs' losses, step by step"
printf 'Epoch: 1, Loss: 8.6751\nEpoch: 2, Loss: 7.5\n' > "$out/torch.log"
printf 'Epoch: 1, Loss: 8.67512\nEpoch: 2, Loss: 7.50004\n' > "$out/close.log"
printf 'Epoch: 1, Loss: 8.6751\nEpoch: 2, Loss: nan\n' > "$out/diverged.log"
expect 0 "compare_losses: within the tolerance and the print's rounding" python3 "$src/tools/compare_losses.py" "$out/torch.log" "$out/close.log"
says "2 of 2 steps within 0.0001"
# a diverged run's nan was not read as a loss: "holds 1 losses" instead of a mismatch at its step
expect 1 "compare_losses: a nan loss is a mismatch at its step" python3 "$src/tools/compare_losses.py" "$out/torch.log" "$out/diverged.log"
says "xtgrad nan"
expect 2 "compare_losses: a missing log (a traceback)" python3 "$src/tools/compare_losses.py" "$out/torch.log" "$out/missing.log"
says "cannot read $out/missing.log"
for tol in nan -1; do  # every step was a MISMATCH, exit 1
  expect 2 "compare_losses --tol $tol" python3 "$src/tools/compare_losses.py" "$out/torch.log" "$out/close.log" --tol "$tol"
  says "--tol must be a finite number >= 0"
done

echo "== the test tools' job count and fuzz times: XTGRAD_JOBS (test.sh, quickstart.sh, fuzz/build.sh), XTGRAD_FUZZ_*SECONDS, run_doc_blocks.py --jobs, fuzz/run.sh"
# tools/test.sh checks it first, before installing or building anything
for jobs in x 0 -2; do
  expect 2 "tools/test.sh with XTGRAD_JOBS=$jobs" env XTGRAD_JOBS="$jobs" bash "$src/tools/test.sh"
  says "XTGRAD_JOBS must be a whole number >= 1, got '$jobs'"
done
# tools/quickstart.sh's limit, checked before it installs or builds anything
for jobs in "XTGRAD_JOBS=x" "XTGRAD_JOBS=0" "--jobs -2" "--jobs=1.5" "-j 10000"; do
  case $jobs in XTGRAD_JOBS=*) expect 2 "quickstart.sh with $jobs" env "$jobs" bash "$src/tools/quickstart.sh"; from=XTGRAD_JOBS ;;
                --jobs=*) expect 2 "quickstart.sh $jobs" bash "$src/tools/quickstart.sh" "$jobs"; from=--jobs ;;
                *) read -r from value <<<"$jobs"; expect 2 "quickstart.sh $jobs" bash "$src/tools/quickstart.sh" "$from" "$value" ;;
  esac
  v=${jobs#*[= ]}; says "quickstart: $from must be a whole number from 1 to 9999, got '$v'"
  trained_nothing
done
expect 2 "quickstart.sh --jobs with no number" bash "$src/tools/quickstart.sh" --jobs
says "quickstart: --jobs needs a number, e.g. --jobs 2"
# the fuzz phase's seconds: libFuzzer took 'x' and 0 as no limit (a CI run that never ends)
for v in XTGRAD_FUZZ_SECONDS=x XTGRAD_FUZZ_SECONDS=0 XTGRAD_FUZZ_NEW_SECONDS=-5; do
  expect 2 "tools/test.sh with $v" env "$v" bash "$src/tools/test.sh"
  says "${v%%=*} must be a whole number of seconds from 1 to 9999999, got '${v#*=}'"
done
# the sanitizer build's kept folder: meson would wipe it and write its build files among the others
mkdir -p "$out/not_a_build" && touch "$out/not_a_build/notes.txt"
for dir in "$out/not_a_build" "$out/not_a_build/notes.txt"; do
  expect 2 "tools/test.sh with XTGRAD_ASAN_DIR a folder of other files or a file" env XTGRAD_ASAN_DIR="$dir" bash "$src/tools/test.sh"
  says "must be a new or empty folder or a meson build folder"
done
[ -f "$out/not_a_build/notes.txt" ] && ok "  ...its files untouched" || bad "  ...its files are gone"
expect 2 "fuzz/run.sh with 0 seconds" bash "$src/fuzz/run.sh" "$out/fuzz" npy 0
says "SECONDS must be a whole number from 1 to 9999999, got '0'"
expect 2 "fuzz/run.sh with an unknown target" bash "$src/fuzz/run.sh" "$out/fuzz" png 5
says "TARGET must be safetensors, npy, writers, run_checkpoint, report_compare, fixture_meta or command_line, got 'png'"
# fuzz/build.sh run alone: checked before it writes anything; a failing compile fails the build
for jobs in x 0 -2; do
  expect 2 "fuzz/build.sh with XTGRAD_JOBS=$jobs" env XTGRAD_JOBS="$jobs" bash "$src/fuzz/build.sh" "$out/fuzz_jobs_$jobs"
  says "fuzz/build.sh: XTGRAD_JOBS must be a whole number >= 1, got '$jobs'"
  [ ! -e "$out/fuzz_jobs_$jobs" ] && ok "  ...wrote nothing" || bad "  ...created its output folder"
done
expect 1 "fuzz/build.sh with a compiler that fails" env CXX_FUZZ=false bash "$src/fuzz/build.sh" "$out/fuzz_false"
[ -z "$(find "$out/fuzz_false" -type f -perm -u+x 2>/dev/null)" ] && ok "  ...linked no program" || bad "  ...linked a program"
expect 2 "run_doc_blocks.py with XTGRAD_JOBS=x" env XTGRAD_JOBS=x python3 "$src/tests/docs/run_doc_blocks.py" "$build"
says "XTGRAD_JOBS must be a whole number of jobs, got 'x'"
expect 2 "run_doc_blocks.py --jobs 0" python3 "$src/tests/docs/run_doc_blocks.py" "$build" --jobs 0
says "--jobs (or XTGRAD_JOBS) must be at least 1, got 0"

exit $fail
