#!/usr/bin/env bash
# The command-line promises of the examples, bench and tools/parity (issue 11): resumed runs are
# bit-identical, every option is checked before training, exit codes 0 / 1 / 2, a fifo never
# hangs, a non-finite loss stops the run and keeps the last good checkpoint. Small model sizes:
# the whole script takes a few seconds. Run by tests/run_examples.sh.
#   tests/examples/run_cli_tests.sh BUILD_DIR
set -uo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cd "$out"
fail=0
ok() { echo "  ok   $1"; }
bad() { echo "  FAIL $1"; fail=1; }

wg=("$build/examples/winter_games" --d-model 32 --d-ff 64 --d-k 8 --d-v 8 --layers 2 --heads 2 --lr 1e-3 --quiet --threads 1)
rc=("$build/examples/random_copy" --batch 2 --len 8 --vocab 20 --layers 1 --d-model 16 --heads 2 --d-ff 32 --lr 1e-3 --threads 1)

# expect STATUS NAME COMMAND...: runs it (10 s at most: a hang is a failure), checks the exit status.
# EXPECT_LIMIT=SECONDS expect ...: a longer limit for a command that really trains or benchmarks
# (the CI runs this script beside the sanitizer build, at twice the quiet machine's times).
expect() {
  local want=$1 name=$2; shift 2
  timeout "${EXPECT_LIMIT:-10}" "$@" >"$out/last.log" 2>&1
  local got=$?
  if [ "$got" -eq "$want" ]; then ok "$name (exit $got)"; else bad "$name: exit $got, expected $want"; sed 's/^/      /' "$out/last.log" | tail -n 8; fi
}
# the log of the last command contains TEXT
says() { if grep -qF -- "$1" "$out/last.log"; then ok "  ...says '$1'"; else bad "  ...does not say '$1'"; sed 's/^/      /' "$out/last.log" | tail -n 8; fi; }
# the last command trained nothing (the check came first)
trained_nothing() { if grep -qE '^(epoch +[0-9]|Epoch: [0-9])' "$out/last.log"; then bad "  ...trained before failing"; else ok "  ...before any training"; fi; }

echo "== resume: --epochs/--steps is the total, the resumed run is the same run"
losses() { grep -E "$1" "$2" | sed -E 's/.*[Ll]oss:? ([-0-9.naif]+).*/\1/'; }
# same_run NAME TOTAL_OPTION LINE_PREFIX LINE_SUFFIX COMMAND...: 4 at once, and 2 then --resume to 4,
# print the same losses for 3 and 4 (lines PREFIX<n>SUFFIX) and write byte-identical final checkpoints
same_run() {
  local name=$1 total=$2 lines="$3[34]$4" any="$3[1-4]$4"; shift 4
  "$@" "$total" 4 --out "${name}_straight" >"${name}_straight.log" 2>&1
  "$@" "$total" 2 --out "${name}_split" >"${name}_first.log" 2>&1
  "$@" "$total" 4 --out "${name}_split" --resume "${name}_split/$name.safetensors" >"${name}_resumed.log" 2>&1
  local straight resumed; straight=$(losses "$lines" "${name}_straight.log"); resumed=$(losses "$lines" "${name}_resumed.log")
  if [ -n "$straight" ] && [ "$straight" = "$resumed" ] && [ "$(grep -cE "$any" "${name}_resumed.log")" -eq 2 ]; then
    ok "$name: 3 and 4 resumed print the same losses, and only those ($(echo "$resumed" | tr '\n' ' '))"
  else bad "$name resumed losses"; cat "${name}_straight.log" "${name}_resumed.log"; fi
  if cmp -s "${name}_straight/$name.safetensors" "${name}_split/$name.safetensors"; then ok "$name: final checkpoints byte-identical"
  else bad "$name: final checkpoints differ"; fi
}
same_run winter_games --epochs '^epoch +' '/4' "${wg[@]}"
same_run random_copy --steps '^Epoch: ' ',' "${rc[@]}"   # dropout 0.1: the generator is part of the run
for prog in reverse spiral; do
  unit=--steps; [ $prog = spiral ] && unit=--epochs
  "$build/examples/$prog" $unit 4 --threads 1 --out "${prog}_straight" >/dev/null 2>&1
  "$build/examples/$prog" $unit 2 --threads 1 --out "${prog}_split" >/dev/null 2>&1
  "$build/examples/$prog" $unit 4 --threads 1 --out "${prog}_split" --resume "${prog}_split/$prog.safetensors" >/dev/null 2>&1
  if cmp -s "${prog}_straight/$prog.safetensors" "${prog}_split/$prog.safetensors"; then ok "$prog: resumed final checkpoint byte-identical"
  else bad "$prog: resumed final checkpoint differs"; fi
done
expect 2 "random_copy --resume with another --seed (other data)" "${rc[@]}" --steps 4 --seed 1 --out rsplit --resume random_copy_split/random_copy.safetensors
says "that run has --seed 0, this command --seed 1"
expect 2 "winter_games --resume, --epochs below the epochs done" "${wg[@]}" --epochs 3 --out split --resume winter_games_split/winter_games.safetensors
says "--epochs 3 is fewer than the 4 epochs already done"

echo "== winter_games --tutorial-settings: the lesson as written (vocabularies, positions, 20 epochs, printout, test)"
expect 0 "winter_games --tutorial-settings" "${wg[@]}" --tutorial-settings --out lesson
says "the lesson as written: vocabularies of 7 and 8 ids ('I' and '我' are 0 = PAD; Beijing, Winter, Games are 4)"
says "Epoch: 0020 cost = "
says "I like the 2022 Beijing Winter Games -> ['"
if grep -q "^Epoch: 0021" last.log; then bad "  ...more than the lesson's 20 epochs"; else ok "  ...the lesson's 20 epochs"; fi
expect 0 "winter_games --tutorial-settings --epochs 2: an explicit option still counts" "${wg[@]}" --tutorial-settings --epochs 2 --out lesson2
if grep -q "^Epoch: 0003" last.log; then bad "  ...ran past --epochs 2"; else ok "  ...2 epochs"; fi

echo "== --save-init, and a model-only file resumes as a fresh run from its weights"
expect 0 "winter_games --save-init" "${wg[@]}" --epochs 1 --out init --save-init init/a.safetensors
"${wg[@]}" --epochs 1 --out init2 --save-init init2/a.safetensors >/dev/null 2>&1
"${wg[@]}" --epochs 1 --out init3 --seed 1 --save-init init3/a.safetensors >/dev/null 2>&1
if cmp -s init/a.safetensors init2/a.safetensors && ! cmp -s init/a.safetensors init3/a.safetensors; then ok "  ...the seeded initial weights: same seed, same bytes; another seed, others"
else bad "--save-init is not the seeded initial state"; fi
if grep -q "optimizer" init/a.safetensors; then bad "  ...the --save-init file holds optimizer state"; else ok "  ...a model-only file"; fi
expect 0 "winter_games --resume a model-only file" "${wg[@]}" --epochs 1 --out init4 --resume init/a.safetensors
says "model only: weights loaded; fresh optimizer, epoch 0"
expect 0 "random_copy --save-init" "${rc[@]}" --steps 1 --out rinit --save-init rinit/init.safetensors
[ -s rinit/init.safetensors ] && ok "  ...wrote it" || bad "  ...no file"

echo "== a run's files are never replaced by a lesser file or a device (issue 26)"
mkfifo "$out/save_fifo"
expect 2 "--save-init onto a fifo" "${rc[@]}" --steps 1 --out dev --save-init "$out/save_fifo"
says "not a regular file (a fifo)"; trained_nothing
if [ "$(id -u)" -eq 0 ] && mknod "$out/null" c 1 3; then  # a /dev/null of our own: the system's is never a target
  expect 2 "--save-init onto a character device" "${rc[@]}" --steps 1 --out dev --save-init "$out/null"
  says "not a regular file (a character device)"
  if [ -c "$out/null" ]; then ok "  ...still a character device"; else bad "  ...the device was replaced"; fi
