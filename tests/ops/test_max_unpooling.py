"""DML_OPERATOR_MAX_UNPOOLING: values by hand (the page has no example), indices over the whole
output, what DirectML computes where the page is silent (zeros, out-of-range indices, duplicates,
UINT64 indices), the dml target's MaxUnpool, refusals, and properties over random shapes, every
data type and both index types against the numpy reference."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dml2onnx import lowering
from dml2onnx.backends import dmlapi, runtime
from dml2onnx.core import operator_table
from dml2onnx.core.errors import format_path
from dml2onnx.graph import dml_ep
from dml2onnx.graph.targets import DML_NODE_DOC
from dml2onnx.ops import max_unpooling
from strategies import SEEDS
from support import EPS, assert_matches_reference, make_desc, refusal, run_lowered, tensor

OP = "MAX_UNPOOLING"
SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TYPES = [t.name for t in operator_table.OPERATORS[OP].support[0].tensors["InputTensor"].types]


def fields(dtype: str, shape: tuple[int, ...], out: tuple[int, ...], index: str = "UINT32") -> dict[str, Any]:
    return {"InputTensor": tensor(dtype, shape), "IndicesTensor": tensor(index, shape), "OutputTensor": tensor(dtype, out)}


def unpool(
    dtype: str, x: list[Any], idx: list[int], out: tuple[int, ...], index: str = "UINT32", target: str = "portable"
) -> np.ndarray:
    """The values at the indices, one row of them, through the target's graph on the CPU EP."""
    shape = (1, 1, 1, len(x))
    feeds = {
        "InputTensor": np.array(x, np.dtype(dtype.lower())).reshape(shape),
        "IndicesTensor": np.array(idx, np.dtype(index.lower())).reshape(shape),
    }
    model = lowering.lower(make_desc(OP, fields(dtype, shape, out, index)), "t", target=target)
    return runtime.create(model, "t", "cpu").run(feeds)


def test_by_hand() -> None:
    """A 2x2 max pooling of a 4x4 input undone: each value at its index, zeros elsewhere."""
    x = np.array([1, 2, 3, 4], np.float32).reshape(1, 1, 2, 2)
    idx = np.array([0, 3, 9, 15], np.uint32).reshape(1, 1, 2, 2)
    got = run_lowered(make_desc(OP, fields("FLOAT32", (1, 1, 2, 2), (1, 1, 4, 4))), {"InputTensor": x, "IndicesTensor": idx})
    want = np.zeros(16, np.float32)
    want[[0, 3, 9, 15]] = [1, 2, 3, 4]
    np.testing.assert_array_equal(got, want.reshape(1, 1, 4, 4))


def test_indices_span_the_whole_output() -> None:
    """An index counts every batch and channel before it (not per channel): [2, 2, 1, 1] values
    into [2, 2, 2, 2] at 0, 5, 10, 15 land one per (N, C) on its diagonal."""
    x = np.array([1, 2, 3, 4], np.float32).reshape(2, 2, 1, 1)
    idx = np.array([0, 5, 10, 15], np.uint32).reshape(2, 2, 1, 1)
    got = run_lowered(make_desc(OP, fields("FLOAT32", (2, 2, 1, 1), (2, 2, 2, 2))), {"InputTensor": x, "IndicesTensor": idx})
    np.testing.assert_array_equal(got.reshape(4, 4), np.diag([1, 2, 3, 4]).astype(np.float32))


@pytest.mark.parametrize("index", ["UINT32", "UINT64"])
def test_out_of_range_indices_write_nothing(index: str) -> None:
    got = unpool("INT8", [1, 2, 3, 4, 5], [4, 0, 9, 2**31, 2**32 - 1], (1, 1, 2, 2), index)
    np.testing.assert_array_equal(got.ravel(), [2, 0, 0, 0])


@pytest.mark.parametrize("target", ["portable", "cuda", "cpu"])
def test_duplicates_give_one_of_the_writers(target: str) -> None:
    """DirectML's writes race (README): the graphs promise one of the values only."""
    got = unpool("FLOAT32", [7, 8, 9, 1], [2, 2, 2, 0], (1, 1, 1, 3), target=target)
    assert got.ravel()[0] == 1 and got.ravel()[1] == 0
    assert got.ravel()[2] in (7, 8, 9)


@EPS
def test_duplicates_on_each_ep(ep: str) -> None:
    """Many values onto few positions (the CUDA EP's ScatterElements writes in no set order)."""
    shape = (2, 4, 32, 32)
    n = math.prod(shape)
    feeds = {
        "InputTensor": np.arange(n, dtype=np.int32).reshape(shape),
        "IndicesTensor": (np.arange(n) % 5).astype(np.uint64).reshape(shape),
    }
    got = run_lowered(make_desc(OP, fields("INT32", shape, (1, 1, 1, 5), "UINT64")), feeds, ep=ep).ravel()
    assert all(int(v) % 5 == k for k, v in enumerate(got)), got


