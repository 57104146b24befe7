"""DML_OPERATOR_QUANTIZE, DEQUANTIZE and DYNAMIC_QUANTIZE_LINEAR (dml2onnx/ops/quantize.py): values
DirectML's own API computed (the QUANTIZE and DEQUANTIZE pages say TBD; DYNAMIC_QUANTIZE_LINEAR's
gives a formula only), each pinned on the CPU EP's graph and the reference, and, where DirectML
under Wine is set up, on DirectML itself; DirectML's refusals beside the validator's; the graphs'
shapes (the blocked view, the Gather expansion past 8 dimensions, the dml target's
DynamicQuantizeLinear); properties over random shapes and blockings. The matrix
(dml2onnx/cases/quantize.py) runs every type pairing on every EP present and through DirectML."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dml2onnx import lowering
from dml2onnx.backends import dmlapi
from dml2onnx.core import dtypes
from dml2onnx.core import tensor as tensor_mod
from dml2onnx.core.desc import parse_operator_desc
from dml2onnx.core.errors import format_path
from dml2onnx.ops import quantize, registry
from strategies import SEEDS, shapes
from support import EPS, assert_matches_reference, make_desc, refusal, run_cli, run_lowered, tensor, write_model

ROOT = Path(__file__).resolve().parents[2]
live = pytest.mark.skipif(dmlapi.missing() is not None, reason="DirectML's API under Wine is not set up (make dml-setup)")
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
Q, DQ, DYN = "QUANTIZE", "DEQUANTIZE", "DYNAMIC_QUANTIZE_LINEAR"


def qfields(op: str, floats: str, ints: str, shape: Any, s_shape: Any, zero_point: bool = False) -> dict[str, Any]:
    x, out = (floats, ints) if op == Q else (ints, floats)
    tensors = [tensor(floats, s_shape)] + ([tensor(ints, s_shape)] if zero_point else [])
    return {
        "InputTensor": tensor(x, shape),
        "QuantizationType": "SCALE_ZERO_POINT" if zero_point else "SCALE",
        "QuantizationTensorCount": len(tensors),
        "QuantizationTensors": tensors,
        "OutputTensor": tensor(out, shape),
    }


def dfields(floats: str, ints: str, shape: Any) -> dict[str, Any]:
    one = [1] * len(shape)
    return {
        "InputTensor": tensor(floats, shape),
        "OutputTensor": tensor(ints, shape),
        "OutputScaleTensor": tensor("FLOAT32", one),
        "OutputZeroPointTensor": tensor(ints, one),
    }


def feeds(x: Any, scale: Any, zero: Any = None) -> dict[str, np.ndarray]:
    return {"InputTensor": x, "QuantizationTensors[0]": scale} | ({} if zero is None else {"QuantizationTensors[1]": zero})


def every_engine(op: str, fields: dict[str, Any], inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The CPU EP's graph, checked equal (bit for bit) to the reference and, where set up, to
    DirectML's own API; every output by field."""
    desc = make_desc(op, fields)
    want = registry.reference_outputs(desc, inputs)
    got = lowering.by_field(desc, run_all(desc, inputs))
    engines = {"cpu": got} | ({"directml": dmlapi.execute(desc, inputs).outputs} if dmlapi.missing() is None else {})
    for engine, outputs in engines.items():
        for field, value in want.items():
            np.testing.assert_array_equal(outputs[field], value, err_msg=f"{engine} {field}", strict=True)
    return want


