#!/usr/bin/env bash
# Runs xtgrad's benchmark and the PyTorch one on the same configurations and thread counts,
# one after the other in one run, and prints one table with both and the ratio
# (docs/performance.md shows it for the project's 2-core machine).
#
#   bash bench/run.sh                  # winter (1, 2 threads), seed-d (1, 2), seed-b (2 threads, batch 64)
#   bash bench/run.sh --quick          # fewer steps, seed-b at batch 8 (~3 minutes instead of ~12)
#   bash bench/run.sh --build build-perf --configs "winter seed-d" --out /tmp/bench.jsonl
#   bash bench/run.sh --table /tmp/bench.jsonl     # print the table of an earlier run again
#   bash bench/run.sh --ceiling-builds "build build-other"   # the ceilings of other builds too
#   bash bench/run.sh --autocast bf16  # each config in fp32 and under bf16 autocast, both programs
#   bash bench/run.sh --configs winter --optimizer-in-backward   # xtgrad also with its step in backward
#   bash bench/run.sh --compare-switches --out /tmp/sw.jsonl     # each speed switch on against off, every config
#   bash bench/run.sh --configs seed-d --paired-ceiling  # also x the GEMM ceiling measured before each step
#   bash bench/run.sh --configs seed-d --autocast bf16 --rounds 3  # each xtgrad / torch pair 3 times, alternating
#   bash bench/run.sh --configs seed-b --seed-b-batch 16 --paired-ceiling  # seed-b at batch 16 (issue targets: 16 and 64)
#
# Needs a release build with the benchmark (meson setup build --buildtype=release; ninja -C
# build) and Debian's python3-torch for the PyTorch side. Each configuration runs in its own
# process (so its peak RSS is its own). torch's 2-thread runs get OMP_WAIT_POLICY=PASSIVE: on
# 2 cores its OpenMP threads otherwise spin next to OpenBLAS's and every op waits out a
# scheduler quantum, ~8 ms (docs/performance.md, "Design choices"). xtgrad needs none.
# Every torch run, and every run of an xtgrad build on OpenBLAS, runs twice: with
# OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE as set (pinned) and with both unset for that command
# alone (OpenBLAS's own CPU detection); each ratio uses the faster and the table names its kernel.
# --rounds N runs each config's xtgrad / torch pair N times in turn, so a host whose speed drifts
# (a KVM guest: up to 45 % between identical runs) slows both sides alike: the table reads each
# side's median run at its fastest OpenBLAS setting. One-thread runs are pinned, both sides of a
# round to one CPU, the rounds to each CPU in turn (bench/pin_cpu.sh: one vCPU can be 25 % slower).
# The JSON lines of every run are appended to --out as they finish. First, bench/ceiling_bench
# measures the machine's ceiling (CPU, FMA peak, each backend's best sgemm): the table
# shows the phases' GFLOP/s as a fraction of that peak.
set -euo pipefail
# shellcheck source=bench/pin_cpu.sh
source "$(dirname "${BASH_SOURCE[0]}")/pin_cpu.sh"

