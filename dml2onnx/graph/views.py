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

from dml2onnx.core import dtypes
from dml2onnx.graph import rename

# operators of one tensor input whose result for an element depends only on that element (and
# attributes): the rewrites may move them across any view or reordering
ONE_INPUT_ELEMENT_WISE = frozenset({
    "Abs", "Ceil", "Cos", "Elu", "Erf", "Exp", "Floor", "HardSigmoid", "HardSwish", "Identity", "IsInf", "IsNaN",
    "LeakyRelu", "Log", "Neg", "Not", "Reciprocal", "Relu", "Round", "Selu", "Sigmoid", "Sign", "Sin", "Softplus",
    "Softsign", "Sqrt", "Tanh", "ThresholdedRelu",
})  # fmt: skip


def static_shapes(graph: onnx.GraphProto) -> dict[str, tuple[int, ...]]:
    """Each value's shape where every dimension is known (inputs, outputs, value_info, initializers)."""
    out: dict[str, tuple[int, ...]] = {t.name: tuple(t.dims) for t in graph.initializer}
    for vi in (*graph.input, *graph.value_info, *graph.output):
        dims = vi.type.tensor_type.shape.dim
        if vi.type.tensor_type.HasField("shape") and all(d.HasField("dim_value") for d in dims):
            out[vi.name] = tuple(d.dim_value for d in dims)
    return out


def value_uses(graph: onnx.GraphProto) -> Counter[str]:
    """How many times each value is read: by nodes, by subgraphs (outer reads), as a graph output."""
    uses: Counter[str] = Counter(o.name for o in graph.output)
    for n in graph.node:
        uses.update(v for v in n.input if v)
        for a in n.attribute:
            for sub in (*([a.g] if a.HasField("g") else []), *a.graphs):
                uses.update(_outer_reads(sub))
    return uses


def splice(g: onnx.GraphProto, gone: set[int], at: dict[int, list[onnx.NodeProto]]) -> None:
    """The graph's nodes with those whose id() is in `gone` dropped and each whose id() keys `at`
    replaced by at[id] (in its place, so the order stays topological); the recorded types of values
    no node makes any more go with them."""
    kept: list[onnx.NodeProto] = []
    for n in g.node:
        if id(n) in at:
            kept += at[id(n)]
        elif id(n) not in gone:
            kept.append(_copy(n))
    del g.node[:]
    g.node.extend(kept)
    made = {o for n in kept for o in n.output} | {v.name for v in g.input}
    kept_info = [vi for vi in g.value_info if vi.name in made]
    del g.value_info[:]
    g.value_info.extend(kept_info)


def drop_dead_nodes(g: onnx.GraphProto) -> None:
    """The graph without the nodes whose results nothing reads (a DirectML output the model does
    not return: the EP still dispatches such a node)."""
    nodes = list(g.node)
    while True:
        read = set(value_uses(g))
        live = [n for n in nodes if any(o in read for o in n.output if o)]
        if len(live) == len(nodes):
            return
        nodes = live
        del g.node[:]
        g.node.extend(nodes)


