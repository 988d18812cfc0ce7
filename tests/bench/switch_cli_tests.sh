#!/usr/bin/env bash
# The speed switches (autograd/speed_switches.hpp) from the command line: each value checked before
# any work, the run trains the same either way, xtgrad_bench --list-switches and --alternate, and
# bench/compare_builds.sh on them. Run by tests/run_examples.sh.
#   tests/bench/switch_cli_tests.sh BUILD_DIR
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=../cli_test_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../cli_test_lib.sh" "$@"

echo "== XTGRAD_BLOCK_CACHE (autograd/array_allocator.hpp): checked, and the same run either way"
# tutorial B at d-model 512: its weights are 1 and 4 MiB arrays, which the block cache serves
rcb=("$build/examples/random_copy" --batch 2 --len 8 --vocab 20 --layers 1 --heads 2 --lr 1e-3 --threads 1 --steps 2)
for v in 2 yes -1; do
  expect 2 "XTGRAD_BLOCK_CACHE=$v" env XTGRAD_BLOCK_CACHE=$v "${rcb[@]}" --out "bc_bad$v"
  says "XTGRAD_BLOCK_CACHE: '$v' is neither 1"
  trained_nothing
done
XTGRAD_BLOCK_CACHE=0 "${rcb[@]}" --out bc_off >bc_off.log 2>&1
XTGRAD_BLOCK_CACHE=1 "${rcb[@]}" --out bc_on >bc_on.log 2>&1
if [ -n "$(losses '^Epoch: ' bc_on.log)" ] && [ "$(losses '^Epoch: ' bc_on.log)" = "$(losses '^Epoch: ' bc_off.log)" ] &&
   cmp -s bc_on/random_copy.safetensors bc_off/random_copy.safetensors; then
  ok "XTGRAD_BLOCK_CACHE=0 and 1: the same losses and byte-identical checkpoints"
else bad "XTGRAD_BLOCK_CACHE=0 and 1 differ"; tail -n 3 bc_on.log bc_off.log; fi

echo "== the speed switches (autograd/speed_switches.hpp): checked, and the run trains either way"
# Each is on by default or by CPU; the other value switches its mechanism (bench/run.sh
# --compare-switches). The pool's spin only changes how workers wait: the same bits. Small and
# skinny products sent to the backend sum in another order: the same losses to 1e-5.
rcs=("$build/examples/random_copy" --batch 2 --len 8 --vocab 20 --layers 1 --heads 2 --lr 1e-3 --threads 2 --steps 2)
"${rcs[@]}" --out sw_default >sw_default.log 2>&1
# The list is the build's own (xtgrad_bench --list-switches, from autograd/speed_switches.hpp)
listed=$("$build/bench/xtgrad_bench" --list-switches)
speed_switches=$(cut -d' ' -f1 <<<"$listed")
if [[ $(wc -l <<<"$listed") -eq 18 ]] && ! grep -vqE '^XTGRAD_[A-Z0-9_]+ (on|off)( [a-z,-]+)?$' <<<"$listed" &&
   grep -qx XTGRAD_NARROW_NN_TRANSPOSED <<<"$speed_switches"; then
  ok "xtgrad_bench --list-switches: 18 switches, each with this CPU's default"
else bad "xtgrad_bench --list-switches: '$listed'"; fi
# ... and what measuring each needs (speed_switch_tags), which bench/compare_builds.sh sets up from
if grep -qE '^XTGRAD_POOL_SPIN (on|off) workers$' <<<"$listed" &&
   grep -qE '^XTGRAD_BLOCK_CACHE_CUT (on|off) fixed,block-cache$' <<<"$listed" &&
   grep -qE '^XTGRAD_INFERENCE_WEIGHTS_PACKED (on|off) autocast,inference$' <<<"$listed" &&
   grep -qE '^XTGRAD_GRADIENT_AS_FACTORS (on|off) optimizer,in-backward$' <<<"$listed" &&
   grep -qE '^XTGRAD_MALLOC_NO_FASTBINS (on|off) fixed$' <<<"$listed" &&
   grep -qE '^XTGRAD_SMALL_GEMM (on|off)$' <<<"$listed"; then
  ok "xtgrad_bench --list-switches: each switch's needs (workers, fixed, autocast, inference, block-cache, in-backward)"
