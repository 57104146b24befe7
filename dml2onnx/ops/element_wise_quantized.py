"""The linear quantization operators: DML_OPERATOR_ELEMENT_WISE_QUANTIZE_LINEAR, DEQUANTIZE_LINEAR
and QUANTIZED_LINEAR_ADD, one Row each (element_wise.Row: the page's formula, the ONNX pattern,
the numpy reference, the node the DirectML EP maps back onto the operator). Their tensors do not
share one DataType, so the family checks each page's own rules (QuantizedFamily.validate):

- QUANTIZE/DEQUANTIZE_LINEAR: ScaleTensor and the optional ZeroPointTensor (optional from feature
  level 6_2) have the input's Sizes, broadcast through zero strides as any tensor; QUANTIZE's
  ZeroPointTensor has OutputTensor's type (INT8/UINT8) and its ScaleTensor the input's (FLOAT32
  for an INT32 input); DEQUANTIZE's ZeroPointTensor has the input's type and its ScaleTensor the
  output's (FLOAT32/FLOAT16). DirectML's CreateOperator refuses anything else (measured).
- QUANTIZED_LINEAR_ADD: ATensor, BTensor and OutputTensor have the same Sizes; each scale and
  zero point holds one value, in a tensor of their DimensionCount whose sizes are all 1 (DirectML
  refuses other sizes, zero strides included: measured); each zero point has its tensor's type.

What the pages leave open, as DirectML's own API computed it (README: quantization), bit for bit:
- QUANTIZE_LINEAR: the input (INT32 converted to FLOAT32 first, to nearest even; FLOAT16 widened)
  divided by the scale in FLOAT32 (a true division, not a product with the reciprocal), rounded
  halves to even, then the zero point added, then saturated to INT8/UINT8; NaN gives 0 whatever
  the zero point (0 / 0 and x / NaN too), x / 0 saturates by the sign of x, a negative scale
  divides as any other;
- DEQUANTIZE_LINEAR: (x - zero_point) * scale in FLOAT32, the integers converted to FLOAT32 first
  (INT32/UINT32 to nearest even: x - zero_point neither wraps nor is exact), FLOAT16 outputs
  rounded once at the end (to nearest, overflow to infinity; DirectML under Wine/vkd3d/lavapipe
  converts toward zero and saturates at 65504, tests/dml_findings.py);
- QUANTIZED_LINEAR_ADD: ((A - AZeroPoint) * AScale + (B - BZeroPoint) * BScale) / OutputScale in
  FLOAT32 in that order (true division), rounded halves to even, plus OutputZeroPoint, saturated;
  NaN (0 * inf, 0 / 0, a NaN scale) gives the type's minimum (-128 for INT8, 0 for UINT8).

The lowerings compute exactly that in FLOAT32 (Div, Round, Add, IsNaN/Where, Clip, Cast: ONNX's
QuantizeLinear takes only per-tensor or per-axis scales; the CPU EP's gives NaN and 0 / 0 the
type's minimum and has no INT32 kernel, so it is no candidate: test_matrix runs every candidate
there). On the `dml` target, QuantizeLinear and DequantizeLinear, which the DirectML EP maps onto
ELEMENT_WISE_QUANTIZE_LINEAR and DEQUANTIZE_LINEAR (DmlOperatorElementWise.cpp), are emitted where
the scale and zero point vary along one axis at most (Target.dml_nodes, as element_wise.Row.dml).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx.defs

from dml2onnx.core import dtypes, featurelevels
from dml2onnx.core.desc import OperatorDesc, TensorDesc
from dml2onnx.core.errors import ModelError
from dml2onnx.core.schema import OperatorSchema
from dml2onnx.graph import dml_ep
from dml2onnx.graph.builder import GraphBuilder, onnx_type_name
from dml2onnx.graph.targets import DML_NODE_DOC
from dml2onnx.ops import common
from dml2onnx.ops.element_wise import Row, RowTable, tensor_names
from dml2onnx.ops.family import Family

F32 = dtypes.FLOAT32
CANDIDATES = ("elementwise",)  # one lowering (choices.py); the dml target's nodes: Row.dml
BROADCASTS = True  # lower() takes inputs of size 1 where a buffer input repeats (lowering.py)

QUANTIZE, DEQUANTIZE, ADD = "ELEMENT_WISE_QUANTIZE_LINEAR", "ELEMENT_WISE_DEQUANTIZE_LINEAR", "ELEMENT_WISE_QUANTIZED_LINEAR_ADD"


# -- the arithmetic, in FLOAT32 ------------------------------------------------------------------


def _f32(b: GraphBuilder, x: str, dtype: dtypes.DataType, step: str) -> str:
    return x if dtype == F32 else b.cast(x, F32, f"{step}_as_float32", f"{step} in FLOAT32")


def _dequantized(b: GraphBuilder, x: str, scale: str, zero: str | None, types: list[dtypes.DataType], step: str) -> str:
    """(x - zero_point) * scale in FLOAT32."""
    v = _f32(b, x, types[0], step)
    if zero is not None:
        v = b.node("Sub", [v, _f32(b, zero, types[2], f"{step}_zero_point")], f"{step}_centred", "x - zero_point")
    return b.node("Mul", [v, _f32(b, scale, types[1], f"{step}_scale")], f"{step}_dequantized", "(x - zero_point) * scale")


def _requantized(
    b: GraphBuilder, v: str, scale: str, zero: str | None, types: list[dtypes.DataType], out: dtypes.DataType, nan_to: float
) -> str:
    """saturate(round(v / scale) + zero_point), NaN as `nan_to`, in FLOAT32, then as `out`."""
    q = b.node("Div", [v, _f32(b, scale, types[0], "scale")], "scaled", "v / scale (a FLOAT32 division)")
    r = b.node("Round", [q], "rounded", "round(v / scale), halves to even")
    if zero is not None:
        r = b.node("Add", [r, _f32(b, zero, types[1], "zero_point")], "shifted", "round(v / scale) + zero_point")
    nan = b.node("IsNaN", [r], "nan", "NaN")
    r = b.node("Where", [nan, b.scalar(nan_to, F32, "nan_value"), r], "nan_replaced", f"{nan_to:g} for NaN (DirectML)")
    lo, hi = common.float32_range(out)
    r = b.node("Clip", [r, b.scalar(lo, F32, "type_min"), b.scalar(hi, F32, "type_max")], "saturated", f"saturated to {out}")
    return b.cast(r, out, "as_output", f"as {out} (an integer in range: exact)")


def _saturated_reference(r: np.ndarray, out: np.dtype, nan_to: float) -> np.ndarray:
    info = np.iinfo(out)
    return np.clip(np.where(np.isnan(r), np.float32(nan_to), r), info.min, info.max).astype(out)


def _dq_reference(x: np.ndarray, scale: np.ndarray, zero: np.ndarray | None) -> np.ndarray:
    v = x.astype(np.float32)
    if zero is not None:
        v = v - zero.astype(np.float32)
    return v * scale.astype(np.float32)


def _q_reference(v: np.ndarray, scale: np.ndarray, zero: np.ndarray | None) -> np.ndarray:
    r = np.rint(v.astype(np.float32) / scale.astype(np.float32))
    return r if zero is None else r + zero.astype(np.float32)


# -- the rows: xs and their types in struct order, None for an absent optional tensor -------------


def _quantize(b: GraphBuilder, xs: list[str | None], p: dict[str, Any]) -> str:
    x, scale, zero = xs
    types = p["__types__"]
    v = _f32(b, x, types[0], "input")
    return _requantized(b, v, scale, zero, types[1:], p["__out__"], 0.0)


def _quantize_reference(xs: list[np.ndarray | None], p: dict[str, Any]) -> np.ndarray:
    x, scale, zero = xs
    with np.errstate(all="ignore"):
        return _saturated_reference(_q_reference(x, scale, zero), p["__out__"].numpy, 0.0)


def _dequantize(b: GraphBuilder, xs: list[str | None], p: dict[str, Any]) -> str:
    x, scale, zero = xs
    t = p["__types__"]
    y = _dequantized(b, x, scale, zero, [t[0], t[1], t[2]], "input")
    out: dtypes.DataType = p["__out__"]
    return y if out == F32 else b.cast(y, out, "to_float16", "the result in FLOAT16")


def _dequantize_reference(xs: list[np.ndarray | None], p: dict[str, Any]) -> np.ndarray:
    x, scale, zero = xs
    with np.errstate(all="ignore"):
        return _dq_reference(x, scale, zero).astype(p["__out__"].numpy)


def _add(b: GraphBuilder, xs: list[str | None], p: dict[str, Any]) -> str:
    a, a_scale, a_zero, bx, b_scale, b_zero, out_scale, out_zero = xs
    t = p["__types__"]
    av = _dequantized(b, a, a_scale, a_zero, t[0:3], "a")
    bv = _dequantized(b, bx, b_scale, b_zero, t[3:6], "b")
    total = b.node("Add", [av, bv], "sum", "A value + B value")
    out: dtypes.DataType = p["__out__"]
    return _requantized(b, total, out_scale, out_zero, t[6:8], out, common.float32_range(out)[0])


def _add_reference(xs: list[np.ndarray | None], p: dict[str, Any]) -> np.ndarray:
    a, a_scale, a_zero, bx, b_scale, b_zero, out_scale, out_zero = xs
    out = p["__out__"].numpy
    with np.errstate(all="ignore"):
        total = _dq_reference(a, a_scale, a_zero) + _dq_reference(bx, b_scale, b_zero)
        return _saturated_reference(_q_reference(total, out_scale, out_zero), out, float(np.iinfo(out).min))


# -- the dml target: QuantizeLinear / DequantizeLinear ------------------------------------------


def _varying_axes(t: TensorDesc) -> set[int]:
    """The axes along which the tensor's values may differ (size > 1, stride not 0)."""
    return {i for i, (s, st) in enumerate(zip(t.sizes, t.layout, strict=True)) if s > 1 and st != 0}


