#!/usr/bin/env python3
"""Writes a C++ file whose .debug_gdb_scripts section holds Python scripts' text.

    embed_gdb_script.py out.cpp tools/gdb/xtgrad_printers.py tools/gdb/xtgrad_commands.py

gdb runs each such inline script (entry kind 4, SECTION_SCRIPT_ID_PYTHON_TEXT), in the order
given, when it loads the library, from wherever the library is: no search path, no file to
install beside it (it still asks the auto-load safe-path, see docs/debugging.md). The bytes are
written as .byte lists so no quoting can go wrong.
"""
import os
import sys


def entry(src):
    with open(src, "rb") as f:
        script = f.read()
    if b"\0" in script:
        sys.exit("embed_gdb_script: %s contains a NUL byte" % src)
    body = os.path.basename(src).encode() + b"\n" + script + b"\0"  # first line: the script's name
    lines = ['    ".byte 4\\n"']
    for i in range(0, len(body), 24):
        lines.append('    ".byte %s\\n"' % ",".join(str(b) for b in body[i:i + 24]))
    return lines


def main(dst, srcs):
    with open(dst, "w") as f:
        f.write("// Generated from %s by tools/gdb/embed_gdb_script.py: do not edit.\n"
                % ", ".join(os.path.basename(s) for s in srcs))
        f.write("// gdb loads the pretty-printers and commands from this section (docs/debugging.md).\n")
        f.write('__asm__(".pushsection \\".debug_gdb_scripts\\", \\"MS\\",@progbits,1\\n"\n')
        for src in srcs:
            f.write("\n".join(entry(src)) + "\n")
        f.write('    ".popsection\\n");\n')


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: embed_gdb_script.py OUT.cpp SCRIPT.py...")
    main(sys.argv[1], sys.argv[2:])
