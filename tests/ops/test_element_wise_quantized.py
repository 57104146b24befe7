"""The linear quantization operators (dml2onnx/ops/element_wise_quantized.py): by hand, what
DirectML's own API computed (rounding, order, NaN, zero and infinite scales, INT32 and FLOAT16
inputs), validation, the `dml` target's QuantizeLinear/DequantizeLinear, and properties over random
shapes, types, broadcasts and special values against the numpy reference. The matrix
(dml2onnx/cases/element_wise_quantized.py) runs them on every EP present and through DirectML's API."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dml2onnx import lowering
from dml2onnx.core import operator_table
from dml2onnx.core.desc import parse_operator_desc
from dml2onnx.core.errors import ModelError, format_path
from dml2onnx.graph import dml_ep
from dml2onnx.graph.targets import DML_NODE_DOC
from dml2onnx.ops import registry
from dml2onnx.ops.element_wise_quantized import ADD, DEQUANTIZE, QUANTIZE, ROWS
from strategies import SEEDS, shapes
from support import EPS, assert_matches_reference, lowered_and_reference, make_desc, refusal, tensor


def quantize(x: list[Any], scale: list[Any], zero: int | None, out: str = "INT8", in_type: str = "FLOAT32") -> np.ndarray:
    a = np.array(x, in_type.lower())
    s = np.broadcast_to(np.array(scale, "float32" if in_type == "INT32" else in_type.lower()), a.shape).copy()
    fields = {
        "InputTensor": tensor(in_type, a.shape),
        "ScaleTensor": tensor("FLOAT32" if in_type == "INT32" else in_type, a.shape),
    }
    feeds = {"InputTensor": a, "ScaleTensor": s}
    if zero is not None:
        fields["ZeroPointTensor"] = tensor(out, a.shape)
        feeds["ZeroPointTensor"] = np.full(a.shape, zero, out.lower())
    got, want = lowered_and_reference("cpu", QUANTIZE, fields | {"OutputTensor": tensor(out, a.shape)}, feeds)
    np.testing.assert_array_equal(got, want)
    return got


def quantized_add(a: list[int], scales: tuple[float, float, float], zeros: tuple[int, int, int]) -> np.ndarray:
    x = np.array(a, np.int8)
    one = [1] * x.ndim
    fields = {n: tensor("INT8", x.shape) for n in ("ATensor", "BTensor", "OutputTensor")}
    feeds = {"ATensor": x, "BTensor": np.zeros_like(x)}
    for prefix, s, z in zip(("A", "B", "Output"), scales, zeros, strict=True):
        fields |= {f"{prefix}ScaleTensor": tensor("FLOAT32", one), f"{prefix}ZeroPointTensor": tensor("INT8", one)}
        feeds |= {f"{prefix}ScaleTensor": np.full(one, s, np.float32), f"{prefix}ZeroPointTensor": np.full(one, z, np.int8)}
    got, want = lowered_and_reference("cpu", ADD, fields, feeds)
    np.testing.assert_array_equal(got, want)
    return got


# -- by hand: what DirectML's API computed (DirectML.dll of onnxruntime-directml 1.24.4, Wine) -------

HALVES = [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 0.49999997, 127.5, -128.5, 300, -300, np.nan, np.inf, -np.inf, 1e10]


@pytest.mark.parametrize(
    ("out", "zero", "want"),
    [
        # halves to even, then the zero point added (0.5 + 3 gives 3, not 4), saturated; NaN gives 0
        ("INT8", 0, [-2, -2, 0, 0, 2, 2, 4, 0, 127, -128, 127, -128, 0, 127, -128, 127]),
        ("INT8", 3, [1, 1, 3, 3, 5, 5, 7, 3, 127, -125, 127, -128, 0, 127, -128, 127]),
        ("UINT8", 0, [0, 0, 0, 0, 2, 2, 4, 0, 128, 0, 255, 0, 0, 255, 0, 255]),
        ("UINT8", 3, [1, 1, 3, 3, 5, 5, 7, 3, 131, 0, 255, 0, 0, 255, 0, 255]),
        ("INT8", None, [-2, -2, 0, 0, 2, 2, 4, 0, 127, -128, 127, -128, 0, 127, -128, 127]),
    ],
)
def test_quantize_rounds_halves_to_even_before_the_zero_point(out: str, zero: int | None, want: list[int]) -> None:
    assert quantize(HALVES, [1.0], zero, out).tolist() == want


SPECIAL_X = [1, -1, 0, 0, 5, 5, 5, np.nan, 3, -3, np.inf]
SPECIAL_SCALE = [0, 0, 0, -0.0, -1, np.nan, np.inf, 1, -2, -2, np.inf]


@pytest.mark.parametrize(
    ("out", "zero", "want"),
    [
        # x / 0 saturates by the sign of x; 0 / 0, x / NaN, NaN and inf / inf give 0 whatever the zero point
        ("INT8", 0, [127, -128, 0, 0, -5, 0, 0, 0, -2, 2, 0]),
        ("INT8", 5, [127, -128, 0, 0, 0, 0, 5, 0, 3, 7, 0]),
        ("UINT8", 0, [255, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0]),
        ("UINT8", 5, [255, 0, 0, 0, 0, 0, 5, 0, 3, 7, 0]),
    ],
)
def test_quantize_special_scales(out: str, zero: int, want: list[int]) -> None:
    assert quantize(SPECIAL_X, SPECIAL_SCALE, zero, out).tolist() == want


def test_quantize_divides_in_float32() -> None:
    """A true FLOAT32 division (x * (1 / scale) rounds 5.4 / 0.2 = 27 to 26.999998 then 27 too, but
    differs elsewhere: DirectML matched the division on 20000 values where the two disagree); an
    INT32 input is converted to FLOAT32 first (2**24 + 1 becomes 2**24: / 2**25 is 0.5, rounds to 0)."""
    x = np.float32([1.4499999, 2.5, 0.3])
    s = np.float32([0.1, 0.2, 0.1])
    want = np.rint(x / s).astype(np.int8).tolist()
    assert quantize(x.tolist(), s.tolist(), 0).tolist() == want
    assert quantize([2**24 + 1, 2**24 + 3], [2.0**25], 0, in_type="INT32").tolist() == [0, 1]
    assert quantize([255, 3, 5, 7, 2**31 - 1, -(2**31)], [2.0], None, in_type="INT32").tolist() == [127, 2, 2, 4, 127, -128]


def test_quantize_float16_computes_in_float32() -> None:
    """FLOAT16 inputs and scales: x / scale in FLOAT32 (DirectML matched it on 20000 random halves;
    a FLOAT16 division rounds 350 of them the other way)."""
    x, s = np.float16([99.5, -7.0]), np.float16([3.98, 0.2])
    want = np.rint(x.astype(np.float32) / s.astype(np.float32)).astype(np.int8)
    assert quantize(x.tolist(), s.tolist(), 0, in_type="FLOAT16").tolist() == want.tolist()


@pytest.mark.parametrize(
    ("dtype", "x", "zero", "want"),
    [
        # both converted to FLOAT32, then subtracted: no wrapping, not exact beyond 2**24
        ("INT32", [2**31 - 1, -(2**31), 0, 16777217], [-(2**31), 2**31 - 1, 1, 0], [2.0**32, -(2.0**32), -1.0, 16777216.0]),
        ("UINT32", [2**32 - 1, 0, 3], [0, 2**32 - 1, 2**31 - 1], [2.0**32, -(2.0**32), -(2.0**31)]),
        ("INT8", [127, -128, 0], [-128, 127, 1], [255.0, -255.0, -1.0]),
        ("UINT16", [65535, 0], [0, 65535], [65535.0, -65535.0]),
    ],
)
def test_dequantize_subtracts_in_float32(dtype: str, x: list[int], zero: list[int], want: list[float]) -> None:
    a = np.array(x, dtype.lower())
    fields = {n: tensor(dtype, a.shape) for n in ("InputTensor", "ZeroPointTensor")}
    fields |= {n: tensor("FLOAT32", a.shape) for n in ("ScaleTensor", "OutputTensor")}
    feeds = {"InputTensor": a, "ZeroPointTensor": np.array(zero, dtype.lower()), "ScaleTensor": np.ones(a.shape, np.float32)}
    got, ref = lowered_and_reference("cpu", DEQUANTIZE, fields, feeds)
    assert got.tolist() == ref.tolist() == want


def test_dequantize_float16_and_without_zero_point() -> None:
    """FLOAT32 arithmetic rounded once to FLOAT16, overflow to infinity (IEEE: DirectML under
    Wine/vkd3d/lavapipe converts toward zero and gives 65504, tests/dml_findings.py)."""
    a = np.array([3, -4, 100], np.int8)
    fields = {"InputTensor": tensor("INT8", [3]), "ScaleTensor": tensor("FLOAT16", [3]), "OutputTensor": tensor("FLOAT16", [3])}
    got, ref = lowered_and_reference("cpu", DEQUANTIZE, fields, {"InputTensor": a, "ScaleTensor": np.float16([0.5, 0.1, 700])})
    assert (
        got.dtype == np.float16
        and got.tolist() == ref.tolist() == np.float16([1.5, -4 * np.float32(np.float16(0.1)), np.inf]).tolist()
    )


def test_quantized_add_as_directml() -> None:
    # halves to even after the division by OutputScale, then OutputZeroPoint
    assert quantized_add([-7, -5, -3, -1, 1, 3, 5, 7], (1, 1, 2), (0, 0, 3)).tolist() == [-1, 1, 1, 3, 3, 5, 5, 7]
    # NaN (0 / 0, a NaN scale, 0 * inf) gives the type's minimum, unlike QUANTIZE_LINEAR's 0
    a = [1, 0, 5, 5, -5]
    assert quantized_add(a, (1, 1, 0), (0, 0, 3)).tolist() == [127, -128, 127, 127, -128]
    assert quantized_add(a, (1, 1, np.nan), (0, 0, 3)).tolist() == [-128] * 5
    assert quantized_add(a, (1, 1, np.inf), (0, 0, 3)).tolist() == [3] * 5
    assert quantized_add(a, (1, 1, -1), (0, 0, 3)).tolist() == [2, 3, -2, -2, 8]
    assert quantized_add(a, (np.inf, 1, 1), (0, 0, 3)).tolist() == [127, -128, 127, 127, -128]


def test_quantized_add_mixes_types() -> None:
    """A UINT8, B INT8 and a UINT8 output, each with its own zero point (DirectML's API matched
    this reference on 20000 random values)."""
    a, bx = np.array([[0, 128, 255, 7]], np.uint8), np.array([[-128, 0, 127, -3]], np.int8)
    fields = {"ATensor": tensor("UINT8", [1, 4]), "BTensor": tensor("INT8", [1, 4]), "OutputTensor": tensor("UINT8", [1, 4])}
    feeds: dict[str, np.ndarray] = {"ATensor": a, "BTensor": bx}
    for p, t, s, z in (("A", "UINT8", 0.3, 128), ("B", "INT8", 0.7, -3), ("Output", "UINT8", 0.9, 100)):
        fields |= {f"{p}ScaleTensor": tensor("FLOAT32", [1, 1]), f"{p}ZeroPointTensor": tensor(t, [1, 1])}
        feeds |= {f"{p}ScaleTensor": np.float32([[s]]), f"{p}ZeroPointTensor": np.array([[z]], t.lower())}
    got, want = lowered_and_reference("cpu", ADD, fields, feeds)
    f = np.float32
    total = (a.astype(f) - f(128)) * f(0.3) + (bx.astype(f) + f(3)) * f(0.7)
    assert got.tolist() == want.tolist() == np.clip(np.rint(total / f(0.9)) + 100, 0, 255).astype(np.uint8).tolist()


# -- validation ----------------------------------------------------------------------------------


def q_fields(in_type: str = "FLOAT32", scale: str = "FLOAT32", zero: str = "INT8", out: str = "INT8") -> dict[str, Any]:
    t = [2, 3]
    return {
        "InputTensor": tensor(in_type, t),
        "ScaleTensor": tensor(scale, t),
        "ZeroPointTensor": tensor(zero, t),
        "OutputTensor": tensor(out, t),
    }


def dq_fields(in_type: str = "INT8", scale: str = "FLOAT32", zero: str = "INT8", out: str = "FLOAT32") -> dict[str, Any]:
    return q_fields(in_type, scale, zero, out)


def add_fields(scale_sizes: list[int] | None = None, **change: Any) -> dict[str, Any]:
    one = scale_sizes or [1, 1]
    fields = {n: tensor("INT8", [2, 3]) for n in ("ATensor", "BTensor", "OutputTensor")}
    for p in ("A", "B", "Output"):
        fields |= {f"{p}ScaleTensor": tensor("FLOAT32", one), f"{p}ZeroPointTensor": tensor("INT8", one)}
    return fields | change


@pytest.mark.parametrize(
    ("op", "fields", "path", "text"),
    [
        # every one of these DirectML's CreateOperator refuses too (E_INVALIDARG, measured)
        (QUANTIZE, q_fields(scale="FLOAT16"), "desc.ScaleTensor.DataType", "must be FLOAT32"),
        (QUANTIZE, q_fields("FLOAT16", "FLOAT32"), "desc.ScaleTensor.DataType", "must be FLOAT16"),
        (QUANTIZE, q_fields("INT32", "FLOAT16"), "desc.ScaleTensor.DataType", "an INT32 InputTensor takes a FLOAT32 ScaleTensor"),
        (QUANTIZE, q_fields(zero="UINT8"), "desc.ZeroPointTensor.DataType", "same DataType"),
        (QUANTIZE, q_fields(out="INT32"), "desc.OutputTensor.DataType", "must be"),
        (QUANTIZE, q_fields() | {"ScaleTensor": tensor("FLOAT32", [1, 1])}, "desc.ScaleTensor.Sizes", "same Sizes"),
        (QUANTIZE, q_fields() | {"ScaleTensor": tensor("FLOAT32", [3])}, "desc.ScaleTensor.Sizes", "DimensionCount"),
        (QUANTIZE, q_fields() | {"OutputTensor": tensor("INT8", [3, 2])}, "desc.OutputTensor.Sizes", "same Sizes"),
        (DEQUANTIZE, dq_fields(scale="FLOAT16"), "desc.ScaleTensor.DataType", "same DataType"),
        (DEQUANTIZE, dq_fields(zero="INT32"), "desc.ZeroPointTensor.DataType", "same DataType"),
        (DEQUANTIZE, dq_fields("INT64", zero="INT64"), "desc.InputTensor.DataType", "must be"),
        (DEQUANTIZE, dq_fields() | {"ZeroPointTensor": tensor("INT8", [2, 1])}, "desc.ZeroPointTensor.Sizes", "same Sizes"),
        (ADD, add_fields([2, 3]), "desc.AScaleTensor.Sizes[0]", "holds one value"),
        (ADD, add_fields([1]), "desc.AScaleTensor.Sizes", "DimensionCount"),
        (ADD, add_fields(BTensor=tensor("INT8", [1, 3])), "desc.BTensor.Sizes", "same Sizes"),
        (ADD, add_fields(OutputTensor=tensor("INT8", [2, 1])), "desc.OutputTensor.Sizes", "same Sizes"),
        (ADD, add_fields(BZeroPointTensor=tensor("UINT8", [1, 1])), "desc.BZeroPointTensor.DataType", "same DataType"),
        (ADD, add_fields(AScaleTensor=tensor("FLOAT16", [1, 1])), "desc.AScaleTensor.DataType", "must be FLOAT32"),
    ],
)
def test_invalid(op: str, fields: dict[str, Any], path: str, text: str) -> None:
    e = refusal(op, fields)
    assert format_path(e.path) == path and text in str(e), str(e)


@pytest.mark.parametrize("op", [QUANTIZE, DEQUANTIZE])
def test_zero_point_is_optional_from_feature_level_6_2(op: str) -> None:
    fields = {k: v for k, v in (q_fields() if op == QUANTIZE else dq_fields()).items() if k != "ZeroPointTensor"}
    make_desc(op, fields)  # the newest level takes it
    e = refusal(op, fields, level="6_1")
    assert format_path(e.path) == "desc.ZeroPointTensor" and "6_2" in str(e), str(e)


def test_older_feature_levels() -> None:
    """FLOAT16 from 6_0; 4 dimensions only before 3_0; QUANTIZED_LINEAR_ADD from 4_0."""
    e = refusal(QUANTIZE, q_fields("FLOAT16", "FLOAT16"), level="5_2")
    assert format_path(e.path) == "desc.InputTensor.DataType" and "6_0" in str(e), str(e)
    e = refusal(DEQUANTIZE, dq_fields(), level="2_1")
    assert format_path(e.path) == "desc.InputTensor.Sizes" and "3_0" in str(e), str(e)
    with pytest.raises(ModelError, match="4_0"):
        parse_operator_desc(ADD, add_fields(), ("desc",), ("type",), level="3_1")


def test_broadcast_scale_through_zero_strides() -> None:
    """The page's "same Sizes" with zero strides: a scale per column, one zero point."""
    x = np.array([[0.5, 1.5, 2.5, -3.5], [1000, -7, np.nan, 2.75]], np.float32)
    fields = q_fields(out="UINT8", zero="UINT8") | {
        "InputTensor": tensor("FLOAT32", [2, 4]),
        "ScaleTensor": {"DataType": "FLOAT32", "Sizes": [2, 4], "Strides": [0, 1]},
        "ZeroPointTensor": {"DataType": "UINT8", "Sizes": [2, 4], "Strides": [0, 0]},
        "OutputTensor": tensor("UINT8", [2, 4]),
    }
    feeds = {
        "InputTensor": x,
        "ScaleTensor": np.tile(np.float32([1, 0.5, 2, -1]), (2, 1)),
        "ZeroPointTensor": np.full((2, 4), 3, np.uint8),
    }
    got, want = lowered_and_reference("cpu", QUANTIZE, fields, feeds)
    assert got.tolist() == want.tolist() == [[3, 6, 4, 7], [255, 0, 0, 0]]  # DirectML's API gave the same


