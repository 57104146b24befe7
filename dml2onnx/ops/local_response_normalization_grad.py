"""DML_OPERATOR_LOCAL_RESPONSE_NORMALIZATION_GRAD: the backpropagation of LOCAL_RESPONSE_NORMALIZATION
(local_response_normalization.py), y = x / D^Beta with D = Bias + Alpha / LocalSize * S and S the sum
of x^2 over the element's local region (across channels with CrossChannel, else a LocalSize x
LocalSize square on H and W), over [N, C, H, W]. InputTensor is the forward's input,
InputGradientTensor the gradient of its output; all three tensors have one DataType and Sizes (the
page). The page gives no formula; what DirectML's own API computed (1.24.4 under Wine, measured
on random [2, 7, 6, 7] inputs, both CrossChannel values, LocalSize 1 to 6, negative Beta too;
tests/ops/test_local_response_normalization_grad.py pins it):

    OutputGradient = g / D^Beta - 2 Alpha Beta / LocalSize * x * R(g x / D^(Beta + 1))

with D over the forward's window (floor((LocalSize - 1) / 2) elements before the element,
ceil(...) after, clipped at the edges, Alpha divided by LocalSize in both modes: the forward's
findings), and R, the sum that carries each element's share back, over THE SAME window, not the
mirrored one: the exact derivative of the forward sums element j's term into the elements whose
window holds j, ceil before and floor after. Odd LocalSizes (a symmetric window) give the exact
derivative; an even LocalSize gives DirectML's sum, one element shifted (README's finding; the
reference follows DirectML, the page being silent). Where D is 0 (Bias 0 over a window of zeros,
or a negative Bias that the window's sum cancels), DirectML takes D^-Beta as 0, whatever Beta (0
too, where D^0 would be 1), and the element's share g x D^-Beta / D as 0: that element's output is
its second term alone, and its neighbours' sums take nothing from it (measured; IEEE arithmetic
gives infinities and NaN there). A negative D to a fractional Beta is NaN.

The lowering ("arithmetic", FLOAT32 throughout, FLOAT16 cast there and back): x^2, its window sum
by AveragePool (count_include_pad: the clipped window's sum over the whole window's size; pads of
floor and ceil of (LocalSize - 1) / 2 before and after) times the window's size, D, D^-Beta (Pow;
Where: 0 where D is 0), the two terms (Mul, Div; the share 0 where D is 0), the second window sum
the same way, Sub. Across channels the channels
become a spatial axis ([N, 1, C, H * W], a LocalSize x 1 window), as the forward's graph. The
DirectML EP registers no ONNX node that maps onto this operator (LRNGrad is a training operator
outside its registrations): every target takes this graph."""

from __future__ import annotations

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.errors import ModelError
from dml2onnx.core.schema import OperatorSchema
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.ops import common
from dml2onnx.ops.family import Family
from dml2onnx.ops.local_response_normalization import window

CANDIDATES = ("arithmetic",)  # choices.py
X, IN, OUT = "InputTensor", "InputGradientTensor", "OutputGradientTensor"
F32 = dtypes.FLOAT32


def validate(desc: OperatorDesc) -> None:
    for name in (IN, OUT):
        common.check_same_type(desc, name, X)
        common.check_same_sizes(desc, name, X)
    if desc["LocalSize"] < 1:
        raise ModelError(desc.at("LocalSize"), "must be at least 1")


def _constants(desc: OperatorDesc) -> tuple[float, float, float]:
    return tuple(float(np.float32(desc[k])) for k in ("Alpha", "Beta", "Bias"))  # type: ignore[return-value]


# -- lowering ---------------------------------------------------------------------------------


