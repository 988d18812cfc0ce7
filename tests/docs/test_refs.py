#!/usr/bin/env python3
"""The command-line tests docs/reliability.md names exist (run by run_doc_blocks.py, or alone).

    python3 tests/docs/test_refs.py

A row of docs/reliability.md names its test as `FILE ("name", "... part", ...)`, FILE one of the
command-line test scripts (tests/examples/run_cli_tests.sh, tests/bench/*_cli_tests.sh,
tests/tools/cli_tests.sh, by their file name or path); in the command-line section a bare quoted
name is one of tests/examples/run_cli_tests.sh. Each name, less its `...`, must be text of that
script as it prints it (a test's name, its section's title, a message it checks for), or start as
a test's name does up to a shell expansion (`"fuzz/build.sh with XTGRAD_JOBS=x"` for the test
`"fuzz/build.sh with XTGRAD_JOBS=$jobs"`). A test's name is the first quoted argument of `expect
STATUS "..."`, `ok "..."`, `bad "..."` or `check "..."`.
Exit status 1 and one line per name no test has (doc:line, the file, the name).
"""
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOC = 'docs/reliability.md'
SCRIPTS = {
    'run_cli_tests.sh': 'tests/examples/run_cli_tests.sh',
    'switch_cli_tests.sh': 'tests/bench/switch_cli_tests.sh',
    'results_cli_tests.sh': 'tests/bench/results_cli_tests.sh',
    'script_cli_tests.sh': 'tests/bench/script_cli_tests.sh',
    'tests/tools/cli_tests.sh': 'tests/tools/cli_tests.sh',
}
BARE_SECTION = '### The programs, the benchmark scripts and the tools'
QUOTED = r'"((?:[^"\\]|\\.)*)"'
QUOTED_NAME = re.compile(QUOTED)
TEST_NAME = re.compile(r'(?:\bexpect [0-9]+|\bok|\bbad|\bcheck) ' + QUOTED)
REFERENCE = re.compile(r'(?<![\w/])((?:tests/(?:examples|bench)/)?(?:run|switch|results|script)_cli_tests\.sh'
                       r'|tests/tools/cli_tests\.sh)(?: \()?')
EXPANSION = re.compile(r'(?<!\\)\$(?:\w+|\{[^}]*\}|\([^)]*\))')


def plain(text):
    """Text as printed: no backslashes (the shell's escapes, markdown's doubled ones)."""
    return text.replace('\\', '')


def script_text(rel):
    """A script as it prints: its text without backslashes, and its test names that hold a shell
    expansion, each as a pattern (an expansion: any text) and the text before the first one."""
    text = (REPO / rel).read_text(encoding='utf-8')
    expanding = [raw for raw in TEST_NAME.findall(text) if EXPANSION.search(raw)]
    return plain(text), [(re.compile('.+'.join(re.escape(plain(piece)) for piece in EXPANSION.split(raw))),
                          plain(EXPANSION.split(raw)[0])) for raw in expanding]


def has_test(script, name):
    text, expanding = script
    parts = [part.strip().strip(',:').strip() for part in plain(name).split('...')]
    part = max(parts, key=len)
    return part in text or any(pattern.fullmatch(part) or (start and part.startswith(start))
                               for pattern, start in expanding)


def quoted_after(line, pos):
    """The quoted names of the bracket that starts at pos (a name may hold a bracket)."""
    found = []
    i = pos
    while i < len(line) and line[i] != ')':
        if line[i] == '"':
            m = QUOTED_NAME.match(line, i)
            if not m:
                break
            found.append(m.group(1))
            i = m.end()
        else:
            i += 1
    return found


def check():
    names = {key: script_text(rel) for key, rel in SCRIPTS.items()}
    errors, checked, in_section = [], 0, False
    for number, line in enumerate((REPO / DOC).read_text(encoding='utf-8').splitlines(), 1):
        if line.startswith('#'):
            in_section = line.startswith(BARE_SECTION)
        if not line.startswith('|') or line.startswith('|---'):
            continue
        cell = line.rstrip().rstrip('|').rsplit('|', 1)[-1]
        refs = list(REFERENCE.finditer(cell))
        wanted = []
        for m in refs:
            key = m.group(1) if m.group(1).startswith('tests/tools/') else m.group(1).rsplit('/', 1)[-1]
            if m.group(0).endswith('('):
                wanted += [(key, n) for n in quoted_after(cell, m.end())]
        if in_section and not refs and not cell.lstrip().startswith('`'):
            wanted += [('run_cli_tests.sh', n) for n in QUOTED_NAME.findall(cell)]
        for key, name in wanted:
            checked += 1
            if not has_test(names[key], name):
                errors.append(f'{DOC}:{number}: {SCRIPTS[key]} has no test "{name}"')
    return checked, errors


def self_test():
    """has_test on a made-up script: a name, a part, an expansion, and what must not match."""
    script = ('expect 2 "graph --depth 0x10 (a count)" graph\nexpect 2 "fuzz/build.sh with XTGRAD_JOBS=$jobs" x\n'
              'says "round 1, exit 3"\n')
    made_up = (plain(script), [(re.compile(r'fuzz/build\.sh with XTGRAD_JOBS=.+'), 'fuzz/build.sh with XTGRAD_JOBS='),
                               (re.compile(r'.+=on'), '')])
    cases = [('graph --depth 0x10', True), ('XTGRAD_X=on', True), ('XTGRAD_X=off', False),
             ('... round 1, exit 3', True),
             ('fuzz/build.sh with XTGRAD_JOBS=x', True),
             ('graph --depth 0x11', False), ('... no such part', False), ('fuzz/run.sh with XTGRAD_JOBS=x', False)]
    return [f'test_refs self-test: has_test("{n}") is {not want}' for n, want in cases if has_test(made_up, n) != want]


def main():
    checked, errors = check()
    errors = self_test() + errors
    for e in errors:
        print(e)
    print(f'test references: {checked} checked, {len(errors)} wrong')
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main())
