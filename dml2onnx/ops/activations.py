"""The activations DirectML can fuse into an operator (FusedActivation), as ONNX nodes and in
numpy. Formulas and comparison strictness are those of each activation's doc page.

Beyond the pages' list, DirectML takes ACTIVATION_SOFTMAX1 as GEMM's FusedActivation
(schema.FUSED_ONLY_INTO): a softmax over its Axes of GEMM's output, which ONNX Runtime's DirectML
EP writes for attention. It is the one activation that is not element-wise: it needs the
output's sizes (`sizes` below)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dml2onnx.core import dtypes, featurelevels
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.errors import ModelError
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.ops import common

F32 = dtypes.FLOAT32


@dataclass(frozen=True)
class Activation:
    lower: Callable[[GraphBuilder, str, dict[str, float]], str]  # on a FLOAT32 value
    reference: Callable[[np.ndarray, dict[str, float]], np.ndarray]  # float64 in, float64 out


def _c(b: GraphBuilder, value: float, step: str) -> str:
    return b.scalar(value, F32, step)


def _mul(b: GraphBuilder, x: str, k: float, step: str) -> str:
    return b.node("Mul", [x, _c(b, k, f"{step}_k")], step, f"multiplies by {k}")


def _linear(b: GraphBuilder, x: str, p: dict[str, float]) -> str:
    return b.node("Add", [_mul(b, x, p["Alpha"], "alpha_x"), _c(b, p["Beta"], "beta")], "linear", "Alpha * x + Beta")


def _scaled_tanh(b: GraphBuilder, x: str, p: dict[str, float]) -> str:
    t = b.node("Tanh", [_mul(b, x, p["Beta"], "beta_x")], "tanh", "tanh(Beta * x)")
    return _mul(b, t, p["Alpha"], "scaled_tanh")


def _celu(b: GraphBuilder, x: str, p: dict[str, float]) -> str:
    # max(0, x) + min(0, Alpha * (exp(x / Alpha) - 1)), written out: ONNX Celu is not on every EP
    a = p["Alpha"]
    e = b.node("Exp", [b.node("Div", [x, _c(b, a, "alpha")], "x_over_alpha", "x / Alpha")], "exp", "exp(x / Alpha)")
    neg = _mul(b, b.node("Sub", [e, _c(b, 1.0, "one")], "expm1", "exp(x / Alpha) - 1"), a, "alpha_expm1")
    low = b.node("Min", [neg, _c(b, 0.0, "zero")], "negative_part", "min(0, ...)")
    return b.node(
        "Add",
        [b.node("Relu", [x], "positive_part", "max(0, x)"), low],
        "celu",
        "max(0, x) + min(0, Alpha * (exp(x / Alpha) - 1))",
    )


def _softplus(b: GraphBuilder, x: str, p: dict[str, float]) -> str:
    s = p["Steepness"]
    y = b.node("Softplus", [_mul(b, x, s, "steep_x")], "softplus", "ln(1 + exp(Steepness * x))")
    return b.node("Div", [y, _c(b, s, "steepness")], "over_steepness", "/ Steepness")


def _parametric_softplus(b: GraphBuilder, x: str, p: dict[str, float]) -> str:
    y = b.node("Softplus", [_mul(b, x, p["Beta"], "beta_x")], "softplus", "ln(1 + exp(Beta * x))")
    return _mul(b, y, p["Alpha"], "parametric_softplus")


def _gelu(b: GraphBuilder, x: str, p: dict[str, float]) -> str:
    # Div by sqrt(2), Erf, Add 1, Mul by 0.5 * x: the exact pattern ONNX Runtime's GeluFusion turns
    # into one Gelu kernel on the CPU and CUDA EPs (a Mul by 1/sqrt(2) kept five kernels)
    scaled = b.node("Div", [x, _c(b, math.sqrt(2), "sqrt2")], "x_over_sqrt2", "x / sqrt(2)")
    erf = b.node("Erf", [scaled], "erf", "erf(x / sqrt(2))")
    half_x = _mul(b, x, 0.5, "half_x")
    return b.node(
        "Mul",
        [half_x, b.node("Add", [erf, _c(b, 1.0, "one")], "one_plus_erf", "1 + erf(x / sqrt(2))")],
        "gelu",
        "0.5 * x * (1 + erf(x / sqrt(2)))",
    )


def _single(op: str, doc: str, **attrs: str) -> Callable[[GraphBuilder, str, dict[str, float]], str]:
    """An ONNX op with the same formula; attrs maps ONNX attribute -> DML field."""

    def lower(b: GraphBuilder, x: str, p: dict[str, float]) -> str:
        return b.node(op, [x], op.lower(), doc, **{k: p[v] for k, v in attrs.items()})

    return lower


_onnx_shrink = _single("Shrink", "x - Bias if x > Threshold, x + Bias if x < -Threshold, else 0", bias="Bias", lambd="Threshold")


def _shrink(b: GraphBuilder, x: str, p: dict[str, float]) -> str:
    if p["Threshold"] >= 0:  # the two ranges are disjoint: ONNX Shrink's order does not matter
        return _onnx_shrink(b, x, p)
    # A negative Threshold: x > Threshold wins where both hold (the page's order; ONNX Shrink
    # tests x < -lambd first)
    t = p["Threshold"]
    above = b.node("Greater", [x, _c(b, t, "threshold")], "above", "x > Threshold")
    below = b.node("Less", [x, _c(b, -t, "minus_threshold")], "below", "x < -Threshold")
    low = b.node("Add", [x, _c(b, p["Bias"], "bias")], "plus_bias", "x + Bias")
    high = b.node("Sub", [x, _c(b, p["Bias"], "bias")], "minus_bias", "x - Bias")
    rest = b.node("Where", [below, low, _c(b, 0.0, "zero")], "low_or_zero", "x + Bias if x < -Threshold else 0")
    return b.node("Where", [above, high, rest], "shrink", "x - Bias if x > Threshold, else the rest")


def _erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def _softplus_ref(x: np.ndarray) -> np.ndarray:
    return np.logaddexp(0.0, x)


ACTIVATIONS: dict[str, Activation] = {
    "ACTIVATION_LINEAR": Activation(_linear, lambda x, p: p["Alpha"] * x + p["Beta"]),
    "ACTIVATION_SIGMOID": Activation(_single("Sigmoid", "1 / (1 + exp(-x))"), lambda x, p: 1 / (1 + np.exp(-x))),
    "ACTIVATION_HARD_SIGMOID": Activation(
        _single("HardSigmoid", "max(0, min(Alpha * x + Beta, 1))", alpha="Alpha", beta="Beta"),
        lambda x, p: np.maximum(0, np.minimum(p["Alpha"] * x + p["Beta"], 1)),
    ),
    "ACTIVATION_TANH": Activation(_single("Tanh", "tanh(x)"), lambda x, p: np.tanh(x)),
    "ACTIVATION_SCALED_TANH": Activation(_scaled_tanh, lambda x, p: p["Alpha"] * np.tanh(p["Beta"] * x)),
    "ACTIVATION_RELU": Activation(_single("Relu", "max(0, x)"), lambda x, p: np.maximum(0, x)),
    "ACTIVATION_LEAKY_RELU": Activation(
        _single("LeakyRelu", "x if x >= 0 else Alpha * x", alpha="Alpha"), lambda x, p: np.where(x >= 0, x, p["Alpha"] * x)
    ),
    "ACTIVATION_THRESHOLDED_RELU": Activation(
        _single("ThresholdedRelu", "x if x > Alpha else 0", alpha="Alpha"), lambda x, p: np.where(x > p["Alpha"], x, 0.0)
    ),
    "ACTIVATION_ELU": Activation(
        _single("Elu", "x if x >= 0 else Alpha * (exp(x) - 1)", alpha="Alpha"),
        lambda x, p: np.where(x >= 0, x, p["Alpha"] * np.expm1(np.minimum(x, 0))),
    ),
    "ACTIVATION_CELU": Activation(
        _celu, lambda x, p: np.maximum(0, x) + np.minimum(0, p["Alpha"] * np.expm1(np.minimum(x, 0) / p["Alpha"]))
    ),
    "ACTIVATION_SCALED_ELU": Activation(
        _single("Selu", "Gamma * x if x > 0 else Gamma * (Alpha * exp(x) - Alpha)", alpha="Alpha", gamma="Gamma"),
        lambda x, p: np.where(x > 0, p["Gamma"] * x, p["Gamma"] * p["Alpha"] * np.expm1(np.minimum(x, 0))),
    ),
    "ACTIVATION_SOFTPLUS": Activation(_softplus, lambda x, p: _softplus_ref(p["Steepness"] * x) / p["Steepness"]),
    "ACTIVATION_PARAMETRIC_SOFTPLUS": Activation(_parametric_softplus, lambda x, p: p["Alpha"] * _softplus_ref(p["Beta"] * x)),
    "ACTIVATION_SOFTSIGN": Activation(_single("Softsign", "x / (1 + |x|)"), lambda x, p: x / (1 + np.abs(x))),
    "ACTIVATION_IDENTITY": Activation(lambda b, x, p: x, lambda x, p: x),
    "ACTIVATION_SHRINK": Activation(
        _shrink, lambda x, p: np.where(x > p["Threshold"], x - p["Bias"], np.where(x < -p["Threshold"], x + p["Bias"], 0.0))
    ),
    "ACTIVATION_GELU": Activation(_gelu, lambda x, p: 0.5 * x * (1 + _erf(x / math.sqrt(2)))),
}


def params(act: OperatorDesc) -> dict[str, float]:
    return {k: v for k, v in act.values.items() if isinstance(v, float)}


def float32_params(act: OperatorDesc) -> dict[str, float]:
    """The parameters as DirectML holds them (FLOAT): what the lowered graph's constants are."""
    return {k: float(np.float32(v)) for k, v in params(act).items()}


