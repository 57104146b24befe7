"""The element-wise math operators (dml2onnx/ops/element_wise.py): by hand, the integer rules
DirectML's own API showed, ScaleBias, validation, and properties over random shapes, types and
special values against the numpy reference. The matrix (dml2onnx/cases/element_wise.py) runs them on
every EP present and through DirectML's API."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dml2onnx import lowering
from dml2onnx.backends import runtime
from dml2onnx.cases.element_wise import ROWS, _params  # element_wise.py's and element_wise_arithmetic.py's rows
from dml2onnx.core import dtypes, operator_table
from dml2onnx.core.errors import format_path
from dml2onnx.ops import registry
from strategies import SEEDS, element_values, shapes
from support import EPS, assert_matches_reference, lowered_and_reference, make_desc, refusal, tensor

UNARY = [n for n in ROWS if "InputTensor" in {f.name for f in operator_table.OPERATORS[n].fields}]


def unary(op: str, dtype: str, x: list[Any], **extra: Any) -> tuple[np.ndarray, np.ndarray]:
    a = np.array([x], dtype=dtype.lower())
    fields = {"InputTensor": tensor(dtype, a.shape), "OutputTensor": tensor(dtype, a.shape), **extra}
    return lowered_and_reference("cpu", op, fields, {"InputTensor": a})


def binary(op: str, dtype: str, a: list[Any], b: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    x, y = np.array([a], dtype=dtype.lower()), np.array([b], dtype=dtype.lower())
    fields = {n: tensor(dtype, x.shape) for n in ("ATensor", "BTensor", "OutputTensor")}
    return lowered_and_reference("cpu", op, fields, {"ATensor": x, "BTensor": y})


# -- by hand: what DirectML's API computed (onnxruntime-directml 1.24.4 under Wine) ----------------


@pytest.mark.parametrize(
    ("dtype", "x", "want"),
    [
        ("INT8", [-128, -127, -1, 0, 127], [127, 127, 1, 0, 127]),  # 8/16 bits: computed wider, saturated
        ("INT16", [-32768, -5, 32767], [32767, 5, 32767]),
        ("INT32", [-(2**31), -5, 2**31 - 1], [-(2**31), 5, 2**31 - 1]),  # 32/64 bits: abs(min) wraps to min
        ("INT64", [-(2**63), -(2**53) - 1, 7], [-(2**63), 2**53 + 1, 7]),
    ],
)
def test_abs_of_integers(dtype: str, x: list[int], want: list[int]) -> None:
    got, ref = unary("ELEMENT_WISE_ABS", dtype, x)
    assert got.tolist() == ref.tolist() == [want]


@pytest.mark.parametrize(
    ("dtype", "a", "b", "want"),
    [
        ("INT8", [127, -128, 100], [1, -1, 100], [-128, 127, -56]),  # wraps modulo 2**8
        ("UINT16", [65535, 1], [1, 65535], [0, 0]),
        ("INT64", [2**63 - 1, 2**53], [1, 1], [-(2**63), 2**53 + 1]),
        ("UINT64", [2**64 - 1, 2**63], [2, 2**63], [1, 0]),
    ],
)
def test_add_of_integers_wraps(dtype: str, a: list[int], b: list[int], want: list[int]) -> None:
    got, ref = binary("ELEMENT_WISE_ADD", dtype, a, b)
    assert got.tolist() == ref.tolist() == [want]


# A, B and what DirectML's API gave for each operator (INT32; the 8/16-bit types the same at their
# own ends, measured; 64-bit DIVIDE is the finding in README).
DIVISION_A = [7, -7, 2**31 - 1, -(2**31), 5, 0, -5, -1]
DIVISION_B = [2, 2, -1, -1, 0, 0, 0, 3]


@pytest.mark.parametrize(
    ("op", "want"),
    [
        ("ELEMENT_WISE_DIVIDE", [3, -3, -(2**31) + 1, -(2**31), -1, -1, 1, 0]),
        ("ELEMENT_WISE_MODULUS_TRUNCATE", [1, -1, 0, 0, 5, 0, -5, -1]),
        ("ELEMENT_WISE_MODULUS_FLOOR", [1, 1, 0, 0, -1, -1, 1, 2]),
        ("ELEMENT_WISE_SUBTRACT", [5, -9, -(2**31), -(2**31) + 1, 5, 0, -5, -4]),
        ("ELEMENT_WISE_MULTIPLY", [14, -14, -(2**31) + 1, -(2**31), 0, 0, 0, -3]),
        ("ELEMENT_WISE_MAX", [7, 2, 2**31 - 1, -1, 5, 0, 0, 3]),
        ("ELEMENT_WISE_MEAN", [4, -2, 1073741823, 1073741823, 2, 0, -2, 1]),
        ("ELEMENT_WISE_DIFFERENCE_SQUARE", [25, 81, 0, 1, 25, 0, 25, 16]),
    ],
)
def test_int32_arithmetic_as_directml(op: str, want: list[int]) -> None:
    got, ref = binary(op, "INT32", DIVISION_A, DIVISION_B)
    assert got.tolist() == ref.tolist() == [want]


@pytest.mark.parametrize(
    ("op", "dtype", "a", "b", "want"),
    [
        ("ELEMENT_WISE_DIVIDE", "UINT8", [5, 0, 255], [0, 0, 2], [255, 255, 127]),
        ("ELEMENT_WISE_MODULUS_TRUNCATE", "UINT32", [5, 7], [0, 2], [2**32 - 1, 1]),
        ("ELEMENT_WISE_MODULUS_FLOOR", "INT64", [5, -7, -(2**63)], [0, 2, -1], [5, 1, 0]),
        ("ELEMENT_WISE_MODULUS_TRUNCATE", "UINT64", [5, 2**64 - 1], [0, 2**63], [5, 2**63 - 1]),
        ("ELEMENT_WISE_DIVIDE", "INT8", [-128, 100, -5], [-1, -3, 0], [-128, -33, 1]),
        ("ELEMENT_WISE_MAX", "INT64", [2**31, -(2**63), 2**53 + 1], [2**31 - 1, 2**63 - 1, 2**53], [2**31, 2**63 - 1, 2**53 + 1]),
        ("ELEMENT_WISE_MIN", "UINT64", [2**63, 2**64 - 1], [2**63 + 1, 0], [2**63, 0]),
    ],
)
def test_integer_division_and_order_edges(op: str, dtype: str, a: list[int], b: list[int], want: list[int]) -> None:
    got, ref = binary(op, dtype, a, b)
    assert got.tolist() == ref.tolist() == [want]


def test_negate_and_sign() -> None:
    assert unary("ELEMENT_WISE_NEGATE", "INT8", [-128, 127, 0])[0].tolist() == [[127, -127, 0]]  # saturates
    assert unary("ELEMENT_WISE_NEGATE", "INT32", [-(2**31), 5])[0].tolist() == [[-(2**31), -5]]  # wraps
    assert unary("ELEMENT_WISE_SIGN", "INT64", [2**31, -(2**40), 0])[0].tolist() == [[1, -1, 0]]
    got, ref = unary("ELEMENT_WISE_SIGN", "FLOAT32", [np.nan, -0.0, -3.5, np.inf])
    assert got.tolist() == ref.tolist() == [[0.0, 0.0, -1.0, 1.0]]  # NaN: 0, as DirectML gives


def test_add1_fused_activation() -> None:
    """DxDispatch's dml_element_wise_add1 example: [1, 2, 3] + [5, 8, -5], then ELU with Alpha 0.5."""
    x, y = np.array([[1, 2, 3]], np.float32), np.array([[5, 8, -5]], np.float32)
    fields = {n: tensor("FLOAT32", [1, 3]) for n in ("ATensor", "BTensor", "OutputTensor")}
    fields["FusedActivation"] = {"Type": "ACTIVATION_ELU", "Alpha": 0.5}
    got, ref = lowered_and_reference("cpu", "ELEMENT_WISE_ADD1", fields, {"ATensor": x, "BTensor": y})
    np.testing.assert_allclose(got, [[6, 10, 0.5 * np.expm1(-2)]], rtol=1e-6)
    np.testing.assert_allclose(ref, got, rtol=1e-6)


