#!/usr/bin/env python3
"""Keeps the docs true: every command block of README.md, docs/**/*.md and exercises/README.md runs, or says who runs it.

    python3 tests/docs/run_doc_blocks.py BUILD_DIR [--list] [--only TEXT] [FILE.md ...]

Every ```sh, ```bash and ```console block is run, unless an HTML comment right before it
(blank lines and other doc-check comments may sit in between) says otherwise:

    <!-- doc-check: covered by tests/gdb/run_gdb_test.sh -->     runs elsewhere (the file must exist)
    <!-- doc-check: skip: REASON -->                             not run, with the reason shown
    <!-- doc-check: needs python3-torch -->                      run only if `/usr/bin/python3 -c 'import torch'` works
    <!-- doc-check: reduce "OLD" => "NEW": REASON -->            run with OLD replaced by NEW (OLD must occur)
    <!-- doc-check: expect "TEXT" -->  or  expect /REGEX/        the output (stdout + stderr) must contain it
    <!-- doc-check: expect-shown "TEXT" -->                      ... and TEXT must be shown on the page itself
    <!-- doc-check: snippet-of FILE -->                          (any language) the block's lines, without
                                                                  #include and using lines, appear verbatim in FILE

Line numbers the docs quote (`autograd/ops/softmax.cpp:124`, `line 42 of FILE`) are checked too, by
tests/docs/line_refs.py: the line exists, a `created at` line creates that node, and gdb's echo of a
source line matches the file. The command-line tests docs/reliability.md names exist (tests/docs/test_refs.py).
One comment may hold several directives, one per line. How a block runs: `bash -euo pipefail`
in a fresh scratch folder that mirrors the repository (a symlink per top-level entry), where
`build` is a symlink to BUILD_DIR; `/tmp/` in the
block is rewritten to the scratch folder's `tmp/`, so runs never collide. A ```console block's
commands are its `$ ` lines (with `\\` continuations, `> ` stripped); its other lines are the output shown.
Files a block writes (winter_games_out/, graph_out/) stay in the scratch folder, removed at the end.
Blocks that name meson or ninja (they may write BUILD_DIR) run first, one at a time; the others
run --jobs at a time (default 2, or XTGRAD_JOBS).
Exit status 1 if any block fails. A torch block that cannot run (no torch, as in a clean CI
checkout) is counted as skipped, with the reason, not failed. Blocks use only the repository:
tools/lint.sh refuses references to anything beside it.
"""
import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import line_refs  # noqa: E402  (beside this file)
import test_refs  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
RUN_LANGS = {'sh', 'bash', 'console', 'shell'}
FENCE = re.compile(r'^(\s*)```\s*([\w+-]*)\s*$')
COMMENT = re.compile(r'<!--\s*doc-check:(.*?)-->', re.S)
QUOTED = r'"((?:[^"\\]|\\.)*)"'
BUILDS = re.compile(r'\b(meson|ninja)\b')  # a block that may write BUILD_DIR


class Block:
    def __init__(self, path, line, lang, text, directives):
        self.path, self.line, self.lang, self.text, self.directives = path, line, lang, text, directives
        self.rel = os.path.relpath(path, REPO)

    @property
    def where(self):
        return f'{self.rel}:{self.line}'


def parse(path):
    """The fenced blocks of a markdown file, each with the doc-check directives right before it."""
    lines = Path(path).read_text(encoding='utf-8').split('\n')
    blocks, pending, i = [], [], 0
    while i < len(lines):
        line = lines[i]
        if re.match(r'\s*<!--\s*doc-check:', line):
            j, chunk = i, line
            while '-->' not in chunk and j + 1 < len(lines):
                j += 1
                chunk += '\n' + lines[j]
            for body in COMMENT.findall(chunk):
                pending += [d.strip() for d in body.strip().split('\n') if d.strip()]
            i = j + 1
            continue
        m = FENCE.match(line)
        if m:
            indent, lang = m.group(1), m.group(2).lower()
            j = i + 1
            while j < len(lines) and not re.match(r'^\s*```\s*$', lines[j]):
                j += 1
            body = [l[len(indent):] if l.startswith(indent) else l for l in lines[i + 1:j]]
            blocks.append(Block(path, i + 1, lang, '\n'.join(body), pending))
            pending, i = [], j + 1
            continue
        if line.strip():
            pending = []           # a directive belongs to the very next block only
        i += 1
    return blocks


