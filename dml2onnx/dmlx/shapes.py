"""The output tensors an operator call gets when the caller names none: DirectMLX's output rules
(the input's type and sizes for element-wise operators, the GEMM, convolution and pooling
formulas, ...), computed from a desc parsed with placeholder outputs.

A rule returns, per output bind point, its data type and sizes; None where it cannot know (the
caller must then give it: CAST's type, FILL_VALUE_*'s sizes). An operator without a rule here
(SPLIT, ROI_ALIGN, RANDOM_GENERATOR, ...) needs its outputs named by the caller."""

from __future__ import annotations

import math
from collections.abc import Callable

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.schema import Kind, OperatorSchema
from dml2onnx.ops import convolution, gather, pooling, recurrent_reference

Guess = tuple[dtypes.DataType | None, tuple[int, ...] | None]
Rule = Callable[[OperatorDesc], dict[str, Guess]]

# Comparisons and tests write 0/1 in UINT8, as DirectMLX's functions declare them (AND, OR, XOR
# and NOT write the input's type: DirectML takes no other).
UINT8_RESULTS = tuple(
    f"ELEMENT_WISE_{n}"
    for n in (
        "LOGICAL_EQUALS", "LOGICAL_GREATER_THAN", "LOGICAL_GREATER_THAN_OR_EQUAL", "LOGICAL_LESS_THAN",
        "LOGICAL_LESS_THAN_OR_EQUAL", "IS_NAN", "IS_INFINITY", "BIT_COUNT",
    )
)  # fmt: skip
# Where an output's data type is another input's: the quantized operators' zero points and scales, IF's values.
_TYPE_FROM = {
    "ELEMENT_WISE_QUANTIZE_LINEAR": "ZeroPointTensor",
    "ELEMENT_WISE_DEQUANTIZE_LINEAR": "ScaleTensor",
    "ELEMENT_WISE_QUANTIZED_LINEAR_ADD": "OutputZeroPointTensor",
    "ELEMENT_WISE_IF": "ATensor",
}
# Operators whose every output has the first input's sizes, beyond ELEMENT_WISE_* and ACTIVATION_*.
_SAME_SIZES = (
    "BATCH_NORMALIZATION",
    "CUMULATIVE_PRODUCT",
    "CUMULATIVE_SUMMATION",
    "DIAGONAL_MATRIX1",
    "LOCAL_RESPONSE_NORMALIZATION",
    "LOCAL_RESPONSE_NORMALIZATION_GRAD",
    "LP_NORMALIZATION",
    "MEAN_VARIANCE_NORMALIZATION",
    "MEAN_VARIANCE_NORMALIZATION1",
    "MEAN_VARIANCE_NORMALIZATION2",
    "REVERSE_SUBSEQUENCES",
    "SCATTER",
    "SCATTER_ND",
    "VALUE_SCALE_2D",
    "CAST",
    "ADAM_OPTIMIZER",
)


def first_input(desc: OperatorDesc) -> str:
    return desc.inputs[0]


def _type_of(desc: OperatorDesc, name: str) -> dtypes.DataType:
    return desc.tensor(name).data_type


def same_sizes(desc: OperatorDesc) -> dict[str, Guess]:
    """Each output: the first input's sizes and data type (but UINT8_RESULTS, _TYPE_FROM, and
    CAST's, which the caller gives)."""
    if not desc.inputs:  # DIAGONAL_MATRIX1 without its optional input
        return {}
    source = desc.tensor(first_input(desc))
    name = desc.schema.name
    data_type: dtypes.DataType | None = source.data_type
    if name in UINT8_RESULTS:
        data_type = dtypes.UINT8
    elif name in _TYPE_FROM:
        other = desc.optional_tensor(_TYPE_FROM[name])
        data_type = other.data_type if other is not None else (None if name == "ELEMENT_WISE_QUANTIZE_LINEAR" else data_type)
    elif name == "CAST":
        data_type = None
    return dict.fromkeys(desc.outputs, (data_type, source.sizes))


