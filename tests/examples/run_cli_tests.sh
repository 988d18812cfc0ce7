#!/usr/bin/env bash
# The examples' command-line promises (issue 11): resumed runs are bit-identical, every option is
# checked before training, exit codes 0 / 1 / 2, a fifo never hangs, a non-finite loss stops the run
# and keeps the last good checkpoint; and every program's conventions (--help, a lost output is
# exit 1, a message one escaped line, counts decimal). Small model sizes. Run by tests/run_examples.sh.
#   tests/examples/run_cli_tests.sh BUILD_DIR
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=../cli_test_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../cli_test_lib.sh" "$@"

echo "== resume: --epochs/--steps is the total, the resumed run is the same run"
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

echo "== a finished run is never lost: --out's checkpoint path, another run in its place, an evaluation"
# the checkpoint path was checked only when the run saved: a whole run trained, then lost
mkdir -p ck_dir/winter_games.safetensors ck_fifo ck_null ck_dangling
mkfifo ck_fifo/winter_games.safetensors; ln -s /dev/null ck_null/winter_games.safetensors
ln -s nothing ck_dangling/winter_games.safetensors
expect 2 "--out whose checkpoint path is a folder" "${wg[@]}" --epochs 1 --out ck_dir
says "--out 'ck_dir/winter_games.safetensors': is a folder"; trained_nothing
expect 2 "--out whose checkpoint path is a fifo" "${wg[@]}" --epochs 1 --out ck_fifo
says "not a regular file (a fifo)"; trained_nothing
expect 2 "--out whose checkpoint path links to /dev/null" "${wg[@]}" --epochs 1 --out ck_null
says "not a regular file (a character device)"; trained_nothing
expect 2 "--out whose checkpoint path is a dangling link" "${wg[@]}" --epochs 1 --out ck_dangling
says "a symbolic link to nothing that exists"; trained_nothing
# the report's page too: a fifo or a folder there failed only when the trained run wrote it
mkdir -p page_fifo page_dir/report.html; mkfifo page_fifo/report.html
expect 2 "--out whose report page is a fifo" "${wg[@]}" --epochs 1 --out page_fifo
says "--out 'page_fifo/report.html': not a regular file (a fifo)"; trained_nothing
expect 2 "--out whose report page is a folder" "${wg[@]}" --epochs 1 --out page_dir
says "--out 'page_dir/report.html': is a folder"; trained_nothing
# a new run into a folder holding another run replaced it silently
cp -r winter_games_split ck_other
expect 0 "a new run where another run's checkpoint is" "${wg[@]}" --epochs 1 --out ck_other
says "ck_other/winter_games.safetensors holds another run (epoch 4): this run replaces it at its first save"
says "kept the run ck_other/winter_games.safetensors held (epoch 4) as "
if cmp -s winter_games_split/winter_games.safetensors ck_other/winter_games.safetensors.previous; then ok "  ...the 4-epoch run kept whole as .previous"
else bad "  ...the replaced run is not kept"; fi
# evaluating a model-only file (--epochs 0) wrote it over the run in --out
cp -r winter_games_split ck_eval
expect 0 "--resume a model-only file, --epochs 0, into --out holding a run" "${wg[@]}" --epochs 0 --out ck_eval --resume init/a.safetensors
says "nothing left to train: ck_eval/winter_games.safetensors is left as it was"
if cmp -s winter_games_split/winter_games.safetensors ck_eval/winter_games.safetensors; then ok "  ...the run in --out unchanged"
else bad "  ...evaluating replaced the run in --out"; fi
if grep -q "holds another run" last.log; then bad "  ...announced a replacement it never made"; else ok "  ...no replacement announced"; fi
expect 0 "--resume a model-only file, --epochs 0, into a new --out" "${wg[@]}" --epochs 0 --out ck_new --resume init/a.safetensors
says "weights; no optimizer state yet)"
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
# activations took tutorial D's dotted names on tutorial B's model with a bare "no module": the same list as graph's
expect 2 "activations --module naming no module" "$build/examples/activations" --module encoder.layers.0
says "activations: --module 'encoder.layers.0' names no module of the model; its modules are: encoder_embedding, decoder_embedding, positional_encoding, encoder_layers, decoder_layers, fc, dropout"
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
# a trap with no filter stopped nowhere, silently
expect 0 "XTGRAD_BREAK_TRAP=1 without a filter" env XTGRAD_BREAK_TRAP=1 "${wg[@]}" --epochs 2
says "xtgrad: XTGRAD_BREAK_TRAP is set but no break filter is (XTGRAD_BREAK_OP, XTGRAD_BREAK_MODULE, debug::break_on_op or break_on_module): nothing stops"
if [ "$(grep -c 'XTGRAD_BREAK_TRAP is set' "$out/last.log")" = 1 ]; then ok "  ...once"; else bad "  ...told $(grep -c 'XTGRAD_BREAK_TRAP is set' "$out/last.log") times"; fi
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
  # the reason: XTGRAD_ISA, or on a CPU without AVX-512 (the Zen 3) "the CPU has no AVX-512"
  says "own_gemm_probe: the kernel runs on AVX-512, and xtgrad's kernels run baseline here"
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
# meta.relu_kinks (docs/fixtures.md, section Kinks): a flipped ReLU mask moves fc1.bias's gradient by 0.5;
# the fixture's allowance for that key lets it pass, a smaller one or a malformed one does not
kinked() {  # kinked DIR ALLOWANCE_JSON: ffn_linear with grad.param.fc1.bias[0] += 0.5 and that relu_kinks
  rm -rf "$1" && cp -r "$src/tests/fixtures/small/ffn_linear" "$1"
  python3 - "$1" "$2" <<'PY'
import struct, sys
path = sys.argv[1] + "/grad.param.fc1.bias.npy"
raw = bytearray(open(path, "rb").read())
start = 10 + struct.unpack("<H", raw[8:10])[0]          # .npy v1: magic, version, header length, header
struct.pack_into("<f", raw, start, struct.unpack_from("<f", raw, start)[0] + 0.5)
open(path, "wb").write(raw)
text = open(sys.argv[1] + "/meta.json").read().rstrip()
if sys.argv[2] != "none":                                # the entry as written, so 1e999 stays 1e999
    text = text[:-1] + ', "relu_kinks": ' + sys.argv[2] + "}"
open(sys.argv[1] + "/meta.json", "w").write(text)
PY
}
kinked kink_none none
expect 1 "parity: a gradient moved by a flipped ReLU mask, no relu_kinks" "$build/tools/parity" kink_none
kinked kink_ok '{"count": 1, "allowance": {"grad.param.fc1.bias": 0.6}}'
expect 0 "parity: the same gradient within its relu_kinks allowance" "$build/tools/parity" kink_ok
says "+0.6 for 1 ReLU input(s) within rounding of zero"
kinked kink_small '{"count": 1, "allowance": {"grad.param.fc1.bias": 0.3}}'
expect 1 "parity: the same gradient beyond a smaller allowance" "$build/tools/parity" kink_small
kinked kink_bad '{"count": 1, "allowance": {"grad.param.fc1.bias": -1}}'
expect 1 "parity: a negative relu_kinks allowance" "$build/tools/parity" kink_bad
says "relu_kinks allowance of grad.param.fc1.bias must be a finite number >= 0, not -1"
kinked kink_inf '{"count": 1, "allowance": {"grad.param.fc1.bias": 1e999}}'
expect 1 "parity: an infinite relu_kinks allowance (1e999)" "$build/tools/parity" kink_inf
says "number overflow parsing '1e999'"
kinked kink_shape '{"allowance": [0.6]}'
expect 1 "parity: relu_kinks without a count or with a list" "$build/tools/parity" kink_shape
says "relu_kinks must be an object with a count and an allowance object"
# a case copied under another name is named with its folder; a module no runner knows says so (it said
# "beyond tolerance"); the checks of meta.json itself: tests/parity_meta_test.cpp
rm -rf renamed renamed_linear && mkdir renamed && cp -r "$src/tests/fixtures/small/linear" renamed/copied_linear
expect 0 "parity --all: a case in a folder of another name" "$build/tools/parity" --all renamed
says "PASS linear in renamed/copied_linear (linear)"
cp -r renamed/copied_linear renamed_linear
python3 -c 'import json, sys; p = sys.argv[1]; m = json.load(open(p)); m["module"] = "no_such_module"; json.dump(m, open(p, "w"))' \
  renamed_linear/meta.json
expect 1 "parity: a module no runner knows" "$build/tools/parity" renamed_linear
says "no runner for module 'no_such_module' (--list names them)"
expect 2 "parity with neither DIR nor --all" "$build/tools/parity"
expect 1 "parity on a folder that is no fixture" "$build/tools/parity" "$out/init"


echo "== every program: a lost output is exit 1, a message one escaped line, a count decimal digits"
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

exit $fail