def test_output_of_other_batch_and_channel_sizes() -> None:
    got = unpool("UINT16", [5, 6], [23, 7], (2, 3, 2, 2))
    want = np.zeros(24, np.uint16)
    want[[23, 7]] = [5, 6]
    np.testing.assert_array_equal(got.ravel(), want)


def test_dml_target_emits_max_unpool_for_floats() -> None:
    for dtype in ("FLOAT32", "FLOAT16"):
        for index in ("UINT32", "UINT64"):
            model = lowering.lower(make_desc(OP, fields(dtype, (1, 2, 2, 2), (1, 2, 4, 4), index)), "t", target="dml")
            assert [n.op_type for n in model.graph.node] == ["Cast", "MaxUnpool"]
            assert model.graph.node[-1].doc_string == DML_NODE_DOC
            assert dml_ep.check(model) == []
    integer = lowering.lower(make_desc(OP, fields("INT8", (1, 2, 2, 2), (1, 2, 4, 4))), "t", target="dml")
    assert "ScatterElements" in [n.op_type for n in integer.graph.node]
    portable = lowering.lower(make_desc(OP, fields("FLOAT32", (1, 2, 2, 2), (1, 2, 4, 4))), "t")
    assert "MaxUnpool" not in [n.op_type for n in portable.graph.node]
    assert dml_ep.check(portable) == []


@pytest.mark.parametrize(
    ("change", "path", "message"),
    [
        ({"OutputTensor": tensor("FLOAT16", (1, 1, 4, 4))}, "desc.OutputTensor.DataType", "same DataType"),
        ({"IndicesTensor": tensor("UINT32", (1, 1, 2, 3))}, "desc.IndicesTensor.Sizes", "same Sizes"),
        ({"IndicesTensor": tensor("INT32", (1, 1, 2, 2))}, "desc.IndicesTensor.DataType", "must be UINT64, UINT32, not INT32"),
        ({"InputTensor": tensor("FLOAT64", (1, 1, 2, 2))}, "desc.InputTensor.DataType", "not FLOAT64"),
        (
            {"InputTensor": tensor("FLOAT32", (1, 1, 1, 2, 2)), "IndicesTensor": tensor("UINT32", (1, 1, 1, 2, 2))},
            "desc.InputTensor.Sizes",
            "must have 4 dimensions",
        ),
    ],
)
def test_refusals(change: dict[str, Any], path: str, message: str) -> None:
    e = refusal(OP, fields("FLOAT32", (1, 1, 2, 2), (1, 1, 4, 4)) | change)
    assert format_path(e.path) == path, str(e)
    assert message in e.rule, e.rule


def test_feature_level_3_0_takes_floats_and_uint32_only() -> None:
    e = refusal(OP, fields("INT32", (1, 1, 2, 2), (1, 1, 4, 4)), level="3_0")
    assert format_path(e.path) == "desc.InputTensor.DataType" and "feature level 5_0 allows it" in e.rule
    e = refusal(OP, fields("FLOAT32", (1, 1, 2, 2), (1, 1, 4, 4), "UINT64"), level="3_0")
    assert format_path(e.path) == "desc.IndicesTensor.DataType"


# -- what DirectML computes where the page is silent --------------------------------------------

# (data type, index type, values, indices, output sizes, DirectML's output): its API under Wine
SETTLED = [
    # unwritten positions are 0 (the output buffer starts as 0xCD bytes); out of range: nothing
    ("FLOAT32", "UINT32", [1, 2, 3, 4], [0, 4, 100, 2**32 - 1], (1, 1, 2, 2), [1, 0, 0, 0]),
    # the whole output: index 5 of [1, 2, 2, 2] is in the second channel
    ("INT32", "UINT32", [-7, 9], [5, 2], (1, 2, 2, 2), [0, 0, 9, 0, 0, -7, 0, 0]),
    ("UINT64", "UINT64", [2**64 - 1, 2**53 + 1], [3, 1], (1, 1, 2, 2), [0, 2**53 + 1, 0, 2**64 - 1]),
    ("FLOAT16", "UINT64", [np.nan, -np.inf], [1, 0], (1, 1, 1, 2), [-np.inf, np.nan]),
]


@pytest.mark.parametrize(("dtype", "index", "x", "idx", "out", "want"), SETTLED)
def test_what_directml_computes(dtype: str, index: str, x: list[Any], idx: list[int], out: tuple, want: list[Any]) -> None:
    np.testing.assert_array_equal(unpool(dtype, x, idx, out, index).ravel(), np.array(want, np.dtype(dtype.lower())))


