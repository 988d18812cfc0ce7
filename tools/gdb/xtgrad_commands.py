# gdb commands that walk xtgrad's backward graph (docs/debugging.md, "Walk the graph").
#
#   xt-node [EXPR]   the node to look at: with EXPR, the grad_fn of a Tensor / TensorImpl (or a
#                    Node itself); without, the node of the selected frame or of a frame above it
#                    (an op's backward closure `self`, the engine's `node`), else the node the
#                    engine is about to run (xtgrad::debug::state). Prints it and starts a walk.
#   xt-input N       go down to the node that produced input N (a leaf is printed, not entered)
#   xt-saved         what this node saved for its backward, by name, as torch prints it
#   xt-grad          the gradient arriving at this node (d loss / d its output)
#   xt-up            back to the node you came from
#
# After the program runs on (`continue`, `next`) to a stop in another node, the walk restarts at
# that node by itself: xt-grad, xt-saved, xt-input then start from it.
#
# They read memory only (as the printers, tools/gdb/xtgrad_printers.py, which must be loaded
# first), so they work in any build and from any frame. $xt_node and $xt_grad hold the node and
# the gradient the last command showed, for `print`.

import gdb

# stack: [(node address, output TensorImpl address or 0, how we got there)]; frame_grad: (node
# address, Array value) of the gradient an engine frame holds for its node (before_node's
# grad_out, a backward closure's g); stale: the program ran since the walk started.
_walk = {"stack": [], "frame_grad": None, "stale": False}


class _Stop(Exception):
    """A message for the user instead of a traceback."""


def _p():
    helpers = getattr(gdb, "xtgrad_printers", None)
    if helpers is None:
        raise _Stop("the xtgrad pretty-printers are not loaded (source tools/gdb/xtgrad_printers.py)")
    return helpers


def _type(name):
    try:
        return gdb.lookup_type(name)
    except gdb.error:
        raise _Stop("gdb knows no type %s here: is the program linked with libxtgrad (built with its debug entry points)?"
                    % name)


# The Node and TensorImpl types of the values the walk started from: a program and its library
# each describe them, and the copy that came with a value is the one that matches its memory.
_types = {}


def _remember(kind, value_type):
    _types[kind] = value_type.strip_typedefs().unqualified()


def _node_at(address):
    node_type = _types.get("node") or _type("xtgrad::Node")
    return gdb.Value(address).cast(node_type.pointer()).dereference()


def _impl_at(address):
    impl_type = _types.get("impl") or _type("xtgrad::TensorImpl")
    return gdb.Value(address).cast(impl_type.pointer()).dereference()


def _tag(value_type):
    value_type = value_type.strip_typedefs()
    if value_type.code in (gdb.TYPE_CODE_REF, gdb.TYPE_CODE_RVALUE_REF, gdb.TYPE_CODE_PTR):
        value_type = value_type.target().strip_typedefs()
    return value_type.unqualified().tag or ""


def _deref(value):
    code = value.type.strip_typedefs().code
    if code in (gdb.TYPE_CODE_REF, gdb.TYPE_CODE_RVALUE_REF):
        return value.referenced_value()
    if code == gdb.TYPE_CODE_PTR:
        if int(value) == 0:
            raise _Stop("the pointer is null")
        return value.dereference()
    return value


def _from_expression(text):
    """(node address, output impl address) of what EXPR names."""
    p = _p()
    value = _deref(gdb.parse_and_eval(text))
    tag = _tag(value.type)
    if tag.startswith("std::shared_ptr<") or tag.startswith("std::__shared_ptr<"):
        pointer = p.shared_get(value)
        if pointer is None:
            raise _Stop("%s is a null shared_ptr" % text)
        value = pointer.dereference()
        tag = _tag(value.type)
    if tag == "xtgrad::Node":
        _remember("node", value.type)
        return int(value.address), 0
    if tag == "xtgrad::Tensor":
        impl = p.shared_get(value["impl_"])
        if impl is None:
            raise _Stop("%s is an undefined tensor" % text)
        value, tag = impl.dereference(), "xtgrad::TensorImpl"
    if tag == "xtgrad::TensorImpl":
        node = p.shared_get(value["grad_fn"])
        if node is None:
            raise _Stop("%s is a leaf: no node produced it\n  %s" % (text, p.impl_summary(value)))
        _remember("impl", value.type)
        _remember("node", node.type.target())
        return int(node), int(value.address)
    raise _Stop("%s is a %s, not a Tensor, TensorImpl or Node" % (text, value.type))