def _per_axis(desc: OperatorDesc) -> tuple[bool, int | None]:
    """(whether ScaleTensor and ZeroPointTensor vary along one axis at most, that axis or None)."""
    extras = [t for t in (desc.tensor("ScaleTensor"), desc.optional_tensor("ZeroPointTensor")) if t is not None]
    axes = set().union(*(_varying_axes(t) for t in extras))
    return len(axes) <= 1, next(iter(axes), None)


def _onnx_param(b: GraphBuilder, x: str, t: TensorDesc, axis: int | None, step: str) -> str:
    """A scale or zero point (of the input's sizes, or 1 where a buffer input repeats) as ONNX's
    Q/DQ take it: a scalar, or a 1-D tensor along `axis`. The desc's strides make the elements
    left out copies of the ones kept."""
    sizes, rank = t.sizes, t.rank
    others = [i for i in range(rank) if i != axis]
    if others:
        x = b.slice(x, others, [0] * len(others), [1] * len(others), f"{step}_first", "one element (the others repeat it)")
    if axis is None:
        return b.reshape(x, [], f"{step}_scalar", "one value for every element")
    shape = [1] * rank
    shape[axis] = sizes[axis]
    if axis not in _varying_axes(t):  # one value repeated along the axis (read once from a buffer)
        x = b.node("Expand", [x, b.i64(shape, f"{step}_along")], f"{step}_full", f"{sizes[axis]} values along axis {axis}")
    return b.reshape(x, [sizes[axis]], f"{step}_vector", f"a 1-D tensor along axis {axis}")


