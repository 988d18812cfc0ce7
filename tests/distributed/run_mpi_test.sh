#!/usr/bin/env bash
# Data-parallel training on localhost (docs/distributed.md; part of tools/test.sh):
#   1. tutorial B's random-token run, dropout 0, global batch 8: 2 processes give the losses of
#      one process to 1e-4 and its final parameters to 1e-5 (also with no_sync micro-batches);
#   2. faults: a rank that exits early, or stops, makes the job fail with a clear error, never hang;
#      misuses (ranks that disagree, the group used after it was destroyed) are an Error on every rank;
#   3. the examples random_copy and reverse under mpirun: rank 0 alone prints.
#   tests/distributed/run_mpi_test.sh BUILD_DIR
# Skips (exit 0) when the build has no MPI or mpirun is missing.
set -uo pipefail
build=$1
prog="$build/tests/ddp_tutorial_b"
source "$(dirname "$0")/mpi_common.sh"

# 2 processes may be more than the cores (--oversubscribe); no binding, so the processes and
# their threads share the cores as the kernel sees fit.
mpi() { timeout "$1" mpirun -np 2 --oversubscribe --bind-to none "${@:2}"; }

# 1. The same run, alone and as 2 processes.
"$prog" --batch 8 --steps 5 --out "$out/ref.safetensors" >"$out/ref.log" 2>&1 || { bad "single-process run"; cat "$out/ref.log"; }
# same_losses LOG [REFERENCE_LOG]: every "step K loss L" of LOG within 1e-4 of the reference's
same_losses() {
  awk 'FNR == NR && /^step/ {ref[$2] = $4; next} /^step/ {n++; d = $4 - ref[$2]; if (d < 0) d = -d; if (d > max) max = d}
       END {printf "%d steps, max |loss - reference| = %.2g\n", n, max; exit !(n == 5 && max <= 1e-4)}' "${2:-$out/ref.log}" "$1"
}
weights_close() { awk '/^max \|parameter - reference\|/ {print $NF; found = 1; exit !($NF <= 1e-5)} END {exit !found}' "$1"; }
for mode in "plain" "no_sync"; do
  extra=(); [ "$mode" = no_sync ] && extra=(--micro-batches 2)
  log="$out/mpi_$mode.log"
  if mpi 300 "$prog" --batch 8 --steps 5 "${extra[@]}" --compare "$out/ref.safetensors" >"$log" 2>&1 \
     && [ "$(grep -c '^data-parallel: 2 processes' "$log")" -eq 1 ] && losses=$(same_losses "$log") \
     && w=$(weights_close "$log"); then
    ok "2 processes ($mode) = 1 process at global batch 8: $losses; parameters within $w ($(grep -o 'W_k.bias.*' "$log"))"
  else
    bad "2 processes ($mode) against 1 process"; cat "$log"
  fi
done

# 1b. A global batch the processes do not divide (7 rows over 2): uneven shares, weighted by their
# rows, give the losses and parameters of one process (no row is repeated).
"$prog" --batch 7 --steps 5 --out "$out/ref7.safetensors" >"$out/ref7.log" 2>&1 || { bad "single-process run at batch 7"; cat "$out/ref7.log"; }
log="$out/mpi_uneven.log"
if mpi 300 "$prog" --batch 7 --steps 5 --compare "$out/ref7.safetensors" >"$log" 2>&1 \
   && losses=$(same_losses "$log" "$out/ref7.log") \
   && w=$(weights_close "$log"); then
  ok "2 processes = 1 process at global batch 7 (shares of 4 and 3 rows): $losses; parameters within $w"
else
  bad "2 processes against 1 process at global batch 7"; cat "$log"
fi

