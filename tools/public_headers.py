#!/usr/bin/env python3
"""Prints the public headers: xtgrad.hpp and every project header it reaches through
#include "..." (transitively). meson installs exactly these; every other header is internal.

usage: public_headers.py SOURCE_ROOT
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


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
                    sys.exit(f"public_headers.py: {header} includes \"{inc}\", which is not a project header")
    return sorted(seen)


if __name__ == "__main__":
    print("\n".join(closure(sys.argv[1], "xtgrad.hpp")))
