"""The value of a graph value computed from initializers alone through views (Reshape, Slice,
Expand, Transpose), as graph/views.py leaves a broadcast constant's: what the `cuda` target's
rewrites read to fold such a constant into the node that uses it."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper


def constant_value(
    v: str, made_by: dict[str, onnx.NodeProto], consts: dict[str, onnx.TensorProto], depth: int = 0
) -> np.ndarray | None:
    """A value computed from initializers alone by views (Reshape, Slice, Expand, Transpose), as
    graph/views.py leaves a broadcast constant's; None for any other."""
    if v in consts:
        return numpy_helper.to_array(consts[v])
    n = made_by.get(v)
    if n is None or n.domain or depth > 8:
        return None
    args = [constant_value(x, made_by, consts, depth + 1) if x else None for x in n.input]
    if any(a is None for a, x in zip(args, n.input, strict=True) if x):
        return None
    if n.op_type == "Reshape":
        return args[0].reshape(args[1])
    if n.op_type == "Expand":
        return np.broadcast_to(args[0], np.broadcast_shapes(args[0].shape, tuple(args[1]))).copy()
    if n.op_type == "Transpose":
        perm = next((list(a.ints) for a in n.attribute if a.name == "perm"), None)
        return np.transpose(args[0], perm)
    if n.op_type == "Slice":
        x = args[0]
        axes = args[3].tolist() if len(args) > 3 and args[3] is not None else list(range(len(args[1])))
        steps = args[4].tolist() if len(args) > 4 and args[4] is not None else [1] * len(axes)
        index = [slice(None)] * x.ndim
        for a, b, e, st in zip(axes, args[1].tolist(), args[2].tolist(), steps, strict=True):
            index[a] = slice(b, e, st)
        return x[tuple(index)]
    return None