def _engine_state():
    try:
        return gdb.parse_and_eval("xtgrad::debug::state")
    except gdb.error:
        return None


def _frame_grad(frame, block):
    """The float Array argument of the frame whose Node it is (the engine's grad_out, a backward
    closure's g): the gradient arriving at that node, there from the frame's first line."""
    while block is not None and not block.is_global:
        for symbol in block:
            if not symbol.is_argument:
                continue
            tag = _tag(symbol.type)
            if tag.startswith("xt::xarray_container<") and "<float" in tag:
                try:
                    return _deref(symbol.value(frame))
                except gdb.error:
                    return None
        if block.function is not None:
            break
        block = block.superblock
    return None


def _from_frames():
    """(node address, 0, how) of the first frame, from the selected one outwards, that has a Node
    argument or local (`node`, a backward closure's `self`, Node::run's `this`); else the node the
    engine is at, while it has one to run."""
    frame = gdb.selected_frame()
    for level in range(64):
        if frame is None:
            break
        try:
            block = frame.block()
        except RuntimeError:
            block = None
        while block is not None and not block.is_global:
            for symbol in block:
                if not (symbol.is_argument or symbol.is_variable) or _tag(symbol.type) != "xtgrad::Node":
                    continue
                try:
                    value = _deref(symbol.value(frame))
                    _remember("node", value.type)
                    where = "this frame" if level == 0 else "frame %s" % (frame.level() if hasattr(frame, "level") else level)
                    grad = _frame_grad(frame, block)
                    _walk["frame_grad"] = None if grad is None else (int(value.address), grad)
                    return int(value.address), 0, "`%s` of %s (%s)" % (symbol.name, where, frame.name())
                except (gdb.error, _Stop):
                    continue
            if block.function is not None:
                break
            block = block.superblock
        frame = frame.older()
    state = _engine_state()
    if state is not None and int(state["node"]) != 0 and int(state["grad_out"]) != 0:
        _remember("node", state["node"].type.target())
        return int(state["node"]), 0, "the node the engine is running (xtgrad::debug::state)"
    raise _Stop("no backward node here: this frame is not inside a backward. Name a tensor: xt-node loss")


def _arriving_grad(node_address, output_address):
    """(Array value, note) of the gradient arriving at the node, or (None, why)."""
    p = _p()
    state = _engine_state()
    if state is not None and int(state["node"]) == node_address and int(state["grad_out"]) != 0:
        return state["grad_out"].dereference(), "the engine is at this node"
    if _walk["frame_grad"] is not None and _walk["frame_grad"][0] == node_address:
        return _walk["frame_grad"][1], "the engine is at this node"
    if output_address:
        impl = _impl_at(output_address)
        grad = p.grad_of(impl)
        if grad is not None:
            note = "summed so far: the node has not run yet" if grad[0] == "incoming grad" else "its output's .grad"
            return grad[1], note
        return None, "no gradient is held for its output (none arrived yet, or the node has run and let it go; retain_grad() keeps it)"
    return None, "unknown: reach this node from a tensor (xt-node TENSOR) or through xt-input"


def _current():
    """The walk's node. After the program ran (a stop at another node: `continue`, `next`), the
    walk restarts at the node of the new stop's frames; a walk from a tensor in user code stays."""
    if _walk["stale"] or not _walk["stack"]:
        _walk["stale"] = False
        try:
            node, output, how = _from_frames()
        except _Stop:
            if not _walk["stack"]:
                raise
        else:
            if not _walk["stack"] or _walk["stack"][0][0] != node:
                _walk["stack"] = [(node, output, how)]
                gdb.write("[xt 0] %s, %s\n" % (_p().std_string(_node_at(node)["op_"]), how))
    return _walk["stack"][-1]


def _on_stop(event):
    _walk["stale"] = True
    _walk["frame_grad"] = None


def _show(entry):
    node_address, output_address, how = entry
    node = _node_at(node_address)
    gdb.set_convenience_variable("xt_node", node)
    grad, _ = _arriving_grad(node_address, output_address)
    if grad is not None:
        gdb.set_convenience_variable("xt_grad", grad)
    depth = len(_walk["stack"]) - 1
    text = node.format_string(pretty_structs=True)
    gdb.write("[xt %d] %s\n%s\n" % (depth, how, text))


