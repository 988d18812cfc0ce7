#!/usr/bin/env bash
# Same-run before/after: times two builds of xtgrad (say, main before and after a change) on
# the same configurations, alternating A B A B so that a machine that gets busier or quieter
# during the run moves both sides alike, and prints one table of medians, the after/before
# ratio and each side's peak RSS. No PyTorch needed (bench/run.sh compares with torch).
# With --switches, one build against itself: each speed switch on (=1) against off (=0), the
# on/off table that decides a default (docs/performance.md, "Switches"; bench/run.sh
# --compare-switches runs it on every config).
#
#   git worktree add /tmp/before <commit> && meson setup /tmp/before/build --buildtype=release \
#       && ninja -C /tmp/before/build bench/xtgrad_bench
#   bash bench/compare_builds.sh --before /tmp/before/build --after build
#   bash bench/compare_builds.sh --before B --after A --runs "winter:1 seed-b:2:16" --rounds 3
#   bash bench/compare_builds.sh --before B --after A --runs "winter:1" --args "--optimizer-in-backward"
#   bash bench/compare_builds.sh --before build --after build --before-env XTGRAD_GEMM_BACKEND=onednn \
#       --after-env XTGRAD_GEMM_BACKEND=openblas     # one build, two settings of the environment
#   bash bench/compare_builds.sh --switches all --build build --runs "seed-d:1" --out /tmp/sw.jsonl
#
# --runs is a list of config:threads[:batch]; the default covers every config of bench/run.sh
# plus seed-b at batch 16 on 2 threads (issue 10's memory check). Each (side, run, round)
# is its own process, so every peak RSS is that run's own. The medians reported are the
# median over the rounds of each round's median step. --args adds options to every
# xtgrad_bench run of both sides. --switches takes switch names or `all` (every one the build
# lists: xtgrad_bench --list-switches; in one process per round, a switch this machine cannot
# measure, which the bench refuses with exit 3, as XTGRAD_SMALL_GEMM_AMX without AMX's tiles, is
# skipped with the reason, said under the table). Each switch's run is set up from the words the
# list gives after its default (autograd/speed_switches.hpp, speed_switch_tags): "workers" is
# measured on 2+ threads only, "one-thread" on 1, "autocast" under bf16 autocast, "optimizer" on
# seed-d with --adam, "in-backward" with --optimizer-in-backward, "block-cache" with the block cache on (XTGRAD_BLOCK_CACHE=1 for both
# sides). Each switch but the "fixed" ones (the block cache's two, fixed at start-up) is measured
# in one process per round, on and off alternating step by step (xtgrad_bench --alternate): a
# host whose speed drifts moves both sides alike, where processes minutes apart read one switch
# 0.76x and 1.14x; --separate-processes measures every switch as the block cache's, one process
# per side (the words above still set its runs up, but no exit 3 skips a switch this machine
# cannot run, as AMX's: it reads as noise).
# One-thread runs are pinned, both sides of a round to one CPU, the rounds to each CPU in turn
# (bench/pin_cpu.sh: one vCPU of a guest can run 25 % slower than the other for hours).
# --out keeps the JSON lines, stamped with the CPU, commit and load (bench/results.py).
set -euo pipefail
# shellcheck source=bench/pin_cpu.sh
source "$(dirname "$0")/pin_cpu.sh"
set -f  # no globbing: --switches and --runs are split on spaces, never matched against files
source "$(dirname "$0")/cli_checks.sh"

before="" after="" rounds=2 runs="winter:1 winter:2 seed-d:1 seed-d:2 seed-b:2:16 seed-b:2:64" out="" extra=""
switches="" build="" separate=0 every_switch=0 env_before=- env_after=-
declare -A tags_of=()  # a switch's words from --list-switches, ",workers,autocast,"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --before | --after | --rounds | --runs | --out | --args | --switches | --build | --before-env | --after-env)
      needs_value compare_builds.sh "$1" $# || exit 2 ;;
  esac
  case "$1" in
    --before) before="$2"; shift ;;
    --after) after="$2"; shift ;;
    --rounds) rounds="$2"; shift ;;
    --runs) runs="$2"; shift ;;
    --out) out="$2"; shift ;;
    --args) extra="$2"; shift ;;
    --switches) switches="$2"; shift ;;
    --build) build="$2"; shift ;;
    --before-env) env_before="$2"; shift ;;
    --after-env) env_after="$2"; shift ;;
    --separate-processes) separate=1 ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0"; exit 0 ;;  # the comment above
    *) echo "compare_builds.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