def run_all(desc: Any, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    from dml2onnx.backends import runtime

    return runtime.create(lowering.lower(desc, "test"), "test", "cpu").run_all(inputs)


# -- values DirectML computed ----------------------------------------------------------------------


def test_quantize_rounds_halves_to_even_and_saturates() -> None:
    x = np.array([-3.5, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 1000, -1000, np.nan, np.inf], np.float32)
    ones, threes = np.ones(12, np.float32), np.full(12, 3, np.int8)
    got = every_engine(Q, qfields(Q, "FLOAT32", "INT8", [12], [12], True), feeds(x, ones, threes))["OutputTensor"]
    # NaN gives -128 whatever the zero point (ELEMENT_WISE_QUANTIZE_LINEAR gives 0)
    assert got.tolist() == [-1, 1, 1, 3, 3, 5, 5, 7, 127, -128, -128, 127]


def test_quantize_odd_scales() -> None:
    """x / 0 saturates by the sign of x, 0 / 0 and a NaN scale give the type's minimum, a negative
    scale divides, -0 rounds to 0."""
    s = np.array([1, 0, -1, np.nan, 2, 0, -2, 0.5, 0.25, 0, 1, 1], np.float32)
    x = np.array([3, 3, 3, 3, 3, -3, -3, 0.125, 0.125, 0, np.nan, -0.0], np.float32)
    z = np.full(12, 3, np.int8)
    got = every_engine(Q, qfields(Q, "FLOAT32", "INT8", [12], [12], True), feeds(x, s, z))["OutputTensor"]
    assert got.tolist() == [6, 127, 0, -128, 5, -128, 5, 3, 3, -128, -128, 3]
    got = every_engine(Q, qfields(Q, "FLOAT32", "UINT8", [12], [12], True), feeds(x, s, z.astype(np.uint8)))["OutputTensor"]
    assert got.tolist() == [6, 255, 0, 0, 5, 0, 5, 3, 3, 0, 0, 3]


def test_scale_alone_implies_zero_point_128_for_uint8() -> None:
    x = np.array([-3.5, -0.5, 0.5, 2.5, 1000, -1000], np.float32)
    one = np.ones(1, np.float32)
    got = every_engine(Q, qfields(Q, "FLOAT32", "UINT8", [6], [1]), feeds(x, one))["OutputTensor"]
    assert got.tolist() == [124, 128, 128, 130, 255, 0]
    got = every_engine(Q, qfields(Q, "FLOAT32", "INT8", [6], [1]), feeds(x, one))["OutputTensor"]
    assert got.tolist() == [-4, 0, 0, 2, 127, -128]
    codes = np.array([0, 1, 127, 128, 129, 255], np.uint8)
    got = every_engine(DQ, qfields(DQ, "FLOAT32", "UINT8", [6], [1]), feeds(codes, one))["OutputTensor"]
    assert got.tolist() == [-128, -127, -1, 0, 1, 127]


def test_quantize_divides_truly() -> None:
    """round(x / scale), not round(x * (1 / scale)): pairs where the two differ."""
    rng = np.random.default_rng(3)
    xs, ss = [], []
    while len(xs) < 12:
        s = np.float32(rng.uniform(0.01, 3))
        x = np.float32((rng.integers(-100, 100) + 0.5) * s)
        for v in (x, np.nextafter(x, np.float32(np.inf)), np.nextafter(x, np.float32(-np.inf))):
            if np.rint(v / s) != np.rint(v * (np.float32(1) / s)):
                xs.append(v)
                ss.append(s)
    x, s = np.array(xs, np.float32), np.array(ss, np.float32)
    got = every_engine(Q, qfields(Q, "FLOAT32", "INT8", [12], [12]), feeds(x, s))["OutputTensor"]
    assert got.tolist() == np.rint(x / s).astype(np.int8).tolist()


def test_float16_quantize_divides_in_float32() -> None:
    x = np.array([6.0, 5.0, 2.5], np.float16)
    s = np.array([1.0009765625, 0.3333, 2.0], np.float16)
    got = every_engine(Q, qfields(Q, "FLOAT16", "INT8", [3], [3]), feeds(x, s))["OutputTensor"]
    assert got.tolist() == np.rint(x.astype(np.float32) / s.astype(np.float32)).astype(np.int8).tolist()


def test_blocked_scales() -> None:
    """A [2, 2] scale on a [2, 8] input: blocks of 4 along the last axis (and [1, 2], [2, 4]: the
    blocks repeat over the rows, blocks of 2)."""
    x = np.arange(16, dtype=np.float32).reshape(2, 8) * 4
    s = np.array([[1, 2], [3, 4]], np.float32)
    got = every_engine(Q, qfields(Q, "FLOAT32", "INT8", [2, 8], [2, 2]), feeds(x, s))["OutputTensor"]
    assert got.tolist() == [[0, 4, 8, 12, 8, 10, 12, 14], [11, 12, 13, 15, 12, 13, 14, 15]]
    got = every_engine(
        Q, qfields(Q, "FLOAT32", "INT8", [2, 8], [2, 4]), feeds(x, np.arange(1, 9, dtype=np.float32).reshape(2, 4))
    )
    assert got["OutputTensor"].tolist() == [[0, 4, 4, 6, 5, 7, 6, 7], [6, 7, 7, 7, 7, 7, 7, 8]]
    codes = np.array([-128, -127, -1, 0, 1, 2, 3, 127], np.int8).reshape(2, 4)
    z = np.array([[0, 1], [2, 3]], np.int8)
    got = every_engine(DQ, qfields(DQ, "FLOAT32", "INT8", [2, 4], [2, 2], True), feeds(codes, s, z))["OutputTensor"]
    assert got.tolist() == [[-128, -127, -4, -2], [-3, 0, 0, 496]]


def test_dequantize_keeps_odd_values() -> None:
    codes = np.array([-128, -127, -1, 0, 1, 2, 3, 127], np.int8)
    s = np.array([np.nan, np.inf, -np.inf, 0, -0.0, 3e38, 1e-45, -2], np.float32)
    got = every_engine(DQ, qfields(DQ, "FLOAT32", "INT8", [8], [8]), feeds(codes, s))["OutputTensor"]
    assert np.isnan(got[0]) and got[1:].tolist() == [-np.inf, np.inf, 0, -0.0, np.inf, 3 * np.float32(1e-45), -254]
    assert np.signbit(got[4])


@live
def test_float16_dequantize_under_wine_truncates() -> None:
    """(3 - -3) * 1.0009765625 = 6.005859375 lies halfway between two FLOAT16 values: the graphs
    round to even (6.0078125), DirectML under Wine/vkd3d/lavapipe toward zero (6.00390625), as for
    ELEMENT_WISE_DEQUANTIZE_LINEAR (tests/dml_findings.py): the Vulkan stack's conversion."""
    fields = qfields(DQ, "FLOAT16", "INT8", [2], [2], True)
    inputs = feeds(np.array([3, 5], np.int8), np.array([1.0009765625, 0.3333], np.float16), np.array([-3, 2], np.int8))
    desc = make_desc(DQ, fields)
    assert run_lowered(desc, inputs).tolist() == [6.0078125, 1.0]
    assert dmlapi.execute(desc, inputs).output.tolist() == [6.00390625, 0.99951171875]


def test_invalid_model_exits_2(tmp_path: Path) -> None:
    model = json.loads((ROOT / "models" / "quantize.json").read_text().split("\n", 5)[-1])
    model["dispatchables"]["quantize_blocked"]["desc"]["QuantizationTensors"][0]["Sizes"] = [2, 3]
    status, out, err = run_cli("run", write_model(tmp_path, model))
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and "dispatchables.quantize_blocked.desc.QuantizationTensors[0].Sizes[1]" in err


@pytest.mark.parametrize(
    ("ints", "x", "output", "scale", "zero_point"),
    [
        ("UINT8", [0, 2, -1, 2.5, 3.5], [57, 170, 0, 199, 255], 4.5, 57),  # the rounded zero point is added
        ("UINT8", [1, 2, 3, 4], [64, 127, 191, 255], 4, 0),  # InputMin is at most 0
        ("UINT8", [-4, -2, -1], [0, 128, 191], 4, 255),  # InputMax at least 0
        ("UINT8", [2, 2, 2], [255, 255, 255], 2, 0),
        ("UINT8", [0, 0, 0], [0, 0, 0], 0, 0),  # 0 / 0: Min
        ("INT8", [0, 0, 0], [-128, -128, -128], 0, -128),
        ("UINT8", [1, np.nan, 2], [127, 0, 255], 2, 0),  # NaN is skipped, and gives Min
        ("INT8", [1, np.nan, 2], [-1, -128, 127], 2, -128),
        ("UINT8", [1, np.inf, -2], [0, 0, 0], np.inf, 0),
        ("INT8", [-np.inf, np.inf], [-128, -128], np.inf, -128),  # Min - (-inf * 0): NaN
        ("INT8", [-3, 1000, 2.5], [-128, 127, -126], 1003, -127),
    ],
)
def test_dynamic_quantize_linear(ints: str, x: list[float], output: list[int], scale: float, zero_point: int) -> None:
    x32 = np.array(x, np.float32)
    got = every_engine(DYN, dfields("FLOAT32", ints, [len(x)]), {"InputTensor": x32})
    assert got["OutputTensor"].tolist() == output
    assert got["OutputZeroPointTensor"].tolist() == [zero_point]
    assert got["OutputScaleTensor"][0] == np.float32(scale) * quantize.LEVELS_RECIPROCAL


def test_dynamic_quantize_multiplies_by_reciprocals() -> None:
    """OutputScale = (InputMax - InputMin) * (1 / 255), the zero point Min - InputMin * (1 / scale)
    and the output round(x * (1 / scale)): inputs where true divisions would round otherwise
    (found by search; DirectML computed each this way)."""
    rng = np.random.default_rng(11)
    r = quantize.LEVELS_RECIPROCAL
    cases = []
    while len(cases) < 6:
        lo, hi = np.float32(-rng.uniform(0.01, 100)), np.float32(rng.uniform(0.01, 100))
        s = (hi - lo) * r
        if np.rint(-lo / s) != np.rint(-lo * (np.float32(1) / s)) or s != (hi - lo) / np.float32(255):
            cases.append(np.array([lo, hi, 0, 1], np.float32))
    for x in cases:
        want = every_engine(DYN, dfields("FLOAT32", "UINT8", [4]), {"InputTensor": x})
        assert want["OutputScaleTensor"][0] == (x[1] - x[0]) * r


# -- DirectML's refusals and the validator's -------------------------------------------------------

REFUSED = [
    ({"QuantizationType": "NONE"}, "desc.QuantizationType", "must be SCALE or SCALE_ZERO_POINT"),
    ({"QuantizationType": "SCALE_ZERO_POINT"}, "desc.QuantizationTensorCount", "must be 2 for SCALE_ZERO_POINT"),
    ({"QuantizationTensors": [tensor("FLOAT16", [2, 2])]}, "desc.QuantizationTensors[0].DataType", "same DataType"),
    ({"QuantizationTensors": [tensor("FLOAT32", [2, 3])]}, "desc.QuantizationTensors[0].Sizes[1]", "must divide"),
    ({"QuantizationTensors": [tensor("FLOAT32", [4, 8])]}, "desc.QuantizationTensors[0].Sizes[0]", "must divide"),
    ({"QuantizationTensors": [tensor("FLOAT32", [8])]}, "desc.QuantizationTensors[0].Sizes", "same DimensionCount"),
    ({"OutputTensor": tensor("INT8", [2, 4])}, "desc.OutputTensor.Sizes", "same Sizes"),
    ({"OutputTensor": tensor("INT8", [16])}, "desc.OutputTensor.Sizes", "same DimensionCount"),
]
REFUSED_ZERO_POINT = [
    ([tensor("FLOAT32", [2, 4]), tensor("INT8", [2, 2])], "desc.QuantizationTensors[1].Sizes", "same Sizes"),
    ([tensor("FLOAT32", [2, 2]), tensor("UINT8", [2, 2])], "desc.QuantizationTensors[1].DataType", "same DataType"),
    ([tensor("FLOAT32", [2, 2]), tensor("FLOAT32", [2, 2])], "desc.QuantizationTensors[1].DataType", "same DataType"),
]


def _refused_by_directml(op: str, fields: dict[str, Any]) -> None:
    desc = parse_operator_desc(op, fields, ("desc",), ("type",))
    inputs = {n: np.zeros(desc.tensor(n).sizes, desc.tensor(n).data_type.numpy) for n in desc.inputs}
    with pytest.raises(dmlapi.DmlApiError) as e:
        dmlapi.execute(desc, inputs)
    assert e.value.hresult == 0x80070057  # E_INVALIDARG


def _assert_refused(op: str, fields: dict[str, Any], path: str, message: str = "") -> None:
    """dml2onnx refuses the desc at `path` with `message` in its rule, and DirectML's API refuses it
    too (where it is set up)."""
    e = refusal(op, fields)
    assert format_path(e.path) == path, str(e)
    assert message in e.rule
    if dmlapi.missing() is None:
        _refused_by_directml(op, fields)


@pytest.mark.parametrize(("change", "path", "message"), REFUSED)
def test_refusals(change: dict[str, Any], path: str, message: str) -> None:
    fields = qfields(Q, "FLOAT32", "INT8", [2, 8], [2, 2]) | change
    _assert_refused(Q, fields, path, message)


@pytest.mark.parametrize(("tensors", "path", "message"), REFUSED_ZERO_POINT)
def test_zero_point_refusals(tensors: list[dict[str, Any]], path: str, message: str) -> None:
    fields = qfields(Q, "FLOAT32", "INT8", [2, 8], [2, 2], True) | {"QuantizationTensors": tensors}
    _assert_refused(Q, fields, path, message)


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"QuantizationTensors": [tensor("FLOAT32", [2, 2])]}, "desc.QuantizationTensors[0].DataType"),  # the output's type
        ({"QuantizationTensors": [tensor("FLOAT16", [2, 2]), tensor("UINT8", [2, 2])]}, "desc.QuantizationTensors[1].DataType"),
    ],
)
def test_dequantize_types(change: dict[str, Any], path: str) -> None:
    fields = qfields(DQ, "FLOAT16", "INT8", [2, 8], [2, 2]) | change
    if len(change["QuantizationTensors"]) == 2:
        fields |= {"QuantizationType": "SCALE_ZERO_POINT", "QuantizationTensorCount": 2}
    _assert_refused(DQ, fields, path)


