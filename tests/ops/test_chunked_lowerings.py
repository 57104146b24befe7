"""The candidates that cut a long reduced axis into chunks, on rows long enough for their real
chunk sizes: ArgMax/ArgMin/Hardmax1 `two_stage` (chunks of about 1024, the axes moved last first)
and LogSoftmax1 `chunked_chain` (chunks of up to 65536). The extreme is placed in a chosen chunk,
tied across chunks, at chunk borders, and rows hold -inf, +inf and values near 5e4."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from dml2onnx import lowering
from dml2onnx.backends import runtime
from dml2onnx.lowering import choices
from dml2onnx.ops import argmax, log_softmax1, registry
from support import EPS, make_desc, run_every_variant, tensor

DEFAULT_OPSET = lowering.DEFAULT_OPSET


def arg_desc(op: str, shape: tuple[int, ...], axes: list[int], direction: str, dtype: str = "FLOAT32") -> object:
    fields = {"InputTensor": tensor(dtype, shape), "AxisCount": len(axes), "Axes": axes}
    if op == "ACTIVATION_HARDMAX1":
        return make_desc(op, fields | {"OutputTensor": tensor(dtype, shape)})
    out = [1 if i in axes else s for i, s in enumerate(shape)]
    return make_desc(op, fields | {"OutputTensor": tensor("INT64", out), "AxisDirection": direction})


def rows_with_planted_extremes(rows: int, length: int, chunk: int, dtype: np.dtype, seed: int) -> np.ndarray:
    """(rows, length): small integers (many ties inside a chunk), and per row a maximum and a
    minimum planted at chunk borders, inside one chunk, or tied across several chunks."""
    rng = np.random.default_rng(seed)
    x = rng.integers(-3, 4, size=(rows, length)).astype(dtype)
    for r in range(rows):
        kind = r % 5
        top, bottom = (9, -9) if r % 2 else (50000, -50000)
        if kind == 0:  # the first and last element of the row
            spots = [0, length - 1]
        elif kind == 1:  # both ends of one chunk
            c = rng.integers(0, length // chunk)
            spots = [c * chunk, c * chunk + chunk - 1]
        elif kind == 2:  # tied across several chunks, at different positions within them
            chosen = rng.choice(length // chunk, min(3, length // chunk), replace=False)
            spots = [int(c * chunk + rng.integers(0, chunk)) for c in chosen]
        elif kind == 3:  # one place only
            spots = [int(rng.integers(0, length))]
        else:  # a row of -inf with one finite value, or of +inf
            x[r] = -np.inf if r % 2 else np.inf
            spots = [] if r % 2 == 0 else [int(rng.integers(0, length))]
            x[r, spots] = 1
            continue
        x[r, spots] = top
        x[r, [(s + chunk // 2) % length for s in spots]] = bottom
    return x


ARG_CASES = [
    # (shape, axes): rows of 16384 (16 chunks of 1024), 4096 (4 x 1024), 3 x 1021 (a prime chunk)
    ((10, 16384), [1]),
    ((10, 4096), [1]),
    ((10, 3063), [1]),
]


@EPS
@pytest.mark.parametrize("op", ["ARGMAX", "ARGMIN", "ACTIVATION_HARDMAX1"])
@pytest.mark.parametrize("direction", ["INCREASING", "DECREASING"])
@pytest.mark.parametrize(("shape", "axes"), ARG_CASES)
@pytest.mark.parametrize("dtype", ["FLOAT32", "FLOAT16"])
def test_two_stage_on_long_rows(ep: str, op: str, direction: str, shape: tuple[int, ...], axes: list[int], dtype: str) -> None:
    if op == "ACTIVATION_HARDMAX1" and direction == "DECREASING":
        pytest.skip("Hardmax1 has no direction")
    desc = arg_desc(op, shape, axes, direction, dtype)
    assert "two_stage" in choices.available(desc, DEFAULT_OPSET)
    chunk = argmax.split(shape[1])[1]
    x = rows_with_planted_extremes(shape[0], shape[1], chunk, np.dtype(dtype.lower()), seed=len(axes) + shape[1])
    if dtype == "FLOAT16":
        x = np.clip(x, -30000, 30000).astype(np.float16) if np.isfinite(x).all() else x
    run_every_variant(ep, desc, x)


@EPS
@pytest.mark.parametrize("direction", ["INCREASING", "DECREASING"])
@pytest.mark.parametrize(("shape", "axes"), [((4096, 5), [0]), ((4, 1024, 3), [1]), ((32, 5, 128), [0, 2])])
def test_two_stage_moves_outer_axes_last(ep: str, direction: str, shape: tuple[int, ...], axes: list[int]) -> None:
    """Outer and separate axes: Transpose, then the chunks; the same index as one pass."""
    desc = arg_desc("ARGMAX", shape, axes, direction)
    rows, length = int(np.prod([s for i, s in enumerate(shape) if i not in axes])), int(np.prod([shape[a] for a in axes]))
    flat = rows_with_planted_extremes(rows, length, argmax.split(length)[1], np.dtype(np.float32), seed=3)
    kept = [i for i in range(len(shape)) if i not in axes]
    moved = flat.reshape([shape[i] for i in kept + axes])
    x = np.ascontiguousarray(np.transpose(moved, np.argsort(kept + axes)))
    run_every_variant(ep, desc, x)


def test_two_stage_graph_reverses_only_the_chosen_chunk() -> None:
    """DECREASING on the `cuda` target: the Slice that reverses runs on (rows, chunk length) and
    (rows, chunks), never on the whole input."""
    desc = arg_desc("ARGMAX", (64, 16384), [1], "DECREASING")
    model = onnx.shape_inference.infer_shapes(lowering.lower(desc, "t", target="cuda", variant="two_stage"))
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim] for v in model.graph.value_info}
    reversed_shapes = [shapes[n.input[0]] for n in model.graph.node if n.op_type == "Slice"]
    assert sorted(reversed_shapes) == [[64, 16], [64, 1024]]


# (shape, axes, dtype) with (chunks, chunk length) of chunked_chain
CHAIN_CASES = [
    ((4, 4096), [1], "FLOAT32", (2, 2048)),
    ((2, 3, 64, 64), [2, 3], "FLOAT32", (2, 2048)),
    ((4, 4, 1024), [1, 2], "FLOAT16", (2, 2048)),
    ((4, 3 * 65536), [1], "FLOAT32", (3, 65536)),
    ((1, 5, 1031 * 3), [2], "FLOAT32", (3, 1031)),
]


@pytest.mark.parametrize(("shape", "axes", "dtype", "split"), CHAIN_CASES)
def test_chain_split(shape: tuple[int, ...], axes: list[int], dtype: str, split: tuple[int, int]) -> None:
    desc = make_desc(
        "ACTIVATION_LOG_SOFTMAX1",
        {"InputTensor": tensor(dtype, shape), "OutputTensor": tensor(dtype, shape), "AxisCount": len(axes), "Axes": axes},
    )
    assert log_softmax1.chain_split(desc) == split
    assert "chunked_chain" in choices.available(desc, DEFAULT_OPSET)


@pytest.mark.parametrize(
    ("shape", "axes"), [((3, 4096), [0]), ((64, 3, 64), [0, 2]), ((2, 1024), [1]), ((2, 1048573), [1]), ((4096, 3), [0, 1])]
)
def test_no_chunked_chain_without_trailing_chunks(shape: tuple[int, ...], axes: list[int]) -> None:
    """Axes that are not trailing and contiguous, rows under 2048, a prime length: no chunks."""
    fields = {"InputTensor": tensor("FLOAT32", shape), "OutputTensor": tensor("FLOAT32", shape), "AxisCount": len(axes)}
    desc = make_desc("ACTIVATION_LOG_SOFTMAX1", fields | {"Axes": axes})
    expected = shape == (4096, 3)  # all axes: one row of 12288, trailing and contiguous
    assert (log_softmax1.chain_split(desc) is not None) == expected


@EPS
@pytest.mark.parametrize(("shape", "axes", "dtype", "split"), CHAIN_CASES)
def test_chunked_chain_values(ep: str, shape: tuple[int, ...], axes: list[int], dtype: str, split: tuple[int, int]) -> None:
    """Every candidate, with the maximum placed in one chunk or tied across chunks, values near
    5e4 (3e4 in FLOAT16) spread widely enough that FLOAT32 sums of long rows stay within the
    tolerance, a row of -inf (NaN, as the reference) and one holding +inf."""
    desc = make_desc(
        "ACTIVATION_LOG_SOFTMAX1",
        {"InputTensor": tensor(dtype, shape), "OutputTensor": tensor(dtype, shape), "AxisCount": len(axes), "Axes": axes},
    )
    rows, length = int(np.prod(shape)) // (split[0] * split[1]), split[0] * split[1]
    big = 3e4 if dtype == "FLOAT16" else 5e4
    flat = big + np.round(np.random.default_rng(11).standard_normal((rows, length)) * 30, 1)
    flat[0, split[1] + 7] = big + 400  # the maximum inside the second chunk
    flat[1, [5, split[1] + 5]] = big + 300  # tied across two chunks
    flat[2] = -np.inf
    flat[3, 9] = np.inf
    x = flat.astype(dtype.lower()).reshape(shape)
    want = registry.family("ACTIVATION_LOG_SOFTMAX1").reference(desc, {"InputTensor": x})
    assert np.isfinite(want.reshape(rows, length)[0]).all()
    run_every_variant(ep, desc, x)


def test_chunked_chain_runs_on_cpu_with_random_rows() -> None:
    """Random rows, once more against the reference alone (not only against other candidates)."""
    desc = make_desc(
        "ACTIVATION_LOG_SOFTMAX1",
        {"InputTensor": tensor("FLOAT32", (3, 8192)), "OutputTensor": tensor("FLOAT32", (3, 8192)), "AxisCount": 1, "Axes": [1]},
    )
    x = (np.random.default_rng(2).standard_normal((3, 8192)) * 20).astype(np.float32)
    got = runtime.create(lowering.lower(desc, "t", variant="chunked_chain"), "t", "cpu").run({"InputTensor": x})
    want = x.astype(np.float64) - x.max(1, keepdims=True)
    want = want - np.log(np.exp(want).sum(1, keepdims=True))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
