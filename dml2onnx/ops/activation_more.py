"""The activations DirectML does not fuse: DML_OPERATOR_ACTIVATION_HARD_SWISH, ACTIVATION_SWISH
(feature level 6_2, FLOAT32/FLOAT16) and ACTIVATION_PARAMETERIZED_RELU (its SlopeTensor a second
input of the same Sizes, broadcast through zero strides; INT32/INT16/INT8 from 5_1): one Row
each on element_wise.RowTable (same DataType and Sizes, FLOAT16 computed in FLOAT32).

What the pages leave open, as DirectML's own API computed it (README: activations):
- HARD_SWISH is x * max(0, min(1, Alpha * x + Beta)) with any Alpha and Beta (the page's "typical"
  1/6 and 0.5 are no defaults: the desc's fields are required); a NaN Alpha * x + Beta (a NaN or
  infinite Alpha or Beta) clamps to 0, as HLSL's saturate does;
- SWISH is x * sigmoid(SigmoidInputScale * x) with any scale, 0 and negative ones included;
- PARAMETERIZED_RELU is x where x >= 0 (-0 and +0 stay themselves whatever the slope), else
  slope * x (NaN slopes and 0 * inf give NaN); on integers slope * x wraps to the type
  (INT8 -128 * -1 is -128). SlopeTensor must have InputTensor's Sizes (DirectML refuses others).

The `dml` target emits PRelu (FLOAT32, FLOAT16, INT32: ONNX PRelu takes no 8/16-bit integers),
which the DirectML EP maps back onto PARAMETERIZED_RELU; ONNX HardSwish would be HARD_SWISH's with
Alpha 1/6 and Beta 0.5, but the DirectML EP registers no HardSwish, and nothing maps onto SWISH.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.ops import activations, common
from dml2onnx.ops.element_wise import Row, RowTable, _wrapping, dml_node, wrap_to
from dml2onnx.ops.family import Family

F32 = dtypes.FLOAT32
CANDIDATES = ("elementwise",)  # one lowering (choices.py)
BROADCASTS = True  # lower() takes inputs of size 1 where a buffer input repeats (lowering.py)
HARD_SIGMOID = activations.ACTIVATIONS["ACTIVATION_HARD_SIGMOID"]
SIGMOID = activations.ACTIVATIONS["ACTIVATION_SIGMOID"]


def _f32(p: dict[str, Any], *names: str) -> dict[str, float]:
    """The desc's FLOAT parameters as DirectML holds them (FLOAT32)."""
    return {n: float(np.float32(p[n])) for n in names}


