#!/usr/bin/env python3
"""Writes tests/gdb/expected_reprs.txt: PyTorch's repr of the arrays tests/gdb/gdb_target.cpp
keeps for the printer test (same shapes, same values), which the gdb test compares with what the
pretty-printers print. Needs Debian's python3-torch:

    /usr/bin/python3 tools/gdb/make_repr_fixture.py tests/gdb/expected_reprs.txt
"""
import sys

import numpy as np
import torch


def pattern(shape, scale):
    n = int(np.prod(shape)) if shape else 1
    i = np.arange(n, dtype=np.int64)
    values = ((i * 37 % 101 - 50).astype(np.float32) / np.float32(8) * np.float32(scale)).astype(np.float32)
    return torch.from_numpy(values.reshape(shape))


def arrays():
    non_finite = pattern((4,), 1.0)
    non_finite[0], non_finite[1], non_finite[2] = float("nan"), float("inf"), float("-inf")
    return [
        ("scalar", pattern((), 1.0)),
        ("empty", pattern((0, 3), 1.0)),
        ("vector", pattern((5,), 1.0)),
        ("matrix", pattern((7, 9), 1.0)),
        ("five_d", pattern((2, 3, 4, 5, 6), 1.0)),
        ("long_vector", pattern((1001,), 1.0)),
        ("wide", pattern((40, 50), 1.0)),
        ("five_d_big", pattern((3, 4, 5, 6, 7), 1.0)),
        ("huge", pattern((2048, 2048), 1.0)),
        ("small", pattern((2, 3), 1.0 / 1048576.0)),
        ("integral", pattern((2, 4), 8.0)),
        ("non_finite", non_finite),
        ("ids", torch.tensor([[1, 2, 3], [4, 5, 6000]])),
        ("empty_ids", torch.zeros((0,), dtype=torch.int64)),
        ("mask", torch.tensor([[True, False], [False, True]])),
        ("leaf", pattern((5,), 1.0).requires_grad_()),
    ]


def main(out):
    with open(out, "w") as f:
        f.write("# PyTorch %s's repr of tests/gdb/gdb_target.cpp's printer arrays "
                "(tools/gdb/make_repr_fixture.py)\n" % torch.__version__)
        for name, tensor in arrays():
            f.write("== %s\n%s\n" % (name, repr(tensor)))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/gdb/expected_reprs.txt")
