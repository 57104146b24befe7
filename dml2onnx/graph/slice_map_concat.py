"""The `cuda` target's whole-model rewrite of slices of one tensor that each go through their own
element-wise chain and are joined again by a Concat along the sliced axis (a detection head's box
decoding: sigmoid(xy) + grid, times stride; exp(wh) times anchor; sigmoid(scores)): each distinct
unary operator once over the whole tensor, a Where picking per slice, then each binary step once
with a constant that holds every slice's operand (and the step's identity, -0.0 for Add and 1 for
Mul, where a slice has no such step). Every element goes through the arithmetic of its own chain,
in its order (x + -0.0 and x * 1 are x, bit for bit, NaN and signed zeros too), so the values are
the same; the kernels drop from slices + chains + Concat to unaries + Wheres + steps (a launch at
batch 1 costs about what its arithmetic does, and each unary now runs over every slice, so only
tensors of up to MAX_ELEMENTS are rewritten)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping

import numpy as np
import onnx
from onnx import helper, numpy_helper

from dml2onnx.graph import constant_views, views

MAX_ELEMENTS = 1 << 20
# unaries that never give -0.0: the CPU EP's Where gives +0.0 for a -0.0 it picks (ONNX Runtime
# 1.31), so only values without one pass through a Where; an identity chain only where no Where is
UNARY = {"Sigmoid", "Exp", "Abs", "Softplus"}
IDENTITY = {"Add": -0.0, "Mul": 1.0}  # the right operand that leaves every value as it is

# a chain: the slice's [start, end) along the axis, its unary (or None), its (op, constant) steps
Chain = tuple[int, int, str | None, list[tuple[str, np.ndarray]], list[onnx.NodeProto]]
Nodes = dict[str, onnx.NodeProto]
Counts = Mapping[str, int]
Shapes = dict[str, tuple[int, ...]]
Consts = dict[str, onnx.TensorProto]


def rewrite(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model with each such Concat rewritten where that takes fewer nodes; it must carry its
    shapes (onnx.shape_inference.infer_shapes), and is changed in place."""
    g = model.graph
    shapes = views.static_shapes(g)
    consts = {t.name: t for t in g.initializer}
    made_by = {o: n for n in g.node for o in n.output}
    uses = views.value_uses(g)
    before: dict[int, list[onnx.NodeProto]] = {}
    gone: set[int] = set()
    inits: list[onnx.TensorProto] = []
    for concat in g.node:
        if concat.op_type != "Concat" or concat.domain or len(concat.input) < 2 or concat.output[0] not in shapes:
            continue
        found = _chains(concat, made_by, uses, shapes, consts)
        if found is None:
            continue
        source, axis, chains = found
        planned = _plan(concat, source, axis, chains, shapes[source], shapes[concat.output[0]])
        if planned is None:
            continue
        nodes, tensors = planned
        old = {id(n) for c in chains for n in c[4]} | {id(concat)}
        if len(nodes) >= len(old) or old & gone:
            continue
        gone |= old
        before[id(concat)] = nodes
        inits += tensors
    if not before:
        return model
    views.splice(g, gone, before)
    views.drop_dead_nodes(g)  # the chains' constant operands' views
    g.initializer.extend(inits)
    views.drop_unread_constants(g)
    return model


def _chains(
    concat: onnx.NodeProto, made_by: Nodes, uses: Counts, shapes: Shapes, consts: Consts
) -> tuple[str, int, list[Chain]] | None:
    """The one tensor the Concat's inputs are slices of, the axis, and each input's chain; or None."""
    rank = len(shapes[concat.output[0]])
    axis = next((a.i for a in concat.attribute if a.name == "axis"), 0) % max(rank, 1)
    chains: list[Chain] = []
    source = None
    for v in concat.input:
        nodes: list[onnx.NodeProto] = []
        steps: list[tuple[str, np.ndarray]] = []
        unary = None
        while True:
            n = made_by.get(v)
            if n is None or n.domain or uses.get(v) != 1:
                return None
            if n.op_type == "Slice":
                break
            if n.op_type in IDENTITY and len(n.input) == 2 and unary is None:
                k = constant_views.constant_value(n.input[1], made_by, consts)
                if k is None or n.attribute:
                    return None
                steps.insert(0, (n.op_type, k))
                v = n.input[0]
            elif n.op_type in UNARY and unary is None and not n.attribute:
                unary = n.op_type
                v = n.input[0]
            else:
                return None
            nodes.append(n)
        span = _span(n, axis, rank, shapes, consts)
        if span is None or (source is not None and n.input[0] != source):
            return None
        source = n.input[0]
        nodes.append(n)
        chains.append((span[0], span[1], unary, steps, nodes))
    tiled = [c[:2] for c in chains]
    if source is None or tiled[0][0] != 0 or any(a[1] != b[0] for a, b in itertools.pairwise(tiled)):
        return None
    if tiled[-1][1] != shapes[source][axis] or any(len(c[3]) == 0 and c[2] is None for c in chains):
        return None
    if None in {c[2] for c in chains} and len({c[2] for c in chains}) > 1:
        return None
    return source, axis, chains


