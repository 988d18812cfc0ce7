#!/usr/bin/env bash
# Runs xtgrad's benchmark and the PyTorch one on the same configurations and thread counts,
# one after the other in one run, and prints one table with both and the ratio
# (docs/performance.md shows it for the project's 2-core machine).
#
#   bash bench/run.sh                  # winter (1, 2 threads), seed-d (1, 2), seed-b (2 threads, batch 64)
#   bash bench/run.sh --quick          # fewer steps, seed-b at batch 8 (~3 minutes instead of ~12)
#   bash bench/run.sh --build build-perf --configs "winter seed-d" --out /tmp/bench.jsonl
#   bash bench/run.sh --table /tmp/bench.jsonl     # print the table of an earlier run again
#   bash bench/run.sh --ceiling-builds "build build-openblas"   # the ceiling of each backend's build
#
# Needs a release build with the benchmark (meson setup build --buildtype=release; ninja -C
# build) and Debian's python3-torch for the PyTorch side. Each configuration runs in its own
# process (so its peak RSS is its own). torch's 2-thread runs get OMP_WAIT_POLICY=PASSIVE: on
# 2 cores its OpenMP threads otherwise spin next to OpenBLAS's and every op waits out a
# scheduler quantum, ~8 ms (docs/performance.md, "Design choices"). xtgrad needs none.
# The JSON lines of every run are appended to --out as they finish. First, bench/ceiling_bench
# measures the machine's ceiling (CPU, FMA peak, each built backend's best sgemm): the table
# shows the phases' GFLOP/s as a fraction of that peak.
set -euo pipefail

# The table, from the JSON lines both benchmarks print with --json.
print_table() {
  /usr/bin/python3 - "$1" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip().startswith("{")]
# The machine's ceiling (bench/ceiling_bench, one line per GEMM backend built): the scale of the
# GFLOP/s columns. Peak per core = the widest FMA the CPU has (AVX-512, else AVX2).
machines = [r for r in rows if r["framework"] == "machine"]
peak_core = None
for m in machines:
    a512, a2 = m.get("fma_avx512_gflops_per_core"), m.get("fma_avx2_gflops_per_core")
    peak_core = peak_core or a512 or a2
    if m is machines[0]:
        print(f"CPU: {m['cpu']}, {m['cores']} cores. FMA peak per core: AVX-512 "
              f"{'n/a' if a512 is None else f'{a512:.0f}'} GFLOP/s, AVX2 {'n/a' if a2 is None else f'{a2:.0f}'} GFLOP/s")
    best = {}
    for g in m["sgemm"]:
        best.setdefault(g["threads"], []).append(f"{g['shape'].split(' ')[0]} {g['gflops']:.0f}")
    for t, v in sorted(best.items()):
        print(f"sgemm {m['gemm_backend']}, {t} thread(s), best GFLOP/s: " + ", ".join(v))
if machines:
    print()
rows = [r for r in rows if r["framework"] != "machine"]
by = {}
for r in rows:
    by.setdefault((r["config"], r["threads"]), {})[r["framework"]] = r
print("| config | threads | phase | xtgrad ms | torch ms | xtgrad / torch | xtgrad GFLOP/s | torch GFLOP/s "
      "| xtgrad % of FMA peak | peak RSS MiB xtgrad / torch | step CPU ms xtgrad / torch |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
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
        pct = f"{100 * xs['gflops'] / (peak_core * t):.0f} %" if xs.get("gflops") and peak_core else "-"
        ratio = xs["median_ms"] / ps["median_ms"] if ps["median_ms"] > 0 else float("nan")
        rss = f"{x['peak_rss_mib']:.0f} / {p['peak_rss_mib']:.0f}" if first else ""
        cpu = f"{x['step_cpu_ms']:.0f} / {p['step_cpu_ms']:.0f}" if first else ""
        print(f"| {name if first else ''} | {t if first else ''} | {phase} | {xs['median_ms']:.1f} | "
              f"{ps['median_ms']:.1f} | {ratio:.2f} | {g(xs)} | {g(ps)} | {pct} | {rss} | {cpu} |")
        first = False
print()
print("Medians over the timed steps. step = zero_grad + forward + loss + backward + optimizer step, end to end;")
print("infer = eval() forward without gradients. GFLOP/s from the analytic matmul count (step = 3 x forward).")
print("Step CPU time counts all threads, spinning ones included; below the wall time of a 1-thread run it")
print("means the process was descheduled (a busy machine). % of FMA peak: xtgrad's matmul GFLOP/s over the")
print("FMA peak per core above times the threads (GEMM-heavy phases: fwd, bwd, infer of seed-b and seed-d).")
EOF
}

main() {
  local build=build quick=0 configs="winter seed-d seed-b" out="" table="" ceiling_builds=""
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --quick) quick=1 ;;
      --build) build="$2"; shift ;;
      --configs) configs="$2"; shift ;;
      --out) out="$2"; shift ;;
      --table) table="$2"; shift ;;
      --ceiling-builds) ceiling_builds="$2"; shift ;;
      -h|--help) sed -n '2,19p' "$0"; return 0 ;;
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
  # The ceiling: this build's backend, and any other build named (default: build-openblas if built).
  if [[ -z "$ceiling_builds" ]]; then
    ceiling_builds="$build"
    [[ -x build-openblas/bench/ceiling_bench ]] && ceiling_builds+=" build-openblas"
  fi
  local b
  for b in $ceiling_builds; do
    echo "# ceiling ($b) ..." >&2
    "$b/bench/ceiling_bench" --json >> "$results" || echo "# ceiling ($b): failed, left out" >&2
  done
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
