"""DML_OPERATOR_LOCAL_RESPONSE_NORMALIZATION: y = x / (Bias + Alpha / LocalSize * square_sum)^Beta
over [N, C, H, W], square_sum the sum of x^2 over the element's local region: with CrossChannel,
channels max(0, c - floor((LocalSize - 1) / 2)) to min(C - 1, c + ceil((LocalSize - 1) / 2))
(the page's formula: the window clipped at the edges, still divided by LocalSize); without it,
the same window on H and on W (a LocalSize x LocalSize square, clipped).

What the page leaves open, as DirectML's own API computed it (README: LOCAL_RESPONSE_NORMALIZATION):
the window is floor((LocalSize - 1) / 2) elements before and ceil after (an even LocalSize reaches
one further after), clipped at the edges with Alpha still divided by LocalSize (not by the
elements inside); within channels the same window on H and on W, Alpha divided by LocalSize (not
LocalSize^2); LocalSize 0 is refused (E_INVALIDARG); Bias 0 over zeros gives NaN (0 / 0).

Lowerings: "arithmetic": x^2 (Mul), its windowed mean by AveragePool (count_include_pad: the
clipped window's sum over the whole window's size, LocalSize or LocalSize^2 elements, pads of
floor and ceil of (LocalSize - 1) / 2 before and after), then x / Pow(Bias + Alpha * mean, Beta),
in FLOAT32; "lrn", ONNX LRN (the page's formula exactly, cross-channel), where ONNX Runtime's
kernels take it: LocalSize odd and at most 15 (the CPU and CUDA EPs enforce odd, cuDNN's
CUDNN_LRN_MAX_N is 16), Alpha > 0, Beta >= 0.01 (CUDNN_LRN_MIN_BETA), Bias >= 1e-5
(CUDNN_LRN_MIN_K). The DirectML EP maps LRN back onto this operator with CrossChannel TRUE
(DmlOperatorLocalResponseNormalization.cpp): the dml target emits it (DML_PREFERENCE) in the input's
type; elsewhere FLOAT16 goes through FLOAT32 (the CPU EP's LRN has FLOAT32 only)."""

from __future__ import annotations

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.errors import ModelError
from dml2onnx.core.schema import OperatorSchema
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.graph.targets import DML_NODE_DOC
from dml2onnx.ops import common
from dml2onnx.ops.family import Family

CANDIDATES = ("arithmetic", "lrn")
DML_PREFERENCE = ("lrn",)


def validate(desc: OperatorDesc) -> None:
    common.check_same_type(desc, "OutputTensor", "InputTensor")
    common.check_same_sizes(desc, "OutputTensor", "InputTensor")
    if desc["LocalSize"] < 1:
        raise ModelError(desc.at("LocalSize"), "must be at least 1")


def window(size: int) -> tuple[int, int]:
    """(elements before, elements after) the element's own: floor and ceil of (size - 1) / 2."""
    return (size - 1) // 2, size // 2


def applies(desc: OperatorDesc, candidate: str, opset: int) -> bool:
    if candidate == "lrn":
        f = {k: float(np.float32(desc[k])) for k in ("Alpha", "Beta", "Bias")}
        size = desc["LocalSize"]
        return (
            desc["CrossChannel"] and size % 2 == 1 and size <= 15 and f["Alpha"] > 0 and f["Beta"] >= 0.01 and f["Bias"] >= 1e-5
        )
    return True