fi
"${rc[@]}" --steps 2 --out keep >/dev/null 2>&1; cp keep/random_copy.safetensors keep/before.safetensors
expect 2 "--save-init onto the --resume file" "${rc[@]}" --steps 3 --out keep --resume keep/random_copy.safetensors --save-init keep/random_copy.safetensors
says "is the --resume file"
ln keep/random_copy.safetensors keep/hardlink.safetensors
expect 2 "--save-init onto the run's checkpoint under another name (a hard link)" "${rc[@]}" --steps 3 --out keep --save-init keep/hardlink.safetensors
says "is this run's checkpoint"
expect 2 "--save-init onto the run's checkpoint as ./keep/../keep/..." "${rc[@]}" --steps 3 --out keep --save-init ./keep/../keep/random_copy.safetensors
expect 2 "--save-init onto another run's checkpoint" "${rc[@]}" --steps 1 --out other --save-init keep/random_copy.safetensors
says "holds a training run (2 epochs or steps done)"
if cmp -s keep/before.safetensors keep/random_copy.safetensors; then ok "  ...the trained run is untouched"; else bad "  ...the trained run was overwritten"; fi

echo "== --resume: the options that define a run must match it; --lr may change, and says so"
for option in "--batch 3" "--dropout 0.2" "--heads 4" "--len 9" "--seed 1"; do
  expect 2 "random_copy --resume with $option" "${rc[@]}" --steps 3 --out keep2 --resume keep/before.safetensors $option
  says "that run has ${option%% *}"
done
expect 2 "winter_games --resume with --heads 1 (a usage error, before the shapes are compared)" "${wg[@]}" --epochs 5 --out split2 --heads 1 --resume winter_games_split/winter_games.safetensors
says "that run has --heads 2, this command --heads 1"
expect 0 "random_copy --resume with --lr 2e-3" "${rc[@]}" --steps 3 --out keep3 --resume keep/before.safetensors --lr 2e-3
says "--lr 0.002 replaces the run's 0.001 from step 3 on"

echo "== every option is checked before training (exit 2)"
for option in "--lr nan" "--lr inf" "--lr -1" "--dropout nan" "--dropout -0.1" "--dropout inf"; do
  expect 2 "random_copy $option" "${rc[@]}" $option
done
expect 2 "winter_games --lr nan" "${wg[@]}" --lr nan
expect 2 "winter_games --autocast fp16 (only bf16)" "${wg[@]}" --autocast fp16
says "--autocast"; trained_nothing
# bf16 is decided from the ISA oneDNN will use: ONEDNN_MAX_CPU_ISA below the CPU's was accepted
# (emulated products, 2.4-4.2x slower than fp32) or failed at the first product with oneDNN's error.
expect 2 "winter_games --autocast bf16, ONEDNN_MAX_CPU_ISA=AVX512_CORE" env ONEDNN_MAX_CPU_ISA=AVX512_CORE "${wg[@]}" --autocast bf16
says "ONEDNN_MAX_CPU_ISA=AVX512_CORE"; trained_nothing
expect 2 "winter_games --autocast bf16 --allow-slower-bf16, ONEDNN_MAX_CPU_ISA=AVX2" env ONEDNN_MAX_CPU_ISA=AVX2 "${wg[@]}" --autocast bf16 --allow-slower-bf16
says "no bf16 matrix product below avx512_core"; trained_nothing
expect 2 "spiral --lr nan" "$build/examples/spiral" --lr nan
expect 2 "random_copy --len 65536: attention's scores do not fit" "${rc[@]}" --len 65536
says "of them attention scores"; trained_nothing
expect 2 "graph --depth -2" "$build/examples/graph" --depth -2
says "--depth: -2 is below -1"
# a --module that names no module drew an empty graph and exited 0
expect 2 "graph --module naming no module" "$build/examples/graph" --module encoder.layers.5 --no-render --out "$out/graph_no_module"
says "graph: --module 'encoder.layers.5' names no module of the model; the modules under 'encoder.layers' are: encoder.layers.0"
if [ -e "$out/graph_no_module" ]; then bad "  ...made its --out folder"; else ok "  ...wrote nothing"; fi
expect 2 "graph --module with no such top-level module" "$build/examples/graph" --module Encoder --no-render --out "$out/graph_no_module"
says "names no module of the model; its modules are: encoder, decoder, projection"
expect 2 "graph --module below a module without sub-modules" "$build/examples/graph" --module projection.weight --no-render --out "$out/graph_no_module"
says "'projection' has no sub-modules (draw it with --module projection)"
expect 0 "graph --module decoder" "$build/examples/graph" --module decoder --no-render --out "$out/graph_decoder"
mkfifo "$out/fifo"
expect 2 "--resume a fifo does not hang" "${wg[@]}" --resume "$out/fifo"
says "not a regular file (a fifo)"; trained_nothing
expect 2 "--resume a folder" "${wg[@]}" --resume "$out"
says "not a regular file (a folder)"
expect 2 "--resume a missing file" "${rc[@]}" --resume "$out/missing.safetensors"
says "no such file"
expect 2 "XTGRAD_ISA with an unknown value" env XTGRAD_ISA=avx3 "${wg[@]}" --epochs 1
says "XTGRAD_ISA=avx3: expected baseline or avx512"; trained_nothing
expect 0 "XTGRAD_ISA=baseline runs" env XTGRAD_ISA=baseline "${wg[@]}" --epochs 1
# The GEMM backend is chosen at run time (gemm/gemm_backend.hpp): onednn or openblas, nothing else.
expect 2 "XTGRAD_GEMM_BACKEND with an unknown value" env XTGRAD_GEMM_BACKEND=mkl "${wg[@]}" --epochs 1
says "XTGRAD_GEMM_BACKEND: 'mkl' is neither onednn nor openblas"; trained_nothing
expect 0 "XTGRAD_GEMM_BACKEND=openblas runs" env XTGRAD_GEMM_BACKEND=openblas "${wg[@]}" --epochs 1
# bf16 on OpenBLAS (no bf16 product): refused before anything is written, a usage error
expect 2 "winter_games --autocast bf16 on OpenBLAS" env XTGRAD_GEMM_BACKEND=openblas "${wg[@]}" --autocast bf16 --out "$out/bf16-openblas/deep"
says "XTGRAD_GEMM_BACKEND=openblas"; trained_nothing
if [ -e "$out/bf16-openblas" ]; then bad "  ...made its --out folder"; else ok "  ...made no --out folder"; fi
expect 2 "xtgrad_bench --autocast bf16 on OpenBLAS" env XTGRAD_GEMM_BACKEND=openblas "$build/bench/xtgrad_bench" --config winter --autocast bf16
says "no bf16 matrix product"
if XTGRAD_GEMM_BACKEND=openblas timeout 60 "$build/bench/xtgrad_bench" --config winter --steps 1 --warmup 0 --json 2>&1 |
   grep -q '"gemm_backend":"openblas"'; then ok "xtgrad_bench under XTGRAD_GEMM_BACKEND=openblas reports it"
else bad "xtgrad_bench under XTGRAD_GEMM_BACKEND=openblas reports it"; fi
# XTGRAD_GEMM_PROFILE=1 counts xtgrad_bench's timed steps alone: after 2 warm-up steps the calls per
# shape are those of one step (a warm-up's fresh pages once made its products read 30x slower)
profile_calls() {
    XTGRAD_GEMM_PROFILE=1 timeout 60 "$build/bench/xtgrad_bench" --config winter --steps 1 --no-infer "$@" 2>&1 |
        awk '$1 ~ /^(NN|NT|TN|TT)$/ { print $1, $2, $3 }' | sort
}
one_step=$(profile_calls --warmup 0); after_warmup=$(profile_calls --warmup 2)
if [ -n "$one_step" ] && [ "$one_step" = "$after_warmup" ]; then ok "xtgrad_bench's GEMM profile leaves out its warm-up steps"
else bad "xtgrad_bench's GEMM profile leaves out its warm-up steps"; diff <(echo "$one_step") <(echo "$after_warmup") | head -n 8; fi
# The on/off switches (autograd/environment.hpp) take 1 or 0; "false" or "off" used to switch
# XTGRAD_TRACE and XTGRAD_GEMM_PROFILE on. Checked before training (a usage error).
for v in XTGRAD_TRACE=false XTGRAD_TRACE=off XTGRAD_GEMM_PROFILE=yes XTGRAD_GEMM_PROFILE=2 XTGRAD_BREAK_TRAP=true; do
  expect 2 "$v" env "$v" "${wg[@]}" --epochs 1
  says "${v%%=*}: '${v#*=}' is neither 1 ("; trained_nothing