def _span(n: onnx.NodeProto, axis: int, rank: int, shapes: Shapes, consts: Consts) -> tuple[int, int] | None:
    """A Slice's [start, end) along `axis`, where it slices that axis only, by step 1."""
    if len(n.input) < 4 or any(v not in consts for v in n.input[1:]) or n.input[0] not in shapes:
        return None
    starts, ends, axes = (numpy_helper.to_array(consts[v]).tolist() for v in n.input[1:4])
    steps = numpy_helper.to_array(consts[n.input[4]]).tolist() if len(n.input) > 4 else [1]
    size = shapes[n.input[0]][axis]
    if len(axes) != 1 or axes[0] % rank != axis or steps != [1]:
        return None
    start, end = (min(max(x + size if x < 0 else x, 0), size) for x in (starts[0], ends[0]))
    return (start, end) if start < end else None


def _plan(
    concat: onnx.NodeProto, source: str, axis: int, chains: list[Chain], full: tuple[int, ...], out: tuple[int, ...]
) -> tuple[list[onnx.NodeProto], list[onnx.TensorProto]] | None:
    """The nodes and constants that compute the Concat's result from the whole source."""
    if int(np.prod(full)) > MAX_ELEMENTS or full != out:
        return None
    order = _common_steps([[op for op, _ in c[3]] for c in chains])
    if order is None:
        return None
    name = concat.output[0]
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []
    unaries = list(dict.fromkeys(c[2] for c in chains))
    picked: dict[str | None, str] = {None: source}
    for u in unaries:
        if u is not None:
            picked[u] = f"{name} ({u} of all slices)"
            nodes.append(helper.make_node(u, [source], [picked[u]], name=picked[u]))
    current = picked[unaries[-1]]
    for u in reversed(unaries[:-1]):  # each earlier unary where its slices lie
        mask = np.zeros([full[axis] if d == axis else 1 for d in range(len(full))], bool)
        for c in chains:
            if c[2] == u:
                mask[(slice(None),) * axis + (slice(c[0], c[1]),)] = True
        where = f"{name} ({u} where its slices lie)"
        inits.append(numpy_helper.from_array(mask, f"{where} mask"))
        nodes.append(helper.make_node("Where", [f"{where} mask", picked[u], current], [where], name=where))
        current = where
    dtype = None
    for i, op in enumerate(order):
        operand = _operand(op, i, order, chains, axis, full)
        if operand is None:
            return None
        if dtype is not None and operand.dtype != dtype:
            return None
        dtype = operand.dtype
        step = f"{name} ({op} {i})" if i < len(order) - 1 else name
        inits.append(numpy_helper.from_array(operand, f"{name} ({op} {i} operand)"))
        nodes.append(helper.make_node(op, [current, f"{name} ({op} {i} operand)"], [step], name=step))
        current = step
    if not order:
        nodes[-1].output[0] = name
        nodes[-1].name = name
    return nodes, inits


def _operand(op: str, i: int, order: list[str], chains: list[Chain], axis: int, full: tuple[int, ...]) -> np.ndarray | None:
    """The constant of step `i` for every slice: each chain's own where it has that step, else the
    identity; broadcast along the other axes as far as any chain's constant needs."""
    mine = []
    for c in chains:
        ops = [o for o, _ in c[3]]
        taken = _positions(ops, order)
        k = next((c[3][j][1] for j, p in enumerate(taken) if p == i), None)
        mine.append(k)
    known = [k for k in mine if k is not None]
    if not known or len({k.dtype for k in known}) != 1 or any(k.ndim > len(full) for k in known):
        return None
    dtype = known[0].dtype
    padded = [k.reshape((1,) * (len(full) - k.ndim) + k.shape) if k is not None else None for k in mine]
    dims = [full[d] if d == axis else max([1] + [p.shape[d] for p in padded if p is not None]) for d in range(len(full))]
    if any(p is not None and any(p.shape[d] not in (1, dims[d]) for d in range(len(full)) if d != axis) for p in padded):
        return None
    whole = np.empty(dims, dtype)
    for c, p in zip(chains, padded, strict=True):
        part = [c[1] - c[0] if d == axis else dims[d] for d in range(len(full))]
        if p is not None and p.shape[axis] not in (1, c[1] - c[0]):
            return None
        value = np.broadcast_to(p, part) if p is not None else np.full(part, IDENTITY[op], dtype)
        whole[(slice(None),) * axis + (slice(c[0], c[1]),)] = value
    return whole


def _positions(ops: list[str], order: list[str]) -> list[int]:
    """Where each of a chain's steps falls in the common order (the first fit, in order)."""
    taken, at = [], 0
    for op in ops:
        while order[at] != op:
            at += 1
        taken.append(at)
        at += 1
    return taken


def _common_steps(chains: list[list[str]]) -> list[str] | None:
    """A shortest order of steps that holds each chain's steps in their order (pairwise: enough for
    the few steps of real chains)."""
    order: list[str] = []
    for ops in chains:
        order = _merge(order, ops)
    return order


def _merge(a: list[str], b: list[str]) -> list[str]:
    """The shortest common supersequence of two step lists."""
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) - 1, -1, -1):
        for j in range(len(b) - 1, -1, -1):
            table[i][j] = table[i + 1][j + 1] + 1 if a[i] == b[j] else max(table[i + 1][j], table[i][j + 1])
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        if a[i] == b[j]:
            out.append(a[i])
            i, j = i + 1, j + 1
        elif table[i + 1][j] >= table[i][j + 1]:
            out.append(a[i])
            i += 1
        else:
            out.append(b[j])
            j += 1
    return out + a[i:] + b[j:]
