"""DML_OPERATOR_REVERSE_SUBSEQUENCES: the page's examples, lengths past the axis as DirectML
computes them (the source index clamped, not the length), UINT64 lengths, every type moved bit
for bit, refusals, and properties against the numpy reference."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dml2onnx import lowering
from dml2onnx.backends import dmlapi
from dml2onnx.core import operator_table
from dml2onnx.core.errors import format_path
from dml2onnx.graph import dml_ep
from strategies import SEEDS, shapes
from support import EPS, assert_matches_reference, make_desc, refusal, run_lowered, tensor

OP = "REVERSE_SUBSEQUENCES"
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TYPES = [t.name for t in operator_table.OPERATORS[OP].support[0].tensors["InputTensor"].types]


def fields(dtype: str, shape: tuple[int, ...], axis: int, lengths: str = "UINT32") -> dict[str, Any]:
    ls = tuple(1 if i == axis else s for i, s in enumerate(shape))
    return {
        "InputTensor": tensor(dtype, shape),
        "SequenceLengthsTensor": tensor(lengths, ls),
        "OutputTensor": tensor(dtype, shape),
        "Axis": axis,
    }


def reverse(x: Any, lengths: list[int], axis: int, dtype: str = "FLOAT32", lt: str = "UINT32") -> np.ndarray:
    x = np.asarray(x, np.dtype(dtype.lower()))
    ls = tuple(1 if i == axis else s for i, s in enumerate(x.shape))
    feeds = {"InputTensor": x, "SequenceLengthsTensor": np.array(lengths, np.dtype(lt.lower())).reshape(ls)}
    return run_lowered(make_desc(OP, fields(dtype, x.shape, axis, lt)), feeds)


X = np.arange(1, 13, dtype=np.float32).reshape(1, 1, 3, 4)


def test_page_examples() -> None:
    np.testing.assert_array_equal(reverse(X, [2, 4, 3], 3).reshape(3, 4), [[2, 1, 3, 4], [8, 7, 6, 5], [11, 10, 9, 12]])
    # along another axis: lengths 1 and 0 leave their lines as they are
    np.testing.assert_array_equal(reverse(X, [2, 3, 1, 0], 2).reshape(3, 4), [[5, 10, 3, 4], [1, 6, 7, 8], [9, 2, 11, 12]])


# (lengths along a line of 7, DirectML's output): output i is input min(L - 1 - i, n - 1) for i < L
PAST_THE_AXIS = [
    (0, [0, 1, 2, 3, 4, 5, 6]),
    (1, [0, 1, 2, 3, 4, 5, 6]),
    (7, [6, 5, 4, 3, 2, 1, 0]),
    (8, [6, 6, 5, 4, 3, 2, 1]),
    (10, [6, 6, 6, 6, 5, 4, 3]),
    (13, [6, 6, 6, 6, 6, 6, 6]),
    (100, [6, 6, 6, 6, 6, 6, 6]),
    (2**32 - 1, [6, 6, 6, 6, 6, 6, 6]),
]


@pytest.mark.parametrize(("length", "want"), PAST_THE_AXIS)
@pytest.mark.parametrize("lt", ["UINT32", "UINT64"])
def test_lengths_past_the_axis(length: int, want: list[int], lt: str) -> None:
    """Not the page's clamped length (8 would reverse all 7): DirectML clamps the source index."""
    np.testing.assert_array_equal(reverse(np.arange(7), [length], 0, "INT8", lt), want)


def test_uint64_lengths_whole() -> None:
    """2**32 + 2 is past the axis (the reference and the graphs); DirectML reads its low 32 bits (2)."""
    np.testing.assert_array_equal(reverse(np.arange(5), [2**32 + 2], 0, "INT64", "UINT64"), [4, 4, 4, 4, 4])


@pytest.mark.parametrize("dtype", ["FLOAT64", "UINT64", "INT64", "FLOAT16"])
def test_bits_are_moved_exactly(dtype: str) -> None:
    t = np.dtype(dtype.lower())
    if t.kind == "f":
        x = (
            np.arange(6, dtype=np.uint64 if t.itemsize == 8 else np.uint16) | (0x7FF8000000000001 if t.itemsize == 8 else 0x7C01)
        ).view(t)
    else:
        x = (np.arange(6, dtype=np.int64) + 2**53 + 1).astype(t)
    got = reverse(x, [4], 0, dtype, "UINT64")
    assert got.tobytes() == np.concatenate([x[:4][::-1], x[4:]]).tobytes()


