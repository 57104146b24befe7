"""DML_OPERATOR_SLICE, SLICE1 and SLICE_GRAD (dml2onnx/ops/slice.py): the pages' examples, what
DirectML's own API computed where they are silent (SLICE_GRAD's zero fill, windows that end at
the input's edge, bytes moved bit for bit), validation with DirectML's refusals, the nodes each
target emits, and properties over random shapes, windows, strides and types against the numpy
reference, bit for bit. The matrix (dml2onnx/cases/slice.py) runs them on every EP present and
through DirectML's API."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dml2onnx import lowering
from dml2onnx.backends import dmlapi, runtime
from dml2onnx.cases.slice import data
from dml2onnx.core import dtypes, operator_table
from dml2onnx.core.errors import format_path
from dml2onnx.graph import dml_ep
from dml2onnx.graph.builder import DEFAULT_OPSET
from dml2onnx.lowering import choices
from dml2onnx.ops import registry
from strategies import SEEDS
from support import EPS, make_desc, refusal, tensor

TYPES = [t.name for t in operator_table.OPERATORS["SLICE1"].support[0].tensors["InputTensor"].types]
X16 = np.arange(1, 17, dtype=np.float32).reshape(1, 1, 4, 4)


def every_variant(op: str, fields: dict[str, Any], feeds: dict[str, np.ndarray], ep: str = "cpu") -> np.ndarray:
    """The reference, after checking that every candidate on every target that runs on `ep`
    gives its bytes (`portable` and `dml`: also the static DirectML EP check)."""
    desc = make_desc(op, fields)
    want = registry.family(op).reference(desc, feeds)
    out = desc.tensor(desc.output)
    assert want.dtype == out.data_type.numpy and want.shape == out.sizes
    for variant in choices.available(desc, DEFAULT_OPSET):
        for target in ("portable", ep, "dml"):
            model = lowering.lower(desc, "t", target=target, variant=variant)
            if target in ("portable", "dml"):
                assert dml_ep.check(model) == [], (target, variant)
            if target == "dml":
                continue
            got = runtime.create(model, "t", ep).run(feeds)
            assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), (target, variant, got, want)
    return want


def slice1(
    x: np.ndarray, offsets: list[int], sizes: list[int], strides: list[int], out: list[int], dtype: str = "FLOAT32"
) -> np.ndarray:
    fields = {"InputTensor": tensor(dtype, x.shape), "OutputTensor": tensor(dtype, out), "DimensionCount": x.ndim}
    fields |= {"InputWindowOffsets": offsets, "InputWindowSizes": sizes, "InputWindowStrides": strides}
    return every_variant("SLICE1", fields, {"InputTensor": x})


def slice_grad(
    g: np.ndarray, offsets: list[int], sizes: list[int], strides: list[int], out: list[int], dtype: str = "FLOAT32"
) -> np.ndarray:
    fields = {"InputGradientTensor": tensor(dtype, g.shape), "OutputGradientTensor": tensor(dtype, out), "DimensionCount": g.ndim}
    fields |= {"InputWindowOffsets": offsets, "InputWindowSizes": sizes, "InputWindowStrides": strides}
    return every_variant("SLICE_GRAD", fields, {"InputGradientTensor": g})


# -- the pages' examples ------------------------------------------------------------------------------


def test_slice_page_examples() -> None:
    base = {"InputTensor": tensor("FLOAT32", [1, 1, 4, 4]), "DimensionCount": 4}
    contiguous = base | {"OutputTensor": tensor("FLOAT32", [1, 1, 3, 2]), "Offsets": [0, 0, 1, 2], "Sizes": [1, 1, 3, 2]}
    got = every_variant("SLICE", contiguous | {"Strides": [1, 1, 1, 1]}, {"InputTensor": X16})
    assert got.ravel().tolist() == [7, 8, 11, 12, 15, 16]
    strided = base | {"OutputTensor": tensor("FLOAT32", [1, 1, 2, 2]), "Offsets": [0, 0, 1, 0], "Sizes": [1, 1, 2, 2]}
    got = every_variant("SLICE", strided | {"Strides": [1, 1, 2, 3]}, {"InputTensor": X16})
    assert got.ravel().tolist() == [5, 8, 13, 16]


def test_slice1_page_examples() -> None:
    assert slice1(X16, [0, 0, 0, 1], [1, 1, 4, 3], [1, 1, 2, 2], [1, 1, 2, 2]).ravel().tolist() == [2, 4, 10, 12]
    assert slice1(X16, [0, 0, 0, 1], [1, 1, 4, 3], [1, 1, -2, 2], [1, 1, 2, 2]).ravel().tolist() == [14, 16, 6, 8]


def test_slice_grad_page_example() -> None:
    g = np.array([[1, 3], [9, 11]], np.float32)  # a, c, i, k of the page's 4x4 a..p
    got = slice_grad(g, [0, 0], [4, 4], [2, 2], [4, 4])
    assert got.tolist() == [[1, 0, 3, 0], [0, 0, 0, 0], [9, 0, 11, 0], [0, 0, 0, 0]]


# -- where the pages are silent: DirectML's results -----------------------------------------------------


def test_slice_grad_reversed_windows_as_directml() -> None:
    """Measured through DirectML's API (README): a reversed window writes from its end."""
    g = np.array([[1, 2], [3, 4]], np.float32)
    got = slice_grad(g, [0, 1], [4, 4], [-2, 1], [4, 5])
    assert got.tolist() == [[0, 0, 0, 0, 0], [0, 3, 4, 0, 0], [0, 0, 0, 0, 0], [0, 1, 2, 0, 0]]
    got = slice_grad(g, [0, 2], [2, 3], [1, -2], [4, 5])
    assert got.tolist() == [[0, 0, 2, 0, 1], [0, 0, 4, 0, 3], [0, 0, 0, 0, 0], [0, 0, 0, 0, 0]]