else bad "xtgrad_bench --list-switches without the needs: '$listed'"; fi
# The list is the CPU's defaults, whatever the environment sets (the scripts read it); a switch set
# there is said on stderr, so that a reader who set one is not misled
expect 0 "xtgrad_bench --list-switches with XTGRAD_SMALL_GEMM=0 set" env XTGRAD_SMALL_GEMM=0 "$build/bench/xtgrad_bench" --list-switches
says "note: XTGRAD_SMALL_GEMM=0 in the environment: off in this process (the list gives the default)"
if [[ $(XTGRAD_SMALL_GEMM=0 "$build/bench/xtgrad_bench" --list-switches 2>/dev/null) == "$listed" ]]
then ok "xtgrad_bench --list-switches: the same list with a switch set"
else bad "xtgrad_bench --list-switches: the list changed with XTGRAD_SMALL_GEMM=0 set"; fi
expect 0 "xtgrad_bench --list-switches with a switch set and stderr closed (the note lost, not the list)" bash -c "XTGRAD_SMALL_GEMM=0 '$build/bench/xtgrad_bench' --list-switches 2>&-"
says "XTGRAD_SMALL_GEMM on"
# bench/result_lines.py and compare_builds.sh check the words against their own list of them
if python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import result_lines as r; ws = {w for l in sys.stdin for w in (l.split() + [""])[2].split(",") if w}; sys.exit(not ws or not ws <= set(r.TAG_WORDS))' "$src/bench" <<<"$listed"
then ok "xtgrad_bench --list-switches: every word is one bench/result_lines.py knows"
else bad "xtgrad_bench --list-switches: a word bench/result_lines.py does not know: '$listed'"; fi
# The programs that parse by themselves (parse_or_exit) check the environment too, before any work
# (xtgrad_bench read a switch only at its first use: a bad one ran, or failed mid-run with 1)
expect 2 "xtgrad_bench --optimizer-in-backward on seed-d, which steps no optimizer without --adam" "$build/bench/xtgrad_bench" --config seed-d --optimizer-in-backward
says "--optimizer-in-backward: seed-d takes no optimizer step without --adam"
# --alternate: one settable switch, on against off step by step in one process
expect 2 "xtgrad_bench --alternate XTGRAD_BLOCK_CACHE (fixed at start-up)" "$build/bench/xtgrad_bench" --config winter --alternate XTGRAD_BLOCK_CACHE
says "--alternate: XTGRAD_BLOCK_CACHE is fixed when the process starts; compare it across processes"
expect 2 "xtgrad_bench --alternate with an unknown name" "$build/bench/xtgrad_bench" --config winter --alternate $'XTGRAD_NOPE\x1b[2J'
says "--alternate: 'XTGRAD_NOPE\x1b[2J' is not a speed switch (--list-switches lists them)"
# Found by a no-context attack: an empty name ran a plain benchmark; --warmup 0 put the process's
# cold first step on the on side (1.76x "slower"); a switch that does nothing in the run measured
# noise; --steps 2^30 doubled past INT_MAX, ran no step and crashed
expect 2 "xtgrad_bench --alternate ''" "$build/bench/xtgrad_bench" --config winter --alternate ''
says "--alternate: '' is not a speed switch"
expect 2 "xtgrad_bench --alternate with --warmup 0" "$build/bench/xtgrad_bench" --config winter --warmup 0 --alternate XTGRAD_SMALL_GEMM
says "--alternate: --warmup 0 leaves the process's first, cold step on one side; give 1 or more"
expect 2 "xtgrad_bench --alternate XTGRAD_POOL_SPIN on one thread" "$build/bench/xtgrad_bench" --config winter --alternate XTGRAD_POOL_SPIN
says "--alternate: XTGRAD_POOL_SPIN acts on the pool's workers, and --threads 1 has none (2 or more)"
# Adam's prefetch acts on one thread's optimizer step: on 2 threads, or on seed-d without --adam,
# the table read noise as its effect (0.98 and 1.00 on the Zen 5)
expect 2 "xtgrad_bench --alternate XTGRAD_ADAM_PREFETCH on two threads" "$build/bench/xtgrad_bench" --config winter --threads 2 --alternate XTGRAD_ADAM_PREFETCH
says "--alternate: XTGRAD_ADAM_PREFETCH acts on one thread only, and --threads 2 runs more"
expect 2 "xtgrad_bench --alternate XTGRAD_ADAM_PREFETCH on seed-d without --adam" "$build/bench/xtgrad_bench" --config seed-d --alternate XTGRAD_ADAM_PREFETCH
says "--alternate: XTGRAD_ADAM_PREFETCH acts on the optimizer's step, and seed-d takes none without --adam"
# the gradient as its factors acts only where the optimizer steps in backward: elsewhere noise
expect 2 "xtgrad_bench --alternate XTGRAD_GRADIENT_AS_FACTORS without --optimizer-in-backward" "$build/bench/xtgrad_bench" --config winter --alternate XTGRAD_GRADIENT_AS_FACTORS
says "--alternate: XTGRAD_GRADIENT_AS_FACTORS acts on the optimizer's step in backward only: add --optimizer-in-backward"
expect 2 "xtgrad_bench --alternate XTGRAD_SMALL_GEMM_BF16 without autocast" "$build/bench/xtgrad_bench" --config winter --alternate XTGRAD_SMALL_GEMM_BF16
says "--alternate: XTGRAD_SMALL_GEMM_BF16 acts under --autocast bf16 only"
expect 2 "xtgrad_bench --alternate XTGRAD_INFERENCE_WEIGHTS_PACKED without autocast" "$build/bench/xtgrad_bench" --config seed-d --alternate XTGRAD_INFERENCE_WEIGHTS_PACKED
says "--alternate: XTGRAD_INFERENCE_WEIGHTS_PACKED acts under --autocast bf16 only"
# The AVX-512 skinny kernels' two switches cannot act on the baseline kernels (a CPU without
# AVX-512, as the Zen 3, or XTGRAD_ISA=baseline): exit 3, so compare_builds.sh skips them
for sw in XTGRAD_SKINNY_PREFETCH_L2 XTGRAD_SKINNY_STREAMED_GRADIENT; do
  expect 3 "xtgrad_bench --alternate $sw under XTGRAD_ISA=baseline" env XTGRAD_ISA=baseline "$build/bench/xtgrad_bench" --config winter --optimizer-in-backward --alternate "$sw"
  says "--alternate: $sw acts in the AVX-512 skinny kernels, and this process runs the baseline ones"
