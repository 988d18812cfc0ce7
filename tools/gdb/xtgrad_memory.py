# Reading xtgrad's values from the debugged program's memory, for the gdb printers and commands
# (tools/gdb/xtgrad_printers.py, docs/debugging.md): std::string, std::shared_ptr / weak_ptr and
# std::vector members, and an xtensor container's shape, dtype and values (_ArrayView). Memory
# only, never a call into the program, so it works in optimised builds and on core files.
#
# The library's .debug_gdb_scripts section runs this file before the printers; sourced by hand,
# the printers source it from beside themselves. Either way it is published as gdb.xtgrad_memory.

import struct
import types

import gdb


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
_MAX_NDIM = 16
_MAX_NUMEL = 1 << 40


def _std_array(value):
    elems = value["_M_elems"]
    count = elems.type.strip_typedefs().range()[1] + 1
    return [elems[i] for i in range(count)]


def _shape_str(shape):
    return "(" + ",".join(str(d) for d in shape) + ")"


class _ArrayView:
    """Shape, dtype and values of an xtensor container, read from its members (the printers
    print the values as torch does: _values_repr in xtgrad_printers.py)."""

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

    def read(self, offset, count):
        if offset < 0 or offset + count > self.numel:
            raise _Unreadable("values %d..%d of %d" % (offset, offset + count, self.numel))
        return _read(self.begin + offset * self.size, count, self.code, self.size)


def _safely(fn):
    """fn()'s text, or "<unreadable: why>" when the memory it reads is not what it should be."""
    try:
        return fn()
    except (gdb.error, gdb.MemoryError, _Unreadable, RuntimeError, ValueError, struct.error) as e:
        return "<unreadable: %s>" % e


gdb.xtgrad_memory = types.SimpleNamespace(
    Unreadable=_Unreadable, read=_read, ptr=_ptr, std_string=_std_string, shared_get=_shared_get,
    weak_get=_weak_get, vector_items=_vector_items, std_array=_std_array, shape_str=_shape_str,
    ArrayView=_ArrayView, safely=_safely)
