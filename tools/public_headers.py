#!/usr/bin/env python3
"""Prints the public headers: xtgrad.hpp and every project header it reaches through
#include <xtgrad/...> (transitively). meson installs exactly these; every other header is internal.

usage: public_headers.py SOURCE_ROOT
       public_headers.py --check-doc SOURCE_ROOT docs/api.md
The second form checks that the page names every installed header exactly once (in backquotes,
as `autograd/tensor.hpp`) and no header that is not installed.
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+<xtgrad/([^>]+)>', re.M)


def closure(root, start):
    seen, todo = set(), [start]
    while todo:
        header = todo.pop()
        if header in seen:
            continue
        seen.add(header)
        with open(os.path.join(root, header), encoding="utf-8") as f:
            for inc in INCLUDE.findall(f.read()):
                if os.path.exists(os.path.join(root, inc)):
                    todo.append(inc)
                else:
                    sys.exit(f"public_headers.py: {header} includes <xtgrad/{inc}>, which is not a project header")
    return sorted(seen)


def check_doc(root, page):
    installed = closure(root, "xtgrad.hpp")
    with open(os.path.join(root, page), encoding="utf-8") as f:
        named = re.findall(r"`([a-z_/0-9]+\.hpp)`", f.read())
    problems = [f"{h} is installed but {page} does not name it" for h in installed if h not in named]
    problems += [f"{h} is named {named.count(h)} times in {page}" for h in set(named) if named.count(h) > 1]
    problems += [f"{h} is named in {page} but not installed" for h in set(named) if h not in installed]
    for p in sorted(problems):
        print("public_headers.py:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    if sys.argv[1] == "--check-doc":
        sys.exit(check_doc(sys.argv[2], sys.argv[3]))
    print("\n".join(closure(sys.argv[1], "xtgrad.hpp")))