# The table, from the JSON lines both benchmarks print with --json.
print_table() {
  /usr/bin/python3 - "$1" "$(dirname "${BASH_SOURCE[0]}")" <<'EOF'
import json, os, sys
sys.path.insert(0, sys.argv[2])  # bench/, for result_lines
from result_lines import median_run_per_setting  # noqa: E402
def not_results(kind, value, traceback):  # a line of another shape: one message, not a traceback
    sys.stderr.write(f"run.sh: {sys.argv[1]} holds a line that is no benchmark result ({kind.__name__}: {value}); "
                     "--table reads what --out wrote (xtgrad_bench and torch_bench.py --json lines)\n")
    sys.stderr.flush()
    os._exit(2)
sys.excepthook = not_results
rows = []
for number, l in enumerate(open(sys.argv[1], errors="replace"), 1):
    if l.strip().startswith("{"):
        try:
            rows.append(json.loads(l))
        except ValueError as e:
            sys.exit(f"run.sh: line {number} of {sys.argv[1]} is not a JSON object ({e})")
if not rows:
    sys.exit(f"run.sh: {sys.argv[1]} has no result line (a JSON object per line, as --out writes)")
# OpenBLAS runs twice (both_openblas_ways): "pinned" (OPENBLAS_CORETYPE as the environment sets
# it) and "own detection" (unset for that command), each with glibc's heap as is and kept (kept_heap).
# Every ratio uses the fastest.
def kernel(r):
    k = r.get("openblas_core") or r.get("gemm_kernel") or "?"
    k = f"{k} (pinned)" if r.get("openblas_env") == "pinned" else k
    return f"{k}, heap kept" if r.get("glibc_heap") == "kept" else k
# The machine's ceiling (bench/ceiling_bench, one line per GEMM backend built and OpenBLAS
# setting): the scale of the GFLOP/s columns. Peak per core = the widest FMA (AVX-512, else AVX2).
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
        print(f"sgemm {m['gemm_backend']} ({kernel(m)}), {t} thread(s), best GFLOP/s: " + ", ".join(v))
    if m.get("bf16_gemm"):  # where autocast runs: the bf16 ceiling (docs/autocast.md)
        print(f"bf16 dot-product peak per core (vdpbf16ps): {m['bf16_dot_gflops_per_core']:.0f} GFLOP/s")
        best16 = {}
        for g in m["bf16_gemm"]:
            best16.setdefault(g["threads"], []).append(f"{g['shape'].split(' ')[0]} {g['gflops']:.0f}")
        for t, v in sorted(best16.items()):
            print(f"gemm with bf16 operands, {t} thread(s), best GFLOP/s: " + ", ".join(v))
if machines:
    print()
rows = [r for r in rows if r["framework"] != "machine"]
# xtgrad_bench --paired-ceiling lines (run.sh --paired-ceiling): their own table below, not the main one
paired = [r for r in rows if r["framework"] == "xtgrad" and isinstance(r.get("paired_ceiling"), dict)]
rows = [r for r in rows if not r.get("paired_ceiling")]
# (config, threads, batch, autocast) -> framework -> [runs]: a file may hold seed-b at two batches
by = {}
for r in rows:
    key = (r["config"], r["threads"], r.get("batch"), r.get("autocast") or "")
    by.setdefault(key, {}).setdefault(r["framework"], []).append(r)
def middle(runs, phase):
    """Either side at its best setting: per OpenBLAS kernel and setting its median run over --rounds,
    then the fastest (bench/result_lines.py)."""
    return median_run_per_setting(runs, phase, kernel)
print("| config | threads | phase | xtgrad ms | torch ms | xtgrad / torch | torch's OpenBLAS runs (kernel ms, the one read in bold) "
      "| xtgrad GFLOP/s | torch GFLOP/s | xtgrad % of FMA peak | vs xtgrad fp32 | peak RSS MiB xtgrad / torch "
      "| step CPU ms xtgrad / torch |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for (cfg, t, batch, ac), fw in by.items():
    xr_all, pr = fw.get("xtgrad"), fw.get("torch")
    if not xr_all or not pr:
        continue
    # xtgrad's runs with the optimizer's step in backward (--optimizer-in-backward) get rows of
    # their own, against the same torch runs (torch steps after backward, its default).
    for inb in sorted({bool(r.get("optimizer_in_backward")) for r in xr_all}):
        xr = [r for r in xr_all if bool(r.get("optimizer_in_backward")) == inb]
        fp32 = [r for r in by.get((cfg, t, batch, ""), {}).get("xtgrad", [])
                if bool(r.get("optimizer_in_backward")) == inb] if ac else None
        name = (cfg + (f" (batch {batch})" if batch else "") +
                (f", autocast {ac}" if ac else "") + (", xtgrad steps in backward" if inb else ""))
        first = True
        for phase in ["step", "fwd", "bwd", "opt", "zero", "infer"]:
            x, p = middle(xr, phase), middle(pr, phase)
            if not x or not p:
                continue
            xs, ps = x["phases"][phase], p["phases"][phase]
            g = lambda s: f"{s['gflops']:.0f}" if s.get("gflops") else "-"
            pct = f"{100 * xs['gflops'] / (peak_core * t):.0f} %" if xs.get("gflops") and peak_core else "-"
            ratio = xs["median_ms"] / ps["median_ms"] if ps["median_ms"] > 0 else float("nan")
            runs = [(kernel(r), r["phases"][phase]["median_ms"], r is p) for r in
                    sorted(pr, key=lambda r: r.get("openblas_env") != "pinned") if phase in r["phases"]]
            which = " / ".join(f"**{k} {ms:.1f}**" if won else f"{k} {ms:.1f}" for k, ms, won in runs) if len(runs) > 1 \
                else kernel(p)
            f32 = middle(fp32, phase) if fp32 else None
            vs32 = f"{xs['median_ms'] / f32['phases'][phase]['median_ms']:.2f}" if f32 else "-"
            rss = f"{x['peak_rss_mib']:.0f} / {min(r['peak_rss_mib'] for r in pr):.0f}" if first else ""
            cpu = f"{x['step_cpu_ms']:.0f} / {p['step_cpu_ms']:.0f}" if first else ""
            print(f"| {name if first else ''} | {t if first else ''} | {phase} | {xs['median_ms']:.1f} | "
                  f"{ps['median_ms']:.1f} | {ratio:.2f} | {which} | {g(xs)} | {g(ps)} | {pct} | {vs32} | {rss} | {cpu} |")
            first = False
print()
print("Medians over the timed steps (with --rounds: each side's median run at its fastest setting). step = zero_grad + forward + loss + backward + optimizer step, end to end;")
print("infer = eval() forward without gradients. GFLOP/s from the analytic matmul count (step = 3 x forward).")
print("torch runs with OpenBLAS as OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are set (pinned), with both unset (its own")
print("detection), and, where that found no AVX-512 kernel on an AVX-512 CPU, with one named; each of those with glibc's")
print("heap as its defaults leave it and kept (MALLOC_MMAP_THRESHOLD_, as xtgrad keeps its own); each ratio uses the fastest,")
print("torch's peak RSS is its lowest.")
slow = sorted({r["config"] for r in rows if r["framework"] == "xtgrad" and r.get("bf16_speed") == "slower"})
if slow:
    print("bf16 products are slower than fp32 on this CPU: autocast::Scope(bf16) refuses them there; the autocast rows of")
    print(f"xtgrad ({', '.join(slow)}) ran with --allow-slower-bf16 to measure by how much.")
print("Step CPU time counts all threads, spinning ones included; below the wall time of a 1-thread run it")
print("means the process was descheduled (a busy machine). % of FMA peak: xtgrad's matmul GFLOP/s over the")
print("FMA peak per core above times the threads (GEMM-heavy phases: fwd, bwd, infer of seed-b and seed-d).")
print("vs xtgrad fp32: an autocast row's time over xtgrad's fp32 time of the same config and phase.")
print("'xtgrad steps in backward': xtgrad's optimizer steps inside backward (--optimizer-in-backward: no opt phase,")
print("bwd includes the updates); torch's side is the same runs as the other rows (Adam's step after backward).")
if paired:
    print()
    print("x the GEMM ceiling, paired (--paired-ceiling): each step (inference) over the ideal at the ceiling measured")
    print("just before it, the median over the steps; the ceilings read before the steps and inferences, lowest-highest.")
    print()
    print("| config | threads | kernel | ceiling GFLOP/s | fwd + bwd | step | inference |")
    print("|---|---|---|---|---|---|---|")
    for r in paired:
        p = r["paired_ceiling"]
        g = p["step_gflops"] + p.get("infer_gflops", [])
        x = lambda phase: f"{p['x_ceiling'][phase]:.2f}x" if phase in p["x_ceiling"] else "-"
        name = (r["config"] + (f" (batch {r['batch']})" if r.get("batch") else "") +
                (f", autocast {r['autocast']}" if r.get("autocast") else "") +
                (", xtgrad steps in backward" if r.get("optimizer_in_backward") else ""))
        print(f"| {name} | {r['threads']} | {kernel(r)} | {min(g):.0f}-{max(g):.0f} | {x('fwd+bwd')} | {x('step')} | {x('infer')} |")
EOF
}

# Runs a command that uses OpenBLAS twice: with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE as the
# environment sets them (on some of the project's machines they pin OpenBLAS to Haswell's AVX2
# kernels), then with both unset for that command alone (OpenBLAS detects the CPU itself:
# Cooperlake's AVX-512 kernels on a Zen 4 or 5). OpenBLAS 0.3.21 does not know every AVX-512 CPU:
# on an Emerald Rapids Xeon (family 6, model 207) its own detection falls back to Prescott's SSE3
# kernels (torch's 2048^3 sgemm at 29 GFLOP/s per core, against ~140 with SkylakeX's). So where
# the CPU has AVX-512 and neither run used an AVX-512 kernel, a third run names one
# (OPENBLAS_CORETYPE=Cooperlake with AVX512-BF16, else SkylakeX): PyTorch at its best is the
# fastest kernel a user of this OpenBLAS can ask for. Each JSON line records the setting
# ("openblas_env": pinned whenever OPENBLAS_CORETYPE is set) and the kernel OpenBLAS reports.
# Tests and CI keep the variables as they are.
# glibc's heap as xtgrad keeps its own (autograd/tensor.cpp: mmap and trim thresholds of 1 GiB), set through
# glibc's environment variables: with its defaults, each freed block over ~32 MiB is unmapped and the next
# step faults its pages in again, and where a page fault is dear (the Zen 5's PVM guest: ~16 µs a 4 KiB page,
# against ~1 under KVM) that cost torch's seed-b:64 step 1.2-1.6x (bf16, 2 threads, 2026-12-03). PyTorch at its
# best is the faster of the two; its peak RSS the lower (the kept heap holds more).
kept_heap=(MALLOC_MMAP_THRESHOLD_=1073741824 MALLOC_TRIM_THRESHOLD_=1073741824)
both_openblas_ways() {
  local out rc=0 kernels
  out=$("$@") || rc=$?
  printf '%s\n' "$out"
  kernels=$(openblas_kernels_in "$out")
  if [[ -n "${OPENBLAS_CORETYPE:-}${OPENBLAS_L2_SIZE:-}" ]]; then
    out=$(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$@") || rc=$?
    printf '%s\n' "$out"
    kernels+=" $(openblas_kernels_in "$out")"
  fi
  local named
  named=$(avx512_kernel_to_name "$kernels" /proc/cpuinfo)
  if [[ -n "$named" ]]; then
    echo "# OpenBLAS ran $kernels on this AVX-512 CPU: once more with OPENBLAS_CORETYPE=$named" >&2
    env -u OPENBLAS_L2_SIZE OPENBLAS_CORETYPE="$named" "$@" || rc=$?
  fi
  return "$rc"
}

# Runs an xtgrad program on BACKEND: on OpenBLAS both ways (both_openblas_ways), else once.
#   on_backend BACKEND COMMAND...
on_backend() {
  local backend=$1; shift
  if [[ $backend == openblas ]]; then both_openblas_ways env XTGRAD_GEMM_BACKEND=openblas "$@"
  else env XTGRAD_GEMM_BACKEND="$backend" "$@"; fi
}

# The OpenBLAS kernels the JSON lines name (torch_bench's openblas_core, an xtgrad run on OpenBLAS's
# gemm_kernel), space-separated.
openblas_kernels_in() {
  printf '%s\n' "$1" | /usr/bin/python3 -c 'import json, sys
for l in sys.stdin:
    if l.strip().startswith("{"):
        r = json.loads(l)
        k = r.get("openblas_core") or (r.get("gemm_kernel") if r.get("gemm_backend") == "openblas" else None)
        if k: print(k)' | tr '\n' ' '
}

# The AVX-512 kernel to name when the CPU (its cpuinfo file) has AVX-512 and none of the kernels
# given is one; nothing otherwise.
avx512_kernel_to_name() {
  local k
  for k in $1; do case "$k" in SkylakeX|Cooperlake|SapphireRapids) return 0 ;; esac; done
  grep -qw avx512f "$2" || return 0
  if grep -qw avx512_bf16 "$2"; then echo Cooperlake; else echo SkylakeX; fi
}

# The default GEMM backend of a build folder (meson option gemm): onednn, or openblas where
# built without oneDNN.
default_backend_of() {
  /usr/bin/python3 -c 'import json, sys
opts = json.load(open(sys.argv[1] + "/meson-info/intro-buildoptions.json"))
print(next((o["value"] for o in opts if o["name"] == "gemm"), "onednn"))' "$1"
}

# The backend a build folder's programs use: XTGRAD_GEMM_BACKEND's where set, else the default.
backend_of() { if [[ -n ${XTGRAD_GEMM_BACKEND:-} ]]; then echo "$XTGRAD_GEMM_BACKEND"; else default_backend_of "$1"; fi; }

# The backends a build folder has: both where it has oneDNN (OpenBLAS is chosen at run time).
backends_of() { if [[ $(default_backend_of "$1") == onednn ]]; then echo "onednn openblas"; else echo openblas; fi; }

source "$(dirname "${BASH_SOURCE[0]}")/cli_checks.sh"

main() {
  local build=build quick=0 configs="winter seed-d seed-b" out="" table="" ceiling_builds="" autocast="" in_backward=("")
  local compare_switches=0 paired_ceiling=0 rounds=1 seed_b_batch=64 seed_b_batch_given=0  # seed_b_batch: read by args_of
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --build | --configs | --out | --table | --ceiling-builds | --autocast | --rounds | --seed-b-batch) needs_value run.sh "$1" $# || return 2 ;;
    esac
    case "$1" in
      --quick) quick=1 ;;
      --build) build="$2"; shift ;;
      --configs) configs="$2"; shift ;;
      --out) out="$2"; shift ;;
      --table) table="$2"; shift ;;
      --ceiling-builds) ceiling_builds="$2"; shift ;;
      --optimizer-in-backward) in_backward=("" --optimizer-in-backward) ;;
      --compare-switches) compare_switches=1 ;;
      --paired-ceiling) paired_ceiling=1 ;;
      --rounds) rounds="$2"; shift; positive_count run.sh --rounds "$rounds" || return 2 ;;
      --seed-b-batch)
        seed_b_batch="$2"; seed_b_batch_given=1; shift
        positive_count run.sh --seed-b-batch "$seed_b_batch" || return 2 ;;
      --autocast)
        autocast="$2"; shift
        [[ $autocast == bf16 ]] || { echo "run.sh: --autocast takes bf16, got '$autocast'" >&2; return 2; } ;;
      -h|--help)  # this file's header; a help that could not be written is a failure (exit 1)
        sed -n '2,/^set -euo pipefail/{/^set/!p}' bench/run.sh 2>/dev/null ||
          { echo "run.sh: could not write the help to the standard output" >&2; return 1; }
        return 0 ;;
      *) echo "run.sh: unknown argument $1" >&2; return 2 ;;
    esac
    shift
  done
  # Checked before any work: the ceiling alone takes a minute, a config's runs many.
  if [[ -n "$table" ]]; then
    ((seed_b_batch_given)) && { echo "run.sh: --table prints a run's table again; --seed-b-batch would change nothing" >&2; return 2; }
    [[ -f "$table" && -r "$table" ]] || { echo "run.sh: --table '$table' is not a readable file" >&2; return 2; }
    print_table "$table" || return 2
    return 0
  fi
  local c
  [[ -n "${configs// /}" ]] || { echo "run.sh: --configs is empty ($bench_configs)" >&2; return 2; }
  for c in $configs; do
    [[ " $bench_configs " == *" $c "* ]] || { echo "run.sh: unknown config '$c' in --configs ($bench_configs)" >&2; return 2; }
  done
  if ((seed_b_batch_given)) && [[ " $configs " != *" seed-b "* ]] || ((seed_b_batch_given && compare_switches)); then
    echo "run.sh: --seed-b-batch sets the batch of the benchmark's seed-b runs; with --configs '$configs'$( ((compare_switches)) &&
      echo " and --compare-switches (its seed-b runs are seed-b:2:16 and seed-b:2:64)") it would change nothing" >&2; return 2
  fi
  if ((seed_b_batch_given && quick)); then
    echo "run.sh: --quick runs seed-b at batch 8; --seed-b-batch would change nothing (give one of them)" >&2; return 2
  fi
  if ((paired_ceiling && compare_switches)); then
    echo "run.sh: --paired-ceiling times the benchmark's runs; --compare-switches runs none (give one of them)" >&2; return 2
  fi
  if ((paired_ceiling)) && [[ " $configs " != *" seed-d "* && " $configs " != *" seed-b "* ]]; then
    echo "run.sh: --paired-ceiling pairs seed-d and seed-b (winter has no target against the ceiling); --configs '$configs' has neither" >&2; return 2
  fi
  results_file run.sh "$out" || return 2
  if ((compare_switches)); then  # the on/off table (bench/compare_builds.sh --switches), no torch needed
    local runs="" t
    for c in $configs; do
      for t in $(threads_of "$c"); do runs+=" $c:$t"; done
      [[ $c == seed-b ]] && runs+=" seed-b:2:16"
    done
    bash bench/compare_builds.sh --switches all --build "$build" --runs "${runs# }" --rounds 2 ${out:+--out "$out"}
    return $?
  fi
  local b
  for b in "$build" $ceiling_builds; do
    [[ -f "$b/meson-info/intro-buildoptions.json" ]] || { echo "run.sh: '$b' is not a meson build folder (meson setup $b --buildtype=release)" >&2; return 2; }
  done

  local bench="$build/bench/xtgrad_bench" python=/usr/bin/python3
  [[ -x "$bench" ]] || { echo "run.sh: $bench not found; build first (ninja -C $build)" >&2; return 2; }
  local xtgrad_backend
  xtgrad_backend=$(backend_of "$build")
  $python -c 'import torch' 2>/dev/null || { echo "run.sh: $python cannot import torch (apt install python3-torch)" >&2; return 2; }

  results=""
  if [[ -n "$out" ]]; then results="$out"; : > "$results"; else results=$(mktemp); trap 'rm -f "$results"' EXIT; fi

  # Each result line, stamped with the CPU, commit and load (bench/results.py), appended to the results.
  # The lines are read whole before Python starts: started beside the benchmark (a plain pipe),
  # its start-up took the FMA loop of ceiling_bench from 206-220 to 168-186 GFLOP/s on a Zen 5 guest.
  export XTGRAD_BENCH_RUN_ID=${XTGRAD_BENCH_RUN_ID:-$(date -u +%FT%TZ)}
  kept() {
    local lines
    lines=$(cat)
    [[ -z "$lines" ]] || printf '%s\n' "$lines" | python3 bench/results.py stamp >> "$results"
  }
  echo "# $(date -u +%FT%TZ)  $(nproc) cores  load $(cut -d' ' -f1-3 /proc/loadavg)  compilers running: $(pgrep -c cc1plus || true)" >&2
  # The ceiling of each backend (XTGRAD_GEMM_BACKEND, gemm/gemm_backend.hpp) of this build and
  # of any other build named.
  local backend
  for b in ${ceiling_builds:-$build}; do
    for backend in $(backends_of "$b"); do
      echo "# ceiling ($b, $backend) ..." >&2
      on_backend "$backend" "$b/bench/ceiling_bench" --json | kept || echo "# ceiling ($b, $backend): failed, left out" >&2
    done
  done
  local t a
  for c in $configs; do
    for t in $(threads_of "$c"); do
      a=$(args_of "$c" "$quick")
      local ac
      for ac in "" $autocast; do  # fp32, then (with --autocast) the autocast run
        local acflag=() xt_acflag=()
        # xtgrad refuses bf16 where it is slower than fp32 (docs/autocast.md); here it measures by how much
        [[ -n "$ac" ]] && acflag=(--autocast "$ac") && xt_acflag=(--autocast "$ac" --allow-slower-bf16)
        local round cpu="" pin=() on=""
        for ((round = 1; round <= rounds; round++)); do  # the pair in turn (--rounds)
          # one-thread runs: both sides of a round on one CPU, the rounds on each in turn (bench/pin_cpu.sh)
          pin_round "$t" "$round"
          on=${cpu:+, on CPU $cpu}
          local ib
          for ib in "${in_backward[@]}"; do  # "" (the step after backward), then --optimizer-in-backward if asked
            [[ -n $ib && $c == seed-d ]] && continue  # seed-d steps no optimizer: nothing to step in backward
            echo "# $c, $t thread(s)${ac:+, autocast $ac}${ib:+, $ib}$(round_of "$round" "$rounds")$on: xtgrad ...  (load $(cut -d' ' -f1 /proc/loadavg), compilers $(pgrep -c cc1plus || true))" >&2
            # shellcheck disable=SC2086
            on_backend "$xtgrad_backend" "${pin[@]}" "$bench" --config "$c" --threads "$t" $a "${xt_acflag[@]}" $ib --json | kept
          done
          # fp32 seed-d and seed-b (the targets against the ceiling) once more, the ceiling before each step
          if ((paired_ceiling)) && [[ -z "$ac" && $c != winter ]]; then
            echo "# $c, $t thread(s): xtgrad, the GEMM ceiling before each step ...  (load $(cut -d' ' -f1 /proc/loadavg))" >&2
            # shellcheck disable=SC2086
            on_backend "$xtgrad_backend" "${pin[@]}" "$bench" --config "$c" --threads "$t" $a --paired-ceiling --json | kept
          fi
          echo "# $c, $t thread(s)${ac:+, autocast $ac}$(round_of "$round" "$rounds")$on: torch, OpenBLAS as set, then its own detection ...  (load $(cut -d' ' -f1 /proc/loadavg), compilers $(pgrep -c cc1plus || true))" >&2
          local torch_env=()
          [[ $t -gt 1 ]] && torch_env=(OMP_WAIT_POLICY=PASSIVE)
          # shellcheck disable=SC2086
          both_openblas_ways env "${torch_env[@]}" "${pin[@]}" $python bench/torch_bench.py --config "$c" --threads "$t" $a "${acflag[@]}" --json | kept
          # and with glibc's heap kept as xtgrad keeps its own (autograd/tensor.cpp), through glibc's variables
          echo "# $c, $t thread(s)${ac:+, autocast $ac}$(round_of "$round" "$rounds")$on: torch, glibc's heap kept ...  (load $(cut -d' ' -f1 /proc/loadavg))" >&2
          # shellcheck disable=SC2086
          both_openblas_ways env "${torch_env[@]}" "${kept_heap[@]}" "${pin[@]}" $python bench/torch_bench.py --config "$c" --threads "$t" $a "${acflag[@]}" --json | kept
        done
      done
    done
  done
  echo "# done $(date -u +%FT%TZ): load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  print_table "$results"
}