_SOFTMAX1 = "ACTIVATION_SOFTMAX1"


def validate(act: OperatorDesc, sizes: tuple[int, ...] = ()) -> None:
    """Fused or standalone: the parameters' rules at act.level (a fused activation has its
    operator's level). `sizes`: the fused operator's output sizes (SOFTMAX1's Axes index them)."""
    if act.schema.name == _SOFTMAX1:
        common.check_axes(act, len(sizes))  # as a standalone SOFTMAX1's
        return
    if act.schema.name != "ACTIVATION_SOFTPLUS":
        return
    steepness = act["Steepness"]
    if steepness == 0:
        raise ModelError(act.at("Steepness"), "Steepness must not be 0 (ln(1 + exp(Steepness * x)) / Steepness)")
    if not steepness >= 1:  # "cannot be less than 1" until 6_4 allowed it
        featurelevels.require(act, "6_4", act.at("Steepness"), f"Steepness {steepness} (less than 1)")


def exact_in_half(act: OperatorDesc) -> bool:
    """Whether the activation of a FLOAT16 value, computed in FLOAT16, is what DirectML's FLOAT32
    activation gives rounded back: RELU and IDENTITY (no constant, no rounding), so a fused
    operator need not widen for them (and ONNX Runtime can fuse Conv + Relu)."""
    return act.schema.name in ("ACTIVATION_RELU", "ACTIVATION_IDENTITY")


def lower(b: GraphBuilder, x: str, act: OperatorDesc, sizes: tuple[int, ...] = ()) -> str:
    """The activation of the FLOAT32 value `x` (of `sizes`; FLOAT16 where exact_in_half)."""
    if act.schema.name == _SOFTMAX1:
        # ONNX Softmax (exp(x - max) / sum) over the axes merged into one, as softmax1.py's in_place
        plan = common.JointAxes(sizes, tuple(sorted(act["Axes"])))
        y = b.node("Softmax", [plan.merge(b, x)], "softmax", "softmax over the merged Axes", axis=plan.axis)
        return plan.unmerge(b, y)
    return ACTIVATIONS[act.schema.name].lower(b, x, params(act))


def reference(x: np.ndarray, act: OperatorDesc) -> np.ndarray:
    with np.errstate(all="ignore"):
        if act.schema.name == _SOFTMAX1:
            axes = tuple(act["Axes"])
            e = np.exp(x - np.max(x, axis=axes, keepdims=True))
            return e / np.sum(e, axis=axes, keepdims=True)
        return ACTIVATIONS[act.schema.name].reference(x, float32_params(act))
