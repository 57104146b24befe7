"""ArgMax/ArgMin over INT64 and UINT64 on the targets without an integer ArgMax: the `cuda`
target's windowed DOUBLE ranking (argmax._wide_integer_first) and the `portable` target's 22-bit
digits, for every candidate lowering. The data sits in clusters a few thousand apart around
magnitudes where DOUBLE merges neighbours (2**53 and up, the types' ends), with ties."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dml2onnx import lowering
from dml2onnx.ops import argmax
from strategies import SEEDS, axis_subsets, shapes
from support import EPS, make_desc, run_every_variant, tensor

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TARGETS = ("cuda", "portable")


def arg_desc(op: str, dtype: str, shape: tuple[int, ...], axes: list[int], direction: str) -> object:
    out = [1 if i in axes else s for i, s in enumerate(shape)]
    return make_desc(
        op,
        {
            "InputTensor": tensor(dtype, shape),
            "OutputTensor": tensor("INT64", out),
            "AxisCount": len(axes),
            "Axes": axes,
            "AxisDirection": direction,
        },
    )


def clustered(rng: np.random.Generator, dtype: np.dtype, shape: tuple[int, ...], center: int, spread: int) -> np.ndarray:
    """Values within `spread` of `center` (clipped to the type), some far away, with ties."""
    info = np.iinfo(dtype)
    near = [min(max(center + int(d), int(info.min)), int(info.max)) for d in rng.integers(-spread, spread + 1, size=shape).flat]
    far = rng.integers(int(info.min), int(info.max), size=len(near), dtype=dtype, endpoint=True)
    pick = rng.random(len(near)) < 0.15
    values = np.array([int(f) if p else n for n, f, p in zip(near, far, pick, strict=True)], dtype=object)
    x = values.astype(dtype).reshape(shape)
    if x.size > 1:  # a tie: copy one value elsewhere
        flat = x.reshape(-1)
        flat[rng.integers(0, flat.size)] = flat[rng.integers(0, flat.size)]
    return x


def centers(dtype: np.dtype) -> st.SearchStrategy[int]:
    info = np.iinfo(dtype)
    special = [int(info.max), int(info.min), 2**53, 2**53 + 1, 2**62, 2**63 - 2**11, 0]
    if info.min < 0:
        special += [-(2**53), -(2**62), int(info.min) + 2**16]
    else:
        special += [2**64 - 2**12, 2**63]
    return st.one_of(st.sampled_from(special), st.integers(int(info.min), int(info.max)))


@EPS
@SETTINGS
@given(data=st.data(), shape=shapes(1, 4), seed=SEEDS)
@pytest.mark.parametrize("dtype", ["INT64", "UINT64"])
@pytest.mark.parametrize("op", ["ARGMAX", "ARGMIN"])
def test_clusters_where_double_merges_neighbours(
    ep: str, op: str, dtype: str, data: st.DataObject, shape: tuple[int, ...], seed: int
) -> None:
    np_type = np.dtype(dtype.lower())
    axes = data.draw(axis_subsets(len(shape)))
    direction = data.draw(st.sampled_from(["INCREASING", "DECREASING"]))
    spread = data.draw(st.sampled_from([0, 3, 2**11, 2**12, 5000]))
    x = clustered(np.random.default_rng(seed), np_type, shape, data.draw(centers(np_type)), spread)
    run_every_variant(ep, arg_desc(op, dtype, shape, axes, direction), x, TARGETS)


@EPS
@pytest.mark.parametrize("direction", ["INCREASING", "DECREASING"])
@pytest.mark.parametrize(
    ("dtype", "values"),
    [
        # neighbours that round to the same DOUBLE: only exact ranking tells them apart
        ("INT64", [2**62 + 1, 2**62 + 3, 2**62 + 2, 2**62 + 3, 2**62]),
        ("INT64", [-(2**63), -(2**63) + 1, -(2**63), -(2**63) + 1, -(2**63)]),
        ("INT64", [2**63 - 1, 2**63 - 2, 2**63 - 1, -(2**63), 2**63 - 2048]),
        ("UINT64", [2**64 - 1, 2**64 - 2, 2**64 - 4097, 2**64 - 1, 0]),
        ("UINT64", [2**53 + 1, 2**53, 2**53 + 1, 2**53 + 2, 3]),
    ],
)
def test_neighbours_that_round_alike(ep: str, direction: str, dtype: str, values: list[int]) -> None:
    x = np.array(values, dtype=np.dtype(dtype.lower()))
    for op in ("ARGMAX", "ARGMIN"):
        run_every_variant(ep, arg_desc(op, dtype, x.shape, [0], direction), x, TARGETS)


@EPS
@pytest.mark.parametrize("op", ["ARGMAX", "ARGMIN"])
def test_long_rows_through_two_stage(ep: str, op: str) -> None:
    """Rows of 16384 (16 chunks of 1024): the windowed ranking inside both stages."""
    rng = np.random.default_rng(7)
    x = rng.integers(2**62, 2**62 + 4000, size=(3, 16384), dtype=np.int64)
    x[0, [5, 9000]] = 2**62 + 4000  # tied maxima in two chunks
    x[1, [0, 16383]] = 2**62 - 1  # minima at both ends
    for direction in ("INCREASING", "DECREASING"):
        run_every_variant(ep, arg_desc(op, "INT64", x.shape, [1], direction), x, TARGETS)


def test_cuda_target_ranks_64_bit_integers_in_six_passes() -> None:
    """The windowed ranking replaces the digits on the `cuda` target: one DOUBLE ArgMax, one
    FLOAT32 ArgMax, no per-digit Div/Where/ReduceMax."""
    desc = arg_desc("ARGMAX", "INT64", (4, 4096), [1], "INCREASING")
    ops_used = [n.op_type for n in lowering.lower(desc, "t", target="cuda", variant="in_place").graph.node]
    assert ops_used.count("ArgMax") == 2 and "ReduceMax" not in ops_used and "Where" not in ops_used, ops_used
    portable = [n.op_type for n in lowering.lower(desc, "t", target="portable", variant="in_place").graph.node]
    assert "ReduceMax" in portable  # the digits, where DOUBLE ArgMax is not available
    assert argmax._ROUNDING_SPAN + 1 < 2**24  # every distance is exact in FLOAT32
