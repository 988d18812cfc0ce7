#!/usr/bin/env bash
# The gdb test: debugs BUILD/tests/gdb_target (one training step of tutorial C's Transformer)
# in batch mode and checks what gdb prints.
#   0. tests/gdb/repr_test.py: tools/gdb/xtgrad_repr.py alone, in plain python3, against
#      PyTorch's repr of test 4's arrays.
#   1. tests/gdb/attention_backward.gdb: the printers and commands load by themselves
#      (.debug_gdb_scripts), a break on the SoftmaxBackward of encoder.layers.0.enc_self_attn,
#      then a node, a gradient, a tensor and calls into the program's print helpers.
#   2. docs/gdb/follow_gradient.gdb: the walk-through of docs/debugging.md, as written there.
#   3. The printers and commands sourced by hand (how users' own static programs load them);
#      3b. the printers copied with xtgrad_memory.py, without xtgrad_repr.py: a message, no
#      traceback, printers working; without xtgrad_memory.py: a message, no traceback.
#   4. tests/gdb/printer_reprs.gdb: arrays of every kind (0-d, empty, 5-d, abbreviated, 2048x2048,
#      ids, masks) printed as PyTorch prints them: compared with tests/gdb/expected_reprs.txt,
#      PyTorch's own repr of the same values (tools/gdb/make_repr_fixture.py).
#   5. docs/gdb/walk_graph.gdb: xt-node, xt-input, xt-saved, xt-grad, xt-up from user code,
#      from the engine's frame and from inside an op's backward kernel.
#   6. docs/gdb/engine_stops.gdb: at each stop of `break before_node` the walk starts at the stop's
#      node, with its gradient, by itself; `print` of a module: its path and parameters.
#   7. tests/gdb/recomputed_saved.gdb: a node's saved layer norm output, freed after forward and
#      made again when the node runs (autograd/recompute.hpp).
# Passes on any build type; tools/test.sh runs it on the release (-O3) build.
# Tests 1, 2 and 5 `call` into the program. gdb 13 (Debian 12's) cannot, on a CPU whose XSAVE
# area is larger than it knows (AMX: Intel Sapphire Rapids and later, Linux >= 5.16): it prints
# "Couldn't write extended state status: Bad address" for any program (fixed in gdb 14). A probe
# call tells; there those three are skipped, saying why, and the probe's message must be that one.
#
#   tests/gdb/run_gdb_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "${1:?usage: run_gdb_test.sh BUILD_DIR}" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
target=$build/tests/gdb_target
command -v gdb >/dev/null || { echo "gdb test: gdb is not installed (tools/install_deps.sh)"; exit 1; }
[ -x "$target" ] || { echo "gdb test: $target is missing (build it: ninja -C $build tests/gdb_target)"; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
failed=0

# gdb FILE.gdb OUT [extra gdb options...]; the build dir is trusted for auto-loading.
run_gdb() {
  local script=$1 log=$2; shift 2
  (cd "$src" && timeout 240 gdb -q -batch -nx -iex "set debuginfod enabled off" \
     -iex "add-auto-load-safe-path $build" "$@" -x "$script" "$target") >"$log" 2>&1 || true
}

# expect LOG DESCRIPTION EXTENDED-REGEX: one line of LOG must match
expect() {
  if grep -qE -- "$3" "$1"; then
    echo "  ok    $2"
  else
    echo "  FAIL  $2: no line matches /$3/"
    failed=1
  fi
}

# refuse LOG DESCRIPTION EXTENDED-REGEX: no line of LOG may match
refuse() {
  if grep -qE -- "$3" "$1"; then
    echo "  FAIL  $2: a line matches /$3/"
    failed=1
  else
    echo "  ok    $2"
  fi
}

num='-?[0-9][0-9.e+-]*'

# Can this gdb call a function in the program here? (the header: gdb 13 on an AMX CPU cannot)
calls=yes
printf 'break main\nrun\nprint (int) getpid() > 0\nkill\n' >"$out/probe.gdb"
run_gdb "$out/probe.gdb" "$out/probe.log"
# main is C++: the comparison prints as `true` (a C frame would print 1)
if ! grep -qE '^\$1 = (true|1)$' "$out/probe.log"; then
  calls=no
  echo "== gdb cannot call into the program here ($(gdb --version | head -1)):"
  { grep -E "Error|Couldn't" "$out/probe.log" || tail -n 3 "$out/probe.log"; } | sed 's/^/     /' | head -5
  expect "$out/probe.log" "... for the known XSAVE-size limit of gdb before 14" \
    "^Couldn't write extended state status: Bad address\.$"
  grep -q amx_tile /proc/cpuinfo && echo "  ok    ... on a CPU with AMX" || { echo "  FAIL  ... yet this CPU has no AMX"; failed=1; }
fi
# skip_without_calls TEST: true (and says so) where this gdb cannot call into the program
skip_without_calls() {
  [ "$calls" = no ] || return 1
  echo "  SKIP  gdb test $1: it calls into the program, which this gdb cannot do on this CPU (above)"
}

echo "== gdb test 0: tools/gdb/xtgrad_repr.py in plain python3 (tests/gdb/repr_test.py)"
if ! python3 "$src/tests/gdb/repr_test.py" >"$out/repr_test.log" 2>&1; then
  echo "  FAIL  tests/gdb/repr_test.py"
  failed=1
fi
expect "$out/repr_test.log" "the repr test ran to its end" '^repr test: passed$'

echo "== gdb test 1: break in the attention's softmax backward ($target)"
if ! skip_without_calls 1; then
log=$out/attention.log
run_gdb tests/gdb/attention_backward.gdb "$log"
expect "$log" "the repr auto-loaded from the library" '^Yes +xtgrad_repr\.py'
expect "$log" "memory readers auto-loaded from the library" '^Yes +xtgrad_memory\.py'
expect "$log" "printers auto-loaded from the library" '^Yes +xtgrad_printers\.py'
expect "$log" "commands auto-loaded from the library" '^Yes +xtgrad_commands\.py'
expect "$log" "stopped in matched_node; the frame line keeps to one-line summaries" \
  'Breakpoint 1, xtgrad::debug::matched_node \(node=xtgrad::Node SoftmaxBackward in encoder\.layers\.0\.enc_self_attn, created at autograd/ops/softmax\.cpp:[0-9]+ = \{\.\.\.\}, grad_out=xtgrad::Array \(1,2,7,7\) = \{\.\.\.\}\)'
expect "$log" "node: op, module path, source location" \
  '^\$1 = xtgrad::Node SoftmaxBackward in encoder\.layers\.0\.enc_self_attn, created at autograd/ops/softmax\.cpp:[0-9]+ = \{$'
expect "$log" "node: its input, by its producer; shape kept, values freed" \
  '^  input 0 = \(1,2,7,7\) float32 requires_grad grad_fn=MaskedFillBackward grad=none \(values freed\)'
expect "$log" "node: what its backward saved, by torch's name (softmax keeps its result)" \
  "^  saved result = tensor\\(\\[\\[\\[\\[ ?$num, "
expect "$log" "gradient flowing in: a header, then the values" '^\$2 = xtgrad::Array \(1,2,7,7\) = \{$'
expect "$log" "... as torch prints a 4-d array" "^  values = tensor\(\[\[\[\[ ?$num, +$num, "
expect "$log" "... later rows lined up under the first" "^ {21}\[ ?$num, +$num, "
expect "$log" "tensor: name, shape, dtype, flags" \
  '^\$3 = xtgrad::Tensor "encoder\.layers\.0\.enc_self_attn\.W_Q\.weight" \(16,16\) float32 requires_grad leaf grad=none = \{$'
expect "$log" "tensor: its values end as torch prints a parameter" 'requires_grad=True\)$'
expect "$log" "the loss, a scalar with a grad_fn" \
  '^\$4 = xtgrad::Tensor \(\) float32 requires_grad grad_fn=CrossEntropyBackward grad=none = \{$'
expect "$log" "the loss's value as torch prints it" '^  values = tensor\([0-9]+\.[0-9]{4}, grad_fn=<CrossEntropyBackward>\)$'
expect "$log" "the node again, through debug::state" '^\$5 = xtgrad::Node SoftmaxBackward'
expect "$log" "call xtgrad::debug::print_node" \
  '^SoftmaxBackward in encoder\.layers\.0\.enc_self_attn, created at autograd/ops/softmax\.cpp:[0-9]+ \('
expect "$log" "call xtgrad_print (C alias)" \
  "^\"encoder\.layers\.0\.enc_self_attn\.W_Q\.weight\" \(16,16\) float32 requires_grad leaf grad=none \["
expect "$log" "the program finished its step" '^loss [0-9.]+, \|grad W_Q\| [0-9.]+'
expect "$log" "exited normally" 'exited normally'
fi

echo "== gdb test 2: docs/gdb/follow_gradient.gdb"
if ! skip_without_calls 2; then
log=$out/follow.log
run_gdb docs/gdb/follow_gradient.gdb "$log"
expect "$log" "the loss node first" '^\$1 = xtgrad::Node CrossEntropyBackward \(outside any module\)'
expect "$log" "seeded with 1" '^\$2 = xtgrad::Array \(\) = \{$'
expect "$log" "... a 0-d array as torch prints it" '^  values = tensor\(1\.\)$'
expect "$log" "the graph below the loss" '^`- ReshapeBackward -> \(7,9\)'
expect "$log" "W_Q's node before it runs" \
  '^\$[0-9]+ = xtgrad::Node LinearBackward in encoder\.layers\.0\.enc_self_attn\.W_Q, created at autograd/ops/matmul\.cpp'
expect "$log" "W_Q's input: the encoder's input, the gradient summed into it so far" \
  '^  input 0 \(saved as input\) = \(1,7,16\) float32 requires_grad grad_fn=AddBackward incoming_grad=\(1,7,16\)'
expect "$log" "W_Q.weight has no grad yet" \
  '^  input 1 \(saved as weight\) = "encoder\.layers\.0\.enc_self_attn\.W_Q\.weight" \(16,16\) float32 requires_grad leaf grad=none'
expect "$log" "the gradient flowing into W_Q" '^\$[0-9]+ = xtgrad::Array \(1,7,16\) = \{$'
expect "$log" "after the node: W_Q.weight has its grad" \
  '^  input 1 \(saved as weight\) = "encoder\.layers\.0\.enc_self_attn\.W_Q\.weight" \(16,16\) float32 requires_grad leaf grad=\(16,16\)'
expect "$log" "the tensor printer labels the grad apart from the values" "^  grad = tensor\(\[\[ ?$num, "
expect "$log" "print_grad from the program" '^grad of encoder\.layers\.0\.enc_self_attn\.W_Q\.weight$'
expect "$log" "exited normally" 'exited normally'
fi

echo "== gdb test 3: printers and commands sourced by hand"
log=$out/source.log
cat >"$out/source.gdb" <<EOF
source $src/tools/gdb/xtgrad_printers.py
source $src/tools/gdb/xtgrad_commands.py
set xtgrad-threshold 10
set print pretty on
set breakpoint pending on
break xtgrad::debug::matched_node
set environment XTGRAD_BREAK_OP=LinearBackward
run
print gdb_target::w_q
xt-node
kill
EOF
run_gdb "$out/source.gdb" "$log" -iex "set auto-load python-scripts off"
expect "$log" "sourced printers, threshold 10: rows and columns abbreviated" \
  "^  values = tensor\(\[\[ ?$num, +$num, +$num, +\.\.\., +$num, +$num, +$num\],$"
expect "$log" "... and the elided rows" '^ {19}\.\.\.,$'
expect "$log" "sourced commands" '^xtgrad::Node LinearBackward in '

echo "== gdb test 3b: the printers copied without xtgrad_repr.py beside them"
mkdir "$out/alone"
cp "$src/tools/gdb/xtgrad_memory.py" "$src/tools/gdb/xtgrad_printers.py" "$out/alone/"
log=$out/alone.log
cat >"$out/alone.gdb" <<EOF
source $out/alone/xtgrad_printers.py
set breakpoint pending on
break xtgrad::debug::matched_node
set environment XTGRAD_BREAK_OP=LinearBackward
run
print gdb_target::w_q
kill
EOF
run_gdb "$out/alone.gdb" "$log" -iex "set auto-load python-scripts off"
expect "$log" "a message naming the missing file and what to do" 'xtgrad_repr\.py is missing: copy tools/gdb/xtgrad_repr\.py beside the printers'
refuse "$log" "no Python traceback" '^Traceback'
[ "$(grep -c '^xtgrad_printers\.py: .*xtgrad_repr\.py is missing' "$log")" = 1 ] && echo "  ok    ... said once" || { echo "  FAIL  the missing-file message is not said exactly once"; failed=1; }
expect "$log" "the printers still load: a tensor's summary" \
  '^\$[0-9]+ = xtgrad::Tensor "encoder\.layers\.0\.enc_self_attn\.W_Q\.weight" \(16,16\)'
expect "$log" "... its values name what is missing" 'values: .*xtgrad_repr\.py is missing'
mkdir "$out/no_memory"
cp "$src/tools/gdb/xtgrad_printers.py" "$out/no_memory/"
log=$out/no_memory.log
echo "source $out/no_memory/xtgrad_printers.py" >"$out/no_memory.gdb"
run_gdb "$out/no_memory.gdb" "$log" -iex "set auto-load python-scripts off"
expect "$log" "without xtgrad_memory.py: a message naming it" \
  '^xtgrad_printers\.py: .*xtgrad_memory\.py is missing: copy tools/gdb/xtgrad_memory\.py beside the printers'
refuse "$log" "... and no Python traceback" '^Traceback'

echo "== gdb test 4: arrays printed as PyTorch prints them (tests/gdb/expected_reprs.txt)"
log=$out/reprs.log
run_gdb tests/gdb/printer_reprs.gdb "$log"
names=$(sed -n 's/^== //p' "$src/tests/gdb/expected_reprs.txt")
[ -n "$names" ] || { echo "  FAIL  tests/gdb/expected_reprs.txt lists no arrays"; failed=1; }
for name in $names; do
  expect "$log" "repr of gdb_target::$name" "^repr ok $name "
done
refuse "$log" "no repr differs from torch's" '^repr MISMATCH'
expect "$log" "a bit mask (relu's and dropout's saved bits): shape and count" '^\$[0-9]+ = xtgrad::BitMask \(2,3\): 3 of 6 set = \{$'
expect "$log" "... and its bits in order" '^  bits = 101010$'
expect "$log" "a gradient taken with create_graph: its node says which backward pass recorded it" \
  '^xtgrad::Node [A-Za-z]+Backward \(outside any module\), created at .*, recorded by backward pass 1 = \{$'

echo "== gdb test 5: docs/gdb/walk_graph.gdb (xt-node, xt-input, xt-saved, xt-grad, xt-up)"
if ! skip_without_calls 5; then
log=$out/walk.log
run_gdb docs/gdb/walk_graph.gdb "$log"
expect "$log" "user code, no backward running: xt-node asks for a tensor" '^xt-node: no backward node here: .* xt-node loss$'
expect "$log" "a leaf has no node" '^xt-node: gdb_target::w_q is a leaf: no node produced it$'
expect "$log" "xt-node TENSOR" '^\[xt 0\] node of gdb_target::loss$'
expect "$log" "... prints the node" \
  '^xtgrad::Node CrossEntropyBackward \(outside any module\), created at autograd/ops/cross_entropy\.cpp:[0-9]+ = \{$'
expect "$log" "before backward no gradient has arrived" '^gradient arriving at CrossEntropyBackward: no gradient is held for its output'
expect "$log" "xt-input 0 goes down" '^\[xt 1\] input 0 of CrossEntropyBackward$'
expect "$log" "... to the logits' reshape" '^xtgrad::Node ReshapeBackward \(outside any module\)'
expect "$log" "... and on to the output projection" '^\[xt 2\] input 0 of ReshapeBackward$'
expect "$log" "a leaf input is shown, not entered" '^input 1 is a leaf \(no node below it\):$'
expect "$log" "... the projection's weight, by name" \
  '^xtgrad::TensorImpl "projection\.weight" \(9,16\) float32 requires_grad leaf grad=none = \{$'
expect "$log" "xt-up stops where the walk started" '^xt-up: already at the node the walk started from$'
expect "$log" "engine frame: xt-node finds the frame's node" '^\[xt 0\] `node` of this frame \(xtgrad::debug::matched_node\)$'
expect "$log" "... the softmax of the first encoder layer" '^xtgrad::Node SoftmaxBackward in encoder\.layers\.0\.enc_self_attn, created at'
expect "$log" "xt-grad at the engine's node" '^gradient arriving at SoftmaxBackward \(1,2,7,7\) \(the engine is at this node\):$'
expect "$log" "... as torch prints it" "^tensor\(\[\[\[\[ ?$num, "
expect "$log" "xt-saved names what the node saved" '^SoftmaxBackward saved result$'
expect "$log" "... and prints it as torch does" '^  result = tensor\(\[\[\[\['
expect "$log" "xt-input 0 from the softmax: the masked scores" '^\[xt 1\] input 0 of SoftmaxBackward$'
expect "$log" "... whose gradient has not arrived" '^gradient arriving at MaskedFillBackward: no gradient is held'
expect "$log" "two levels down: the scores' product" '^\[xt 2\] input 0 of MaskedFillBackward$'
expect "$log" "xt-up twice: back at the softmax" '^\[xt 0\] `node` of this frame'
expect "$log" "kernel frame: xt-node falls back on the engine's state" \
  '^\[xt 0\] the node the engine is running \(xtgrad::debug::state\)$'
refuse "$log" "no command raised a Python error" 'Traceback|Python Exception|Error occurred in Python'
fi

echo "== gdb test 6: docs/gdb/engine_stops.gdb (a walk at every engine stop; modules)"
log=$out/stops.log
run_gdb docs/gdb/engine_stops.gdb "$log"
expect "$log" "at the first stop, the walk starts at the frame's node by itself" \
  '^\[xt 0\] CrossEntropyBackward, `node` of this frame \(xtgrad::debug::before_node\)$'
expect "$log" "... and xt-grad shows d loss / d loss at once (before_node's grad_out)" \
  '^gradient arriving at CrossEntropyBackward \(\) \(the engine is at this node\):$'
expect "$log" "... as torch prints it" '^tensor\(1\.\)$'
expect "$log" "after continue, the walk restarts at the new stop's node" \
  '^\[xt 0\] ReshapeBackward, `node` of this frame \(xtgrad::debug::before_node\)$'
expect "$log" "... with the gradient arriving there" '^gradient arriving at ReshapeBackward \(7,9\) \(the engine is at this node\):$'
expect "$log" "xt-input goes down from the new node" '^\[xt 1\] input 0 of ReshapeBackward$'
expect "$log" "after a walk down, continue restarts at the next stop's node" \
  '^\[xt 0\] LinearBackward, `node` of this frame \(xtgrad::debug::before_node\)$'
expect "$log" "... and its gradient" '^gradient arriving at LinearBackward \(1,7,9\) \(the engine is at this node\):$'
expect "$log" "a module prints its type, path and parameter count" \
  '^\$1 = xtgrad::nn::tutorial_c::MultiHeadAttention "encoder\.layers\.0\.enc_self_attn", 10 parameters \(1,120 values\), training = \{$'
expect "$log" "... each parameter by its dotted name, with its shape" '^  W_Q\.weight = \(16,16\) float32 requires_grad leaf grad=none,$'
expect "$log" "... down its children" '^  layer_norm\.bias = \(16\) float32 requires_grad leaf grad=none$'
expect "$log" "the root, through a Module pointer, by its dynamic type" \
  '^\$2 = xtgrad::nn::tutorial_c::Transformer \(the root module\), 89 parameters \(11,808 values\), training = \{$'
expect "$log" "... with the full dotted paths" '^  decoder\.layers\.1\.dec_enc_attn\.W_V\.weight = \(16,16\) float32 requires_grad leaf grad=none,$'
expect "$log" "... a frozen parameter without requires_grad" '^  encoder\.pos_emb\.weight = \(8,16\) float32 leaf grad=none,$'
refuse "$log" "no RTTI warnings while walking a module's children" 'RTTI symbol not found'
refuse "$log" "no command raised a Python error" 'Traceback|Python Exception|Error occurred in Python'

echo "== gdb test 7: tests/gdb/recomputed_saved.gdb (a saved value made again in backward)"
if ! skip_without_calls 7; then
log=$out/recomputed.log
run_gdb tests/gdb/recomputed_saved.gdb "$log"
expect "$log" "before the node runs: layer norm's output, its input, has no values" \
  '^  input 0 \(saved as input\) = \(1,7,16\) float32 requires_grad grad_fn=LayerNormBackward incoming_grad=\(1,7,16\) \(values freed\),$'
expect "$log" "... and the saved record says it is made again when the node runs" \
  "^  saved input = \(values freed: made again from layer_norm's saved values when this node runs\),$"
expect "$log" "after the node ran: the input has the values made again" \
  '^  input 0 \(saved as input\) = \(1,7,16\) float32 requires_grad grad_fn=LayerNormBackward incoming_grad=\(1,7,16\),$'
expect "$log" "... and the saved record shows them as torch prints them" "^  saved input = tensor\(\[\[\[ ?$num, "
refuse "$log" "no command raised a Python error" 'Traceback|Python Exception|Error occurred in Python'
fi

if [ "$failed" -ne 0 ]; then
  for f in "$out"/*.log; do echo "---- $f"; cat "$f"; done
  echo "gdb test: FAILED"
  exit 1
fi
echo "gdb test: passed"