done
expect 0 "XTGRAD_TRACE=0 and XTGRAD_GEMM_PROFILE= (empty) run" env XTGRAD_TRACE=0 XTGRAD_GEMM_PROFILE= "${wg[@]}" --epochs 1
expect 0 "XTGRAD_GEMM_PROFILE=1 prints the table at exit" env XTGRAD_GEMM_PROFILE=1 "${wg[@]}" --epochs 1
says "GEMM profile: "
# A break filter that stops nowhere says so once, with the nearest name, and training goes on.
expect 0 "XTGRAD_BREAK_OP misspelt" env XTGRAD_BREAK_OP=SoftMaxBackward "${wg[@]}" --epochs 2
says "break filter op 'SoftMaxBackward' matched none of the"
says "Did you mean 'SoftmaxBackward'?"
if [ "$(grep -c 'break filter' "$out/last.log")" = 1 ]; then ok "  ...once, not every epoch"; else bad "  ...told $(grep -c 'break filter' "$out/last.log") times"; fi
expect 0 "XTGRAD_BREAK_MODULE misspelt" env XTGRAD_BREAK_MODULE=encoder.layer.0 "${wg[@]}" --epochs 1
says "Did you mean 'encoder.layers.0'?"
expect 0 "XTGRAD_BREAK_OP that matches says nothing" env XTGRAD_BREAK_OP=SoftmaxBackward "${wg[@]}" --epochs 1
if grep -q 'break filter' "$out/last.log"; then bad "  ...said it matched nothing"; else ok "  ...no note"; fi
expect 2 "--layer beyond the layers" "${wg[@]}" --layer 2
says "--layer 2 is out of range for 2 layers"; trained_nothing
expect 2 "--layer below -layers" "${wg[@]}" --layer -3
expect 2 "--head beyond the heads" "${wg[@]}" --head 2
says "--head 2 is out of range for 2 heads"; trained_nothing
expect 2 "--epochs 0 without --resume" "${wg[@]}" --epochs 0
says "--epochs must be >= 1"
expect 2 "--steps 0 without --resume" "${rc[@]}" --steps 0
expect 2 "--epochs -1" "${wg[@]}" --epochs -1
expect 2 "--d-model 0" "${wg[@]}" --d-model 0
expect 2 "--d-model -1" "${wg[@]}" --d-model -1
expect 2 "--d-model overflowing size_t" "${wg[@]}" --d-model 99999999999999999999999
expect 2 "--batch overflowing" "${rc[@]}" --batch 18446744073709551617
expect 2 "absurd sizes (--layers 1000 --d-model 60000)" "${wg[@]}" --layers 1000 --d-model 60000 --d-ff 60000
says "GiB"; trained_nothing
expect 2 "random_copy absurd batch x len" "${rc[@]}" --batch 60000 --len 60000 --vocab 5000
expect 2 "random_copy --d-model not a multiple of --heads" "${rc[@]}" --d-model 15 --heads 2
expect 2 "random_copy --map-head past the heads" "${rc[@]}" --map-head 2
expect 2 "random_copy --map-layer past the layers" "${rc[@]}" --map-layer 1
expect 2 "--lr 0" "${wg[@]}" --lr 0
expect 2 "--threads 0" "${wg[@]}" --threads 0
echo "a file" >"$out/afile"
expect 2 "--out a file" "${wg[@]}" --out "$out/afile"
says "cannot create the folder"; trained_nothing
mkdir -p "$out/ro" && chmod 555 "$out/ro"
if [ "$(id -u)" -ne 0 ]; then
  expect 2 "--out a read-only folder" "${wg[@]}" --out "$out/ro"
else
  expect 2 "--out under a path that cannot be a folder" "${wg[@]}" --out "/proc/version/x"
fi
expect 2 "--save-init into a missing parent under a file" "${wg[@]}" --save-init "$out/afile/x.safetensors"
trained_nothing
expect 2 "--save-every with --out '' (spiral: no folder to save in)" "$build/examples/spiral" --out '' --save-every 5
expect 2 "an unknown option" "${wg[@]}" --no-such-option
expect 2 "a bad value" "${rc[@]}" --steps abc

echo "== a finished training is never thrown away by a display problem"
mkdir -p shown/dec_enc_attn_layer1_head0.svg   # a folder where the last heatmap goes: drawing it fails
expect 1 "winter_games: the heatmap cannot be written" "${wg[@]}" --epochs 2 --out shown
if [ -s shown/winter_games.safetensors ]; then ok "  ...the run was saved before drawing"; else bad "  ...the run is lost"; fi

echo "== a non-finite loss stops the run, names the step and keeps the last good checkpoint (exit 1)"
# The test aid is an absurd learning rate (documented in --help): with these sizes, deterministically,
#   winter_games --lr 1e9: epoch 2's layer norm overflows float (NaN, as torch's) and softmax refuses the scores
#   spiral --lr 1e30:      epoch 2's loss is NaN
#   --lr 1e30 on the Transformers: an op (softmax) refuses the overflowed scores of step 2
expect 1 "winter_games --lr 1e9 --save-every 1" "${wg[@]}" --epochs 6 --lr 1e9 --out nan --save-every 1
# Which row and layer overflow first depends on the GEMM backend's rounding (oneDNN or OpenBLAS).
says "winter_games: epoch 2: softmax: row "
says "of a tensor of shape (1,2,7,7) holds NaN"
says "training stopped before the optimizer step. The last good checkpoint, nan/winter_games.safetensors (epoch 1), is kept."
says "Run with --detect-anomaly to find the op where it is born."
# ... and its report page ends with that reason: outcome "error", not "finished"
if grep -q '"outcome": *"error"' nan/report.html && grep -q 'epoch 2: softmax: row ' nan/report.html; then
  ok "  ...the report page says the run ended in an error, and why"
else bad "  ...the report page does not name the error"; fi
# It loads (its weights, trained at lr 1e9, then fail the evaluation's softmax: exit 1, said so).
expect 1 "  ...and that checkpoint loads (--epochs 2: evaluate only)" "${wg[@]}" --epochs 2 --out nan --resume nan/winter_games.safetensors
says "resumed from nan/winter_games.safetensors (epoch 1 done)"
expect 1 "spiral --lr 1e30 --out ''" "$build/examples/spiral" --epochs 5 --lr 1e30 --out ''
says "spiral: epoch 2: the loss is NaN; training stopped before the optimizer step. This run saved no checkpoint."
"${wg[@]}" --epochs 2 --out nan2 >/dev/null 2>&1; cp nan2/winter_games.safetensors nan2/before.safetensors
expect 1 "winter_games --lr 1e30 resumed from a good run: an op fails in epoch 4" "${wg[@]}" --epochs 4 --lr 1e30 --out nan2 --resume nan2/winter_games.safetensors
says "winter_games: epoch 4: softmax:"
says "This run saved no checkpoint; nan2/winter_games.safetensors is left as it was."
if cmp -s nan2/before.safetensors nan2/winter_games.safetensors; then ok "  ...the good checkpoint is not overwritten"; else bad "  ...the bad run overwrote the checkpoint"; fi
expect 1 "--detect-anomaly re-runs the step in anomaly mode and names the op and module" "${wg[@]}" --epochs 6 --lr 1e9 --out nan3 --detect-anomaly
says "anomaly mode, re-running epoch 2: anomaly mode: LayerNormBackward produced NaN"
says "it ran in module 'encoder.layers.0.enc_self_attn.layer_norm'"
expect 1 "spiral --detect-anomaly" "$build/examples/spiral" --epochs 5 --lr 1e30 --detect-anomaly
says "anomaly mode, re-running epoch 2: anomaly mode: LinearBackward produced "
expect 1 "random_copy --lr 1e30" "${rc[@]}" --steps 6 --lr 1e30 --out rnan
if grep -qE "^random_copy: step [0-9]+: .*training stopped before the optimizer step" last.log; then ok "  ...names the step"; else bad "  ...names the step"; fi
expect 1 "curvature --lr 1e308: gradient descent diverges" "$build/examples/curvature" --lr 1e308 --epochs 3
says "gradient descent at lr 1e+308 diverged"