# ", round R of N" in the progress lines, where --rounds asked for more than one
round_of() { [[ $2 -gt 1 ]] && echo ", round $1 of $2" || true; }

# config -> its thread counts, and its step counts. seed-b:64 warms up 3 steps: both sides' heaps
# grow over the first steps (the optimizer's state comes in step 1's backward; a step-2 forward
# faulted ~0.4 GB in again, 1.7 s on the Zen 5), so the steps timed are the steady ones. seed-b
# runs at --seed-b-batch (main's seed_b_batch, 64 unless given), 6 steps below batch 32.
threads_of() { case "$1" in seed-b) echo "2" ;; *) echo "1 2" ;; esac; }
args_of() {
  case "$1" in
    winter) [[ $2 == 1 ]] && echo "--steps 5 --warmup 2" || echo "--steps 15 --warmup 3" ;;
    seed-d) [[ $2 == 1 ]] && echo "--steps 3 --warmup 1" || echo "--steps 5 --warmup 2" ;;
    seed-b) [[ $2 == 1 ]] && echo "--steps 3 --warmup 1 --batch 8" ||
              echo "--steps $(( ${seed_b_batch:-64} < 32 ? 6 : 3 )) --warmup 3 --batch ${seed_b_batch:-64}" ;;
  esac
}

# Run as a program; sourced (tests/bench/script_cli_tests.sh), it only defines the functions.
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  cd "$(dirname "$0")/.."
  main "$@"
  exit $?
fi
