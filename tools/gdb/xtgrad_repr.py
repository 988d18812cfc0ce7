# PyTorch's repr of a tensor's values, for the gdb printers (tools/gdb/xtgrad_printers.py).
#
# torch_repr(read, shape, dtype) is tensor([...]) exactly as torch 1.13's torch/_tensor_str.py
# prints it: nested brackets, one width per tensor, fixed / integer / scientific notation,
# precision 4, 80 columns, and beyond `options["threshold"]` values only the first and last 3
# rows and columns around "...". It reads values through read(offset, count), only those it
# shows, so a 2048 x 2048 array costs a few reads, not 4 M. Plain Python: the printers pass a
# reader of the debugged program's memory, tests/gdb/repr_test.py a list.
#
# The library's .debug_gdb_scripts section runs this file before the printers; sourced by hand,
# the printers source it from beside themselves. Either way it is published as gdb.xtgrad_repr.

import math
import re

# ---- PyTorch's repr (torch/_tensor_str.py, 1.13), on values read lazily ----
# threshold 1000, edgeitems 3, precision 4, linewidth 80: torch's defaults.
_EDGEITEMS, _PRECISION, _LINEWIDTH = 3, 4, 80
options = {"threshold": 1000}  # set xtgrad-threshold
_ELIDED = object()  # where torch prints "..."

_TORCH_DTYPES = {"float32": "torch.float32", "float64": "torch.float64", "int64": "torch.int64",
                 "int32": "torch.int32", "bool": "torch.bool", "uint8": "torch.uint8", "int8": "torch.int8"}
_DEFAULT_DTYPES = ("float32", "int64", "bool")  # torch prints no dtype= for these (unless empty)


def _shown_values(read, shape, summarize):
    """The values torch shows, as nested lists with _ELIDED where rows or columns are left out.
    read(offset, count) returns `count` values from the flat row-major offset."""
    if not shape:
        return read(0, 1)[0]
    strides = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]

    def walk(offset, d):
        n = shape[d]
        cut = summarize and n > 2 * _EDGEITEMS
        if d == len(shape) - 1:
            if not cut:
                return list(read(offset, n))
            return list(read(offset, _EDGEITEMS)) + [_ELIDED] + list(read(offset + n - _EDGEITEMS, _EDGEITEMS))
        rows = list(range(_EDGEITEMS)) + [None] + list(range(n - _EDGEITEMS, n)) if cut else range(n)
        return [_ELIDED if i is None else walk(offset + i * strides[d], d + 1) for i in rows]

    return walk(0, 0)


def _leaves(nested):
    if not isinstance(nested, list):
        yield nested
        return
    for item in nested:
        if item is not _ELIDED:
            yield from _leaves(item)


class _Formatter:
    """torch's _Formatter: one width for every value; fixed, integer or scientific notation."""

    def __init__(self, values, floating):
        self.floating, self.int_mode, self.sci_mode, self.width = floating, True, False, 1
        if not floating:
            for v in values:
                self.width = max(self.width, len(self._plain(v)))
            return
        finite = [v for v in values if math.isfinite(v) and v != 0]
        if not finite:
            return
        low, high = min(abs(v) for v in finite), max(abs(v) for v in finite)
        self.int_mode = all(v == math.ceil(v) for v in finite)
        if self.int_mode:
            self.sci_mode = high / low > 1000.0 or high > 1.0e8
            widths = [len("{:.{}e}".format(v, _PRECISION)) if self.sci_mode else len("{:.0f}".format(v)) + 1
                      for v in finite]
        else:
            self.sci_mode = high / low > 1000.0 or high > 1.0e8 or low < 1.0e-4
            fmt = "{:.%de}" % _PRECISION if self.sci_mode else "{:.%df}" % _PRECISION
            widths = [len(fmt.format(v)) for v in finite]
        self.width = max([self.width] + widths)

    @staticmethod
    def _plain(v):
        return str(bool(v)) if isinstance(v, bool) else str(v)

    def format(self, v):
        if not self.floating:
            text = self._plain(v)
        elif self.sci_mode:
            text = "{:{}.{}e}".format(v, self.width, _PRECISION)
        elif self.int_mode:
            text = "{:.0f}".format(v) + ("" if math.isinf(v) or math.isnan(v) else ".")
        else:
            text = "{:.{}f}".format(v, _PRECISION)
        return " " * (self.width - len(text)) + text


def _vector_str(row, indent, formatter):
    per_line = max(1, (_LINEWIDTH - indent) // (formatter.width + 2))
    items = [" ..." if v is _ELIDED else formatter.format(v) for v in row]
    lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested_str(nested, ndim, indent, formatter):
    if ndim == 0:
        return formatter.format(nested)
    if ndim == 1:
        return _vector_str(nested, indent, formatter)
    slices = ["..." if s is _ELIDED else _nested_str(s, ndim - 1, indent + 1, formatter) for s in nested]
    return "[" + ("," + "\n" * (ndim - 1) + " " * (indent + 1)).join(slices) + "]"


def _add_suffixes(text, suffixes, indent):
    out = [text]
    last_line = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line + len(suffix) + 2 > _LINEWIDTH:
            out.append(",\n" + " " * indent + suffix)
            last_line = indent + len(suffix)
        else:
            out.append(", " + suffix)
            last_line += len(suffix) + 2
    return "".join(out) + ")"


def torch_repr(read, shape, dtype, suffixes=(), column=0):
    """tensor([...]) exactly as torch prints it, the first line starting at `column` (later
    lines are indented to match). read(offset, count) gives values of the flat array."""
    indent = len("tensor(")  # torch's layout; shifted right by `column` at the end
    numel = 1
    for d in shape:
        numel *= d
    extra = []
    if numel == 0:
        if len(shape) != 1:
            extra.append("size=(%s)" % ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else ""))
        if dtype != "float32":
            extra.append("dtype=" + _TORCH_DTYPES.get(dtype, dtype))
        body = "[]"
    else:
        if dtype not in _DEFAULT_DTYPES:
            extra.append("dtype=" + _TORCH_DTYPES.get(dtype, dtype))
        summarize = numel > options["threshold"]
        nested = _shown_values(read, list(shape), summarize)
        formatter = _Formatter(list(_leaves(nested)), dtype.startswith("float"))
        body = _nested_str(nested, len(shape), indent, formatter)
    text = _add_suffixes("tensor(" + body, extra + list(suffixes), indent)
    return re.sub(r"\n(?=.)", "\n" + " " * column, text) if column else text


def _publish():
    try:
        import gdb
    except ImportError:  # plain python3: nothing to publish to
        return
    import types

    gdb.xtgrad_repr = types.SimpleNamespace(torch_repr=torch_repr, options=options)


_publish()