def test_a_slice_to_the_input_edge_and_a_short_output() -> None:
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    assert slice1(x, [0, 2], [2, 3], [1, 2], [2, 2]).tolist() == [[2, 4], [7, 9]]
    assert slice1(x, [0, 1], [4, 4], [-2, 1], [1, 2]).tolist() == [[16, 17]]  # fewer than the window holds


def test_bytes_move_exactly() -> None:
    """NaN payloads, -0, INT64 and UINT64 beyond 2**53: bit for bit, every type."""
    rng = np.random.default_rng(5)
    for dtype in TYPES:
        x = data(rng, (3, 4), dtypes.BY_NAME[dtype])
        got = slice1(x, [0, 0], [3, 4], [-1, -1], [3, 4], dtype)
        assert got.tobytes() == x[::-1, ::-1].tobytes()
        g = slice_grad(x, [0, 0], [5, 8], [2, -2], [5, 8], dtype)
        assert g[::2, 1::2][:, ::-1].tobytes() == x.tobytes() and not g[1::2].any()


_why = dmlapi.missing()


@pytest.mark.skipif(_why is not None, reason=f"DirectML's API under Wine is not set up ({_why})")
def test_directml_computes_the_same() -> None:
    g = np.array([[1, 2], [3, 4]], np.float32)
    fields = {
        "InputGradientTensor": tensor("FLOAT32", [2, 2]),
        "OutputGradientTensor": tensor("FLOAT32", [4, 5]),
        "DimensionCount": 2,
    }
    fields |= {"InputWindowOffsets": [0, 1], "InputWindowSizes": [4, 4], "InputWindowStrides": [-2, 1]}
    got = dmlapi.execute(make_desc("SLICE_GRAD", fields), {"InputGradientTensor": g}).output
    assert got.tolist() == [[0, 0, 0, 0, 0], [0, 3, 4, 0, 0], [0, 0, 0, 0, 0], [0, 1, 2, 0, 0]]


# -- validation ---------------------------------------------------------------------------------------------