def drop_unread_constants(g: onnx.GraphProto) -> None:
    """The graph without the initializers that nothing reads: no node, no output, no If branch."""
    read = value_uses(g)
    kept = [t for t in g.initializer if read[t.name]]
    del g.initializer[:]
    g.initializer.extend(kept)


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
    with each chain of Reshapes one Reshape, where the values in between are read by nothing else;
    each LayerNormalization (and an Add that feeds only it) on its tensor without DirectML's trailing
    dimensions of 1 (_squeeze_layer_norms); an Expand after the element-wise node it fed
    (_expand_after_element_wise); a BOOL Cast to another type and back (_drop_bool_round_trips); an integer Clip
    read only as truth values (_drop_clips_read_as_truth); a
    Reshape after an element-wise or last-axis Softmax node
    before it (_views_before_rows); a Reshape that only adds or drops dimensions of 1 beside a
    Transpose folded into its permutation (_unit_views_into_transposes). The model must carry its shapes
    (onnx.shape_inference.infer_shapes); it is changed in place."""
    g = model.graph
    shapes = static_shapes(g)
    _squeeze_layer_norms(g, shapes)
    _drop_same_views(g, shapes)
    _expand_after_element_wise(g, shapes)
    _drop_broadcasts(g, shapes)
    _drop_bool_round_trips(g)
    _drop_clips_read_as_truth(g)
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    while _views_before_rows(g, shapes, opset):  # an op moved before one Reshape may meet the next
        pass
    _merge_reshape_chains(g, shapes)
    while _unit_views_into_transposes(g, shapes):  # each pass drops one Reshape per Transpose at most
        _merge_reshape_chains(g, shapes)
    _drop_same_views(g, shapes)  # a merged chain may end where it began
    used = value_uses(g)
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


def _squeeze_layer_norms(g: onnx.GraphProto, shapes: dict[str, tuple[int, ...]]) -> None:
    """A LayerNormalization of a tensor whose last dimensions are 1 (DirectML's 4-D views: [1, 16,
    64, 1]) runs on it without them, between two Reshapes, its Scale and Bias reshaped alike; so does
    an Add of two such tensors that only it reads. The same elements in the same order, so the same
    values; ONNX Runtime fuses Add + LayerNormalization into SkipLayerNormalization only on 3-D
    tensors with the last axis normalized, which this leaves once the Reshape chains merge."""
    outputs = {o.name for o in g.output}
    uses = value_uses(g)
    made_by = {o: j for j, n in enumerate(g.node) for o in n.output}
    rewritten: dict[int, list[onnx.NodeProto]] = {}  # a node's index -> the nodes in its place

    def view(value: str, shape: tuple[int, ...], name: str) -> tuple[onnx.NodeProto, str]:
        target = numpy_helper.from_array(np.array(shape, np.int64), f"{name} shape")
        g.initializer.append(target)
        shapes[name] = shape
        return onnx.helper.make_node("Reshape", [value, target.name], [name], name=name), name

    for i, n in enumerate(g.node):
        if n.op_type != "LayerNormalization" or n.domain or len([o for o in n.output if o]) != 1:
            continue
        x, y = n.input[0], n.output[0]
        shape = shapes.get(x)
        if shape is None or y in outputs or shapes.get(y) != shape:
            continue
        rank = kept = len(shape)
        while kept > 0 and shape[kept - 1] == 1:
            kept -= 1
        axis = next((a.i for a in n.attribute if a.name == "axis"), -1) % rank
        params = [v for v in n.input[1:] if v]
        if kept == rank or axis >= kept or any(v not in shapes for v in params):
            continue
        # Scale and Bias broadcast onto shape[axis:] from the right: their last rank - kept sizes are 1
        aligned = [(1,) * (rank - axis - len(shapes[v])) + shapes[v] for v in params]
        if any(a[kept - axis :] != (1,) * (rank - kept) for a in aligned):
            continue
        squeezed, tag = shape[:kept], f"{kept}-D"
        nodes: list[onnx.NodeProto] = []
        j = made_by.get(x)
        add = g.node[j] if j is not None else None
        if add is not None and add.op_type == "Add" and not add.domain and uses[x] == 1 and j not in rewritten:
            if all(shapes.get(v) == shape for v in add.input):
                parts = [view(v, squeezed, f"{x} (term {k}, {tag})") for k, v in enumerate(add.input)]
                shapes[f"{x} ({tag})"] = squeezed
                summed = onnx.helper.make_node("Add", [o for _, o in parts], [f"{x} ({tag})"], name=add.name)
                rewritten[j] = [*(node for node, _ in parts), summed]
                source = f"{x} ({tag})"
            else:
                add = None
        else:
            add = None
        if add is None:
            node, source = view(x, squeezed, f"{x} ({tag})")
            nodes.append(node)
        for v, a in zip(params, aligned, strict=True):  # ONNX Runtime folds these Reshapes of constants
            node, _ = view(v, a[: kept - axis], f"{v} ({tag}, {len(nodes)})")
            nodes.append(node)
        new_params = [m.output[0] for m in nodes[-len(params) :]] if params else []
        ln = onnx.NodeProto()
        ln.CopyFrom(n)
        ln.input[:] = [source, *new_params]
        ln.output[:] = [f"{y} ({tag})"]
        shapes[ln.output[0]] = squeezed
        back = numpy_helper.from_array(np.array(shape, np.int64), f"{y} shape")
        g.initializer.append(back)
        rewritten[i] = [*nodes, ln, onnx.helper.make_node("Reshape", [ln.output[0], back.name], [y], name=f"{y} (back)")]
    if rewritten:
        nodes = [m for i, n in enumerate(g.node) for m in rewritten.get(i, [n])]
        del g.node[:]
        g.node.extend(_copy(n) for n in nodes)


# ONNX ops that broadcast their inputs numpy's way, so an Expand before one of them changes nothing
# where the op's result keeps its shape without it
_BROADCASTING = frozenset(
    ("Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Mean", "And", "Or", "Xor", "Equal", "Greater", "Less")
    + ("GreaterOrEqual", "LessOrEqual", "Where", "BitShift")
)


def _keeps_shape(m: onnx.NodeProto, shapes: dict[str, tuple[int, ...]], x: str, y: str) -> bool:
    """Whether the broadcasting node `m` gives its result's shape when it reads `x` in place of `y`."""
    if m.op_type not in _BROADCASTING or m.domain or m.output[0] not in shapes:
        return False
    ins = [shapes.get(x if v == y else v) for v in m.input]
    if any(i is None for i in ins):
        return False
    try:
        return tuple(np.broadcast_shapes(*ins)) == shapes[m.output[0]]
    except ValueError:
        return False


