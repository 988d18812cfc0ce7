#!/usr/bin/env python3
"""Writes a C++ file whose .debug_gdb_scripts section holds a Python script's text.

    embed_gdb_script.py tools/gdb/xtgrad_printers.py out.cpp

gdb runs such an inline script (entry kind 4, SECTION_SCRIPT_ID_PYTHON_TEXT) when it loads
the library, from wherever the library is: no search path, no file to install beside it
(it still asks the auto-load safe-path, see docs/debugging.md). The bytes are written as
.byte lists so no quoting can go wrong.
"""
import sys


def main(src, dst):
    with open(src, "rb") as f:
        script = f.read()
    if b"\0" in script:
        sys.exit("embed_gdb_script: %s contains a NUL byte" % src)
    body = b"xtgrad_printers.py\n" + script + b"\0"  # first line: the script's name
    lines = []
    for i in range(0, len(body), 24):
        lines.append('    ".byte %s\\n"' % ",".join(str(b) for b in body[i:i + 24]))
    with open(dst, "w") as f:
        f.write("// Generated from %s by tools/gdb/embed_gdb_script.py: do not edit.\n" % src.split("/")[-1])
        f.write("// gdb loads the pretty-printers from this section (docs/debugging.md).\n")
        f.write('__asm__(".pushsection \\".debug_gdb_scripts\\", \\"MS\\",@progbits,1\\n"\n')
        f.write('    ".byte 4\\n"\n')
        f.write("\n".join(lines) + "\n")
        f.write('    ".popsection\\n");\n')


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
