#!/usr/bin/env python3
"""Line numbers quoted in the docs point to what they claim (run by run_doc_blocks.py, or alone).

    python3 tests/docs/line_refs.py [FILE.md ...]     (default: README.md, docs/**/*.md, exercises/README.md)

A reference is `PATH:N` (gdb's `at ../autograd/debug.cpp:226` and `created at
autograd/ops/softmax.cpp:124` included) or `line N of PATH`, where PATH is a file of the
repository; a path that is not one (a build folder, a machine's own path) is not a reference.
Each must hold:
  - PATH has a line N;
  - `created at PATH:N` (a node's creation site, as the printers and debug::describe show it):
    line N calls make_result or attach_grad_fn, and the op the same line of the doc names
    (`Node SoftmaxBackward ...`) appears on that line or the next two;
  - a line of the doc right after the reference that starts with `N` and a tab or two spaces
    (gdb's echo of the source line it stopped at) is line N of PATH, verbatim.
Exit status 1 and one line per wrong reference (doc:line, the reference, what is wrong).
"""
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
REF = re.compile(r'(?<![\w/.-])((?:\.\./)*)([\w][\w./-]*\.(?:cpp|hpp|h|py|sh|gdb|md|build|txt|json)):(\d+)(?!\d)')
LINE_OF = re.compile(r'\bline (\d+) of `?([\w][\w./-]*\.\w+)`?')
CREATED = re.compile(r'created at $')
OP = re.compile(r'\bNode (\w+Backward)\b')


def doc_files(args):
    if args:
        return [Path(a).resolve() for a in args]
    return [REPO / 'README.md', *sorted((REPO / 'docs').rglob('*.md')), REPO / 'exercises' / 'README.md']


_cache = {}


def source_lines(rel):
    path = REPO / rel
    if rel not in _cache:
        _cache[rel] = path.read_text(encoding='utf-8', errors='replace').split('\n') if path.is_file() else None
    return _cache[rel]


def check_ref(rel, n, before, doc_line, next_line):
    """next_line: the doc's next line when this is where gdb stopped (the last `at PATH:N` of a
    frame line), else None."""
    """The problems with one reference PATH:N."""
    lines = source_lines(rel)
    if n < 1 or n > len(lines):
        return [f'{rel} has {len(lines)} lines, no line {n}']
    text = lines[n - 1]
    problems = []
    if CREATED.search(before):
        window = '\n'.join(lines[n - 1:n + 2])
        if 'make_result(' not in text and 'attach_grad_fn(' not in text:
            problems.append(f'line {n} of {rel} does not create a node (no make_result or attach_grad_fn call): '
                            f'"{text.strip()}"')
        else:
            op = OP.search(doc_line)
            # The op's name on the call's lines, or (an op family passing it as `op`) in the file.
            if op and op.group(1) not in window and op.group(1) not in '\n'.join(lines):
                problems.append(f'line {n} of {rel} creates a node, but {rel} never names {op.group(1)}: "{text.strip()}"')
    echo = re.match(r'^(\d+)(?:\t| {2,})(.*)$', next_line or '')
    if echo and int(echo.group(1)) != n:
        problems.append(f'gdb stopped at line {n}, but the next line of the doc echoes line {echo.group(1)}')
    elif echo and echo.group(2).strip() != text.strip():
        problems.append(f'the doc echoes line {n} as "{echo.group(2).strip()}", but {rel} has "{text.strip()}" there')
    return problems


def check_file(doc):
    rel_doc = doc.relative_to(REPO) if doc.is_relative_to(REPO) else doc
    return check_text(doc.read_text(encoding='utf-8'), rel_doc)


def check_text(text, rel_doc):
    errors = []
    lines = text.split('\n')
    for i, line in enumerate(lines):
        next_line = lines[i + 1] if i + 1 < len(lines) else None
        refs = [m for m in REF.finditer(line) if source_lines(m.group(2)) is not None]
        for k, m in enumerate(refs):
            rel, n = m.group(2), int(m.group(3))
            stop = k == len(refs) - 1 and line[:m.start()].endswith(' at ')
            for problem in check_ref(rel, n, line[:m.start()], line, next_line if stop else None):
                errors.append(f'{rel_doc}:{i + 1}: {rel}:{n}: {problem}')
        for m in LINE_OF.finditer(line):
            n, rel = int(m.group(1)), m.group(2)
            if source_lines(rel) is None:
                errors.append(f'{rel_doc}:{i + 1}: "line {n} of {rel}": no such file in the repository')
                continue
            for problem in check_ref(rel, n, '', line, None):
                errors.append(f'{rel_doc}:{i + 1}: line {n} of {rel}: {problem}')
    return errors


def check(files):
    """(references checked, errors) over the docs."""
    errors, count = [], 0
    for doc in files:
        for line in doc.read_text(encoding='utf-8').split('\n'):
            count += sum(1 for m in REF.finditer(line) if source_lines(m.group(2)) is not None)
            count += len(LINE_OF.findall(line))
        errors += check_file(doc)
    return count, errors


def self_test():
    """The checker finds what it is for (run before the docs are checked): problems, or []."""
    src = source_lines('autograd/ops/softmax.cpp')
    creates = next(i + 1 for i, l in enumerate(src) if 'attach_grad_fn(' in l and 'SoftmaxBackward' in l)
    debug = source_lines('autograd/debug.cpp')
    cases = [  # (doc text, a fragment the error must hold, or None for no error)
        (f'xtgrad::Node SoftmaxBackward in m, created at autograd/ops/softmax.cpp:{creates} = {{', None),
        (f'xtgrad::Node SoftmaxBackward in m, created at autograd/ops/softmax.cpp:1 = {{', 'does not create a node'),
        (f'xtgrad::Node FooBackward, created at autograd/ops/softmax.cpp:{creates} = {{', 'never names FooBackward'),
        (f'(node=...) at ../autograd/debug.cpp:5\n5\t{debug[4]}', None),
        (f'(node=...) at ../autograd/debug.cpp:5\n5\t{debug[4]} // changed', 'the doc echoes line 5'),
        ('(node=...) at ../autograd/debug.cpp:5\n6\tx', 'echoes line 6'),
        (f'see line {len(debug) + 10} of autograd/debug.cpp', f'no line {len(debug) + 10}'),
        ('see line 3 of autograd/no_such_file.cpp', 'no such file'),
        ('build/tests/gdb_target.cpp:12 and /usr/include/x.hpp:3 are not the repository\'s', None),
    ]
    problems = []
    for text, want in cases:
        errors = check_text(text, 'self-test')
        if (want is None and errors) or (want is not None and not any(want in e for e in errors)):
            problems.append(f'line_refs self-test: {text!r} gave {errors or "no error"}, expected {want or "no error"}')
    return problems


def main():
    problems = self_test()
    count, errors = check(doc_files(sys.argv[1:]))
    errors = problems + errors
    for e in errors:
        print(f'  FAIL  {e}')
    print(f'line references: {count} checked, {len(errors)} wrong')
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main())