SLICE = {
    "InputTensor": tensor("FLOAT32", [4, 5]),
    "OutputTensor": tensor("FLOAT32", [2, 2]),
    "DimensionCount": 2,
    "Offsets": [0, 1],
    "Sizes": [2, 2],
    "Strides": [1, 2],
}
SLICE1 = {
    "InputTensor": tensor("FLOAT32", [4, 5]),
    "OutputTensor": tensor("FLOAT32", [2, 2]),
    "DimensionCount": 2,
    "InputWindowOffsets": [0, 1],
    "InputWindowSizes": [4, 4],
    "InputWindowStrides": [2, -2],
}
GRAD = {
    "InputGradientTensor": tensor("FLOAT32", [2, 2]),
    "OutputGradientTensor": tensor("FLOAT32", [4, 5]),
    "DimensionCount": 2,
    "InputWindowOffsets": [0, 1],
    "InputWindowSizes": [4, 4],
    "InputWindowStrides": [2, -2],
}


@pytest.mark.parametrize(
    ("op", "fields", "path", "text"),
    [
        ("SLICE", SLICE | {"Strides": [0, 1]}, "desc.Strides[0]", "must not be 0"),
        ("SLICE", SLICE | {"Sizes": [2, 3]}, "desc.Sizes[1]", "must be OutputTensor.Sizes[1]"),
        ("SLICE", SLICE | {"Offsets": [0, 3]}, "desc.Offsets[1]", "beyond InputTensor.Sizes[1]"),
        ("SLICE", SLICE | {"Strides": [1]}, "desc.Strides", "must have DimensionCount (2) elements"),
        ("SLICE", SLICE | {"OutputTensor": tensor("INT32", [2, 2])}, "desc.OutputTensor.DataType", "same DataType"),
        ("SLICE", SLICE | {"OutputTensor": tensor("FLOAT32", [1, 2, 2])}, "desc.OutputTensor.Sizes", "same DimensionCount"),
        ("SLICE1", SLICE1 | {"InputWindowStrides": [1, 0]}, "desc.InputWindowStrides[1]", "must not be 0"),
        ("SLICE1", SLICE1 | {"InputWindowSizes": [0, 4]}, "desc.InputWindowSizes[0]", "must not be empty"),
        ("SLICE1", SLICE1 | {"InputWindowOffsets": [0, 2]}, "desc.InputWindowSizes[1]", "goes beyond InputTensor.Sizes[1]"),
        ("SLICE1", SLICE1 | {"OutputTensor": tensor("FLOAT32", [3, 2])}, "desc.OutputTensor.Sizes[0]", "at most 1 + "),
        ("SLICE1", SLICE1 | {"InputWindowSizes": [4]}, "desc.InputWindowSizes", "must have DimensionCount"),
        ("SLICE_GRAD", GRAD | {"InputGradientTensor": tensor("FLOAT32", [3, 2])}, "desc.InputGradientTensor.Sizes[0]", "at most"),
        ("SLICE_GRAD", GRAD | {"InputWindowOffsets": [0, 2]}, "desc.InputWindowSizes[1]", "goes beyond OutputGradientTensor"),
        ("SLICE_GRAD", GRAD | {"InputGradientTensor": tensor("INT8", [2, 2])}, "desc.InputGradientTensor.DataType", "same"),
    ],
)
def test_invalid(op: str, fields: dict[str, Any], path: str, text: str) -> None:
    e = refusal(op, fields)
    assert format_path(e.path).startswith(path) and text in str(e), (format_path(e.path), str(e))


def test_feature_levels() -> None:
    fields = SLICE1 | {"InputTensor": tensor("INT64", [4, 5]), "OutputTensor": tensor("INT64", [2, 2])}
    e = refusal("SLICE1", fields, level="3_0")
    assert "feature level 4_1 allows it" in str(e)
    e = refusal("SLICE1", SLICE1 | {"InputTensor": tensor("FLOAT32", [4, 5])}, level="2_1")
    assert "4 to 5 dimensions" in str(e)


# -- graphs --------------------------------------------------------------------------------------------------