def choose(desc: OperatorDesc, target: str, options: tuple[str, ...]) -> str:
    """cuDNN's LRN kernel where it applies (not measured: one kernel instead of five)."""
    return "lrn" if "lrn" in options else options[0]


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    dtype = desc.tensor("InputTensor").data_type
    native = dtype == dtypes.FLOAT32 or (b.variant == "lrn" and b.target.dml_nodes)
    x = inputs["InputTensor"] if native else b.cast(inputs["InputTensor"], dtypes.FLOAT32, "to_float32", "x in FLOAT32")
    size = desc["LocalSize"]
    if b.variant == "lrn":
        doc = DML_NODE_DOC if b.target.dml_nodes else "x / (Bias + Alpha / LocalSize * square_sum over the channels)^Beta"
        y = b.node("LRN", [x], "lrn", doc, size=size, alpha=desc["Alpha"], beta=desc["Beta"], bias=desc["Bias"])
    else:
        n, c, h, w = desc.tensor("InputTensor").sizes
        before, after = window(size)
        square = b.node("Mul", [x, x], "squared", "x^2")
        if desc["CrossChannel"]:  # [N, 1, C, H * W]: a window of LocalSize x 1
            grid = b.reshape(square, [n, 1, c, h * w], "channels_as_rows", "x^2 with the channels as one spatial axis")
            kernel, pads = [size, 1], [before, 0, after, 0]
        else:
            grid, kernel, pads = square, [size, size], [before, before, after, after]
        mean = b.node(
            "AveragePool",
            [grid],
            "window_mean",
            "square_sum / (the whole window's size): zeros past the edges",
            kernel_shape=kernel,
            pads=pads,
            strides=[1, 1],
            count_include_pad=1,
        )
        if desc["CrossChannel"]:
            mean = b.reshape(mean, [n, c, h, w], "square_mean", "back to [N, C, H, W]")
        # Alpha / LocalSize * square_sum = Alpha * (window elements / LocalSize) * mean
        elements = size if desc["CrossChannel"] else size * size
        k = float(np.float32(desc["Alpha"])) * elements / size
        scaled = b.node("Mul", [mean, b.scalar(k, dtypes.FLOAT32, "alpha")], "alpha_sum", "Alpha / LocalSize * square_sum")
        base = b.node("Add", [scaled, b.scalar(desc["Bias"], dtypes.FLOAT32, "bias")], "plus_bias", "Bias + ...")
        power = b.node("Pow", [base, b.scalar(desc["Beta"], dtypes.FLOAT32, "beta")], "power", "(Bias + ...)^Beta")
        y = b.node("Div", [x, power], "normalized", "x / (Bias + Alpha / LocalSize * square_sum)^Beta")
    return y if native else b.cast(y, dtype, "to_float16", "result in FLOAT16")


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    """The page's formula in FLOAT64: the sums over the clipped windows, by cumulative sums."""
    x = inputs["InputTensor"].astype(np.float64)
    before, after = window(desc["LocalSize"])
    square = x * x
    axes = (1,) if desc["CrossChannel"] else (2, 3)
    total = square
    for axis in axes:
        length = x.shape[axis]
        padded = np.concatenate([np.zeros_like(np.take(total, [0], axis=axis)), np.cumsum(total, axis=axis)], axis=axis)
        hi = np.minimum(np.arange(length) + after + 1, length)
        lo = np.maximum(np.arange(length) - before, 0)
        total = np.take(padded, hi, axis=axis) - np.take(padded, lo, axis=axis)
    a, beta, bias = (float(np.float32(desc[k])) for k in ("Alpha", "Beta", "Bias"))
    with np.errstate(all="ignore"):
        y = x / (bias + a / desc["LocalSize"] * total) ** beta
    return y.astype(inputs["InputTensor"].dtype)


def examples(op: OperatorSchema) -> list[common.Example]:
    """onnx_ops: each type, across channels (LRN applies) and within channels."""
    out = []
    for t in common.example_types(op, "InputTensor"):
        x = common.example_tensor(t, [2, 3, 4, 5])
        for cross in (True, False):
            out.append(
                {
                    "InputTensor": x,
                    "OutputTensor": x,
                    "CrossChannel": cross,
                    "LocalSize": 3,
                    "Alpha": 1e-4,
                    "Beta": 0.75,
                    "Bias": 1.0,
                }
            )
    return out


OPERATOR_FAMILY = Family(
    ("LOCAL_RESPONSE_NORMALIZATION",),
    validate,
    lower,
    reference,
    CANDIDATES,
    applies=applies,
    choose=choose,
    dml_preference=DML_PREFERENCE,
    examples=examples,
)
