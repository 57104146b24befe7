"""DML_OPERATOR_QUANTIZE, DML_OPERATOR_DEQUANTIZE (feature level 6_3) and
DML_OPERATOR_DYNAMIC_QUANTIZE_LINEAR (4_0).

QUANTIZE and DEQUANTIZE take QuantizationType and QuantizationTensorCount tensors in
QuantizationTensors: SCALE (one tensor: the scale) or SCALE_ZERO_POINT (two: the scale, then the
zero point). Their pages say only that every tensor has InputTensor's DimensionCount; the rest, as
DirectML's own API refused or computed it (tests/ops/test_quantize.py pins each):

- NONE, and a count other than the type's (1 or 2), are refused (E_INVALIDARG); so is an empty
  array (the parser's rule for every tensor array).
- OutputTensor has InputTensor's Sizes. The scale has the floating-point side's DataType
  (QUANTIZE: InputTensor's; DEQUANTIZE: OutputTensor's), the zero point the integer side's
  (QUANTIZE: OutputTensor's; DEQUANTIZE: InputTensor's); the zero point has the scale's Sizes.
- Per-tensor, per-axis and blocked scales are one rule: each of the scale's sizes divides
  InputTensor's, and element i along an axis takes the scale's element i // (input size / scale
  size) there (a scale of sizes [2, 2] on an input of [2, 8] covers blocks of 4 along the last
  axis). Sizes that do not divide, or exceed the input's, are refused. Zero strides repeat
  elements as in any tensor.
- QUANTIZE: clamp(round(x / scale) + zero_point, Min, Max), the input (FLOAT16 widened) divided by
  the scale in FLOAT32 (a true division, not a product with the reciprocal), rounded halves to
  even, then the zero point added; NaN (x NaN, a NaN scale, 0 / 0) gives the type's minimum (-128,
  0) whatever the zero point, x / 0 saturates by the sign of x, a negative scale divides as any
  other. (ELEMENT_WISE_QUANTIZE_LINEAR gives NaN 0 instead: element_wise_quantized.py.)
- DEQUANTIZE: (x - zero_point) * scale in FLOAT32 (the FLOAT16 scale widened; the product of an
  8-bit difference and a FLOAT16 scale is exact in FLOAT32), a FLOAT16 output rounded once at the
  end (DirectML under Wine/vkd3d/lavapipe converts toward zero there, as ELEMENT_WISE_DEQUANTIZE_LINEAR
  does: tests/ops/test_quantize.py pins it; the matrix's FLOAT16 products are exact).
  NaN and infinite scales propagate, subnormal products are kept.
- SCALE alone: the zero point is 0 for the signed types and the middle of the range for the
  unsigned ones, 128 for UINT8 and 8 for UINT4 (both ways: QUANTIZE maps 0.0 to 128 and DEQUANTIZE
  128 to 0.0), not 0.

DYNAMIC_QUANTIZE_LINEAR: OutputTensor has InputTensor's Sizes, OutputZeroPointTensor its DataType,
OutputScaleTensor and OutputZeroPointTensor one element (every size 1), all the same
DimensionCount (DirectML refuses the others). The page's formula, with what it leaves open as
DirectML computed it: InputMin and InputMax are taken over the non-NaN elements and include 0
(min(0, min x), max(0, max x), as ONNX's DynamicQuantizeLinear); the page's divisions are products
with FLOAT32 reciprocals (found by search where the two round apart; every case agreed):
OutputScale = (InputMax - InputMin) * float32(1 / 255), then r = 1 / OutputScale once;
OutputZeroPoint = Min - InputMin * r, rounded halves to even and saturated, NaN (an all-zero input:
0 * inf; infinities of both signs) giving Min; OutputTensor = round(x * r) + OutputZeroPoint (the
rounded zero point, not round(x * r + the unrounded one)), saturated, NaN giving Min. FLOAT16
inputs are widened. (QUANTIZE, above, divides truly.)

Lowering "elementwise" (every EP): the arithmetic above in FLOAT32 with the nodes
element_wise_quantized.py builds (Div, Round, Add, IsNaN/Where, Clip, Cast; Sub, Mul), on a view
where each scale broadcasts: every axis whose scale is blocked (1 < scale size < input size) is
split into (blocks, block size) (Reshape), adjacent axes alike merged, the scale taking 1 on each
block-size axis; beyond 8 dimensions (the CUDA and DirectML EPs' limit) the scale is expanded along
those axes instead (Gather of i // block). DYNAMIC_QUANTIZE_LINEAR adds ReduceMin/ReduceMax over
every axis (NaN replaced by 0 first), Mul by the reciprocals. ONNX's QuantizeLinear/DequantizeLinear
are no candidate: ONNX implies no zero point of 128 for UINT8, blocks along one axis only (opset
21), and the DirectML EP maps them onto ELEMENT_WISE_QUANTIZE_LINEAR / DEQUANTIZE_LINEAR, not these
operators (no ONNX node maps onto QUANTIZE or DEQUANTIZE: the DirectML EP builds DEQUANTIZE only
inside com.microsoft MatMulNBits). On the
`dml` target, DYNAMIC_QUANTIZE_LINEAR with a FLOAT32 input and UINT8 outputs is ONNX's
DynamicQuantizeLinear, which the DirectML EP maps back onto this operator
(DmlOperatorDynamicQuantizeLinear.cpp), on the input flattened (the DirectML EP refuses more than
4 dimensions there: measured) and its scalar scale and zero point reshaped; DML_ONLY, since other
EPs' kernels divide where DirectML multiplies by reciprocals (not checked bit for bit here).

INT4 and UINT4 (the 6_3 tables: QUANTIZE's OutputTensor, DEQUANTIZE's InputTensor, their zero
points) are the same rules in [-8, 7] and [0, 15]: QUANTIZE saturates there (NaN giving -8 or 0),
SCALE alone implies 0 and 8. In the graphs and the reference they are INT8 and UINT8 holding one
value an element (dtypes.INT4/UINT4); DirectML's buffers pack two a byte, element 2k in the low
nibble, strides counting elements, DMLCalcBufferTensorSize's minimum the bytes up to the furthest
element's nibble rounded up to 4; DirectML leaves the unused nibble of an odd count's last byte as
it was (tensor.py packs and unpacks; tests/ops/test_quantize.py pins each, and every 4-bit matrix case
is bit for bit DirectML's). The lowering is the same nodes, clipped at the 4-bit bounds and cast to
INT8/UINT8 (ONNX's own INT4/UINT4 of opset 21 are not used: the graphs' I/O stays one value a byte).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.errors import ModelError
from dml2onnx.core.schema import OperatorSchema
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.graph.targets import DML_NODE_DOC
from dml2onnx.ops import common
from dml2onnx.ops.element_wise_quantized import _dequantized, _dq_reference, _q_reference, _requantized, _saturated_reference
from dml2onnx.ops.family import Family

QUANTIZE, DEQUANTIZE, DYNAMIC = "QUANTIZE", "DEQUANTIZE", "DYNAMIC_QUANTIZE_LINEAR"
CANDIDATES = ("elementwise", "dynamic_quantize_linear")
DML_ONLY = ("dynamic_quantize_linear",)
DML_PREFERENCE = ("dynamic_quantize_linear",)
COUNTS = {"SCALE": 1, "SCALE_ZERO_POINT": 2}
LEVELS_RECIPROCAL = np.float32(1) / np.float32(255)  # DYNAMIC_QUANTIZE_LINEAR's 1 / (Max - Min), measured
MAX_RANK = 8  # the CUDA and DirectML EPs' elementwise broadcasting limit
F32 = dtypes.FLOAT32
SCALE, ZERO_POINT = "QuantizationTensors[0]", "QuantizationTensors[1]"


# -- validation -----------------------------------------------------------------------------------


def validate(desc: OperatorDesc) -> None:
    if desc.schema.name == DYNAMIC:
        _validate_dynamic(desc)
        return
    qtype = desc["QuantizationType"]
    if qtype not in COUNTS:
        raise ModelError(desc.at("QuantizationType"), f"must be SCALE or SCALE_ZERO_POINT, not {qtype}")
    if desc["QuantizationTensorCount"] != COUNTS[qtype]:
        raise ModelError(
            desc.at("QuantizationTensorCount"),
            f"must be {COUNTS[qtype]} for {qtype} (the scale{', then the zero point' if COUNTS[qtype] == 2 else ''}),"
            f" not {desc['QuantizationTensorCount']}",
        )
    common.check_same_sizes(desc, "OutputTensor", "InputTensor")
    floats, ints = ("InputTensor", "OutputTensor") if desc.schema.name == QUANTIZE else ("OutputTensor", "InputTensor")
    common.check_same_type(desc, SCALE, floats)
    x = desc.tensor("InputTensor")
    common.check_same_rank(desc, SCALE, "InputTensor")
    for i, (s, n) in enumerate(zip(desc.tensor(SCALE).sizes, x.sizes, strict=True)):
        if n % s:
            raise ModelError(
                desc.at(SCALE, "Sizes", i),
                f"must divide InputTensor.Sizes[{i}] ({n}): 1 (per tensor), {n} (per element) or a block count, not {s}",
            )
    if qtype == "SCALE_ZERO_POINT":
        common.check_same_type(desc, ZERO_POINT, ints)
        common.check_same_sizes(desc, ZERO_POINT, SCALE)


def _validate_dynamic(desc: OperatorDesc) -> None:
    common.check_same_sizes(desc, "OutputTensor", "InputTensor")
    common.check_same_type(desc, "OutputZeroPointTensor", "OutputTensor")
    for name in ("OutputScaleTensor", "OutputZeroPointTensor"):
        common.check_same_rank(desc, name, "InputTensor")
        for i, s in enumerate(desc.tensor(name).sizes):
            if s != 1:
                raise ModelError(desc.at(name, "Sizes", i), f"must be 1: {name} holds one element, not {s}")


def applies(desc: OperatorDesc, candidate: str, opset: int) -> bool:
    if candidate == "dynamic_quantize_linear":  # ONNX's: FLOAT32 in, UINT8 out
        return (
            desc.schema.name == DYNAMIC
            and desc.tensor("InputTensor").data_type == F32
            and desc.tensor("OutputTensor").data_type == dtypes.UINT8
        )
    return True


# -- the blocked view -----------------------------------------------------------------------------


def _view(x_sizes: tuple[int, ...], s_sizes: tuple[int, ...]) -> tuple[list[int], list[int]] | None:
    """(the input's shape, the scale's) where the scale broadcasts: each blocked axis split into
    (blocks, block size), size-1 dimensions dropped, adjacent dimensions alike merged; None beyond
    MAX_RANK dimensions."""
    dims: list[tuple[int, bool]] = []  # (size, whether the scale varies along it)
    for n, s in zip(x_sizes, s_sizes, strict=True):
        dims += [(s, s > 1), (n // s, False)] if 1 < s < n else [(n, s == n)]
    merged: list[tuple[int, bool]] = []
    for size, varies in dims:
        if size == 1:
            continue
        if merged and merged[-1][1] == varies:
            merged[-1] = (merged[-1][0] * size, varies)
        else:
            merged.append((size, varies))
    merged = merged or [(1, False)]
    if len(merged) > MAX_RANK:
        return None
    return [n for n, _ in merged], [n if v else 1 for n, v in merged]


def _expanded(b: GraphBuilder, p: str, s_sizes: tuple[int, ...], x_sizes: tuple[int, ...], step: str) -> str:
    """A scale or zero point at the input's sizes on its blocked axes (Gather of i // block)."""
    for axis, (s, n) in enumerate(zip(s_sizes, x_sizes, strict=True)):
        if 1 < s < n:
            index = b.i64(list(np.arange(n) // (n // s)), f"{step}_blocks_{axis}")
            p = b.node("Gather", [p, index], f"{step}_expanded_{axis}", f"each of {s} values over a block of {n // s}", axis=axis)
    return p


def _params(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> tuple[str, str, str, list[int]]:
    """(input, scale, zero point, the view's shape), each reshaped to the view; the zero point
    SCALE alone implies (0, or 128 for UINT8) as a constant."""
    x_sizes = desc.tensor("InputTensor").sizes
    s_sizes = desc.tensor(SCALE).sizes
    ints = desc.tensor("OutputTensor" if desc.schema.name == QUANTIZE else "InputTensor").data_type
    params = {"scale": inputs[SCALE]} | ({"zero_point": inputs[ZERO_POINT]} if ZERO_POINT in inputs else {})
    view = _view(x_sizes, s_sizes)
    if view is None:
        params = {n: _expanded(b, p, s_sizes, x_sizes, n) for n, p in params.items()}
        s_sizes = tuple(1 if s == 1 else n for s, n in zip(s_sizes, x_sizes, strict=True))
        view = list(x_sizes), list(s_sizes)
    x_shape, s_shape = view
    x = inputs["InputTensor"]
    if x_shape != list(x_sizes):
        x = b.reshape(x, x_shape, "input_blocked", "the input with each block on an axis of its own")
    if s_shape != list(s_sizes):
        params = {n: b.reshape(p, s_shape, f"{n}_blocked", f"the {n} broadcasting over each block") for n, p in params.items()}
    if "zero_point" not in params:
        implied = implied_zero_point(ints)
        params["zero_point"] = b.const(np.full([1] * len(s_shape), implied, ints.numpy), "implied_zero_point")
    return x, params["scale"], params["zero_point"], x_shape


# -- lowering ---------------------------------------------------------------------------------------


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str | dict[str, str]:
    if desc.schema.name == DYNAMIC:
        return _lower_dynamic(desc, b, inputs)
    x_t, out_t = desc.tensor("InputTensor").data_type, desc.tensor("OutputTensor").data_type
    s_t = desc.tensor(SCALE).data_type
    x, scale, zero, shape = _params(desc, b, inputs)
    if desc.schema.name == QUANTIZE:
        v = x if x_t == F32 else b.cast(x, F32, "input_as_float32", "x in FLOAT32")
        y = _requantized(b, v, scale, zero, [s_t, out_t], out_t, common.float32_range(out_t)[0])
    else:
        y = _dequantized(b, x, scale, zero, [x_t, s_t, x_t], "input")
        if out_t != F32:
            y = b.cast(y, out_t, "to_float16", "the result in FLOAT16, rounded once")
    sizes = list(desc.tensor("OutputTensor").sizes)
    return y if shape == sizes else b.reshape(y, sizes, "unblocked", "the output's sizes")


def _lower_dynamic(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> dict[str, str]:
    x_t, out_t = desc.tensor("InputTensor").data_type, desc.tensor("OutputTensor").data_type
    rank = desc.tensor("InputTensor").rank
    if b.variant == "dynamic_quantize_linear":
        # flat: the DirectML EP takes 1 to 4 dimensions (measured), and the operator reduces over all
        flat = b.reshape(inputs["InputTensor"], [-1], "flat", "the input as one vector")
        y, scale, zero = b.node_outputs("DynamicQuantizeLinear", [flat], "quantized", DML_NODE_DOC, 3)
        one = [1] * rank
        return {
            "OutputTensor": b.reshape(y, list(desc.tensor("OutputTensor").sizes), "output_sizes", "the input's sizes"),
            "OutputScaleTensor": b.reshape(scale, one, "scale_sizes", "OutputScaleTensor's sizes"),
            "OutputZeroPointTensor": b.reshape(zero, one, "zero_point_sizes", "OutputZeroPointTensor's sizes"),
        }
    v = inputs["InputTensor"] if x_t == F32 else b.cast(inputs["InputTensor"], F32, "input_as_float32", "x in FLOAT32")
    zero_f = b.scalar(0.0, F32, "zero")
    clean = b.node("Where", [b.node("IsNaN", [v], "input_nan", "NaN"), zero_f, v], "finite_or_zero", "NaN as 0 (ignored)")
    axes = list(range(rank))
    lo = b.node("Min", [b.reduce("ReduceMin", clean, axes, "min", "min(x)"), zero_f], "input_min", "InputMin = min(0, min(x))")
    hi = b.node("Max", [b.reduce("ReduceMax", clean, axes, "max", "max(x)"), zero_f], "input_max", "InputMax = max(0, max(x))")
    span = b.node("Sub", [hi, lo], "span", "InputMax - InputMin")
    one_255th = b.scalar(LEVELS_RECIPROCAL, F32, "one_255th")
    scale = b.node("Mul", [span, one_255th], "scale", "OutputScale = (InputMax - InputMin) * (1 / 255)")
    inverse = b.node("Div", [b.scalar(1.0, F32, "one"), scale], "inverse", "1 / OutputScale")
    shift = b.node("Mul", [lo, inverse], "min_scaled", "InputMin * (1 / OutputScale)")
    exact = b.node("Sub", [b.scalar(common.float32_range(out_t)[0], F32, "type_min"), shift], "zero_point_exact", "Min - ...")
    zero = _saturated(b, b.node("Round", [exact], "zero_point_rounded", "halves to even"), out_t, "zero_point")
    q = b.node("Round", [b.node("Mul", [v, inverse], "scaled", "x * (1 / OutputScale)")], "rounded", "halves to even")
    shifted = b.node("Add", [q, b.cast(zero, F32, "zero_point_f32", "the zero point")], "shifted", "+ OutputZeroPoint")
    return {"OutputTensor": _saturated(b, shifted, out_t, "output"), "OutputScaleTensor": scale, "OutputZeroPointTensor": zero}


def _saturated(b: GraphBuilder, r: str, out: dtypes.DataType, step: str) -> str:
    """An integral FLOAT32 value saturated to `out`, NaN as the type's minimum, then as `out`."""
    lo, hi = (b.scalar(v, F32, f"{step}_{n}") for v, n in zip(common.float32_range(out), ("min", "max"), strict=True))
    r = b.node("Where", [b.node("IsNaN", [r], f"{step}_nan", "NaN"), lo, r], f"{step}_not_nan", "Min for NaN (DirectML)")
    return b.cast(b.node("Clip", [r, lo, hi], f"{step}_saturated", f"saturated to {out}"), out, step, f"as {out}")


# -- the reference ----------------------------------------------------------------------------------


def implied_zero_point(ints: dtypes.DataType) -> int:
    """SCALE alone: 0 for the signed types, the middle of the range for the unsigned ones (128 for
    UINT8, 8 for UINT4: measured both ways)."""
    lo, hi = ints.range
    return 0 if lo < 0 else (hi + 1) // 2


def blocks(p: np.ndarray, sizes: tuple[int, ...]) -> np.ndarray:
    """A scale or zero point at the input's sizes: each element repeated over its block."""
    for axis, (s, n) in enumerate(zip(p.shape, sizes, strict=True)):
        p = np.repeat(p, n // s, axis=axis)
    return p


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray | dict[str, np.ndarray]:
    if desc.schema.name == DYNAMIC:
        return _dynamic_reference(desc, inputs)
    out = desc.tensor("OutputTensor").data_type
    ints = out if desc.schema.name == QUANTIZE else desc.tensor("InputTensor").data_type
    x = inputs["InputTensor"]
    scale = blocks(inputs[SCALE], x.shape)
    if desc["QuantizationType"] == "SCALE_ZERO_POINT":
        zero = blocks(inputs[ZERO_POINT], x.shape)
    else:
        zero = np.full(x.shape, implied_zero_point(ints), ints.numpy)
    with np.errstate(all="ignore"):
        if desc.schema.name == QUANTIZE:
            lo, hi = out.range
            r = _q_reference(x, scale, zero)
            return np.clip(np.where(np.isnan(r), np.float32(lo), r), lo, hi).astype(out.numpy)
        return _dq_reference(x, scale, zero).astype(out.numpy)


def _dynamic_reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    out = desc.tensor("OutputTensor").data_type.numpy
    info = np.iinfo(out)
    x = inputs["InputTensor"].astype(np.float32)
    finite = np.where(np.isnan(x), np.float32(0), x)
    lo = np.minimum(finite.min(), np.float32(0))
    hi = np.maximum(finite.max(), np.float32(0))
    one = (1,) * x.ndim
    with np.errstate(all="ignore"):
        scale = np.float32(hi - lo) * LEVELS_RECIPROCAL
        inverse = np.float32(1) / scale
        zero = _saturated_reference(np.rint(np.float32(info.min) - lo * inverse), out, float(info.min))
        y = _saturated_reference(np.rint(x * inverse) + zero.astype(np.float32), out, float(info.min))
    return {
        "OutputTensor": y,
        "OutputScaleTensor": np.full(one, scale, np.float32),
        "OutputZeroPointTensor": np.full(one, zero, out),
    }


def examples(op: OperatorSchema) -> list[common.Example]:
    """onnx_ops: every type pairing, per-tensor, blocked and per-element, with and without a zero
    point, and one blocked view past 8 dimensions; DYNAMIC_QUANTIZE_LINEAR: each input and output
    type."""
    sizes, one = [2, 3, 4, 6], [1, 1, 1, 1]
    if op.name == DYNAMIC:
        return [
            {
                "InputTensor": common.example_tensor(t, sizes),
                "OutputTensor": common.example_tensor(o, sizes),
                "OutputScaleTensor": common.example_tensor("FLOAT32", one),
                "OutputZeroPointTensor": common.example_tensor(o, one),
            }
            for t in common.example_types(op, "InputTensor")
            for o in common.example_types(op, "OutputTensor")
        ]
    out: list[common.Example] = []
    floats, ints = ("InputTensor", "OutputTensor") if op.name == QUANTIZE else ("OutputTensor", "InputTensor")
    for f in common.example_types(op, floats):
        for i in common.example_types(op, ints):
            for s_sizes in (one, [1, 3, 2, 3], sizes):
                scale = common.example_tensor(f, s_sizes)
                desc: dict[str, Any] = {floats: common.example_tensor(f, sizes), ints: common.example_tensor(i, sizes)}
                zp = common.example_tensor(i, s_sizes)
                for qtype, tensors in (("SCALE", [scale]), ("SCALE_ZERO_POINT", [scale, zp])):
                    fields = {"QuantizationType": qtype, "QuantizationTensorCount": len(tensors), "QuantizationTensors": tensors}
                    out.append(desc | fields)
    wide, blocks = [4] * 5 + [2] * 3, [2] * 8  # a view past MAX_RANK: the Gather expansion
    f, i = common.example_types(op, floats)[0], common.example_types(op, ints)[0]
    tensors = [common.example_tensor(f, blocks)]
    fields = {"QuantizationType": "SCALE", "QuantizationTensorCount": 1, "QuantizationTensors": tensors}
    return [*out, {floats: common.example_tensor(f, wide), ints: common.example_tensor(i, wide)} | fields]


OPERATOR_FAMILY = Family(
    ("QUANTIZE", "DEQUANTIZE", "DYNAMIC_QUANTIZE_LINEAR"),
    validate,
    lower,
    reference,
    CANDIDATES,
    applies=applies,
    dml_only=DML_ONLY,
    dml_preference=DML_PREFERENCE,
    examples=examples,
)