done
# ... and on oneDNN without them an AVX-512 CPU's gemm_ld routes nothing to the skinny kernels
# (OpenBLAS does, and the Zen 3, AVX2 only, routes to its AVX2 ones: gemm/blas.cpp)
# (nor the factored gradient, which is made where a skinny_tn kernel would make it)
if grep -qw avx512f /proc/cpuinfo; then
  for sw in XTGRAD_SKINNY_GEMM XTGRAD_GRADIENT_AS_FACTORS; do
    expect 3 "xtgrad_bench --alternate $sw under XTGRAD_ISA=baseline (oneDNN)" env XTGRAD_ISA=baseline XTGRAD_GEMM_BACKEND=onednn "$build/bench/xtgrad_bench" --config winter --optimizer-in-backward --alternate "$sw"
    says "--alternate: $sw acts on the skinny kernels' products, and gemm_ld sends them nothing here"
  done
fi
expect 2 "xtgrad_bench --alternate XTGRAD_SMALL_GEMM_AMX without autocast" "$build/bench/xtgrad_bench" --config seed-b --alternate XTGRAD_SMALL_GEMM_AMX
says "--alternate: XTGRAD_SMALL_GEMM_AMX acts under --autocast bf16 only"
# it would measure noise where the tiles do not run: under XTGRAD_ISA=baseline, or with the blocks in fp32
if "$build/bench/xtgrad_bench" --list-switches | grep -qx "XTGRAD_SMALL_GEMM_AMX on autocast"; then
  expect 3 "xtgrad_bench --alternate XTGRAD_SMALL_GEMM_AMX under XTGRAD_SMALL_GEMM_BF16=0" env XTGRAD_SMALL_GEMM_BF16=0 "$build/bench/xtgrad_bench" --config seed-b --autocast bf16 --alternate XTGRAD_SMALL_GEMM_AMX
  says "--alternate: XTGRAD_SMALL_GEMM_AMX acts on the medium blocks in bf16, which XTGRAD_SMALL_GEMM_BF16=0"
  expect 3 "xtgrad_bench --alternate XTGRAD_SMALL_GEMM_AMX under XTGRAD_ISA=baseline" env XTGRAD_ISA=baseline "$build/bench/xtgrad_bench" --config seed-b --autocast bf16 --allow-slower-bf16 --alternate XTGRAD_SMALL_GEMM_AMX
  says "--alternate: XTGRAD_SMALL_GEMM_AMX chooses AMX's tiles for small_gemm_bf16, and this process has none"
