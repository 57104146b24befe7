"""ArgMax/ArgMin/Hardmax1 over axes in several runs whose last run is innermost (`inner_first`):
the extreme of each innermost row in place, then the first (last) row holding the overall extreme
among the other reduced axes, then that row's position. Ties across rows, -inf blocks, integer
inputs and both directions must give the index of one search in row-major order of the axes."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import onnx
import pytest

from dml2onnx import lowering
from dml2onnx.graph.builder import DEFAULT_OPSET
from dml2onnx.lowering import choices
from dml2onnx.ops import argmax, common, hardmax1
from support import EPS, make_desc, run_every_variant, tensor

# (shape, axes): the last run innermost, the runs apart; short and long inner runs
CASES = [
    ((4, 3, 5), [0, 2]),
    ((3, 2, 4, 2, 3), [0, 2, 4]),
    ((2, 3, 4, 5), [0, 1, 3]),
    ((3, 2, 4, 6), [0, 2, 3]),
    ((5, 4, 300), [0, 2]),
    ((2, 1, 3, 1, 7), [1, 3, 4]),
]


def desc_for(op: str, dtype: str, shape: tuple[int, ...], axes: list[int], direction: str = "INCREASING") -> Any:
    fields: dict[str, Any] = {"InputTensor": tensor(dtype, shape), "AxisCount": len(axes), "Axes": axes}
    if op == "ACTIVATION_HARDMAX1":
        return make_desc(op, fields | {"OutputTensor": tensor(dtype, shape)})
    out = [1 if i in axes else s for i, s in enumerate(shape)]
    return make_desc(op, fields | {"OutputTensor": tensor("INT64", out), "AxisDirection": direction})


def tied(shape: tuple[int, ...], axes: list[int], dtype: str, seed: int) -> np.ndarray:
    """Per kept element, its reduced block (row-major over the axes) gets one of: the extreme at
    the first or the last place, once at random, twice at random, once in every innermost row
    (ties across rows), everywhere; values from a few levels otherwise; one block all -inf for
    float types. The extreme is 9 (ARGMIN's is found by the same pattern: -9)."""
    rng = np.random.default_rng(seed)
    kept = [a for a in range(len(shape)) if a not in axes]
    rows, length = math.prod(shape[a] for a in kept), math.prod(shape[a] for a in axes)
    inner = math.prod(shape[a] for a in common.axis_runs(tuple(axes))[-1])
    flat = rng.integers(-3, 4, size=(rows, length)).astype(np.float64)
    for r in range(rows):
        kind = r % 6
        if kind == 0:
            flat[r, 0] = 9
        elif kind == 1:
            flat[r, -1] = 9
        elif kind == 2:
            flat[r, rng.integers(length)] = 9
        elif kind == 3:
            flat[r, rng.choice(length, 2, replace=False)] = 9
        elif kind == 4:
            flat[r, np.arange(0, length, inner) + rng.integers(inner, size=length // inner)] = 9
        else:
            flat[r] = 9
    if dtype.startswith("FLOAT"):
        flat[rows // 2] = -np.inf
    elif dtype.startswith("UINT"):
        flat += 3
    moved = flat.reshape([shape[a] for a in kept] + [shape[a] for a in axes])
    return np.ascontiguousarray(np.transpose(moved, np.argsort(kept + axes))).astype(np.dtype(dtype.lower()))


@EPS
@pytest.mark.parametrize(("shape", "axes"), CASES, ids=[f"{s}-{a}" for s, a in CASES])
@pytest.mark.parametrize(
    ("op", "direction"), [("ARGMAX", "INCREASING"), ("ARGMAX", "DECREASING"), ("ARGMIN", "INCREASING"), ("ARGMIN", "DECREASING")]
)
@pytest.mark.parametrize("dtype", ["FLOAT32", "FLOAT16", "INT32", "UINT8"])
def test_arg_ops(ep: str, shape: tuple[int, ...], axes: list[int], op: str, direction: str, dtype: str) -> None:
    desc = desc_for(op, dtype, shape, axes, direction)
    assert "inner_first" in choices.available(desc, DEFAULT_OPSET)
    for seed in range(2):
        x = tied(shape, axes, dtype, seed)
        run_every_variant(ep, desc, -x if op == "ARGMIN" and dtype != "UINT8" else x)


@EPS
@pytest.mark.parametrize("direction", ["INCREASING", "DECREASING"])
@pytest.mark.parametrize("dtype", ["INT64", "UINT64"])
def test_wide_integers(ep: str, direction: str, dtype: str) -> None:
    """64-bit values a few apart near 2**62, where DOUBLE merges neighbours: both stages rank exactly
    on the `cuda` target (DOUBLE ArgMax) and on `portable` (22-bit digits)."""
    shape, axes = (3, 4, 2, 5), [0, 1, 3]
    x = (tied(shape, axes, "INT64", 4) + 2**62).astype(dtype.lower())
    run_every_variant(ep, desc_for("ARGMAX", dtype, shape, axes, direction), x, targets=("portable", "cuda"))


@EPS
@pytest.mark.parametrize(("shape", "axes"), CASES, ids=[f"{s}-{a}" for s, a in CASES])
@pytest.mark.parametrize("dtype", ["FLOAT32", "FLOAT16"])
def test_hardmax1(ep: str, shape: tuple[int, ...], axes: list[int], dtype: str) -> None:
    desc = desc_for("ACTIVATION_HARDMAX1", dtype, shape, axes)
    for seed in range(2):
        run_every_variant(ep, desc, tied(shape, axes, dtype, seed))


def element_counts(model: onnx.ModelProto) -> dict[str, int]:
    inferred = onnx.shape_inference.infer_shapes(model)
    counts = {}
    for v in [*inferred.graph.value_info, *inferred.graph.input]:
        dims = v.type.tensor_type.shape.dim
        counts[v.name] = math.prod(d.dim_value for d in dims)
    return counts


@pytest.mark.parametrize("op", ["ARGMAX", "ACTIVATION_HARDMAX1"])
def test_no_transpose_of_the_input(op: str) -> None:
    """The point of inner_first: every Transpose moves a tensor the inner run's length times smaller
    than the input, where in_place moves the whole input."""
    shape, axes = (16, 8, 256), [0, 2]
    desc = desc_for(op, "FLOAT32", shape, axes)
    for target in ("portable", "cuda"):
        model = lowering.lower(desc, "t", target=target, variant="inner_first")
        counts = element_counts(model)
        moved = [counts[n.input[0]] for n in model.graph.node if n.op_type == "Transpose"]
        assert moved and max(moved) <= math.prod(shape) // 256, (target, moved)
        in_place = lowering.lower(desc, "t", target=target, variant="in_place")
        counts = element_counts(in_place)
        assert math.prod(shape) in [counts[n.input[0]] for n in in_place.graph.node if n.op_type == "Transpose"]


def test_applies_and_is_chosen() -> None:
    """Chosen where the innermost rows reach 128 elements: shorter, the CUDA EP's ArgMax scans each
    row with one thread, and the Transpose of the other candidates costs less (H200)."""
    for shape, axes, applies, chosen in [
        ((256, 1024, 256), [0, 2], True, True),
        ((4, 5, 2, 64), [0, 2, 3], True, True),  # a run of 2 x 64
        ((256, 4096, 64), [0, 2], True, False),
        ((4, 5, 6, 7), [0, 1, 3], True, False),
        ((4, 5, 6), [0, 1], False, False),  # one run
        ((4, 5, 6), [1, 2], False, False),  # one run, innermost
        ((4, 5, 6, 7), [0, 2], False, False),  # the last run is not innermost
    ]:
        assert argmax.inner_first_applies(shape, tuple(axes)) == applies
        for op in ("ARGMAX", "ARGMIN", "ACTIVATION_HARDMAX1"):
            desc = desc_for(op, "FLOAT32", shape, axes)
            assert ("inner_first" in choices.available(desc, DEFAULT_OPSET)) == applies
            for target in ("cuda", "portable"):
                assert (choices.choose(desc, target, DEFAULT_OPSET) == "inner_first") == chosen, (shape, op, target)


def test_hardmax1_writes_rows_of_the_last_axis() -> None:
    """Axes apart whose last is long: the one-hot along it, in the output's shape, for every
    candidate but one_hot_product (no Transpose or Reshape after the OneHot)."""
    shape, axes = (6, 3, 256), [0, 2]
    assert hardmax1.one_hot_on_last_axis_applies(shape, tuple(axes))
    desc = desc_for("ACTIVATION_HARDMAX1", "FLOAT32", shape, axes)
    for variant in choices.available(desc, DEFAULT_OPSET):
        last = lowering.lower(desc, "t", target="cuda", variant=variant).graph.node[-1]
        assert (last.op_type == "OneHot") == (variant != "one_hot_product"), (variant, last.op_type)