@pytest.mark.parametrize(
    ("change", "path", "message"),
    [
        ({"OutputScaleTensor": tensor("FLOAT32", [2])}, "desc.OutputScaleTensor.Sizes[0]", "holds one element"),
        ({"OutputZeroPointTensor": tensor("INT8", [1])}, "desc.OutputZeroPointTensor.DataType", "same DataType"),
        ({"OutputScaleTensor": tensor("FLOAT32", [1, 1])}, "desc.OutputScaleTensor.Sizes", "same DimensionCount"),
        ({"OutputTensor": tensor("UINT8", [2])}, "desc.OutputTensor.Sizes", "same Sizes"),
    ],
)
def test_dynamic_refusals(change: dict[str, Any], path: str, message: str) -> None:
    fields = dfields("FLOAT32", "UINT8", [4]) | change
    _assert_refused(DYN, fields, path, message)


# -- INT4 and UINT4 ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ints", "zero_point", "output"),
    [
        ("INT4", None, [-8, -8, -1, 0, 0, 1, 2, 7, 7, -8]),  # SCALE alone: 0
        ("UINT4", None, [0, 0, 7, 8, 8, 9, 10, 15, 15, 0]),  # SCALE alone: 8, the middle (UINT8's 128)
        ("INT4", 3, [-8, -6, 2, 3, 3, 4, 5, 7, 7, -8]),  # NaN gives the minimum whatever the zero point
        ("UINT4", 3, [0, 0, 2, 3, 3, 4, 5, 11, 15, 0]),
    ],
)
def test_four_bit_quantize_saturates(ints: str, zero_point: int | None, output: list[int]) -> None:
    x = np.array([-100, -9, -1, -0.5, 0.5, 1, 2.5, 7.5, 20, np.nan], np.float32)
    zero = None if zero_point is None else np.array([zero_point], np.int8 if ints == "INT4" else np.uint8)
    fields = qfields(Q, "FLOAT32", ints, [10], [1], zero_point is not None)
    got = every_engine(Q, fields, feeds(x, np.ones(1, np.float32), zero))["OutputTensor"]
    assert got.dtype == (np.int8 if ints == "INT4" else np.uint8) and got.tolist() == output