echo "== one convention everywhere: --help (options, exit codes, environment) exits 0; a bad option exits 2"
for prog in examples/winter_games examples/random_copy examples/reverse examples/spiral examples/graph \
            examples/tutorial_d_walkthrough examples/activations examples/maml_sine bench/hvp_bench bench/xtgrad_bench bench/skinny_bench bench/ddp_bench bench/ceiling_bench \
            bench/vector_bench bench/layer_norm_bench bench/matmul_primitive_probe bench/narrow_product_probe bench/packed_b_probe bench/own_gemm_probe bench/pool_wake_bench bench/cross_core_probe tools/parity tools/report_compare; do
  # the probes of oneDNN (its matmul primitive, its sgemm on narrow products, B packed, against an own kernel) are built only with -Dgemm=onednn
  case "$prog" in bench/matmul_primitive_probe|bench/narrow_product_probe|bench/packed_b_probe|bench/own_gemm_probe) [ -x "$build/$prog" ] || continue;; esac
  [ -x "$build/$prog" ] || { bad "$prog is not built"; continue; }
  if timeout 10 "$build/$prog" --help >help.log 2>&1 && grep -q XTGRAD_TRACE help.log && grep -q XTGRAD_BREAK_OP help.log \
     && grep -q XTGRAD_ISA help.log && grep -q XTGRAD_GEMM_BACKEND help.log && grep -q "the other speed switches" help.log \
     && grep -q "Exit status: 0 success, 1 runtime error" help.log; then ok "$prog --help"; else bad "$prog --help"; cat help.log; fi
  # the help into a full device is a failed write, not a success
  timeout 10 "$build/$prog" --help >/dev/full 2>help_full.log; st=$?
  if [ "$st" -eq 1 ] && grep -q "could not write the help" help_full.log; then ok "$prog --help >/dev/full (exit 1)"
  else bad "$prog --help >/dev/full: exit $st"; cat help_full.log; fi
  timeout 10 "$build/$prog" --no-such-option >/dev/null 2>&1; st=$?
  if [ "$st" -eq 2 ]; then ok "$prog --no-such-option (exit 2)"; else bad "$prog --no-such-option: exit $st"; fi
done
if [ -x "$build/bench/narrow_product_probe" ]; then  # its one option, checked before any product
  expect 2 "narrow_product_probe --reps 0" "$build/bench/narrow_product_probe" --reps 0
  says "--reps: 0 is below 1"
  expect 2 "narrow_product_probe --reps 10001" "$build/bench/narrow_product_probe" --reps 10001
fi
if [ -x "$build/bench/own_gemm_probe" ]; then  # its options and its ISA, checked before any product
  expect 2 "own_gemm_probe --mr 10" "$build/bench/own_gemm_probe" --mr 10
  says "--mr: '10' is not 8, 12 or 14"
  expect 2 "own_gemm_probe --mr 12x" "$build/bench/own_gemm_probe" --mr 12x
  says "--mr: '12x' is not 8, 12 or 14"
  expect 2 "own_gemm_probe --kc 8" "$build/bench/own_gemm_probe" --kc 8
  says "--kc: 8 is below 16"
  XTGRAD_ISA=baseline expect 2 "own_gemm_probe without AVX-512" "$build/bench/own_gemm_probe" --reps 1
  says "own_gemm_probe: the kernel runs on AVX-512, and xtgrad's kernels run baseline here (XTGRAD_ISA)"
fi
# a table that could not be written is a failure (cli::run_main), not a silent success
expect 1 "skinny_bench into a full device" sh -c "'$build/bench/skinny_bench' --reps 1 >/dev/full"
says "could not write its output to the standard output"
expect 1 "skinny_bench into a closed stdout" sh -c "'$build/bench/skinny_bench' --reps 1 >&-"
says "could not write its output to the standard output"
if [ -x "$build/bench/packed_b_probe" ]; then  # both options, checked before any product
  expect 2 "packed_b_probe --piece 8" "$build/bench/packed_b_probe" --piece 8
  says "--piece: 8 is below 16"
  expect 2 "packed_b_probe --reps 0" "$build/bench/packed_b_probe" --reps 0
  says "--reps: 0 is below 1"
  XTGRAD_GEMM_BACKEND=openblas expect 2 "packed_b_probe on OpenBLAS" "$build/bench/packed_b_probe" --reps 1
  says "packed_b_probe measures oneDNN"
fi
# counts say what is wrong in words (CLI11's PositiveNumber said "Value 0 not in range 0.000000 to 1.79769e+308")
expect 2 "xtgrad_bench --steps 0" "$build/bench/xtgrad_bench" --steps 0
says "--steps: 0 is below 1"
expect 2 "xtgrad_bench --warmup -1" "$build/bench/xtgrad_bench" --warmup -1
says "--warmup: -1 is below 0"
expect 2 "xtgrad_bench --steps 2.5" "$build/bench/xtgrad_bench" --steps 2.5
says "'2.5' is not a whole number"
expect 2 "random_copy --save-every -1" "${rc[@]}" --save-every -1
says "--save-every: -1 is below 0"
for prog in examples/winter_games examples/random_copy examples/reverse examples/spiral bench/xtgrad_bench bench/skinny_bench bench/ddp_bench tools/parity; do
  if "$build/$prog" --help | grep -A1 -- "--threads" | grep -q "(oneDNN or OpenBLAS) and for xtgrad's own kernels"; then ok "$prog --threads: the shared meaning"; else bad "$prog --threads"; fi
done
echo "== paths that start with '-' and short fixture lists (issue 26)"
if command -v dot >/dev/null; then
  expect 0 "graph --out -rf: a folder named -rf, never an option of dot" "$build/examples/graph" --out -rf
  if [ -s ./-rf/encoder_layer.svg ]; then ok "  ...rendered -rf/encoder_layer.svg"; else bad "  ...no -rf/encoder_layer.svg"; fi
