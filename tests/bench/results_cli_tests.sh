#!/usr/bin/env bash
# bench/results.py: the tables it renders from bench/results/*.jsonl (switches, targets, history) on
# made-up runs with known cells; hostile lines refused by file and line. Run by tests/run_examples.sh.
#   tests/bench/results_cli_tests.sh BUILD_DIR
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=../cli_test_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../cli_test_lib.sh" "$@"

echo "== bench/results.py: each cell of the switches table from the newest run that measured it"
# An older run of two switches on two configs (seed-b at the default batch, named without it),
# then a run of one switch on one config: its cell replaces that one alone.
python3 - "$out/switches.jsonl" <<'PY'
import json, sys
def line(run_id, pair, run, side, rnd, ms, batch=None):
    return {"mode": "switches", "pair": pair, "side": side, "round": rnd, "run": run, "run_id": run_id,
            "cpu": "Test CPU", "cpu_id": "Test family 1 model 2", "commit": run_id[:4], "load": 1.0,
            "result": {"batch": batch, "switch_defaults": {"XTGRAD_B": False}, "phases": {"step": {"median_ms": ms}}}}
rows = []
for rnd in (1, 2):
    for pair in ("XTGRAD_A", "XTGRAD_B"):
        rows += [line("2026-01-01T00:00:00Z", pair, "seed-d:1", "on", rnd, 100), line("2026-01-01T00:00:00Z", pair, "seed-d:1", "off", rnd, 110),
                 line("2026-01-01T00:00:00Z", pair, "seed-b:2", "on", rnd, 200, 64), line("2026-01-01T00:00:00Z", pair, "seed-b:2", "off", rnd, 180, 64)]
    rows += [line("2026-02-01T00:00:00Z", "XTGRAD_B", "seed-b:2:64", "on", rnd, 100, 64),
             line("2026-02-01T00:00:00Z", "XTGRAD_B", "seed-b:2:64", "off", rnd, 150, 64),
             line("2026-03-01T00:00:00Z", "XTGRAD_A", "seed-d:1", "on", rnd, 50)]  # one side: replaces nothing