if [[ -n "$switches" ]]; then
  [[ -z "$before$after" ]] || { echo "compare_builds.sh: --switches compares one build (--build), not --before/--after" >&2; exit 2; }
  build=${build:-build}
  [[ -x "$build/bench/xtgrad_bench" ]] || { echo "compare_builds.sh: $build/bench/xtgrad_bench not found; build it first" >&2; exit 2; }
  # The build's own list (autograd/speed_switches.hpp), each line checked: the names reach
  # commands and JSON, the words set the runs up (a misspelt one would time noise)
  status=0
  listed=$("$build/bench/xtgrad_bench" --list-switches) || status=$?
  ((status == 0)) || { echo "compare_builds.sh: $build/bench/xtgrad_bench --list-switches failed (exit $status)" >&2; exit 2; }
  word='(fixed|workers|autocast|inference|block-cache|one-thread|optimizer|in-backward)'
  all_switches="" n=0 tagged=0
  while IFS= read -r line; do
    n=$((n + 1))
    if ! [[ $line =~ ^(XTGRAD_[A-Z0-9_]+)\ (on|off)(\ ($word(,$word)*))?$ ]] || [[ -n ${tags_of[${BASH_REMATCH[1]}]+x} ]]; then
      echo "compare_builds.sh: $build/bench/xtgrad_bench --list-switches line $n is not 'XTGRAD_NAME on|off [words]'" \
           "of a switch not listed before: '$(printf '%s' "${line:0:200}" | LC_ALL=C tr -c '[:print:]' '?')'" >&2
      exit 2
    fi
    tags_of[${BASH_REMATCH[1]}]=",${BASH_REMATCH[4]},"
    all_switches+="${all_switches:+ }${BASH_REMATCH[1]}"
    [[ -n ${BASH_REMATCH[4]} ]] && tagged=1
  done <<< "$listed"
  ((n > 0 && tagged)) || { echo "compare_builds.sh: $build/bench/xtgrad_bench --list-switches gives no switches, or none with" \
                                "words (a build from before 2026-12-02): build it again" >&2; exit 2; }
  # `all` skips a switch this machine cannot act on (xtgrad_bench refuses it with 3 before any
  # work: no AMX tiles, no bf16 products); a switch named on its own is measured or fails, and
  # so does any switch the bench refuses with 2 (a usage error: --args of the user's)
  [[ $switches == all ]] && switches=$all_switches && every_switch=1
  for sw in $switches; do
    [[ " $all_switches " == *" $sw "* ]] || { echo "compare_builds.sh: unknown switch '$sw' (all, or some of: $all_switches)" >&2; exit 2; }
  done
  before=$build after=$build
else
  [[ -z "$build" ]] || { echo "compare_builds.sh: --build goes with --switches; two builds are --before and --after" >&2; exit 2; }
fi
[[ -n "$before" && -n "$after" ]] || { echo "compare_builds.sh: --before BUILD and --after BUILD are required (or --switches)" >&2; exit 2; }
for b in "$before" "$after"; do
  [[ -x "$b/bench/xtgrad_bench" ]] || { echo "compare_builds.sh: $b/bench/xtgrad_bench not found; build it first" >&2; exit 2; }
done
positive_count compare_builds.sh --rounds "$rounds" || exit 2
# Every run checked before the first (an unknown config used to stop the table after the runs before it)
[[ -n "${runs// /}" ]] || { echo "compare_builds.sh: --runs is empty (config:threads[:batch], e.g. winter:1)" >&2; exit 2; }
for run in $runs; do  # xtgrad_bench's ranges: --threads 1-256, --batch 1-4096
  if ! [[ $run =~ ^(${bench_configs// /|}):([1-9][0-9]{0,2})(:([1-9][0-9]{0,3}))?$ ]] ||
     ((BASH_REMATCH[2] > 256)) || ((${BASH_REMATCH[4]:-1} > 4096)); then
    echo "compare_builds.sh: --runs entry '$run' is not config:threads[:batch] (config: $bench_configs; threads 1-256; batch 1-4096)" >&2
    exit 2
  fi
done
results_file compare_builds.sh "$out" || exit 2

# Temporary files first, so that one that cannot be made leaves --out as it was
refusal=$(mktemp) && results=${out:-$(mktemp)} ||
  { echo "compare_builds.sh: cannot make a temporary file in '${TMPDIR:-/tmp}'" >&2; rm -f "${refusal:-}"; exit 2; }
if [[ -z "$out" ]]; then trap 'rm -f "$results" "$refusal"' EXIT; else trap 'rm -f "$refusal"' EXIT; fi
trap 'exit 129' HUP; trap 'exit 130' INT; trap 'exit 143' TERM  # through the EXIT trap
: > "$results"
skipped=()  # "SWITCH on RUN: reason", said under the table

# Steps per run: enough for a stable median without making the slow configs take minutes.
steps_of() {
  case "$1" in
    winter) echo "--steps 15 --warmup 3" ;;
    seed-d) echo "--steps 5 --warmup 2" ;;
    seed-b) echo "--steps 3 --warmup 1" ;;
    *) echo "compare_builds.sh: unknown config $1" >&2; exit 2 ;;
  esac
}