else  # no tiles here: the switch cannot be measured, exit 3 (not a usage error: compare_builds.sh skips it)
  expect 3 "xtgrad_bench --alternate XTGRAD_SMALL_GEMM_AMX without AMX's tiles" "$build/bench/xtgrad_bench" --config seed-b --autocast bf16 --allow-slower-bf16 --alternate XTGRAD_SMALL_GEMM_AMX
  says "(cannot be measured here: exit 3)"
fi
for inference_switch in XTGRAD_INFERENCE_WEIGHTS_PACKED XTGRAD_INFERENCE_WEIGHTS_TRANSPOSED; do
  expect 2 "xtgrad_bench --alternate $inference_switch --no-infer" "$build/bench/xtgrad_bench" --config seed-d --autocast bf16 --allow-slower-bf16 --no-infer --alternate $inference_switch
  says "--alternate: $inference_switch acts on the inference, which --no-infer skips"
done
expect 2 "xtgrad_bench --steps 1073741824 --alternate" "$build/bench/xtgrad_bench" --config winter --steps 1073741824 --alternate XTGRAD_SMALL_GEMM
says "--steps"
expect 2 "xtgrad_bench --warmup 2147483647" "$build/bench/xtgrad_bench" --config winter --steps 1 --warmup 2147483647
# --paired-ceiling: the GEMM ceiling before each timed step and inference, each step read against it
expect 2 "xtgrad_bench --paired-ceiling with --alternate" "$build/bench/xtgrad_bench" --config winter --paired-ceiling --alternate XTGRAD_SMALL_GEMM
says "--paired-ceiling and --alternate pair each step with something else: give one of them"
expect 2 "xtgrad_bench --paired-ceiling --autocast bf16" "$build/bench/xtgrad_bench" --config winter --paired-ceiling --autocast bf16
says "--paired-ceiling: the ceiling is fp32's products, and --autocast bf16 runs bf16 ones"
expect 2 "run.sh --paired-ceiling --compare-switches" bash "$src/bench/run.sh" --paired-ceiling --compare-switches
says "run.sh: --paired-ceiling times the benchmark's runs; --compare-switches runs none"
expect 2 "run.sh --paired-ceiling --configs winter" bash "$src/bench/run.sh" --paired-ceiling --configs winter
says "run.sh: --paired-ceiling pairs seed-d and seed-b (winter has no target against the ceiling)"
if EXPECT_LIMIT=120 expect 0 "xtgrad_bench --paired-ceiling" "$build/bench/xtgrad_bench" --config seed-d --d-encoder-layers 1 \
     --steps 3 --warmup 1 --paired-ceiling --json &&
   python3 - "$out/last.log" <<'PY'