def test_scale_bias_on_floats() -> None:
    got, ref = unary("ELEMENT_WISE_IDENTITY", "FLOAT32", [-2, 0.5, 3], ScaleBias={"Scale": 2, "Bias": 0.5})
    assert got.tolist() == ref.tolist() == [[-3.5, 1.5, 6.5]]
    got, ref = unary("ELEMENT_WISE_SQRT", "FLOAT16", [1, 7.5], ScaleBias={"Scale": 2, "Bias": 1})
    np.testing.assert_allclose(got.astype(np.float64), [[np.sqrt(3), 4]], rtol=1e-3)


@pytest.mark.parametrize(
    ("op", "dtype", "x", "want"),
    [
        # FLOAT32 x * 2.5 - 0.25, truncated toward zero and saturated to the type, then the operator
        ("ELEMENT_WISE_IDENTITY", "INT8", [100, -100, 127, -128, 3], [127, -128, 127, -128, 7]),
        ("ELEMENT_WISE_ABS", "INT8", [100, -100, 127, -128, 3], [127, 127, 127, 127, 7]),
        ("ELEMENT_WISE_IDENTITY", "INT32", [100, -100, 2**31 - 1, -(2**31), 3], [249, -250, 2**31 - 1, -(2**31), 7]),
        ("ELEMENT_WISE_ABS", "INT32", [100, -100, 2**31 - 1, -(2**31), 3], [249, 250, 2**31 - 1, -(2**31), 7]),
        ("ELEMENT_WISE_IDENTITY", "UINT8", [100, 7, 255, 0, 3], [249, 17, 255, 0, 7]),
    ],
)
def test_scale_bias_on_integers(op: str, dtype: str, x: list[int], want: list[int]) -> None:
    got, ref = unary(op, dtype, x, ScaleBias={"Scale": 2.5, "Bias": -0.25})
    assert got.tolist() == ref.tolist() == [want]