def page_text_without_comments(path):
    return re.sub(r'<!--.*?-->', '', Path(path).read_text(encoding='utf-8'), flags=re.S)


class Plan:
    """What the directives of one block ask for."""

    def __init__(self, block):
        self.covered, self.skip, self.torch, self.snippet = [], None, False, None
        self.reduce, self.expect, self.errors = [], [], []
        for d in block.directives:
            if d.startswith('covered by '):
                paths = re.findall(r'[\w./-]+\.(?:sh|py|cpp|gdb)\b', d)
                if not paths:
                    self.errors.append(f'"{d}": names no script or test file')
                for p in paths:
                    if not (REPO / p).is_file():
                        self.errors.append(f'"{d}": {p} does not exist')
                self.covered.append(d[len('covered by '):])
            elif d.startswith('skip:'):
                self.skip = d[len('skip:'):].strip()
                if not self.skip:
                    self.errors.append('"skip:" needs a reason')
            elif d == 'needs python3-torch':
                self.torch = True
            elif d.startswith('reduce '):
                m = re.fullmatch(r'reduce\s+' + QUOTED + r'\s*=>\s*' + QUOTED + r'\s*:\s*(\S.*)', d, re.S)
                if not m:
                    self.errors.append(f'"{d}": write reduce "OLD" => "NEW": REASON')
                else:
                    self.reduce.append((unquote(m.group(1)), unquote(m.group(2))))
            elif d.startswith('expect-shown ') or d.startswith('expect '):
                shown = d.startswith('expect-shown ')
                arg = d.split(None, 1)[1].strip()
                if arg.startswith('"') and arg.endswith('"') and len(arg) >= 2:
                    self.expect.append(('text', unquote(arg[1:-1]), shown))
                elif arg.startswith('/') and arg.endswith('/') and len(arg) >= 2 and not shown:
                    self.expect.append(('regex', arg[1:-1], False))
                else:
                    self.errors.append(f'"{d}": expect "TEXT", expect /REGEX/ or expect-shown "TEXT"')
            elif d.startswith('snippet-of '):
                self.snippet = d.split(None, 1)[1].strip()
            else:
                self.errors.append(f'unknown directive "{d}"')


def unquote(s):
    return re.sub(r'\\(.)', r'\1', s)


def commands_of(block, plan):
    """The shell text to run, and the problems found while making it."""
    text = block.text
    if block.lang == 'console':
        cmds, cont = [], False
        for line in text.split('\n'):
            if cont or line.startswith('$ '):
                cmds.append(re.sub(r'^> ?', '', line) if cont else line[2:])
                cont = line.rstrip().endswith('\\')
        text = '\n'.join(cmds)
    problems = []
    for old, new in plan.reduce:
        if old not in text:
            problems.append(f'reduce: "{old}" does not occur in the block')
        text = text.replace(old, new)
    return text, problems


def check_snippet(block, plan):
    """The block's code (without #include / using lines) must appear line for line in the file."""
    target = REPO / plan.snippet
    if not target.is_file():
        return [f'snippet-of: {plan.snippet} does not exist']
    want = [l.strip() for l in block.text.split('\n')
            if l.strip() and not re.match(r'\s*(#include|using\s)', l)]
    have = [l.strip() for l in target.read_text(encoding='utf-8').split('\n')]
    for start in range(len(have) - len(want) + 1):
        if have[start:start + len(want)] == want:
            return []
    return [f'the block\'s lines do not appear, in order and verbatim, in {plan.snippet}']


def make_scratch(root, build_dir):
    """A folder that looks like the repository, with build -> BUILD_DIR."""
    work = root / 'repo'
    work.mkdir(parents=True)
    (root / 'tmp').mkdir()
    for entry in REPO.iterdir():
        if entry.name in ('.git',) or entry.name.startswith('build'):
            continue
        (work / entry.name).symlink_to(entry)
    (work / 'build').symlink_to(build_dir)
    return work