import json, sys
[line] = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
p = line["paired_ceiling"]
assert line["peak_rss_mib"] is None, line["peak_rss_mib"]  # the ceiling's operands would count
assert len(p["step_gflops"]) == 3 and len(p["infer_gflops"]) == 3 and all(g > 0 for g in p["step_gflops"]), p
assert sorted(p["x_ceiling"]) == sorted(["fwd", "bwd", "fwd+bwd", "step", "infer"]), p
# a step is its forward and backward and a little more: its ratio lies near fwd + bwd's
assert 0.2 < p["x_ceiling"]["fwd+bwd"] <= p["x_ceiling"]["step"] * 1.2 < 60, p
PY
then ok "  ...a ceiling per step and inference, a ratio per phase, no peak RSS"
else bad "  ...its line: $(head -c 400 "$out/last.log")"; fi
# compare_builds.sh takes exactly one line per side from xtgrad_bench --alternate: a build whose
# bench prints something else is an error naming the switch and run, not a traceback
mkdir -p "$out/fake_build/bench"
printf '#!/bin/sh\nif [ "$1" = --list-switches ]; then exec "%s" --list-switches; fi\necho not json\n' \
  "$build/bench/xtgrad_bench" > "$out/fake_build/bench/xtgrad_bench"
chmod +x "$out/fake_build/bench/xtgrad_bench"
expect 1 "compare_builds.sh --switches on a bench that prints no result lines" bash "$src/bench/compare_builds.sh" \
  --switches XTGRAD_SMALL_GEMM --build "$out/fake_build" --runs winter:1 --rounds 1
says "compare_builds.sh: xtgrad_bench --alternate XTGRAD_SMALL_GEMM on winter:1 printed no pair of result lines"
expect 2 "compare_builds.sh --switches XTGRAD_POOL_SPIN on one thread (nothing to measure)" bash "$src/bench/compare_builds.sh" \
  --switches XTGRAD_POOL_SPIN --build "$build" --runs winter:1 --rounds 1
says "compare_builds.sh: nothing was measured; skipped: XTGRAD_POOL_SPIN on winter:1: it acts on the pool's workers (2+ threads)"
# `--switches all` skips a switch this machine cannot measure (xtgrad_bench refuses it with 3, as
# XTGRAD_SMALL_GEMM_AMX without AMX): on the Zen 5 the whole table failed at the last switch.
# A fake bench lists two switches and refuses the second, its reason after a blank line and with
# an escape code and a NUL (shown as '?'). A switch named on its own still fails, and so does a
# usage error (2) under `all`: a first version skipped every switch of a mistaken --args, exit 0.
mkdir -p "$out/amx_less_build/bench"
cat > "$out/amx_less_build/bench/xtgrad_bench" <<EOF
#!/bin/sh
if [ "\$1" = --list-switches ]; then printf 'XTGRAD_SMALL_GEMM on\nXTGRAD_SMALL_GEMM_AMX off autocast\n'; exit 0; fi
case " \$* " in *" XTGRAD_SMALL_GEMM_AMX "*) printf '\nxtgrad_bench: no tiles\033[2J here\000\n' >&2; exit 3;; esac
exec "$build/bench/xtgrad_bench" "\$@"
EOF
chmod +x "$out/amx_less_build/bench/xtgrad_bench"
EXPECT_LIMIT=60 expect 0 "compare_builds.sh --switches all where one cannot be measured" bash "$src/bench/compare_builds.sh" \
  --switches all --build "$out/amx_less_build" --runs winter:1 --rounds 1 --args "--steps 1 --warmup 1 --no-infer"
says "# skipped: XTGRAD_SMALL_GEMM_AMX on winter:1, which this machine cannot measure: xtgrad_bench: no tiles?[2J here"
says "| winter:1 |"
says "- XTGRAD_SMALL_GEMM_AMX on winter:1: xtgrad_bench: no tiles?[2J here"
expect 1 "compare_builds.sh --switches XTGRAD_SMALL_GEMM_AMX (named) where it cannot be measured" bash "$src/bench/compare_builds.sh" \
  --switches XTGRAD_SMALL_GEMM_AMX --build "$out/amx_less_build" --runs winter:1 --rounds 1
