# gdb pretty-printers for xtgrad (docs/debugging.md).
#
#   (gdb) print loss
#   $1 = xtgrad::Tensor () float32 requires_grad grad_fn=CrossEntropyBackward grad=none 2.335
#   (gdb) set print pretty on
#   (gdb) print node
#   $2 = xtgrad::Node LinearBackward in encoder.layers.0.enc_self_attn.W_Q, created at autograd/ops/matmul.cpp:221 = {
#     input 0 = xtgrad::TensorImpl (1,7,16) float32 requires_grad grad_fn=AddBackward grad=(1,7,16) [...],
#     input 1 = xtgrad::TensorImpl "encoder.layers.0.enc_self_attn.W_Q.weight" (16,16) float32 ... grad=none [...],
#     ...
#
# Printers for xtgrad::Tensor, xtgrad::TensorImpl, xtgrad::Node and xtensor's
# xarray_container / xtensor_container (xtgrad::Array, Ids, Mask): shape, dtype, the first
# values, requires_grad, whether a grad is present, the node's op and module, the tensor's
# dotted name. They read memory only (the shared_ptr, std::string, std::vector and xtensor
# uvector/svector members), never call into the program, so they work in optimised builds
# and on core files.
#
# libxtgrad carries this file in its .debug_gdb_scripts section, so gdb loads it for any
# program linked with the library once the library's directory is trusted:
#   add-auto-load-safe-path /path/to/build        (in ~/.gdbinit, or gdb -iex "...")
# For a program that links xtgrad statically, or without auto-load:
#   (gdb) source /path/to/xtgrad/tools/gdb/xtgrad_printers.py
#
# `set xtgrad-max-values N` sets how many values are shown (default 8). Summaries are one
# line (so frame lines stay short); a node's inputs and a tensor's gradient are children,
# best read with `set print pretty on`.

import struct

import gdb
import gdb.printing

_max_values = 8


class _MaxValuesParameter(gdb.Parameter):
    """How many values the xtgrad pretty-printers show per array."""

    set_doc = "Set how many values the xtgrad pretty-printers show."
    show_doc = "Show how many values the xtgrad pretty-printers show."

    def __init__(self):
        super().__init__("xtgrad-max-values", gdb.COMMAND_DATA, gdb.PARAM_UINTEGER)
        self.value = _max_values

    def get_set_string(self):
        global _max_values
        _max_values = self.value if self.value is not None else 1 << 30
        return ""

    def get_show_string(self, svalue):
        return "xtgrad pretty-printers show %s values per array" % svalue


# (struct code, size, dtype name) by the C++ element type.
_DTYPES = {
    "float": ("f", 4, "float32"),
    "double": ("d", 8, "float64"),
    "long": ("q", 8, "int64"),
    "long long": ("q", 8, "int64"),
    "int": ("i", 4, "int32"),
    "unsigned long": ("Q", 8, "uint64"),
    "unsigned int": ("I", 4, "uint32"),
    "bool": ("?", 1, "bool"),
    "unsigned char": ("B", 1, "uint8"),
    "char": ("b", 1, "int8"),
    "signed char": ("b", 1, "int8"),
}
_ALIASES = {"float32": "xtgrad::Array", "int64": "xtgrad::Ids", "bool": "xtgrad::Mask"}
_MAX_NDIM = 16
_MAX_NUMEL = 1 << 40


class _Unreadable(Exception):
    pass


def _read(address, count, code, size):
    if count == 0:
        return ()
    data = gdb.selected_inferior().read_memory(address, count * size)
    return struct.unpack("<%d%s" % (count, code), bytes(data))


def _ptr(value):
    return int(value.cast(gdb.lookup_type("unsigned long")))


def _std_string(value):
    length = int(value["_M_string_length"])
    if length == 0:
        return ""
    if length > 1 << 20:
        raise _Unreadable("string of length %d" % length)
    raw = bytes(gdb.selected_inferior().read_memory(_ptr(value["_M_dataplus"]["_M_p"]), length))
    return raw.decode("utf-8", errors="replace")


def _shared_get(value):
    """The raw pointer of a std::shared_ptr (a gdb.Value), or None when it is null."""
    pointer = value["_M_ptr"]
    return None if _ptr(pointer) == 0 else pointer