def _matrix(desc: OperatorDesc, a: str, b: str, out_type: dtypes.DataType | None) -> dict[str, Guess]:
    """[batch..., M, N] from A [.., M, K] and B [.., K, N] (GEMM's TransA/TransB transpose them)."""
    x, y = desc.tensor(a).sizes, desc.tensor(b).sizes
    m = x[-1] if desc.values.get("TransA") == "TRANSPOSE" else x[-2]
    n = y[-2] if desc.values.get("TransB") == "TRANSPOSE" else y[-1]
    batch = tuple(max(p, q) for p, q in zip(x[:-2], y[:-2], strict=True)) if len(x) == len(y) else x[:-2]
    return {desc.outputs[0]: (out_type or _type_of(desc, a), (*batch, m, n))}


def gemm(desc: OperatorDesc) -> dict[str, Guess]:
    return _matrix(desc, "ATensor", "BTensor", None)


def matrix_multiply_integer(desc: OperatorDesc) -> dict[str, Guess]:
    return _matrix(desc, "ATensor", "BTensor", dtypes.INT32)


def quantized_matrix_multiply(desc: OperatorDesc) -> dict[str, Guess]:
    zero = desc.optional_tensor("OutputZeroPointTensor")
    return _matrix(desc, "ATensor", "BTensor", zero.data_type if zero is not None else _type_of(desc, "ATensor"))


def convolution_rule(desc: OperatorDesc) -> dict[str, Guess]:
    x, w = desc.tensor("InputTensor").sizes, desc.tensor("FilterTensor").sizes
    channels = w[1] * desc["GroupCount"] if convolution.backward(desc) else w[0]
    return {"OutputTensor": (_type_of(desc, "InputTensor"), (x[0], channels, *convolution.output_sizes(desc)))}


def _windowed(desc: OperatorDesc, window: tuple[int, ...]) -> tuple[int, ...]:
    """The spatial sizes a window of `window` elements slides to (paddings, strides, dilations)."""
    x = desc.tensor("InputTensor").sizes[2:]
    dilations = desc.values.get("Dilations") or (1,) * len(x)
    return tuple(
        (n + s + e - ((k - 1) * d + 1)) // st + 1
        for n, k, d, s, e, st in zip(x, window, dilations, desc["StartPadding"], desc["EndPadding"], desc["Strides"], strict=True)
    )


def matrix_multiply_integer_to_float(desc: OperatorDesc) -> dict[str, Guess]:
    return _matrix(desc, "ATensor", "BTensor", _type_of(desc, "AScaleTensor"))


def quantized_average_pooling(desc: OperatorDesc) -> dict[str, Guess]:
    x = desc.tensor("InputTensor")
    zero = desc.optional_tensor("OutputZeroPointTensor")
    sizes = (*x.sizes[:2], *_windowed(desc, desc["WindowSize"]))
    return {"OutputTensor": (zero.data_type if zero is not None else x.data_type, sizes)}


def integer_convolution(desc: OperatorDesc) -> dict[str, Guess]:
    """CONVOLUTION_INTEGER (INT32 out) and QUANTIZED_LINEAR_CONVOLUTION (the output zero point's type)."""
    x, w = desc.tensor("InputTensor").sizes, desc.tensor("FilterTensor").sizes
    if desc.schema.name == "CONVOLUTION_INTEGER":
        out_type = dtypes.INT32
    else:
        zero = desc.optional_tensor("OutputZeroPointTensor")
        out_type = zero.data_type if zero is not None else _type_of(desc, "InputTensor")
    return {"OutputTensor": (out_type, (x[0], w[0], *_windowed(desc, w[2:])))}


def pooling_rule(desc: OperatorDesc) -> dict[str, Guess]:
    x = desc.tensor("InputTensor").sizes
    sizes = (x[0], x[1], *pooling.window(desc, raw=True).output_sizes(x[2:]))
    out: dict[str, Guess] = {"OutputTensor": (_type_of(desc, "InputTensor"), sizes)}
    if pooling.INDICES in desc.outputs:
        out[pooling.INDICES] = (dtypes.UINT32, sizes)
    return out


def join(desc: OperatorDesc) -> dict[str, Guess]:
    parts = [desc.tensor(p).sizes for p in desc.inputs]
    axis = desc["Axis"]
    sizes = tuple(sum(p[axis] for p in parts) if i == axis else n for i, n in enumerate(parts[0]))
    return {"OutputTensor": (_type_of(desc, desc.inputs[0]), sizes)}