def _onnx_takes(op: str, opset: int, types: list[dtypes.DataType]) -> bool:
    """Whether ONNX's schema of `op` at `opset` takes inputs of these types (QuantizeLinear-19 on,
    for one, wants the scale in the input's type: none for INT32 inputs)."""
    schema = onnx.defs.get_schema(op, opset)
    allowed = {c.type_param_str: set(c.allowed_type_strs) for c in schema.type_constraints}
    bound: dict[str, str] = {}
    for formal, t in zip(schema.inputs, types, strict=False):
        name = f"tensor({onnx_type_name(t.onnx).lower()})"
        if formal.type_str in allowed:
            if name not in allowed[formal.type_str] or bound.setdefault(formal.type_str, name) != name:
                return False
        elif formal.type_str != name:
            return False
    return True


def _dml_q_dq(onnx_op: str) -> Any:
    """QuantizeLinear / DequantizeLinear, where ONNX's schema and the DirectML EP take the types
    and the scale and zero point vary along one axis at most (scalar or per-axis)."""

    def lower(b: GraphBuilder, xs: list[str | None], p: dict[str, Any]) -> str | None:
        desc: OperatorDesc = p["__desc__"]
        x_type, scale_type, _ = p["__types__"]
        out: dtypes.DataType = p["__out__"]
        zero_type = out if onnx_op == "QuantizeLinear" else x_type
        ok, axis = _per_axis(desc)
        if axis is not None and axis not in _varying_axes(desc.tensor("InputTensor")):
            return None  # a broadcast input buffer stays compact on that axis: the 1-D scale would not fit it
        labels = {"T": x_type, "T1": x_type, "T2": out} if onnx_op == "DequantizeLinear" else {"T1": x_type, "T2": out}
        takes = dml_ep.takes(onnx_op, b.opset, **{k: onnx_type_name(t.onnx) for k, t in labels.items()})
        # No INT32 DequantizeLinear: ONNX gives it no zero point, the DirectML EP wants one, and ONNX
        # Runtime's QDQ optimizer turns an INT32 DequantizeLinear feeding a Gemm (a quantized model's
        # bias) into a QuantizeLinear with that INT32 zero point, which fails the session (measured with
        # onnxruntime-directml 1.24.4 on the corpus's QDQ network): the portable graph instead
        if onnx_op == "DequantizeLinear" and x_type == dtypes.INT32:
            return None
        if not ok or not takes or not _onnx_takes(onnx_op, b.opset, [x_type, scale_type, zero_type]):
            return None
        x, scale, zero = xs
        sizes = desc.tensor("InputTensor").sizes
        onnx_scale = _onnx_param(b, scale, desc.tensor("ScaleTensor"), axis, "scale")
        if zero is None:  # the DirectML EP wants all three inputs (DmlOperatorElementwiseQLinear)
            onnx_zero = b.const(np.zeros([] if axis is None else [sizes[axis]], zero_type.numpy), "zero_point")
        else:
            onnx_zero = _onnx_param(b, zero, desc.tensor("ZeroPointTensor"), axis, "zero_point")
        attrs = {} if axis is None else {"axis": axis}
        return b.node(onnx_op, [x, onnx_scale, onnx_zero], onnx_op.lower(), DML_NODE_DOC, **attrs)

    return lower