def _weak_get(value):
    """The raw pointer of a std::weak_ptr while its object is alive, else None."""
    counts = value["_M_refcount"]["_M_pi"]
    if _ptr(counts) == 0:
        return None
    # Read the count from memory: dereferencing the (polymorphic) count object would make gdb
    # look up its dynamic type and print RTTI warnings into the output.
    field = next(f for f in counts.type.strip_typedefs().target().strip_typedefs().fields()
                 if f.name == "_M_use_count")
    (uses,) = _read(_ptr(counts) + field.bitpos // 8, 1, "i", 4)
    return _shared_get(value) if uses > 0 else None


def _vector_items(value):
    start, finish = value["_M_impl"]["_M_start"], value["_M_impl"]["_M_finish"]
    count = int(finish - start) if _ptr(start) else 0
    if count < 0 or count > 1 << 16:
        raise _Unreadable("vector of %d items" % count)
    return [start[i] for i in range(count)]


def _fmt_value(v, dtype):
    if dtype == "bool":
        return "true" if v else "false"
    if dtype.startswith("float"):
        return "%.4g" % v
    return str(v)


def _shape_str(shape):
    return "(" + ",".join(str(d) for d in shape) + ")"


def _nested(values, shape, dtype):
    """[[1, 2], [3, 4]] for a small array."""
    if not shape:
        return _fmt_value(values[0], dtype)
    if len(shape) == 1:
        return "[" + ", ".join(_fmt_value(v, dtype) for v in values) + "]"
    block = len(values) // shape[0] if shape[0] else 0
    return "[" + ", ".join(_nested(values[i * block:(i + 1) * block], shape[1:], dtype)
                           for i in range(shape[0])) + "]"


class _ArrayView:
    """Shape, dtype and values of an xtensor container, read from its members."""

    def __init__(self, value):
        shape_member = value["m_shape"]
        storage = value["m_storage"]
        if shape_member.type.strip_typedefs().code == gdb.TYPE_CODE_ARRAY:  # xtensor_container: std::array
            self.shape = [int(d) for d in _std_array(shape_member)]
        else:  # xarray_container: xt::svector
            begin, end = shape_member["m_begin"], shape_member["m_end"]
            ndim = int(end - begin)
            if ndim < 0 or ndim > _MAX_NDIM:
                raise _Unreadable("%d dimensions" % ndim)
            self.shape = list(_read(_ptr(begin), ndim, "Q", 8))
        begin = storage["p_begin"]
        element = begin.type.strip_typedefs().target().strip_typedefs().unqualified()
        self.code, self.size, self.dtype = _DTYPES.get(str(element), (None, element.sizeof, str(element)))
        self.begin = _ptr(begin)
        self.numel = int(storage["p_end"] - begin) if self.begin else 0
        expected = 1
        for d in self.shape:
            expected *= d
        if self.numel < 0 or self.numel > _MAX_NUMEL or (self.numel != expected):
            raise _Unreadable("%d values for shape %s" % (self.numel, _shape_str(self.shape)))

    def values(self, limit):
        if self.code is None:
            return None
        return _read(self.begin, min(self.numel, limit), self.code, self.size)

    def summary(self, limit=None):
        """(2,3) [[1, 2, 3], [4, 5, 6]]  or  (1,7,16) [0.1, -0.2, ... (112 values)]"""
        limit = _max_values if limit is None else limit
        head = _shape_str(self.shape)
        values = self.values(limit)
        if values is None:
            return head + " <%s values>" % self.dtype
        if self.numel <= limit:
            return head + " " + _nested(values, self.shape, self.dtype)
        shown = ", ".join(_fmt_value(v, self.dtype) for v in values)
        return head + " [%s, ... (%d values)]" % (shown, self.numel)


def _std_array(value):
    elems = value["_M_elems"]
    count = elems.type.strip_typedefs().range()[1] + 1
    return [elems[i] for i in range(count)]


def _safely(fn):
    try:
        return fn()
    except (gdb.error, gdb.MemoryError, _Unreadable, RuntimeError, ValueError, struct.error) as e:
        return "<unreadable: %s>" % e


def _array_of(shared):
    pointer = _shared_get(shared)
    return None if pointer is None else _ArrayView(pointer.dereference())


def _shown_grad(impl):
    """.grad, or during a backward the gradient summed so far into a tensor (its `incoming`)."""
    return impl["grad"] if _shared_get(impl["grad"]) is not None else impl["incoming"]


def _impl_summary(impl, limit=None):
    """One line about a TensorImpl (a gdb.Value, not a pointer)."""
    name = _std_string(impl["name"])
    parts = ['"%s"' % name] if name else []
    # The values part (autograd/tensor.hpp): a leaf keeps its own; an op's output has them only
    # while a Tensor or a backward closure holds them (a weak pointer), else "values freed".
    values = _shared_get(impl["leaf_values"])
    if values is None:
        values = _weak_get(impl["values"])
    data = None if values is None else _ArrayView(values.dereference()["array"])
    if data is None:
        shape = [int(d) for d in _vector_items(impl["shape_at_creation"])]
        parts.append(_shape_str(shape) + " float32")
    else:
        parts.append(_shape_str(data.shape) + " " + data.dtype)
    if bool(impl["requires_grad"]):
        parts.append("requires_grad")
    node = _shared_get(impl["grad_fn"])
    parts.append("grad_fn=" + _std_string(node.dereference()["op_"]) if node is not None else "leaf")
    grad = _array_of(_shown_grad(impl))
    parts.append("grad=" + _shape_str(grad.shape) if grad is not None else "grad=none")
    if data is None:
        parts.append("(values freed)")
        return " ".join(parts)
    values = data.summary(limit)
    parts.append(values[values.index(" ") + 1:])
    return " ".join(parts)


class ArrayPrinter:
    def __init__(self, value):
        self.value = value

    def to_string(self):
        def text():
            view = _ArrayView(self.value)
            return "%s %s" % (_ALIASES.get(view.dtype, "xt::xarray<%s>" % view.dtype), view.summary())
        return _safely(text)


class _ImplPrinterBase:
    """One line about the tensor; its gradient, when it has one, as a child."""

    prefix = ""

    def _impl(self):
        raise NotImplementedError

    def to_string(self):
        def text():
            impl = self._impl()
            return self.prefix + ("(undefined)" if impl is None else _impl_summary(impl))
        return _safely(text)

    def children(self):
        try:
            impl = self._impl()
            grad = None if impl is None else _shared_get(_shown_grad(impl))
        except (gdb.error, gdb.MemoryError):
            grad = None
        return [] if grad is None else [("grad", grad.dereference())]


class TensorImplPrinter(_ImplPrinterBase):
    prefix = "xtgrad::TensorImpl "

    def __init__(self, value):
        self.value = value

    def _impl(self):
        return self.value


class TensorPrinter(_ImplPrinterBase):
    prefix = "xtgrad::Tensor "

    def __init__(self, value):
        self.value = value

    def _impl(self):
        impl = _shared_get(self.value["impl_"])
        return None if impl is None else impl.dereference()


def _location(node):
    impl = node["where_"]["_M_impl"]
    if _ptr(impl) == 0:
        return "?"
    impl = impl.dereference()
    path = impl["_M_file_name"].string()
    while path.startswith("../"):
        path = path[3:]
    return "%s:%d" % (path, int(impl["_M_line"]))


class NodePrinter:
    """The op, its module and where it was created; its inputs as children."""

    def __init__(self, value):
        self.value = value

    def to_string(self):
        def text():
            node = self.value
            module = _std_string(node["module_path_"])
            line = "xtgrad::Node %s %s, created at %s" % (
                _std_string(node["op_"]), "in " + module if module else "(outside any module)", _location(node))
            return line + (" (released by backward)" if bool(node["released_"]) else "")
        return _safely(text)

    def children(self):
        try:
            items = _vector_items(self.value["inputs_"])
        except (gdb.error, gdb.MemoryError, _Unreadable):
            return []
        out = []
        for i, item in enumerate(items):
            impl = _shared_get(item)
            out.append(("input %d" % i, impl.dereference() if impl is not None else item["_M_ptr"]))
        return out


def build_pretty_printer():
    pp = gdb.printing.RegexpCollectionPrettyPrinter("xtgrad")
    pp.add_printer("Tensor", r"^xtgrad::Tensor$", TensorPrinter)
    pp.add_printer("TensorImpl", r"^xtgrad::TensorImpl$", TensorImplPrinter)
    pp.add_printer("Node", r"^xtgrad::Node$", NodePrinter)
    pp.add_printer("xarray", r"^xt::xarray_container<.*>$", ArrayPrinter)
    pp.add_printer("xtensor", r"^xt::xtensor_container<.*>$", ArrayPrinter)
    return pp


def register(objfile=None):
    gdb.printing.register_pretty_printer(objfile, build_pretty_printer(), replace=True)


# Sourcing again (or from several objfiles) replaces the printers; the parameter is made once.
if not getattr(gdb, "_xtgrad_max_values_parameter", None):
    gdb._xtgrad_max_values_parameter = _MaxValuesParameter()
register(None)
