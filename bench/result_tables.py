"""The tables bench/results.py renders from result lines: each issue target's row per CPU
(targets_table), every target over every run (history_table), and each speed switch off over on
(switches_table). Reading the lines: bench/result_lines.py.
"""
import math
import statistics
from collections import OrderedDict

from result_lines import CONFIGS, median_run_per_setting


def median_ms(runs, phase):
    have = [r["phases"][phase]["median_ms"] for r in runs if phase in r.get("phases", {})]
    return statistics.median(have) if have else None


def fastest(runs, phase):
    """PyTorch at its best: its median run per setting (OpenBLAS's, glibc's heap; over bench/run.sh --rounds), the fastest."""
    r = median_run_per_setting(runs, phase, lambda r: (r.get("openblas_env"), r.get("openblas_core"), r.get("glibc_heap")))
    return r["phases"][phase]["median_ms"] if r else None


def commits(rows):
    """The commits a run's lines were measured at, in order (a run may span a commit)."""
    return ", ".join(OrderedDict((r.get("commit", "?")[:7] + ("+" if "+" in r.get("commit", "") else ""), None)
                                 for r in rows))


def fmt(x, digits=0):
    return "-" if x is None else f"{x:.{digits}f}"


def ratio(a, b):
    return "-" if a is None or b is None or b <= 0 or not math.isfinite(a / b) else f"{a / b:.2f}"


def phase_ms(runs, phase, pick):
    """A phase's time over runs (pick: median_ms of xtgrad's runs, fastest of torch's); fwd+bwd sums two."""
    if phase == "fwd+bwd":
        f, b = pick(runs, "fwd"), pick(runs, "bwd")
        return f + b if f is not None and b is not None else None
    return pick(runs, phase)


# The phases issue 46's targets name, per config: (fp32, autocast)
TARGET_PHASES = {"winter": (["step"], ["step"]), "seed-d": (["fwd+bwd", "infer"], ["fwd+bwd"]),
                 "seed-b": (["step", "infer"], ["step"])}
assert tuple(TARGET_PHASES) == CONFIGS, "TARGET_PHASES names each of result_lines.CONFIGS, in its order"
# The batches the targets name (seed-b's step at 16 and 64); other batches (run.sh --quick's 8) get no row
TARGET_BATCHES = {"seed-b": (16, 64)}


def row_key(r):
    """A benchmark line's target row: (config, threads, batch, autocast, step in backward)."""
    return (r["config"], r["threads"], r.get("batch"), r.get("autocast"), bool(r.get("optimizer_in_backward")))


def row_kind(r):
    """xtgrad_bench --paired-ceiling's lines are a kind apart: they give the ceiling column's
    bracket alone, and never decide which run is newest."""
    return "xtgrad paired" if r.get("paired_ceiling") else r["framework"]


def target_rows(rows):
    """The lines the targets read: seed-b at the batches they name alone."""
    return [r for r in rows if r["config"] not in TARGET_BATCHES or r.get("batch") in TARGET_BATCHES[r["config"]]]


def by_run(rows):
    """(row_key, row_kind, run_id) -> that run's lines of the row."""
    out = {}
    for r in rows:
        out.setdefault((row_key(r), row_kind(r), r["run_id"]), []).append(r)
    return out


def measure(lines, k, run_id, phase, peak_core, ceiling, fp32):
    """Row k's phase in run run_id (lines: by_run): xtgrad's ms, the ideal's (matmul FLOPs at the
    FMA peak) and the GEMM ceiling's (at the best sgemm rate), the median paired ratio, torch's ms
    at its best, xtgrad's fp32 ms (fp32: the fp32 lines an autocast row is set against), the peak
    RSS of both; None where the run has no such line, where the measure does not apply."""
    config, threads, batch, autocast, in_backward = k
    xt = lines.get((k, "xtgrad", run_id), [])
    th = lines.get(((config, threads, batch, autocast, False), "torch", run_id), [])  # torch has no step in backward
    paired = lines.get((k, "xtgrad paired", run_id), [])
    factor = {"fwd+bwd": 3, "step": 3, "infer": 1}[phase]
    flop = xt[0].get("fwd_matmul_gflop") if xt else None
    # the winter step is bound by memory (7-row products): its target is against torch, no ideal
    arithmetic = flop and not autocast and config != "winter"
    pairs = [r["paired_ceiling"]["x_ceiling"][phase] for r in paired if phase in r["paired_ceiling"]["x_ceiling"]]
    return {
        "ms": phase_ms(xt, phase, median_ms),
        "ideal": flop * factor / (peak_core * threads) * 1e3 if arithmetic and peak_core else None,
        "at_ceiling": flop * factor / ceiling[threads] * 1e3 if arithmetic and ceiling.get(threads) else None,
        "paired": statistics.median(pairs) if arithmetic and pairs else None,
        "torch": phase_ms(th, phase, fastest),
        "fp32": phase_ms(fp32, phase, median_ms) if autocast else None,
        # xtgrad's highest against torch's lowest (glibc's kept heap holds more than its default)
        "rss": max(r["peak_rss_mib"] for r in xt) if xt else None,
        "torch_rss": min(r["peak_rss_mib"] for r in th) if th else None,
    }