fi
cp -r "$src/tests/fixtures/small/adam" short_lr
python3 - short_lr/meta.json <<'PY'
import json, sys
meta = json.load(open(sys.argv[1]))
meta["optimizer"]["lr_per_step"] = meta["optimizer"]["lr_per_step"][:2]
json.dump(meta, open(sys.argv[1], "w"))
PY
expect 1 "parity: a fixture whose lr_per_step is shorter than its steps" "$build/tools/parity" short_lr
says "lr_per_step has 2 entries for 5 steps"
expect 2 "parity with neither DIR nor --all" "$build/tools/parity"
expect 1 "parity on a folder that is no fixture" "$build/tools/parity" "$out/init"


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
if [[ $(wc -l <<<"$listed") -eq 17 ]] && ! grep -vqE '^XTGRAD_[A-Z0-9_]+ (on|off)( [a-z,-]+)?$' <<<"$listed" &&
   grep -qx XTGRAD_NARROW_NN_TRANSPOSED <<<"$speed_switches"; then
  ok "xtgrad_bench --list-switches: 17 switches, each with this CPU's default"
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
# the programs with their own option handling go through cli::run_main too: a lost table or log is exit 1
expect 1 "xtgrad_bench's table into a full device" sh -c "'$build/bench/xtgrad_bench' --config winter --steps 1 --warmup 0 >/dev/full"
says "xtgrad_bench: could not write its output to the standard output"
expect 1 "graph's log into a closed stdout" sh -c "'$build/examples/graph' --no-render --out '$out/graph_closed' >&-"
says "graph: could not write its output to the standard output"
expect 1 "tutorial_d_walkthrough into a full device" sh -c "'$build/examples/tutorial_d_walkthrough' --out '$out/walk_full' >/dev/full"
says "tutorial_d_walkthrough: could not write its output to the standard output"
# a message quotes the command line as a terminal can show it: a stray byte, an escape code as \xHH
expect 2 "xtgrad_bench --config with a stray byte and an escape code" "$build/bench/xtgrad_bench" --config $'\xff\e[2J'
says "xtgrad_bench: --config: \\xff\\x1b[2J not in {winter,seed-b,seed-d,all}"
if LC_ALL=C grep -q $'\e' "$out/last.log"; then bad "  ...sent the escape code"; else ok "  ...sent no escape code"; fi
# graph with a dot that fails: exit 1 naming the file and dot's status (an Error through run_main)
mkdir -p "$out/failing_dot" && printf '#!/bin/sh\nexit 3\n' >"$out/failing_dot/dot" && chmod +x "$out/failing_dot/dot"
expect 1 "graph with a Graphviz dot that fails" env PATH="$out/failing_dot:$PATH" "$build/examples/graph" --out "$out/graph_dot"
says "graph: dot failed on $out/graph_dot/encoder_layer.dot (exit status 3)"
# a dot that exits 0 and writes nothing is no rendering; the paths on stdout are shown, not sent
printf '#!/bin/sh\nexit 0\n' >"$out/failing_dot/dot"
expect 1 "graph with a dot that exits 0 and writes nothing" env PATH="$out/failing_dot:$PATH" "$build/examples/graph" --out "$out/graph_esc_"$'\e[2J'
says "graph: dot exited 0 but wrote no $out/graph_esc_\x1b[2J/encoder_layer.svg"
says "wrote $out/graph_esc_\x1b[2J/encoder_layer.dot"
if LC_ALL=C grep -q $'\e' "$out/last.log"; then bad "  ...sent the escape code"; else ok "  ...sent no escape code"; fi
# a value ending in a newline stays one line; the switches' values keep UTF-8 text readable
expect 2 "spiral --epochs \$'1\\n'" "$build/examples/spiral" --epochs $'1\n'
says "spiral: --epochs: '1\x0a' is not a whole number"
# ...and so does a flag given a value with a newline in it (found by fuzz/command_line_fuzzer.cpp)
expect 2 "xtgrad_bench --list-switches=\$'0\\ny'" "$build/bench/xtgrad_bench" --list-switches=$'0\ny'
says "--list-switches takes no value (got '--list-switches=0\x0ay')"
[ "$(wc -l <"$out/last.log")" -eq 2 ] && ok "  ...in one line and the --help pointer" || bad "  ...over more lines"
expect 2 "XTGRAD_TRACE=北京" env XTGRAD_TRACE=北京 "$build/examples/spiral" --epochs 1 --out ''
says "XTGRAD_TRACE: '北京' is neither 1"
expect 0 "XTGRAD_BREAK_OP with an escape code: the note shows it" env XTGRAD_BREAK_OP=$'\e[2J' "$build/examples/spiral" --epochs 1 --out ''
says "break filter op '\x1b[2J' matched none"
if LC_ALL=C grep -q $'\e' "$out/last.log"; then bad "  ...sent the escape code"; else ok "  ...sent no escape code"; fi
# every --seed, --layer and --head is a count too (CLI11 read --seed 0x10 as 16, -1 as 2^64 - 1)
expect 2 "winter_games --seed 0x10" "${wg[@]}" --seed 0x10 --epochs 1 --out "$out/wg_seed"
says "--seed: '0x10' is not a whole number"; trained_nothing
expect 2 "random_copy --map-head -1" "$build/examples/random_copy" --map-head -1
says "--map-head: -1 is below 0"
expect 2 "forward_mode --sizes 0x4:4" "$build/examples/forward_mode" --sizes 0x4:4
says "--sizes: in '0x4:4': '0x4' is not a whole number"
expect 2 "forward_mode --sizes 4: (std::stoul threw \"stoul\")" "$build/examples/forward_mode" --sizes 4:
expect 2 "pool_wake_bench --reps x names the program, not argv[0]" "$build/bench/pool_wake_bench" --reps x
says "pool_wake_bench: --reps: 'x' is not a whole number"
expect 2 "cross_core_probe --floats 31" "$build/bench/cross_core_probe" --floats 31
says "cross_core_probe: --floats: 31 is below 32"
expect 2 "cross_core_probe --floats 67108865" "$build/bench/cross_core_probe" --floats 67108865
says "--floats: 67108865 is above 67108864"
expect 2 "cross_core_probe --reps 0" "$build/bench/cross_core_probe" --reps 0
expect 0 "cross_core_probe --reps 3 --floats 33 (an odd length: halves of 16 and 17)" "$build/bench/cross_core_probe" --reps 3 --floats 33
if [ "$(grep -cE '^ +[0-9]+\.[0-9]  (this|the other|each) ' last.log)" = 4 ]; then ok "  ...a time for each of the 4 cases"; else bad "  ...a time for each of the 4 cases"; cat last.log; fi
# the reason for exit 1 is on stderr, where a script's log keeps it
expect 1 "parity on a folder that does not exist" sh -c "'$build/tools/parity' /nonexistent 2>&1 >/dev/null"
says "parity: no meta.json in '/nonexistent'"
expect 1 "parity --all on an empty folder" sh -c "mkdir -p '$out/no_cases' && '$build/tools/parity' --all '$out/no_cases' 2>&1 >/dev/null"
says "parity: no case folder"
EXPECT_LIMIT=60 expect 1 "winter_games --check on a run too short to translate: the reason on stderr" sh -c "'$build/examples/winter_games' --d-model 8 --d-ff 8 --d-k 4 --d-v 4 --layers 1 --heads 1 --epochs 1 --quiet --check --no-report --out '$out/wg_check' 2>&1 >/dev/null"
says "winter_games: --check: the greedy translation is"
# report_compare: --names split by itself (CLI11 read "--names=, -o page.html" as the names "-o" and "page.html")
expect 2 "report_compare --names=, -o page.html" "$build/tools/report_compare" "$src/README.md" "$src/README.md" --names=, -o "$out/rc_page.html"
says "--names: name 1 is empty"
[ ! -e "$out/rc_page.html" ] && [ ! -e compare.html ] && ok "  ...wrote no page" || bad "  ...wrote a page"
expect 2 "report_compare --no-such-option names the option (CLI11 said \"reports is required\")" "$build/tools/report_compare" --no-such-option
says "The following arguments were not expected: --no-such-option"
# every count is cli::count_in's: CLI11's Range read 0x10 as 16 and 010 as 8, and said "Value 0 not in range 1 to 10000"
expect 2 "graph --depth 0x10 (a count is decimal digits)" "$build/examples/graph" --depth 0x10 --no-render --out "$out/graph_hex"
says "--depth: '0x10' is not a whole number"

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

echo "== bench/results.py: each cell of the switches table from the newest run that measured it"
# An older run of two switches on two configs (seed-b at the default batch, named without it),
# then a run of one switch on one config: its cell replaces that one alone.
python3 - "$out/switches.jsonl" <<'PY'
import json, sys
def line(run_id, pair, run, side, rnd, ms, batch=None):
    return {"mode": "switches", "pair": pair, "side": side, "round": rnd, "run": run, "run_id": run_id,
            "cpu": "Test CPU", "cpu_id": "Test family 1 model 2", "commit": run_id[:4], "load": 1.0,
            "result": {"batch": batch, "switch_defaults": {"XTGRAD_B": False}, "phases": {"step": {"median_ms": ms}}}}
rows = []
for rnd in (1, 2):
    for pair in ("XTGRAD_A", "XTGRAD_B"):
        rows += [line("2026-01-01T00:00:00Z", pair, "seed-d:1", "on", rnd, 100), line("2026-01-01T00:00:00Z", pair, "seed-d:1", "off", rnd, 110),
                 line("2026-01-01T00:00:00Z", pair, "seed-b:2", "on", rnd, 200, 64), line("2026-01-01T00:00:00Z", pair, "seed-b:2", "off", rnd, 180, 64)]
    rows += [line("2026-02-01T00:00:00Z", "XTGRAD_B", "seed-b:2:64", "on", rnd, 100, 64),
             line("2026-02-01T00:00:00Z", "XTGRAD_B", "seed-b:2:64", "off", rnd, 150, 64),
             line("2026-03-01T00:00:00Z", "XTGRAD_A", "seed-d:1", "on", rnd, 50)]  # one side: replaces nothing