class _Command(gdb.Command):
    def __init__(self, name):
        super().__init__(name, gdb.COMMAND_DATA)

    def invoke(self, argument, from_tty):
        try:
            self.run(argument.strip())
        except _Stop as stop:
            gdb.write("%s: %s\n" % (self.name, stop))
        except (gdb.error, gdb.MemoryError) as e:
            gdb.write("%s: %s\n" % (self.name, e))


class XtNode(_Command):
    """Show a backward node and start a walk there: xt-node [TENSOR | NODE]."""

    name = "xt-node"

    def __init__(self):
        super().__init__(self.name)

    def run(self, argument):
        if argument:
            node, output = _from_expression(argument)
            how = "node of %s" % argument
        else:
            node, output, how = _from_frames()
        _walk["stack"], _walk["stale"] = [(node, output, how)], False
        _show(_walk["stack"][-1])


class XtInput(_Command):
    """Go down to the node that produced input N of this node: xt-input N."""

    name = "xt-input"

    def __init__(self):
        super().__init__(self.name)

    def run(self, argument):
        p = _p()
        if not argument.isdigit():
            raise _Stop("usage: xt-input N (an input index, see xt-node)")
        index = int(argument)
        node_address, _, _ = _current()
        node = _node_at(node_address)
        inputs = p.vector_items(node["inputs_"])
        if index >= len(inputs):
            raise _Stop("%s has %d inputs (0..%d)" % (p.std_string(node["op_"]), len(inputs), len(inputs) - 1)
                        if inputs else "%s has no inputs (released by backward?)" % p.std_string(node["op_"]))
        impl = p.shared_get(inputs[index])
        if impl is None:
            raise _Stop("input %d is absent" % index)
        below = p.shared_get(impl.dereference()["grad_fn"])
        if below is None:
            gdb.write("input %d is a leaf (no node below it):\n%s\n"
                      % (index, impl.dereference().format_string(pretty_structs=True)))
            return
        _walk["stack"].append((int(below), int(impl), "input %d of %s" % (index, p.std_string(node["op_"]))))
        _show(_walk["stack"][-1])


class XtSaved(_Command):
    """What this node saved for its backward, by name: xt-saved."""

    name = "xt-saved"

    def __init__(self):
        super().__init__(self.name)

    def run(self, argument):
        p = _p()
        node_address = _current()[0]
        node = _node_at(node_address)
        op = p.std_string(node["op_"])
        records = p.saved_records(node)
        if bool(node["released_"]):
            raise _Stop("%s was released by backward: what it saved is freed" % op)
        if not records:
            gdb.write("%s saved no values\n" % op)
            return
        gdb.write("%s saved %s\n" % (op, ", ".join(name for name, _ in records)))
        for name, value in records:
            array, note = p.saved_array(value)
            label = "  %s%s = " % (name, note)
            gdb.write(label + ("(none)" if array is None else p.values_repr(p.ArrayView(array), (), len(label))) + "\n")


class XtGrad(_Command):
    """The gradient arriving at this node (d loss / d its output): xt-grad."""

    name = "xt-grad"

    def __init__(self):
        super().__init__(self.name)

    def run(self, argument):
        p = _p()
        node_address, output_address, _ = _current()
        op = p.std_string(_node_at(node_address)["op_"])
        grad, note = _arriving_grad(node_address, output_address)
        if grad is None:
            gdb.write("gradient arriving at %s: %s\n" % (op, note))
            return
        gdb.set_convenience_variable("xt_grad", grad)
        view = p.ArrayView(grad)
        gdb.write("gradient arriving at %s %s (%s):\n%s\n" % (op, p.shape_str(view.shape), note, p.values_repr(view)))


class XtUp(_Command):
    """Back to the node you came from: xt-up."""

    name = "xt-up"

    def __init__(self):
        super().__init__(self.name)

    def run(self, argument):
        if len(_walk["stack"]) < 2:
            raise _Stop("already at the node the walk started from")
        _walk["stack"].pop()
        _show(_walk["stack"][-1])


for _command in (XtNode, XtInput, XtSaved, XtGrad, XtUp):
    _command()

# One stop handler, also when the script is sourced again or carried by several objfiles.
if getattr(gdb, "_xtgrad_stop_handler", None) is not None:
    gdb.events.stop.disconnect(gdb._xtgrad_stop_handler)
gdb._xtgrad_stop_handler = _on_stop
gdb.events.stop.connect(_on_stop)