_why = dmlapi.missing()
live = pytest.mark.skipif(_why is not None, reason=f"DirectML's API under Wine is not set up ({_why})")


def _directml(dtype: str, index: str, x: list[Any], idx: list[int], out: tuple) -> np.ndarray:
    shape = (1, 1, 1, len(x))
    feeds = {
        "InputTensor": np.array(x, np.dtype(dtype.lower())).reshape(shape),
        "IndicesTensor": np.array(idx, np.dtype(index.lower())).reshape(shape),
    }
    return dmlapi.execute(make_desc(OP, fields(dtype, shape, out, index)), feeds).output


@live
def test_directml_computes_so() -> None:
    for dtype, index, x, idx, out, want in SETTLED:
        got = _directml(dtype, index, x, idx, out)
        np.testing.assert_array_equal(got.ravel(), np.array(want, np.dtype(dtype.lower())), err_msg=f"{dtype} {index} {idx}")


@live
def test_directml_reads_uint64_indices_by_their_low_32_bits() -> None:
    """The finding (tests/dml_findings.py): 2**32 + 1 and 2**40 + 3 write at 1 and 3 on DirectML;
    the reference takes them as out of range."""
    got = _directml("FLOAT32", "UINT64", [1, 2, 3, 4], [0, 2**32 + 1, 2**40 + 3, 2], (1, 1, 2, 2))
    np.testing.assert_array_equal(got.ravel(), [1, 2, 4, 3])
    np.testing.assert_array_equal(
        unpool("FLOAT32", [1, 2, 3, 4], [0, 2**32 + 1, 2**40 + 3, 2], (1, 1, 2, 2), "UINT64").ravel(), [1, 0, 4, 0]
    )


@live
def test_directml_duplicates_are_one_of_the_writers() -> None:
    """Many values onto few positions: each position gets one of its writers (which one varies
    from run to run on DirectML: no order is promised)."""
    n = 4 * 8 * 32 * 32
    shape = (4, 8, 32, 32)
    feeds = {
        "InputTensor": np.arange(n, dtype=np.float32).reshape(shape),
        "IndicesTensor": (np.arange(n) % 5).astype(np.uint32).reshape(shape),
    }
    got = dmlapi.execute(make_desc(OP, fields("FLOAT32", shape, (1, 1, 1, 5))), feeds).output.ravel()
    assert all(int(v) % 5 == k for k, v in enumerate(got))


# -- properties ---------------------------------------------------------------------------------


@EPS
@SETTINGS
@given(
    n=st.integers(1, 3),
    c=st.integers(1, 4),
    h=st.integers(1, 5),
    w=st.integers(1, 5),
    out=st.tuples(st.integers(1, 3), st.integers(1, 4), st.integers(1, 6), st.integers(1, 6)),
    dtype=st.sampled_from(TYPES),
    index=st.sampled_from(["UINT32", "UINT64"]),
    outside=st.integers(0, 3),
    seed=SEEDS,
)
def test_matches_reference(
    ep: str, n: int, c: int, h: int, w: int, out: tuple[int, ...], dtype: str, index: str, outside: int, seed: int
) -> None:
    """Distinct indices (DirectML leaves duplicates open), some past the output."""
    rng = np.random.default_rng(seed)
    shape = (n, c, h, w)
    m, p = math.prod(shape), math.prod(out)
    pool = np.concatenate([np.arange(p), p + np.arange(outside) * 7919, [2**32 - 1]]).astype(np.int64)
    idx = rng.choice(pool, min(m, len(pool)), replace=False)
    if m > len(pool):  # more values than distinct indices: the rest past the output, all distinct
        idx = np.concatenate([idx, 2**31 + np.arange(m - len(pool))])
    t = np.dtype(dtype.lower())
    if t.kind == "f":
        x = (rng.standard_normal(m) * 100).astype(t)
    else:
        info = np.iinfo(t)
        x = rng.integers(int(info.min), int(info.max), m, dtype=t, endpoint=True)
    feeds = {
        "InputTensor": x.reshape(shape),
        "IndicesTensor": rng.permutation(idx).astype(np.dtype(index.lower())).reshape(shape),
    }
    assert_matches_reference(ep, OP, fields(dtype, shape, out, index), feeds)


def test_reference_takes_the_last_of_duplicates() -> None:
    desc = make_desc(OP, fields("FLOAT32", (1, 1, 1, 3), (1, 1, 1, 2)))
    feeds = {
        "InputTensor": np.array([1, 2, 3], np.float32).reshape(1, 1, 1, 3),
        "IndicesTensor": np.array([1, 1, 0], np.uint32).reshape(1, 1, 1, 3),
    }
    np.testing.assert_array_equal(max_unpooling.reference(desc, feeds).ravel(), [3, 2])
