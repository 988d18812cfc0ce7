#!/usr/bin/env bash
# The gdb test: debugs BUILD/tests/gdb_target (one training step of tutorial C's Transformer)
# in batch mode and checks what gdb prints.
#   1. tests/gdb/attention_backward.gdb: the printers load by themselves (.debug_gdb_scripts),
#      a break on the SoftmaxBackward of encoder.layers.0.enc_self_attn, then a node, a
#      gradient, a tensor and calls into the program's print helpers.
#   2. docs/gdb/follow_gradient.gdb: the walk-through of docs/debugging.md, as written there.
#   3. The printers sourced by hand (how users' own static programs load them).
# Passes on any build type; tools/test.sh runs it on the release (-O3) build.
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

num='-?[0-9][0-9.e+-]*'

echo "== gdb test 1: break in the attention's softmax backward ($target)"
log=$out/attention.log
run_gdb tests/gdb/attention_backward.gdb "$log"
expect "$log" "printers auto-loaded from the library" '^Yes +xtgrad_printers\.py'
expect "$log" "stopped in matched_node" 'Breakpoint 1, xtgrad::debug::matched_node'
expect "$log" "node: op, module path, source location" \
  '^\$1 = xtgrad::Node SoftmaxBackward in encoder\.layers\.0\.enc_self_attn, created at autograd/ops/softmax\.cpp:[0-9]+ = \{$'
expect "$log" "node: its input, the masked scores, shape kept and values freed (nothing saved them)" \
  "^  input 0 = xtgrad::TensorImpl \(1,2,7,7\) float32 requires_grad grad_fn=MaskedFillBackward grad=none \(values freed\)"
expect "$log" "gradient flowing in: shape and values" "^\\\$2 = xtgrad::Array \(1,2,7,7\) \[$num, $num, .*\(98 values\)\]$"
expect "$log" "tensor: name, shape, dtype, flags, values" \
  "^\\\$3 = xtgrad::Tensor \"encoder\.layers\.0\.enc_self_attn\.W_Q\.weight\" \(16,16\) float32 requires_grad leaf grad=none \[$num, "
expect "$log" "the loss, a scalar with a grad_fn" "^\\\$4 = xtgrad::Tensor \(\) float32 requires_grad grad_fn=CrossEntropyBackward grad=none \[?$num"
expect "$log" "the node again, through debug::state" '^\$5 = xtgrad::Node SoftmaxBackward'
expect "$log" "call xtgrad::debug::print_node" '^SoftmaxBackward in encoder\.layers\.0\.enc_self_attn, created at autograd/ops/softmax\.cpp:[0-9]+ \('
expect "$log" "call xtgrad_print (C alias)" \
  "^\"encoder\.layers\.0\.enc_self_attn\.W_Q\.weight\" \(16,16\) float32 requires_grad leaf grad=none \["
expect "$log" "the program finished its step" '^loss [0-9.]+, \|grad W_Q\| [0-9.]+'
expect "$log" "exited normally" 'exited normally'

echo "== gdb test 2: docs/gdb/follow_gradient.gdb"
log=$out/follow.log
run_gdb docs/gdb/follow_gradient.gdb "$log"
expect "$log" "the loss node first" '^\$1 = xtgrad::Node CrossEntropyBackward \(outside any module\)'
expect "$log" "seeded with 1" '^\$2 = xtgrad::Array \(\) 1$'
expect "$log" "the graph below the loss" '^`- ReshapeBackward -> \(7,9\)'
expect "$log" "W_Q's node before it runs" '^\$[0-9]+ = xtgrad::Node LinearBackward in encoder\.layers\.0\.enc_self_attn\.W_Q, created at autograd/ops/matmul\.cpp'
expect "$log" "W_Q's input: values a backward saved are shown" \
  "^  input 0 = xtgrad::TensorImpl \(1,7,16\) float32 requires_grad grad_fn=AddBackward grad=\(1,7,16\) \[$num, "
expect "$log" "W_Q.weight has no grad yet" '^  input 1 = xtgrad::TensorImpl "encoder\.layers\.0\.enc_self_attn\.W_Q\.weight" \(16,16\) float32 requires_grad leaf grad=none'
expect "$log" "the gradient flowing into W_Q" "^\\\$[0-9]+ = xtgrad::Array \(1,7,16\) \[$num, "
expect "$log" "after the node: W_Q.weight has its grad" '^  input 1 = xtgrad::TensorImpl "encoder\.layers\.0\.enc_self_attn\.W_Q\.weight" \(16,16\) float32 requires_grad leaf grad=\(16,16\)'
expect "$log" "the tensor printer shows the grad" "^  grad = xtgrad::Array \(16,16\) \[$num, "
expect "$log" "print_grad from the program" '^grad of encoder\.layers\.0\.enc_self_attn\.W_Q\.weight$'
expect "$log" "exited normally" 'exited normally'

echo "== gdb test 3: printers sourced by hand"
log=$out/source.log
cat >"$out/source.gdb" <<EOF
source $src/tools/gdb/xtgrad_printers.py
set xtgrad-max-values 3
set breakpoint pending on
break xtgrad::debug::matched_node
set environment XTGRAD_BREAK_OP=LinearBackward
run
print gdb_target::w_q
kill
EOF
run_gdb "$out/source.gdb" "$log" -iex "set auto-load python-scripts off"
expect "$log" "sourced printers, 3 values" \
  "^\\\$1 = xtgrad::Tensor \"encoder\.layers\.0\.enc_self_attn\.W_Q\.weight\" \(16,16\) float32 requires_grad leaf grad=none \[$num, $num, $num, \.\.\. \(256 values\)\]$"

if [ "$failed" -ne 0 ]; then
  for f in "$out"/*.log; do echo "---- $f"; cat "$f"; done
  echo "gdb test: FAILED"
  exit 1
fi
echo "gdb test: passed"