def _drop_broadcasts(g: onnx.GraphProto, shapes: dict[str, tuple[int, ...]]) -> None:
    """An Expand (DirectML's broadcast view, a stride of 0, made a tensor) read only by operators
    that broadcast themselves, each of whose results keeps its shape when it reads the Expand's input
    instead: they read that input, and the Expand goes (a kernel and a copy of the broadcast tensor)."""
    outputs = {o.name for o in g.output}
    uses = value_uses(g)
    readers: dict[str, list[onnx.NodeProto]] = {}
    for n in g.node:
        for v in set(n.input):
            readers.setdefault(v, []).append(n)
    alias: dict[str, str] = {}
    for n in g.node:
        if n.op_type != "Expand" or n.domain or n.output[0] in outputs or n.input[0] not in shapes:
            continue
        x, y = n.input[0], n.output[0]
        users = readers.get(y, [])
        read = sum(list(m.input).count(y) for m in users)
        if users and read == uses[y] and all(_keeps_shape(m, shapes, x, y) for m in users):  # no subgraph reads it
            alias[y] = x
    if alias:
        kept = [_copy(n) for n in g.node if not (n.op_type == "Expand" and n.output[0] in alias)]
        for n in kept:
            n.input[:] = [alias.get(v, v) for v in n.input]
        del g.node[:]
        g.node.extend(kept)


# ONNX ops of one input whose result element i depends on input element i alone (each Reshape moves
# both alike); and those that compute along the last axis only (a Reshape that keeps the last
# dimension keeps every row whole)
_ELEMENT_WISE = frozenset(("Relu", "Sigmoid", "Tanh", "Exp", "Log", "Neg", "Abs", "Sqrt", "Reciprocal", "Cast", "Erf"))
_LAST_AXIS = frozenset(("Softmax", "LogSoftmax"))


def _expand_after_element_wise(g: onnx.GraphProto, shapes: dict[str, tuple[int, ...]]) -> None:
    """op(Expand(x)) -> Expand(op(x)) where `op` is element-wise (a Cast of DirectML's broadcast
    attention mask) and reads the only use of the Expand: the same values, op on the smaller tensor,
    and the Expand then before whatever reads op's result, where _drop_broadcasts may drop it."""
    outputs = {o.name for o in g.output}
    uses = value_uses(g)
    made_by = {o: j for j, n in enumerate(g.node) for o in n.output}
    moved: dict[int, list[onnx.NodeProto]] = {}
    for i, n in enumerate(g.node):
        if n.op_type not in _ELEMENT_WISE or n.domain or len(n.input) != 1 or n.input[0] not in made_by:
            continue
        j = made_by[n.input[0]]
        e = g.node[j]
        if e.op_type != "Expand" or e.domain or uses[e.output[0]] != 1 or e.output[0] in outputs or j in moved:
            continue
        if e.input[0] not in shapes or n.output[0] not in shapes:
            continue
        small = _copy(n)
        small.input[0], small.output[0] = e.input[0], f"{n.output[0]} (before Expand)"
        expand = _copy(e)
        expand.input[0], expand.output[0] = small.output[0], n.output[0]
        shapes[small.output[0]] = shapes[e.input[0]]
        moved[j], moved[i] = [], [small, expand]
    if moved:
        kept = [m for i, n in enumerate(g.node) for m in moved.get(i, [_copy(n)])]
        del g.node[:]
        g.node.extend(kept)