# 2. Faults: the job ends with an error well before the timeout.
# expect_failure NAME PATTERN ARGS...: mpirun fails (not by timeout) and its output has PATTERN
expect_failure() {
  local name=$1 pattern=$2; shift 2
  local log="$out/fault.log" rc=0 start=$SECONDS
  mpi 120 "$@" >"$log" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && grep -q "$pattern" "$log"; then
    ok "$name: exit status $rc after $((SECONDS - start)) s, \"$(grep -m1 "$pattern" "$log" | cut -c1-150)\""
  else
    bad "$name (exit status $rc, 124 = hung until the timeout)"; cat "$log"
  fi
}
expect_failure "rank 1 exits at step 2" "exited\|exit code\|non-zero status" \
  "$prog" --batch 8 --steps 5 --exit-rank 1 --fault-step 2
XTGRAD_DIST_TIMEOUT=5 expect_failure "rank 1 stops at step 2" "did not complete within 5 s" \
  -x XTGRAD_DIST_TIMEOUT "$prog" --batch 8 --steps 5 --hang-rank 1 --fault-step 2

XTGRAD_DIST_TIMEOUT=nan expect_failure "XTGRAD_DIST_TIMEOUT=nan is refused, not a busy wait forever" \
  "XTGRAD_DIST_TIMEOUT='nan': not a positive finite time" -x XTGRAD_DIST_TIMEOUT "$build/examples/random_copy" --steps 1
expect_failure "rank 1 alone freezes a parameter" "rank(s) 1 differ from rank 0" \
  "$prog" --batch 8 --steps 2 --freeze-rank 1
grep -q "is frozen here but trained on rank 0" "$out/fault.log" && ok "  ...rank 1 names the parameter and the flags" \
  || { bad "  ...rank 1 does not say which parameter"; cat "$out/fault.log"; }
# Misuses every rank refuses alike, long before the timeout (60 s here; they used to end by it, or
# not at all): other bucket caps on rank 1 (allreduces of buffers of other sizes: wrong gradients on
# rank 0, MPI_ERR_TRUNCATE on rank 1); a negative cap on rank 1 alone; gradient weights summing to 2
# (a doubled gradient, silently); parameters unused on rank 1 alone (rank 1 refused, rank 0 waited
# for its buckets until the timeout); the group used after destroy_process_group (a world of 1,
# silently) or started again (MPI aborted); with ZeRO, another lr on rank 1 (its shard stepped
# with it, silently), consolidate_state_dict to another rank (broadcasts from other roots) or a
# factory failing on rank 1 alone (rank 0 went on to wait for it).
export XTGRAD_DIST_TIMEOUT=60
for misuse in "bucket-cap:rank(s) 1 differ from rank 0 .*rank 1: DDPOptions is bucket_cap_mb 0.001" \
              "bad-cap:rank(s) 1 refused the options: rank 1: DistributedDataParallel: bucket caps must be positive" \
              "weight-one:gradient weights of the 2 processes sum to 2, not 1 (rank 0: 1, rank 1: 1)" \
              "finalized:DistributedDataParallel: the process group was destroyed" \
              "reinit:init_process_group: the process group was destroyed earlier" \
              "unused:on rank(s) 1 the forward's output does not depend on some parameters (rank 1: 2 unused); here: .*fc2.weight, fc2.bias"; do
  expect_failure "--misuse ${misuse%%:*}" "${misuse#*:}" -x XTGRAD_DIST_TIMEOUT "$prog" --batch 8 --steps 2 --misuse "${misuse%%:*}"
done
zero=("$build/tests/zero_run" --optimizer zero --steps 2 --differ-rank 1)
expect_failure "ZeRO, rank 1 builds Adam with another lr" \
  "ZeroRedundancyOptimizer: rank(s) 1 differ from rank 0 .*\"lr\":0.01.*\"lr\":0.001" -x XTGRAD_DIST_TIMEOUT "${zero[@]}" --differ lr
expect_failure "ZeRO, rank 1 consolidates on rank 1" \
  "consolidate_state_dict: rank(s) 1 refused the target rank: rank 1: the rank to consolidate on is 1 here but 0 on rank 0" \
  -x XTGRAD_DIST_TIMEOUT "${zero[@]}" --differ consolidate-to --save "$out/zero.safetensors"
