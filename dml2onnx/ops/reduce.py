"""DML_OPERATOR_REDUCE: one DML_REDUCE_FUNCTION over the joint Axes, which keep size 1.

ARGMAX/ARGMIN give the first extreme index, counted in row-major order of the reduced axes (as
DML_OPERATOR_ARGMAX/ARGMIN with INCREASING, which the docs call equivalent). LOG_SUM is the
natural log. Integer SUM, MULTIPLY, SUM_SQUARE and L1 wrap around modulo 2**bits (two's
complement), as GPU integer arithmetic does: the docs say nothing about overflow, so this is an
assumption; L1 of an unsigned type is the SUM, and |INT_MIN| wraps to INT_MIN.

Why the lowering looks as it does:
- Float functions run ONNX Reduce* in FLOAT32 (FLOAT16 is cast up once and the result cast back
  once): every EP registers FLOAT32 for all of them.
- The CUDA EP's integer Reduce* cast to FLOAT32 inside (reduction_ops.cc), which is inexact past
  2**24, so integer sums and products are a tree of element-wise Add/Mul in the tensor's own type
  (exact and wrapping on every EP), and 32/64-bit MAX/MIN pick the element with the exact integer
  ranking of argmax.py + GatherElements (ONNX Runtime 1.31's CPU INT64 ReduceMax/Min are wrong in
  [2**31, 2**32)). 8/16-bit integers are exact in FLOAT32, so their MAX/MIN reduce there.

AxisCount 0 (no Axes): ONNX Runtime's DirectML EP writes it for Einsums that only permute or take
a diagonal ("ii->i", "abc->cab": SUM over a strided InputTensor view, sizes (4,) strides (5,)) and
for ReduceSum with noop_with_empty_axes. DirectML's CreateOperator takes it for every function
(and the types each function's table allows), with OutputTensor's Sizes those of InputTensor
(E_INVALIDARG otherwise), and computes each function over a one-element reduction (measured
through its API, tests/ops/test_reduce_no_axes.py): SUM, MULTIPLY, AVERAGE, MAX, MIN copy x
(MAX/MIN: NaN gives -inf/+inf, the NaN finding of README), LOG_SUM_EXP log(exp(x)) (x, to FLOAT32
precision: -2.4999998 for -2.5), L1 and L2 |x|, SUM_SQUARE x * x (integers wrap: 100000 gives
1410065408 in INT32), LOG_SUM log(x), ARGMAX and ARGMIN 0. The lowering writes those element-wise
(`_lower_no_axes`)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.schema import OperatorSchema, SupportTable
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.ops import common
from dml2onnx.ops.argmax import arg_index, lower_arg
from dml2onnx.ops.family import Family

ARG_FUNCTIONS = ("ARGMAX", "ARGMIN")

# function -> ONNX op, run in FLOAT32 for float tensors
_FLOAT_OPS = {
    "AVERAGE": "ReduceMean",
    "L1": "ReduceL1",
    "L2": "ReduceL2",
    "LOG_SUM": "ReduceLogSum",
    "LOG_SUM_EXP": "ReduceLogSumExp",
    "MAX": "ReduceMax",
    "MIN": "ReduceMin",
    "MULTIPLY": "ReduceProd",
    "SUM": "ReduceSum",
    "SUM_SQUARE": "ReduceSumSquare",
}

# AxisCount 0: the functions whose value over one element is the element
_COPIES = ("SUM", "MULTIPLY", "AVERAGE", "MAX", "MIN", "LOG_SUM_EXP")
_SMALL_INTEGERS = (dtypes.INT16, dtypes.INT8, dtypes.UINT16, dtypes.UINT8)  # exact in FLOAT32


def validate(desc: OperatorDesc) -> None:
    axes = common.check_axes(desc, desc.tensor("InputTensor").rank, allow_empty=True)
    common.check_reduced_sizes(desc, axes)
    if desc["Function"] not in ARG_FUNCTIONS:  # ARGMAX/ARGMIN: the table allows integral outputs only
        common.check_same_type(desc, "OutputTensor", "InputTensor")


# The candidate lowerings (choices.py): each function's graph over the axes where they are
# (in_place), or ARGMAX/ARGMIN's search after moving the axes last (last_axis).
CANDIDATES = ("in_place", "last_axis")


def applies(desc: OperatorDesc, candidate: str, opset: int) -> bool:
    """`last_axis` (move the reduced axes last before ArgMax) only for ARGMAX/ARGMIN whose axes are
    not already the trailing ones; the other functions reduce where the axes are."""
    if candidate != "last_axis":
        return True
    axes = desc["Axes"]
    return bool(axes) and desc["Function"] in ARG_FUNCTIONS and max(axes) != desc.tensor("InputTensor").rank - 1


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    x, function = desc.tensor("InputTensor"), desc["Function"]
    axes = tuple(sorted(desc["Axes"]))
    if not axes:
        return _lower_no_axes(desc, b, inputs["InputTensor"])
    if function in ARG_FUNCTIONS:
        return lower_arg(desc, b, inputs["InputTensor"], minimum=function == "ARGMIN", last=False)
    if x.data_type.is_float or (function in ("MAX", "MIN") and x.data_type in _SMALL_INTEGERS):
        return _in_float32(b, inputs["InputTensor"], x.data_type, _FLOAT_OPS[function], axes, function)
    if function in ("MAX", "MIN"):
        return _integer_extreme(desc, b, inputs["InputTensor"], axes, function == "MIN")
    return _integer_fold(desc, b, inputs["InputTensor"], axes, function)


def _lower_no_axes(desc: OperatorDesc, b: GraphBuilder, x: str) -> str:
    """AxisCount 0: the function of each element alone, as DirectML computes it (module docstring)."""
    t, out, function = desc.tensor("InputTensor"), desc.tensor("OutputTensor"), desc["Function"]
    if function in ARG_FUNCTIONS:
        return b.filled(list(out.sizes), 0, out.data_type.numpy, "index", "0: the index within a one-element reduction")
    if function in _COPIES or (function == "L1" and not t.data_type.is_signed):
        return b.node("Identity", [x], "copy", f"{function} of one element: the element (no Axes)")
    if not t.data_type.is_float:  # L1 of a signed type, SUM_SQUARE: in the type itself, wrapping
        if function == "L1":
            return b.node("Abs", [x], "abs", "|x| (|INT_MIN| wraps to INT_MIN)")
        return b.node("Mul", [x, x], "square", "x * x (wraps)")
    wide = x if t.data_type == dtypes.FLOAT32 else b.cast(x, dtypes.FLOAT32, "to_float32", f"{t.data_type} in FLOAT32 (exact)")
    if function == "SUM_SQUARE":
        y = b.node("Mul", [wide, wide], "square", "x * x")
    else:
        y = b.node("Abs" if function in ("L1", "L2") else "Log", [wide], function.lower(), f"{function} of one element")
    return y if t.data_type == dtypes.FLOAT32 else b.cast(y, t.data_type, "to_output", f"result rounded once to {t.data_type}")


def _in_float32(b: GraphBuilder, x: str, dtype: dtypes.DataType, op: str, axes: tuple[int, ...], function: str) -> str:
    if dtype != dtypes.FLOAT32:
        x = b.cast(x, dtypes.FLOAT32, "to_float32", f"{dtype} in FLOAT32 (exact)")
    y = b.reduce(op, x, axes, function.lower(), f"{function} over axes {list(axes)}")
    return y if dtype == dtypes.FLOAT32 else b.cast(y, dtype, "to_output", f"result rounded once to {dtype}")


def _integer_extreme(desc: OperatorDesc, b: GraphBuilder, x: str, axes: tuple[int, ...], minimum: bool) -> str:
    """32/64-bit integer MAX/MIN: the element at the exact first extreme index."""
    t = desc.tensor("InputTensor")
    plan = common.JointAxes(t.sizes, axes)
    merged = plan.merge(b, x)
    index = arg_index(b, merged, t.data_type, plan.axis, plan.reduced_size, False, minimum, plan.innermost)
    y = b.node("GatherElements", [merged, index], "pick", f"the {'minimum' if minimum else 'maximum'} itself", axis=plan.axis)
    return plan.restore(b, y, desc.tensor("OutputTensor").sizes)


def _integer_fold(desc: OperatorDesc, b: GraphBuilder, x: str, axes: tuple[int, ...], function: str) -> str:
    """Integer SUM/MULTIPLY/SUM_SQUARE/L1 modulo 2**bits: halve the merged axis with element-wise
    Add (Mul) until one element is left; an odd element out is carried by a Concat."""
    t = desc.tensor("InputTensor")
    if function == "SUM_SQUARE":
        x = b.node("Mul", [x, x], "square", "x * x (wraps)")
    elif function == "L1" and t.data_type.is_signed:
        x = b.node("Abs", [x], "abs", "|x| (|INT_MIN| wraps to INT_MIN)")
    plan = common.JointAxes(t.sizes, axes)
    y, n = plan.merge(b, x), plan.reduced_size
    op = "Mul" if function == "MULTIPLY" else "Add"
    while n > 1:
        half = n // 2
        first = _part(b, y, plan.axis, 0, half, f"first{n}")
        second = _part(b, y, plan.axis, half, 2 * half, f"second{n}")
        folded = b.node(op, [first, second], f"fold{n}", f"{n} -> {half + n % 2} elements along the merged axis")
        if n % 2:
            odd = _part(b, y, plan.axis, n - 1, n, f"odd{n}")
            folded = b.node("Concat", [folded, odd], f"carry{n}", "the odd element rides along", axis=plan.axis)
        y, n = folded, half + n % 2
    return plan.restore(b, y, desc.tensor("OutputTensor").sizes)


def _part(b: GraphBuilder, x: str, axis: int, start: int, end: int, step: str) -> str:
    return b.slice(x, [axis], [start], [end], step, f"elements [{start}, {end}) of the merged axis")


# -- reference --------------------------------------------------------------------------------


def _wrap(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Python integers -> `dtype` modulo 2**bits (two's complement)."""
    bits = 8 * dtype.itemsize
    signed = np.issubdtype(dtype, np.signedinteger)

    def one(v: int) -> int:
        v %= 2**bits
        return v - 2**bits if signed and v >= 2 ** (bits - 1) else v

    return np.array([one(int(v)) for v in values.ravel()], dtype=object).astype(dtype).reshape(values.shape)