def _window_sum(desc: OperatorDesc, b: GraphBuilder, v: str, name: str) -> str:
    """The sum of v over each element's window (floor before, ceil after, clipped)."""
    n, c, h, w = desc.tensor(X).sizes
    size = desc["LocalSize"]
    before, after = window(size)
    if desc["CrossChannel"]:  # [N, 1, C, H * W]: a window of LocalSize x 1
        grid = b.reshape(v, [n, 1, c, h * w], f"{name}_channels_as_rows", "the channels as one spatial axis")
        kernel, pads, elements = [size, 1], [before, 0, after, 0], size
    else:
        grid, kernel, pads, elements = v, [size, size], [before, before, after, after], size * size
    mean = b.node(
        "AveragePool",
        [grid],
        f"{name}_window_mean",
        "the window's sum / its whole size: zeros past the edges",
        kernel_shape=kernel,
        pads=pads,
        strides=[1, 1],
        count_include_pad=1,
    )
    total = b.node("Mul", [mean, b.scalar(float(elements), F32, f"{name}_elements")], f"{name}_window_sum", "the window's sum")
    return b.reshape(total, [n, c, h, w], f"{name}_sum", "back to [N, C, H, W]") if desc["CrossChannel"] else total


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    dtype = desc.tensor(X).data_type
    x, g = (inputs[k] if dtype == F32 else b.cast(inputs[k], F32, f"{k}_float32", "in FLOAT32") for k in (X, IN))
    alpha, beta, bias = _constants(desc)
    size = desc["LocalSize"]
    square = b.node("Mul", [x, x], "squared", "x^2")
    s = _window_sum(desc, b, square, "square")
    scaled = b.node("Mul", [s, b.scalar(alpha / size, F32, "alpha")], "alpha_sum", "Alpha / LocalSize * S")
    d = b.node("Add", [scaled, b.scalar(bias, F32, "bias")], "d", "D = Bias + Alpha / LocalSize * S")
    zero = b.scalar(0.0, F32, "zero")
    flat = b.node("Equal", [d, zero], "d_zero", "D = 0: DirectML's D^-Beta and share are 0 there")
    power = b.node("Pow", [d, b.scalar(-beta, F32, "minus_beta")], "power", "D^-Beta")
    power = b.node("Where", [flat, zero, power], "scale", "D^-Beta, 0 where D is 0")
    direct = b.node("Mul", [g, power], "direct", "g D^-Beta")
    gx = b.node("Mul", [g, x], "gx", "g x")
    share = b.node("Div", [b.node("Mul", [gx, power], "gx_scaled", "g x D^-Beta"), d], "share_raw", "g x D^-Beta / D")
    share = b.node("Where", [flat, zero, share], "share", "g x / D^(Beta + 1), 0 where D is 0")
    r = _window_sum(desc, b, share, "share")
    k = b.scalar(2 * alpha * beta / size, F32, "two_alpha_beta")
    back = b.node("Mul", [b.node("Mul", [x, r], "x_r", "x R"), k], "through_d", "2 Alpha Beta / LocalSize * x * R")
    y = b.node("Sub", [direct, back], "gradient", "g D^-Beta - 2 Alpha Beta / LocalSize * x * R")
    return y if dtype == F32 else b.cast(y, dtype, "output", f"in {dtype}")


# -- reference --------------------------------------------------------------------------------


def window_sums(v: np.ndarray, cross: bool, size: int) -> np.ndarray:
    """The sum of v over each element's window (floor before, ceil after, clipped): the window's
    shifted copies of v, zeros past the edges, added along C (cross channel) or H and W."""
    before, after = window(size)
    total = v
    for axis in (1,) if cross else (2, 3):
        widths = [(before, after) if a == axis else (0, 0) for a in range(v.ndim)]
        padded = np.pad(total, widths)
        at = np.arange(v.shape[axis])
        total = sum(np.take(padded, at + k, axis=axis) for k in range(before + after + 1))
    return total


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    """DirectML's formula (the module's docstring) in FLOAT64, rounded once."""
    x, g = (inputs[k].astype(np.float64) for k in (X, IN))
    alpha, beta, bias = _constants(desc)
    size, cross = desc["LocalSize"], desc["CrossChannel"]
    with np.errstate(all="ignore"):
        d = bias + alpha / size * window_sums(x * x, cross, size)
        scale = np.where(d == 0, 0.0, d**-beta)
        share = np.where(d == 0, 0.0, g * x * scale / d)
        y = g * scale - 2 * alpha * beta / size * x * window_sums(share, cross, size)
    return y.astype(inputs[X].dtype)


def examples(op: OperatorSchema) -> list[common.Example]:
    """onnx_ops: each type, across channels and within channels."""
    out = []
    for t in common.example_types(op, X):
        x = common.example_tensor(t, [2, 3, 4, 5])
        for cross in (True, False):
            fields = {X: x, IN: x, OUT: x, "CrossChannel": cross, "LocalSize": 3, "Alpha": 1e-4, "Beta": 0.75, "Bias": 1.0}
            out.append(fields)
    return out


OPERATOR_FAMILY = Family(("LOCAL_RESPONSE_NORMALIZATION_GRAD",), validate, lower, reference, CANDIDATES, examples=examples)
