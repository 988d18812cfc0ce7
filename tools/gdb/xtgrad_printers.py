# gdb pretty-printers for xtgrad (docs/debugging.md): arrays and tensors, and what the other
# printers build on. Nodes: xtgrad_node_printers.py; modules: xtgrad_module_printers.py.
#
#   (gdb) set print pretty on
#   (gdb) print gdb_target::w_q
#   $1 = xtgrad::Tensor "encoder.layers.0.enc_self_attn.W_Q.weight" (16,16) float32 requires_grad leaf grad=(16,16) = {
#     values = tensor([[ 0.1294, -0.0592, -0.2208, ...],
#                      ...], requires_grad=True),
#     grad = tensor([[-5.5671e-04, ...]])
#   }
#
# Printers for xtgrad::Tensor, TensorImpl and xtensor's xarray_container / xtensor_container
# (xtgrad::Array, Ids, Mask). Values print exactly as PyTorch's repr prints
# them (tools/gdb/xtgrad_repr.py, after torch/_tensor_str.py: nested brackets, one width per
# tensor, fixed/integer/scientific notation, precision 4, 80 columns, and beyond 1000 values only
# the first and last 3 rows and columns around "..."), for any rank, 0-d and empty included.
# A printer's first line is a
# one-line summary (so frame lines stay short: `node=xtgrad::Node ... = {...}`); the values, a
# tensor's gradient (labelled `grad`, or `incoming grad` while a backward is summing it) and a
# node's inputs and saved values are its children, best read with `set print pretty on`.
#
# They read memory only (through tools/gdb/xtgrad_memory.py: the shared_ptr, std::string,
# std::vector and xtensor uvector/svector members), never call into the program, so they work in
# optimised builds and on core files.
# libxtgrad carries the scripts of tools/gdb in its .debug_gdb_scripts section, so gdb loads them
# for any program linked with the library once the library's directory is trusted:
#   add-auto-load-safe-path /path/to/build        (in ~/.gdbinit, or gdb -iex "...")
# For a program that links xtgrad statically, or without auto-load (this file sources the repr,
# the memory readers and the node and module printers from beside itself):
#   (gdb) source /path/to/xtgrad/tools/gdb/xtgrad_printers.py
#   (gdb) source /path/to/xtgrad/tools/gdb/xtgrad_commands.py     (xt-node, xt-input, ...)
#
# `set xtgrad-threshold N`: print every value of arrays up to N values (torch.set_printoptions's
# threshold; default 1000).

import os
import re
import types

import gdb
import gdb.printing

# ---- what the printers build on: tools/gdb/xtgrad_repr.py and tools/gdb/xtgrad_memory.py ----
def _script_beside(script, published):
    """What tools/gdb/<script> publishes as gdb.<published>: run first from the library's section,
    or sourced here from beside this file. (it, None), or (None, what is missing)."""
    if getattr(gdb, published, None) is None:
        here = globals().get("__file__")
        sibling = os.path.join(os.path.dirname(os.path.abspath(here)), script) if here else None
        if sibling is None or not os.path.isfile(sibling):
            return None, "%s is missing: copy tools/gdb/%s beside the printers" % (sibling or script, script)
        gdb.execute("source " + sibling)
    return getattr(gdb, published), None


def _repr_functions():
    """xtgrad_repr.py's torch_repr and options. Without it the printers still load, and say where
    the values would be what is missing."""
    functions, missing = _script_beside("xtgrad_repr.py", "xtgrad_repr")
    if functions is None:
        gdb.write("xtgrad_printers.py: %s (the scripts of tools/gdb belong together); values print "
                  "as that message\n" % missing, gdb.STDERR)
        return types.SimpleNamespace(torch_repr=lambda *args, **kwargs: "(values: " + missing + ")",
                                     options={"threshold": 1000})
    return functions


_repr = _repr_functions()
torch_repr = _repr.torch_repr
_print = _repr.options  # set xtgrad-threshold writes options["threshold"]


