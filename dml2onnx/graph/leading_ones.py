"""The `cuda` target's whole-model rewrite that drops the leading dimensions of size 1 from the values
between element-wise operators and normalizations: DirectML's graph holds a transformer's hidden
states as [1, 1, tokens, width] tensors, its GEMMs read them as matrices and its layer normalization
as [1, tokens, width], so the lowered graph reshaped them back and forth around every GEMM, and
each Reshape is a node ONNX Runtime dispatches (at batch 1 a node's dispatch costs about as much as
its kernel). With the leading ones gone the Reshapes between a GEMM and the next are the identity
and go; no value changes, only shapes lose dimensions of 1.

A component is a set of values joined by operators whose result does not depend on leading
dimensions of 1 (element-wise ones, broadcasting from the right; LayerNormalization and Softmax
over trailing axes), and fed or read through Reshapes; a component is rewritten only where every
operator in it still sees shapes that broadcast to its result, and no value of it is a graph output
or read by another kind of operator."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import onnx
from onnx import numpy_helper

from dml2onnx.graph import views

BROADCASTING = {
    "Abs", "Add", "And", "Cast", "Ceil", "Cos", "Div", "Equal", "Erf", "Exp", "Floor", "Greater", "GreaterOrEqual",
    "Identity", "IsInf", "IsNaN", "LeakyRelu", "Less", "LessOrEqual", "Log", "Max", "Min", "Mul", "Neg", "Not", "Or",
    "Pow", "Reciprocal", "Relu", "Round", "Sigmoid", "Sign", "Sin", "Sqrt", "Sub", "Tanh", "Where", "Xor",
}  # fmt: skip
OVER_TRAILING_AXES = {"LayerNormalization": 1, "Softmax": 13, "LogSoftmax": 13}  # and the opset that makes it so


def drop(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model with each such component's leading ones dropped and the Reshapes that became the
    identity removed; it must carry its shapes (onnx.shape_inference.infer_shapes), and is changed in place."""
    g = model.graph
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    shapes = views.static_shapes(g)
    outputs = {o.name for o in g.output}
    consts = {t.name: t for t in g.initializer}
    made_by = {o: n for n in g.node for o in n.output}
    readers: dict[str, list[onnx.NodeProto]] = defaultdict(list)
    for n in g.node:
        for v in n.input:
            readers[v].append(n)
    uses = views.value_uses(g)

    def agnostic(n: onnx.NodeProto) -> bool:
        if n.domain or len([o for o in n.output if o]) != 1:  # LayerNormalization's mean keeps its rank
            return False
        if n.op_type in BROADCASTING:
            return True
        return n.op_type in OVER_TRAILING_AXES and opset >= OVER_TRAILING_AXES[n.op_type]

    def member(v: str) -> bool:
        """A value that may lose its leading ones: made by such an operator or a Reshape, read only by them."""
        producer = made_by.get(v)
        if producer is None or shapes.get(v) is None or v not in uses or v in outputs:
            return False
        if not (agnostic(producer) or _is_reshape(producer, consts)):
            return False
        return sum(1 for n in readers[v] for x in n.input if x == v) == uses[v] and all(
            agnostic(n) or (_is_reshape(n, consts) and n.input[0] == v and _explicit(n, consts)) for n in readers[v]
        )

    parent: dict[str, str] = {}

    def find(v: str) -> str:
        while parent[v] != v:
            parent[v] = parent[parent[v]]
            v = parent[v]
        return v

    candidates = [o for n in g.node for o in n.output if member(o)]
    for v in candidates:
        parent[v] = v
    rejected: set[str] = set()
    for n in g.node:
        inside = [v for v in (*n.input, *n.output) if v in parent]
        if not agnostic(n) or not inside:
            continue
        for v in inside[1:]:
            parent[find(v)] = find(inside[0])
        if n.output[0] not in parent:  # its result keeps its shape: so must what it reads
            rejected.add(inside[0])
    target = {v: _strip(shapes[v]) for v in parent}
    for n in g.node:
        if agnostic(n) and n.output[0] in target and not _operator_fits(n, target, shapes, consts):
            rejected.add(n.output[0])
    rejected = {find(v) for v in rejected}
    target = {v: s for v, s in target.items() if find(v) not in rejected}
    if not target:
        return model
    _rewrite(g, target, shapes, consts)
    return model


