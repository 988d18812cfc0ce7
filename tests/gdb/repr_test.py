#!/usr/bin/env python3
"""tools/gdb/xtgrad_repr.py without gdb: torch_repr of the printer test's arrays (the values
tests/gdb/gdb_target.cpp and tools/gdb/make_repr_fixture.py build) against PyTorch's own repr of
them, tests/gdb/expected_reprs.txt. Also the threshold option and reads of only what is shown.

    python3 tests/gdb/repr_test.py          (run by tests/gdb/run_gdb_test.sh)
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "gdb"))
import xtgrad_repr  # noqa: E402


def pattern(shape, scale=1.0):
    """(i·37 mod 101 - 50) / 8 · scale: eighths times a power of two, exact in float32 and here."""
    n = 1
    for d in shape:
        n *= d
    return [(i * 37 % 101 - 50) / 8 * scale for i in range(n)]


def arrays():
    """name -> (values, shape, dtype, suffixes), as make_repr_fixture.py builds them."""
    non_finite = pattern((4,))
    non_finite[:3] = [float("nan"), float("inf"), float("-inf")]
    return {
        "scalar": (pattern(()), (), "float32", ()),
        "empty": ([], (0, 3), "float32", ()),
        "vector": (pattern((5,)), (5,), "float32", ()),
        "matrix": (pattern((7, 9)), (7, 9), "float32", ()),
        "five_d": (pattern((2, 3, 4, 5, 6)), (2, 3, 4, 5, 6), "float32", ()),
        "long_vector": (pattern((1001,)), (1001,), "float32", ()),
        "wide": (pattern((40, 50)), (40, 50), "float32", ()),
        "five_d_big": (pattern((3, 4, 5, 6, 7)), (3, 4, 5, 6, 7), "float32", ()),
        "huge": (pattern((2048, 2048)), (2048, 2048), "float32", ()),
        "small": (pattern((2, 3), 1.0 / 1048576.0), (2, 3), "float32", ()),
        "integral": (pattern((2, 4), 8.0), (2, 4), "float32", ()),
        "non_finite": (non_finite, (4,), "float32", ()),
        "ids": ([1, 2, 3, 4, 5, 6000], (2, 3), "int64", ()),
        "empty_ids": ([], (0,), "int64", ()),
        "mask": ([True, False, False, True], (2, 2), "bool", ()),
        "leaf": (pattern((5,)), (5,), "float32", ("requires_grad=True",)),
    }


def expected_reprs(path):
    expected, name = {}, None
    for line in open(path):
        line = line.rstrip("\n")
        if line.startswith("#"):
            continue
        if line.startswith("== "):
            name = line[3:]
            expected[name] = []
        else:
            expected[name].append(line)
    return {k: "\n".join(v) for k, v in expected.items()}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    expected = expected_reprs(os.path.join(here, "expected_reprs.txt"))
    failed = 0

    def check(what, ok, detail=""):
        nonlocal failed
        print("  %s  %s%s" % ("ok  " if ok else "FAIL", what, "" if ok else "\n" + detail))
        failed += not ok

    built = arrays()
    check("every array of expected_reprs.txt is built here", set(built) == set(expected),
          "expected: %s\nbuilt: %s" % (sorted(expected), sorted(built)))
    for name in sorted(set(built) & set(expected)):
        values, shape, dtype, suffixes = built[name]
        reads = []

        def read(offset, count, values=values, reads=reads):
            reads.append(count)
            return values[offset:offset + count]

        got = xtgrad_repr.torch_repr(read, shape, dtype, suffixes)
        check("torch's repr of %s" % name, got == expected[name], "got:\n%s\nexpected:\n%s" % (got, expected[name]))
        if name == "huge":  # 4 M values, abbreviated: only the shown corners are read
            check("huge: %d values read of 4194304" % sum(reads), sum(reads) <= 64)

    # The threshold (`set xtgrad-threshold`): 1001 values print whole once it allows them.
    values, shape, dtype, _ = built["long_vector"]
    saved = xtgrad_repr.options["threshold"]
    try:
        xtgrad_repr.options["threshold"] = 2000
        whole = xtgrad_repr.torch_repr(lambda o, c: values[o:o + c], shape, dtype)
        check("threshold 2000: 1001 values printed whole", "..." not in whole and whole.count(",") == 1000)
    finally:
        xtgrad_repr.options["threshold"] = saved
    # A column: later lines indented to match where the first starts.
    values, shape, dtype, _ = built["matrix"]
    shifted = xtgrad_repr.torch_repr(lambda o, c: values[o:o + c], shape, dtype, (), 4)
    check("column 4: every later line indented 4 more",
          shifted.split("\n")[1:] == ["    " + line if line else line for line in expected["matrix"].split("\n")[1:]])
    print("repr test: %s" % ("FAILED" if failed else "passed"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