class _ThresholdParameter(gdb.Parameter):
    """Arrays of more values than this print abbreviated (torch's print threshold)."""

    set_doc = "Set how many values an array may have and still print whole (torch's threshold)."
    show_doc = "Show how many values an array may have and still print whole."

    def __init__(self):
        super().__init__("xtgrad-threshold", gdb.COMMAND_DATA, gdb.PARAM_UINTEGER)
        self.value = _print["threshold"]

    def get_set_string(self):
        _print["threshold"] = self.value if self.value is not None else 1 << 62
        return ""

    def get_show_string(self, svalue):
        return "xtgrad prints arrays of up to %s values whole" % svalue


def _memory_functions():
    """xtgrad_memory.py's readers, or None: without them the printers could read nothing, so they
    say what is missing and are not registered (xtgrad's types print as plain structs)."""
    functions, missing = _script_beside("xtgrad_memory.py", "xtgrad_memory")
    if functions is None:
        gdb.write("xtgrad_printers.py: %s (the scripts of tools/gdb belong together); the printers "
                  "are not loaded\n" % missing, gdb.STDERR)
    return functions


# The readers under the names the printers use (and publish to the other scripts, see `helpers`).
_memory = _memory_functions()
if _memory is not None:
    (_Unreadable, _ptr, _std_string, _shared_get, _weak_get, _vector_items, _shape_str, _ArrayView,
     _safely) = (_memory.Unreadable, _memory.ptr, _memory.std_string, _memory.shared_get,
                 _memory.weak_get, _memory.vector_items, _memory.shape_str, _memory.ArrayView,
                 _memory.safely)


# ---- children, and where they are printed ----
# A value's torch repr spans lines; gdb indents only the first (two spaces per level with
# `set print pretty on`). So the printers' children() note each child's depth and label while gdb
# prints it, and the repr indents its later lines to match.
_printing = []  # (depth, label, suffixes) of the children being printed, innermost last


def _depth():
    return _printing[-1][0] if _printing else 0


def _children(items):
    """Yields (label, value) for gdb; items are (label, value, repr suffixes)."""
    depth = _depth() + 1
    for label, value, suffixes in items:
        _printing.append((depth, label, suffixes))
        try:
            yield label, value
        finally:
            _printing.pop()


def _child_column():
    if not _printing or not gdb.parameter("print pretty"):
        return 0
    depth, label, _ = _printing[-1]
    return 2 * depth + len(label) + len(" = ")


# A child shown as a full repr is the array itself, volatile-qualified: the marker that selects
# _ReprPrinter (nothing in xtgrad declares a volatile array).
def _as_repr(array_value):
    if array_value.type.code in (gdb.TYPE_CODE_REF, gdb.TYPE_CODE_RVALUE_REF):
        array_value = array_value.referenced_value()
    return array_value.cast(array_value.type.volatile())


def _values_repr(view, suffixes=(), column=0):
    """An _ArrayView's values as torch prints them: tensor([...])."""
    if view.code is None:
        return "<%s values of element type %s>" % (_shape_str(view.shape), view.dtype)
    return torch_repr(view.read, view.shape, view.dtype, suffixes, column)


class _ReprPrinter:
    """A child: tensor([...]) as torch prints it."""

    def __init__(self, value):
        self.value = value
        self.suffixes = _printing[-1][2] if _printing else ()
        self.column = _child_column()

    def to_string(self):
        return _safely(lambda: _values_repr(_ArrayView(self.value), self.suffixes, self.column))


def _array_of(shared):
    pointer = _shared_get(shared)
    return None if pointer is None else pointer.dereference()


def _grad_of(impl):
    """(label, Array value) of the gradient shown: .grad, or during a backward the gradient summed
    so far into a tensor whose node has not run yet (its `incoming`); None when there is none."""
    if _shared_get(impl["grad"]) is not None:
        return "grad", _array_of(impl["grad"])
    if _shared_get(impl["incoming"]) is not None:
        return "incoming grad", _array_of(impl["incoming"])
    return None