@pytest.mark.parametrize(("ints", "codes"), [("INT4", np.arange(-8, 8, dtype=np.int8)), ("UINT4", np.arange(16, dtype=np.uint8))])
def test_four_bit_dequantize(ints: str, codes: np.ndarray) -> None:
    """Every code; SCALE alone implies 0 (INT4) and 8 (UINT4); blocked scales with 4-bit zero points."""
    got = every_engine(DQ, qfields(DQ, "FLOAT32", ints, [16], [1]), feeds(codes, np.full(1, 0.5, np.float32)))
    assert got["OutputTensor"].tolist() == [v / 2 for v in range(-8, 8)]
    z = np.array([[0, 1], [2, 3]], codes.dtype)
    s = np.array([[1, 2], [3, 4]], np.float16)
    got = every_engine(DQ, qfields(DQ, "FLOAT16", ints, [2, 8], [2, 2], True), feeds(codes.reshape(2, 8), s, z))
    want = (codes.reshape(2, 8).astype(np.float32) - quantize.blocks(z, (2, 8))) * quantize.blocks(s, (2, 8))
    assert got["OutputTensor"].tolist() == want.tolist()


def test_four_bit_sizes_and_packing() -> None:
    """Two elements a byte, element 2k in the low nibble; DMLCalcBufferTensorSize's minimum is the
    bytes up to the furthest element's nibble, rounded up to 4; strides count elements (nibbles)."""
    t = tensor_mod.TensorDesc(dtypes.INT4, (9,))
    assert (t.min_size_in_bytes, t.buffer_elements) == (8, 16)
    assert tensor_mod.TensorDesc(dtypes.UINT4, (8,)).min_size_in_bytes == 4
    assert tensor_mod.TensorDesc(dtypes.INT4, (3,), (5,)).min_size_in_bytes == 8  # nibble 10: byte 5
    assert tensor_mod.pack(np.array([-4, -2, -2, 0, 0], np.int8), dtypes.INT4) == bytes([0xEC, 0x0E, 0x00])
    assert tensor_mod.pack(np.array([1], np.uint8), dtypes.UINT4, bytes([0xCD])) == bytes([0xC1])  # the odd nibble kept
    assert tensor_mod.unpack(bytes([0xEC, 0x0E, 0x8F]), 6, dtypes.INT4).tolist() == [-4, -2, -2, 0, -1, -8]
    assert tensor_mod.unpack(bytes([0xEC, 0x0E, 0x8F]), 5, dtypes.UINT4).tolist() == [12, 14, 14, 0, 15]
    buf = bytearray([0xCD] * 8)
    tensor_mod.write(buf, 0, tensor_mod.TensorDesc(dtypes.INT4, (3,), (5,)), np.array([1, 2, 3], np.int8))
    assert buf.hex() == "c1cd2dcdcdc3cdcd"  # what DirectML wrote (test_four_bit_buffers_as_directml_writes_them)
    assert tensor_mod.read(buf, 0, tensor_mod.TensorDesc(dtypes.INT4, (3,), (5,))).tolist() == [1, 2, 3]