# -- the dml target ---------------------------------------------------------------------------------


def _ops(op: str, fields: dict[str, Any], opset: int = 17) -> list[str]:
    model = lowering.lower(make_desc(op, fields), "q", opset=opset, target="dml")
    assert dml_ep.check(model) == []
    return [n.op_type for n in model.graph.node if n.doc_string == DML_NODE_DOC]


def test_dml_target_emits_the_nodes_the_directml_ep_maps_back() -> None:
    per_column = {
        "ScaleTensor": {"DataType": "FLOAT32", "Sizes": [2, 3], "Strides": [0, 1]},
        "ZeroPointTensor": {"DataType": "INT8", "Sizes": [2, 3], "Strides": [0, 0]},
    }
    assert _ops(QUANTIZE, q_fields() | per_column) == ["QuantizeLinear"]
    assert _ops(QUANTIZE, q_fields()) == []  # a scale per element: ONNX's QuantizeLinear has no such form
    assert (
        _ops(QUANTIZE, q_fields("FLOAT16", "FLOAT16") | {"ScaleTensor": per_column["ScaleTensor"] | {"DataType": "FLOAT16"}})
        == []
    )
    half = q_fields("FLOAT16", "FLOAT16") | {"ScaleTensor": per_column["ScaleTensor"] | {"DataType": "FLOAT16"}}
    half["ZeroPointTensor"] = per_column["ZeroPointTensor"]
    assert _ops(QUANTIZE, half, opset=19) == ["QuantizeLinear"]  # FLOAT16 from QuantizeLinear-19
    int32 = q_fields("INT32") | per_column
    assert _ops(QUANTIZE, int32) == ["QuantizeLinear"] and _ops(QUANTIZE, int32, opset=19) == []  # -19: scale in x's type
    dq = dq_fields() | {"ScaleTensor": per_column["ScaleTensor"], "ZeroPointTensor": per_column["ZeroPointTensor"]}
    assert _ops(DEQUANTIZE, dq) == ["DequantizeLinear"]
    dq32 = dq_fields("INT32", zero="INT32") | {"ScaleTensor": per_column["ScaleTensor"]}
    dq32["ZeroPointTensor"] = per_column["ZeroPointTensor"] | {"DataType": "INT32"}
    assert _ops(DEQUANTIZE, dq32) == []  # ONNX's INT32 DequantizeLinear has no zero point
    # nor without one: ONNX Runtime's QDQ optimizer makes an invalid QuantizeLinear of an INT32 DequantizeLinear
    # feeding a Gemm (the corpus's QDQ network on the DirectML EP): the portable graph
    assert _ops(DEQUANTIZE, {k: v for k, v in dq32.items() if k != "ZeroPointTensor"}) == []
    assert _ops(ADD, add_fields()) == []  # com.microsoft QLinearAdd: not emitted (module docstring)