ROWS: dict[str, Row] = {
    QUANTIZE: Row(
        "f(x, scale, zero_point) = clamp(round(x / scale) + zero_point, Min, Max)",
        _quantize,
        _quantize_reference,
        dml=_dml_q_dq("QuantizeLinear"),
    ),
    DEQUANTIZE: Row(
        "f(x, scale, zero_point) = (x - zero_point) * scale",
        _dequantize,
        _dequantize_reference,
        dml=_dml_q_dq("DequantizeLinear"),
    ),
    # com.microsoft QLinearAdd, which the DirectML EP maps onto this operator, needs a com.microsoft
    # opset import that lowering.py does not write and dml_ep.check does not know: not emitted yet
    ADD: Row(
        "f(A, B) = clamp(round(((A - AZeroPoint) * AScale + (B - BZeroPoint) * BScale) / OutputScale)"
        " + OutputZeroPoint, Min, Max)",
        _add,
        _add_reference,
    ),
}


# -- validation ----------------------------------------------------------------------------------


def _check_same_sizes(desc: OperatorDesc, names: tuple[str, ...], other: str) -> None:
    for name in names:
        if desc.optional_tensor(name) is not None:
            common.check_same_sizes(desc, name, other)


def _check_one_value(desc: OperatorDesc, name: str, other: str) -> None:
    t = desc.optional_tensor(name)
    if t is None:
        return
    common.check_same_rank(desc, name, other)
    for i, s in enumerate(t.sizes):
        if s != 1:
            raise ModelError(desc.at(name, "Sizes", i), f"must be 1: {name} holds one value (its sizes are all 1), not {s}")


def _check_quantize(desc: OperatorDesc) -> None:
    _check_same_sizes(desc, ("ScaleTensor", "ZeroPointTensor", "OutputTensor"), "InputTensor")
    common.check_same_type(desc, "ZeroPointTensor", "OutputTensor")
    x, scale = desc.tensor("InputTensor").data_type, desc.tensor("ScaleTensor").data_type
    want = F32 if x == dtypes.INT32 else x
    if scale != want:
        why = (
            "an INT32 InputTensor takes a FLOAT32 ScaleTensor" if x == dtypes.INT32 else "ScaleTensor has InputTensor's DataType"
        )
        raise ModelError(desc.at("ScaleTensor", "DataType"), f"must be {want}, not {scale}: {why}")