_INTEGER_REFERENCE: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "SUM": lambda f: f.sum(axis=1),
    "MULTIPLY": lambda f: np.array([int(np.prod(row)) if row.size else 1 for row in f], dtype=object),
    "SUM_SQUARE": lambda f: (f * f).sum(axis=1),
    "L1": lambda f: np.abs(f).sum(axis=1),
    "MAX": lambda f: f.max(axis=1),
    "MIN": lambda f: f.min(axis=1),
}


def _log_sum_exp(f: np.ndarray) -> np.ndarray:
    m = f.max(axis=1)
    finite = np.isfinite(m)
    shifted = np.where(finite, m, 0)
    return np.where(finite, shifted + np.log(np.exp(f - shifted[:, None]).sum(axis=1)), m)


_FLOAT_REFERENCE: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "AVERAGE": lambda f: f.sum(axis=1) / f.shape[1],
    "L1": lambda f: np.abs(f).sum(axis=1),
    "L2": lambda f: np.sqrt((f * f).sum(axis=1)),
    "LOG_SUM": lambda f: np.log(f.sum(axis=1)),
    "LOG_SUM_EXP": _log_sum_exp,
    "MAX": lambda f: f.max(axis=1),
    "MIN": lambda f: f.min(axis=1),
    "MULTIPLY": lambda f: f.prod(axis=1),
    "SUM": lambda f: f.sum(axis=1),
    "SUM_SQUARE": lambda f: (f * f).sum(axis=1),
}


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    """The doc's formulas on the reduced elements in row-major order: floats in FLOAT64, integers
    as exact Python integers wrapped to the output type."""
    x, function = inputs["InputTensor"], desc["Function"]
    out = desc.tensor("OutputTensor")
    flat, _ = common.merge_axes_reference(x, desc["Axes"])
    if function in ARG_FUNCTIONS:
        y = np.argmax(flat, axis=1) if function == "ARGMAX" else np.argmin(flat, axis=1)
    elif x.dtype.kind == "f":
        with np.errstate(all="ignore"):
            y = _FLOAT_REFERENCE[function](flat.astype(np.float64))
    else:
        y = _wrap(_INTEGER_REFERENCE[function](flat.astype(object)), x.dtype)
    with np.errstate(over="ignore"):  # a FLOAT64 result beyond the FLOAT32/FLOAT16 range becomes inf
        return y.astype(out.data_type.numpy).reshape(out.sizes)


def examples(op: OperatorSchema) -> list[common.Example]:
    """onnx_ops: every function of the page's newest table for it, with every input type."""
    out = []
    for table in newest_per_function_group(op):
        for function in table.functions:
            arg = function in ("ARGMAX", "ARGMIN")
            index = table.tensors["OutputTensor"].types[0].name
            for d in table.tensors["InputTensor"].types:
                out.append(
                    {
                        "Function": function,
                        "InputTensor": common.example_tensor(d.name, [3, 8]),
                        "OutputTensor": common.example_tensor(index if arg else d.name, [3, 1]),
                        "AxisCount": 1,
                        "Axes": [1],
                    }
                )
    return out


def newest_per_function_group(op: OperatorSchema) -> list[SupportTable]:
    """The newest table of each function group (REDUCE's page has one group per set of functions)."""
    seen: set[tuple[str, ...]] = set()
    out = []
    for t in op.support:
        if t.functions not in seen:
            seen.add(t.functions)
            out.append(t)
    return out


OPERATOR_FAMILY = Family(("REDUCE",), validate, lower, reference, CANDIDATES, applies=applies, examples=examples)