def test_float_specials() -> None:
    x = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan]
    for op in ROWS:
        if "FLOAT32" not in [d.name for d in operator_table.OPERATORS[op].support[0].tensors["OutputTensor"].types]:
            continue
        params = _params(op, dtypes.FLOAT32)[0]
        if op in UNARY:
            got, ref = unary(op, "FLOAT32", x, **params)
        else:
            got, ref = binary(op, "FLOAT32", x, x[::-1])
        np.testing.assert_array_equal(got, ref.astype(np.float32), err_msg=op)


# -- validation -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "change", "path", "text"),
    [
        ("ELEMENT_WISE_ADD", {"BTensor": tensor("FLOAT16", [2, 3])}, "desc.BTensor.DataType", "same DataType"),
        ("ELEMENT_WISE_ADD", {"BTensor": tensor("FLOAT32", [3, 2])}, "desc.BTensor.Sizes", "same Sizes"),
        ("ELEMENT_WISE_EXP", {"InputTensor": tensor("FLOAT32", [2, 3, 1])}, "desc.OutputTensor.Sizes", "DimensionCount"),
        ("ELEMENT_WISE_EXP", {"InputTensor": tensor("INT32", [2, 3])}, "desc.InputTensor.DataType", "must be FLOAT32, FLOAT16"),
        ("ELEMENT_WISE_ABS", {"InputTensor": tensor("UINT8", [2, 3])}, "desc.InputTensor.DataType", "must be"),
        ("ELEMENT_WISE_IDENTITY", {"ScaleBias": {"Scale": 1}}, "desc.ScaleBias.Bias", "required"),
        ("ELEMENT_WISE_IDENTITY", {"ScaleBias": {"Scale": 1, "Bias": 0, "Gain": 2}}, "desc.ScaleBias.Gain", "unknown"),
    ],
)
def test_invalid(op: str, change: dict[str, Any], path: str, text: str) -> None:
    names = [f.name for f in operator_table.OPERATORS[op].fields if f.kind.name in ("INPUT", "OUTPUT")]
    fields = {n: tensor("FLOAT32", [2, 3]) for n in names} | change
    if "DataType" in path and "OutputTensor" in fields and change.get("InputTensor"):
        fields["OutputTensor"] = dict(change["InputTensor"])
    e = refusal(op, fields)
    assert format_path(e.path) == path and text in str(e), str(e)


@pytest.mark.parametrize("dtype", ["INT64", "UINT64", "FLOAT64"])
def test_scale_bias_refused_on_64_bit_types(dtype: str) -> None:
    """DirectML's CreateOperator returns E_INVALIDARG for these (measured); so does dml2onnx."""
    t = tensor(dtype, [4])
    e = refusal("ELEMENT_WISE_IDENTITY", {"InputTensor": t, "OutputTensor": t, "ScaleBias": {"Scale": 2, "Bias": 0}})
    assert format_path(e.path) == "desc.ScaleBias" and dtype in str(e)


# -- properties -----------------------------------------------------------------------------------


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, dict[str, Any], dict[str, np.ndarray]]:
    op = draw(st.sampled_from(sorted(ROWS)))
    schema_op = operator_table.OPERATORS[op]
    dtype = draw(st.sampled_from([d.name for d in schema_op.support[0].tensors["OutputTensor"].types]))
    shape = draw(shapes())
    rng = np.random.default_rng(draw(SEEDS))
    names = [f.name for f in schema_op.fields if f.kind.name == "INPUT"]
    np_type = np.dtype(dtype.lower())
    feeds = {n: element_values(rng, shape, np_type, draw(st.sampled_from([0.5, 3.0, 100.0]))) for n in names}
    fields: dict[str, Any] = {n: tensor(dtype, shape) for n in [*names, "OutputTensor"]}
    fields |= draw(st.sampled_from(_params(op, dtypes.BY_NAME[dtype])))  # CLIP's, CLIP1's, THRESHOLD's bounds
    if any(f.name == "ScaleBias" for f in schema_op.fields) and np_type.itemsize < 8 and draw(st.booleans()):
        fields["ScaleBias"] = {"Scale": draw(st.floats(-4, 4, width=32)), "Bias": draw(st.floats(-4, 4, width=32))}
    return op, fields, feeds