def test_nodes() -> None:
    def nodes(op: str, fields: dict[str, Any], target: str, variant: str | None = None) -> list[str]:
        return [n.op_type for n in lowering.lower(make_desc(op, fields), "t", target=target, variant=variant).graph.node]

    assert nodes("SLICE1", SLICE1, "portable") == ["Slice"]
    assert nodes("SLICE", SLICE, "dml") == ["Slice"]
    assert "Pad" in nodes("SLICE_GRAD", GRAD, "portable")  # FLOAT32: one Pad for the zeros
    int_grad = GRAD | {"InputGradientTensor": tensor("INT8", [2, 2]), "OutputGradientTensor": tensor("INT8", [4, 5])}
    assert "Pad" not in nodes("SLICE_GRAD", int_grad, "portable")  # the CUDA EP has no INT8 Pad: Concat
    assert "Pad" in nodes("SLICE_GRAD", int_grad, "dml", "pad")


# -- properties ------------------------------------------------------------------------------------------------


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, dict[str, Any], dict[str, np.ndarray]]:
    op = draw(st.sampled_from(["SLICE", "SLICE1", "SLICE_GRAD"]))
    dtype = draw(st.sampled_from(TYPES))
    rank = draw(st.integers(1, 5))
    full = [draw(st.integers(1, 6)) for _ in range(rank)]
    offsets, sizes, strides, outs = [], [], [], []
    for n in full:
        o = draw(st.integers(0, n - 1))
        w = draw(st.integers(1, n - o))
        s = draw(st.integers(1, 3)) * (1 if op == "SLICE" else draw(st.sampled_from([1, -1])))
        most = 1 + (w - 1) // abs(s)
        m = most if op == "SLICE" else draw(st.integers(1, most))
        offsets.append(o), sizes.append(w), strides.append(s), outs.append(m)
    rng = np.random.default_rng(draw(SEEDS))
    t = dtypes.BY_NAME[dtype]
    fields: dict[str, Any] = {"DimensionCount": rank}
    if op == "SLICE":
        fields |= {"InputTensor": tensor(dtype, full), "OutputTensor": tensor(dtype, outs)}
        return op, fields | {"Offsets": offsets, "Sizes": outs, "Strides": strides}, {"InputTensor": data(rng, tuple(full), t)}
    fields |= {"InputWindowOffsets": offsets, "InputWindowSizes": sizes, "InputWindowStrides": strides}
    if op == "SLICE1":
        fields |= {"InputTensor": tensor(dtype, full), "OutputTensor": tensor(dtype, outs)}
        return op, fields, {"InputTensor": data(rng, tuple(full), t)}
    fields |= {"InputGradientTensor": tensor(dtype, outs), "OutputGradientTensor": tensor(dtype, full)}
    return op, fields, {"InputGradientTensor": data(rng, tuple(outs), t)}


@EPS
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_every_candidate_matches_reference(ep: str, case: tuple[str, dict[str, Any], dict[str, np.ndarray]]) -> None:
    op, fields, feeds = case
    every_variant(op, fields, feeds, ep)


@settings(max_examples=60, deadline=None)
@given(case=cases())
def test_reference_matches_the_pages_pseudocode(case: tuple[str, dict[str, Any], dict[str, np.ndarray]]) -> None:
    """The reference against the pages' formula, element by element: Output[c] = Input[CopyStart + Strides * c]."""
    op, fields, feeds = case
    desc = make_desc(op, fields)
    got = registry.family(op).reference(desc, feeds)
    if op == "SLICE":
        start, stride = fields["Offsets"], fields["Strides"]
    else:
        offsets, sizes, stride = fields["InputWindowOffsets"], fields["InputWindowSizes"], fields["InputWindowStrides"]
        start = [o + w - 1 if s < 0 else o for o, w, s in zip(offsets, sizes, stride, strict=True)]
    small = feeds["InputGradientTensor"] if op == "SLICE_GRAD" else got
    big = got if op == "SLICE_GRAD" else feeds["InputTensor"]
    written = set()
    for c in np.ndindex(small.shape):
        at = tuple(a + s * i for a, s, i in zip(start, stride, c, strict=True))
        assert small[c].tobytes() == big[at].tobytes()
        written.add(at)
    if op == "SLICE_GRAD":
        assert all(not got[i] for i in np.ndindex(got.shape) if i not in written)
