"""Reading a tensor out of its flat buffer inside the graph, honouring Strides (for
`export --buffer-inputs` and strided bindings in `--single-graph`).

Packed tensors are a Slice + Reshape. Padded, transposed and broadcast layouts (each axis fits
inside one step of the next larger stride; stride 0 repeats) are read with Reshape, Slice,
Transpose and Expand, which move no more than the tensor. Anything else (overlapping windows)
gathers each element at its buffer offset, given as a constant."""

from __future__ import annotations

from itertools import pairwise

import numpy as np

from dml2onnx.core.tensor import TensorDesc
from dml2onnx.graph.builder import GraphBuilder


def compact_sizes(t: TensorDesc) -> tuple[int, ...]:
    """The sizes `read(..., expand=False)` gives: 1 on each axis whose stride is 0 (the element
    repeats), where the layout is one `read` views without gathering; the tensor's sizes otherwise."""
    order = t.nested_order()
    if t.packed or order is None:
        return t.sizes
    return tuple(s if i in order else 1 for i, s in enumerate(t.sizes))


def read(b: GraphBuilder, flat: str, t: TensorDesc, length: int, step: str, expand: bool = True) -> str:
    """The logical tensor `t` from the 1-D value `flat` of `length` elements (its buffer). With
    `expand` False, the axes of stride 0 keep size 1 (compact_sizes): for a consumer that
    broadcasts, so that a broadcast input is read once, as DirectML reads it."""
    if t.packed:
        x = flat
        if length != t.element_count:
            x = b.slice(x, [0], [0], [t.element_count], f"{step}_elements", "the tensor's elements")
        return b.reshape(x, t.sizes, step, f"the buffer as {t.describe()}")
    order = t.nested_order()
    if order is None:
        offsets = b.const(t.offsets().astype(np.int32 if length < 2**31 else np.int64), f"{step}_offsets")
        return b.node("Gather", [flat, offsets], step, f"each element at its buffer offset (strides {list(t.layout)})", axis=0)
    sizes, strides = t.sizes, t.layout
    if not order:  # one element, repeated on every axis
        x = b.slice(flat, [0], [0], [1], f"{step}_first", "the only element")
    else:
        outer = order[0]
        need = sizes[outer] * strides[outer]  # whole steps of the largest stride
        x = flat
        if length > need:
            x = b.slice(x, [0], [0], [need], f"{step}_used", "the part of the buffer the strides reach")
        elif length < need:  # the last step is cut short: pad it (the padding is never read)
            fill = b.const(np.zeros(need - length, t.data_type.numpy), f"{step}_tail")
            x = b.node("Concat", [x, fill], f"{step}_whole_steps", "pads the buffer to whole steps", axis=0)
        padded = [sizes[outer]] + [strides[a] // strides[c] for a, c in pairwise(order)] + [strides[order[-1]]]
        ends = [sizes[a] for a in order[1:]] + [1]
        if ends != padded[1:]:  # padding between elements: view the steps, then cut it off
            x = b.reshape(x, padded, f"{step}_padded", f"the buffer in steps of the strides {[strides[a] for a in order]}")
            axes = list(range(1, len(padded)))
            x = b.slice(x, axes, [0] * len(axes), ends, f"{step}_unpadded", "drops the padding between elements")
        x = b.reshape(x, [sizes[a] for a in order], f"{step}_by_stride", "one axis per stride, largest first")
        perm = [order.index(a) for a in sorted(order)]
        if perm != list(range(len(order))):
            x = b.transpose(x, perm, f"{step}_axes_in_order", "the axes back in the tensor's order")
    kept = [s if i in order else 1 for i, s in enumerate(sizes)]
    if kept != [sizes[a] for a in sorted(order)]:
        x = b.reshape(x, kept, f"{step}_kept", "size 1 where the stride is 0 or the size 1")
    if expand and tuple(kept) != tuple(sizes):
        x = b.node("Expand", [x, b.i64(list(sizes), f"{step}_sizes")], f"{step}_broadcast", "stride 0: the element repeats")
    return x