@EPS
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_matches_reference(ep: str, case: tuple[str, dict[str, Any], dict[str, np.ndarray]]) -> None:
    op, fields, feeds = case
    assert_matches_reference(ep, op, fields, feeds)


def test_rows_are_the_adopted_operators() -> None:
    """Every row is a lowered operator whose fields and tables come from the generated table."""
    families = (registry.family("ELEMENT_WISE_IDENTITY"), registry.family("ELEMENT_WISE_ADD1"))
    assert set(ROWS) == {name for f in families for name in f.operators}


def test_scale_bias_keeps_the_sign_of_zero_right() -> None:
    """x * 0 + 0 is +0 even for negative x (found by the property test): 1 / g(x) is +inf."""
    got, ref = unary("ELEMENT_WISE_RECIP", "FLOAT32", [-0.066, 0.32, -0.0], ScaleBias={"Scale": 0.0, "Bias": 0.0})
    assert got.tolist() == ref.tolist() == [[np.inf, np.inf, np.inf]]


@pytest.mark.parametrize(
    ("mode", "want"),
    [
        # what DirectML's API gave for [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -1.2, 1.7, -0.3, 0.49999997]
        ("HALVES_TO_NEAREST_EVEN", [-2.0, -2.0, -0.0, 0.0, 2.0, 2.0, -1.0, 2.0, -0.0, 0.0]),
        ("TOWARD_ZERO", [-2.0, -1.0, -0.0, 0.0, 1.0, 2.0, -1.0, 1.0, -0.0, 0.0]),
        # halves away from zero, as sign(x) * floor(|x| + 0.5) in FLOAT32: 0.49999997 + 0.5 is 1.0
        ("TOWARD_INFINITY", [-3.0, -2.0, -1.0, 1.0, 2.0, 3.0, -1.0, 2.0, -0.0, 1.0]),
    ],
)
def test_round_modes_as_directml(mode: str, want: list[float]) -> None:
    x = [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -1.2, 1.7, -0.3, 0.49999997]
    got, ref = unary("ELEMENT_WISE_ROUND", "FLOAT32", x, RoundingMode=mode)
    assert got.tolist() == ref.tolist() == [want]  # equal as numbers: the sign of a zero is not compared (README)


@pytest.mark.parametrize(
    ("op", "dtype", "bounds", "x", "want"),
    [
        ("ELEMENT_WISE_CLIP1", "UINT8", (0, 1), [0, 1, 2, 255], [0, 1, 1, 1]),  # a Cast to BOOL's clamp
        ("ELEMENT_WISE_CLIP1", "INT8", (-3, 100), [-128, -4, -3, 99, 101, 127], [-3, -3, -3, 99, 100, 100]),
        ("ELEMENT_WISE_CLIP", "INT8", (-2.9, 2.9), [-128, -3, -2, 2, 3, 127], [-2, -2, -2, 2, 2, 2]),  # bounds truncated
        ("ELEMENT_WISE_CLIP", "UINT8", (3.0, 2.0), [0, 2, 3, 255], [3, 3, 3, 3]),  # Min > Max: Min, not one Clip
    ],
)
def test_an_8_bit_clamp_on_the_cuda_target_is_one_clip(op: str, dtype: str, bounds: tuple, x: list[int], want: list[int]) -> None:
    """The `cuda` target clamps INT8/UINT8 with one Clip in the type (the CPU and CUDA EPs take it)
    where Min <= Max; its graph, run on the CPU EP, gives DirectML's values."""
    lo, hi = bounds
    scalars = {"Min": lo, "Max": hi}
    if op == "ELEMENT_WISE_CLIP1":
        key = dtype.title().replace("int", "Int")
        scalars = {"MinMaxDataType": dtype, "Min": {key: lo}, "Max": {key: hi}}
    fields = {"InputTensor": tensor(dtype, [len(x)]), "OutputTensor": tensor(dtype, [len(x)]), **scalars}
    desc = make_desc(op, fields)
    model = lowering.lower(desc, "t", target="cuda")
    ops = [n.op_type for n in model.graph.node]
    assert ops == (["Clip"] if lo <= hi else ["Cast", "Min", "Max", "Cast"]), ops
    feeds = {"InputTensor": np.array(x, dtype.lower())}
    got = runtime.create(model, "t", "cpu").run(feeds)
    np.testing.assert_array_equal(got, np.array(want, dtype.lower()))
    np.testing.assert_array_equal(registry.family(op).reference(desc, feeds), np.array(want, dtype.lower()))
