"""Folding away the views a whole model's graph passes its tensors through: a DirectML graph binds
every edge as a buffer seen through each reader's 4-D view, so lowered end to end it holds chains of
Reshapes and Identities that move no data. ONNX Runtime keeps them as nodes, each one a kernel
launch on a GPU (or an alias it still schedules); on a network at batch 1 they cost as much as the
arithmetic. Every rewrite here keeps each value's contents and its graph outputs as they are."""

from __future__ import annotations

from collections import Counter

import numpy as np
import onnx
from onnx import numpy_helper

from dml2onnx.graph import rename


def _static_shapes(graph: onnx.GraphProto) -> dict[str, tuple[int, ...]]:
    """Each value's shape where every dimension is known (inputs, outputs, value_info, initializers)."""
    out: dict[str, tuple[int, ...]] = {t.name: tuple(t.dims) for t in graph.initializer}
    for vi in (*graph.input, *graph.value_info, *graph.output):
        dims = vi.type.tensor_type.shape.dim
        if vi.type.tensor_type.HasField("shape") and all(d.HasField("dim_value") for d in dims):
            out[vi.name] = tuple(d.dim_value for d in dims)
    return out


def _uses(graph: onnx.GraphProto) -> Counter[str]:
    """How many times each value is read: by nodes, by subgraphs (outer reads), as a graph output."""
    uses: Counter[str] = Counter(o.name for o in graph.output)
    for n in graph.node:
        uses.update(v for v in n.input if v)
        for a in n.attribute:
            for sub in (*([a.g] if a.HasField("g") else []), *a.graphs):
                uses.update(_outer_reads(sub))
    return uses


def _outer_reads(graph: onnx.GraphProto) -> set[str]:
    own = {v.name for v in graph.input} | {t.name for t in graph.initializer} | {o for n in graph.node for o in n.output}
    reads = {v for n in graph.node for v in n.input if v and v not in own}
    for n in graph.node:
        for a in n.attribute:
            for sub in (*([a.g] if a.HasField("g") else []), *a.graphs):
                reads |= _outer_reads(sub) - own
    return reads | ({o.name for o in graph.output} - own)


def fold(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model without the Identities and Reshapes that leave a value as it is (same shape), and
    with each chain of Reshapes one Reshape, where the values in between are read by nothing else.
    The model must carry its shapes (onnx.shape_inference.infer_shapes); it is changed in place."""
    g = model.graph
    shapes = _static_shapes(g)
    _drop_same_views(g, shapes)
    _merge_reshape_chains(g, shapes)
    _drop_same_views(g, shapes)  # a merged chain may end where it began
    used = _uses(g)
    kept = [t for t in g.initializer if used[t.name]]
    del g.initializer[:]
    g.initializer.extend(kept)
    return model


def _drop_same_views(g: onnx.GraphProto, shapes: dict[str, tuple[int, ...]]) -> None:
    """Identities, and Reshapes to the shape their input has: their readers read the input itself."""
    outputs = {o.name for o in g.output}
    alias: dict[str, str] = {}
    kept = []
    for n in g.node:
        n.input[:] = [alias.get(v, v) for v in n.input]
        x, y = (n.input[0], n.output[0]) if n.input and n.output else ("", "")
        view = n.op_type == "Identity" or (n.op_type == "Reshape" and x in shapes and shapes.get(y) == shapes[x])
        if view and not n.domain and y not in outputs:
            alias[y] = x
            continue
        kept.append(_copy(n))
    if alias:
        del g.node[:]
        g.node.extend(kept)
        for n in g.node:
            for a in n.attribute:
                for sub in (*([a.g] if a.HasField("g") else []), *a.graphs):
                    rename.rename_outer(sub, alias)


def _merge_reshape_chains(g: onnx.GraphProto, shapes: dict[str, tuple[int, ...]]) -> None:
    """Reshape(Reshape(v)) -> Reshape(v) to the outer shape, where the inner result has no other reader."""
    outputs = {o.name for o in g.output}
    uses = _uses(g)
    producer: dict[str, int] = {}  # a Reshape's output -> its node's index
    dropped: set[int] = set()
    for i, n in enumerate(g.node):
        if n.op_type != "Reshape" or n.domain:
            continue
        x, y = n.input[0], n.output[0]
        if x in producer and uses[x] == 1 and x not in outputs and y in shapes:
            inner = producer[x]
            target = numpy_helper.from_array(np.array(shapes[y], np.int64), f"{y} (merged view)")
            g.initializer.append(target)
            n.input[:] = [g.node[inner].input[0], target.name]
            dropped.add(inner)
        producer[y] = i
    if dropped:
        kept = [_copy(n) for i, n in enumerate(g.node) if i not in dropped]
        del g.node[:]
        g.node.extend(kept)


def _copy(n: onnx.NodeProto) -> onnx.NodeProto:
    """A node apart from its graph (the graph's list is emptied and refilled)."""
    out = onnx.NodeProto()
    out.CopyFrom(n)
    return out