def slice_rule(desc: OperatorDesc) -> dict[str, Guess]:
    """SLICE: its Sizes are the output's; SLICE1: every element of the window, ceil(size / |stride|)."""
    if desc.schema.name == "SLICE":
        return {"OutputTensor": (_type_of(desc, "InputTensor"), tuple(desc["Sizes"]))}
    strides = desc["InputWindowStrides"]
    sizes = tuple(-(-w // abs(s)) for w, s in zip(desc["InputWindowSizes"], strides, strict=True))
    return {"OutputTensor": (_type_of(desc, "InputTensor"), sizes)}


def padding(desc: OperatorDesc) -> dict[str, Guess]:
    x = desc.tensor("InputTensor").sizes
    sizes = tuple(n + s + e for n, s, e in zip(x, desc["StartPadding"], desc["EndPadding"], strict=True))
    return {"OutputTensor": (_type_of(desc, "InputTensor"), sizes)}


def tile(desc: OperatorDesc) -> dict[str, Guess]:
    x = desc.tensor("InputTensor").sizes
    return {"OutputTensor": (_type_of(desc, "InputTensor"), tuple(n * r for n, r in zip(x, desc["Repeats"], strict=True)))}


def space_to_depth(desc: OperatorDesc) -> dict[str, Guess]:
    n, c, h, w = desc.tensor("InputTensor").sizes
    b = desc["BlockSize"]
    return {"OutputTensor": (_type_of(desc, "InputTensor"), (n, c * b * b, h // b, w // b))}


def depth_to_space(desc: OperatorDesc) -> dict[str, Guess]:
    n, c, h, w = desc.tensor("InputTensor").sizes
    b = desc["BlockSize"]
    return {"OutputTensor": (_type_of(desc, "InputTensor"), (n, c // (b * b), h * b, w * b))}


def gather_rule(desc: OperatorDesc) -> dict[str, Guess]:
    x, idx = desc.tensor("InputTensor"), desc.tensor("IndicesTensor")
    axis, k = desc["Axis"], desc["IndexDimensions"]
    full = (*x.sizes[:axis], *idx.sizes[idx.rank - k :], *x.sizes[axis + 1 :])
    return {"OutputTensor": (x.data_type, gather.right_aligned(full, x.rank))}


def gather_elements(desc: OperatorDesc) -> dict[str, Guess]:
    return {"OutputTensor": (_type_of(desc, "InputTensor"), desc.tensor("IndicesTensor").sizes)}


def gather_nd(desc: OperatorDesc) -> dict[str, Guess]:
    x = desc.tensor("InputTensor")
    batch = desc.values.get("BatchDimensionCount") or 0
    return {"OutputTensor": (x.data_type, gather.right_aligned(gather.nd_sizes(desc, batch), x.rank))}


def top_k(desc: OperatorDesc) -> dict[str, Guess]:
    x = desc.tensor("InputTensor")
    sizes = tuple(desc["K"] if i == desc["Axis"] else n for i, n in enumerate(x.sizes))
    return {"OutputValueTensor": (x.data_type, sizes), "OutputIndexTensor": (dtypes.UINT32, sizes)}


def upsample_2d(desc: OperatorDesc) -> dict[str, Guess]:
    n, c, h, w = desc.tensor("InputTensor").sizes
    width, height = desc["ScaleSize"]
    return {"OutputTensor": (_type_of(desc, "InputTensor"), (n, c, h * height, w * width))}


def resample(desc: OperatorDesc) -> dict[str, Guess]:
    x = desc.tensor("InputTensor").sizes
    sizes = tuple(math.floor(n * s) for n, s in zip(x, desc["Scales"], strict=True))
    return {"OutputTensor": (_type_of(desc, "InputTensor"), sizes)}


def roi_pooling(desc: OperatorDesc) -> dict[str, Guess]:
    channels = desc.tensor("InputTensor").sizes[1]
    rois = desc.tensor("ROITensor").sizes[-2]
    width, height = desc["PooledSize"]
    return {"OutputTensor": (_type_of(desc, "InputTensor"), (rois, channels, height, width))}


def recurrent(desc: OperatorDesc) -> dict[str, Guess]:
    sizes = recurrent_reference.expected_sizes(desc)
    return {p: (_type_of(desc, "InputTensor"), tuple(sizes[p])) for p in desc.outputs}


def reduce_rule(desc: OperatorDesc) -> dict[str, Guess]:
    """1 on each reduced axis (the rank kept); UINT32 indices for ARGMAX/ARGMIN, as DirectMLX's Reduce."""
    x = desc.tensor("InputTensor")
    sizes = tuple(1 if i in desc["Axes"] else n for i, n in enumerate(x.sizes))
    indices = desc.schema.name in ("ARGMAX", "ARGMIN") or desc.values.get("Function") in ("ARGMAX", "ARGMIN")
    return {"OutputTensor": (dtypes.UINT32 if indices else x.data_type, sizes)}


def batch_normalization_training(desc: OperatorDesc) -> dict[str, Guess]:
    x, scale = desc.tensor("InputTensor"), desc.tensor("ScaleTensor")
    out: dict[str, Guess] = {"OutputTensor": (x.data_type, x.sizes)}
    out |= {p: (x.data_type, scale.sizes) for p in ("OutputMeanTensor", "OutputVarianceTensor")}
    return out


def batch_normalization_grad(desc: OperatorDesc) -> dict[str, Guess]:
    x, scale = desc.tensor("InputTensor"), desc.tensor("ScaleTensor")
    return {p: (x.data_type, x.sizes if p == "OutputGradientTensor" else scale.sizes) for p in desc.outputs}


RULES: dict[str, Rule] = {
    "GEMM": gemm,
    "MATRIX_MULTIPLY_INTEGER": matrix_multiply_integer,
    "QUANTIZED_LINEAR_MATRIX_MULTIPLY": quantized_matrix_multiply,
    "MATRIX_MULTIPLY_INTEGER_TO_FLOAT": matrix_multiply_integer_to_float,
    "QUANTIZED_LINEAR_AVERAGE_POOLING": quantized_average_pooling,
    "CONVOLUTION": convolution_rule,
    "CONVOLUTION_INTEGER": integer_convolution,
    "QUANTIZED_LINEAR_CONVOLUTION": integer_convolution,
    **dict.fromkeys(pooling.ROWS, pooling_rule),
    "JOIN": join,
    "SLICE": slice_rule,
    "SLICE1": slice_rule,
    "PADDING": padding,
    "PADDING1": padding,
    "TILE": tile,
    "SPACE_TO_DEPTH": space_to_depth,
    "SPACE_TO_DEPTH1": space_to_depth,
    "DEPTH_TO_SPACE": depth_to_space,
    "DEPTH_TO_SPACE1": depth_to_space,
    "GATHER": gather_rule,
    "GATHER_ELEMENTS": gather_elements,
    "GATHER_ND": gather_nd,
    "GATHER_ND1": gather_nd,
    "TOP_K": top_k,
    "TOP_K1": top_k,
    "UPSAMPLE_2D": upsample_2d,
    "RESAMPLE": resample,
    "RESAMPLE1": resample,
    "RESAMPLE2": resample,
    "RESAMPLE3": resample,
    "ROI_POOLING": roi_pooling,
    "REDUCE": reduce_rule,
    "ARGMAX": reduce_rule,
    "ARGMIN": reduce_rule,
    "RNN": recurrent,
    "LSTM": recurrent,
    "GRU": recurrent,
    "BATCH_NORMALIZATION_TRAINING": batch_normalization_training,
    "BATCH_NORMALIZATION_GRAD": batch_normalization_grad,
    "BATCH_NORMALIZATION_TRAINING_GRAD": batch_normalization_grad,
}


def rule(op: OperatorSchema) -> Rule | None:
    """The output rule of `op`, or None: its outputs must be given."""
    if op.name in RULES:
        return RULES[op.name]
    if not (op.tensor_of(Kind.INPUT) or op.tensor_of(Kind.INPUT_ARRAY)) or op.tensor_of(Kind.OUTPUT_ARRAY):
        return None
    if op.name.startswith(("ELEMENT_WISE_", "ACTIVATION_")) or op.name in _SAME_SIZES:
        return same_sizes
    return None
