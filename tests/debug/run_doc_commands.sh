#!/usr/bin/env bash
# Runs the example commands of docs/debugging.md (the gdb ones are tests/gdb/run_gdb_test.sh)
# and checks their output, so the page stays true.
#   tests/debug/run_doc_commands.sh BUILD_DIR
set -euo pipefail
build=$(cd "${1:?usage: run_doc_commands.sh BUILD_DIR}" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
failed=0
check() {  # description, command...
  local what=$1; shift
  if "$@" >/dev/null 2>&1; then echo "  ok    $what"; else echo "  FAIL  $what"; failed=1; fi
}

echo "== docs/debugging.md: the graph example"
"$build/examples/graph" --out "$out" | tee "$out/graph.log"
check "encoder_layer.dot written" test -s "$out/encoder_layer.dot"
check "clustered by module" grep -q 'subgraph cluster_encoder_layers_0_enc_self_attn {' "$out/encoder_layer.dot"
check "parameters by name" grep -q 'encoder.layers.0.enc_self_attn.W_Q.weight' "$out/encoder_layer.dot"
if command -v dot >/dev/null; then
  check "rendered to SVG" grep -q '<svg' "$out/encoder_layer.svg"
else
  echo "  FAIL  Graphviz's dot is not installed (tools/install_deps.sh installs graphviz)"; failed=1
fi
"$build/examples/graph" --depth 3 --no-render --out "$out/depth3" >/dev/null
check "--depth 3 draws fewer nodes" test "$(grep -c 'rounded,filled' "$out/depth3/encoder_layer.dot")" -lt \
  "$(grep -c 'rounded,filled' "$out/encoder_layer.dot")"

echo "== docs/debugging.md: the trace table"
"$build/examples/graph" --trace --no-render --out "$out" >"$out/trace.log"
check "table header" grep -qE '^step  op +module +grad in +\|grad\| +from$' "$out/trace.log"
check "a summed gradient (Q = K = V = residual)" grep -qE 'AddBackward +encoder +\(1,7,16\) .* sum of 4: ' "$out/trace.log"
check "leaves by name" grep -qE '^encoder\.layers\.0\.enc_self_attn\.W_Q\.weight +\(16,16\)' "$out/trace.log"
XTGRAD_TRACE=1 "$build/examples/graph" --no-render --out "$out" 2>"$out/xtgrad_trace.log" >/dev/null
check "XTGRAD_TRACE=1 lines" grep -qE '^\[xtgrad backward +0\] CrossEntropyBackward +grad \(\) +\|g\| = 1 ' "$out/xtgrad_trace.log"

[ "$failed" -eq 0 ] && echo "doc commands: passed" || { echo "doc commands: FAILED"; exit 1; }
