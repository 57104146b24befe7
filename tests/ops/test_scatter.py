"""SCATTER (SCATTER_ELEMENTS) and SCATTER_ND (dml2onnx/ops/scatter.py): the page's example,
negative and out-of-range indices by hand (as DirectML's API computed them), refusals, both
branches of the `cuda` target's "guarded" candidate, and property tests against the reference,
bit for bit, the `portable` and the `cuda` graphs and the `dml` target's "native" ScatterElements /
ScatterND with positions in range (no duplicate positions: DirectML's order is not defined).
test_gather.py checks "native"'s graphs, its refusals and its results on the DirectML EP."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_gather import check, native_taken, run

from dml2onnx.cases.scatter import _case
from dml2onnx.core.operator_table import OPERATORS
from support import refusal, tensor

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
F32, U32 = "FLOAT32", "UINT32"


def test_page_example() -> None:
    """SCATTER_ND's page example, with the page's own rule that every tensor has one DimensionCount
    (the page's writes {8} and {4, 1}, FLOAT32 indices)."""
    fields = {
        "InputTensor": tensor(F32, [1, 8]),
        "IndicesTensor": tensor(U32, [4, 1]),
        "UpdatesTensor": tensor(F32, [1, 4]),
        "OutputTensor": tensor(F32, [1, 8]),
    }
    feeds = {
        "InputTensor": np.arange(1, 9, dtype=np.float32).reshape(1, 8),
        "IndicesTensor": np.array([[4], [3], [1], [7]], np.uint32),
        "UpdatesTensor": np.array([[9, 10, 11, 12]], np.float32),
    }
    check("SCATTER_ND", {**fields, "InputDimensionCount": 1, "IndicesDimensionCount": 2}, feeds, [[1, 11, 3, 10, 9, 6, 7, 12]])


def test_negative_and_out_of_range_as_directml() -> None:
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    fields = {
        "InputTensor": tensor(F32, [3, 4]),
        "IndicesTensor": tensor("INT32", [5, 2]),
        "UpdatesTensor": tensor(F32, [1, 5]),
        "OutputTensor": tensor(F32, [3, 4]),
    }
    fields |= {"InputDimensionCount": 2, "IndicesDimensionCount": 2}
    idx = np.array([[1, -1], [1, -4], [1, -5], [1, 4], [1, -9]], np.int32)
    feeds = {"InputTensor": x, "IndicesTensor": idx, "UpdatesTensor": np.arange(100, 105, dtype=np.float32).reshape(1, 5)}
    check("SCATTER_ND", fields, feeds, [[0, 1, 2, 102], [101, 5, 6, 100], [103, 9, 10, 11]])
    fields = {
        "InputTensor": tensor(F32, [3, 4]),
        "IndicesTensor": tensor("INT64", [2, 4]),
        "UpdatesTensor": tensor(F32, [2, 4]),
        "OutputTensor": tensor(F32, [3, 4]),
        "Axis": 0,
    }
    feeds = {
        "InputTensor": x,
        "IndicesTensor": np.array([[-1, 0, 5, -4], [0, -1, 1, 7]], np.int64),
        "UpdatesTensor": np.arange(100, 108, dtype=np.float32).reshape(2, 4),
    }
    check("SCATTER", fields, feeds, [[104, 101, 2, 3], [4, 5, 106, 7], [100, 105, 10, 11]])


def test_refusals() -> None:
    base = {
        "InputTensor": tensor(F32, [3, 4]),
        "IndicesTensor": tensor(U32, [2, 4]),
        "UpdatesTensor": tensor(F32, [2, 4]),
        "OutputTensor": tensor(F32, [3, 4]),
        "Axis": 0,
    }
    assert refusal("SCATTER", {**base, "Axis": 1}).path == ("desc", "IndicesTensor", "Sizes", 0)
    assert refusal("SCATTER", {**base, "UpdatesTensor": tensor(F32, [1, 4])}).path == ("desc", "UpdatesTensor", "Sizes")
    assert refusal("SCATTER", {**base, "OutputTensor": tensor(F32, [2, 4])}).path == ("desc", "OutputTensor", "Sizes")
    assert refusal("SCATTER", {**base, "UpdatesTensor": tensor("INT32", [2, 4])}).path == ("desc", "UpdatesTensor", "DataType")
    nd = {
        "InputTensor": tensor(F32, [3, 4]),
        "IndicesTensor": tensor(U32, [2, 1]),
        "UpdatesTensor": tensor(F32, [2, 3]),
        "OutputTensor": tensor(F32, [3, 4]),
    }
    nd |= {"InputDimensionCount": 2, "IndicesDimensionCount": 2}
    e = refusal("SCATTER_ND", nd)
    assert e.path == ("desc", "UpdatesTensor", "Sizes") and "[2, 4]" in str(e)


def test_guarded_both_branches() -> None:
    """In [-dim, dim): ScatterElements itself; one index outside: the flat lowering (its offset
    in the next row, or past the input: nothing written). On the CPU EP both branches keep the last
    of duplicate updates, as the reference does."""
    fields = {
        "InputTensor": tensor(F32, [3, 4]),
        "IndicesTensor": tensor("INT32", [2, 4]),
        "UpdatesTensor": tensor(F32, [2, 4]),
        "OutputTensor": tensor(F32, [3, 4]),
        "Axis": 0,
    }
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    updates = np.arange(100, 108, dtype=np.float32).reshape(2, 4)
    for idx, native in (
        ([[-3, 2, -1, 0], [1, -2, 0, 2]], True),
        ([[-3, 2, -1, 0], [1, -2, 0, 3]], False),  # 3: past the last row, past the input
        ([[-4, 2, -1, 0], [1, -2, 0, 2]], False),  # -4: wrapped once to -1, an offset before the input
        ([[0, 0, 1, 1], [0, 0, 1, 1]], True),  # duplicates
        ([[0, 0, 1, 1], [0, 0, 1, 4]], False),
    ):
        feeds = {"InputTensor": x, "IndicesTensor": np.array(idx, np.int32), "UpdatesTensor": updates}
        assert native_taken("SCATTER", fields, feeds) == native, idx


@SETTINGS
@given(
    op=st.sampled_from(("SCATTER", "SCATTER_ND")),
    rank=st.integers(1, 8),
    type_index=st.integers(0, 10),
    index_index=st.integers(0, 3),
    outside=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
    target=st.sampled_from(("portable", "cuda", "dml")),
)
def test_property_against_reference(
    op: str, rank: int, type_index: int, index_index: int, outside: bool, seed: int, target: str
) -> None:
    """`dml` ("native": ScatterElements, ScatterND): positions in range only (the CPU EP's nodes
    refuse others; the DirectML EP matrix runs them)."""
    outside = outside and target != "dml"
    table = OPERATORS[op].support[0].tensors
    dtype = table["InputTensor"].types[type_index % len(table["InputTensor"].types)]
    case = _case(np.random.default_rng(seed), op, dtype, table["IndicesTensor"].types[index_index], rank, outside)
    got, ref = run(op, case.fields, case.inputs, target)
    assert got.tobytes() == ref.tobytes()