open(sys.argv[1], "w").write("".join(json.dumps(r) + "\n" for r in rows))
PY
expect 0 "bench/results.py render of two switch runs" python3 "$src/bench/results.py" render "$out/switches.jsonl"
says "| run (config:threads[:batch]) | \`A\` (default on) | \`B\` (default off) |"
says "| seed-d:1 | **1.10** | **1.10** |"
says "| seed-b:2:64 | **0.90** | **1.50** |"
says "Run 2026-02-01T00:00:00Z (\`B\`: seed-b:2:64)"
# A switch measured in one process (xtgrad_bench --alternate): bold where one side won every pair
# of steps, not where one round's medians beat the other's (with one round, always)
python3 - "$out/alternated.jsonl" <<'PY'
import json, sys
def line(pair, side, samples):
    ms = sorted(samples)[len(samples) // 2]
    return {"mode": "switches", "pair": pair, "side": side, "round": 1, "run": "winter:1", "run_id": "2026-04-01T00:00:00Z",
            "cpu": "Test CPU", "cpu_id": "Test family 1 model 2", "commit": "2026", "load": 1.0,
            "result": {"batch": None, "switch_defaults": {}, "phases": {"step": {"median_ms": ms}},
                       "alternated": {"switch": pair, "side": side, "samples": {"step": samples}}}}
rows = [line("XTGRAD_A", "on", [100, 101, 102, 103]), line("XTGRAD_A", "off", [110, 111, 112, 113]),  # on won every pair
        line("XTGRAD_B", "on", [100, 120, 102, 103]), line("XTGRAD_B", "off", [110, 111, 112, 113]),  # on lost one
        line("XTGRAD_C", "on", [100, 101, 102]), line("XTGRAD_C", "off", [110, 111, 112])]  # 3 pairs: 1 in 4 by chance
open(sys.argv[1], "w").write("".join(json.dumps(r) + "\n" for r in rows))
PY
expect 0 "bench/results.py render of a switch run in one process" python3 "$src/bench/results.py" render "$out/alternated.jsonl"
says "| winter:1 | **1.10** | 1.10 | 1.10 |"
says "the median of its pairs' ratios, bold where one side won every pair, at least 4"
# A cell whose run could not act stays blank, by the newest line's switch_tags (an older run
# timed Adam's prefetch on two threads and on seed-d without an optimizer: noise)
python3 - "$out/tags.jsonl" <<'PY'
import json, sys
def line(run_id, run, side, ms, tags=None, opt=True):
    phases = {"step": {"median_ms": ms}, **({"opt": {"median_ms": 1}} if opt else {})}
    return {"mode": "switches", "pair": "XTGRAD_A", "side": side, "round": 1, "run": run, "run_id": run_id,
            "cpu": "Test CPU", "cpu_id": "Test family 1 model 2", "commit": "2026", "load": 1.0,
            "result": {"batch": None, "threads": int(run.split(":")[1]), "switch_defaults": {}, "phases": phases,
                       **({"switch_tags": tags} if tags is not None else {})}}
rows = [line("2026-05-01T00:00:00Z", "winter:2", s, ms) for s, ms in (("on", 100), ("off", 130))] + \
       [line("2026-05-01T00:00:00Z", "seed-d:1", s, ms, opt=False) for s, ms in (("on", 100), ("off", 140))] + \
       [line("2026-05-01T00:00:00Z", "winter:1", s, ms) for s, ms in (("on", 100), ("off", 120))] + \
       [line("2026-06-01T00:00:00Z", "seed-b:1", s, 100, {"XTGRAD_A": "one-thread,optimizer"}) for s in ("on", "off")]
open(sys.argv[1], "w").write("".join(json.dumps(r) + "\n" for r in rows))
PY
expect 0 "bench/results.py render of a switch measured where it cannot act" python3 "$src/bench/results.py" render "$out/tags.jsonl"
says "| winter:1 | **1.20** |"
if grep -q "| winter:2 |\|| seed-d:1 |" "$out/last.log"; then bad "  ...cells where it could not act: $(grep -a "| winter:2 \|| seed-d:1" "$out/last.log")"
else ok "  ...no cell on 2 threads or without an optimizer"; fi
says "Left blank where a switch cannot act (its words in \`xtgrad_bench --list-switches\`): \`A\` on seed-d:1, winter:2."
# tags that move a switch to the inference, on lines whose alternating samples hold the step alone
# (a KeyError traceback); and a CPU whose every cell is left blank keeps a table that says why
python3 - "$out/tags2.jsonl" <<'PY'
import json, sys
def line(pair, side, run, tags):
    return {"mode": "switches", "pair": pair, "side": side, "round": 1, "run": run, "run_id": "2026-07-01T00:00:00Z",
            "cpu": "Test CPU", "cpu_id": "Test family 1 model 2", "commit": "2026", "load": 1.0,
            "result": {"batch": None, "threads": int(run.split(":")[1]), "switch_defaults": {}, "switch_tags": tags,
                       "phases": {"step": {"median_ms": 100}, "infer": {"median_ms": 50}},
                       "alternated": {"switch": pair, "side": side, "samples": {"step": [100, 100, 100, 100]}}}}
tags = {"XTGRAD_B": "inference", "XTGRAD_C": "workers"}
rows = [line("XTGRAD_B", s, "winter:2", tags) for s in ("on", "off")] + [line("XTGRAD_C", s, "winter:1", tags) for s in ("on", "off")]
open(sys.argv[1], "w").write("".join(json.dumps(r) + "\n" for r in rows))
PY
expect 0 "bench/results.py render of an inference switch without inference samples" python3 "$src/bench/results.py" render "$out/tags2.jsonl"
says "| winter:2 | 1.00 |"
says "\`C\` on winter:1."
grep '"pair": "XTGRAD_C"' "$out/tags2.jsonl" > "$out/tags3.jsonl"  # C's lines alone: workers on one thread
expect 0 "bench/results.py render of a CPU whose every cell is left blank" python3 "$src/bench/results.py" render "$out/tags3.jsonl"
says "Left blank where a switch cannot act"
# A default changed between two runs (A, off in the older run of B, on in the newer of A): the
# header names the newest run's, wherever its lines are in the files (the last line's used to)
python3 - "$out/defaults.jsonl" <<'PY'
import json, sys
def line(run_id, pair, side, a_on):
    return {"mode": "switches", "pair": pair, "side": side, "round": 1, "run": "seed-d:1", "run_id": run_id,
            "cpu": "Test CPU", "cpu_id": "Test family 1 model 2", "commit": run_id[:4], "load": 1.0,
            "result": {"batch": None, "switch_defaults": {"XTGRAD_A": a_on, "XTGRAD_B": True},
                       "phases": {"step": {"median_ms": 100}}}}
rows = [line("2026-05-01T00:00:00Z", "XTGRAD_A", s, True) for s in ("on", "off")] + \
       [line("2026-04-01T00:00:00Z", "XTGRAD_B", s, False) for s in ("on", "off")]
open(sys.argv[1], "w").write("".join(json.dumps(r) + "\n" for r in rows))
PY
expect 0 "bench/results.py render of a switch whose default changed" python3 "$src/bench/results.py" render "$out/defaults.jsonl"
says "| run (config:threads[:batch]) | \`A\` (default on) | \`B\` (default on) |"
# The targets table takes each config from the newest run that measured it: a later run of
# seed-d alone replaces seed-d's rows, and winter's stay from the older run.
python3 - "$out/targets.jsonl" <<'PY'
import json, sys
def line(run_id, config, infer, framework="xtgrad", in_backward=False):
    return {"framework": framework, "config": config, "threads": 1, "batch": None, "autocast": None,
            "optimizer_in_backward": in_backward,
            "fwd_matmul_gflop": 1.0, "peak_rss_mib": 100, "run_id": run_id, "cpu": "Test CPU",
            "cpu_id": "Test family 1 model 2", "commit": run_id[:4], "load": 1.0,
            "phases": {"step": {"median_ms": 300}, "fwd": {"median_ms": 100}, "bwd": {"median_ms": 200},
                       "infer": {"median_ms": infer}}}
rows = [line("2026-01-01T00:00:00Z", "winter", 50), line("2026-01-01T00:00:00Z", "winter", 50, in_backward=True),
        line("2026-01-01T00:00:00Z", "winter", 50, "torch"), line("2026-01-01T00:00:00Z", "seed-d", 40),
        line("2026-02-01T00:00:00Z", "seed-d", 20), line("2026-02-01T00:00:00Z", "seed-d", 30, "torch"),
        line("2026-02-01T00:00:00Z", "seed-d", 20, in_backward=True)]
open(sys.argv[1], "w").write("".join(json.dumps(r) + "\n" for r in rows))
PY
expect 0 "bench/results.py render of two benchmark runs" python3 "$src/bench/results.py" render "$out/targets.jsonl"
says "Run 2026-01-01T00:00:00Z (winter, winter with the step in backward), commit 2026, 1-minute load 1.0-1.0; Run 2026-02-01T00:00:00Z (seed-d), commit 2026"
# a row no target reads (seed-d with the step in backward) stays in the data, out of the table
if grep -q "seed-d, step in backward" "$out/last.log"; then bad "  ...a row no target reads in the table"; else ok "  ...no row for seed-d's step in backward (no target reads it)"; fi
says "|  |  | inference | 20.0 | - | - | - | 30.0 | 0.67 | - |  |"
if grep -q "| 40.0 |" "$out/last.log"; then bad "  ...the older seed-d run's rows stayed"; else ok "  ...the older seed-d rows replaced"; fi
# xtgrad's step in backward gets a row of its own, against torch's step (torch has no such mode)
says "| winter | 1 | step | 300.0 | - | - | - | 300.0 | 1.00 | - | 100 / 100 |"
says "| winter, step in backward | 1 | step | 300.0 | - | - | - | 300.0 | 1.00 | - | 100 / 100 |"
# xtgrad_bench --paired-ceiling lines give the ceiling column's bracket (the median of the steps'
# ratios, each against the ceiling measured just before it), and nothing else: not the ms, not RSS
python3 - "$out/targets.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
machine = {"framework": "machine", "cpu": "Test CPU", "cpu_id": "Test family 1 model 2", "run_id": "2026-02-01T00:00:00Z",
           "commit": "2026", "load": 1.0, "fma_avx512_gflops_per_core": 10.0, "sgemm": [{"threads": 1, "gflops": 10.0}]}
paired = dict(rows[4], peak_rss_mib=None, phases={"step": {"median_ms": 9}, "fwd": {"median_ms": 3}, "bwd": {"median_ms": 6},
              "infer": {"median_ms": 2}},
              paired_ceiling={"reps": 2, "step_gflops": [8.0, 9.0], "infer_gflops": [9.0, 9.0],
                              "x_ceiling": {"fwd+bwd": 1.234, "step": 1.25, "infer": 1.111}})
open(sys.argv[1] + ".paired", "w").write("".join(json.dumps(r) + "\n" for r in rows + [machine, paired]))
PY
expect 0 "bench/results.py render with a --paired-ceiling line" python3 "$src/bench/results.py" render "$out/targets.jsonl.paired"
# The history table: each target over every run that measured it, the newest run's ratio, the
# range, how many met the bound. seed-d's fwd + bwd sits at the ceiling (1.00) in both runs, its
# paired 1.23 the higher; inference 0.40 then 0.20; winter's step 1.00 × torch, over its 0.25.
says "| target | bound | Test family 1 model 2 |"
says "| seed-d fwd + bwd, 1 thread | ≤ 1.2× | 1.00 (1.00-1.00; met in 2 of 2) |"
says "| seed-d inference, 1 thread | ≤ 1.2× | 0.20 (0.20-0.40; met in 2 of 2) |"
says "| winter step, 1 thread, × torch | ≤ 0.25× | 1.00 (1.00-1.00; met in 0 of 1) |"
says "| seed-b step, batch 64, 2 threads | ≤ 1.3× | - |"
# A newer run of --paired-ceiling lines alone neither decides which run is newest nor fails (it
# raised ValueError, or dropped the older run's rows where the newer run had others)
python3 - "$out/targets.jsonl.paired" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
later = dict(rows[-1], run_id="2026-09-01T00:00:00Z")
winter = dict(rows[0], run_id="2026-09-01T00:00:00Z")
open(sys.argv[1] + ".later", "w").write("".join(json.dumps(r) + "\n" for r in rows + [later, winter]))
PY
expect 0 "bench/results.py render with a newer run of --paired-ceiling lines alone" python3 "$src/bench/results.py" render "$out/targets.jsonl.paired.later"
says "| seed-d | 1 | fwd + bwd | 300.0 | 300.0 | 1.00 | 1.00 (1.23× paired) | 300.0 | 1.00 | - | 100 / 100 |"
# seed-d: 1 GFLOP forward, ceiling 10 GFLOP/s on 1 thread: fwd + bwd 300 ms at 300 ideal
says "| seed-d | 1 | fwd + bwd | 300.0 | 300.0 | 1.00 | 1.00 (1.23× paired) | 300.0 | 1.00 | - | 100 / 100 |"
says "|  |  | inference | 20.0 | 100.0 | 0.20 | 0.20 (1.11× paired) | 30.0 | 0.67 | - |  |"
if grep -q "| 9.0 |" "$out/last.log"; then bad "  ...a --paired-ceiling line's ms entered the table"; else ok "  ...its ms stay out of the table"; fi
# A newer run of the step in backward alone replaces those rows alone: the older run's other rows,
# and their torch, stay
python3 - "$out/targets.jsonl" <<'PY'
import json, sys
newer = {"framework": "xtgrad", "config": "winter", "threads": 1, "optimizer_in_backward": True, "peak_rss_mib": 90,
         "run_id": "2026-03-01T00:00:00Z", "cpu": "Test CPU", "cpu_id": "Test family 1 model 2", "commit": "2026",
         "load": 1.0, "phases": {"step": {"median_ms": 150}}}
open(sys.argv[1], "a").write(json.dumps(newer) + "\n")
PY
expect 0 "bench/results.py render with a newer run of the step in backward alone" python3 "$src/bench/results.py" render "$out/targets.jsonl"
says "| winter | 1 | step | 300.0 | - | - | - | 300.0 | 1.00 | - | 100 / 100 |"
says "| winter, step in backward | 1 | step | 150.0 | - | - | - | - | - | - | 90 / - |"
# A run of 3 rounds (run.sh --rounds 3): each side's median run, torch's per OpenBLAS setting, not
# its luckiest round (inference: xtgrad 20, 60, 25 -> 25; torch 30, 10, 50 -> 30)
python3 - "$out/targets.jsonl" <<'PY'
import json, sys
def line(framework, infer):
    return {"framework": framework, "config": "seed-d", "threads": 1, "batch": None, "autocast": None,
            "optimizer_in_backward": False, "fwd_matmul_gflop": 1.0, "peak_rss_mib": 100,
            "run_id": "2026-04-01T00:00:00Z", "cpu": "Test CPU", "cpu_id": "Test family 1 model 2", "commit": "2026",
            "load": 1.0, "openblas_env": "pinned" if framework == "torch" else None,
            "openblas_core": "Haswell" if framework == "torch" else None,
            "phases": {"step": {"median_ms": 300}, "fwd": {"median_ms": 100}, "bwd": {"median_ms": 200},
                       "infer": {"median_ms": infer}}}
rows = [line("xtgrad", 20), line("torch", 30), line("xtgrad", 60), line("torch", 10), line("xtgrad", 25), line("torch", 50)]
open(sys.argv[1] + ".rounds", "w").write(open(sys.argv[1]).read() + "".join(json.dumps(r) + "\n" for r in rows))
PY
expect 0 "bench/results.py render of a run of 3 rounds" python3 "$src/bench/results.py" render "$out/targets.jsonl.rounds"
says "|  |  | inference | 25.0 | - | - | - | 30.0 | 0.83 | - |  |"
# seed-b's targets name two batches: a newer run at 16 adds its rows beside the older run's at 64
# (it replaced them), and a run at another batch (run.sh --quick's 8) gets no row
python3 - "$out/batches.jsonl" <<'PY'
import json, sys
def line(run_id, batch, framework, step):
    return {"framework": framework, "config": "seed-b", "threads": 2, "batch": batch, "autocast": None,
            "optimizer_in_backward": False, "fwd_matmul_gflop": 1.0, "peak_rss_mib": 100, "run_id": run_id,
            "cpu": "Test CPU", "cpu_id": "Test family 1 model 2", "commit": "2026", "load": 1.0,
            "phases": {"step": {"median_ms": step}, "infer": {"median_ms": step / 3}}}
rows = [line("2026-01-01T00:00:00Z", 64, "xtgrad", 600), line("2026-01-01T00:00:00Z", 64, "torch", 900),
        line("2026-02-01T00:00:00Z", 16, "xtgrad", 150), line("2026-02-01T00:00:00Z", 16, "torch", 300),
        line("2026-03-01T00:00:00Z", 8, "xtgrad", 75), line("2026-03-01T00:00:00Z", 8, "torch", 80)]
open(sys.argv[1], "w").write("".join(json.dumps(r) + "\n" for r in rows))
PY
expect 0 "bench/results.py render of seed-b at two batches" python3 "$src/bench/results.py" render "$out/batches.jsonl"
says "| seed-b (batch 16) | 2 | step | 150.0 | - | - | - | 300.0 | 0.50 | - | 100 / 100 |"
says "| seed-b (batch 64) | 2 | step | 600.0 | - | - | - | 900.0 | 0.67 | - | 100 / 100 |"
says "Run 2026-01-01T00:00:00Z (seed-b at batch 64), commit 2026"  # the run's header names its batch
says "Run 2026-02-01T00:00:00Z (seed-b at batch 16), commit 2026"
if grep -q "(batch 8)" "$out/last.log"; then bad "  ...run.sh --quick's batch 8 got a row"; else ok "  ...no row for batch 8"; fi
# Hostile lines are refused by file and line, one line of message, never a traceback
results_refuses() {  # JSON-LINE EXPECTED-MESSAGE
  printf '%s\n' "$1" >"$out/hostile.jsonl"
  expect 2 "bench/results.py render: $2" python3 "$src/bench/results.py" render "$out/hostile.jsonl"
  says "hostile.jsonl:1 $2"
  if grep -q Traceback "$out/last.log"; then bad "  ...with a traceback"; fi
}
stamped='"cpu_id": "Test family 1 model 2", "run_id": "r1", "commit": "c1"'
results_refuses "{$stamped, \"load\": 1e999}" "has no load"
results_refuses "{$stamped, \"load\": 1, \"framework\": \"xtgrad\", \"config\": \"foo\", \"threads\": 1}" "is a benchmark line without a known config"
# seed-b's rows are per batch (16, 64): a line without one, or with one that is no whole number, is refused
results_refuses "{$stamped, \"load\": 1, \"framework\": \"xtgrad\", \"config\": \"seed-b\", \"threads\": 2}" "is a seed-b line without its batch"
results_refuses "{$stamped, \"load\": 1, \"framework\": \"torch\", \"config\": \"seed-b\", \"threads\": 2, \"batch\": null}" "is a seed-b line without its batch"
for bad_batch in '"16"' 16.0 16.5 true -16 '[16]'; do
  results_refuses "{$stamped, \"load\": 1, \"framework\": \"xtgrad\", \"config\": \"seed-b\", \"threads\": 2, \"batch\": $bad_batch}" "has a batch that is not a whole number"
done
results_refuses "{$stamped, \"load\": 1, \"mode\": \"switches\", \"pair\": \"XTGRAD_A\", \"side\": \"on\", \"round\": 1, \"run\": \"seed-d:1\", \"result\": {\"switch_defaults\": \"abc\", \"phases\": {}}}" "has switch_defaults that are not names"
results_refuses "{$stamped, \"load\": 1, \"mode\": \"switches\", \"pair\": \"XTGRAD_A\", \"side\": \"on\", \"round\": 1, \"run\": \"seed-d:1\", \"result\": {\"switch_tags\": {\"XTGRAD_A\": \"one thread\\n\"}, \"phases\": {}}}" "has switch_tags that are not names to words"
results_refuses "{$stamped, \"load\": 1, \"mode\": \"switches\", \"pair\": \"XTGRAD_A\", \"side\": \"on\", \"round\": 1, \"run\": \"seed-d:1\", \"result\": {\"switch_tags\": [\"workers\"], \"phases\": {}}}" "has switch_tags that are not names to words"
# what results.py reads to leave a cell blank, and the samples it pairs (a no-context attack:
# tracebacks for threads "2" or an inference switch without infer samples; "false" read as true)
switch_line() { printf '%s' "{$stamped, \"load\": 1, \"mode\": \"switches\", \"pair\": \"XTGRAD_A\", \"side\": \"on\", \"round\": 1, \"run\": \"$1\", \"result\": {\"phases\": {}, $2}}"; }
results_refuses "$(switch_line seed-d:1 '"switch_tags": {"XTGRAD_A": "wrokers"}')" "has switch_tags that are not names to words"
results_refuses "$(switch_line seed-d:1 '"threads": "2"')" "has threads that are not a whole number from 1 to 256"
results_refuses "$(switch_line seed-d:1 '"threads": true')" "has threads that are not a whole number from 1 to 256"
results_refuses "$(switch_line seed-d:1 '"threads": 2')" "has threads 2 against its run seed-d:1"
results_refuses "$(switch_line seed-d:1 '"optimizer_in_backward": "false"')" "has an optimizer_in_backward that is neither true nor false"
results_refuses "$(switch_line seed-d:1 '"autocast": 0')" "has an autocast that is not a name (bf16)"
results_refuses "$(switch_line seed-d:1 '"alternated": "yes"')" "has alternated samples that are not phases to lists of positive times"
results_refuses "$(switch_line seed-d:1 '"alternated": {"samples": {"step": ["x"]}}')" "has alternated samples that are not phases"
results_refuses '{"cpu_id": "A|B -->", "run_id": "r1", "commit": "c1", "load": 1}' "has no cpu_id as plain text"
bench_line="{$stamped, \"load\": 1, \"framework\": \"xtgrad\", \"config\": \"winter\", \"threads\": 1, \"peak_rss_mib\": 1, \"phases\": {}"
results_refuses "$bench_line, \"optimizer_in_backward\": \"false\"}" "has an optimizer_in_backward that is neither true nor false"
results_refuses "$bench_line, \"optimizer_in_backward\": 1}" "has an optimizer_in_backward that is neither true nor false"
results_refuses "{$stamped, \"load\": 1, \"framework\": \"torch\", \"config\": \"winter\", \"threads\": 1, \"peak_rss_mib\": 1, \"phases\": {}, \"optimizer_in_backward\": true}" "is a torch line with optimizer_in_backward"
results_refuses "{$stamped, \"load\": 1, \"mode\": \"switches\", \"framework\": \"xtgrad\"}" "has both a mode"
results_refuses '{"cpu_id": "a\ud800b", "run_id": "r1", "commit": "c1", "load": 1}' "has no cpu_id as plain text"
results_refuses "{$stamped, \"load\": 1, \"load\": 2}" "is not a JSON line (a key given twice: 'load')"
results_refuses "{$stamped, \"load\": 1, \"framework\": \"machine\", \"fma_avx2_gflops_per_core\": 1e-310}" "is a machine line whose fma_avx2_gflops_per_core is not a positive number"
# a --paired-ceiling line has no peak RSS (the ceiling's operands would count) and a ratio per phase
results_refuses_paired() {  # PAIRED-FIELDS EXPECTED-MESSAGE
  printf '%s\n' "{$stamped, \"load\": 1, \"framework\": \"xtgrad\", \"config\": \"seed-d\", \"threads\": 1, \"phases\": {}, $1}" >"$out/hostile.jsonl"
  expect 2 "bench/results.py render: $2" python3 "$src/bench/results.py" render "$out/hostile.jsonl"
  says "hostile.jsonl:1 $2"
}
results_refuses_paired '"peak_rss_mib": 5, "paired_ceiling": {"reps": 2, "step_gflops": [1], "x_ceiling": {"step": 1}}' "is a --paired-ceiling line with a peak_rss_mib"
results_refuses_paired '"peak_rss_mib": null, "paired_ceiling": {"step_gflops": [], "x_ceiling": {"step": 1}}' "has a paired_ceiling without step_gflops"
results_refuses_paired '"peak_rss_mib": null, "paired_ceiling": {"step_gflops": [1], "x_ceiling": {"step": "1.2"}}' "has a paired_ceiling without x_ceiling"
results_refuses_paired '"peak_rss_mib": null, "paired_ceiling": [1]' "has a paired_ceiling that is not xtgrad_bench --paired-ceiling's object"
results_refuses_paired '"peak_rss_mib": null, "paired_ceiling": {"reps": 2, "step_gflops": [1], "x_ceiling": {"bogus": 1}}' "has a paired_ceiling without x_ceiling (fwd, bwd, fwd+bwd, step, infer -> a positive ratio)"
results_refuses_paired '"peak_rss_mib": null, "paired_ceiling": {"reps": 2, "step_gflops": [1], "x_ceiling": {"step": 1}, "infer_gflops": [NaN]}' "has a paired_ceiling whose infer_gflops are not positive numbers"
results_refuses_paired '"peak_rss_mib": null, "paired_ceiling": {"reps": "2", "step_gflops": [1], "x_ceiling": {"step": 1}}' "has a paired_ceiling without reps"
# The docs: a symbolic link's target is written (the link stays), a closed stdout is exit 1, and the
# script runs under python3 -I (no script folder on the module path)
printf '<!-- results:cpus -->\nold\n<!-- /results:cpus -->\n' >"$out/real.md"
ln -sf real.md "$out/link.md"
expect 0 "bench/results.py render --write onto a symbolic link" python3 "$src/bench/results.py" render --write "$out/link.md" "$out/switches.jsonl"
if [[ -L $out/link.md ]] && grep -q "| CPU | model name | runs |" "$out/real.md"; then ok "  ...the link kept, its target written"; else bad "  ...the link replaced or its target stale"; fi
printf '<!-- /results:cpus -->\nx\n<!-- results:cpus -->\n' >"$out/reversed.md"
expect 2 "bench/results.py render --write with its markers the wrong way round" python3 "$src/bench/results.py" render --write "$out/reversed.md" "$out/switches.jsonl"
says "marks the table cpus with no <!-- /results:cpus --> after its <!-- results:cpus -->"
expect 1 "bench/results.py render into a closed stdout" bash -c "python3 '$src/bench/results.py' render '$out/switches.jsonl' >&-"
says "could not write the tables (the standard output is closed)"
expect 0 "bench/results.py under python3 -I" python3 -I "$src/bench/results.py" render "$out/switches.jsonl"
printf '\xff\n' >"$out/bad.md"
expect 2 "bench/results.py render --check on a non-UTF-8 doc" python3 "$src/bench/results.py" render --check "$out/bad.md" "$out/switches.jsonl"
says "bad.md cannot be read as UTF-8 text"

# Help after a command is the help, not a file named --help
for cmd in render stamp; do
  expect 0 "bench/results.py $cmd --help" python3 "$src/bench/results.py" "$cmd" --help
  says "The benchmarks' results as data"
done

exit $fail