def _check_dequantize(desc: OperatorDesc) -> None:
    _check_same_sizes(desc, ("ScaleTensor", "ZeroPointTensor", "OutputTensor"), "InputTensor")
    common.check_same_type(desc, "ZeroPointTensor", "InputTensor")
    common.check_same_type(desc, "ScaleTensor", "OutputTensor")


def _check_add(desc: OperatorDesc) -> None:
    _check_same_sizes(desc, ("BTensor", "OutputTensor"), "ATensor")
    for prefix, tensor in (("A", "ATensor"), ("B", "BTensor"), ("Output", "OutputTensor")):
        _check_one_value(desc, f"{prefix}ScaleTensor", "ATensor")
        _check_one_value(desc, f"{prefix}ZeroPointTensor", "ATensor")
        common.check_same_type(desc, f"{prefix}ZeroPointTensor", tensor)


_CHECKS = {QUANTIZE: _check_quantize, DEQUANTIZE: _check_dequantize, ADD: _check_add}


class QuantizedFamily(RowTable):
    """The rows take every input tensor in struct order (None for an absent optional one) with
    their types in p["__types__"] and the output's in p["__out__"]; no ScaleBias or activation."""

    def validate(self, desc: OperatorDesc) -> None:
        _CHECKS[desc.schema.name](desc)
        if desc.schema.name != ADD and desc.optional_tensor("ZeroPointTensor") is None:
            featurelevels.require(desc, "6_2", desc.at("ZeroPointTensor"), "a desc without ZeroPointTensor")

    def _params(self, desc: OperatorDesc) -> dict[str, Any]:
        types = [None if (t := desc.optional_tensor(n)) is None else t.data_type for n in tensor_names(desc)]
        return {"__types__": types, "__out__": desc.tensor("OutputTensor").data_type, "__desc__": desc}

    def lower(self, desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
        row, p = self.rows[desc.schema.name], self._params(desc)
        xs = [inputs.get(n) for n in tensor_names(desc)]
        if b.target.dml_nodes and row.dml is not None:
            y = row.dml(b, xs, p)
            if y is not None:
                return y
        return row.lower(b, xs, p)

    def reference(self, desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
        row = self.rows[desc.schema.name]
        xs = [inputs.get(n) if desc.optional_tensor(n) is not None else None for n in tensor_names(desc)]
        return np.asarray(row.reference(xs, self._params(desc))).astype(desc.tensor("OutputTensor").data_type.numpy)


FAMILY = QuantizedFamily(ROWS)
validate, lower, reference = FAMILY.validate, FAMILY.lower, FAMILY.reference


def examples(op: OperatorSchema) -> list[common.Example]:
    """onnx_ops: every input type with every output type (each scale and zero point of the
    type the page pairs with them); QUANTIZED_LINEAR_ADD: every A, B and output type."""
    sizes, one = [2, 3, 4, 5], [1, 1, 1, 1]
    if op.name == ADD:
        out = []
        for a in common.example_types(op, "ATensor"):
            for bt in common.example_types(op, "BTensor"):
                for o in common.example_types(op, "OutputTensor"):
                    desc = {n: common.example_tensor(t, sizes) for n, t in (("ATensor", a), ("BTensor", bt), ("OutputTensor", o))}
                    for prefix, t in (("A", a), ("B", bt), ("Output", o)):
                        desc[f"{prefix}ScaleTensor"] = common.example_tensor("FLOAT32", one)
                        desc[f"{prefix}ZeroPointTensor"] = common.example_tensor(t, one)
                    out.append(desc)
        return out
    quantize = op.name == QUANTIZE
    return [
        {
            "InputTensor": common.example_tensor(t, sizes),
            "ScaleTensor": common.example_tensor(("FLOAT32" if t == "INT32" else t) if quantize else o, sizes),
            "ZeroPointTensor": common.example_tensor(o if quantize else t, sizes),
            "OutputTensor": common.example_tensor(o, sizes),
        }
        for t in common.example_types(op, "InputTensor")
        for o in common.example_types(op, "OutputTensor")
    ]


OPERATOR_FAMILY = Family(
    ("ELEMENT_WISE_QUANTIZE_LINEAR", "ELEMENT_WISE_DEQUANTIZE_LINEAR", "ELEMENT_WISE_QUANTIZED_LINEAR_ADD"),
    validate,
    lower,
    reference,
    CANDIDATES,
    examples=examples,
    broadcasts=True,
)