def _drop_bool_round_trips(g: onnx.GraphProto) -> None:
    """Cast(to BOOL) of a Cast of a BOOL value (DirectML holds BOOL as UINT8: a LOGICAL_AND's result
    read as a Where's condition) is that value: 0 and 1 go back to false and true. The first Cast
    goes too where nothing else reads it."""
    bools = {vi.name for vi in (*g.input, *g.value_info, *g.output) if vi.type.tensor_type.elem_type == onnx.TensorProto.BOOL}
    outputs = {o.name for o in g.output}
    made_by = {o: n for n in g.node for o in n.output}
    alias: dict[str, str] = {}
    inners: set[str] = set()  # the first Casts' results
    for n in g.node:
        inner = made_by.get(n.input[0]) if n.op_type == "Cast" and not n.domain else None
        to_bool = any(a.name == "to" and a.i == onnx.TensorProto.BOOL for a in n.attribute)
        if inner is None or not to_bool or inner.op_type != "Cast" or inner.domain or n.output[0] in outputs:
            continue
        if inner.input[0] in bools:
            alias[n.output[0]] = inner.input[0]
            inners.add(inner.output[0])
    if not alias:
        return
    kept = [_copy(n) for n in g.node if n.output[0] not in alias]
    for n in kept:
        n.input[:] = [alias.get(v, v) for v in n.input]
        for a in n.attribute:
            for sub in (*([a.g] if a.HasField("g") else []), *a.graphs):
                rename.rename_outer(sub, alias)
    del g.node[:]
    g.node.extend(kept)
    used = value_uses(g)  # subgraphs' reads included
    kept = [_copy(n) for n in g.node if n.output[0] not in inners or used[n.output[0]]]
    del g.node[:]
    g.node.extend(kept)


# ONNX ops whose first input's elements reach their result unchanged, moved or repeated
_MOVERS = frozenset(("Reshape", "Gather", "Expand", "Transpose", "Slice", "Squeeze", "Unsqueeze", "Flatten", "Identity"))


def _drop_clips_read_as_truth(g: onnx.GraphProto) -> None:
    """A Clip of integers to [lo, hi] with lo <= 0 < hi that keeps each sign (lo < 0, or an unsigned
    type) is 0 exactly where its input is: where every reader only moves its elements (as the data
    of Reshape, Gather, Expand ...) on to a Cast to BOOL, it goes (DirectML's attention mask: CAST
    to UINT8 and a CLIP to [0, 1] before the Where reads it as a condition)."""
    types = {vi.name: vi.type.tensor_type.elem_type for vi in (*g.input, *g.value_info, *g.output)}
    consts = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    uses = value_uses(g)  # graph outputs and subgraphs' reads included
    readers: dict[str, list[onnx.NodeProto]] = {}
    for n in g.node:
        for v in n.input:
            readers.setdefault(v, []).append(n)

    def read_as_truth(v: str) -> bool:
        if not readers.get(v) or len(readers[v]) != uses[v]:  # read by nodes alone
            return False
        for r in readers[v]:
            if r.domain or list(r.input).count(v) != 1:
                return False
            if r.op_type == "Cast" and any(a.name == "to" and a.i == onnx.TensorProto.BOOL for a in r.attribute):
                continue
            if r.op_type not in _MOVERS or r.input[0] != v or not read_as_truth(r.output[0]):
                return False
        return True

    alias: dict[str, str] = {}
    for n in g.node:
        if n.op_type != "Clip" or n.domain or len(n.input) != 3:
            continue
        dtype = dtypes.BY_ONNX.get(types.get(n.input[0], 0))
        if dtype not in dtypes.INTEGERS:
            continue
        bounds = [consts.get(b) for b in n.input[1:]]
        if any(b is None or b.size != 1 for b in bounds):
            continue
        lo, hi = (int(b.reshape(())) for b in bounds)
        if lo <= 0 < hi and (lo < 0 or not dtype.is_signed) and read_as_truth(n.output[0]):
            alias[n.output[0]] = n.input[0]
    if alias:
        kept = [_copy(n) for n in g.node if n.output[0] not in alias]
        for n in kept:
            n.input[:] = [alias.get(v, v) for v in n.input]
        del g.node[:]
        g.node.extend(kept)