# -- properties -----------------------------------------------------------------------------------


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, dict[str, Any], dict[str, np.ndarray]]:
    op = draw(st.sampled_from(sorted(ROWS)))
    table = operator_table.OPERATORS[op].support[0].tensors
    shape = draw(shapes())
    rng = np.random.default_rng(draw(SEEDS))
    rank = len(shape)

    def broadcast(dtype: str, values: Any) -> tuple[dict[str, Any], np.ndarray]:
        """Varying along a random subset of axes (zero strides elsewhere)."""
        axes = [i for i in range(rank) if draw(st.booleans())]
        compact = [s if i in axes else 1 for i, s in enumerate(shape)]
        strides, step = [0] * rank, 1
        for i in reversed(range(rank)):
            if i in axes:
                strides[i], step = step, step * shape[i]
        t = tensor(dtype, shape) | {"Strides": strides}
        return t, np.ascontiguousarray(np.broadcast_to(values(tuple(compact)), shape))

    def ints(dtype: str) -> Any:
        info = np.iinfo(np.dtype(dtype.lower()))
        return lambda s: rng.integers(info.min, int(info.max) + 1, size=s).astype(dtype.lower())

    def floats(dtype: str, scale: bool) -> Any:
        def make(s: tuple[int, ...]) -> np.ndarray:
            x = rng.standard_normal(s) * (draw(st.sampled_from([0.05, 1.0, 100.0])) if not scale else 1)
            special = rng.random(s) < 0.1
            x[special] = rng.choice([0.0, -0.0, 0.5, -2.5, np.inf, -np.inf, np.nan], size=int(special.sum()))
            return x.astype(dtype.lower())

        return make

    fields: dict[str, Any] = {}
    feeds: dict[str, np.ndarray] = {}
    if op in (QUANTIZE, DEQUANTIZE):
        in_type = draw(st.sampled_from([d.name for d in table["InputTensor"].types]))
        out = draw(st.sampled_from([d.name for d in table["OutputTensor"].types]))
        if op == QUANTIZE:
            scale_type, zero_type = ("FLOAT32" if in_type == "INT32" else in_type), out
            x = floats(in_type, False) if in_type != "INT32" else ints(in_type)
        else:
            scale_type, zero_type, x = out, in_type, ints(in_type)
        fields["InputTensor"], feeds["InputTensor"] = tensor(in_type, shape), x(shape)
        fields["ScaleTensor"], feeds["ScaleTensor"] = broadcast(scale_type, floats(scale_type, True))
        if draw(st.booleans()):
            fields["ZeroPointTensor"], feeds["ZeroPointTensor"] = broadcast(zero_type, ints(zero_type))
        fields["OutputTensor"] = tensor(out, shape)
        return op, fields, feeds
    for name in ("ATensor", "BTensor", "OutputTensor"):
        dtype = draw(st.sampled_from(["INT8", "UINT8"]))
        fields[name] = tensor(dtype, shape)
        if name != "OutputTensor":
            feeds[name] = ints(dtype)(shape)
        prefix = name.removesuffix("Tensor")
        one = (1,) * rank
        fields[f"{prefix}ScaleTensor"] = tensor("FLOAT32", one)
        feeds[f"{prefix}ScaleTensor"] = (
            np.abs(floats("FLOAT32", True)(one)) if draw(st.booleans()) else floats("FLOAT32", True)(one)
        )
        if draw(st.booleans()):
            fields[f"{prefix}ZeroPointTensor"], feeds[f"{prefix}ZeroPointTensor"] = tensor(dtype, one), ints(dtype)(one)
    return op, fields, feeds


@EPS
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_matches_reference(ep: str, case: tuple[str, dict[str, Any], dict[str, np.ndarray]]) -> None:
    op, fields, feeds = case
    assert_matches_reference(ep, op, fields, feeds)


def test_rows_are_the_adopted_operators() -> None:
    assert set(ROWS) == set(registry.family("ELEMENT_WISE_QUANTIZE_LINEAR").operators)
    assert all(registry.family(n).reference is not None for n in ROWS)