def run_block(block, plan, build_dir, scratch_root, timeout):
    text, problems = commands_of(block, plan)
    if problems:
        return False, '\n'.join(problems), 0.0
    root = Path(tempfile.mkdtemp(prefix='block', dir=scratch_root))
    work = make_scratch(root, build_dir)
    text = text.replace('/tmp/', str(root / 'tmp') + '/')
    env = dict(os.environ, TMPDIR=str(root / 'tmp'))
    start = time.monotonic()
    try:
        proc = subprocess.run(['bash', '-euo', 'pipefail', '-c', text], cwd=work, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
        out, status = proc.stdout.decode('utf-8', 'replace'), proc.returncode
    except subprocess.TimeoutExpired as e:
        out, status = (e.stdout or b'').decode('utf-8', 'replace') + f'\n(timed out after {timeout} s)', -1
    seconds = time.monotonic() - start
    shutil.rmtree(root, ignore_errors=True)
    failures = [] if status == 0 else [f'exit status {status}']
    page = page_text_without_comments(block.path)
    for kind, what, shown in plan.expect:
        found = re.search(what, out, re.M) if kind == 'regex' else what in out
        if not found:
            failures.append(f'output lacks {"/" + what + "/" if kind == "regex" else repr(what)}')
        if shown and what not in page:
            failures.append(f'expect-shown {what!r} is not shown on the page')
    if failures:
        tail = '\n'.join(out.rstrip().split('\n')[-25:])
        return False, '; '.join(failures) + '\n' + re.sub(r'(?m)^', '        | ', tail), seconds
    return True, '', seconds


def missing_reference(block, plan, torch):
    """Why a needs-python3-torch block cannot run here, or None: such blocks run PyTorch
    (tools/make_fixtures.py), which a clean checkout (CI) may not have."""
    if not plan.torch:
        return None
    if not torch:
        return 'no torch'
    return None


def have_torch():
    if os.environ.get('XTGRAD_DOC_NO_TORCH'):
        return False
    try:
        return subprocess.run(['/usr/bin/python3', '-c', 'import torch'], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=120).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('build_dir')
    ap.add_argument('files', nargs='*', help='markdown files (default: README.md, docs/**/*.md, exercises/README.md)')
    ap.add_argument('--list', action='store_true', help='list the blocks and how each is covered, run nothing')
    ap.add_argument('--only', help='run only blocks whose FILE:LINE contains this text')
    ap.add_argument('--timeout', type=int, default=900, help='seconds per block (default 900)')
    ap.add_argument('--jobs', type=int, default=None,
                    help='blocks run at once (default: XTGRAD_JOBS, else 2); those that build run alone')
    args = ap.parse_intermixed_args()
    if args.jobs is None:
        jobs = os.environ.get('XTGRAD_JOBS', '2')
        if not jobs.isdigit():
            ap.error(f'XTGRAD_JOBS must be a whole number of jobs, got {jobs!r}')
        args.jobs = int(jobs)
    if args.jobs < 1:
        ap.error(f'--jobs (or XTGRAD_JOBS) must be at least 1, got {args.jobs}')
    build_dir = Path(args.build_dir).resolve()
    if not args.list and not (build_dir / 'build.ninja').is_file():
        sys.exit(f'run_doc_blocks: {args.build_dir} is not a meson build folder')
    files = [Path(f).resolve() for f in args.files] or ([REPO / 'README.md'] + sorted((REPO / 'docs').rglob('*.md'))
                                                         + [REPO / 'exercises' / 'README.md'])

    torch = None if args.list else have_torch()
    counts = dict(run=0, covered=0, skipped=0, torch_run=0, torch_skipped=0, snippet=0, failed=0)
    # Line numbers quoted in the docs (tests/docs/line_refs.py): checked first, they need no build.
    line_refs_checked, line_ref_errors = line_refs.check(files)
    line_ref_errors = line_refs.self_test() + line_ref_errors
    for e in line_ref_errors:
        print(f'  FAIL  {e}', flush=True)
    counts['failed'] += len(line_ref_errors)
    # The command-line tests docs/reliability.md names (tests/docs/test_refs.py): no build needed either.
    if REPO / test_refs.DOC in files:
        test_refs_checked, test_ref_errors = test_refs.check()
        test_ref_errors = test_refs.self_test() + test_ref_errors
        for e in test_ref_errors:
            counts['failed'] += 1
            print(f'  FAIL  {e}', flush=True)
        if not test_ref_errors:
            print(f'  ok    {test_refs_checked} command-line tests named in {test_refs.DOC} exist', flush=True)
    # Tables rendered from bench/results (bench/results.py): the docs hold what the data says.
    results = sorted(str(p) for p in (REPO / 'bench' / 'results').glob('*.jsonl'))
    marked = [str(f) for f in files if '<!-- results:' in f.read_text(errors='replace')]
    if marked:
        check = subprocess.run([sys.executable, str(REPO / 'bench' / 'results.py'), 'render', '--check', *marked, *results],
                               capture_output=True, text=True)
        if check.returncode != 0:
            counts['failed'] += 1
            print(f'  FAIL  rendered results tables: {check.stderr.strip()}', flush=True)
        else:
            print(f'  ok    rendered results tables in {len(marked)} files match bench/results', flush=True)
    scratch_root = tempfile.mkdtemp(prefix='xtgrad-doc-blocks-')
    to_run = []  # (block, plan, label, how) of the blocks to run, in page order
    try:
        for path in files:
            for block in parse(path):
                runnable = block.lang in RUN_LANGS
                if not runnable and not block.directives:
                    continue
                if args.only and args.only not in block.where:
                    continue
                plan = Plan(block)
                label = f'{block.where} ({block.lang or "text"})'

                def fail(msg):
                    counts['failed'] += 1
                    print(f'  FAIL  {label}: {msg}', flush=True)

                if plan.errors:
                    fail('; '.join(plan.errors))
                    continue
                if plan.snippet:
                    problems = check_snippet(block, plan)
                    if problems:
                        fail('; '.join(problems))
                    else:
                        counts['snippet'] += 1
                        print(f'  ok    {label}: snippet of {plan.snippet}')
                    if not runnable:
                        continue
                if not runnable:
                    continue
                if plan.covered:
                    counts['covered'] += 1
                    print(f'  ok    {label}: covered by {"; ".join(plan.covered)}')
                    continue
                if plan.skip is not None:
                    counts['skipped'] += 1
                    print(f'  skip  {label}: {plan.skip}')
                    continue
                how = 'needs python3-torch, ' if plan.torch else ''
                how += f'{len(plan.reduce)} reduced, ' if plan.reduce else ''
                if args.list:
                    print(f'  run   {label}: {how}{len(plan.expect)} output checks')
                    continue
                missing = missing_reference(block, plan, torch)
                if missing:
                    counts['torch_skipped'] += 1
                    print(f'  skip  {label}: skipped ({missing})')
                    continue
                to_run.append((block, plan, label, how))
        # The blocks that build (meson, ninja: they may write BUILD_DIR) run first, one at a
        # time; the others --jobs at a time. Their results follow the lines above, in page order.
        def run(item):
            block, plan, _, _ = item
            return run_block(block, plan, build_dir, scratch_root, args.timeout)

        builds = [item for item in to_run if BUILDS.search(item[0].text)]
        results = {id(item): run(item) for item in builds}
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            futures = {id(item): pool.submit(run, item) for item in to_run if id(item) not in results}
            for item in to_run:
                block, plan, label, how = item
                ok, msg, seconds = results[id(item)] if id(item) in results else futures[id(item)].result()
                if not ok:
                    counts['failed'] += 1
                    print(f'  FAIL  {label}: {how}{msg}', flush=True)
                    continue
                counts['torch_run' if plan.torch else 'run'] += 1
                print(f'  ok    {label}: ran ({how}{len(plan.expect)} output checks, {seconds:.1f} s)', flush=True)
    finally:
        shutil.rmtree(scratch_root, ignore_errors=True)

    if args.list:
        return 1 if counts['failed'] else 0
    torch_part = f'{counts["torch_run"]} need torch (run here)'
    if counts['torch_skipped']:
        torch_part += f', {counts["torch_skipped"]} need torch: skipped (no torch)'

    print(f'doc blocks: {counts["run"]} run, {counts["covered"]} covered elsewhere, '
          f'{counts["skipped"]} skipped with a reason, {torch_part}, {counts["snippet"]} snippets match their test, '
          f'{line_refs_checked - len(line_ref_errors)} of {line_refs_checked} quoted line numbers right, '
          f'{counts["failed"]} failed')
    return 1 if counts['failed'] else 0


if __name__ == '__main__':
    sys.exit(main())