@live
def test_four_bit_buffers_as_directml_writes_them() -> None:
    """DirectML's raw output bytes (the buffer filled with 0xCD first): element 2k in the low
    nibble, the unused high nibble of an odd count's last byte left as it was, strides in elements;
    a TotalTensorSizeInBytes below the rounded-up bytes is refused."""
    fields = qfields(Q, "FLOAT32", "INT4", [5], [1])
    x = np.array([-3.5, -2.5, -1.5, -0.5, 0.5], np.float32)
    assert dmlapi.execute(make_desc(Q, fields), feeds(x, np.ones(1, np.float32))).raw["OutputTensor"].hex() == "ec0ec0cd"
    fields = qfields(Q, "FLOAT32", "INT4", [3], [1]) | {"OutputTensor": tensor("INT4", [3]) | {"Strides": [5]}}
    got = dmlapi.execute(make_desc(Q, fields), feeds(np.array([1, 2, 3], np.float32), np.ones(1, np.float32)))
    assert got.raw["OutputTensor"].hex() == "c1cd2dcdcdc3cdcd"
    desc = make_desc(Q, qfields(Q, "FLOAT32", "INT4", [9], [1]))
    desc.values["OutputTensor"] = dataclasses.replace(desc.tensor("OutputTensor"), total_size_in_bytes=4)
    with pytest.raises(dmlapi.DmlApiError):
        dmlapi.execute(desc, feeds(np.zeros(9, np.float32), np.ones(1, np.float32)))
    fields = qfields(Q, "FLOAT32", "INT4", [9], [1]) | {"OutputTensor": tensor("INT4", [9]) | {"TotalTensorSizeInBytes": 4}}
    assert "needs 8" in str(refusal(Q, fields))


