#!/usr/bin/env bash
# ZeroRedundancyOptimizer over MPI (docs/distributed.md; part of tools/test.sh):
#   1. the same losses as plain DDP with Adam, on 2 and 3 processes, tutorial B and the Winter Games;
#   2. checkpoints independent of the world size: a run saved by 2 processes is byte for byte plain
#      Adam's file, and resumes on 1, 2 and 3 processes with the losses of an uninterrupted run there;
#   3. memory: each process holds about 1/N of Adam's state; peak RSS per process beside plain DDP's;
#   4. the overlap of the bucket allreduces with backward, measured bucket by bucket;
#   5. a process killed mid-step: mpirun ends the job at once naming it; with mpirun's recovery
#      mode (the survivors keep running, as when a host vanishes) every survivor exits with an
#      Error naming the lost rank within the timeout; either way the last checkpoint resumes.
#   6. one verdict on every rank: parameters that differ on one rank (without DDP), and a checkpoint
#      only the owner of a tampered entry can refuse, are an Error on every rank alike.
#   tests/distributed/run_zero_test.sh BUILD_DIR
# Skips (exit 0) when the build has no MPI or mpirun is missing.
set -uo pipefail
build=$1
prog="$build/tests/zero_run"
source "$(dirname "$0")/mpi_common.sh"
# mpi NP ARGS...: 3 processes on 2 cores need --oversubscribe; one thread each
mpirun_extra=()  # mpirun's own options for the next call
mpi() { local np=$1; shift; timeout 300 mpirun -np "$np" --oversubscribe --bind-to none "${mpirun_extra[@]}" "$prog" "$@"; }

# same_losses LOG REFERENCE_LOG TOLERANCE FIRST_STEP: the steps >= FIRST_STEP of LOG (at least one)
# are the reference's within TOLERANCE
same_losses() {
  awk -v tol="$3" -v first="$4" 'FNR == NR && /^step/ {ref[$2] = $4; next}
       /^step/ && $2 >= first {n++; if (!($2 in ref)) miss = 1; d = $4 - ref[$2]; if (d < 0) d = -d; if (d > max) max = d}
       END {printf "%d steps, max |loss - reference| = %.2g\n", n, max; exit !(n > 0 && !miss && max <= tol)}' "$2" "$1"
}

# 1. ZeRO against plain DDP (both Adam), the same process count.
for case in "2 b" "2 c" "3 b"; do
  set -- $case; np=$1 model=$2
  if mpi "$np" --model "$model" --optimizer adam --steps 6 >"$out/adam.log" 2>&1 \
     && mpi "$np" --model "$model" --optimizer zero --steps 6 >"$out/zero.log" 2>&1 \
     && losses=$(same_losses "$out/zero.log" "$out/adam.log" 1e-6 1); then
    ok "$np processes, model $model: ZeroRedundancyOptimizer = DDP with Adam: $losses"
  else
    bad "$np processes, model $model: ZeroRedundancyOptimizer against DDP with Adam"; cat "$out/adam.log" "$out/zero.log"
  fi
done

# 2. A run saved by 2 processes at step 3; the consolidated file is plain Adam's byte for byte.
if mpi 2 --optimizer zero --steps 3 --save "$out/zero2.safetensors" >/dev/null 2>&1 \
   && mpi 2 --optimizer adam --steps 3 --save "$out/adam2.safetensors" >/dev/null 2>&1 \
   && cmp -s "$out/zero2.safetensors" "$out/adam2.safetensors"; then
  ok "the checkpoint 2 ZeRO processes consolidate is byte for byte plain DDP's with Adam"
else
  bad "consolidated checkpoint against plain Adam's"
fi
# ...resumed on M = 1, 2, 3 processes: steps 4-6 as an uninterrupted M-process run (exactly for M = 2).
for m in 1 2 3; do
  tol=1e-6; [ "$m" = 2 ] && tol=0
  if mpi "$m" --optimizer zero --steps 6 >"$out/straight$m.log" 2>&1 \
     && mpi "$m" --optimizer zero --steps 6 --resume "$out/zero2.safetensors" >"$out/resumed$m.log" 2>&1 \
     && ! grep -q '^step [123] ' "$out/resumed$m.log" \
     && losses=$(same_losses "$out/resumed$m.log" "$out/straight$m.log" "$tol" 4); then
    ok "saved by 2 processes, resumed on $m: steps 4-6 as an uninterrupted $m-process run (tolerance $tol): $losses"
  else
    bad "saved by 2 processes, resumed on $m"; cat "$out/straight$m.log" "$out/resumed$m.log"
  fi
