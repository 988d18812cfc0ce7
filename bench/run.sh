#!/usr/bin/env bash
# Runs xtgrad's benchmark and the PyTorch one on the same configurations and thread counts,
# one after the other in one run, and prints one table with both and the ratio
# (docs/performance.md shows it for the project's 2-core machine).
#
#   bash bench/run.sh                  # winter (1, 2 threads), seed-d (1, 2), seed-b (2 threads, batch 64)
#   bash bench/run.sh --quick          # fewer steps, seed-b at batch 8 (~3 minutes instead of ~12)
#   bash bench/run.sh --build build-perf --configs "winter seed-d" --out /tmp/bench.jsonl
#   bash bench/run.sh --table /tmp/bench.jsonl     # print the table of an earlier run again
#
# Needs a release build with the benchmark (meson setup build --buildtype=release; ninja -C
# build) and Debian's python3-torch for the PyTorch side. Each configuration runs in its own
# process (so its peak RSS is its own). torch's 2-thread runs get OMP_WAIT_POLICY=PASSIVE: on
# 2 cores its OpenMP threads otherwise spin next to OpenBLAS's and every op waits out a
# scheduler quantum (../shared/notes/xtensor-openblas-probe.md, section 6). xtgrad needs none.
# The JSON lines of every run are appended to --out as they finish.
set -euo pipefail

# The table, from the JSON lines both benchmarks print with --json.
print_table() {
  /usr/bin/python3 - "$1" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip().startswith("{")]
by = {}
for r in rows:
    by.setdefault((r["config"], r["threads"]), {})[r["framework"]] = r
print("| config | threads | phase | xtgrad ms | torch ms | xtgrad / torch | xtgrad GFLOP/s | torch GFLOP/s "
      "| peak RSS MiB xtgrad / torch | step CPU ms xtgrad / torch |")
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
        print(f"| {name if first else ''} | {t if first else ''} | {phase} | {xs['median_ms']:.1f} | "
              f"{ps['median_ms']:.1f} | {ratio:.2f} | {g(xs)} | {g(ps)} | {rss} | {cpu} |")
        first = False
print()
print("Medians over the timed steps. step = zero_grad + forward + loss + backward + optimizer step, end to end;")
print("infer = eval() forward without gradients. GFLOP/s from the analytic matmul count (step = 3 x forward).")
print("Step CPU time counts all threads, spinning ones included; below the wall time of a 1-thread run it")
print("means the process was descheduled (a busy machine).")
EOF
}

main() {
  local build=build quick=0 configs="winter seed-d seed-b" out="" table=""
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --quick) quick=1 ;;
      --build) build="$2"; shift ;;
      --configs) configs="$2"; shift ;;
      --out) out="$2"; shift ;;
      --table) table="$2"; shift ;;
      -h|--help) sed -n '2,17p' "$0"; return 0 ;;
      *) echo "run.sh: unknown argument $1" >&2; return 2 ;;
    esac
    shift
  done
  if [[ -n "$table" ]]; then print_table "$table"; return 0; fi

  local bench="$build/bench/xtgrad_bench" python=/usr/bin/python3
  [[ -x "$bench" ]] || { echo "run.sh: $bench not found; build first (ninja -C $build)" >&2; return 2; }
  $python -c 'import torch' 2>/dev/null || { echo "run.sh: $python cannot import torch (apt install python3-torch)" >&2; return 2; }

  results=""
  if [[ -n "$out" ]]; then results="$out"; : > "$results"; else results=$(mktemp); trap 'rm -f "$results"' EXIT; fi

  echo "# $(date -u +%FT%TZ)  $(nproc) cores  load $(cut -d' ' -f1-3 /proc/loadavg)  compilers running: $(pgrep -c cc1plus || true)" >&2
  local c t a
  for c in $configs; do
    for t in $(threads_of "$c"); do
      a=$(args_of "$c" "$quick")
      echo "# $c, $t thread(s): xtgrad ...  (load $(cut -d' ' -f1 /proc/loadavg), compilers $(pgrep -c cc1plus || true))" >&2
      # shellcheck disable=SC2086
      "$bench" --config "$c" --threads "$t" $a --json >> "$results"
      echo "# $c, $t thread(s): torch ...   (load $(cut -d' ' -f1 /proc/loadavg), compilers $(pgrep -c cc1plus || true))" >&2
      local torch_env=()
      [[ $t -gt 1 ]] && torch_env=(OMP_WAIT_POLICY=PASSIVE)
      # shellcheck disable=SC2086
      env "${torch_env[@]}" $python bench/torch_bench.py --config "$c" --threads "$t" $a --json >> "$results"
    done
  done
  echo "# done $(date -u +%FT%TZ): load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  print_table "$results"
}

# config -> its thread counts, and its step counts
threads_of() { case "$1" in seed-b) echo "2" ;; *) echo "1 2" ;; esac; }
args_of() {
  case "$1" in
    winter) [[ $2 == 1 ]] && echo "--steps 5 --warmup 2" || echo "--steps 15 --warmup 3" ;;
    seed-d) [[ $2 == 1 ]] && echo "--steps 3 --warmup 1" || echo "--steps 5 --warmup 2" ;;
    seed-b) [[ $2 == 1 ]] && echo "--steps 3 --warmup 1 --batch 8" || echo "--steps 3 --warmup 1 --batch 64" ;;
  esac
}

cd "$(dirname "$0")/.."
main "$@"
exit $?
