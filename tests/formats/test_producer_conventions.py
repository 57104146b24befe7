"""What real producers (ONNX Runtime's DirectML EP) write that the doc pages do not list, settled
through DirectML's API: CLIP1 with MinMaxDataType UNKNOWN, ACTIVATION_SOFTMAX1 fused into GEMM,
and which other fused activations DirectML refuses. The serialized-graph forms of the same (and
BOOL fields written as UINT32) are in test_serialized_graph.py."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest

from dml2onnx import lowering
from dml2onnx.backends import dmlapi
from dml2onnx.core import schema
from dml2onnx.core.desc import parse_operator_desc
from dml2onnx.core.dtypes import BY_NAME
from dml2onnx.graph.builder import DEFAULT_OPSET
from dml2onnx.lowering import tolerances
from dml2onnx.ops import registry
from support import assert_matches_reference, lowered_and_reference, make_desc, refusal, tensor

_why = dmlapi.missing()
live = pytest.mark.skipif(_why is not None, reason=f"DirectML's API under Wine is not set up ({_why}): run `make dml-setup`")


def _union(fmt: str, value: float | int) -> dict[str, list[int]]:
    return {"Bytes": list(struct.pack(fmt, value).ljust(8, b"\0"))}


# (type, input values, Min's bytes, Max's bytes, the result DirectML's API gave)
UNKNOWN_CLIPS = [
    ("UINT8", [0, 1, 2, 5, 255], _union("<B", 0), _union("<B", 1), [0, 1, 1, 1, 1]),
    ("UINT8", [0, 1, 2, 5, 255], _union("<B", 3), {"Bytes": [200, 9, 9, 9, 9, 9, 9, 9]}, [3, 3, 3, 5, 200]),
    ("FLOAT16", [-3, -1, 0.5, 3, 100], _union("<e", -1.0), _union("<e", 1.0), [-1, -1, 0.5, 1, 1]),
    ("FLOAT32", [-3, -1, 0.5, 3, 100], _union("<f", -1.0), _union("<f", 2.0), [-1, -1, 0.5, 2, 2]),
    ("INT32", [-3, 0, 1, 3, 2000000000], _union("<f", 0.0), _union("<f", 1.0), [0, 0, 1, 3, 1065353216]),
    ("INT32", [-3, 0, 1, 3, 2000000000], _union("<i", -1), _union("<i", 2), [-1, 0, 1, 2, 2]),
    ("INT64", [-3, 0, 1, 3, 2**40], _union("<q", -1), _union("<q", 2**35), [-1, 0, 1, 3, 2**35]),
]


def _clip(dtype: str, lo: Any, hi: Any, n: int = 5, op: str = "ELEMENT_WISE_CLIP1") -> tuple[str, dict[str, Any]]:
    t = tensor(dtype, [n])
    fields = {"InputTensor": t, "OutputTensor": t, "MinMaxDataType": "UNKNOWN", "Min": lo, "Max": hi}
    if op == "ELEMENT_WISE_CLIP_GRAD1":
        fields = {"InputTensor": t, "InputGradientTensor": t, "OutputGradientTensor": t} | {
            k: v for k, v in fields.items() if not k.endswith("Tensor")
        }
    return op, fields


@pytest.mark.parametrize(("dtype", "x", "lo", "hi", "want"), UNKNOWN_CLIPS)
def test_clip1_with_an_unknown_type_reads_its_bounds_as_the_tensors_type(
    dtype: str, x: list, lo: Any, hi: Any, want: list
) -> None:
    op, fields = _clip(dtype, lo, hi)
    feeds = {"InputTensor": np.array(x, BY_NAME[dtype].numpy)}
    got, ref = lowered_and_reference("cpu", op, fields, feeds)
    np.testing.assert_array_equal(ref, np.array(want, BY_NAME[dtype].numpy))
    np.testing.assert_array_equal(got, ref)


@live
@pytest.mark.parametrize(("dtype", "x", "lo", "hi", "want"), UNKNOWN_CLIPS)
def test_clip1_with_an_unknown_type_on_directml(dtype: str, x: list, lo: Any, hi: Any, want: list) -> None:
    desc = make_desc(*_clip(dtype, lo, hi))
    got = dmlapi.execute(desc, {"InputTensor": np.array(x, BY_NAME[dtype].numpy)}).output
    np.testing.assert_array_equal(got, np.array(want, BY_NAME[dtype].numpy))


def test_unknown_scalar_unions_are_refused_where_directml_refuses_them() -> None:
    zero = {"Bytes": [0] * 8}
    assert "MinMaxDataType: must match OutputGradientTensor.DataType (FLOAT32), not UNKNOWN" in str(
        refusal(*_clip("FLOAT32", zero, zero, op="ELEMENT_WISE_CLIP_GRAD1"))
    )
    fill = {"OutputTensor": tensor("FLOAT32", [4]), "ValueDataType": "UNKNOWN", "Value": zero}
    assert "ValueDataType: must be OutputTensor's DataType (FLOAT32), not UNKNOWN" in str(refusal("FILL_VALUE_CONSTANT", fill))
    for bad, rule in [
        (7, 'Min: expected {"Bytes": [8 bytes]} (MinMaxDataType UNKNOWN gives the union no type), got an integer'),
        ({"Bytes": [0] * 7}, "Min.Bytes: a DML_SCALAR_UNION has 8 bytes, not 7"),
        ({"Bytes": [0] * 7 + [256]}, "Min.Bytes[7]"),
        ({"Float32": 1.0}, "Min.Float32: unknown field"),
    ]:
        with pytest.raises(Exception) as e:
            make_desc(*_clip("FLOAT32", bad, zero))
        assert rule in str(e.value), (bad, str(e.value))
    typed = {"InputTensor": tensor("FLOAT32", [2]), "OutputTensor": tensor("FLOAT32", [2]), "MinMaxDataType": "FLOAT32"}
    assert "unknown field" in str(refusal("ELEMENT_WISE_CLIP1", typed | {"Min": zero, "Max": 1.0}))


@live
def test_directml_refuses_unknown_in_clip_grad1() -> None:
    zero = {"Bytes": [0] * 8}
    op, fields = _clip("FLOAT32", zero, zero, op="ELEMENT_WISE_CLIP_GRAD1")
    desc = parse_operator_desc(f"DML_OPERATOR_{op}", fields, ("desc",), ("type",))  # not validated
    feeds = {"InputTensor": np.zeros(5, np.float32), "InputGradientTensor": np.zeros(5, np.float32)}
    with pytest.raises(dmlapi.DmlApiError, match="E_INVALIDARG"):
        dmlapi.execute(desc, feeds)


# -- ACTIVATION_SOFTMAX1 fused into GEMM ------------------------------------------------------------


def _gemm(act: dict[str, Any] | None, dtype: str = "FLOAT32", fused: str = "ACTIVATION_SOFTMAX1") -> dict[str, Any]:
    return {
        "ATensor": tensor(dtype, [1, 2, 3, 4]),
        "BTensor": tensor(dtype, [1, 2, 4, 5]),
        "OutputTensor": tensor(dtype, [1, 2, 3, 5]),
        "TransA": "NONE",
        "TransB": "NONE",
        "Alpha": 0.5,
        "Beta": 0.0,
        "FusedActivation": {"Type": fused, "Desc": act or {}},
    }


def _gemm_feeds(dtype: str, seed: int = 5) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    t = BY_NAME[dtype].numpy
    return {"ATensor": rng.uniform(-1, 1, (1, 2, 3, 4)).astype(t), "BTensor": rng.uniform(-1, 1, (1, 2, 4, 5)).astype(t)}


SOFTMAX_AXES = [[3], [2], [1, 3], [0], [0, 1, 2, 3]]


@pytest.mark.parametrize("dtype", ["FLOAT32", "FLOAT16"])
@pytest.mark.parametrize("axes", SOFTMAX_AXES)
def test_gemm_with_a_fused_softmax1_is_a_softmax_of_its_result(axes: list[int], dtype: str) -> None:
    fields = _gemm({"AxisCount": len(axes), "Axes": axes}, dtype)
    feeds = _gemm_feeds(dtype)
    assert_matches_reference("cpu", "GEMM", fields, feeds)
    ref = registry.family("GEMM").reference(make_desc("GEMM", fields), feeds).astype(np.float64)
    logits = 0.5 * (feeds["ATensor"].astype(np.float64) @ feeds["BTensor"])
    e = np.exp(logits - logits.max(axis=tuple(axes), keepdims=True))
    np.testing.assert_allclose(ref, e / e.sum(axis=tuple(axes), keepdims=True), rtol=1e-6 if dtype == "FLOAT32" else 1e-3)


@live
@pytest.mark.parametrize("dtype", ["FLOAT32", "FLOAT16"])
@pytest.mark.parametrize("axes", SOFTMAX_AXES)
def test_gemm_with_a_fused_softmax1_on_directml(axes: list[int], dtype: str) -> None:
    desc = make_desc("GEMM", _gemm({"AxisCount": len(axes), "Axes": axes}, dtype))
    feeds = _gemm_feeds(dtype)
    got = dmlapi.execute(desc, feeds).output
    want = registry.family("GEMM").reference(desc, feeds)
    c = tolerances.compare_outputs(desc, {"OutputTensor": got}, {"OutputTensor": want}, "directml")["OutputTensor"]
    assert c.ok, (c, got, want)


def test_fused_softmax1_axes_follow_the_standalone_rules() -> None:
    assert "axis 4 is out of range [0, 3]" in str(refusal("GEMM", _gemm({"AxisCount": 1, "Axes": [4]})))
    assert "axis 3 appears more than once" in str(refusal("GEMM", _gemm({"AxisCount": 2, "Axes": [3, 3]})))


# Every other pairing tried through DirectML's API (CreateOperator: E_INVALIDARG), and refused here.
REFUSED_FUSIONS = [
    ("GEMM", "ACTIVATION_SOFTMAX", {}),
    ("GEMM", "ACTIVATION_LOG_SOFTMAX1", {"AxisCount": 1, "Axes": [3]}),
    ("GEMM", "ACTIVATION_HARDMAX1", {"AxisCount": 1, "Axes": [3]}),
    ("CONVOLUTION", "ACTIVATION_SOFTMAX1", {"AxisCount": 1, "Axes": [3]}),
    ("ELEMENT_WISE_ADD1", "ACTIVATION_SOFTMAX1", {"AxisCount": 1, "Axes": [3]}),
    ("MEAN_VARIANCE_NORMALIZATION1", "ACTIVATION_SOFTMAX1", {"AxisCount": 1, "Axes": [3]}),
]


def _fused(op: str, activation: str, act: dict[str, Any]) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    t = tensor("FLOAT32", [1, 2, 4, 4])
    fused = {"FusedActivation": {"Type": activation, "Desc": act}}
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 2, 4, 4)).astype(np.float32)
    if op == "GEMM":
        return _gemm(act, fused=activation), _gemm_feeds("FLOAT32")
    if op == "CONVOLUTION":
        conv = {
            "InputTensor": t,
            "FilterTensor": tensor("FLOAT32", [2, 2, 1, 1]),
            "OutputTensor": t,
            "Mode": "CROSS_CORRELATION",
            "Direction": "FORWARD",
            "DimensionCount": 2,
            "Strides": [1, 1],
            "Dilations": [1, 1],
            "StartPadding": [0, 0],
            "EndPadding": [0, 0],
            "OutputPadding": [0, 0],
            "GroupCount": 1,
        }
        return conv | fused, {"InputTensor": x, "FilterTensor": np.ones((2, 2, 1, 1), np.float32)}
    if op == "ELEMENT_WISE_ADD1":
        return {"ATensor": t, "BTensor": t, "OutputTensor": t} | fused, {"ATensor": x, "BTensor": x}
    mvn = {"InputTensor": t, "OutputTensor": t, "AxisCount": 2, "Axes": [2, 3], "NormalizeVariance": True, "Epsilon": 1e-5}
    return mvn | fused, {"InputTensor": x}


@pytest.mark.parametrize(("op", "activation", "act"), REFUSED_FUSIONS)
def test_other_fusions_are_refused(op: str, activation: str, act: dict[str, Any]) -> None:
    fields, _ = _fused(op, activation, act)
    with pytest.raises(Exception) as e:
        make_desc(op, fields)
    assert f"desc.FusedActivation.Type: DML_OPERATOR_{activation} cannot be a fused activation here" in str(e.value)
    if activation == "ACTIVATION_SOFTMAX1":
        assert "ACTIVATION_SOFTMAX1 into GEMM only" in str(e.value)


@live
@pytest.mark.parametrize(("op", "activation", "act"), REFUSED_FUSIONS)
def test_directml_refuses_the_other_fusions(
    op: str, activation: str, act: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    fields, feeds = _fused(op, activation, act)
    monkeypatch.setitem(schema.FUSED_ONLY_INTO, activation.removeprefix("DML_OPERATOR_"), (op,))
    desc = parse_operator_desc(op, fields, ("desc",), ("type",))  # let through, not validated
    with pytest.raises(dmlapi.DmlApiError, match="E_INVALIDARG"):
        dmlapi.execute(desc, feeds)


@pytest.mark.parametrize("target", ["portable", "cuda"])
def test_the_bert_mask_clip_spends_no_wrap_and_no_idle_bound(target: str) -> None:
    """BERT's CLIP1 of UINT8 to [0, 1] (ONNX Runtime's Cast to BOOL): its lower bound is UINT8's
    own minimum, so only the Min binds, and its result is already in UINT8's range (no modulo
    arithmetic to narrow it back): one Min between two Casts, exact for every UINT8 value; on the
    `cuda` target one Clip in UINT8 itself (the CPU and CUDA EPs take it)."""
    desc = make_desc(*_clip("UINT8", _union("<B", 0), _union("<B", 1), n=256))
    model = lowering.lower(desc, "clip", DEFAULT_OPSET, target)
    assert [n.op_type for n in model.graph.node] == (["Clip"] if target == "cuda" else ["Cast", "Min", "Cast"])
    x = np.arange(256, dtype=np.uint8)
    got = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"InputTensor": x})[0]
    np.testing.assert_array_equal(got, np.minimum(x, 1))