done
# ...and saved by 3 processes, resumed on 2.
if mpi 3 --optimizer zero --steps 6 --save-at 3 --save "$out/zero3.safetensors" >/dev/null 2>&1 \
   && mpi 2 --optimizer zero --steps 6 --resume "$out/zero3.safetensors" >"$out/resumed32.log" 2>&1 \
   && losses=$(same_losses "$out/resumed32.log" "$out/straight2.log" 1e-6 4); then
  ok "saved by 3 processes, resumed on 2: $losses"
else
  bad "saved by 3 processes, resumed on 2"; cat "$out/resumed32.log"
fi
# ...and saving without consolidating first is an Error on rank 0, not a file with half the state.
if ! mpi 2 --optimizer zero --steps 1 --no-consolidate --save "$out/half.safetensors" >"$out/half.log" 2>&1 \
   && grep -q "rank 0 of 2 holds only its shard; call consolidate_state_dict" "$out/half.log" && [ ! -e "$out/half.safetensors" ]; then
  ok "a save without consolidate_state_dict: \"$(grep -m1 -o 'ZeroRedundancyOptimizer.state_dict.*' "$out/half.log" | cut -c1-110)\""
else
  bad "a save without consolidate_state_dict"; cat "$out/half.log"
fi

# 3. Memory at a size where Adam's state is a large part of a process (15.6 M parameters).
big=(--model b --vocab 20000 --d-model 256 --batch 2 --steps 2)
if mpi 2 "${big[@]}" --optimizer adam >"$out/mem_adam.log" 2>&1 && mpi 2 "${big[@]}" --optimizer zero >"$out/mem_zero.log" 2>&1; then
  report=$(awk '/^memory/ {f = FILENAME ~ /zero/ ? "zero" : "adam"; s[f, $3] = $5; r[f, $3] = $7}
    END {for (k = 0; k < 2; k++) printf "rank %d: Adam state %.1f MB (DDP) vs %.1f MB (ZeRO), peak RSS %.0f vs %.0f MiB; ", k,
                                  s["adam", k] / 1e6, s["zero", k] / 1e6, r["adam", k] / 1024, r["zero", k] / 1024
         # each ZeRO shard is at most 0.6 of the whole state, and each process peaks lower
         bad = 0; for (k = 0; k < 2; k++) if (!(s["zero", k] <= 0.6 * s["adam", k] && r["zero", k] < r["adam", k])) bad = 1
         exit bad}' "$out/mem_adam.log" "$out/mem_zero.log") \
    && ok "memory per process: $report" || bad "memory per process: $report"
else
  bad "memory runs"; cat "$out/mem_adam.log" "$out/mem_zero.log"
fi

# 4. Overlap, 2 processes over shared memory: the last step's buckets (launch, finish, wait).
if mpi 2 --model b --vocab 8000 --d-model 128 --batch 32 --bucket-mb 1 --steps 3 --timeline >"$out/timeline.log" 2>&1 \
   && line=$(awk -f "$(dirname "$0")/overlap.awk" "$out/timeline.log"); then
  ok "overlap, 2 processes on localhost: $line"
else
  bad "overlap timeline on localhost: ${line:-}"; cat "$out/timeline.log"
fi

# 5. Rank 2 of 3 killed (SIGKILL) in step 4, after the checkpoint of step 3.
kill=(--steps 6 --save-at 3 --kill-rank 2 --kill-step 4)
start=$SECONDS
mpi 3 "${kill[@]}" --save "$out/killed.safetensors" >"$out/killed.log" 2>&1; rc=$?
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && grep -q "process rank 2 .*signal 9" "$out/killed.log"; then
  ok "rank 2 killed in step 4: mpirun ends the job after $((SECONDS - start)) s (exit status $rc): \"$(grep -o 'process rank 2 .*' "$out/killed.log")\""
else
  bad "rank 2 killed in step 4 (exit status $rc, 124 = hung)"; cat "$out/killed.log"
fi
# The survivors on their own (mpirun's orte_enable_recovery; its exit status is then 0, so the
# output is what tells): each names rank 2 after XTGRAD_DIST_TIMEOUT (5 s) and the probe (5 s).
start=$SECONDS
mpirun_extra=(-x XTGRAD_DIST_TIMEOUT --mca orte_enable_recovery 1)
XTGRAD_DIST_TIMEOUT=5 mpi 3 "${kill[@]}" --save "$out/killed.safetensors" >"$out/survivors.log" 2>&1
mpirun_extra=()
took=$((SECONDS - start))
named=$(grep -c "^zero_run rank [01] of 3: .*did not complete within 5 s on rank [01] of 3: lost rank 2 (" "$out/survivors.log")
if [ "$named" -eq 2 ] && [ "$took" -lt 60 ]; then
  ok "rank 2 killed, survivors left running: ranks 0 and 1 each exit with an Error naming lost rank 2 after $took s: \"$(grep -m1 -o 'did not complete.*' "$out/survivors.log")\""
else
  bad "survivors of a killed rank ($named of 2 named it, $took s)"; cat "$out/survivors.log"
fi
if mpi 2 --steps 6 --resume "$out/killed.safetensors" >"$out/after_kill.log" 2>&1 \
   && losses=$(same_losses "$out/after_kill.log" "$out/straight2.log" 1e-6 4); then
  ok "the checkpoint of step 3 resumes on 2 processes after the kill: $losses"
else
  bad "resume after the kill"; cat "$out/after_kill.log"
fi

# 6. Checks one process makes must give every process the same verdict. Without DDP, rank 1's
# parameters differing from rank 0's (a shape; a parameter frozen on rank 1 alone) went unnoticed:
# the broadcasts overwrote rank 1's with rank 0's values, or a bias was never updated.
mpirun_extra=(-x XTGRAD_DIST_TIMEOUT)
export XTGRAD_DIST_TIMEOUT=10  # the runs that fail before the checks existed end by the timeout
for differ in "shape:'encoder_embedding.weight' has shape (121,32) here but another shape on rank 0" \
              "frozen:is frozen here but trained on rank 0"; do
  kind=${differ%%:*} says=${differ#*:}
  mpi 2 --optimizer zero --no-ddp --steps 2 --differ-rank 1 --differ "$kind" --agreed-errors >"$out/differ.log" 2>&1; rc=$?
  same=$(grep -c "^zero_run rank [01] of 2: ZeroRedundancyOptimizer: rank(s) 1 differ from rank 0 .*: rank 1: .*$says" "$out/differ.log")
  if [ "$rc" -ne 0 ] && [ "$same" -eq 2 ] && ! grep -q '^step' "$out/differ.log"; then
    ok "ZeRO without DDP, rank 1's parameters differ ($kind): both ranks refuse before any step: \"$(grep -m1 -o 'rank(s) 1 differ.*' "$out/differ.log" | cut -c1-150)\""
  else
    bad "ZeRO without DDP, rank 1's parameters differ ($kind): $same of 2 ranks said so (exit status $rc)"; cat "$out/differ.log"
  fi
done
# A checkpoint whose state.0.step is 0.5: only the rank that owns parameter 0 checks that entry's
# value. Every rank refuses it, naming that rank, and none keeps it: with --fresh-if-refused both
# start afresh, with the losses of the uninterrupted run (rank 0 used to go on from step 4 with
# the file's moments while rank 1 started over).
python3 - "$out/zero2.safetensors" "$out/tampered.safetensors" <<'PY'
import json, struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
n = struct.unpack("<Q", b[:8])[0]
entry = json.loads(b[8:8 + n])["optimizer.state.0.step"]
struct.pack_into("<f", b, 8 + n + entry["data_offsets"][0], 0.5)
open(sys.argv[2], "wb").write(b)
PY
mpi 2 --optimizer zero --steps 6 --resume "$out/tampered.safetensors" --fresh-if-refused >"$out/tampered.log" 2>&1; rc=$?
verdicts=$(grep '^rank [01] refused: ' "$out/tampered.log" | sed 's/^rank [01] refused: //' | sort -u)
if [ "$rc" -eq 0 ] && [ "$(grep -c '^rank [01] refused: ' "$out/tampered.log")" -eq 2 ] && [ "$(echo "$verdicts" | wc -l)" -eq 1 ] \
   && echo "$verdicts" | grep -q "ZeroRedundancyOptimizer.load_state_dict: rank(s) [01] refused the state, so no rank loaded it: rank [01]: .*'state.0.step' must be one whole number" \
   && losses=$(same_losses "$out/tampered.log" "$out/straight2.log" 0 1); then
  ok "a checkpoint only one rank can refuse: both refuse alike and start afresh: $losses: \"$(echo "$verdicts" | grep -o 'ZeroRedundancyOptimizer.load_state_dict.*' | cut -c1-140)\""
else
  bad "a checkpoint only one rank can refuse (exit status $rc)"; cat "$out/tampered.log"
fi
unset XTGRAD_DIST_TIMEOUT
mpirun_extra=()
exit $fail