open(sys.argv[1], "w").write("".join(json.dumps(r) + "\n" for r in rows))
PY
expect 0 "bench/results.py render of two switch runs" python3 "$src/bench/results.py" render "$out/switches.jsonl"
says "| run (config:threads[:batch]) | \`A\` (default on) | \`B\` (default off) |"
says "| seed-d:1 | **1.10** | **1.10** |"
says "| seed-b:2:64 | **0.90** | **1.50** |"
says "Run 2026-02-01T00:00:00Z (\`B\`: seed-b:2:64)"
# A switch measured in one process (xtgrad_bench --alternate): bold where one side won every pair
# of steps, not where one round's medians beat the other's (with one round, always)
python3 - "$out/alternated.jsonl" <<'PY'
import json, sys
def line(pair, side, samples):
    ms = sorted(samples)[len(samples) // 2]
    return {"mode": "switches", "pair": pair, "side": side, "round": 1, "run": "winter:1", "run_id": "2026-04-01T00:00:00Z",
            "cpu": "Test CPU", "cpu_id": "Test family 1 model 2", "commit": "2026", "load": 1.0,
            "result": {"batch": None, "switch_defaults": {}, "phases": {"step": {"median_ms": ms}},
                       "alternated": {"switch": pair, "side": side, "samples": {"step": samples}}}}
rows = [line("XTGRAD_A", "on", [100, 101, 102, 103]), line("XTGRAD_A", "off", [110, 111, 112, 113]),  # on won every pair
        line("XTGRAD_B", "on", [100, 120, 102, 103]), line("XTGRAD_B", "off", [110, 111, 112, 113]),  # on lost one
        line("XTGRAD_C", "on", [100, 101, 102]), line("XTGRAD_C", "off", [110, 111, 112])]  # 3 pairs: 1 in 4 by chance
open(sys.argv[1], "w").write("".join(json.dumps(r) + "\n" for r in rows))
PY
expect 0 "bench/results.py render of a switch run in one process" python3 "$src/bench/results.py" render "$out/alternated.jsonl"
says "| winter:1 | **1.10** | 1.10 | 1.10 |"
says "the median of its pairs' ratios, bold where one side won every pair, at least 4"
# A cell whose run could not act stays blank, by the newest line's switch_tags (an older run
# timed Adam's prefetch on two threads and on seed-d without an optimizer: noise)
python3 - "$out/tags.jsonl" <<'PY'
import json, sys
def line(run_id, run, side, ms, tags=None, opt=True):
    phases = {"step": {"median_ms": ms}, **({"opt": {"median_ms": 1}} if opt else {})}
    return {"mode": "switches", "pair": "XTGRAD_A", "side": side, "round": 1, "run": run, "run_id": run_id,
            "cpu": "Test CPU", "cpu_id": "Test family 1 model 2", "commit": "2026", "load": 1.0,
            "result": {"batch": None, "threads": int(run.split(":")[1]), "switch_defaults": {}, "phases": phases,
                       **({"switch_tags": tags} if tags is not None else {})}}
rows = [line("2026-05-01T00:00:00Z", "winter:2", s, ms) for s, ms in (("on", 100), ("off", 130))] + \
       [line("2026-05-01T00:00:00Z", "seed-d:1", s, ms, opt=False) for s, ms in (("on", 100), ("off", 140))] + \
       [line("2026-05-01T00:00:00Z", "winter:1", s, ms) for s, ms in (("on", 100), ("off", 120))] + \
       [line("2026-06-01T00:00:00Z", "seed-b:1", s, 100, {"XTGRAD_A": "one-thread,optimizer"}) for s in ("on", "off")]
open(sys.argv[1], "w").write("".join(json.dumps(r) + "\n" for r in rows))
PY
expect 0 "bench/results.py render of a switch measured where it cannot act" python3 "$src/bench/results.py" render "$out/tags.jsonl"
says "| winter:1 | **1.20** |"
if grep -q "| winter:2 |\|| seed-d:1 |" "$out/last.log"; then bad "  ...cells where it could not act: $(grep -a "| winter:2 \|| seed-d:1" "$out/last.log")"
else ok "  ...no cell on 2 threads or without an optimizer"; fi
says "Left blank where a switch cannot act (its words in \`xtgrad_bench --list-switches\`): \`A\` on seed-d:1, winter:2."
# tags that move a switch to the inference, on lines whose alternating samples hold the step alone
# (a KeyError traceback); and a CPU whose every cell is left blank keeps a table that says why
python3 - "$out/tags2.jsonl" <<'PY'
import json, sys
def line(pair, side, run, tags):
    return {"mode": "switches", "pair": pair, "side": side, "round": 1, "run": run, "run_id": "2026-07-01T00:00:00Z",
            "cpu": "Test CPU", "cpu_id": "Test family 1 model 2", "commit": "2026", "load": 1.0,
            "result": {"batch": None, "threads": int(run.split(":")[1]), "switch_defaults": {}, "switch_tags": tags,
                       "phases": {"step": {"median_ms": 100}, "infer": {"median_ms": 50}},
                       "alternated": {"switch": pair, "side": side, "samples": {"step": [100, 100, 100, 100]}}}}
tags = {"XTGRAD_B": "inference", "XTGRAD_C": "workers"}
rows = [line("XTGRAD_B", s, "winter:2", tags) for s in ("on", "off")] + [line("XTGRAD_C", s, "winter:1", tags) for s in ("on", "off")]
open(sys.argv[1], "w").write("".join(json.dumps(r) + "\n" for r in rows))
PY
expect 0 "bench/results.py render of an inference switch without inference samples" python3 "$src/bench/results.py" render "$out/tags2.jsonl"
says "| winter:2 | 1.00 |"
says "\`C\` on winter:1."
grep '"pair": "XTGRAD_C"' "$out/tags2.jsonl" > "$out/tags3.jsonl"  # C's lines alone: workers on one thread
expect 0 "bench/results.py render of a CPU whose every cell is left blank" python3 "$src/bench/results.py" render "$out/tags3.jsonl"
says "Left blank where a switch cannot act"
# A default changed between two runs (A, off in the older run of B, on in the newer of A): the
# header names the newest run's, wherever its lines are in the files (the last line's used to)
python3 - "$out/defaults.jsonl" <<'PY'
import json, sys
def line(run_id, pair, side, a_on):
    return {"mode": "switches", "pair": pair, "side": side, "round": 1, "run": "seed-d:1", "run_id": run_id,
            "cpu": "Test CPU", "cpu_id": "Test family 1 model 2", "commit": run_id[:4], "load": 1.0,
            "result": {"batch": None, "switch_defaults": {"XTGRAD_A": a_on, "XTGRAD_B": True},
                       "phases": {"step": {"median_ms": 100}}}}
rows = [line("2026-05-01T00:00:00Z", "XTGRAD_A", s, True) for s in ("on", "off")] + \
       [line("2026-04-01T00:00:00Z", "XTGRAD_B", s, False) for s in ("on", "off")]
open(sys.argv[1], "w").write("".join(json.dumps(r) + "\n" for r in rows))
PY
expect 0 "bench/results.py render of a switch whose default changed" python3 "$src/bench/results.py" render "$out/defaults.jsonl"
says "| run (config:threads[:batch]) | \`A\` (default on) | \`B\` (default on) |"
# The targets table takes each config from the newest run that measured it: a later run of
# seed-d alone replaces seed-d's rows, and winter's stay from the older run.
python3 - "$out/targets.jsonl" <<'PY'
import json, sys
def line(run_id, config, infer, framework="xtgrad", in_backward=False):
    return {"framework": framework, "config": config, "threads": 1, "batch": None, "autocast": None,
            "optimizer_in_backward": in_backward,
            "fwd_matmul_gflop": 1.0, "peak_rss_mib": 100, "run_id": run_id, "cpu": "Test CPU",
            "cpu_id": "Test family 1 model 2", "commit": run_id[:4], "load": 1.0,
            "phases": {"step": {"median_ms": 300}, "fwd": {"median_ms": 100}, "bwd": {"median_ms": 200},
                       "infer": {"median_ms": infer}}}
rows = [line("2026-01-01T00:00:00Z", "winter", 50), line("2026-01-01T00:00:00Z", "winter", 50, in_backward=True),
        line("2026-01-01T00:00:00Z", "winter", 50, "torch"), line("2026-01-01T00:00:00Z", "seed-d", 40),
        line("2026-02-01T00:00:00Z", "seed-d", 20), line("2026-02-01T00:00:00Z", "seed-d", 30, "torch"),
        line("2026-02-01T00:00:00Z", "seed-d", 20, in_backward=True)]
open(sys.argv[1], "w").write("".join(json.dumps(r) + "\n" for r in rows))
PY
expect 0 "bench/results.py render of two benchmark runs" python3 "$src/bench/results.py" render "$out/targets.jsonl"
says "Run 2026-01-01T00:00:00Z (winter, winter with the step in backward), commit 2026, 1-minute load 1.0-1.0; Run 2026-02-01T00:00:00Z (seed-d, seed-d with the step in backward), commit 2026"
# seed-d's bwd with the step in backward holds the optimizer: no fwd + bwd row to set against torch's
if grep -q "seed-d, step in backward | 1 | fwd + bwd" "$out/last.log"; then bad "  ...seed-d's step in backward set against fwd + bwd"; else ok "  ...no fwd + bwd row for seed-d's step in backward"; fi
says "|  |  | inference | 20.0 | - | - | - | 30.0 | 0.67 | - |  |"
if grep -q "| 40.0 |" "$out/last.log"; then bad "  ...the older seed-d run's rows stayed"; else ok "  ...the older seed-d rows replaced"; fi
# xtgrad's step in backward gets a row of its own, against torch's step (torch has no such mode)
says "| winter | 1 | step | 300.0 | - | - | - | 300.0 | 1.00 | - | 100 / 100 |"
says "| winter, step in backward | 1 | step | 300.0 | - | - | - | 300.0 | 1.00 | - | 100 / 100 |"
# xtgrad_bench --paired-ceiling lines give the ceiling column's bracket (the median of the steps'
# ratios, each against the ceiling measured just before it), and nothing else: not the ms, not RSS
python3 - "$out/targets.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
machine = {"framework": "machine", "cpu": "Test CPU", "cpu_id": "Test family 1 model 2", "run_id": "2026-02-01T00:00:00Z",
           "commit": "2026", "load": 1.0, "fma_avx512_gflops_per_core": 10.0, "sgemm": [{"threads": 1, "gflops": 10.0}]}
paired = dict(rows[4], peak_rss_mib=None, phases={"step": {"median_ms": 9}, "fwd": {"median_ms": 3}, "bwd": {"median_ms": 6},
              "infer": {"median_ms": 2}},
              paired_ceiling={"reps": 2, "step_gflops": [8.0, 9.0], "infer_gflops": [9.0, 9.0],
                              "x_ceiling": {"fwd+bwd": 1.234, "step": 1.25, "infer": 1.111}})
open(sys.argv[1] + ".paired", "w").write("".join(json.dumps(r) + "\n" for r in rows + [machine, paired]))
PY
expect 0 "bench/results.py render with a --paired-ceiling line" python3 "$src/bench/results.py" render "$out/targets.jsonl.paired"
# The history table: each target over every run that measured it, the newest run's ratio, the
# range, how many met the bound. seed-d's fwd + bwd sits at the ceiling (1.00) in both runs, its
# paired 1.23 the higher; inference 0.40 then 0.20; winter's step 1.00 × torch, over its 0.25.
says "| target | bound | Test family 1 model 2 |"
says "| seed-d fwd + bwd, 1 thread | ≤ 1.2× | 1.00 (1.00-1.00; met in 2 of 2) |"
says "| seed-d inference, 1 thread | ≤ 1.2× | 0.20 (0.20-0.40; met in 2 of 2) |"
says "| winter step, 1 thread, × torch | ≤ 0.25× | 1.00 (1.00-1.00; met in 0 of 1) |"
says "| seed-b step, batch 64, 2 threads | ≤ 1.3× | - |"
# A newer run of --paired-ceiling lines alone neither decides which run is newest nor fails (it
# raised ValueError, or dropped the older run's rows where the newer run had others)
python3 - "$out/targets.jsonl.paired" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
later = dict(rows[-1], run_id="2026-09-01T00:00:00Z")
winter = dict(rows[0], run_id="2026-09-01T00:00:00Z")
open(sys.argv[1] + ".later", "w").write("".join(json.dumps(r) + "\n" for r in rows + [later, winter]))
PY
expect 0 "bench/results.py render with a newer run of --paired-ceiling lines alone" python3 "$src/bench/results.py" render "$out/targets.jsonl.paired.later"
says "| seed-d | 1 | fwd + bwd | 300.0 | 300.0 | 1.00 | 1.00 (1.23× paired) | 300.0 | 1.00 | - | 100 / 100 |"
# seed-d: 1 GFLOP forward, ceiling 10 GFLOP/s on 1 thread: fwd + bwd 300 ms at 300 ideal
says "| seed-d | 1 | fwd + bwd | 300.0 | 300.0 | 1.00 | 1.00 (1.23× paired) | 300.0 | 1.00 | - | 100 / 100 |"
says "|  |  | inference | 20.0 | 100.0 | 0.20 | 0.20 (1.11× paired) | 30.0 | 0.67 | - |  |"
if grep -q "| 9.0 |" "$out/last.log"; then bad "  ...a --paired-ceiling line's ms entered the table"; else ok "  ...its ms stay out of the table"; fi
# A newer run of the step in backward alone replaces those rows alone: the older run's other rows,
# and their torch, stay
python3 - "$out/targets.jsonl" <<'PY'
import json, sys
newer = {"framework": "xtgrad", "config": "winter", "threads": 1, "optimizer_in_backward": True, "peak_rss_mib": 90,
         "run_id": "2026-03-01T00:00:00Z", "cpu": "Test CPU", "cpu_id": "Test family 1 model 2", "commit": "2026",
         "load": 1.0, "phases": {"step": {"median_ms": 150}}}
open(sys.argv[1], "a").write(json.dumps(newer) + "\n")
PY
expect 0 "bench/results.py render with a newer run of the step in backward alone" python3 "$src/bench/results.py" render "$out/targets.jsonl"
says "| winter | 1 | step | 300.0 | - | - | - | 300.0 | 1.00 | - | 100 / 100 |"
says "| winter, step in backward | 1 | step | 150.0 | - | - | - | - | - | - | 90 / - |"
# A run of 3 rounds (run.sh --rounds 3): each side's median run, torch's per OpenBLAS setting, not
# its luckiest round (inference: xtgrad 20, 60, 25 -> 25; torch 30, 10, 50 -> 30)
python3 - "$out/targets.jsonl" <<'PY'
import json, sys
def line(framework, infer):
    return {"framework": framework, "config": "seed-d", "threads": 1, "batch": None, "autocast": None,
            "optimizer_in_backward": False, "fwd_matmul_gflop": 1.0, "peak_rss_mib": 100,
            "run_id": "2026-04-01T00:00:00Z", "cpu": "Test CPU", "cpu_id": "Test family 1 model 2", "commit": "2026",
            "load": 1.0, "openblas_env": "pinned" if framework == "torch" else None,
            "openblas_core": "Haswell" if framework == "torch" else None,
            "phases": {"step": {"median_ms": 300}, "fwd": {"median_ms": 100}, "bwd": {"median_ms": 200},
                       "infer": {"median_ms": infer}}}
rows = [line("xtgrad", 20), line("torch", 30), line("xtgrad", 60), line("torch", 10), line("xtgrad", 25), line("torch", 50)]
open(sys.argv[1] + ".rounds", "w").write(open(sys.argv[1]).read() + "".join(json.dumps(r) + "\n" for r in rows))
PY
expect 0 "bench/results.py render of a run of 3 rounds" python3 "$src/bench/results.py" render "$out/targets.jsonl.rounds"
says "|  |  | inference | 25.0 | - | - | - | 30.0 | 0.83 | - |  |"
# seed-b's targets name two batches: a newer run at 16 adds its rows beside the older run's at 64
# (it replaced them), and a run at another batch (run.sh --quick's 8) gets no row
python3 - "$out/batches.jsonl" <<'PY'
import json, sys
def line(run_id, batch, framework, step):
    return {"framework": framework, "config": "seed-b", "threads": 2, "batch": batch, "autocast": None,
            "optimizer_in_backward": False, "fwd_matmul_gflop": 1.0, "peak_rss_mib": 100, "run_id": run_id,
            "cpu": "Test CPU", "cpu_id": "Test family 1 model 2", "commit": "2026", "load": 1.0,
            "phases": {"step": {"median_ms": step}, "infer": {"median_ms": step / 3}}}
rows = [line("2026-01-01T00:00:00Z", 64, "xtgrad", 600), line("2026-01-01T00:00:00Z", 64, "torch", 900),
        line("2026-02-01T00:00:00Z", 16, "xtgrad", 150), line("2026-02-01T00:00:00Z", 16, "torch", 300),
        line("2026-03-01T00:00:00Z", 8, "xtgrad", 75), line("2026-03-01T00:00:00Z", 8, "torch", 80)]
open(sys.argv[1], "w").write("".join(json.dumps(r) + "\n" for r in rows))
PY
expect 0 "bench/results.py render of seed-b at two batches" python3 "$src/bench/results.py" render "$out/batches.jsonl"
says "| seed-b (batch 16) | 2 | step | 150.0 | - | - | - | 300.0 | 0.50 | - | 100 / 100 |"
says "| seed-b (batch 64) | 2 | step | 600.0 | - | - | - | 900.0 | 0.67 | - | 100 / 100 |"
says "Run 2026-01-01T00:00:00Z (seed-b at batch 64), commit 2026"  # the run's header names its batch
says "Run 2026-02-01T00:00:00Z (seed-b at batch 16), commit 2026"
if grep -q "(batch 8)" "$out/last.log"; then bad "  ...run.sh --quick's batch 8 got a row"; else ok "  ...no row for batch 8"; fi
# Hostile lines are refused by file and line, one line of message, never a traceback
results_refuses() {  # JSON-LINE EXPECTED-MESSAGE
  printf '%s\n' "$1" >"$out/hostile.jsonl"
  expect 2 "bench/results.py render: $2" python3 "$src/bench/results.py" render "$out/hostile.jsonl"
  says "hostile.jsonl:1 $2"
  if grep -q Traceback "$out/last.log"; then bad "  ...with a traceback"; fi
}
stamped='"cpu_id": "Test family 1 model 2", "run_id": "r1", "commit": "c1"'
results_refuses "{$stamped, \"load\": 1e999}" "has no load"
results_refuses "{$stamped, \"load\": 1, \"framework\": \"xtgrad\", \"config\": \"foo\", \"threads\": 1}" "is a benchmark line without a known config"
# seed-b's rows are per batch (16, 64): a line without one, or with one that is no whole number, is refused
results_refuses "{$stamped, \"load\": 1, \"framework\": \"xtgrad\", \"config\": \"seed-b\", \"threads\": 2}" "is a seed-b line without its batch"
results_refuses "{$stamped, \"load\": 1, \"framework\": \"torch\", \"config\": \"seed-b\", \"threads\": 2, \"batch\": null}" "is a seed-b line without its batch"
for bad_batch in '"16"' 16.0 16.5 true -16 '[16]'; do
  results_refuses "{$stamped, \"load\": 1, \"framework\": \"xtgrad\", \"config\": \"seed-b\", \"threads\": 2, \"batch\": $bad_batch}" "has a batch that is not a whole number"
done
results_refuses "{$stamped, \"load\": 1, \"mode\": \"switches\", \"pair\": \"XTGRAD_A\", \"side\": \"on\", \"round\": 1, \"run\": \"seed-d:1\", \"result\": {\"switch_defaults\": \"abc\", \"phases\": {}}}" "has switch_defaults that are not names"
results_refuses "{$stamped, \"load\": 1, \"mode\": \"switches\", \"pair\": \"XTGRAD_A\", \"side\": \"on\", \"round\": 1, \"run\": \"seed-d:1\", \"result\": {\"switch_tags\": {\"XTGRAD_A\": \"one thread\\n\"}, \"phases\": {}}}" "has switch_tags that are not names to words"
results_refuses "{$stamped, \"load\": 1, \"mode\": \"switches\", \"pair\": \"XTGRAD_A\", \"side\": \"on\", \"round\": 1, \"run\": \"seed-d:1\", \"result\": {\"switch_tags\": [\"workers\"], \"phases\": {}}}" "has switch_tags that are not names to words"
# what results.py reads to leave a cell blank, and the samples it pairs (a no-context attack:
# tracebacks for threads "2" or an inference switch without infer samples; "false" read as true)
switch_line() { printf '%s' "{$stamped, \"load\": 1, \"mode\": \"switches\", \"pair\": \"XTGRAD_A\", \"side\": \"on\", \"round\": 1, \"run\": \"$1\", \"result\": {\"phases\": {}, $2}}"; }
results_refuses "$(switch_line seed-d:1 '"switch_tags": {"XTGRAD_A": "wrokers"}')" "has switch_tags that are not names to words"
results_refuses "$(switch_line seed-d:1 '"threads": "2"')" "has threads that are not a whole number from 1 to 256"
results_refuses "$(switch_line seed-d:1 '"threads": true')" "has threads that are not a whole number from 1 to 256"
results_refuses "$(switch_line seed-d:1 '"threads": 2')" "has threads 2 against its run seed-d:1"
results_refuses "$(switch_line seed-d:1 '"optimizer_in_backward": "false"')" "has an optimizer_in_backward that is neither true nor false"
results_refuses "$(switch_line seed-d:1 '"autocast": 0')" "has an autocast that is not a name (bf16)"
results_refuses "$(switch_line seed-d:1 '"alternated": "yes"')" "has alternated samples that are not phases to lists of positive times"
results_refuses "$(switch_line seed-d:1 '"alternated": {"samples": {"step": ["x"]}}')" "has alternated samples that are not phases"
results_refuses '{"cpu_id": "A|B -->", "run_id": "r1", "commit": "c1", "load": 1}' "has no cpu_id as plain text"
bench_line="{$stamped, \"load\": 1, \"framework\": \"xtgrad\", \"config\": \"winter\", \"threads\": 1, \"peak_rss_mib\": 1, \"phases\": {}"
results_refuses "$bench_line, \"optimizer_in_backward\": \"false\"}" "has an optimizer_in_backward that is neither true nor false"
results_refuses "$bench_line, \"optimizer_in_backward\": 1}" "has an optimizer_in_backward that is neither true nor false"
results_refuses "{$stamped, \"load\": 1, \"framework\": \"torch\", \"config\": \"winter\", \"threads\": 1, \"peak_rss_mib\": 1, \"phases\": {}, \"optimizer_in_backward\": true}" "is a torch line with optimizer_in_backward"
results_refuses "{$stamped, \"load\": 1, \"mode\": \"switches\", \"framework\": \"xtgrad\"}" "has both a mode"
results_refuses '{"cpu_id": "a\ud800b", "run_id": "r1", "commit": "c1", "load": 1}' "has no cpu_id as plain text"
results_refuses "{$stamped, \"load\": 1, \"load\": 2}" "is not a JSON line (a key given twice: 'load')"
results_refuses "{$stamped, \"load\": 1, \"framework\": \"machine\", \"fma_avx2_gflops_per_core\": 1e-310}" "is a machine line whose fma_avx2_gflops_per_core is not a positive number"
# a --paired-ceiling line has no peak RSS (the ceiling's operands would count) and a ratio per phase
results_refuses_paired() {  # PAIRED-FIELDS EXPECTED-MESSAGE
  printf '%s\n' "{$stamped, \"load\": 1, \"framework\": \"xtgrad\", \"config\": \"seed-d\", \"threads\": 1, \"phases\": {}, $1}" >"$out/hostile.jsonl"
  expect 2 "bench/results.py render: $2" python3 "$src/bench/results.py" render "$out/hostile.jsonl"
  says "hostile.jsonl:1 $2"
}
results_refuses_paired '"peak_rss_mib": 5, "paired_ceiling": {"reps": 2, "step_gflops": [1], "x_ceiling": {"step": 1}}' "is a --paired-ceiling line with a peak_rss_mib"
results_refuses_paired '"peak_rss_mib": null, "paired_ceiling": {"step_gflops": [], "x_ceiling": {"step": 1}}' "has a paired_ceiling without step_gflops"
results_refuses_paired '"peak_rss_mib": null, "paired_ceiling": {"step_gflops": [1], "x_ceiling": {"step": "1.2"}}' "has a paired_ceiling without x_ceiling"
results_refuses_paired '"peak_rss_mib": null, "paired_ceiling": [1]' "has a paired_ceiling that is not xtgrad_bench --paired-ceiling's object"
results_refuses_paired '"peak_rss_mib": null, "paired_ceiling": {"reps": 2, "step_gflops": [1], "x_ceiling": {"bogus": 1}}' "has a paired_ceiling without x_ceiling (fwd, bwd, fwd+bwd, step, infer -> a positive ratio)"
results_refuses_paired '"peak_rss_mib": null, "paired_ceiling": {"reps": 2, "step_gflops": [1], "x_ceiling": {"step": 1}, "infer_gflops": [NaN]}' "has a paired_ceiling whose infer_gflops are not positive numbers"
results_refuses_paired '"peak_rss_mib": null, "paired_ceiling": {"reps": "2", "step_gflops": [1], "x_ceiling": {"step": 1}}' "has a paired_ceiling without reps"
# The docs: a symbolic link's target is written (the link stays), a closed stdout is exit 1, and the
# script runs under python3 -I (no script folder on the module path)
printf '<!-- results:cpus -->\nold\n<!-- /results:cpus -->\n' >"$out/real.md"
ln -sf real.md "$out/link.md"
expect 0 "bench/results.py render --write onto a symbolic link" python3 "$src/bench/results.py" render --write "$out/link.md" "$out/switches.jsonl"
if [[ -L $out/link.md ]] && grep -q "| CPU | model name | runs |" "$out/real.md"; then ok "  ...the link kept, its target written"; else bad "  ...the link replaced or its target stale"; fi
printf '<!-- /results:cpus -->\nx\n<!-- results:cpus -->\n' >"$out/reversed.md"
expect 2 "bench/results.py render --write with its markers the wrong way round" python3 "$src/bench/results.py" render --write "$out/reversed.md" "$out/switches.jsonl"
says "marks the table cpus with no <!-- /results:cpus --> after its <!-- results:cpus -->"
expect 1 "bench/results.py render into a closed stdout" bash -c "python3 '$src/bench/results.py' render '$out/switches.jsonl' >&-"
says "could not write the tables (the standard output is closed)"
expect 0 "bench/results.py under python3 -I" python3 -I "$src/bench/results.py" render "$out/switches.jsonl"
printf '\xff\n' >"$out/bad.md"
expect 2 "bench/results.py render --check on a non-UTF-8 doc" python3 "$src/bench/results.py" render --check "$out/bad.md" "$out/switches.jsonl"
says "bad.md cannot be read as UTF-8 text"

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
says "TARGET must be safetensors, npy, writers, run_checkpoint, report_compare or command_line, got 'png'"
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