def targets_table(rows, peak_core, ceiling):
    """Each issue target's measure: ms, the ideal (matmul FLOPs at the FMA peak; and at the best
    sgemm rate on this CPU), torch at its best, the ratios; autocast rows against xtgrad's fp32."""
    # A row per (config, threads, batch, autocast, step in backward): xtgrad's runs with the step
    # inside backward (--optimizer-in-backward) get rows of their own, against torch's step (after
    # backward: torch_bench.py has no such mode). A config's rows, and apart its rows with the step
    # in backward, from the newest run that measured them at that batch, with torch's lines of that
    # run: a run of one config (or of one mode, or batch) replaces those rows alone.
    group = lambda k: (k[0], k[2], k[4])
    rows = target_rows(rows)
    timed = lambda r: row_kind(r) == "xtgrad"
    newest_of_group = {}
    for r in rows:
        if timed(r):
            g = group(row_key(r))
            newest_of_group[g] = max(newest_of_group.get(g, ""), r["run_id"])
    if not newest_of_group:
        return None
    newest = {row_key(r): newest_of_group[group(row_key(r))] for r in rows if timed(r)}
    # the rows a target reads (TARGETS); other measured rows (winter on 2 threads, the step in backward
    # beside seed-b's) stay in the data, not in the table
    wanted = {t[1] for t in TARGETS}
    keys = list(OrderedDict((row_key(r), None) for r in rows
                            if timed(r) and newest[row_key(r)] == r["run_id"] and row_key(r) in wanted))
    if not keys:
        return None
    keys.sort(key=lambda k: (list(TARGET_PHASES).index(k[0]), k[1], k[2] or 0))  # stable: a run's own order within
    lines = by_run(rows)
    def runs(k, framework, run_id):
        return lines.get((k, framework, run_id), [])
    def name_of(k):
        config, _, batch, autocast, in_backward = k
        return (config + (f" (batch {batch})" if batch else "") + (f", autocast {autocast}" if autocast else "")
                + (", step in backward" if in_backward else ""))
    run_ids = sorted(set(newest[k] for k in keys))
    def run_line(run_id):
        mine = [k for k in keys if newest[k] == run_id]
        of = [r for k in mine for fw in ("xtgrad", "torch")
              for r in runs(k if fw == "xtgrad" else k[:4] + (False,), fw, run_id)]
        which = "" if len(run_ids) == 1 else " (" + ", ".join(OrderedDict(
            (k[0] + (f" at batch {k[2]}" if k[2] else "") + (" with the step in backward" if k[4] else ""), None)
            for k in mine)) + ")"
        return (f"Run {run_id}{which}, commit {commits(of)}, 1-minute load {min(r['load'] for r in of):.1f}"
                f"-{max(r['load'] for r in of):.1f}")
    out = ["; ".join(run_line(i) for i in run_ids) + ".", "",
           "| config | threads | phase | xtgrad ms | ideal ms | × ideal | × GEMM ceiling | torch ms | × torch | × xtgrad fp32 "
           "| peak RSS MiB xtgrad / torch |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for k in keys:
        config, threads, batch, autocast, in_backward = k
        run_id = newest[k]
        fp32_key = (config, threads, batch, None, in_backward)  # this run's fp32 line, else the newest
        fp32 = (runs(fp32_key, "xtgrad", run_id) or runs(fp32_key, "xtgrad", newest.get(fp32_key, ""))) if autocast else []
        first = True
        for phase in TARGET_PHASES[config][bool(autocast)]:
            if in_backward and phase != "step":  # its bwd holds the optimizer's steps: no fwd + bwd to compare
                continue
            label = {"fwd+bwd": "fwd + bwd", "step": "step", "infer": "inference"}[phase]
            m = measure(lines, k, run_id, phase, peak_core, ceiling, fp32)
            if m["ms"] is None:
                continue
            paired_cell = f" ({m['paired']:.2f}× paired)" if m["paired"] is not None else ""
            rss = f"{fmt(m['rss'])} / {fmt(m['torch_rss'])}" if first else ""
            out.append(f"| {name_of(k) if first else ''} | {threads if first else ''} | {label} | {fmt(m['ms'], 1)} | "
                       f"{fmt(m['ideal'], 1)} | {ratio(m['ms'], m['ideal'])} | {ratio(m['ms'], m['at_ceiling'])}{paired_cell} | "
                       f"{fmt(m['torch'], 1)} | {ratio(m['ms'], m['torch'])} | {ratio(m['ms'], m['fp32']) if autocast else '-'} | {rss} |")
            first = False
    return out


# Issue 46's targets, a row each: (what, row_key, phase, against what, the bound). "ceiling": × the
# GEMM ceiling (the CPU's best sgemm rate) or, where measured, the ceiling paired with each step,
# the lower; "torch": × torch at its best; "fp32": × xtgrad's fp32; "rss": peak RSS × torch's.
TARGETS = (
    ("seed-d fwd + bwd, 1 thread", ("seed-d", 1, None, None, False), "fwd+bwd", "ceiling", 1.2),
    ("seed-d fwd + bwd, 2 threads", ("seed-d", 2, None, None, False), "fwd+bwd", "ceiling", 1.3),
    ("seed-d inference, 1 thread", ("seed-d", 1, None, None, False), "infer", "ceiling", 1.2),
    ("seed-d inference, 2 threads", ("seed-d", 2, None, None, False), "infer", "ceiling", 1.3),
    ("seed-b step, batch 16, 2 threads", ("seed-b", 2, 16, None, False), "step", "ceiling", 1.3),
    ("seed-b step, batch 64, 2 threads", ("seed-b", 2, 64, None, False), "step", "ceiling", 1.3),
    ("seed-d bf16 fwd + bwd, 1 thread, × torch's autocast", ("seed-d", 1, None, "bf16", False), "fwd+bwd", "torch", 0.5),
    ("seed-d bf16 fwd + bwd, 2 threads, × torch's autocast", ("seed-d", 2, None, "bf16", False), "fwd+bwd", "torch", 0.5),
    ("seed-b bf16 step, batch 64, 2 threads, × torch's autocast", ("seed-b", 2, 64, "bf16", False), "step", "torch", 0.5),
    ("seed-d bf16 fwd + bwd, 1 thread, × xtgrad fp32", ("seed-d", 1, None, "bf16", False), "fwd+bwd", "fp32", 0.6),
    ("seed-d bf16 fwd + bwd, 2 threads, × xtgrad fp32", ("seed-d", 2, None, "bf16", False), "fwd+bwd", "fp32", 0.6),
    ("seed-b bf16 step, batch 64, 2 threads, × xtgrad fp32", ("seed-b", 2, 64, "bf16", False), "step", "fp32", 0.6),
    ("winter step, 1 thread, × torch", ("winter", 1, None, None, False), "step", "torch", 0.25),
    ("winter step in backward, 1 thread, × torch", ("winter", 1, None, None, True), "step", "torch", 0.25),
    ("seed-b peak RSS, batch 64, × torch", ("seed-b", 2, 64, None, False), "step", "rss", 0.6),
    ("seed-b peak RSS, batch 16, × torch", ("seed-b", 2, 16, None, False), "step", "rss", 0.6),
)


def target_value(m, against):
    """The ratio a target bounds, from measure()'s dict; None where the run lacks a side."""
    if m["ms"] is None:
        return None
    if against == "ceiling":
        have = [x for x in (m["ms"] / m["at_ceiling"] if m["at_ceiling"] else None, m["paired"]) if x is not None]
        return min(have) if have else None
    num, den = (m["rss"], m["torch_rss"]) if against == "rss" else (m["ms"], m[against])
    return num / den if num is not None and den else None


def history_table(of_cpu, scales):
    """Each target on each CPU over every run that measured it: the newest run's ratio, the range,
    and in how many runs it was met (of_cpu: cpu_id -> its lines; scales: cpu_id -> (peak, ceiling))."""
    cells = {}  # (target, cpu_id) -> [(run_id, value)]
    for cpu_id, mine in of_cpu.items():
        rows = target_rows([r for r in mine if r.get("framework") in ("xtgrad", "torch")])
        lines = by_run(rows)
        peak, ceiling = scales[cpu_id]
        run_ids = sorted({r["run_id"] for r in rows})
        for what, k, phase, against, _ in TARGETS:
            fp32_key = k[:3] + (None,) + k[4:]
            for run_id in run_ids:
                if (k, "xtgrad", run_id) not in lines:
                    continue
                # this run's fp32 lines, else the nearest earlier run's
                fp32 = next((lines[(fp32_key, "xtgrad", i)] for i in reversed(run_ids)
                             if i <= run_id and (fp32_key, "xtgrad", i) in lines), [])
                value = target_value(measure(lines, k, run_id, phase, peak or None, ceiling, fp32), against)
                if value is not None and math.isfinite(value):
                    cells.setdefault((what, cpu_id), []).append((run_id, value))
    if not cells:
        return None
    cpus = list(of_cpu)
    out = ["| target | bound | " + " | ".join(cpus) + " |", "|---|---|" + "---|" * len(cpus)]
    for what, _, _, _, bound in TARGETS:
        row = []
        for cpu_id in cpus:
            got = cells.get((what, cpu_id))
            if not got:
                row.append("-")
                continue
            values = [v for _, v in got]
            met = sum(round(v, 2) <= bound for v in values)  # as the tables print it: 1.304 reads 1.30, met
            row.append(f"{got[-1][1]:.2f} ({min(values):.2f}-{max(values):.2f}; met in {met} of {len(values)})")
        out.append(f"| {what} | ≤ {bound:g}× | " + " | ".join(row) + " |")
    return out


# What measuring a switch needs, as xtgrad_bench --list-switches words it (speed_switch_tags):
# lines since 2026-12-02 carry them (switch_tags), the newest stand for every CPU's lines, older
# ones too; before, these two were known.
TAGS_BEFORE = {"XTGRAD_INFERENCE_WEIGHTS_TRANSPOSED": "inference", "XTGRAD_INFERENCE_WEIGHTS_PACKED": "autocast,inference"}


def switch_tags(rows):
    """switch name -> its words, the newest line's standing"""
    tags = dict(TAGS_BEFORE)
    for r in sorted(rows, key=lambda r: r["run_id"]):
        tags.update(r["result"].get("switch_tags") or {})
    return {name: set(filter(None, words.split(","))) for name, words in tags.items()}


def could_act(tags, result):
    """Whether a switch with these tags acted in this run: one that cannot act there (Adam's
    prefetch on two threads, or on seed-d without an optimizer) times noise, not itself."""
    threads, phases = result.get("threads"), result.get("phases") or {}
    if threads is not None and (("workers" in tags and threads < 2) or ("one-thread" in tags and threads > 1)):
        return False
    if "optimizer" in tags and "opt" not in phases and not result.get("optimizer_in_backward"):
        return False
    if "in-backward" in tags and not result.get("optimizer_in_backward"):
        return False
    return not ("autocast" in tags and "autocast" in result and not result["autocast"])


def switches_table(rows, tags):
    """compare_builds.sh --switches (tags: switch_tags of every CPU's lines): per run, each switch's
    step time off over on (> 1: on is faster), blank where it could not act; bold where every
    round of one side beat every round of the other, or, for a switch measured in one process
    (xtgrad_bench --alternate), where one side won every pair of steps.
    Each cell (a switch on a config) from the newest run that measured it, so a run of one
    switch, or of one switch on one config, adds or replaces just those cells."""
    rows = [dict(r) for r in rows]
    for r in rows:  # seed-b:2 ran at the default batch: name it as seed-b:2:64 is named
        if r["run"].count(":") == 1 and r["result"].get("batch"):
            r["run"] += f":{r['result']['batch']}"
    phase_of = {name: "infer" for name, words in tags.items() if "inference" in words}  # the phase it acts on
    acted = [r for r in rows if could_act(tags.get(r["pair"], set()), r["result"])]
    # said under the table, and a table of these alone says so too
    measured = {(r["pair"], r["run"]) for r in acted}
    left_out = {}  # switch -> runs measured where it cannot act, and nowhere else
    for r in rows:
        if (r["pair"], r["run"]) not in measured:
            left_out.setdefault(r["pair"], set()).add(r["run"])
    note = ["", "Left blank where a switch cannot act (its words in `xtgrad_bench --list-switches`): " + "; ".join(
        f"`{pair[7:]}` on {', '.join(sorted(runs))}" for pair, runs in sorted(left_out.items())) + "."] if left_out else []
    rows = acted
    if not rows:
        return note[1:] or None
    sides = {}  # (switch, run, run_id) -> the sides it measured
    for r in rows:
        sides.setdefault((r["pair"], r["run"], r["run_id"]), set()).add(r["side"])
    newest_of = {}  # a run that measured one side only does not replace a whole pair
    for (pair, run, run_id), measured in sides.items():
        if measured == {"on", "off"}:
            newest_of[(pair, run)] = max(newest_of.get((pair, run), ""), run_id)
    rows = [r for r in rows if newest_of.get((r["pair"], r["run"])) == r["run_id"]]
    if not rows:
        return None
    run_ids = sorted(set(newest_of.values()), reverse=True)
    of_run = {}
    for r in rows:
        of_run.setdefault(r["run_id"], []).append(r)
    largest = max(run_ids, key=lambda i: len(of_run[i]))
    rows.sort(key=lambda r: r["run_id"] != largest)  # its configs and switches first, the rest after
    runs = list(OrderedDict((r["run"], None) for r in rows))
    names = list(OrderedDict((r["pair"], None) for r in rows))
    # on, but where the CPUs disagree this CPU's, as xtgrad_bench reports it (older lines: the block cache's alone)
    default = {n: "on" for n in names}
    for r in sorted(rows, key=lambda r: r["run_id"]):  # the newest run's defaults last: they stand
        by_cpu = dict(r["result"].get("switch_defaults") or {})
        if "block_cache_default" in r["result"]:
            by_cpu.setdefault("XTGRAD_BLOCK_CACHE", r["result"]["block_cache_default"])
        for name, on in by_cpu.items():
            if name in default:
                default[name] = "on" if on else "off"
    def run_line(run_id):
        of = of_run[run_id]
        which = "" if len(run_ids) == 1 else " (" + ", ".join(
            f"`{n[7:]}`" for n in OrderedDict((r["pair"], None) for r in of)) + (
            "" if run_id == largest else ": " + ", ".join(OrderedDict((r["run"], None) for r in of))) + ")"
        return (f"Run {run_id}{which}, commit {commits(of)}, 1-minute load {min(r['load'] for r in of):.1f}"
                f"-{max(r['load'] for r in of):.1f}, {max(r['round'] for r in of)} rounds")
    timed = ", ".join(f"`{n[7:]}`" for n in names if n in phase_of)
    out = ["; ".join(run_line(i) for i in run_ids) + ". Step time" + (
           f" (for {timed}, the inference's: the phase it acts on)" if timed else "") + " with the switch off over on, medians "
           "over the rounds, on and off alternating (above 1: on is faster; bold: every round of one side "
           "beat every round of the other)" + (
           "; a switch but the fixed ones (the block cache's, malloc's) in one process per round, its steps alternating: the median "
           "of its pairs' ratios, bold where one side won every pair, at least 4" if any("alternated" in r["result"] for r in rows) else "") + ".", "",
           "| run (config:threads[:batch]) | " + " | ".join(f"`{n[7:]}` (default {default[n]})" for n in names) + " |",
           "|---|" + "---|" * len(names)]
    steps = {}  # (run, switch, side) -> each round's median step (or the switch's own phase)
    samples = {}  # (run, switch, round) -> side -> an alternating round's steps, in pair order
    for r in rows:
        phase = phase_of.get(r["pair"], "step")
        if phase in r["result"]["phases"]:
            steps.setdefault((r["run"], r["pair"], r["side"]), []).append(r["result"]["phases"][phase]["median_ms"])
            if phase in (r["result"].get("alternated") or {}).get("samples", {}):
                samples.setdefault((r["run"], r["pair"], r["round"]), {})[r["side"]] = \
                    r["result"]["alternated"]["samples"][phase]
    pairs = {}  # (run, switch) -> (on, off) of each pair of steps
    for (run, switch, _), by_side in samples.items():
        if set(by_side) == {"on", "off"}:
            pairs.setdefault((run, switch), []).extend(zip(by_side["on"], by_side["off"]))
    for run in runs:
        cells = []
        for switch in names:
            on, off = steps.get((run, switch, "on"), []), steps.get((run, switch, "off"), [])
            if not on or not off:
                cells.append("-")
                continue
            value = ratio(statistics.median(off), statistics.median(on))
            if (run, switch) in pairs:
                # The median of the pairs' ratios: the host moves a step 1.5x within seconds, and a
                # median of each side's steps mixed those regimes (a switch that does nothing read 0.77)
                ratios = [b / a for a, b in pairs[(run, switch)] if a > 0 and b > 0 and math.isfinite(b / a)]
                value = ratio(statistics.median(ratios), 1.0) if ratios else "-"
                # bold: one side won every pair, of at least 4 (3 could by chance, 1 in 4)
                won = [a < b for a, b in pairs[(run, switch)]]
                bold = value != "-" and len(won) >= 4 and (all(won) or not any(won))
            else:
                bold = value != "-" and (max(on) < min(off) or max(off) < min(on))
            cells.append(f"**{value}**" if bold else value)
        out.append(f"| {run} | " + " | ".join(cells) + " |")
    return out + note