def _hard_swish(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str:
    params = _f32(p, "Alpha", "Beta")
    gate = HARD_SIGMOID.lower(b, xs[0], params)
    if not all(math.isfinite(v) for v in params.values()):
        # DirectML clamps a NaN Alpha * x + Beta to 0 (measured: an infinite Alpha at x = 0, a NaN
        # Alpha or Beta); with finite ones only a NaN or infinite x makes it NaN, and x * gate is
        # NaN there either way
        number = b.node("Equal", [gate, gate], "gate_number", "gate == gate: false for NaN only")
        gate = b.node("Where", [number, gate, b.scalar(0.0, F32, "zero")], "gate", "a NaN gate clamped to 0")
    return b.node("Mul", [xs[0], gate], "hard_swish", "x * max(0, min(1, Alpha * x + Beta))")


def _hard_swish_reference(xs: list[np.ndarray], p: dict[str, Any]) -> np.ndarray:
    with np.errstate(all="ignore"):
        gate = HARD_SIGMOID.reference(xs[0], _f32(p, "Alpha", "Beta"))
        return xs[0] * np.where(np.isnan(gate), 0.0, gate)


def _swish(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str:
    """x / (1 + exp(-SigmoidInputScale * x)): the CUDA EP's Sigmoid is 0.5 * tanh(x / 2) + 0.5,
    whose absolute error (6e-8) far in the negative tail x then multiplies (x = -130 with scale
    0.125 gave -6.4e-6 for -1.1e-5 on an H100); Exp keeps its relative accuracy there."""
    x, scale = xs[0], _f32(p, "SigmoidInputScale")["SigmoidInputScale"]
    e = b.node(
        "Exp",
        [b.node("Mul", [x, b.scalar(-scale, F32, "minus_scale")], "scaled", "-SigmoidInputScale * x")],
        "exp",
        "exp(-SigmoidInputScale * x)",
    )
    return b.node(
        "Div",
        [x, b.node("Add", [e, b.scalar(1.0, F32, "one")], "denominator", "1 + exp(...)")],
        "swish",
        "x * sigmoid(SigmoidInputScale * x)",
    )


def _swish_reference(xs: list[np.ndarray], p: dict[str, Any]) -> np.ndarray:
    scale = _f32(p, "SigmoidInputScale")["SigmoidInputScale"]
    with np.errstate(all="ignore"):
        return xs[0] * SIGMOID.reference(scale * xs[0], {})


def _prelu(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str:
    """A select, not ONNX PRelu: the CUDA EP's PRelu computes slope * x at x = 0 too, NaN for an
    infinite slope (measured on an H100), where DirectML gives x. x is Where's last input: the
    CPU EP's Where turns a -0 of its middle input into +0 (element_wise_if.select)."""
    x, slope = xs
    negative = b.node("Less", [x, b.scalar(0.0, F32, "zero")], "negative", "x < 0")
    return b.node("Where", [negative, b.node("Mul", [x, slope], "scaled", "slope * x"), x], "prelu", "slope * x if x < 0 else x")


def _prelu_reference(xs: list[np.ndarray], p: dict[str, Any]) -> np.ndarray:
    x, slope = xs
    with np.errstate(all="ignore"):
        return np.where(x >= 0, x, slope * x)


def _prelu_int(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str:
    """x where x >= 0, else slope * x wrapping, with a 0/1 select in INT32 (8/16-bit types, wrapped
    back by element_wise.wrap_to) or the type itself: the CUDA EP has no PRelu on integers."""
    dtype: dtypes.DataType = p["__dtype__"]
    ct = common.compute_type(dtype)
    x, slope = (b.cast(v, ct, f"to_int32_{i}", "in INT32") for i, v in enumerate(xs)) if ct != dtype else xs
    scaled = b.node("Mul", [x, slope], "scaled", "slope * x, wrapping")
    negative = common.flag(b, b.node("Less", [x, b.scalar(0, ct, "nought")], "negative", "x < 0"), ct, "negative_flag")
    y = common.select(b, negative, scaled, x, "prelu", "x if x >= 0 else slope * x")
    return y if ct == dtype else wrap_to(b, y, dtype)


ROWS: dict[str, Row] = {
    "ACTIVATION_HARD_SWISH": Row(
        "f(x) = x * max(0, min(1, Alpha * x + Beta))",
        _hard_swish,
        _hard_swish_reference,
        # ONNX HardSwish fixes Alpha 1/6 and Beta 0.5; the DirectML EP (1.25) registers no HardSwish,
        # so dml_ep.takes turns it down until a registry that has it is generated
        dml=dml_node(
            "HardSwish", when=lambda p: _f32(p, "Alpha", "Beta") == _f32({"Alpha": 1 / 6, "Beta": 0.5}, "Alpha", "Beta")
        ),
    ),
    "ACTIVATION_SWISH": Row("f(x) = x * sigmoid(SigmoidInputScale * x)", _swish, _swish_reference),
    "ACTIVATION_PARAMETERIZED_RELU": Row(
        "f(x, slope) = x if x >= 0 else slope * x",
        _prelu,
        _prelu_reference,
        integer=_prelu_int,
        int_reference=_wrapping(lambda x, s: x if x >= 0 else s * x),
        # ONNX PRelu takes no 8/16-bit integers (the DirectML EP would)
        dml=dml_node("PRelu", when=lambda p: p["__dtype__"] in (F32, dtypes.FLOAT16, dtypes.INT32)),
    ),
}

FAMILY = RowTable(ROWS)
validate, lower, reference = FAMILY.validate, FAMILY.lower, FAMILY.reference


OPERATOR_FAMILY = Family(
    ("ACTIVATION_HARD_SWISH", "ACTIVATION_SWISH", "ACTIVATION_PARAMETERIZED_RELU"),
    validate,
    lower,
    reference,
    CANDIDATES,
    broadcasts=True,
)