echo "# $(date -u +%FT%TZ) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
export XTGRAD_BENCH_RUN_ID=${XTGRAD_BENCH_RUN_ID:-$(date -u +%FT%TZ)}  # one run of many lines (bench/results.py)
# pairs: NAME SIDE_A ENV_A SIDE_B ENV_B, one per compared thing ("-": no variable set)
pairs=() mode=builds
if [[ -n "$switches" ]]; then
  mode=switches
  for sw in $switches; do pairs+=("$sw on $sw=1 off $sw=0"); done
else
  # --before-env / --after-env: one VAR=VALUE set for that side's runs only (no spaces)
  for word in "$env_before" "$env_after"; do
    [[ $word == - || $word =~ ^[A-Za-z_][A-Za-z0-9_]*=[^[:space:]]*$ ]] ||
      { echo "compare_builds.sh: --before-env and --after-env take one VAR=VALUE without spaces, got '$(printf '%s' "${word:0:200}" | LC_ALL=C tr -c '[:print:]' '?')'" >&2; exit 2; }
  done
  pairs=("builds before $env_before after $env_after")
fi
for ((r = 1; r <= rounds; r++)); do
  for run in $runs; do
    IFS=: read -r config threads batch <<< "$run"
    pin_round "$threads" "$r"  # cpu, pin (bench/pin_cpu.sh)
    args=$(steps_of "$config")
    [[ -n "${batch:-}" ]] && args="$args --batch $batch"
    args="$args $extra"
    for pair in "${pairs[@]}"; do
      read -r name side_a env_a side_b env_b <<< "$pair"
      pair_args=$args tags=${tags_of[$name]:-} cannot="" alt_env=()
      [[ $tags == *,workers,* && $threads -lt 2 ]] && cannot="it acts on the pool's workers (2+ threads)"
      [[ $tags == *,one-thread,* && $threads -ge 2 ]] && cannot="it acts on one thread only"
      if [[ -n $cannot ]]; then
        echo "# skipped: $name on $run: $cannot" >&2
        ((r == 1)) && skipped+=("$name on $run: $cannot")
        continue
      fi
      [[ $tags == *,optimizer,* && $config == seed-d ]] && pair_args="$pair_args --adam"  # else no optimizer step
      [[ $tags == *,in-backward,* && $pair_args != *--optimizer-in-backward* ]] && pair_args="$pair_args --optimizer-in-backward"
      [[ $tags == *,autocast,* ]] && pair_args="$pair_args --autocast bf16 --allow-slower-bf16"
      [[ $tags == *,block-cache,* ]] && env_a="XTGRAD_BLOCK_CACHE=1 $env_a" env_b="XTGRAD_BLOCK_CACHE=1 $env_b" alt_env=(XTGRAD_BLOCK_CACHE=1)
      if [[ $mode == switches && $separate == 0 && $tags != *,fixed,* ]]; then
        echo "# round $r: $run $name on and off alternating${cpu:+, CPU $cpu} (load $(cut -d' ' -f1 /proc/loadavg))" >&2
        # shellcheck disable=SC2086
        status=0
        lines=$(env "${alt_env[@]}" "${pin[@]}" "$build/bench/xtgrad_bench" --config "$config" --threads "$threads" $pair_args --alternate "$name" --json 2>"$refusal") || status=$?
        if ((status == 3 && every_switch)); then
          # the bench's first line, printable bytes only (its stderr is the reason, unread so far)
          reason=$(LC_ALL=C tr -d '\000' < "$refusal" | LC_ALL=C grep -a -m1 . | head -c 300 | LC_ALL=C tr -d '\n' |
                   LC_ALL=C tr -c '[:print:]' '?') || true  # grep finds no line, or tr meets a closed pipe
          echo "# skipped: $name on $run, which this machine cannot measure: ${reason:-(no message)}" >&2
          ((r == 1)) && skipped+=("$name on $run: ${reason:-(no message)}")
          continue
        fi
        cat "$refusal" >&2
        ((status == 0)) ||
          { echo "compare_builds.sh: xtgrad_bench --alternate $name failed on $run (round $r, exit $status)${out:+; $out holds the runs before it}" >&2; exit 1; }
        # Exactly one line per side, of this switch and config (an --args of another --config, or a
        # build without --alternate, would file other numbers under this run), then stamped
        python3 - "$mode" "$name" "$r" "$run" "$config" "$lines" <<'PY' | python3 "$(dirname "$0")/results.py" stamp >> "$results"