says "compare_builds.sh: xtgrad_bench --alternate XTGRAD_SMALL_GEMM_AMX failed on winter:1 (round 1, exit 3)"
expect 1 "compare_builds.sh --switches all with --args every switch refuses (2, a usage error)" bash "$src/bench/compare_builds.sh" \
  --switches all --build "$out/amx_less_build" --runs winter:1 --rounds 1 --args "--steps 1 --warmup 0"
says "compare_builds.sh: xtgrad_bench --alternate XTGRAD_SMALL_GEMM failed on winter:1 (round 1, exit 2)"
says "--warmup 0 leaves the process's first, cold step on one side"
# The list's words set each run up, so each line is checked (a no-context attack: a misspelt
# word, a CRLF line end or a name twice timed noise; an empty line was a bash error; a build
# from before the words measured XTGRAD_POOL_SPIN on one thread)
mkdir -p "$out/odd_list_build/bench"
for listing in 'XTGRAD_POOL_SPIN on wrokers' 'XTGRAD_POOL_SPIN on workers\r' 'XTGRAD_A on workers\nXTGRAD_A off' \
               'XTGRAD_A on\n\nXTGRAD_B on workers' 'XTGRAD_A"x on workers' ' XTGRAD_A on workers'; do
  printf '#!/bin/sh\nprintf '"'"'%s\\n'"'"'\n' "$listing" > "$out/odd_list_build/bench/xtgrad_bench"
  chmod +x "$out/odd_list_build/bench/xtgrad_bench"
  expect 2 "compare_builds.sh --switches all on a list '$listing'" bash "$src/bench/compare_builds.sh" \
    --switches all --build "$out/odd_list_build" --runs winter:1 --rounds 1
  says "--list-switches line"
done
printf '#!/bin/sh\nprintf "XTGRAD_A on\\nXTGRAD_POOL_SPIN on\\n"\n' > "$out/odd_list_build/bench/xtgrad_bench"
expect 2 "compare_builds.sh --switches all on a list without words (a build before them)" bash "$src/bench/compare_builds.sh" \
  --switches all --build "$out/odd_list_build" --runs winter:1 --rounds 1
says "gives no switches, or none with words (a build from before 2026-12-02): build it again"
# words that each change the run add up (an autocast word dropped the optimizer's --adam), and a
# block-cache switch alternating in one process runs with the cache on: a fake records its call
cat > "$out/odd_list_build/bench/xtgrad_bench" <<EOF
#!/bin/sh
if [ "\$1" = --list-switches ]; then printf 'XTGRAD_X on autocast,optimizer,block-cache\n'; exit 0; fi
echo "\$* XTGRAD_BLOCK_CACHE=\${XTGRAD_BLOCK_CACHE:-unset}" >> "$out/odd_list_calls"
echo "no" >&2; exit 3
EOF
expect 2 "compare_builds.sh --switches all with a switch of three words" bash "$src/bench/compare_builds.sh" \
  --switches all --build "$out/odd_list_build" --runs seed-d:1 --rounds 1
if grep -q -- "--adam --autocast bf16 --allow-slower-bf16 --alternate XTGRAD_X --json XTGRAD_BLOCK_CACHE=1" "$out/odd_list_calls"
then ok "  ...ran it with --adam, under autocast and with the block cache on"
else bad "  ...ran it as: $(cat "$out/odd_list_calls")"; fi
printf '#!/bin/sh\nexit 109\n' > "$out/odd_list_build/bench/xtgrad_bench"
expect 2 "compare_builds.sh --switches all on a bench whose list fails" bash "$src/bench/compare_builds.sh" \
  --switches all --build "$out/odd_list_build" --runs winter:1 --rounds 1
says "--list-switches failed (exit 109)"
# an odd warm-up (3 steps of each side: 6, not a whole number of on-off-off-on quads) used to file
# each timed step under the other side; xtgrad_bench now checks each step's switch against its side
for warmup in 1 3; do
  if EXPECT_LIMIT=60 expect 0 "xtgrad_bench --alternate XTGRAD_SMALL_GEMM --warmup $warmup" \
       "$build/bench/xtgrad_bench" --config winter --steps 3 --warmup "$warmup" --alternate XTGRAD_SMALL_GEMM --json &&
     python3 - "$out/last.log" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
