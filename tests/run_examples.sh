#!/usr/bin/env bash
# Runs the examples as a user would and checks what they print (part of tools/test.sh).
#   tests/run_examples.sh BUILD_DIR
set -euo pipefail
build=$1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail=0
ok() { echo "  ok   $1"; }
bad() { echo "  FAIL $1"; fail=1; }

# Winter Games (tutorial C) on a smaller configuration: the greedy translation must be
# right for 5 of 5 seeds (--check exits 1 otherwise).
for seed in 0 1 2 3 4; do
  if "$build/examples/winter_games" --d-model 64 --d-ff 128 --d-k 16 --d-v 16 --layers 2 --heads 4 \
       --epochs 30 --lr 1e-3 --seed "$seed" --out "$out/wg$seed" --quiet --check >"$out/wg$seed.log" 2>&1; then
    ok "winter_games seed $seed: $(grep greedy "$out/wg$seed.log" | sed 's/ *greedy: *//')"
  else
    bad "winter_games seed $seed"; cat "$out/wg$seed.log"
  fi
done
# The same 5 seeds under bf16 autocast (docs/autocast.md). Where bf16 is not faster than fp32
# here, winter_games must first refuse before training, saying why (exit 2); where the refusal
# offers --allow-slower-bf16 (the CPU runs bf16, slowly), the seeds then run with it, so the
# translation under bf16 is checked on such a CPU too. The OpenBLAS backend has no bf16 at all.
bf16_flags=()
"$build/examples/winter_games" --d-model 32 --d-ff 64 --d-k 8 --d-v 8 --layers 1 --heads 2 --epochs 1 --autocast bf16 \
  --out "$out/wg_probe" --quiet >"$out/wg_probe.log" 2>&1 || true
if grep -q "autocast(bf16):" "$out/wg_probe.log"; then
  if grep -qE '^epoch|Loss' "$out/wg_probe.log"; then bad "winter_games --autocast bf16 trained before refusing"; else
    ok "winter_games --autocast bf16 refused here: $(grep -o 'autocast(bf16):.*' "$out/wg_probe.log" | head -c 100)"; fi
  grep -q "allow_slower_bf16" "$out/wg_probe.log" && bf16_flags=(--allow-slower-bf16)