def test_four_bit_zero_point_type() -> None:
    fields = qfields(Q, "FLOAT32", "INT4", [2, 8], [2, 2], True)
    fields["QuantizationTensors"][1] = tensor("INT8", [2, 2])
    _assert_refused(Q, fields, "desc.QuantizationTensors[1].DataType")


def test_four_bit_resources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """INT4/UINT4 buffers (dml2onnx's: packed, values one per element in lists, constants, sequences
    wrapping in 4 bits, print and .npy; raw files packed), and a UINT8 buffer of packed bytes bound to
    an INT4 tensor, as DxDispatch would need it."""
    monkeypatch.chdir(tmp_path)
    one = {"initialValuesDataType": "FLOAT32", "initialValues": [1]}
    model = {
        "resources": {
            "codes": {"initialValuesDataType": "INT4", "initialValues": {"valueCount": 5, "valueStart": 5, "valueDelta": 1}},
            "bytes": {"initialValuesDataType": "UINT8", "initialValues": [0x21, 0xF3]},  # 1, 2, 3, -1
            "one": one,
            "a": {"initialValuesDataType": "FLOAT32", "initialValues": {"valueCount": 5, "value": 0}},
            "b": {"initialValuesDataType": "FLOAT32", "initialValues": {"valueCount": 4, "value": 0}},
            "q": {"initialValuesDataType": "UINT4", "initialValues": [15, 15, 15]},
            "npy": {"initialValuesDataType": "INT4", "initialValues": {"sourcePath": "codes.npy"}},  # int8, packed
        },
        "dispatchables": {
            "dq5": {"type": "DML_OPERATOR_DEQUANTIZE", "desc": qfields(DQ, "FLOAT32", "INT4", [5], [1])},
            "dq4": {"type": "DML_OPERATOR_DEQUANTIZE", "desc": qfields(DQ, "FLOAT32", "INT4", [4], [1])},
            "q3": {"type": "DML_OPERATOR_QUANTIZE", "desc": qfields(Q, "FLOAT32", "UINT4", [1], [1])},
        },
        "commands": [
            {
                "type": "dispatch",
                "dispatchable": "dq5",
                "bindings": {"InputTensor": "codes", "QuantizationTensors": ["one"], "OutputTensor": "a"},
            },
            {
                "type": "dispatch",
                "dispatchable": "dq4",
                "bindings": {"InputTensor": "bytes", "QuantizationTensors": ["one"], "OutputTensor": "b"},
            },
            {
                "type": "dispatch",
                "dispatchable": "q3",
                "bindings": {
                    "InputTensor": "one",
                    "QuantizationTensors": ["one"],
                    "OutputTensor": {"name": "q", "elementOffset": 0, "elementSizeInBytes": 1},
                },
            },
            {"type": "print", "resource": "codes"},
            {"type": "print", "resource": "a"},
            {"type": "print", "resource": "b"},
            {"type": "print", "resource": "q"},
            {"type": "print", "resource": "npy"},
            {"type": "writeFile", "resource": "q", "targetPath": "q.npy"},
            {"type": "writeFile", "resource": "q", "targetPath": "q.bin"},
        ],
    }
    np.save(tmp_path / "codes.npy", np.array([-8, 7, 3], np.int8))
    status, out, err = run_cli("run", write_model(tmp_path, model))
    assert status == 0, err
    assert out.splitlines() == [
        "Resource 'codes': 5, 6, 7, -8, -7",  # the values given (3 bytes), wrapping in 4 bits
        "Resource 'a': 5, 6, 7, -8, -7",
        "Resource 'b': 1, 2, 3, -1",
        "Resource 'q': 9, 15, 15",  # 1 / 1 + 8; the other nibbles kept
        "Resource 'npy': -8, 7, 3, 0",  # a file's: every nibble of its bytes
    ]
    assert np.load(tmp_path / "q.npy").tolist() == [9, 15, 15, 0, 0, 0, 0, 0] and np.load(tmp_path / "q.npy").dtype == np.uint8
    assert (tmp_path / "q.bin").read_bytes() == bytes([0xF9, 0x0F, 0, 0])