assert [l["alternated"]["side"] for l in lines] == ["on", "off"], lines
assert [l["switches_set"]["XTGRAD_SMALL_GEMM"] for l in lines] == [True, False]
assert all(len(l["alternated"]["samples"][p]) == 3 for l in lines for p in ("step", "fwd", "infer"))
assert all(l["phases"]["step"]["median_ms"] in l["alternated"]["samples"]["step"] for l in lines)
PY
  then ok "  ...one line per side, 3 samples of each phase in each"
  else bad "  ...its lines: $(head -c 400 "$out/last.log")"; fi
done
expect 2 "xtgrad_bench --list-switches=0 (a flag takes no value)" "$build/bench/xtgrad_bench" --list-switches=0
says "--list-switches takes no value (got '--list-switches=0')"
expect 2 "xtgrad_bench with XTGRAD_NARROW_NN_TRANSPOSED=on" env XTGRAD_NARROW_NN_TRANSPOSED=on "$build/bench/xtgrad_bench" --config winter --steps 1 --warmup 0
says "xtgrad_bench: XTGRAD_NARROW_NN_TRANSPOSED: 'on' is neither 1"
if grep -q "phase" "$out/last.log"; then bad "  ...it ran the benchmark first"; else ok "  ...before any step"; fi
expect 2 "xtgrad_bench --list-switches with XTGRAD_ADAM_PREFETCH=on" env XTGRAD_ADAM_PREFETCH=on "$build/bench/xtgrad_bench" --list-switches
says "XTGRAD_ADAM_PREFETCH: 'on' is neither 1"
expect 2 "tutorial_d_walkthrough with XTGRAD_SMALL_GEMM=yes" env XTGRAD_SMALL_GEMM=yes "$build/examples/tutorial_d_walkthrough"
says "XTGRAD_SMALL_GEMM: 'yes' is neither 1"
expect 1 "xtgrad_bench --list-switches into a full device" sh -c "'$build/bench/xtgrad_bench' --list-switches >/dev/full"
says "could not write its output to the standard output"
for sw in $speed_switches; do
  expect 2 "$sw=on" env "$sw=on" "${rcs[@]}" --out "sw_bad_$sw"
  says "$sw: 'on' is neither 1"
  trained_nothing
  # the value that is not this CPU's default: 0 where it is on, 1 where it is off
  [[ $(grep "^$sw " <<<"$listed" | cut -d' ' -f2) == on ]] && flip=0 || flip=1
  env "$sw=$flip" "${rcs[@]}" --out "sw_flip_$sw" >"sw_flip_$sw.log" 2>&1
  if python3 - "$(losses '^Epoch: ' sw_default.log | tr '\n' ' ')" "$(losses '^Epoch: ' "sw_flip_$sw.log" | tr '\n' ' ')" <<'PY'
import sys
a, b = sys.argv[1].split(), sys.argv[2].split()
sys.exit(not (a and len(a) == len(b) and all(abs(float(x) - float(y)) <= 1e-5 * max(1.0, abs(float(x))) for x, y in zip(a, b))))
PY
  then ok "$sw=$flip (not the default): the default run's losses"
  else bad "$sw=$flip trains differently"; tail -n 3 sw_default.log "sw_flip_$sw.log"; fi
done
if cmp -s sw_default/random_copy.safetensors sw_flip_XTGRAD_POOL_SPIN/random_copy.safetensors; then
  ok "XTGRAD_POOL_SPIN=0: byte-identical checkpoint"
else bad "XTGRAD_POOL_SPIN=0 changed the weights"; fi
# glibc with or without fastbins hands out other addresses, never other numbers
if cmp -s sw_default/random_copy.safetensors sw_flip_XTGRAD_MALLOC_NO_FASTBINS/random_copy.safetensors; then
  ok "XTGRAD_MALLOC_NO_FASTBINS flipped: byte-identical checkpoint"