def test_rank_1_to_8_and_static_checks() -> None:
    for rank in range(1, 9):
        shape = (2, 3, 1, 2, 3, 1, 2, 2)[:rank]
        for lt in ("UINT32", "UINT64"):
            model = lowering.lower(make_desc(OP, fields("UINT16", shape, rank - 1, lt)), "t")
            assert dml_ep.check(model) == []


_why = dmlapi.missing()
live = pytest.mark.skipif(_why is not None, reason=f"DirectML's API under Wine is not set up ({_why})")


@live
def test_directml_computes_so() -> None:
    x = np.arange(7, dtype=np.int8)
    for length, want in PAST_THE_AXIS:
        feeds = {"InputTensor": x, "SequenceLengthsTensor": np.array([length], np.uint32)}
        got = dmlapi.execute(make_desc(OP, fields("INT8", (7,), 0)), feeds).output
        np.testing.assert_array_equal(got, want, err_msg=str(length))
    feeds = {"InputTensor": np.arange(5, dtype=np.int64), "SequenceLengthsTensor": np.array([2**32 + 2], np.uint64)}
    got = dmlapi.execute(make_desc(OP, fields("INT64", (5,), 0, "UINT64")), feeds).output
    np.testing.assert_array_equal(got, [1, 0, 2, 3, 4])  # the finding: low 32 bits (tests/dml_findings.py)


REFUSALS = [
    ({"Axis": 4}, "desc.Axis", "must be less than InputTensor's DimensionCount (4)"),
    ({"SequenceLengthsTensor": tensor("UINT32", (1, 1, 3, 4))}, "desc.SequenceLengthsTensor.Sizes", "must be [1, 1, 3, 1]"),
    ({"SequenceLengthsTensor": tensor("UINT32", (1, 1, 1, 1))}, "desc.SequenceLengthsTensor.Sizes", "must be [1, 1, 3, 1]"),
    ({"SequenceLengthsTensor": tensor("UINT32", (1, 3, 1))}, "desc.SequenceLengthsTensor.Sizes", "same DimensionCount"),
    ({"OutputTensor": tensor("INT32", (1, 1, 3, 4))}, "desc.OutputTensor.DataType", "same DataType"),
    ({"OutputTensor": tensor("FLOAT32", (1, 1, 4, 3))}, "desc.OutputTensor.Sizes", "same Sizes"),
]


@pytest.mark.parametrize(("change", "path", "message"), REFUSALS)
def test_refusals(change: dict[str, Any], path: str, message: str) -> None:
    """DirectML refuses these too (E_INVALIDARG, measured: no broadcasting of the lengths)."""
    e = refusal(OP, fields("FLOAT32", (1, 1, 3, 4), 3) | change)
    assert format_path(e.path) == path and message in e.rule, (e.path, e.rule)


def test_older_levels() -> None:
    e = refusal(OP, fields("FLOAT32", (3, 4), 1, "UINT64"), level="4_1")
    assert e.path == ("desc", "SequenceLengthsTensor", "DataType")
    e = refusal(OP, fields("FLOAT32", (3, 4), 1), level="3_0")
    assert e.path[-1] == "Sizes"


@EPS
@SETTINGS
@given(
    shape=shapes(),
    axis_pick=st.integers(0, 7),
    dtype=st.sampled_from(TYPES),
    lt=st.sampled_from(["UINT32", "UINT64"]),
    seed=SEEDS,
)
def test_matches_reference(ep: str, shape: tuple[int, ...], axis_pick: int, dtype: str, lt: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    axis = axis_pick % len(shape)
    n = shape[axis]
    t = np.dtype(dtype.lower())
    if t.kind == "f":
        x = (rng.standard_normal(shape) * 100).astype(t)
    else:
        info = np.iinfo(t)
        x = rng.integers(int(info.min), int(info.max), shape, dtype=t, endpoint=True)
    ls = tuple(1 if i == axis else s for i, s in enumerate(shape))
    pool = np.array([0, 1, n, n + 1, 2 * n - 1, 2 * n, 2**32 - 1, *range(n)], np.int64)
    feeds = {"InputTensor": x, "SequenceLengthsTensor": rng.choice(pool, ls).astype(np.dtype(lt.lower()))}
    assert_matches_reference(ep, OP, fields(dtype, shape, axis, lt), feeds)
