# gdb pretty-printers for xtgrad's modules (docs/debugging.md): any class derived from
# xtgrad::nn::Module, by its dynamic type, with its path and its parameters (as named_parameters()
# lists them, dotted names relative to the module) as children.
#
#   (gdb) print *gdb_target::attention
#   $1 = xtgrad::nn::tutorial_c::MultiHeadAttention "encoder.layers.0.enc_self_attn", 10 parameters (1,120 values), training = {
#     W_Q.weight = (16,16) float32 requires_grad leaf grad=none,
#     ...
#
# Built on the tensor printers (tools/gdb/xtgrad_printers.py), which run first and publish what
# they read memory with as gdb.xtgrad_printers; sourced by hand, they source this file.

import gdb

_core = getattr(gdb, "xtgrad_printers", None)  # None: this file sourced alone

_MODULE = "xtgrad::nn::Module"
_is_module_cache = {}


def _is_module(value_type):
    """Whether a struct type is xtgrad::nn::Module or derives from it (cached by tag)."""
    tag = value_type.tag
    if tag not in _is_module_cache:
        _is_module_cache[tag] = False  # a recursive look-up ends here
        try:
            found = tag == _MODULE or any(f.is_base_class and _is_module(f.type.strip_typedefs())
                                          for f in value_type.fields())
        except (gdb.error, TypeError):
            found = False
        _is_module_cache[tag] = found
    return _is_module_cache[tag]


def _module_base(value):
    """The xtgrad::nn::Module part of a module value."""
    return value.cast(gdb.lookup_type(_MODULE)) if value.type.strip_typedefs().tag != _MODULE else value


def _module_field(address, name):
    """A field of the Module at `address`, read by its offset: dereferencing a Module pointer
    would make gdb look up the dynamic type and warn about classes without RTTI symbols."""
    module_type = gdb.lookup_type(_MODULE)
    field = next(f for f in module_type.fields() if f.name == name)
    return gdb.Value(address + field.bitpos // 8).cast(field.type.pointer()).dereference()


def _module_parameters(module, prefix=""):
    """[(dotted name relative to the module, TensorImpl value)] in torch's order: a module's own
    parameters, then its children's, recursively (named_parameters(); a tied tensor once)."""
    out, seen, stack = [], set(), [(prefix, int(module.address))]
    while stack:
        at, address = stack.pop()
        for pair in _core.vector_items(_module_field(address, "params_")):
            impl = _core.shared_get(pair["second"]["impl_"])
            if impl is None or _core.ptr(impl) in seen:
                continue
            seen.add(_core.ptr(impl))
            out.append((at + _core.std_string(pair["first"]), impl.dereference()))
        children = []
        for pair in _core.vector_items(_module_field(address, "children_")):
            child = _core.shared_get(pair["second"])
            if child is not None:
                children.append((at + _core.std_string(pair["first"]) + ".", _core.ptr(child)))
        stack.extend(reversed(children))
    return out


class ModulePrinter:
    """xtgrad::nn::tutorial_c::MultiHeadAttention "encoder.layers.0.enc_self_attn", 6 parameters
    (1,088 values), training = {W_Q.weight = (16,16) float32 requires_grad leaf grad=none, ...}"""

    def __init__(self, value):
        self.value = value

    def _type_name(self):
        try:
            return str(self.value.dynamic_type.strip_typedefs().unqualified())
        except gdb.error:
            return str(self.value.type.strip_typedefs().unqualified())

    def to_string(self):
        def text():
            base = _module_base(self.value)
            path = _core.std_string(base["path_"])
            params = _module_parameters(base)
            count = 0
            for _, impl in params:
                values = _core.values_of(impl)
                shape = _core.ArrayView(values).shape if values is not None else \
                    [int(d) for d in _core.vector_items(impl["shape_at_creation"])]
                size = 1
                for d in shape:
                    size *= d
                count += size
            return '%s %s, %d parameter%s (%s values), %s' % (
                self._type_name(), '"%s"' % path if path else "(the root module)", len(params),
                "" if len(params) == 1 else "s", "{:,}".format(count),
                "training" if bool(base["training_"]) else "eval")
        return _core.safely(text)

    def children(self):
        try:
            items = [(name, impl.cast(impl.type.const().volatile()), ())
                     for name, impl in _module_parameters(_module_base(self.value))]
        except (gdb.error, gdb.MemoryError, _core.Unreadable):
            items = []
        return _core.children(items)


def _module_lookup(value, tag):
    value_type = value.type.strip_typedefs()
    if value_type.code == gdb.TYPE_CODE_STRUCT and not tag.startswith(("std::", "xt::", "__gnu")) and \
            _is_module(value_type.unqualified()):
        return ModulePrinter(value)
    return None


if _core is None:
    gdb.write("xtgrad_module_printers.py: source tools/gdb/xtgrad_printers.py, which sources this file\n", gdb.STDERR)
else:
    _core.more_lookups["modules"] = _module_lookup