else bad "XTGRAD_MALLOC_NO_FASTBINS flipped changed the weights"; fi
# XTGRAD_BACKWARD_PRODUCTS_ON_OPENBLAS (a model whose products reach the backend: 64 rows, d_model 64) where
# OpenBLAS does not load (a libopenblas.so.0 without its functions first on the library path): the products
# stay on oneDNN, the run's checkpoint the switch-off run's bytes; with OpenBLAS, the same losses to rounding
bo=("$build/examples/random_copy" --batch 4 --len 16 --vocab 50 --d-model 64 --d-ff 128 --layers 1 --heads 2 --steps 2 --no-report)
mkdir -p fake_openblas && echo 'int xtgrad_not_openblas;' | gcc -shared -fPIC -x c - -o fake_openblas/libopenblas.so.0
env XTGRAD_BACKWARD_PRODUCTS_ON_OPENBLAS=0 "${bo[@]}" --out bo_off >bo_off.log 2>&1
expect 0 "XTGRAD_BACKWARD_PRODUCTS_ON_OPENBLAS=1 where OpenBLAS does not load" \
  env LD_LIBRARY_PATH="$PWD/fake_openblas" XTGRAD_BACKWARD_PRODUCTS_ON_OPENBLAS=1 "${bo[@]}" --out bo_fake
if cmp -s bo_off/random_copy.safetensors bo_fake/random_copy.safetensors; then
  ok "  ...the products on oneDNN: the switch-off run's checkpoint, byte for byte"
else bad "  ...trained otherwise than the products on oneDNN"; fi
expect 0 "XTGRAD_BACKWARD_PRODUCTS_ON_OPENBLAS=1 with OpenBLAS" env XTGRAD_BACKWARD_PRODUCTS_ON_OPENBLAS=1 "${bo[@]}" --out bo_on
if python3 - "$(losses '^Epoch: ' bo_off.log | tr '\n' ' ')" "$(losses '^Epoch: ' last.log | tr '\n' ' ')" <<'PY'
import sys
a, b = sys.argv[1].split(), sys.argv[2].split()
sys.exit(not (a and len(a) == len(b) and all(abs(float(x) - float(y)) <= 1e-5 * max(1.0, abs(float(x))) for x, y in zip(a, b))))
PY
then ok "  ...the switch-off run's losses to rounding"; else bad "  ...other losses"; tail -n 3 bo_off.log last.log; fi
# layer norm's output made again in backward has the forward's bits: the same weights either way
if cmp -s sw_default/random_copy.safetensors sw_flip_XTGRAD_LAYER_NORM_RECOMPUTE/random_copy.safetensors; then
  ok "XTGRAD_LAYER_NORM_RECOMPUTE=0: byte-identical checkpoint"
else bad "XTGRAD_LAYER_NORM_RECOMPUTE=0 changed the weights"; fi
# The prefetch switches only ask for data earlier: the same bits either way. One thread (Adam
# prefetches only there) and 7 target tokens (the skinny kernels' products, on AVX-512).
rc1=("$build/examples/random_copy" --batch 1 --len 8 --vocab 20 --layers 1 --heads 2 --lr 1e-3 --threads 1 --steps 2)
"${rc1[@]}" --out pf_default >pf_default.log 2>&1
for sw in XTGRAD_SKINNY_PREFETCH_L2 XTGRAD_ADAM_PREFETCH; do
  for v in 0 1; do
    env "$sw=$v" "${rc1[@]}" --out "pf_${sw}_$v" >"pf_${sw}_$v.log" 2>&1
    if [[ -s pf_default/random_copy.safetensors ]] && cmp -s pf_default/random_copy.safetensors "pf_${sw}_$v/random_copy.safetensors"; then
      ok "$sw=$v: byte-identical checkpoint"
    else bad "$sw=$v changed the weights"; tail -n 3 pf_default.log "pf_${sw}_$v.log"; fi
  done
done

exit $fail