fi
if ! grep -q "autocast(bf16):" "$out/wg_probe.log" || [[ ${#bf16_flags[@]} -gt 0 ]]; then
  for seed in 0 1 2 3 4; do
    if "$build/examples/winter_games" --d-model 64 --d-ff 128 --d-k 16 --d-v 16 --layers 2 --heads 4 --autocast bf16 \
         "${bf16_flags[@]}" --epochs 30 --lr 1e-3 --seed "$seed" --out "$out/wgbf$seed" --quiet --check >"$out/wgbf$seed.log" 2>&1; then
      ok "winter_games --autocast bf16 ${bf16_flags[*]} seed $seed: $(grep greedy "$out/wgbf$seed.log" | sed 's/ *greedy: *//')"
    else
      bad "winter_games --autocast bf16 seed $seed"; cat "$out/wgbf$seed.log"
    fi
  done
fi
# its heatmaps (showgraph) have axis titles, and the decoder's self-attention its 21 later words hatched
dec="$out/wg0/dec_self_attn_layer1_head0.svg"
if [ "$(grep -c 'class="axis-title"' "$dec" 2>/dev/null)" = 2 ] && [ "$(grep -o 'class="masked"' "$dec" | wc -l)" = 21 ] \
   && grep -q "keys: decoder inputs (later and PAD masked)" "$dec"; then
  ok "winter_games heatmaps: axis titles, 21 masked cells in dec_self_attn"
else bad "winter_games heatmap axis titles and masks ($dec)"; fi
# its heatmaps are SVG with CJK labels that render to PNG
svg="$out/wg0/dec_enc_attn_layer1_head0.svg"
if grep -q "北京" "$svg" && rsvg-convert "$svg" -o "$out/heatmap.png" && [ "$(stat -c %s "$out/heatmap.png")" -gt 5000 ]; then
  ok "heatmap SVG with CJK labels renders to PNG ($(stat -c %s "$out/heatmap.png") bytes)"
else
  bad "heatmap SVG rendering"
fi

# Spiral MLP: accuracy above 95% after 300 epochs
acc=$("$build/examples/spiral" | awk '/epoch  300/ {print $NF}' | tr -d '%')
if awk "BEGIN {exit !($acc > 95)}"; then ok "spiral accuracy $acc%"; else bad "spiral accuracy $acc%"; fi

# Tutorial A reverses digit strings: at least 90% exact after 400 steps
"$build/examples/reverse" --out "$out/rev" >"$out/rev.log" 2>&1 || true
right=$(awk '/greedy decoding:/ {split($3, a, "/"); print a[1]}' "$out/rev.log")
if [ "${right:-0}" -ge 180 ]; then ok "reverse: $right/200 exact"; else bad "reverse: ${right:-0}/200 exact"; cat "$out/rev.log"; fi
# ... and its heatmaps: axis titles, the PAD keys hatched as masked, the decoder's later keys too
ctx="$out/rev/ctx_attn_layer1_head0.svg"; dec="$out/rev/dec_self_attn_layer1_head0.svg"
if [ "$(ls "$out"/rev/*_attn_layer1_head*.svg 2>/dev/null | wc -l)" = 12 ] && [ "$(grep -c 'class="axis-title"' "$ctx")" = 2 ] \
   && grep -q '>keys: source digits (PAD masked)</text>' "$ctx" && [ "$(grep -o 'class="masked"' "$ctx" | wc -l)" -ge 7 ] \
   && [ "$(grep -o 'class="masked"' "$dec" | wc -l)" -ge 21 ] && rsvg-convert "$ctx" -o "$out/ctx.png"; then
  ok "reverse heatmaps: 12 SVGs with axis titles; $(grep -o 'class="masked"' "$ctx" | wc -l) masked cells in ctx_attn, $(grep -o 'class="masked"' "$dec" | wc -l) in dec_self_attn"
else bad "reverse heatmaps"; ls "$out/rev"; fi

# Tutorial B's run on a tiny configuration: the loss falls
"$build/examples/random_copy" --batch 4 --len 16 --vocab 50 --layers 1 --d-model 32 --heads 4 --d-ff 64 --steps 5 --lr 1e-3 --dropout 0 \
  --out "$out/b" >"$out/b.log" 2>&1 || true
first=$(awk '/^Epoch: 1,/ {print $4}' "$out/b.log"); last=$(awk '/^Epoch: 5,/ {print $4}' "$out/b.log")
if [ -n "$first" ] && [ -n "$last" ] && awk "BEGIN {exit !($last < $first)}"; then ok "random_copy loss $first -> $last"
else bad "random_copy"; cat "$out/b.log"; fi
# Every training example writes its report: random_copy's has every attention map (3 kinds x 1 layer
# x 4 heads, 16 x 15 tokens), the decoder's self-attention with its masked cells; reverse and spiral
# write theirs into their default folders (run here from an empty folder).
report_maps() {  # report.html -> "kinds maps masked-cells"
  python3 -c '
import json, re, sys
page = open(sys.argv[1], encoding="utf-8").read()
data = json.loads(re.search(r"<script type=\"application/json\" id=\"xtgrad-report-data\">(.*?)</script>", page, re.S).group(1))
maps = data["attention"]
masked = sum(sum(map(sum, m["masked"])) for m in maps if m["masked"])
print(len({m["kind"] for m in maps}), len(maps), masked)' "$1"
}
maps=$(report_maps "$out/b/report.html" 2>&1 || true)
if [ "$maps" = "3 12 420" ]; then ok "random_copy report: 3 kinds, 12 maps, the decoder's 420 later positions masked (4 heads x 105)"
else bad "random_copy report's attention maps: '$maps' (want '3 12 420')"; fi
# ... and its heatmap SVG (layer 0, head 0 by default): axis titles, the 105 later positions of 15 hatched
svg="$out/b/dec_self_attn_layer0_head0.svg"
if [ "$(grep -c 'class="axis-title"' "$svg" 2>/dev/null)" = 2 ] && [ "$(grep -o 'class="masked"' "$svg" | wc -l)" = 105 ] \
   && grep -q "later positions masked" "$svg" && rsvg-convert "$svg" -o "$out/b_heatmap.png"; then
  ok "random_copy heatmap: axis titles, 105 masked cells ($svg)"
else bad "random_copy heatmap ($svg)"; ls "$out/b"; fi
mkdir -p "$out/cwd"; bin=$(cd "$build" && pwd)/examples
if (cd "$out/cwd" && "$bin/spiral" --epochs 3 >/dev/null && "$bin/reverse" --steps 3 >/dev/null) &&
   [ -s "$out/cwd/spiral_out/report.html" ] && [ -s "$out/cwd/reverse_out/report.html" ] &&
   [ "$(report_maps "$out/cwd/reverse_out/report.html" | cut -d' ' -f1)" = 3 ]; then
  ok "spiral and reverse write spiral_out/report.html and reverse_out/report.html by default"
else bad "spiral/reverse default reports"; ls -R "$out/cwd"; fi
if (cd "$out/cwd" && rm -rf spiral_out && "$bin/spiral" --epochs 3 --no-report >/dev/null) &&
   [ ! -e "$out/cwd/spiral_out/report.html" ]; then ok "spiral --no-report writes no report"
else bad "spiral --no-report"; fi

# Tutorial D walk-through: every stage at the tutorial's shapes
if "$build/examples/tutorial_d_walkthrough" --out "$out/d" >"$out/d.log" 2>&1 && grep -q "tgt_mask) (20,32,512)" "$out/d.log"; then
  ok "tutorial_d_walkthrough: $(grep -c '(' "$out/d.log") shapes printed"
else bad "tutorial_d_walkthrough"; cat "$out/d.log"; fi
# ... and its values at the small size: the masks, the merged mask, the weights and the outputs
d_values_ok=1
for line in '        [0.0000, 0.0000,   -inf,   -inf],' \
            '        [False, False, False,  True]])' \
            '         [0.0000, 0.0000, 0.0000,   -inf]]], shape=(2,4,4))' \
            '          [0.1831, 0.4553, 0.3616, 0.0000]],' \
            '          [0.2784, 0.2996, 0.4220, 0.0000]]]], shape=(2,2,4,4))' \
            '         [0.2307, 0.3774, 0.3918, 0.0000]]], shape=(2,4,4))' \
            '         [ 0.0206,  0.1140,  0.2057,  0.0498,  0.5977,  0.0586, -0.0961,  0.4008]]], shape=(4,2,8))'; do
  grep -qxF -- "$line" "$out/d.log" || { bad "tutorial_d_walkthrough values: no line '$line'"; d_values_ok=0; }
done
# every printed weight row (per head and averaged) sums to 1
rows=$(awk '/^attn_output_weights (per head|\(N, L, S\), the default)/ {on = 1; next} /^attn_output \(/ {on = 0}
            on { gsub(/[][,]|tensor\(|shape=.*/, " "); n = split($0, v, " "); if (n == 4) { t = v[1] + v[2] + v[3] + v[4];
                 if (t < 0.999 || t > 1.001) bad++; rows++ } }
            END { print (bad ? "bad" : rows + 0) }' "$out/d.log")
[ "$rows" = 24 ] || { bad "tutorial_d_walkthrough: $rows weight rows summing to 1, expected 24"; d_values_ok=0; }
# its heatmap: sequence 1's causal mask (6 cells) and its PAD key (1 more) hatched as masked
svg="$out/d/mha_seq1_head0.svg"
if [ "$(grep -o 'class="masked"' "$svg" 2>/dev/null | wc -l)" = 7 ] && [ "$(grep -c 'class="axis-title"' "$svg")" = 2 ]; then
  ok "tutorial_d_walkthrough heatmap: 7 masked cells, axis titles"
else bad "tutorial_d_walkthrough heatmap ($svg)"; fi
if [ "$d_values_ok" = 1 ]; then ok "tutorial_d_walkthrough values: masks, merged mask, per-head and averaged weights (24 rows sum to 1), outputs"
else cat "$out/d.log"; fi

# The command-line promises: the examples' (resume, option checks, exit codes, the non-finite
# stop, every program's conventions), the speed switches', the benchmark scripts' and the tools'
for script in examples/run_cli_tests.sh bench/switch_cli_tests.sh bench/results_cli_tests.sh \
              bench/script_cli_tests.sh tools/cli_tests.sh; do
  if bash "$(dirname "$0")/$script" "$build"; then ok "tests/$script"; else bad "tests/$script"; fi
done

exit $fail
