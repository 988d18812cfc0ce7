#!/usr/bin/env python3
"""Writes the tiny fixtures of tests/io/ (numpy 1.24; torch only for the F16/BF16 bytes).

Run from the repository root: /usr/bin/python3 tests/data/make_io_fixtures.py
The tests check the values below, so keep them in step with tests/io/*_test.cpp.
"""
import json
import os
import struct

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))


def npy(name, array, **kwargs):
    with open(os.path.join(HERE, "npy", name), "wb") as f:
        np.lib.format.write_array(f, array, **kwargs)


def write_npy_fixtures():
    npy("f32_c.npy", np.arange(6, dtype=np.float32).reshape(2, 3) * 0.5 - 1)
    npy("f64.npy", np.array([[1.5, -2.25], [3.0e10, 1.0e-3]], dtype=np.float64))
    npy("f32_fortran.npy", np.asfortranarray(np.arange(24, dtype=np.float32).reshape(2, 3, 4)))
    npy("i64.npy", np.array([0, -1, 2**40, 2**63 - 1, -(2**63)], dtype=np.int64))
    npy("i32.npy", np.array([[7, -8], [2**31 - 1, -(2**31)]], dtype=np.int32))
    npy("bool.npy", np.array([[True, False, True], [False, False, True]]))
    npy("f32_scalar.npy", np.array(3.5, dtype=np.float32))
    npy("f32_empty.npy", np.zeros((0, 3), dtype=np.float32))
    npy("f32_v2.npy", np.array([1.0, 2.0, 4.0], dtype=np.float32), version=(2, 0))


def write_safetensors_fixture():
    """A file from an independent writer: JSON key order differs from data order."""
    tensors = [  # in data order
        ("h16", "F16", torch.tensor([1.0, -2.5, 65504.0, 2.0**-24, float("inf"), -0.0], dtype=torch.float16)),
        ("w32", "F32", torch.tensor([[1.0, 2.0], [3.0, -4.5]], dtype=torch.float32)),
        ("b16", "BF16", torch.tensor([1.0, -3.0e38, 0.15625], dtype=torch.bfloat16)),
        ("scalar", "F32", torch.tensor(7.25, dtype=torch.float32)),
        ("w64", "F64", torch.tensor([0.1, -1.0e-30, 12345.678], dtype=torch.float64)),
    ]
    header, blobs, offset = {}, [], 0
    for name, dtype, t in tensors:
        raw = t.reshape(-1).view(torch.uint8).numpy().tobytes()
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    header = dict(sorted(header.items()))  # alphabetical, unlike the data order
    header["__metadata__"] = {"format": "pt", "note": "made by make_io_fixtures.py"}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(os.path.join(HERE, "safetensors", "mixed.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


if __name__ == "__main__":
    write_npy_fixtures()
    write_safetensors_fixture()