def _values_of(impl):
    """The Array value of a TensorImpl's values, or None once they are freed: a leaf keeps its own;
    an op's output has them only while a Tensor or a backward closure holds them (a weak pointer)."""
    values = _shared_get(impl["leaf_values"])
    if values is None:
        values = _weak_get(impl["values"])
    return None if values is None else values.dereference()["array"]


def _op_of(impl):
    node = _shared_get(impl["grad_fn"])
    return None if node is None else _std_string(node.dereference()["op_"])


def _grad_suffixes(impl):
    """torch's repr suffixes: grad_fn=<Op> or requires_grad=True."""
    op = _op_of(impl)
    if op is not None:
        return ("grad_fn=<%s>" % op,)
    return ("requires_grad=True",) if bool(impl["requires_grad"]) else ()


def _impl_summary(impl, values=None, named=True):
    """One line about a TensorImpl (a gdb.Value, not a pointer); `values`: an Array value to use
    instead of the impl's own (a Tensor handle's); named=False leaves out its name."""
    name = _std_string(impl["name"]) if named else ""
    parts = ['"%s"' % name] if name else []
    if values is None:
        values = _values_of(impl)
    if values is None:
        parts.append(_shape_str([int(d) for d in _vector_items(impl["shape_at_creation"])]) + " float32")
    else:
        view = _ArrayView(values)
        parts.append(_shape_str(view.shape) + " " + view.dtype)
    if bool(impl["requires_grad"]):
        parts.append("requires_grad")
    op = _op_of(impl)
    parts.append("grad_fn=" + op if op is not None else "leaf")
    grad = _grad_of(impl)
    parts.append("grad=none" if grad is None else "%s=%s" % (grad[0].replace(" ", "_"), _shape_str(_ArrayView(grad[1]).shape)))
    if values is None:
        parts.append("(values freed)")
    return " ".join(parts)


def _impl_children(impl, values=None):
    if values is None:
        values = _values_of(impl)
    items = []
    if values is not None:
        items.append(("values", _as_repr(values), _grad_suffixes(impl)))
    grad = _grad_of(impl)
    if grad is not None:
        items.append((grad[0], _as_repr(grad[1]), ()))
    return items


_ALIASES = {"float32": "xtgrad::Array", "int64": "xtgrad::Ids", "bool": "xtgrad::Mask"}


class ArrayPrinter:
    """xtgrad::Array (1,7,16) = {values = tensor([...])}"""

    def __init__(self, value):
        self.value = value

    def to_string(self):
        def text():
            view = _ArrayView(self.value)
            return "%s %s" % (_ALIASES.get(view.dtype, "xt::xarray<%s>" % view.dtype), _shape_str(view.shape))
        return _safely(text)

    def children(self):
        return _children([("values", _as_repr(self.value), ())])


class _ImplPrinterBase:
    """One line about the tensor; its values and its gradient as children."""

    prefix = ""

    def _impl(self):
        raise NotImplementedError

    def _values(self):
        return None

    def to_string(self):
        def text():
            impl = self._impl()
            return self.prefix + ("(undefined)" if impl is None else _impl_summary(impl, self._values()))
        return _safely(text)

    def children(self):
        try:
            impl = self._impl()
            items = [] if impl is None else _impl_children(impl, self._values())
        except (gdb.error, gdb.MemoryError, _Unreadable):
            items = []
        return _children(items)


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

    def _values(self):  # the handle's own values: a non-leaf's are alive while the handle is
        values = _shared_get(self.value["values_"])
        return None if values is None else values.dereference()["array"]


class _ParameterPrinter:
    """A module's parameter: shape, dtype, flags (its dotted name is the label)."""

    def __init__(self, value):
        self.value = value

    def to_string(self):
        return _safely(lambda: _impl_summary(self.value, named=False))


