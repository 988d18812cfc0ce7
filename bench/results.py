#!/usr/bin/python3
"""The benchmarks' results as data: stamp each run's JSON line, render the tables.

  ... | bench/results.py stamp                  # each JSON line on stdin gets cpu, cpu_id, commit, load, date
  bench/results.py render bench/results/*.jsonl # docs/performance.md's tables, one set per CPU
  bench/results.py render --check docs/performance.md README.md bench/results/*.jsonl
  bench/results.py render --write docs/performance.md README.md bench/results/*.jsonl  # fill the markers

bench/run.sh and bench/compare_builds.sh stamp every line they write with --out; a run worth
publishing is copied into bench/results/ (one file per CPU and date). `render` prints, per CPU,
the targets table (each config against the ideal and against torch) from the newest run on that
CPU, and the switches' on/off table, each cell (a switch on a config) from the newest run that
measured it. `--check` fails when the tables between a file's `<!-- results:NAME -->` and
`<!-- /results:NAME -->` markers are not what `render` prints, so the docs cannot drift from the
data (tests/docs/run_doc_blocks.py runs it).
"""
import json
import math
import os
import statistics
import subprocess
import sys
import time
from collections import OrderedDict


def fail(message):
    sys.stderr.write(f"results.py: {message}\n")
    sys.exit(2)


# ---- stamp -------------------------------------------------------------------------------------

def cpu_identity():
    """('AMD EPYC', 'AMD family 25 model 17'): the model name and the identity tables group by."""
    name, vendor, family, model = "?", "?", "?", "?"
    try:
        for line in open("/proc/cpuinfo", errors="replace"):
            key, _, value = line.partition(":")
            key, value = key.strip(), value.strip()
            if key == "model name" and name == "?": name = value
            elif key == "vendor_id" and vendor == "?": vendor = {"AuthenticAMD": "AMD", "GenuineIntel": "Intel"}.get(value, value)
            elif key == "cpu family" and family == "?": family = value
            elif key == "model" and model == "?": model = value
    except OSError:
        pass
    return name, f"{vendor} family {family} model {model}"