import json, sys
mode, name, rnd, run, config, text = sys.argv[1:]
try:
    results = [json.loads(l) for l in text.splitlines() if l.strip()]
    sides = [r["alternated"]["side"] for r in results]
    configs = {r["config"] for r in results} | {r["alternated"]["switch"] for r in results}
except (ValueError, KeyError, TypeError) as e:
    sys.exit(f"compare_builds.sh: xtgrad_bench --alternate {name} on {run} printed no pair of result lines ({e!r})")
if sorted(sides) != ["off", "on"] or configs != {config, name}:
    sys.exit(f"compare_builds.sh: xtgrad_bench --alternate {name} on {run} printed sides {sides} of {sorted(configs)}, "
             f"not one on and one off of {config} and {name} (does --args name another --config?)")
for r in results:
    print(json.dumps({"mode": mode, "pair": name, "side": r["alternated"]["side"], "round": int(rnd), "run": run, "result": r}))
PY
        continue
      fi
      for side in "$side_a" "$side_b"; do
        build=$before env_line=$env_a
        [[ $side == "$side_b" ]] && build=$after env_line=$env_b
        env_set=()  # the side's VAR=VALUE words ("-": none)
        [[ $env_line == - ]] || read -r -a env_set <<< "$env_line"
        echo "# round $r: $run $name $side${cpu:+, CPU $cpu} (load $(cut -d' ' -f1 /proc/loadavg))" >&2
        # shellcheck disable=SC2086
        line=$(env "${env_set[@]}" "${pin[@]}" "$build/bench/xtgrad_bench" --config "$config" --threads "$threads" $pair_args --json)
        echo "{\"mode\": \"$mode\", \"pair\": \"$name\", \"side\": \"$side\", \"round\": $r, \"run\": \"$run\", \"result\": $line}" |
          python3 "$(dirname "$0")/results.py" stamp >> "$results"
      done
    done
  done
done
echo "# done $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
if [[ ! -s "$results" ]]; then
  echo "compare_builds.sh: nothing was measured${skipped[0]:+; skipped: $(IFS=';'; echo "${skipped[*]}")}" >&2
  exit 2
fi

if [[ -n "$switches" ]]; then
  python3 "$(dirname "$0")/results.py" render "$results" | sed -n '/results:switches/,/\/results:switches/p' | grep -v '^<!--'
  ((${#skipped[@]} == 0)) || { echo; echo "Not measured (a run where the switch cannot act, or xtgrad_bench's exit 3):"; printf -- '- %s\n' "${skipped[@]}"; }
  exit 0
fi
python3 - "$results" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
runs = list(dict.fromkeys(r["run"] for r in rows))
print("| run (config:threads[:batch]) | phase | before ms | after ms | after / before | peak RSS MiB before / after |")
print("|---|---|---|---|---|---|")
for run in runs:
    side = lambda s: [r["result"] for r in rows if r["run"] == run and r["side"] == s]  # one pair: the builds
    b, a = side("before"), side("after")
    first = True
    for phase in ["step", "fwd", "bwd", "opt", "infer"]:
        if phase not in b[0]["phases"] or phase not in a[0]["phases"]:
            continue
        med = lambda rs: statistics.median(r["phases"][phase]["median_ms"] for r in rs)
        mb, ma = med(b), med(a)
        rss = ""
        if first:
            rss = f"{max(r['peak_rss_mib'] for r in b):.0f} / {max(r['peak_rss_mib'] for r in a):.0f}"
        print(f"| {run if first else ''} | {phase} | {mb:.1f} | {ma:.1f} | {ma / mb:.3f} | {rss} |")
        first = False
EOF