def _views_before_rows(g: onnx.GraphProto, shapes: dict[str, tuple[int, ...]], opset: int) -> bool:
    """Reshape(op(x)) -> op(Reshape(x)) where `op` is element-wise, or a Softmax/LogSoftmax over the
    last axis whose length the Reshape keeps, and only the Reshape reads op's result: the same values
    (DirectML's 4-D view of a classifier's output, [1, 1, 1, 10], is then a Reshape of a Reshape,
    which _merge_reshape_chains folds, so the Softmax reads the Gemm's [1, 10] itself). Whether any moved."""
    outputs = {o.name for o in g.output}
    uses = value_uses(g)
    made_by = {o: j for j, n in enumerate(g.node) for o in n.output}
    moved: dict[int, list[onnx.NodeProto]] = {}  # a node's index -> the nodes in its place
    for i, n in enumerate(g.node):
        if n.op_type != "Reshape" or n.domain or n.input[0] not in made_by or n.output[0] not in shapes:
            continue
        j = made_by[n.input[0]]
        op = g.node[j]
        s, y = op.output[0], n.output[0]
        if op.domain or len(op.input) != 1 or len(op.output) != 1 or uses[s] != 1 or s in outputs or j in moved:
            continue
        if op.op_type in _LAST_AXIS:
            if opset < 13:  # (Log)Softmax-1/11 flatten from their axis, 1 by default
                continue
            axis = next((a.i for a in op.attribute if a.name == "axis"), -1)
            rank = len(shapes.get(s, ()))
            if not rank or axis % rank != rank - 1 or shapes[s][-1] != shapes[y][-1]:
                continue
        elif op.op_type not in _ELEMENT_WISE:
            continue
        view = _copy(n)
        view.input[0], view.output[0], view.name = op.input[0], f"{y} (before {op.op_type})", f"{n.name} (before {op.op_type})"
        after = _copy(op)
        after.input[0], after.output[0] = view.output[0], y
        for a in after.attribute:
            if a.name == "axis":
                a.i = -1
        shapes[view.output[0]] = shapes[y]
        moved[j], moved[i] = [], [view, after]
    if moved:
        kept = [m for i, n in enumerate(g.node) for m in moved.get(i, [_copy(n)])]
        del g.node[:]
        g.node.extend(kept)
    return bool(moved)


def _merge_reshape_chains(g: onnx.GraphProto, shapes: dict[str, tuple[int, ...]]) -> None:
    """Reshape(Reshape(v)) -> Reshape(v) to the outer shape; the inner Reshape goes where its result
    has no other reader."""
    outputs = {o.name for o in g.output}
    uses = value_uses(g)
    producer: dict[str, int] = {}  # a Reshape's output -> its node's index
    dropped: set[int] = set()
    for i, n in enumerate(g.node):
        if n.op_type != "Reshape" or n.domain:
            continue
        x, y = n.input[0], n.output[0]
        if x in producer and y in shapes:
            inner = producer[x]
            target = numpy_helper.from_array(np.array(shapes[y], np.int64), f"{y} (merged view)")
            g.initializer.append(target)
            n.input[:] = [g.node[inner].input[0], target.name]
            if uses[x] == 1 and x not in outputs:  # else the inner view stays for its other readers
                dropped.add(inner)
        producer[y] = i
    if dropped:
        kept = [_copy(n) for i, n in enumerate(g.node) if i not in dropped]
        del g.node[:]
        g.node.extend(kept)


