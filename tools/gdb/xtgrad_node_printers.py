# gdb pretty-printers for xtgrad's backward nodes (docs/debugging.md): an xtgrad::Node's op, its
# module and where it was created, with its inputs and what its backward saved as children, and
# the BitMask a node saves instead of a tensor (relu's, dropout's).
#
#   (gdb) print node
#   $1 = xtgrad::Node SoftmaxBackward in encoder.layers.0.enc_self_attn, created at autograd/ops/softmax.cpp:40 = {
#     input 0 = (1,2,7,7) float32 requires_grad grad_fn=MaskedFillBackward grad=none (values freed),
#     saved result = tensor([[[[0.1429, ...
#   }
#
# Built on the tensor printers (tools/gdb/xtgrad_printers.py), which run first and publish what
# they read memory with as gdb.xtgrad_printers; sourced by hand, they source this file. It adds
# the node helpers xtgrad_commands.py uses (saved_records, saved_array, location) to that set.

import gdb

_core = getattr(gdb, "xtgrad_printers", None)  # None: this file sourced alone


def _location(node):
    where = node["where_"]  # xtgrad::SourceLocation {file, function, line}
    if _core.ptr(where["file"]) == 0:
        return "?"
    path = where["file"].string()
    while path.startswith("../"):
        path = path[3:]
    return "%s:%d" % (path, int(where["line"]))


def _saved_records(node):
    """[(name, Saved value)] of a node's saved values (Node::saved_names(): a std::vector of
    {const char* name; Saved value}); [] for a node that saved nothing or a build without them."""
    for field in node.type.strip_typedefs().fields():
        if field.name is None or "vector" not in str(field.type.strip_typedefs()):
            continue
        try:
            items = _core.vector_items(node[field.name])
        except (gdb.error, _core.Unreadable):
            continue
        try:
            element = field.type.strip_typedefs().template_argument(0).strip_typedefs()
            names = [f.name for f in element.fields()]
        except (gdb.error, RuntimeError, TypeError):
            continue
        if "name" in names and "value" in names:
            return [(item["name"].string(), item["value"]) for item in items]
    return []


def _has_field(value, name):
    return any(f.name == name for f in value.type.strip_typedefs().fields())


def _saved_array(saved):
    """(array value or None, note) of a Saved (Saved, autograd/node.hpp): its float values (a tensor's,
    with a note when they were modified in place since the save: the backward would throw), or
    its ids or mask. A tensor saved as its recipe (autograd/recompute.hpp) shows the values it
    stands for while anything holds them, else a note that backward makes them again."""
    values = _core.shared_get(saved["values_"])
    recipe = _core.shared_get(saved["recompute_"]) if _has_field(saved, "recompute_") else None
    if values is None and recipe is not None:
        values = _core.weak_get(recipe.dereference()["made"])
        if values is None:
            return None, " (values freed: made again from %s's saved values when this node runs)" % (
                recipe.dereference()["what"].string())
    if values is not None:
        values = values.dereference()
        now, then = int(values["version"]), int(saved["version_"])
        note = "" if now == then else " (modified in place since saved: version %d, saved at %d)" % (now, then)
        return values["array"], note
    for field in ("ids_", "mask_", "bits_"):
        if _has_field(saved, field):
            other = _core.shared_get(saved[field])
            if other is not None:
                return other.dereference(), ""
    return None, " (none)"


def _saved_tensor(saved):
    """The TensorImpl address a Saved was taken from, or 0 (expired or absent)."""
    try:
        impl = _core.weak_get(saved["tensor_"])
    except gdb.error:
        return 0
    return 0 if impl is None else _core.ptr(impl)


def _node_items(node):
    """A node's children: its inputs (labelled with the name their values were saved under),
    then each saved value, by name, in full."""
    saved = _saved_records(node)
    saved_as = {}
    for name, value in saved:
        address = _saved_tensor(value)
        if address:
            saved_as.setdefault(address, name)
    items = []
    for i, item in enumerate(_core.vector_items(node["inputs_"])):
        impl = _core.shared_get(item)
        if impl is None:
            items.append(("input %d" % i, item["_M_ptr"], ()))
            continue
        name = saved_as.get(_core.ptr(impl))
        label = "input %d" % i + (" (saved as %s)" % name if name else "")
        items.append((label, impl.dereference().cast(impl.dereference().type.const()), ()))
    for name, value in saved:
        array, note = _saved_array(value)
        label = "saved " + name + note
        if array is None:
            if note.startswith(" (values freed"):
                items.append(("saved " + name, note.strip(), ()))
            continue
        items.append((label, _core.as_repr(array), ()))
    return items


class NodePrinter:
    """The op, its module and where it was created; its inputs and saved values as children."""

    def __init__(self, value):
        self.value = value

    def to_string(self):
        def text():
            node = self.value
            module = _core.std_string(node["module_path_"])
            line = "xtgrad::Node %s %s, created at %s" % (
                _core.std_string(node["op_"]), "in " + module if module else "(outside any module)", _location(node))
            # recorded while a backward ran with create_graph (Node::backward_depth), as Graphviz marks it
            depth = int(node["backward_depth_"]) if _has_field(node, "backward_depth_") else 0
            line += ", recorded by backward pass %d" % depth if depth else ""
            return line + (" (released by backward)" if bool(node["released_"]) else "")
        return _core.safely(text)

    def children(self):
        try:
            items = _node_items(self.value)
        except (gdb.error, gdb.MemoryError, _core.Unreadable):
            items = []
        return _core.children(items)


class BitMaskPrinter:
    """xtgrad::BitMask (2,3): 2 of 6 set = {bits = 001100} (relu's result_positive, dropout's mask: a bit
    per element, autograd/bit_mask.hpp); the count and the bits only for masks of up to 4096 elements."""

    def __init__(self, value):
        self.value = value

    def _bits(self):
        size = int(self.value["size_"])
        if size > 4096:
            return size, None
        words = [int(w) for w in _core.vector_items(self.value["words_"])]
        return size, "".join(str((words[i // 32] >> (i % 32)) & 1) for i in range(size))

    def to_string(self):
        def text():
            shape = [int(d) for d in _core.vector_items(self.value["shape_"])]
            size, bits = self._bits()
            counted = "" if bits is None else ": %d of %d set" % (bits.count("1"), size)
            return "xtgrad::BitMask %s%s" % (_core.shape_str(shape), counted)
        return _core.safely(text)

    def children(self):
        bits = _core.safely(lambda: self._bits()[1])
        return iter([]) if bits is None else iter([("bits", bits)])


_NODE_PRINTERS = {"xtgrad::Node": NodePrinter, "xtgrad::BitMask": BitMaskPrinter}


def _node_lookup(value, tag):
    printer = _NODE_PRINTERS.get(tag)
    return None if printer is None else printer(value)


if _core is None:
    gdb.write("xtgrad_node_printers.py: source tools/gdb/xtgrad_printers.py, which sources this file\n", gdb.STDERR)
else:
    _core.saved_records, _core.saved_array, _core.location = _saved_records, _saved_array, _location
    _core.more_lookups["nodes"] = _node_lookup