@pytest.mark.parametrize(("data_type", "values"), [("INT4", [7, 8]), ("UINT4", [-1]), ("UINT4", [16])])
def test_four_bit_values_out_of_range(tmp_path: Path, data_type: str, values: list[int]) -> None:
    model = {
        "resources": {"r": {"initialValuesDataType": data_type, "initialValues": values}},
        "dispatchables": {},
        "commands": [],
    }
    status, _, err = run_cli("run", write_model(tmp_path, model))
    assert status == 2 and err.count("\n") == 1
    assert f"resources.r.initialValues[{len(values) - 1}]" in err and data_type in err


@pytest.mark.parametrize("engine", ["cpu", pytest.param("directml", marks=live)])  # the DirectML EP: make test-dml
def test_four_bit_model_runs(engine: str) -> None:
    status, out, err = run_cli("run", str(ROOT / "models" / "quantize_4bit.json"), "--ep", engine)
    assert status == 0, err
    assert out.splitlines() == [
        "Resource 'q_int4': -8, -2, -2, 0, 0, 2, 7, 0",
        "Resource 'q_uint4': 0, 6, 6, 8, 8, 10, 15, 0",
        "Resource 'dq': -8, -2, -2, 0, 0, 2, 7",
        "Resource 'blocked': -8, -7, -4, -2, 9, 12, 0, 16",
    ]


def test_feature_level() -> None:
    e = refusal(Q, qfields(Q, "FLOAT32", "INT8", [4], [1]), level="6_2")
    assert "6_3" in str(e)


# -- the graphs ---------------------------------------------------------------------------------


def _ops(op: str, fields: dict[str, Any], target: str = "portable") -> list[str]:
    return [n.op_type for n in lowering.lower(make_desc(op, fields), "t", target=target).graph.node]


def test_blocked_view_broadcasts_the_scale() -> None:
    nodes = _ops(Q, qfields(Q, "FLOAT32", "INT8", [3, 8, 6], [3, 2, 1], True))
    assert "Gather" not in nodes and "Expand" not in nodes and nodes.count("Reshape") == 4  # x, scale, zero point, output
    assert quantize._view((3, 8, 6), (3, 2, 1)) == ([6, 24], [6, 1])  # axes alike merged
    assert quantize._view((4,) * 5 + (2,) * 3, (2,) * 5 + (2,) * 3) is None  # 11 dimensions
    wide = _ops(DQ, qfields(DQ, "FLOAT32", "INT8", [4] * 5 + [2] * 3, [2] * 5 + [2] * 3, True))
    assert wide.count("Gather") == 10  # five axes, the scale and the zero point


