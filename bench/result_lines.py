"""Result lines as data: stamp what the benchmarks print, and read back what bench/results holds.

stamp() adds to each JSON line the CPU (model name, and the vendor/family/model identity tables
group by), the commit, the 1-minute load and a run id; load() reads stamped files and refuses a
line the tables could not read (a missing or non-finite number, text a table cell cannot hold)
by file, line and what is wrong, never with a traceback. bench/results.py renders the tables.
"""
import json
import math
import os
import re
import subprocess
import sys
import time

# The benchmark's configurations (bench/xtgrad_bench --config), in the order tables list them
CONFIGS = ("winter", "seed-d", "seed-b")

def fail(message, status=2):
    """One line on stderr and the exit status: 2 for bad input, 1 for output that failed."""
    sys.stderr.write(f"results.py: {message}\n")
    sys.exit(status)


def parse_json(text):
    """A JSON value with no key twice in an object (json keeps the last one silently)."""
    def unique(pairs):
        keys = [k for k, _ in pairs]
        if len(keys) != len(set(keys)):
            raise ValueError(f"a key given twice: {next(k for k in keys if keys.count(k) > 1)!r}")
        return dict(pairs)
    return json.loads(text, object_pairs_hook=unique)

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


def median_run_per_setting(runs, phase, setting):
    """A side at its best over bench/run.sh --rounds: per setting (setting(run): the OpenBLAS kernel
    and how it was set) the run with the median `phase` (the lower middle of an even count), then
    the fastest of those; with one run per setting, the fastest run. None where no run has it."""
    by_setting = {}
    for r in sorted((r for r in runs if phase in r.get("phases", {})), key=lambda r: r["phases"][phase]["median_ms"]):
        by_setting.setdefault(setting(r), []).append(r)
    middles = [rs[(len(rs) - 1) // 2] for rs in by_setting.values()]
    return min(middles, key=lambda r: r["phases"][phase]["median_ms"]) if middles else None


def stamp(lines, out):
    name, cpu_id = cpu_identity()
    extra = {"cpu": name, "cpu_id": cpu_id, "commit": commit(),
             "run_id": os.environ.get("XTGRAD_BENCH_RUN_ID") or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
             "load": float(open("/proc/loadavg").read().split()[0]), "date": time.strftime("%Y-%m-%d", time.gmtime())}
    # the CPU bench/run.sh pinned a one-thread run to (bench/pin_cpu.sh)
    pinned = os.environ.get("XTGRAD_BENCH_PINNED_CPU", "")
    if pinned.isascii() and pinned.isdigit() and len(pinned) <= 6:
        extra["pinned_cpu"] = int(pinned)
    try:
        for line in lines:
            if not line.strip().startswith("{"):
                out.write(line)  # comments and tables pass through
                continue
            try:
                row = parse_json(line)
            except (ValueError, RecursionError) as e:
                fail(f"a line on stdin is not JSON ({str(e)[:80]}): {line[:80]!r}")
            if not isinstance(row, dict):
                fail(f"a line on stdin is not a JSON object: {line[:80]!r}")
            row.update({k: v for k, v in extra.items() if k not in row})
            out.write(json.dumps(row) + "\n")
        out.flush()
    except UnicodeDecodeError as e:
        fail(f"stdin is not UTF-8 text ({e.reason} at byte {e.start})")
    except OSError as e:
        fail(f"could not write the stamped lines ({e.strerror})", 1)


# ---- read ---------------------------------------------------------------------------------------

def is_number(x, positive=False, least=1e-6, most=1e12):
    """A finite JSON number in [-most, most] (a 400-digit integer would overflow every float sum, a
    9e299 median print 300 digits); positive: in [least, most] (a subnormal rate made an infinite ideal)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return False
    ok = abs(x) <= most if isinstance(x, int) else math.isfinite(x) and abs(x) <= most
    return ok and (x >= least if positive else True)


def is_whole(x, least=1, most=(1 << 31) - 1):
    return isinstance(x, int) and not isinstance(x, bool) and least <= x <= most


# The words of a switch's switch_tags (autograd/env_switch.hpp, speed_switch_tags)
TAG_WORDS = ("fixed", "workers", "autocast", "inference", "block-cache", "one-thread", "optimizer", "in-backward")
TAGS = f"(({'|'.join(TAG_WORDS)})(,({'|'.join(TAG_WORDS)}))*)?"


def plain_text(x):
    """Text a table cell or a marker can hold: no |, `, <, >, control characters, and UTF-8 (a lone
    surrogate, as \\ud800 in JSON, cannot be printed)."""
    if not isinstance(x, str) or not 0 < len(x) <= 200 or any(c in "|`<>" or ord(c) < 32 or ord(c) == 127 for c in x):
        return False
    try:
        x.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


# The phases xtgrad_bench --paired-ceiling reads against the ceiling
PAIRED_PHASES = ("fwd", "bwd", "fwd+bwd", "step", "infer")


def phases_problem(phases):
    """What is wrong with a result's phases (name -> {median_ms, ...}), or None."""
    if not isinstance(phases, dict):
        return "its phases are not an object"
    for name, phase in phases.items():
        if not isinstance(phase, dict) or not is_number(phase.get("median_ms"), positive=True, most=1e9):
            return f"phase {name!r} has no median_ms from 1e-6 to 1e9"
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
    if "mode" in row and "framework" in row:
        return "has both a mode (a switch or build comparison) and a framework (a benchmark line)"
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
        tags = result.get("switch_tags")
        if tags is not None and not (isinstance(tags, dict) and all(
                isinstance(k, str) and isinstance(v, str) and re.fullmatch(TAGS, v) for k, v in tags.items())):
            return f"has switch_tags that are not names to words ({', '.join(TAG_WORDS)}, comma-separated)"
        # what results.py reads to know whether the switch could act in the run
        if result.get("threads") is not None and not is_whole(result["threads"], most=256):
            return "has threads that are not a whole number from 1 to 256"
        if result.get("threads") is not None and row["run"].split(":")[1:2] != [str(result["threads"])]:
            return f"has threads {result['threads']} against its run {row['run']}"
        if not (result.get("optimizer_in_backward") is None or isinstance(result["optimizer_in_backward"], bool)):
            return "has an optimizer_in_backward that is neither true nor false"
        if result.get("autocast") is not None and not plain_text(result["autocast"]):
            return "has an autocast that is not a name (bf16)"
        alternated = result.get("alternated")
        if alternated is not None and not (isinstance(alternated, dict) and isinstance(alternated.get("samples"), dict) and all(
                isinstance(v, list) and all(is_number(x, positive=True) for x in v) for v in alternated["samples"].values())):
            return "has alternated samples that are not phases to lists of positive times"
        return phases_problem(result.get("phases"))
    if row.get("framework") in ("xtgrad", "torch"):
        if row.get("config") not in CONFIGS or not is_whole(row.get("threads")):
            return f"is a benchmark line without a known config ({', '.join(CONFIGS)}) and a thread count"
        if row.get("batch") is not None and not is_whole(row["batch"]):
            return "has a batch that is not a whole number"
        if row["config"] == "seed-b" and row.get("batch") is None:  # both benchmarks write it; its targets name two
            return "is a seed-b line without its batch"
        if row.get("autocast") is not None and not plain_text(row["autocast"]):
            return "has an autocast that is not a name (bf16)"
        if not (row.get("optimizer_in_backward") is None or isinstance(row["optimizer_in_backward"], bool)):
            return "has an optimizer_in_backward that is neither true nor false"
        if row["framework"] == "torch" and row.get("optimizer_in_backward"):
            return "is a torch line with optimizer_in_backward (torch_bench.py has no such mode)"
        if row.get("fwd_matmul_gflop") is not None and not is_number(row["fwd_matmul_gflop"], positive=True):
            return "has a fwd_matmul_gflop that is not a positive number"
        paired = row.get("paired_ceiling")
        if paired is not None:
            if row["framework"] != "xtgrad" or not isinstance(paired, dict):
                return "has a paired_ceiling that is not xtgrad_bench --paired-ceiling's object"
            gflops, x = paired.get("step_gflops"), paired.get("x_ceiling")
            if not (isinstance(gflops, list) and gflops and all(is_number(g, positive=True) for g in gflops)):
                return "has a paired_ceiling without step_gflops (the ceiling before each step, GFLOP/s)"
            if not (isinstance(x, dict) and x and all(k in PAIRED_PHASES and is_number(v, positive=True) for k, v in x.items())):
                return f"has a paired_ceiling without x_ceiling ({', '.join(PAIRED_PHASES)} -> a positive ratio)"
            infer = paired.get("infer_gflops", [])
            if not (isinstance(infer, list) and all(is_number(g, positive=True) for g in infer)):
                return "has a paired_ceiling whose infer_gflops are not positive numbers"
            if not is_whole(paired.get("reps")):
                return "has a paired_ceiling without reps (a whole number, 1 or more)"
            if row.get("peak_rss_mib") is not None:
                return "is a --paired-ceiling line with a peak_rss_mib (its ceiling's operands would count)"
        elif not is_number(row.get("peak_rss_mib"), positive=True, most=1e9):
            return "is a benchmark line without peak_rss_mib (MiB, up to 1e9)"
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
        try:
            with open(path, errors="replace") as f:
                lines = f.readlines()
        except OSError as e:
            fail(f"{path} cannot be read ({e.strerror})")
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                row = parse_json(line)
            except (ValueError, RecursionError) as e:
                fail(f"{path}:{number} is not a JSON line ({str(e)[:80]})")
            problem = row_problem(row)
            if problem:
                fail(f"{path}:{number} {problem}")
            rows.append(row)
    return rows
