"""DML_OPERATOR_QUANTIZED_LINEAR_AVERAGE_POOLING: AVERAGE_POOLING1's window (pooling.py: WindowSize,
Strides, Dilations, StartPadding, EndPadding, IncludePadding over the DimensionCount = 2 or 3
spatial dimensions of a 4-D or 5-D InputTensor) over dequantized INT8/UINT8 values, quantized
again (the page):

    dequantize: (x - InputZeroPoint) * InputScale
    average:    the sum over the window's input elements / their count (/ the whole window's
                size with IncludePadding; padding is 0 in the dequantized domain)
    quantize:   clamp(round(average / OutputScale) + OutputZeroPoint, Min, Max)

The scales and zero points hold one value ({1, 1, 1, 1}) or one per channel ({1, C, 1, 1}: C on
dimension 1), each zero point with its tensor's DataType; absent zero points are 0. The window
rules are pooling.py's (validate: InputTensor and OutputTensor have one DataType, OutputTensor's
sizes by the page's formula, a dilated window's smaller count also taken).

The arithmetic, where the page's "mathematically equivalent" leaves the FLOAT32 steps open: the
sum of x - InputZeroPoint over the window is an exact integer (|x - zp| <= 255); then
((sum * InputScale) / count) / OutputScale in FLOAT32 in that order, rounded halves to even
(DirectML's rounding: the matrix' exact halves), OutputZeroPoint added, saturated (NaN: the type's minimum, below).

What DirectML computed (tests/ops/test_quantized_pooling.py, README: quantized pooling):
- a window entirely in padding without IncludePadding (0 / 0): the type's minimum (-128, 0)
  whatever OutputZeroPoint with per-tensor zero points (as QUANTIZED_LINEAR_ADD's NaN), but 0 or
  the type's maximum with per-channel or absent ones (its kernels differ: tests/dml_findings.py);
  the graphs give the minimum (with IncludePadding such a window is 0, quantized);
- E_INVALIDARG, where the page is silent (dml2onnx refuses them too): InputTensor and
  OutputTensor of different DataTypes, a scale or zero point of another DimensionCount than
  InputTensor's (the table lists 1 to 5; 1-D ones fail in CompileOperator), a zero point of
  other Sizes than its scale's;
- its FLOAT32 steps are not those above: DirectML sums the dequantized elements in FLOAT32 in an
  order of its own; on inputs chosen where FLOAT32 orders disagree it differs by one from every
  order tried, this one included (on 5 of 10 such inputs), and on none of the matrix' random
  cases. The reference keeps the exact sum (the page's mathematics, rounded three times).

Lowering: Cast, Sub, a depthwise Conv with a filter of ones (WindowSize, Dilations, Strides, the
padding: exact integer sums of at most 65793 elements), Round (any error of a Conv algorithm
below 1/2 removed), Mul, Div by the constant counts, Div, Round, Add, (IsNaN, Where), Clip, Cast: nodes every EP
registers. No ONNX node is this operator (ONNX Runtime's QLinearAveragePool is a com.microsoft operator,
which dml2onnx does not emit): the `dml` target builds the same graph. The DirectML EP ran a third
of the matrix, bit for bit.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.errors import ModelError
from dml2onnx.core.schema import OperatorSchema
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.ops import common, pooling
from dml2onnx.ops.family import Family

F32 = dtypes.FLOAT32
CANDIDATES = ("conv",)
PAIRS = (("InputScaleTensor", "InputZeroPointTensor"), ("OutputScaleTensor", "OutputZeroPointTensor"))


def window(desc: OperatorDesc) -> pooling.Window:
    return dataclasses.replace(pooling.window(desc), kind="AVERAGE")


def validate(desc: OperatorDesc) -> None:
    pooling.validate(desc)
    pooling.check_formula(desc)
    common.check_same_type(desc, "InputZeroPointTensor", "InputTensor")
    common.check_same_type(desc, "OutputZeroPointTensor", "OutputTensor")
    channels = desc.tensor("InputTensor").sizes[1]
    for scale, zero in PAIRS:
        for name in (scale, zero):
            t = desc.optional_tensor(name)
            if t is None:
                continue
            common.check_same_rank(desc, name, "InputTensor")  # DirectML: E_INVALIDARG for other ranks
            per_channel = t.rank >= 2 and t.sizes[1] == channels
            for i, s in enumerate(t.sizes):
                if s != 1 and not (per_channel and i == 1):
                    raise ModelError(
                        desc.at(name, "Sizes", i), f"must be 1 ({name} is {{1, 1, 1, 1}} or {{1, C, 1, 1}}), not {s}"
                    )
        z = desc.optional_tensor(zero)
        if z is not None and z.sizes != desc.tensor(scale).sizes:  # DirectML: E_INVALIDARG
            raise ModelError(
                desc.at(zero, "Sizes"), f"must be {scale}'s Sizes {list(desc.tensor(scale).sizes)}, not {list(z.sizes)}"
            )


def _params(b: GraphBuilder, desc: OperatorDesc, v: str, name: str, rank: int) -> str:
    """A scale or zero point in FLOAT32 as {1, C or 1, 1...} of `rank`."""
    t = desc.tensor(name)
    c = t.sizes[1] if t.rank >= 2 else 1
    if t.data_type != F32:
        v = b.cast(v, F32, f"{name}_float", f"{name} in FLOAT32")
    return b.reshape(v, [1, c] + [1] * (rank - 2), f"{name}_shaped", "{1, C or 1, 1...}")


def _counts(desc: OperatorDesc, w: pooling.Window) -> np.ndarray:
    spatial = desc.tensor("InputTensor").sizes[2:]
    c = pooling.counts(w, spatial)
    return np.full_like(c, math.prod(w.sizes)) if w.include_padding else c


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    x = desc.tensor("InputTensor")
    rank, channels = x.rank, x.sizes[1]
    w = window(desc)
    v = b.cast(inputs["InputTensor"], F32, "input_float", "x in FLOAT32 (exact)")
    if inputs.get("InputZeroPointTensor") is not None:
        zero = _params(b, desc, inputs["InputZeroPointTensor"], "InputZeroPointTensor", rank)
        v = b.node("Sub", [v, zero], "centred", "x - InputZeroPoint (exact)")
    ones = b.const(np.ones([channels, 1, *w.sizes], np.float32), "window_ones")
    attrs = {"kernel_shape": list(w.sizes), "strides": list(w.strides), "dilations": list(w.dilations)}
    total = b.node(
        "Conv",
        [v, ones],
        "window_sum",
        "the sum over each window (exact integers)",
        group=channels,
        pads=[*w.start, *w.end],
        **attrs,
    )
    total = b.node("Round", [total], "window_sum_exact", "the nearest integer (the sum is one)")
    scaled = b.node(
        "Mul",
        [total, _params(b, desc, inputs["InputScaleTensor"], "InputScaleTensor", rank)],
        "dequantized_sum",
        "sum * InputScale",
    )
    counts = _counts(desc, w).astype(np.float32).reshape(1, 1, *desc.tensor("OutputTensor").sizes[2:])
    average = b.node("Div", [scaled, b.const(counts, "counts")], "average", "/ the window's count")
    q = b.node(
        "Div", [average, _params(b, desc, inputs["OutputScaleTensor"], "OutputScaleTensor", rank)], "scaled", "/ OutputScale"
    )
    r = b.node("Round", [q], "rounded", "halves to even")
    if inputs.get("OutputZeroPointTensor") is not None:
        r = b.node(
            "Add",
            [r, _params(b, desc, inputs["OutputZeroPointTensor"], "OutputZeroPointTensor", rank)],
            "shifted",
            "+ OutputZeroPoint",
        )
    out = desc.tensor("OutputTensor").data_type
    lo, hi = common.float32_range(out)
    if (_counts(desc, w) == 0).any():  # 0 / 0: DirectML gives the type's minimum
        nan = b.node("IsNaN", [r], "empty_window", "a window entirely in padding (0 / 0)")
        r = b.node("Where", [nan, b.scalar(lo, F32, "nan_value"), r], "empty_minimum", "the type's minimum there")
    r = b.node("Clip", [r, b.scalar(lo, F32, "type_min"), b.scalar(hi, F32, "type_max")], "saturated", f"saturated to {out}")
    return b.cast(r, out, "as_output", f"as {out}")


def _param_values(inputs: dict[str, np.ndarray], name: str, rank: int) -> np.ndarray | None:
    v = inputs.get(name)
    if v is None:
        return None
    return v.astype(np.float32).reshape([1, -1] + [1] * (rank - 2))


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    x = inputs["InputTensor"]
    rank = x.ndim
    centred = x.astype(np.float64)
    zero = _param_values(inputs, "InputZeroPointTensor", rank)
    if zero is not None:
        centred = centred - zero
    w = window(desc)
    values, _ = pooling.windows(w, centred, 0.0)
    total = values.sum(axis=0).astype(np.float32)  # exact integers
    counts = _counts(desc, w).astype(np.float32)
    with np.errstate(all="ignore"):
        average = (total * _param_values(inputs, "InputScaleTensor", rank)) / counts
        r = np.rint(average / _param_values(inputs, "OutputScaleTensor", rank))
        out_zero = _param_values(inputs, "OutputZeroPointTensor", rank)
        if out_zero is not None:
            r = r + out_zero
    out = desc.tensor("OutputTensor").data_type.numpy
    info = np.iinfo(out)
    return np.clip(np.where(np.isnan(r), info.min, r), info.min, info.max).astype(out)


def examples(op: OperatorSchema) -> list[common.Example]:
    """onnx_ops: pooling.py's examples (each type, a 3x3 window of stride 2 with padding 1), with
    per-channel input scales and zero points."""
    out = []
    for desc in pooling.examples(op):
        t = desc["InputTensor"]["DataType"]
        out.append(
            desc
            | {
                "IncludePadding": False,
                "InputScaleTensor": common.example_tensor("FLOAT32", [1, 2, 1, 1]),
                "InputZeroPointTensor": common.example_tensor(t, [1, 2, 1, 1]),
                "OutputScaleTensor": common.example_tensor("FLOAT32", [1, 1, 1, 1]),
                "OutputZeroPointTensor": common.example_tensor(t, [1, 1, 1, 1]),
            }
        )
    return out


OPERATOR_FAMILY = Family(("QUANTIZED_LINEAR_AVERAGE_POOLING",), validate, lower, reference, CANDIDATES, examples=examples)