def _non_unit(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(d for d in shape if d != 1)


def _perm_onto(source: tuple[int, ...], order: list[int], target: tuple[int, ...]) -> list[int]:
    """The Transpose permutation that takes `source` to `target` (both of one rank, as many
    dimensions of 1): `target`'s r-th dimension other than 1 is `source`'s non-unit dimension
    order[r] (counted among those), and its dimensions of 1 take `source`'s in turn."""
    big = [i for i, d in enumerate(source) if d != 1]
    units = iter(i for i, d in enumerate(source) if d == 1)
    ranks = iter(order)
    return [big[next(ranks)] if d != 1 else next(units) for d in target]


# ONNX Runtime folds a Transpose of the last two (or the batch) dimensions that a MatMul reads into
# FusedMatMul's transA/transB/transBatch, through a Reshape that adds the 1s of DirectML's 4-D view
# (and a Cast: a FLOAT16 GEMM computed in FLOAT32, or fused by cuda_fusions.py);
# a Transpose of another rank after that Reshape stays a kernel (a captured BERT: six Transposes more)
_MATRIX_PRODUCTS = frozenset(("MatMul", "Gemm"))


def _unit_views_into_transposes(g: onnx.GraphProto, shapes: dict[str, tuple[int, ...]]) -> bool:
    """A Transpose between Reshapes (DirectML's 4-D views of a multi-head attention's [16, 4, 16]
    heads) moves the same elements whatever dimensions of 1 its tensor carries, so a Reshape on
    either side that only adds or drops them folds into the permutation: Reshape -> Transpose ->
    Reshape(1s only) becomes Reshape (to the first shape's dimensions and 1s) -> Transpose, and
    Reshape(1s only) -> Transpose -> Reshape becomes Transpose -> Reshape. One Reshape node fewer
    each, the same values; not the first where a MatMul or Gemm reads the result (_MATRIX_PRODUCTS).
    Whether any folded."""
    outputs = {o.name for o in g.output}
    uses = value_uses(g)
    made_by = {o: j for j, n in enumerate(g.node) for o in n.output}
    readers: dict[str, list[int]] = {}
    for j, n in enumerate(g.node):
        for v in n.input:
            readers.setdefault(v, []).append(j)
    gone: set[int] = set()

    def multiplies(v: str) -> bool:
        """Whether a MatMul or Gemm reads `v`, or a Cast of it (DirectML's FLOAT16 GEMM in FLOAT32)."""
        users = [g.node[k] for k in readers.get(v, [])]
        return any(u.op_type in _MATRIX_PRODUCTS or (u.op_type == "Cast" and multiplies(u.output[0])) for u in users)

    for i, t in enumerate(g.node):
        if t.op_type != "Transpose" or t.domain or i in gone or t.input[0] not in shapes or t.output[0] not in shapes:
            continue
        x, y = t.input[0], t.output[0]
        rank = len(shapes[x])
        perm = transpose_perm(t, rank)
        big = [k for k, d in enumerate(shapes[x]) if d != 1]
        order = [big.index(k) for k in perm if shapes[x][k] != 1]  # the non-unit dimensions' new order
        j = made_by.get(x)
        before = g.node[j] if j is not None and j not in gone else None
        if before is not None and (before.op_type != "Reshape" or before.domain or uses[x] != 1 or x in outputs):
            before = None
        after_j = readers.get(y, [None])[0] if uses[y] == 1 and y not in outputs else None
        after = g.node[after_j] if after_j is not None and after_j not in gone else None
        if after is not None and (after.op_type != "Reshape" or after.domain or after.output[0] not in shapes):
            after = None
        multiplied = after is not None and multiplies(after.output[0])
        if (
            after is not None
            and before is not None
            and not multiplied
            and _non_unit(shapes[after.output[0]]) == _non_unit(shapes[y])
        ):
            # the Reshape before takes the 1s the one after gave, and the Transpose gives its shape
            z = after.output[0]
            a = _non_unit(shapes[x]) + (1,) * (len(shapes[z]) - len(big))
            if len(a) != len(shapes[z]):
                continue
            viewed = f"{x} ({len(a)}-D)"
            target = numpy_helper.from_array(np.array(a, np.int64), f"{viewed} shape")
            g.initializer.append(target)
            before.input[1], before.output[0], t.input[0] = target.name, viewed, viewed
            shapes[viewed] = a
            _set_perm(t, _perm_onto(a, order, shapes[z]))
            t.output[0] = z
            gone.add(after_j)
        elif before is not None and before.input[0] in shapes and _non_unit(shapes[before.input[0]]) == _non_unit(shapes[x]):
            source = shapes[before.input[0]]
            dims = tuple(shapes[x][k] for k in perm if shapes[x][k] != 1)
            if after is not None:  # the Reshape after takes any shape of the same order
                out = dims + (1,) * (len(source) - len(dims))
            elif len(source) == len(shapes[y]):
                out = shapes[y]
            else:
                continue
            t.input[0] = before.input[0]
            _set_perm(t, _perm_onto(source, order, out))
            if out != shapes[y]:
                t.output[0] = after.input[0] = f"{y} ({len(out)}-D)"
                shapes[t.output[0]] = out
            gone.add(j)
    if gone:
        kept = [_copy(n) for k, n in enumerate(g.node) if k not in gone]
        del g.node[:]
        g.node.extend(kept)
    return bool(gone)


def transpose_perm(t: onnx.NodeProto, rank: int) -> list[int]:
    """A Transpose's perm attribute, or the reversal it means where it has none."""
    return next((list(a.ints) for a in t.attribute if a.name == "perm"), list(range(rank))[::-1])


def _set_perm(t: onnx.NodeProto, perm: list[int]) -> None:
    del t.attribute[:]
    t.attribute.append(onnx.helper.make_attribute("perm", perm))


def _copy(n: onnx.NodeProto) -> onnx.NodeProto:
    """A node apart from its graph (the graph's list is emptied and refilled)."""
    out = onnx.NodeProto()
    out.CopyFrom(n)
    return out
