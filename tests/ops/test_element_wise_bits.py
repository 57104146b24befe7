"""The bitwise operators (dml2onnx/ops/element_wise_bits.py): by hand, what DirectML's own API
computed (two's complement bits, float encodings, shift amounts past the width, BIT_COUNT's
types), validation,
the lowering at every opset dml2onnx supports and on the DirectML EP's registry, and properties
over random shapes and types against the numpy reference. The matrix
(dml2onnx/cases/element_wise_bits.py) runs them on every EP present and through DirectML's API."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dml2onnx import lowering
from dml2onnx.core import operator_table
from dml2onnx.core.errors import format_path
from dml2onnx.graph import dml_ep
from dml2onnx.graph.builder import MAX_OPSET, MIN_OPSET
from dml2onnx.ops import registry
from dml2onnx.ops.element_wise_bits import ROWS
from strategies import SEEDS, shapes
from support import EPS, lowered_and_reference, make_desc, refusal, run_cli, tensor

INTEGERS = ["INT8", "INT16", "INT32", "INT64", "UINT8", "UINT16", "UINT32", "UINT64"]
FLOATS = ["FLOAT32", "FLOAT16"]
UNSIGNED = ["UINT8", "UINT16", "UINT32", "UINT64"]


def unary(op: str, dtype: str, x: list[int], out: str | None = None, ep: str = "cpu") -> tuple[np.ndarray, np.ndarray]:
    a = np.array(x, dtype=dtype.lower())
    fields = {"InputTensor": tensor(dtype, a.shape), "OutputTensor": tensor(out or dtype, a.shape)}
    return lowered_and_reference(ep, op, fields, {"InputTensor": a})


def binary(op: str, dtype: str, a: list[int], b: list[int], opset: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    x, y = np.array(a, dtype=dtype.lower()), np.array(b, dtype=dtype.lower())
    fields = {n: tensor(dtype, x.shape) for n in ("ATensor", "BTensor", "OutputTensor")}
    return lowered_and_reference("cpu", op, fields, {"ATensor": x, "BTensor": y}, opset)


# -- by hand: what DirectML's API computed (DirectML.dll under Wine) --------------------------------


@pytest.mark.parametrize(
    ("op", "dtype", "a", "b", "want"),
    [
        ("ELEMENT_WISE_BIT_AND", "INT8", [-128, -1, 0x55], [-1, 0x2A, -86], [-128, 0x2A, 0]),
        ("ELEMENT_WISE_BIT_OR", "INT16", [-32768, 0x0F0F], [1, -0x0F10], [-32767, -1]),
        ("ELEMENT_WISE_BIT_XOR", "INT32", [-1, 2**31 - 1], [2**31 - 1, -(2**31)], [-(2**31), -1]),
        ("ELEMENT_WISE_BIT_AND", "INT64", [-(2**53) - 1, 2**62 + 3], [2**53 + 1, -1], [1, 2**62 + 3]),
        ("ELEMENT_WISE_BIT_XOR", "UINT64", [2**64 - 1, 2**53 + 1], [2**63, 1], [2**63 - 1, 2**53]),
    ],
)
def test_bitwise_on_twos_complement_bits(op: str, dtype: str, a: list[int], b: list[int], want: list[int]) -> None:
    got, ref = binary(op, dtype, a, b)
    assert got.tolist() == ref.tolist() == want


@pytest.mark.parametrize(
    ("dtype", "x", "want"),
    [
        ("INT8", [-128, -1, 0, 127], [127, 0, -1, -128]),
        ("UINT16", [0, 65535, 0x00FF], [65535, 0, 0xFF00]),
        ("INT64", [-(2**63), 2**53 + 1], [2**63 - 1, -(2**53) - 2]),
        ("UINT64", [0, 2**53 + 1], [2**64 - 1, 2**64 - 2**53 - 2]),
    ],
)
def test_bit_not(dtype: str, x: list[int], want: list[int]) -> None:
    got, ref = unary("ELEMENT_WISE_BIT_NOT", dtype, x)
    assert got.tolist() == ref.tolist() == want


@pytest.mark.parametrize("out", ["UINT8", "UINT32"])
@pytest.mark.parametrize(
    ("dtype", "x", "want"),
    [
        ("UINT32", [0, 123, 456, 789], [0, 6, 4, 5]),  # the page's example
        ("INT8", [-128, -1, 127], [1, 8, 7]),  # the two's complement bits
        ("INT64", [-1, -(2**63), 2**53 + 1], [64, 1, 2]),
        ("UINT64", [2**64 - 1, 2**63], [64, 1]),
    ],
)
def test_bit_count(dtype: str, x: list[int], want: list[int], out: str) -> None:
    got, ref = unary("ELEMENT_WISE_BIT_COUNT", dtype, x, out)
    assert got.dtype == np.dtype(out.lower()) and got.tolist() == ref.tolist() == want


def _bits(x: np.ndarray) -> list[int]:
    return x.view(f"u{x.dtype.itemsize}").tolist()


@pytest.mark.parametrize("dtype", FLOATS)
def test_floats_are_their_encodings(dtype: str) -> None:
    """DirectML works on the IEEE encodings: NOT(1.0) = -3.9999998 (0xC07FFFFF), NOT(-inf) is the
    largest subnormal, AND with -0.0 keeps the sign, XOR of x with itself is +0."""
    nt = np.dtype(dtype.lower())
    x = np.array([1.0, -np.inf, -2.5, 0.0, np.nan], nt)
    got, ref = unary("ELEMENT_WISE_BIT_NOT", dtype, x.tolist())
    assert _bits(got)[:3] == _bits(ref)[:3] == [~v & (2 ** (8 * nt.itemsize) - 1) for v in _bits(x)[:3]]
    assert 0 < got[1] < np.finfo(nt).tiny  # ~(-inf): the largest subnormal
    assert np.isnan(got[3]) and np.isnan(ref[3])  # ~(+0): a NaN's encoding
    assert _bits(got)[4] == _bits(ref)[4] != 0  # ~(the canonical NaN): a negative subnormal
    a, b = np.array([2.5, -0.0, 3.0], nt), np.array([-1.5, -7.0, 3.0], nt)  # -0.0 & -7.0 = -0.0
    got, _ = binary("ELEMENT_WISE_BIT_AND", dtype, a.tolist(), b.tolist())
    assert _bits(got) == (a.view(f"u{nt.itemsize}") & b.view(f"u{nt.itemsize}")).tolist()
    assert np.signbit(got[1]) and got[1] == 0
    got, _ = binary("ELEMENT_WISE_BIT_XOR", dtype, a.tolist(), a.tolist())
    assert _bits(got) == [0, 0, 0]
    got, _ = unary("ELEMENT_WISE_BIT_COUNT", dtype, [1.0, -0.0, np.inf, np.nan], "UINT8")
    want = [bin(v).count("1") for v in np.array([1.0, -0.0, np.inf, np.nan], nt).view(f"u{nt.itemsize}").tolist()]
    assert got.tolist() == want  # the canonical NaN: 0x7FC00000 / 0x7E00


@pytest.mark.parametrize(
    ("op", "dtype", "a", "b", "want"),
    [
        # 8/16/32 bits: the value zero-extended to 32 bits, shifted by b & 31, the low bits kept
        ("ELEMENT_WISE_BIT_SHIFT_LEFT", "UINT8", [253, 253, 253, 253, 253], [1, 7, 8, 9, 33], [250, 128, 0, 0, 250]),
        ("ELEMENT_WISE_BIT_SHIFT_RIGHT", "UINT8", [253, 253, 253, 253], [1, 8, 33, 255], [126, 0, 126, 0]),
        ("ELEMENT_WISE_BIT_SHIFT_LEFT", "UINT16", [65533, 65533, 65533], [16, 32, 33], [0, 65533, 65530]),
        ("ELEMENT_WISE_BIT_SHIFT_LEFT", "UINT32", [2**32 - 3] * 3, [31, 32, 33], [2**31, 2**32 - 3, 2**32 - 6]),
        ("ELEMENT_WISE_BIT_SHIFT_RIGHT", "UINT32", [2**32 - 3] * 3, [31, 32, 2**32 - 1], [1, 2**32 - 3, 1]),
        # UINT64: s = b's low 32 bits; shifted by s below 32, else by 32 + (s & 31)
        (
            "ELEMENT_WISE_BIT_SHIFT_LEFT",
            "UINT64",
            [2**64 - 3] * 4,
            [63, 64, 65, 2**32 + 5],
            [2**63, 2**64 - 3 * 2**32, 2**64 - 6 * 2**32, 2**64 - 96],
        ),
        (
            "ELEMENT_WISE_BIT_SHIFT_RIGHT",
            "UINT64",
            [2**64 - 3] * 4,
            [1, 64, 100, 2**63 + 40],
            [2**63 - 2, 2**32 - 1, 2**28 - 1, 2**24 - 1],
        ),
    ],
)
def test_shifts_as_directml(op: str, dtype: str, a: list[int], b: list[int], want: list[int]) -> None:
    for opset in (MIN_OPSET, MAX_OPSET):
        got, ref = binary(op, dtype, a, b, opset)
        assert got.tolist() == ref.tolist() == want


# -- the lowering: exact arithmetic every EP has, at every opset ------------------------------------


def _fields(op: str, dtype: str, out: str | None = None) -> dict[str, Any]:
    names = [f.name for f in operator_table.OPERATORS[op].fields if f.kind.name == "INPUT"]
    return {n: tensor(dtype, [2, 3]) for n in names} | {"OutputTensor": tensor(out or dtype, [2, 3])}


@pytest.mark.parametrize("op", sorted(ROWS))
def test_no_bitwise_onnx_ops_and_the_dml_ep_takes_every_node(op: str) -> None:
    """The CUDA EP has no BitShift or Bitwise* kernels (and Bitwise* needs opset 18)."""
    types = UNSIGNED if "SHIFT" in op else INTEGERS + FLOATS
    for dtype in types:
        desc = make_desc(op, _fields(op, dtype, "UINT32" if op.endswith("COUNT") else None))
        for opset in range(MIN_OPSET, MAX_OPSET + 1):
            model = lowering.lower(desc, "t", opset=opset)
            assert dml_ep.check(model) == [], (dtype, opset)
            used = {n.op_type for n in model.graph.node}
            assert not used & {"BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot", "Mod"}, used
            where = [n for n in model.graph.node if n.op_type == "Where"]
            types_of = {i.name: i.data_type for i in model.graph.initializer}
            for n in where:  # the CUDA EP's Where: INT32/INT64/FLOAT values here
                assert all(types_of.get(i, 6) in (1, 6, 7) for i in n.input[1:]), (n.name, dtype)


# -- validation -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "change", "path", "text"),
    [
        ("ELEMENT_WISE_BIT_AND", {"BTensor": tensor("INT16", [2, 3])}, "desc.BTensor.DataType", "same DataType"),
        ("ELEMENT_WISE_BIT_OR", {"BTensor": tensor("INT32", [3, 2])}, "desc.BTensor.Sizes", "same Sizes"),
        ("ELEMENT_WISE_BIT_XOR", {"OutputTensor": tensor("UINT32", [2, 3])}, "desc.OutputTensor.DataType", "same DataType"),
        ("ELEMENT_WISE_BIT_NOT", {"OutputTensor": tensor("INT32", [2, 3, 1])}, "desc.OutputTensor.Sizes", "DimensionCount"),
        ("ELEMENT_WISE_BIT_COUNT", {"OutputTensor": tensor("INT32", [2, 3])}, "desc.OutputTensor.DataType", "must be"),
        ("ELEMENT_WISE_BIT_COUNT", {"OutputTensor": tensor("UINT16", [2, 3])}, "desc.OutputTensor.DataType", "must be"),
        ("ELEMENT_WISE_BIT_SHIFT_LEFT", {"ATensor": tensor("INT32", [2, 3])}, "desc.ATensor.DataType", "must be"),
        ("ELEMENT_WISE_BIT_SHIFT_RIGHT", {"BTensor": tensor("UINT8", [2, 3])}, "desc.BTensor.DataType", "same DataType"),
        (
            "ELEMENT_WISE_BIT_AND",
            {n: tensor("FLOAT64", [2, 3]) for n in ("ATensor", "BTensor", "OutputTensor")},
            "desc.ATensor.DataType",
            "FLOAT64 arithmetic",
        ),
        (
            "ELEMENT_WISE_BIT_COUNT",
            {"InputTensor": tensor("FLOAT64", [2, 3])},
            "desc.InputTensor.DataType",
            "BitCast",
        ),
    ],
)
def test_invalid(op: str, change: dict[str, Any], path: str, text: str) -> None:
    dtype = "UINT32" if "SHIFT" in op else "INT32"
    fields = _fields(op, dtype, "UINT32" if op.endswith("COUNT") else None) | change
    e = refusal(op, fields)
    assert format_path(e.path) == path and text in str(e), str(e)


def test_float_refusal_exits_2_naming_the_path(tmp_path: Any) -> None:
    from support import write_model

    t = tensor("FLOAT64", [4])
    model = {
        "resources": {"a": {"initialValuesDataType": "FLOAT64", "initialValues": [1, 2, 3, 4]}},
        "dispatchables": {"op": {"type": "DML_OPERATOR_ELEMENT_WISE_BIT_NOT", "desc": {"InputTensor": t, "OutputTensor": t}}},
        "commands": [{"type": "dispatch", "dispatchable": "op", "bindings": {"InputTensor": "a", "OutputTensor": "a"}}],
    }
    status, _, err = run_cli("run", str(write_model(tmp_path, model)))
    assert status == 2 and "InputTensor.DataType" in err and "FLOAT64" in err, err


# -- properties -----------------------------------------------------------------------------------


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, dict[str, Any], dict[str, np.ndarray]]:
    op = draw(st.sampled_from(sorted(ROWS)))
    dtype = draw(st.sampled_from(UNSIGNED if "SHIFT" in op else INTEGERS + FLOATS))
    shape = draw(shapes())
    rng = np.random.default_rng(draw(SEEDS))
    names = [f.name for f in operator_table.OPERATORS[op].fields if f.kind.name == "INPUT"]
    feeds = {}
    nt = np.dtype(dtype.lower())
    if nt.kind == "f":  # random encodings, NaNs the canonical NaN (ONNX cannot see payloads)
        for n in names:
            x = rng.integers(0, 2 ** (8 * nt.itemsize), size=shape, dtype=np.uint64).astype(f"u{nt.itemsize}").view(nt)
            special = rng.random(shape) < 0.1
            x[special] = rng.choice(np.array([0.0, -0.0, np.inf, -np.inf, np.nan], nt), size=int(special.sum()))
            feeds[n] = np.where(np.isnan(x), np.nan, x).astype(nt)
    info = np.iinfo(nt if nt.kind != "f" else np.int8)
    for n in names if nt.kind != "f" else []:
        x = rng.integers(info.min, int(info.max) + 1, size=shape, dtype=info.dtype)
        ends = rng.random(shape) < 0.2
        x[ends] = rng.choice(np.array([info.min, info.max, 0, 1], dtype=info.dtype), size=int(ends.sum()))
        if n == "BTensor" and "SHIFT" in op and draw(st.booleans()):
            x = (x % 130).astype(info.dtype)  # amounts around the widths
        feeds[n] = x
    out = draw(st.sampled_from(["UINT8", "UINT32"])) if op.endswith("COUNT") else dtype
    fields: dict[str, Any] = {n: tensor(dtype, shape) for n in names} | {"OutputTensor": tensor(out, shape)}
    return op, fields, feeds


@EPS
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases(), opset=st.integers(MIN_OPSET, MAX_OPSET))
def test_matches_reference(ep: str, case: tuple[str, dict[str, Any], dict[str, np.ndarray]], opset: int) -> None:
    op, fields, feeds = case
    got, want = lowered_and_reference(ep, op, fields, feeds, opset)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if got.dtype.kind == "f":  # bit for bit, but for NaN's payload
        assert np.array_equal(np.isnan(got), np.isnan(want)), (op, fields["OutputTensor"])
        got, want = got[~np.isnan(want)], want[~np.isnan(want)]
        got, want = got.view(f"u{got.dtype.itemsize}"), want.view(f"u{want.dtype.itemsize}")
    assert np.array_equal(got, want), (op, fields["OutputTensor"], got.ravel()[:8], want.ravel()[:8])


def test_rows_are_the_adopted_operators() -> None:
    """Every row is a lowered operator whose fields and tables come from the generated table."""
    assert set(ROWS) == set(registry.family("ELEMENT_WISE_BIT_AND").operators)