def test_dml_target_emits_dynamic_quantize_linear() -> None:
    assert _ops(DYN, dfields("FLOAT32", "UINT8", [2, 3]), "dml") == ["Reshape", "DynamicQuantizeLinear"] + ["Reshape"] * 3
    assert "DynamicQuantizeLinear" not in _ops(DYN, dfields("FLOAT32", "UINT8", [2, 3]))
    assert "DynamicQuantizeLinear" not in _ops(DYN, dfields("FLOAT32", "INT8", [2, 3]), "dml")
    assert "DynamicQuantizeLinear" not in _ops(DYN, dfields("FLOAT16", "UINT8", [2, 3]), "dml")


@pytest.mark.parametrize("engine", ["cpu", pytest.param("directml", marks=live), pytest.param("dml", marks=live)])
def test_model_runs(engine: str) -> None:
    status, out, err = run_cli("run", str(ROOT / "models" / "quantize.json"), "--ep", engine)
    assert status == 0, err
    for line in (
        "Resource 'q': 0, 4, 8, 12, 8, 10, 12, 14, 11, 12, 13, 15, 12, 13, 14, 15\n",
        "Resource 'q_uint8': 124, 128, 128, 130\n",
        "Resource 'dq': -128, -127, -4, -2, -3, 0, 0, 496\n",
        "Resource 'page_output': 57, 170, 0, 199, 255\n",
        "Resource 'page_zero_point': 57\n",
    ):
        assert line in out


# -- properties ---------------------------------------------------------------------------------


def _blocks(draw: Any, shape: tuple[int, ...]) -> list[int]:
    """A scale size per axis: 1, the input's, or a proper divisor of it."""
    return [draw(st.sampled_from([d for d in range(1, n + 1) if n % d == 0])) for n in shape]


@EPS
@SETTINGS
@given(
    shape=shapes(),
    op=st.sampled_from([Q, DQ]),
    floats=st.sampled_from(["FLOAT32", "FLOAT16"]),
    ints=st.sampled_from(["INT8", "UINT8", "INT4", "UINT4"]),
    zero_point=st.booleans(),
    data=st.data(),
    seed=SEEDS,
)
def test_matches_reference(
    ep: str, shape: tuple[int, ...], op: str, floats: str, ints: str, zero_point: bool, data: st.DataObject, seed: int
) -> None:
    s_shape = _blocks(data.draw, shape)
    rng = np.random.default_rng(seed)
    fnp, t = np.dtype(floats.lower()), dtypes.BY_NAME[ints]
    lo, hi = t.range  # INT4/UINT4: their own, in int8/uint8
    x = (rng.standard_normal(shape) * 100).astype(fnp) if op == Q else rng.integers(lo, hi + 1, shape).astype(t.numpy)
    scale = rng.choice(np.array([0.5, 0.3, 2, -1, 0.07, 3]), s_shape).astype(fnp)
    zero = rng.integers(lo, hi + 1, s_shape).astype(t.numpy) if zero_point else None
    assert_matches_reference(ep, op, qfields(op, floats, ints, shape, s_shape, zero_point), feeds(x, scale, zero))


@EPS
@SETTINGS
@given(shape=shapes(), floats=st.sampled_from(["FLOAT32", "FLOAT16"]), ints=st.sampled_from(["INT8", "UINT8"]), seed=SEEDS)
def test_dynamic_matches_reference(ep: str, shape: tuple[int, ...], floats: str, ints: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * rng.uniform(0.01, 100) + rng.uniform(-20, 20)).astype(floats.lower())
    assert_matches_reference(ep, DYN, dfields(floats, ints, shape), {"InputTensor": x})


def test_run_lowered_shapes() -> None:
    """The output keeps the desc's type and sizes through the blocked view."""
    desc = make_desc(DQ, qfields(DQ, "FLOAT16", "UINT8", [2, 6, 4], [1, 3, 2], True))
    x = np.arange(48, dtype=np.uint8).reshape(2, 6, 4)
    got = run_lowered(desc, feeds(x, np.full((1, 3, 2), 0.5, np.float16), np.full((1, 3, 2), 8, np.uint8)))
    assert got.dtype == np.float16 and got.shape == (2, 6, 4)
    np.testing.assert_array_equal(got, ((x.astype(np.float32) - 8) * 0.5).astype(np.float16))