expect_failure "ZeRO, rank 1's optimizer factory returns nothing" \
  "ZeroRedundancyOptimizer: rank(s) 1 could not build the local optimizer: rank 1: .*factory returned nothing" \
  -x XTGRAD_DIST_TIMEOUT "${zero[@]}" --differ factory
unset XTGRAD_DIST_TIMEOUT

# 3. The examples, data-parallel: one "data-parallel" line, the progress printed once.
log="$out/random_copy.log"
if mpi 300 "$build/examples/random_copy" --batch 4 --len 16 --vocab 50 --layers 1 --d-model 32 --heads 4 --d-ff 64 \
     --steps 3 --lr 1e-3 --dropout 0 >"$log" 2>&1 \
   && [ "$(grep -c '^data-parallel: 2 processes' "$log")" -eq 1 ] && [ "$(grep -c '^Epoch:' "$log")" -eq 3 ]; then
  ok "mpirun -np 2 random_copy: $(grep '^Epoch: 3' "$log")"
else
  bad "mpirun -np 2 random_copy"; cat "$log"
fi
# A run checkpoint under MPI: rank 0 alone writes it (atomically), every rank resumes from it,
# and the resumed run prints the straight run's losses for the steps after the resume.
rc=("$build/examples/random_copy" --batch 4 --len 16 --vocab 50 --layers 1 --d-model 32 --heads 4 --d-ff 64 --lr 1e-3)
rm -rf "$out/rc_straight" "$out/rc_resumed"
if mpi 300 "${rc[@]}" --steps 4 --out "$out/rc_straight" >"$out/straight.log" 2>&1 \
   && mpi 300 "${rc[@]}" --steps 2 --out "$out/rc_resumed" >/dev/null 2>&1 \
   && mpi 300 "${rc[@]}" --steps 4 --out "$out/rc_resumed" --resume "$out/rc_resumed/random_copy.safetensors" >"$out/resumed.log" 2>&1 \
   && [ -n "$(grep '^Epoch: 4' "$out/straight.log")" ] \
   && [ "$(grep -E '^Epoch: [34],' "$out/straight.log" | cut -d' ' -f1-4)" = "$(grep -E '^Epoch: [34],' "$out/resumed.log" | cut -d' ' -f1-4)" ] \
   && cmp -s "$out/rc_straight/random_copy.safetensors" "$out/rc_resumed/random_copy.safetensors"; then
  ok "mpirun -np 2 random_copy --resume: steps 3-4 and the final checkpoint equal the straight run's"
else
  bad "mpirun -np 2 random_copy --resume"; cat "$out/straight.log" "$out/resumed.log"
fi
log="$out/reverse.log"
if mpi 300 "$build/examples/reverse" --steps 400 >"$log" 2>&1 \
   && [ "$(grep -c '^data-parallel: 2 processes' "$log")" -eq 1 ] && [ "$(grep -c '^greedy decoding' "$log")" -eq 1 ]; then
  ok "mpirun -np 2 reverse: $(grep '^greedy decoding' "$log")"
else
  bad "mpirun -np 2 reverse"; cat "$log"
fi
# 4. Memory errors on the multi-process path (the bucket copies, the allreduce, the hooks that
# launch it) under valgrind's memcheck: the suite's ASan build covers one process only.
# tests/distributed/openmpi.supp silences OpenMPI's own internals, never a frame of xtgrad's.
if command -v valgrind >/dev/null; then
  log="$out/valgrind.log"
  if mpi 300 valgrind -q --error-exitcode=3 --suppressions="$(dirname "$0")/openmpi.supp" \
       "$prog" --batch 8 --steps 2 --out "$out/vg.safetensors" >"$log" 2>&1 \
     && ! grep -q '^==[0-9]*== [A-Z]' "$log"; then
    ok "mpirun -np 2 under valgrind memcheck: no error in 2 data-parallel steps"
  else
    bad "mpirun -np 2 under valgrind memcheck"; grep -A20 '^==[0-9]*== [A-Z]' "$log" | head -n 60
  fi
else
  echo "  skip: valgrind is not installed (tools/install_deps.sh installs it)"
fi
exit $fail