class _InputPrinter:
    """A node's input: its one-line summary (its values and gradient: print the tensor itself)."""

    def __init__(self, value):
        self.value = value

    def to_string(self):
        return _safely(lambda: _impl_summary(self.value))


_PRINTERS = [
    (r"^xtgrad::Tensor$", TensorPrinter),
    (r"^xtgrad::TensorImpl$", TensorImplPrinter),
    (r"^xt::xarray_container<.*>$", ArrayPrinter),
    (r"^xt::xtensor_container<.*>$", ArrayPrinter),
]
# The printers of the scripts that run after this one, each a function (value, its type's tag) ->
# printer or None: "nodes" (xtgrad_node_printers.py), "modules" (xtgrad_module_printers.py).
# By name, so a script run again replaces its own.
_more_lookups = {}


def _lookup(value):
    """The printer of a value; a volatile array is a child to print as a repr, a const TensorImpl a
    node's input (one line)."""
    if value.type.code in (gdb.TYPE_CODE_REF, gdb.TYPE_CODE_RVALUE_REF):  # a frame's `const Node& node`
        value = value.referenced_value()
    value_type = value.type
    tag = value_type.unqualified().strip_typedefs().tag
    if tag is None:
        return None
    qualifiers = str(value_type).split(" ")
    if tag == "xtgrad::TensorImpl" and "volatile" in qualifiers:  # a module's parameter
        return _ParameterPrinter(value)
    for pattern, printer in _PRINTERS:
        if re.match(pattern, tag):
            if printer is ArrayPrinter and "volatile" in qualifiers:
                return _ReprPrinter(value)
            if printer is TensorImplPrinter and qualifiers[0] == "const" and _printing and _printing[-1][1].startswith("input"):
                return _InputPrinter(value)
            return printer(value)
    for more in _more_lookups.values():
        printer = more(value, tag)
        if printer is not None:
            return printer
    return None


def register(objfile=None):
    # Replaces an earlier registration (sourcing again, or several objfiles carrying the script).
    gdb.pretty_printers[:] = [p for p in gdb.pretty_printers if getattr(p, "__name__", "") != "xtgrad_lookup"]
    _lookup.__name__ = "xtgrad_lookup"
    gdb.pretty_printers.append(_lookup)


def _source_the_others():
    """Sourced by hand, the printers source the node and module printers from beside this file;
    from the library's section (an objfile loading) gdb runs them next by itself."""
    here = globals().get("__file__")
    if gdb.current_objfile() is not None or not here:
        return
    folder = os.path.dirname(os.path.abspath(here))
    missing = []
    for name in ("xtgrad_node_printers.py", "xtgrad_module_printers.py"):
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            gdb.execute("source " + path)
        else:
            missing.append(path)
    if missing:
        gdb.write("xtgrad_printers.py: %s not found: copy what is missing from tools/gdb beside the printers (the "
                  "scripts of tools/gdb belong together); until then what it prints shows as plain structs\n"
                  % " and ".join(missing), gdb.STDERR)


# What the node and module printers and xtgrad_commands.py (xt-node, xt-input, ...) use: the scripts
# share gdb's __main__, so each reaches another's names only through what it publishes on `gdb`.
class _Helpers:
    pass


if _memory is not None:  # else _memory_functions said what is missing
    helpers = _Helpers()
    for _name in ("torch_repr", "_ArrayView", "_values_repr", "_impl_summary", "_grad_of", "_values_of", "_shared_get",
                  "_weak_get", "_vector_items", "_std_string", "_ptr", "_shape_str", "_as_repr", "_Unreadable",
                  "_safely", "_grad_suffixes", "_children", "_more_lookups"):
        setattr(helpers, _name.lstrip("_"), globals()[_name])
    gdb.xtgrad_printers = helpers

    if not getattr(gdb, "_xtgrad_threshold_parameter", None):
        gdb._xtgrad_threshold_parameter = _ThresholdParameter()
    register(None)
    _source_the_others()
