"""Large outputs are written by their last compute node in the output's own shape: a Reshape that
ends a graph copies the whole output when the caller binds its own output buffer (ONNX Runtime io
binding, as `dml2onnx bench` and DirectML apps do). Hardmax1 over several contiguous axes writes its
one-hot along the last reduced axis (hardmax1._one_hot_on_last_axis); LogSoftmax1's chunked chain
takes its last Sub in the input's shape."""

from __future__ import annotations

import numpy as np
import pytest

from dml2onnx import lowering
from dml2onnx.graph.builder import DEFAULT_OPSET
from dml2onnx.lowering import choices
from dml2onnx.ops import hardmax1
from support import EPS, make_desc, run_every_variant, tensor


def hardmax_desc(shape: tuple[int, ...], axes: list[int], dtype: str = "FLOAT32") -> object:
    fields = {"InputTensor": tensor(dtype, shape), "OutputTensor": tensor(dtype, shape), "AxisCount": len(axes), "Axes": axes}
    return make_desc("ACTIVATION_HARDMAX1", fields)


def planted(shape: tuple[int, ...], axes: list[int], seed: int, dtype: str) -> np.ndarray:
    """Few distinct values (ties everywhere); per kept element the maximum at the first, the last,
    or a random place of its reduced block, or twice; one block of -inf only."""
    rng = np.random.default_rng(seed)
    kept = [a for a in range(len(shape)) if a not in axes]
    moved_shape = [shape[a] for a in kept] + [shape[a] for a in axes]
    rows, length = int(np.prod([shape[a] for a in kept])), int(np.prod([shape[a] for a in axes]))
    flat = rng.integers(-3, 4, size=(rows, length)).astype(np.float64)
    for r in range(rows):
        spots = [[0], [length - 1], [int(rng.integers(length))], list(rng.choice(length, 2, replace=False))][r % 4]
        flat[r, spots] = 9
    flat[rows // 2] = -np.inf
    moved = flat.reshape(moved_shape)
    return np.ascontiguousarray(np.transpose(moved, np.argsort(kept + axes))).astype(dtype.lower())


# (shape, axes): every axis, trailing pairs, leading pairs, a middle pair, axes apart; the last
# reduced axis >= 64 (hardmax1._ROW_ONE_HOT_MIN)
ROW_ONE_HOT_CASES = [
    ((64, 512), [0, 1]),
    ((5, 2, 3, 256), [0, 1, 2, 3]),
    ((3, 4, 300), [1, 2]),
    ((4, 300, 7), [0, 1]),
    ((2, 5, 256, 3), [1, 2]),
    ((3, 2, 2, 257), [1, 2, 3]),
    ((3, 5, 256), [0, 2]),
    ((2, 3, 4, 300), [0, 1, 3]),
    ((4, 64), [0, 1]),
    ((6, 5, 64), [0, 2]),
    ((3, 7, 2, 65), [1, 3]),
]


@EPS
@pytest.mark.parametrize(("shape", "axes"), ROW_ONE_HOT_CASES)
@pytest.mark.parametrize("dtype", ["FLOAT32", "FLOAT16"])
def test_hardmax1_one_hot_along_the_last_reduced_axis(ep: str, shape: tuple[int, ...], axes: list[int], dtype: str) -> None:
    desc = hardmax_desc(shape, axes, dtype)
    assert hardmax1.one_hot_on_last_axis_applies(shape, tuple(axes))
    run_every_variant(ep, desc, planted(shape, axes, seed=len(shape) + shape[-1], dtype=dtype))


@pytest.mark.parametrize(("shape", "axes"), ROW_ONE_HOT_CASES)
def test_hardmax1_ends_in_onehot(shape: tuple[int, ...], axes: list[int]) -> None:
    desc = hardmax_desc(shape, axes)
    for target in ("portable", "cuda"):
        for variant in choices.available(desc, DEFAULT_OPSET):
            if variant == "one_hot_product":
                continue
            last = lowering.lower(desc, "t", target=target, variant=variant).graph.node[-1]
            assert last.op_type == "OneHot", (target, variant, last.op_type)


@pytest.mark.parametrize(
    ("shape", "axes"),
    [((64, 512), [1]), ((2, 3, 4, 256), [1, 2]), ((4, 63, 2, 63), [2, 3]), ((3, 512, 4), [0, 2]), ((300, 300, 256), [0, 1, 2])],
)
def test_row_one_hot_only_for_several_axes_ending_long(shape: tuple[int, ...], axes: list[int]) -> None:
    """One axis (OneHot writes the output's shape already), a short last reduced axis (the rows'
    indices would cost more than the copy saves), more rows than the model should number in a
    constant (hardmax1._ROW_NUMBERS_MAX)."""
    assert not hardmax1.one_hot_on_last_axis_applies(shape, tuple(axes))


@pytest.mark.parametrize(("shape", "axes", "dtype"), [((4, 4096), [1], "FLOAT32"), ((4, 4, 1024), [1, 2], "FLOAT16")])
def test_chunked_chain_ends_in_the_input_shape(shape: tuple[int, ...], axes: list[int], dtype: str) -> None:
    fields = {"InputTensor": tensor(dtype, shape), "OutputTensor": tensor(dtype, shape), "AxisCount": len(axes), "Axes": axes}
    desc = make_desc("ACTIVATION_LOG_SOFTMAX1", fields)
    last = lowering.lower(desc, "t", target="cuda", variant="chunked_chain").graph.node[-1]
    assert last.op_type == ("Cast" if dtype == "FLOAT16" else "Sub")
