#!/usr/bin/env python3
"""Writes a C++ file defining xtgrad::report::kPageHtml, the text of report/page.html.

    embed_page.py out.cpp report/page.html

The text is written as a sequence of raw string literals cut into short pieces, so no quoting
can go wrong and no literal hits a compiler's length limit.
"""
import sys


def main(dst, src):
    with open(src, encoding="utf-8") as f:
        text = f.read()
    if ")xtgrad_page\"" in text:
        sys.exit("embed_page: %s contains the raw string's delimiter" % src)
    pieces = [text[i:i + 2000] for i in range(0, len(text), 2000)]
    with open(dst, "w", encoding="utf-8") as f:
        f.write("// Generated from report/page.html by report/embed_page.py: do not edit.\n")
        f.write("namespace xtgrad::report {\nextern const char* const kPageHtml;\nconst char* const kPageHtml =\n")
        for p in pieces:
            f.write('R"xtgrad_page(%s)xtgrad_page"\n' % p)
        f.write(";\n}  // namespace xtgrad::report\n")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: embed_page.py OUT.cpp PAGE.html")
    main(sys.argv[1], sys.argv[2])
