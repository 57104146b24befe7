"""DML_OPERATOR_FOLD and DML_OPERATOR_UNFOLD (dml2onnx/ops/fold.py, feature level 6_4): the pages'
examples, the adjoint relation between them over random windows, every data type's sums, the
rules DirectML's CreateOperator enforces, and the same through DirectML's API."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dml2onnx.backends import dmlapi
from dml2onnx.core import dtypes
from dml2onnx.core.desc import parse_operator_desc
from dml2onnx.core.errors import format_path
from dml2onnx.ops import registry
from support import EPS, assert_matches_reference, lowered_and_reference, make_desc, refusal, tensor

live = pytest.mark.skipif(dmlapi.missing() is not None, reason="DirectML's API under Wine is not set up (make dml-setup)")
SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def window(
    op: str,
    image: list[int],
    columns: list[int],
    w: list[int],
    s: list[int] | None = None,
    d: list[int] | None = None,
    p0: list[int] | None = None,
    p1: list[int] | None = None,
    dtype: str = "FLOAT32",
) -> dict[str, Any]:
    n = len(w)
    ins, outs = (image, columns) if op == "UNFOLD" else (columns, image)
    return {
        "InputTensor": tensor(dtype, ins),
        "OutputTensor": tensor(dtype, outs),
        "DimensionCount": n,
        "WindowSizes": w,
        "Strides": s or [1] * n,
        "Dilations": d or [1] * n,
        "StartPadding": p0 or [0] * n,
        "EndPadding": p1 or [0] * n,
    }


def both(op: str, fields: dict[str, Any], x: np.ndarray) -> np.ndarray:
    """The lowered graph on the CPU EP and the reference, which must agree exactly here."""
    got, want = lowered_and_reference("cpu", op, fields, {"InputTensor": x})
    assert got.tobytes() == want.tobytes(), (got, want)
    return got


# -- the pages' examples ------------------------------------------------------------------------------

UNFOLD_5X5 = np.arange(25, dtype=np.float32).reshape(1, 1, 5, 5)


def test_unfold_page_examples() -> None:
    y = both("UNFOLD", window("UNFOLD", [1, 1, 5, 5], [1, 9, 9], [3, 3]), UNFOLD_5X5)
    assert y[0, 0].tolist() == [0, 1, 2, 5, 6, 7, 10, 11, 12]
    y = both("UNFOLD", window("UNFOLD", [1, 1, 5, 5], [1, 9, 15], [3, 3], p0=[1, 0], p1=[1, 0]), UNFOLD_5X5)
    assert y[0, 0].tolist() == [0, 0, 0, 0, 1, 2, 5, 6, 7, 10, 11, 12, 15, 16, 17]
    assert y[0, 8].tolist() == [7, 8, 9, 12, 13, 14, 17, 18, 19, 22, 23, 24, 0, 0, 0]


def test_fold_page_examples() -> None:
    y = both("FOLD", window("FOLD", [1, 1, 4, 4], [1, 9, 4], [3, 3]), np.arange(36, dtype=np.float32).reshape(1, 9, 4))
    assert y[0, 0].tolist() == [[0, 5, 13, 9], [14, 38, 54, 32], [38, 86, 102, 56], [26, 57, 65, 35]]
    padded = window("FOLD", [1, 1, 4, 4], [1, 9, 8], [3, 3], p0=[1, 0], p1=[1, 0])
    y = both("FOLD", padded, np.arange(72, dtype=np.float32).reshape(1, 9, 8))
    assert y[0, 0].tolist() == [[26, 70, 102, 60], [78, 183, 231, 129], [84, 195, 243, 135], [82, 182, 214, 116]]
    two = window("FOLD", [1, 2, 4, 4], [1, 18, 8], [3, 3], p0=[1, 0], p1=[1, 0])
    y = both("FOLD", two, np.arange(144, dtype=np.float32).reshape(1, 18, 8))
    assert y[0, 0].tolist() == [[26, 70, 102, 60], [78, 183, 231, 129], [84, 195, 243, 135], [82, 182, 214, 116]]
    assert y[0, 1].tolist() == [[170, 358, 390, 204], [294, 615, 663, 345], [300, 627, 675, 351], [226, 470, 502, 260]]


@live
def test_directml_gives_the_page_examples() -> None:
    desc = make_desc("UNFOLD", window("UNFOLD", [1, 1, 5, 5], [1, 9, 15], [3, 3], p0=[1, 0], p1=[1, 0]))
    got = dmlapi.execute(desc, {"InputTensor": UNFOLD_5X5}).output
    assert got[0, 8].tolist() == [7, 8, 9, 12, 13, 14, 17, 18, 19, 22, 23, 24, 0, 0, 0]
    desc = make_desc("FOLD", window("FOLD", [1, 2, 4, 4], [1, 18, 8], [3, 3], p0=[1, 0], p1=[1, 0]))
    got = dmlapi.execute(desc, {"InputTensor": np.arange(144, dtype=np.float32).reshape(1, 18, 8)}).output
    assert got[0, 1].tolist() == [[170, 358, 390, 204], [294, 615, 663, 345], [300, 627, 675, 351], [226, 470, 502, 260]]


# -- sums of every type -------------------------------------------------------------------------------

# (type, every input value, element (1, 1) of a 4x4 FOLD of 3x3 windows: 4 terms, as DirectML gave it)
SUMS = [
    ("UINT8", 200, 255),  # saturated
    ("INT8", 100, 127),
    ("INT8", -100, -128),
    ("UINT16", 20000, 65535),
    ("INT32", 2**30, 0),  # 4 * 2**30 wraps
    ("UINT32", 2**31, 0),
    ("INT64", 2**40 + 3, 4 * (2**40 + 3)),
    ("UINT64", 2**63 + 5, 20),
]


@pytest.mark.parametrize(("dtype", "value", "centre"), SUMS)
def test_fold_sums_saturate_8_16_bit_and_wrap_32_64_bit(dtype: str, value: int, centre: int) -> None:
    t = dtypes.BY_NAME[dtype].numpy
    fields = window("FOLD", [1, 1, 4, 4], [1, 9, 4], [3, 3], dtype=dtype)
    y = both("FOLD", fields, np.full((1, 9, 4), value, t))
    assert int(y[0, 0, 1, 1]) == int(np.array(centre).astype(t))


@live
@pytest.mark.parametrize(("dtype", "value", "centre"), SUMS)
def test_directml_fold_sums(dtype: str, value: int, centre: int) -> None:
    t = dtypes.BY_NAME[dtype].numpy
    desc = make_desc("FOLD", window("FOLD", [1, 1, 4, 4], [1, 9, 4], [3, 3], dtype=dtype))
    x = {"InputTensor": np.full((1, 9, 4), value, t)}
    got = dmlapi.execute(desc, x).output
    assert got.tobytes() == registry.family("FOLD").reference(desc, x).tobytes()


# -- random windows ----------------------------------------------------------------------------------


@st.composite
def windows(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    """An UNFOLD desc and the FOLD desc that is its adjoint (FOLD's output is UNFOLD's input)."""
    dims = draw(st.integers(1, 4))
    spatial, w, s, d, p0, p1 = [], [], [], [], [], []
    for _ in range(dims):
        w.append(draw(st.integers(1, 3)))
        d.append(draw(st.integers(1, 2)))
        p0.append(draw(st.integers(0, 2)))
        p1.append(draw(st.integers(0, 2)))
        reach = d[-1] * (w[-1] - 1) + 1
        spatial.append(draw(st.integers(max(1, reach - p0[-1] - p1[-1]), 5)))
        s.append(draw(st.integers(1, 3)))
    n, c = draw(st.integers(1, 2)), draw(st.integers(1, 3))
    blocks = math.prod(
        (x + a + b - dd * (ww - 1) - 1) // ss + 1 for x, ww, ss, dd, a, b in zip(spatial, w, s, d, p0, p1, strict=True)
    )
    image, columns = [n, c, *spatial], [n, c * math.prod(w), blocks]
    dtype = draw(st.sampled_from(["FLOAT32", "FLOAT16", "INT8", "UINT16", "INT32", "UINT64"]))
    return (window("UNFOLD", image, columns, w, s, d, p0, p1, dtype), window("FOLD", image, columns, w, s, d, p0, p1, dtype))


@SETTINGS
@given(pair=windows(), seed=st.integers(0, 2**32 - 1))
def test_fold_is_the_adjoint_of_unfold(pair: tuple[dict[str, Any], dict[str, Any]], seed: int) -> None:
    """<unfold(x), y> = <x, fold(y)>, exactly (small integers in FLOAT64 arithmetic)."""
    unfold, fold = pair
    rng = np.random.default_rng(seed)
    image, columns = unfold["InputTensor"]["Sizes"], unfold["OutputTensor"]["Sizes"]
    x, y = rng.integers(-3, 4, image).astype(np.float32), rng.integers(-3, 4, columns).astype(np.float32)
    ux = registry.family("UNFOLD").reference(make_desc("UNFOLD", unfold | _f32(unfold)), {"InputTensor": x})
    fy = registry.family("FOLD").reference(make_desc("FOLD", fold | _f32(fold)), {"InputTensor": y})
    assert np.sum(ux.astype(np.float64) * y) == np.sum(x.astype(np.float64) * fy)


def _f32(fields: dict[str, Any]) -> dict[str, Any]:
    return {k: {**fields[k], "DataType": "FLOAT32"} for k in ("InputTensor", "OutputTensor")}


@EPS
@SETTINGS
@given(pair=windows(), which=st.sampled_from([0, 1]), seed=st.integers(0, 2**32 - 1))
def test_fold_and_unfold_match_the_reference(ep: str, pair: tuple[dict[str, Any], dict[str, Any]], which: int, seed: int) -> None:
    fields = pair[which]
    op = ("UNFOLD", "FOLD")[which]
    rng = np.random.default_rng(seed)
    t = dtypes.BY_NAME[fields["InputTensor"]["DataType"]]
    shape = fields["InputTensor"]["Sizes"]
    x = rng.uniform(-8, 8, shape).astype(t.numpy) if t.is_float else rng.integers(*_range(t), shape, dtype=t.numpy)
    assert_matches_reference(ep, op, fields, {"InputTensor": x})


def _range(t: dtypes.DataType) -> tuple[int, int]:
    info = np.iinfo(t.numpy)
    return int(info.min), int(info.max)


# -- the rules ------------------------------------------------------------------------------------------

RULES = [
    (
        "UNFOLD",
        window("UNFOLD", [1, 1, 5, 5], [1, 9, 8], [3, 3]),
        "desc.OutputTensor.Sizes",
        "must be (N, C * prod(WindowSizes), BlockCount) = [1, 9, 9], not [1, 9, 8]",
    ),
    (
        "UNFOLD",
        window("UNFOLD", [1, 1, 5, 5], [1, 3, 15], [3]),
        "desc.InputTensor.Sizes",
        "must have DimensionCount + 2 (3) dimensions, not 4",
    ),
    ("UNFOLD", window("UNFOLD", [1, 1, 5, 5], [1, 9, 9], [3, 3], s=[0, 1]), "desc.Strides[0]", "must be at least 1"),
    ("UNFOLD", window("UNFOLD", [1, 1, 5, 5], [1, 9, 9], [3, 3], d=[1, 0]), "desc.Dilations[1]", "must be at least 1"),
    ("UNFOLD", window("UNFOLD", [1, 1, 5, 5], [1, 1, 25], [0, 1]), "desc.WindowSizes[0]", "must be at least 1"),
    (
        "UNFOLD",
        window("UNFOLD", [1, 1, 2, 5], [1, 9, 1], [3, 3]),
        "desc.WindowSizes[0]",
        "wider than the padded size 2: no block fits",
    ),
    ("FOLD", window("FOLD", [1, 1, 4, 4], [1, 9, 5], [3, 3]), "desc.InputTensor.Sizes", "= [1, 9, 4], not [1, 9, 5]"),
    ("FOLD", window("FOLD", [1, 1, 4, 4], [1, 8, 4], [3, 3]), "desc.InputTensor.Sizes", "= [1, 9, 4], not [1, 8, 4]"),
    ("FOLD", window("FOLD", [1, 1, 4, 4], [1, 9, 2, 2], [3, 3]), "desc.InputTensor.Sizes", "= [1, 9, 4], not [1, 9, 2, 2]"),
]


@pytest.mark.parametrize(("op", "fields", "path", "rule"), RULES)
def test_rules(op: str, fields: dict[str, Any], path: str, rule: str) -> None:
    e = refusal(op, fields)
    assert format_path(e.path) == path and rule in e.rule, (format_path(e.path), e.rule)


def test_types_must_match_and_float64_is_not_taken() -> None:
    fields = window("UNFOLD", [1, 1, 5, 5], [1, 9, 9], [3, 3])
    fields["OutputTensor"]["DataType"] = "FLOAT16"
    assert "DataType" in str(refusal("UNFOLD", fields))
    assert "FLOAT64" in str(refusal("UNFOLD", window("UNFOLD", [1, 1, 5, 5], [1, 9, 9], [3, 3], dtype="FLOAT64")))


@live
@pytest.mark.parametrize(("op", "fields", "path", "rule"), RULES)
def test_directml_refuses_the_same(op: str, fields: dict[str, Any], path: str, rule: str) -> None:
    desc = parse_operator_desc(op, fields, ("desc",), ("type",))  # not validated
    shape = fields["InputTensor"]["Sizes"]
    with pytest.raises(dmlapi.DmlApiError, match="E_INVALIDARG"):
        dmlapi.execute(desc, {"InputTensor": np.zeros(shape, np.float32)})
