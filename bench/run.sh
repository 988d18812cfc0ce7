#!/usr/bin/env bash
# Runs xtgrad's benchmark and the PyTorch one on the same configurations and thread counts,
# one after the other in one run, and prints one table with both and the ratio
# (docs/performance.md shows it for the project's 2-core machine).
#
#   bash bench/run.sh                  # winter (1 and 2 threads), seed-d (1, 2), seed-b (2, batch 64)
#   bash bench/run.sh --quick          # seed-b at batch 8, fewer steps (~3 minutes)
#   bash bench/run.sh --build build-perf --configs "winter seed-d" --out /tmp/bench.jsonl
#
# Needs a release build with the benchmark (meson setup build --buildtype=release; ninja -C
# build) and Debian's python3-torch for the PyTorch side. Each configuration runs in its own
# process (so peak RSS is its own). torch's 2-thread runs use OMP_WAIT_POLICY=PASSIVE: on 2
# cores its OpenMP threads otherwise spin next to OpenBLAS's and every op waits a scheduler
# quantum (../shared/notes/xtensor-openblas-probe.md, section 6). xtgrad needs no such setting.
set -euo pipefail
cd "$(dirname "$0")/.."

build=build
quick=0
configs="winter seed-d seed-b"
out=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) quick=1 ;;
    --build) build="$2"; shift ;;
    --configs) configs="$2"; shift ;;
    --out) out="$2"; shift ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

bench="$build/bench/xtgrad_bench"
[[ -x "$bench" ]] || { echo "run.sh: $bench not found; build first (ninja -C $build)" >&2; exit 2; }
python=/usr/bin/python3
$python -c 'import torch' 2>/dev/null || { echo "run.sh: $python cannot import torch (apt install python3-torch)" >&2; exit 2; }

results=$(mktemp)
trap 'rm -f "$results"' EXIT

# config -> "threads..." and the per-config step counts
threads_of() { case "$1" in seed-b) echo "2" ;; *) echo "1 2" ;; esac; }
args_of() {
  case "$1" in
    winter) [[ $quick == 1 ]] && echo "--steps 5 --warmup 2" || echo "--steps 15 --warmup 3" ;;
    seed-d) [[ $quick == 1 ]] && echo "--steps 3 --warmup 1" || echo "--steps 5 --warmup 2" ;;
    seed-b) [[ $quick == 1 ]] && echo "--steps 3 --warmup 1 --batch 8" || echo "--steps 3 --warmup 1 --batch 64" ;;
  esac
}

echo "# $(date -u +%FT%TZ)  $(nproc) cores  load $(cut -d' ' -f1-3 /proc/loadavg)  compilers running: $(pgrep -c cc1plus || true)" >&2
for c in $configs; do
  for t in $(threads_of "$c"); do
    a=$(args_of "$c")
    echo "# $c, $t thread(s): xtgrad ..." >&2
    # shellcheck disable=SC2086
    "$bench" --config "$c" --threads "$t" $a --json >> "$results"
    echo "# $c, $t thread(s): torch ..." >&2
    wait_policy=""
    [[ $t -gt 1 ]] && wait_policy=PASSIVE
    # shellcheck disable=SC2086
    OMP_WAIT_POLICY=${wait_policy:-${OMP_WAIT_POLICY:-}} $python bench/torch_bench.py --config "$c" --threads "$t" $a --json >> "$results"
  done
done
echo "# done: load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
[[ -n "$out" ]] && cp "$results" "$out"

$python - "$results" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
by = {}
for r in rows:
    by.setdefault((r["config"], r["threads"]), {})[r["framework"]] = r
print("| config | threads | phase | xtgrad ms | torch ms | xtgrad / torch | xtgrad GFLOP/s | torch GFLOP/s | peak RSS xtgrad / torch (MiB) | step CPU ms xtgrad / torch |")
print("|---|---|---|---|---|---|---|---|---|---|")
for (cfg, t), fw in by.items():
    x, p = fw.get("xtgrad"), fw.get("torch")
    if not x or not p:
        continue
    name = cfg + (f" (batch {x['batch']})" if x.get("batch") else "")
    first = True
    for phase in ["step", "fwd", "bwd", "opt", "zero", "infer"]:
        if phase not in x["phases"] or phase not in p["phases"]:
            continue
        xs, ps = x["phases"][phase], p["phases"][phase]
        g = lambda s: f"{s['gflops']:.0f}" if s.get("gflops") else "-"
        ratio = xs["median_ms"] / ps["median_ms"] if ps["median_ms"] > 0 else float("nan")
        rss = f"{x['peak_rss_mib']:.0f} / {p['peak_rss_mib']:.0f}" if first else ""
        cpu = f"{x['step_cpu_ms']:.0f} / {p['step_cpu_ms']:.0f}" if first else ""
        print(f"| {name if first else ''} | {t if first else ''} | {phase} | {xs['median_ms']:.1f} | {ps['median_ms']:.1f} "
              f"| {ratio:.2f} | {g(xs)} | {g(ps)} | {rss} | {cpu} |")
        first = False
print()
print("Medians; step = zero_grad + forward + loss + backward + optimizer step, end to end; infer = eval() forward")
print("without gradients. GFLOP/s from the analytic matmul count (step = 3 x forward). Step CPU time counts all")
print("threads, spinning ones included: near threads x wall time means every thread was busy or spinning; below")
print("the wall time (1 thread) means the process was descheduled by a busy machine.")
EOF