def commit():
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        head = subprocess.run(["git", "-C", here, "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", here, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return head + ("+changes" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "?"


def stamp(lines, out):
    name, cpu_id = cpu_identity()
    extra = {"cpu": name, "cpu_id": cpu_id, "commit": commit(),
             "run_id": os.environ.get("XTGRAD_BENCH_RUN_ID") or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
             "load": float(open("/proc/loadavg").read().split()[0]), "date": time.strftime("%Y-%m-%d", time.gmtime())}
    for line in lines:
        if not line.strip().startswith("{"):
            out.write(line)  # comments and tables pass through
            continue
        try:
            row = json.loads(line)
        except ValueError as e:
            fail(f"a line on stdin is not JSON ({e}): {line[:80]!r}")
        row.update({k: v for k, v in extra.items() if k not in row})
        out.write(json.dumps(row) + "\n")
    out.flush()


# ---- render ------------------------------------------------------------------------------------

def is_number(x, positive=False):
    """A finite JSON number (a 400-digit integer is not: it would overflow every float sum)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return False
    ok = abs(x) < 1e300 if isinstance(x, int) else math.isfinite(x) and abs(x) < 1e300
    return ok and (x > 0 if positive else True)


def is_whole(x, least=1):
    return isinstance(x, int) and not isinstance(x, bool) and least <= x < 1 << 31


def plain_text(x):
    """Text a table cell or a marker can hold: no |, `, <, >, control characters."""
    return isinstance(x, str) and 0 < len(x) <= 200 and not any(c in "|`<>" or ord(c) < 32 or ord(c) == 127 for c in x)


def phases_problem(phases):
    """What is wrong with a result's phases (name -> {median_ms, ...}), or None."""
    if not isinstance(phases, dict):
        return "its phases are not an object"
    for name, phase in phases.items():
        if not isinstance(phase, dict) or not is_number(phase.get("median_ms"), positive=True):
            return f"phase {name!r} has no positive finite median_ms"
    return None


def row_problem(row):
    """What a stamped line lacks that the tables read, or None: a bad line is refused by name, not
    met later as a traceback."""
    if not isinstance(row, dict) or "cpu_id" not in row:
        return "has no cpu_id: bench/results holds stamped lines (bench/results.py stamp)"
    for key in ("cpu_id", "cpu", "run_id", "commit"):
        if (key in row or key != "cpu") and not plain_text(row.get(key)):
            return f"has no {key} as plain text (1-200 characters, none of | ` < > or a control character)"
    if not is_number(row.get("load")) or row["load"] < 0:
        return "has no load (a number >= 0)"
    if row.get("mode") == "switches":
        if not isinstance(row.get("pair"), str) or not row["pair"].startswith("XTGRAD_"):
            return "is a switch line without a pair (XTGRAD_...)"
        if row.get("side") not in ("on", "off"):
            return "is a switch line whose side is neither on nor off"
        if not is_whole(row.get("round")):
            return "is a switch line without a round (1, 2, ...)"
        if not plain_text(row.get("run")) or not plain_text(row["pair"]):
            return "is a switch line without a run (config:threads[:batch]) as plain text"
        result = row.get("result")
        if not isinstance(result, dict):
            return "is a switch line without a result"
        if result.get("batch") is not None and not is_whole(result["batch"]):
            return "has a batch that is not a whole number"
        defaults = result.get("switch_defaults")
        if defaults is not None and not (isinstance(defaults, dict) and all(
                isinstance(k, str) and isinstance(v, bool) for k, v in defaults.items())):
            return "has switch_defaults that are not names to true or false"
        return phases_problem(result.get("phases"))
    if row.get("framework") in ("xtgrad", "torch"):
        if row.get("config") not in TARGET_PHASES or not is_whole(row.get("threads")):
            return f"is a benchmark line without a known config ({', '.join(TARGET_PHASES)}) and a thread count"
        if row.get("batch") is not None and not is_whole(row["batch"]):
            return "has a batch that is not a whole number"
        if row.get("autocast") is not None and not plain_text(row["autocast"]):
            return "has an autocast that is not a name (bf16)"
        if row.get("fwd_matmul_gflop") is not None and not is_number(row["fwd_matmul_gflop"], positive=True):
            return "has a fwd_matmul_gflop that is not a positive number"
        if not is_number(row.get("peak_rss_mib")):
            return "is a benchmark line without peak_rss_mib"
        return phases_problem(row.get("phases"))
    if row.get("framework") == "machine":
        sgemm = row.get("sgemm", [])
        if not isinstance(sgemm, list) or not all(
                isinstance(g, dict) and is_whole(g.get("threads")) and is_number(g.get("gflops"), positive=True)
                for g in sgemm):
            return "is a machine line whose sgemm rows lack threads or a positive gflops"
        for key in ("fma_avx512_gflops_per_core", "fma_avx2_gflops_per_core"):
            if row.get(key) is not None and not is_number(row[key], positive=True):
                return f"is a machine line whose {key} is not a positive number"
    return None


def load(paths):
    rows = []
    for path in paths:
        if not os.path.isfile(path):
            fail(f"{path} is not a file")
        for number, line in enumerate(open(path, errors="replace"), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except (ValueError, RecursionError) as e:
                fail(f"{path}:{number} is not a JSON line ({str(e)[:80]})")
            problem = row_problem(row)
            if problem:
                fail(f"{path}:{number} {problem}")
            rows.append(row)
    return rows


def median_ms(runs, phase):
    have = [r["phases"][phase]["median_ms"] for r in runs if phase in r.get("phases", {})]
    return statistics.median(have) if have else None


def fastest(runs, phase):
    """The fastest median among runs (torch runs once per OpenBLAS setting: PyTorch at its best)."""
    have = [r["phases"][phase]["median_ms"] for r in runs if phase in r.get("phases", {})]
    return min(have) if have else None


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


def targets_table(rows, peak_core, ceiling):
    """Each issue target's measure: ms, the ideal (matmul FLOPs at the FMA peak; and at the best
    sgemm rate on this CPU), torch at its best, the ratios; autocast rows against xtgrad's fp32."""
    rows = [r for r in rows if not r.get("optimizer_in_backward")]
    if not rows:
        return None
    # Each config from the newest run that measured it, so that a run of one config replaces its rows alone
    newest_of = OrderedDict()
    for r in rows:
        if r["framework"] == "xtgrad":
            newest_of[r["config"]] = max(newest_of.get(r["config"], ""), r["run_id"])
    rows = [r for r in rows if r["run_id"] == newest_of.get(r["config"])]
    if not rows:
        return None
    run_ids = sorted(set(newest_of.values()))
    def run_line(run_id):
        of = [r for r in rows if r["run_id"] == run_id]
        which = "" if len(run_ids) == 1 else " (" + ", ".join(c for c, i in newest_of.items() if i == run_id) + ")"
        return (f"Run {run_id}{which}, commit {commits(of)}, 1-minute load {min(r['load'] for r in of):.1f}"
                f"-{max(r['load'] for r in of):.1f}")
    out = ["; ".join(run_line(i) for i in run_ids) + ".", "",
           "| config | threads | phase | xtgrad ms | ideal ms | × ideal | × GEMM ceiling | torch ms | × torch | × xtgrad fp32 "
           "| peak RSS MiB xtgrad / torch |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    key = lambda r: (r["config"], r["threads"], r.get("batch"), r.get("autocast"))
    keys = list(OrderedDict((key(r), None) for r in rows if r["framework"] == "xtgrad"))
    keys.sort(key=lambda k: (list(TARGET_PHASES).index(k[0]), k[1]))  # stable: a run's own order within
    by_key = {}
    for r in rows:
        by_key.setdefault((key(r), r["framework"]), []).append(r)
    runs = lambda k, fw: by_key.get((k, fw), [])
    for k in keys:
        config, threads, batch, autocast = k
        xt, th = runs(k, "xtgrad"), runs(k, "torch")
        fp32 = runs((config, threads, batch, None), "xtgrad") if autocast else []
        name = config + (f" (batch {batch})" if batch else "") + (f", autocast {autocast}" if autocast else "")
        flop = xt[0].get("fwd_matmul_gflop")
        first = True
        for phase in TARGET_PHASES[config][bool(autocast)]:
            label, factor = {"fwd+bwd": ("fwd + bwd", 3), "step": ("step", 3), "infer": ("inference", 1)}[phase]
            x, t = phase_ms(xt, phase, median_ms), phase_ms(th, phase, fastest)
            if x is None:
                continue
            # the winter step is bound by memory (7-row products): its target is against torch, no ideal
            arithmetic = flop and not autocast and config != "winter"
            ideal = flop * factor / (peak_core * threads) * 1e3 if arithmetic and peak_core else None
            at_ceiling = flop * factor / ceiling[threads] * 1e3 if arithmetic and ceiling.get(threads) else None
            rss = (f"{fmt(max(r['peak_rss_mib'] for r in xt))} / {fmt(max(r['peak_rss_mib'] for r in th)) if th else '-'}"
                   if first else "")
            out.append(f"| {name if first else ''} | {threads if first else ''} | {label} | {fmt(x, 1)} | {fmt(ideal, 1)} | "
                       f"{ratio(x, ideal)} | {ratio(x, at_ceiling)} | {fmt(t, 1)} | {ratio(x, t)} | "
                       f"{ratio(x, phase_ms(fp32, phase, median_ms)) if autocast else '-'} | {rss} |")
            first = False
    return out


# A switch that acts on one phase alone is read on that phase, not the step.
SWITCH_PHASE = {"XTGRAD_INFERENCE_WEIGHTS_TRANSPOSED": "infer"}


def switches_table(rows):
    """compare_builds.sh --switches: per run, each switch's step time off over on (> 1: on is
    faster); bold where every round of one side beat every round of the other. Each cell (a
    switch on a config) from the newest run that measured it, so a run of one switch, or of one
    switch on one config, adds or replaces just those cells."""
    rows = [dict(r) for r in rows]
    for r in rows:  # seed-b:2 ran at the default batch: name it as seed-b:2:64 is named
        if r["run"].count(":") == 1 and r["result"].get("batch"):
            r["run"] += f":{r['result']['batch']}"
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
    for r in rows:
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
    timed = ", ".join(f"`{n[7:]}`" for n in names if n in SWITCH_PHASE)
    out = ["; ".join(run_line(i) for i in run_ids) + ". Step time" + (
           f" (for {timed}, the inference's: the phase it acts on)" if timed else "") + " with the switch off over on, medians "
           "over the rounds, on and off alternating (above 1: on is faster; bold: every round of one side "
           "beat every round of the other).", "",
           "| run (config:threads[:batch]) | " + " | ".join(f"`{n[7:]}` (default {default[n]})" for n in names) + " |",
           "|---|" + "---|" * len(names)]
    steps = {}  # (run, switch, side) -> each round's median step (or the switch's own phase)
    for r in rows:
        phase = SWITCH_PHASE.get(r["pair"], "step")
        if phase in r["result"]["phases"]:
            steps.setdefault((r["run"], r["pair"], r["side"]), []).append(r["result"]["phases"][phase]["median_ms"])
    for run in runs:
        cells = []
        for switch in names:
            on, off = steps.get((run, switch, "on"), []), steps.get((run, switch, "off"), [])
            if not on or not off:
                cells.append("-")
                continue
            value = ratio(statistics.median(off), statistics.median(on))
            bold = value != "-" and (max(on) < min(off) or max(off) < min(on))
            cells.append(f"**{value}**" if bold else value)
        out.append(f"| {run} | " + " | ".join(cells) + " |")
    return out


def render(rows):
    """NAME -> markdown lines: targets-<cpu>, switches-<cpu>, and `cpus` (the CPUs met)."""
    tables = OrderedDict()
    cpus, of_cpu = OrderedDict(), {}
    for r in rows:
        cpus.setdefault(r["cpu_id"], r.get("cpu", "?"))
        of_cpu.setdefault(r["cpu_id"], []).append(r)
    tables["cpus"] = ["| CPU | model name | runs |", "|---|---|---|"] + [
        f"| {cpu_id} | {name} | {len({r['run_id'] for r in of_cpu[cpu_id]})} |" for cpu_id, name in cpus.items()]
    for cpu_id in cpus:
        mine = of_cpu[cpu_id]
        slug = cpu_id.lower().replace(" family ", "-f").replace(" model ", "-m")
        # The FMA peak is the CPU's: the highest any run measured (a loaded machine measures less).
        machines = [r for r in mine if r.get("framework") == "machine"]
        peak = max((m.get("fma_avx512_gflops_per_core") or m.get("fma_avx2_gflops_per_core") or 0 for m in machines), default=0)
        ceiling = {}
        for m in machines:
            for g in m.get("sgemm", []):
                ceiling[g["threads"]] = max(ceiling.get(g["threads"], 0), g["gflops"])
        bench = [r for r in mine if r.get("framework") in ("xtgrad", "torch")]
        targets = targets_table(bench, peak or None, ceiling) if bench else None
        if targets:
            tables[f"targets-{slug}"] = [f"{cpu_id}: FMA peak {peak:.0f} GFLOP/s per core (the highest "
                                         f"measured), best sgemm " + ", ".join(f"{v:.0f} on {t} thread(s)" for t, v in
                                                                               sorted(ceiling.items())) + "."] + targets
        switched = [r for r in mine if r.get("mode") == "switches"]
        switches = switches_table(switched) if switched else None
        if switches:
            tables[f"switches-{slug}"] = switches
    return tables


def read_doc(path):
    """A doc to check or fill: a regular file of UTF-8 text, else a one-line refusal."""
    if not os.path.isfile(path):
        fail(f"{path} is not a file")
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as e:
        fail(f"{path} cannot be read as UTF-8 text ({e})")


def write(doc_paths, tables):
    """Puts each table render prints between its markers in each doc (render --write)."""
    for path in doc_paths:
        text = read_doc(path)
        for name, lines in tables.items():
            begin, end = f"<!-- results:{name} -->", f"<!-- /results:{name} -->"
            if begin in text and end in text:
                head, rest = text.split(begin, 1)
                text = head + begin + "\n" + "\n".join(lines) + "\n" + end + rest.split(end, 1)[1]
        with open(path + ".tmp", "w") as f:
            f.write(text)
        os.replace(path + ".tmp", path)


def check(doc_paths, tables):
    """Every marked block of each doc holds what render prints under its name."""
    bad = 0
    for path in doc_paths:
        text = read_doc(path)
        for name, lines in tables.items():
            begin, end = f"<!-- results:{name} -->", f"<!-- /results:{name} -->"
            if begin not in text:
                continue
            inside = text.split(begin, 1)[1].split(end, 1)[0].strip("\n")
            if inside != "\n".join(lines):
                sys.stderr.write(f"results.py: {path}'s table {name} is not what bench/results renders; "
                                 f"paste `bench/results.py render bench/results/*.jsonl` between its markers\n")
                bad += 1
        for marker in [m.split(" -->")[0] for m in text.split("<!-- results:")[1:]]:
            if marker not in tables:
                sys.stderr.write(f"results.py: {path} marks a table '{marker}' that bench/results does not hold\n")
                bad += 1
    return bad


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    if argv[0] == "stamp":
        stamp(sys.stdin, sys.stdout)
        return 0
    if argv[0] == "render":
        args, docs, mode = argv[1:], [], None
        if args[:1] in (["--check"], ["--write"]):
            mode = args[0]
            docs = [a for a in args[1:] if a.endswith(".md")]
            args = [a for a in args[1:] if not a.endswith(".md")]
            if not docs:
                fail(f"render {mode} needs the docs (.md files) before the result files")
        if not args:
            fail("render needs result files (bench/results/*.jsonl)")
        tables = render(load(args))
        if mode == "--write":
            write(docs, tables)
            return 0
        if mode == "--check":
            return 1 if check(docs, tables) else 0
        try:
            for name, lines in tables.items():
                print(f"<!-- results:{name} -->\n" + "\n".join(lines) + f"\n<!-- /results:{name} -->\n")
            sys.stdout.flush()
        except OSError as e:
            sys.stderr.write(f"results.py: could not write the tables ({e.strerror})\n")
            return 1
        return 0
    fail(f"unknown command {argv[0]!r} (stamp, render)")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