def _operator_fits(n: onnx.NodeProto, target: dict, shapes: dict, consts: dict) -> bool:
    ins = []
    for v in n.input:
        if not v:
            continue
        if v in target:
            ins.append(target[v])
        elif v in consts:
            ins.append(_strip(tuple(consts[v].dims)))
        elif shapes.get(v) is not None:
            ins.append(shapes[v])
        else:
            return False
    want = target[n.output[0]]
    if n.op_type in OVER_TRAILING_AXES:
        rank = len(shapes[n.output[0]])
        axis = next((a.i for a in n.attribute if a.name == "axis"), -1)
        trailing = rank - axis if axis >= 0 else -axis
        return trailing <= len(want) and ins[0] == want and all(len(s) <= len(want) for s in ins[1:])
    try:
        got = np.broadcast_shapes(*ins)
    except ValueError:
        return False
    return got == want


def _rewrite(g: onnx.GraphProto, target: dict[str, tuple[int, ...]], shapes: dict, consts: dict) -> None:
    new_inits: list[onnx.TensorProto] = []
    renamed: dict[str, str] = {}
    outputs = {o.name for o in g.output}
    alias: dict[str, str] = {}  # the output of a Reshape become the identity -> its input
    uses = views.value_uses(g)
    kept: list[onnx.NodeProto] = []
    made_here: dict[str, onnx.NodeProto] = {}
    for n in g.node:
        c = onnx.NodeProto()
        c.CopyFrom(n)
        c.input[:] = [alias.get(v, v) for v in c.input]
        if _is_reshape(c, consts) and (c.output[0] in target or c.input[0] in target):
            source = target.get(c.input[0], shapes.get(c.input[0]))
            result = target.get(c.output[0], shapes.get(c.output[0]))
            if source is not None and source == result and c.output[0] not in outputs:
                alias[c.output[0]] = c.input[0]
                continue
            producer = made_here.get(c.input[0])
            if source == result and producer is not None and uses[c.input[0]] == 1 and c.input[0] not in outputs:
                # the graph output itself: its producer writes it (a Reshape into an output is a copy)
                producer.output[list(producer.output).index(c.input[0])] = c.output[0]
                continue
            if c.output[0] in target:
                name = f"{c.output[0]} (shape without leading ones)"
                new_inits.append(numpy_helper.from_array(np.array(result, np.int64), name))
                c.input[1] = name
        elif c.output and c.output[0] in target and not c.domain:
            for i, v in enumerate(c.input):
                t = consts.get(v)
                if t is not None and tuple(t.dims) != _strip(tuple(t.dims)):
                    if v not in renamed:
                        renamed[v] = f"{v} (without leading ones)"
                        value = numpy_helper.to_array(t).reshape(_strip(tuple(t.dims)))
                        new_inits.append(numpy_helper.from_array(value, renamed[v]))
                    c.input[i] = renamed[v]
            if c.op_type in OVER_TRAILING_AXES:
                rank = len(shapes[n.output[0]])
                for a in c.attribute:
                    if a.name == "axis" and a.i >= 0:
                        a.i -= rank
        kept.append(c)
        made_here.update((o, c) for o in c.output)
    del g.node[:]
    g.node.extend(kept)
    g.initializer.extend(new_inits)
    changed = set(target) | set(alias)
    kept_info = [vi for vi in g.value_info if vi.name not in changed]
    del g.value_info[:]
    g.value_info.extend(kept_info)
    views.drop_unread_constants(g)


def _is_reshape(n: onnx.NodeProto, consts: dict) -> bool:
    return n.op_type == "Reshape" and not n.domain and len(n.input) == 2 and n.input[1] in consts


def _explicit(n: onnx.NodeProto, consts: dict) -> bool:
    """A Reshape whose shape does not copy a dimension of its input (a 0 without allowzero)."""
    allowzero = next((a.i for a in n.attribute if a.name == "allowzero"), 0)
    return bool(allowzero) or 0 not in numpy_helper.to_array(consts[n.input[1]]).tolist()


def _strip(dims: tuple[int, ...]) -> tuple[int, ...]:
    """The dimensions without their leading ones (the last one stays)."""
    i = 0
    while i < len(dims) - 1 and dims[i] == 1:
        i += 1
    return tuple(dims[i:])
