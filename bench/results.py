#!/usr/bin/python3
"""The benchmarks' results as data: stamp each run's JSON line, render the tables.

  ... | bench/results.py stamp                  # each JSON line on stdin gets cpu, cpu_id, commit, load, date (and pinned_cpu)
  bench/results.py render bench/results/*.jsonl # docs/performance.md's tables, one set per CPU
  bench/results.py render --check docs/performance.md README.md bench/results/*.jsonl
  bench/results.py render --write docs/performance.md README.md bench/results/*.jsonl  # fill the markers

bench/run.sh and bench/compare_builds.sh stamp every line they write with --out; a run worth
publishing is copied into bench/results/ (one file per CPU and date). `render` prints, per CPU,
the targets table (each config against the ideal and against torch) from the newest run on that
CPU, the switches' on/off table, each cell (a switch on a config) from the newest run that
measured it, and the history: each target on each CPU over every run (the newest ratio, the range,
in how many runs it was met). `--check` fails when the tables between a file's `<!-- results:NAME -->` and
`<!-- /results:NAME -->` markers are not what `render` prints, so the docs cannot drift from the
data (tests/docs/run_doc_blocks.py runs it). Reading and checking the lines: bench/result_lines.py; the tables:
bench/result_tables.py.
"""
import os
import sys
import tempfile
from collections import OrderedDict

# result_lines.py sits beside this file: found from any working directory, and under python3 -I
# (which leaves the script's folder off the module path)
sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
from result_lines import fail, load, stamp  # noqa: E402
from result_tables import history_table, switch_tags, switches_table, targets_table  # noqa: E402


def render(rows):
    """NAME -> markdown lines: targets-<cpu>, switches-<cpu>, `cpus` (the CPUs met) and `history` (every run)."""
    tables = OrderedDict()
    cpus, of_cpu = OrderedDict(), {}
    for r in rows:
        cpus.setdefault(r["cpu_id"], r.get("cpu", "?"))
        of_cpu.setdefault(r["cpu_id"], []).append(r)
    tags = switch_tags([r for r in rows if r.get("mode") == "switches"])  # the code's, the same on every CPU
    tables["cpus"] = ["| CPU | model name | runs |", "|---|---|---|"] + [
        f"| {cpu_id} | {name} | {len({r['run_id'] for r in of_cpu[cpu_id]})} |" for cpu_id, name in cpus.items()]
    scales = {}
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
        scales[cpu_id] = (peak, ceiling)
        bench = [r for r in mine if r.get("framework") in ("xtgrad", "torch")]
        targets = targets_table(bench, peak or None, ceiling) if bench else None
        if targets:
            scale = (f"FMA peak {peak:.0f} GFLOP/s per core (the highest measured), best sgemm " + ", ".join(
                f"{v:.0f} on {t} thread(s)" for t, v in sorted(ceiling.items())) if peak and ceiling
                else "no ceiling measured (bench/ceiling_bench), so no ideal")
            tables[f"targets-{slug}"] = [f"{cpu_id}: {scale}."] + targets
        switched = [r for r in mine if r.get("mode") == "switches"]
        switches = switches_table(switched, tags) if switched else None
        if switches:
            tables[f"switches-{slug}"] = switches
    history = history_table(of_cpu, scales)
    if history:
        tables["history"] = history
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


def marked(text, name, path):
    """(before, inside, after) of the table `name`'s markers in a doc's text, or None where it has
    none; a begin marker without an end marker after it is refused."""
    begin, end = f"<!-- results:{name} -->", f"<!-- /results:{name} -->"
    if begin not in text:
        return None
    head, rest = text.split(begin, 1)
    if end not in rest:
        fail(f"{path} marks the table {name} with no {end} after its {begin}")
    inside, tail = rest.split(end, 1)
    return head + begin, inside, end + tail


def write(doc_paths, tables):
    """Puts each table render prints between its markers in each doc (render --write): the whole
    doc rewritten into a temporary file beside it, then renamed over it, with the doc's mode; a
    symbolic link's target is the doc written, and a doc its owner cannot write is refused."""
    for path in doc_paths:
        text = read_doc(path)
        for name, lines in tables.items():
            parts = marked(text, name, path)
            if parts:
                text = parts[0] + "\n" + "\n".join(lines) + "\n" + parts[2]
        target = os.path.realpath(path)
        if not os.access(target, os.W_OK):
            fail(f"{path} is not writable", 1)
        tmp = None
        try:
            fd, tmp = tempfile.mkstemp(prefix=".results-", suffix=".md", dir=os.path.dirname(target))
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.chmod(tmp, os.stat(target).st_mode & 0o7777)
            os.replace(tmp, target)
        except OSError as e:
            if tmp and os.path.exists(tmp):
                os.unlink(tmp)
            fail(f"could not write {path} ({e.strerror})", 1)


def check(doc_paths, tables):
    """Every marked block of each doc holds what render prints under its name."""
    bad = 0
    for path in doc_paths:
        text = read_doc(path)
        for name, lines in tables.items():
            parts = marked(text, name, path)
            if parts and parts[1].strip("\n") != "\n".join(lines):
                sys.stderr.write(f"results.py: {path}'s table {name} is not what bench/results renders; "
                                 f"paste `bench/results.py render bench/results/*.jsonl` between its markers\n")
                bad += 1
        for marker in [m.split(" -->")[0] for m in text.split("<!-- results:")[1:]]:
            if marker not in tables:
                sys.stderr.write(f"results.py: {path} marks a table '{marker}' that bench/results does not hold\n")
                bad += 1
    return bad


def printed(text, what):
    """Writes text to stdout: exit 1 with a message where it cannot (closed, a full device)."""
    try:
        if sys.stdout is None:
            raise OSError(9, "the standard output is closed")
        sys.stdout.write(text)
        sys.stdout.flush()
    except OSError as e:
        fail(f"could not write {what} ({e.strerror})", 1)


def main(argv):
    for stream in (sys.stdout, sys.stdin):  # UTF-8 whatever the locale (the tables hold ×, ≤, ᵀ)
        if stream is not None:
            stream.reconfigure(encoding="utf-8")
    if not argv or argv[0] in ("-h", "--help") or (argv[0] in ("stamp", "render") and argv[1:2] in (["-h"], ["--help"])):
        printed(__doc__.strip() + "\n", "the help")
        return 0
    if argv[0] == "stamp":
        if sys.stdout is None or sys.stdin is None:
            fail("stamp reads stdin and writes stdout: one of them is closed", 1)
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
        printed("".join(f"<!-- results:{name} -->\n" + "\n".join(lines) + f"\n<!-- /results:{name} -->\n\n"
                        for name, lines in tables.items()), "the tables")
        return 0
    fail(f"unknown command {argv[0]!r} (stamp, render)")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
