"""DML_OPERATOR_CUMULATIVE_SUMMATION and DML_OPERATOR_CUMULATIVE_PRODUCT: the running sum (product)
along Axis, in ascending element order (AxisDirection INCREASING) or descending (DECREASING);
with HasExclusiveSum / HasExclusiveProduct each output leaves its own element out (the first
output is then 0, or 1). OutputTensor has InputTensor's Sizes and DataType.

What the pages leave open, as DirectML's own API computed it (README: CUMULATIVE_*):
- integers wrap modulo 2**bits, sums and products alike, signed and unsigned (INT32 2**31 - 1
  + 1 is -2**31; a product of factors of 2**16 becomes 0), 64-bit ones exactly beyond 2**53;
- FLOAT32 is accumulated in order, one element after the other (2**24 + 0.1 + 0.1 + ... stays
  2**24); FLOAT16 is accumulated in FLOAT32 and converted once (lavapipe truncates there: 2048 +
  3 x 1 is 2050): a sum past 65504 is inf in that output but the next output may be finite again
  (60000, 10000, -20000 gives 6e4, inf, 5e4); IEEE infinities and NaN as usual (inf * 0 is NaN).

The lowering ("scan"): a Hillis-Steele scan of ceil(log2 n) steps, each y = y + shifted(y) (or
*), the shift a Slice of y and a Concat of the identity (0 or 1) at the start (Slice from the
other end for DECREASING); an exclusive scan shifts the input by one first. Exact for integers
(Add and Mul wrap in every EP's INT32, INT64, UINT32, UINT64). Floats are summed in a tree
order rather than DirectML's sequential one: each output of k terms errs by at most (k - 1) u
sum|x| either way (tolerances.cumulative); FLOAT16 runs in FLOAT32 and is rounded once (to
nearest: DirectML truncates). ONNX has no CumProd before opset 26 and the CPU and CUDA EPs'
CumSum lack FLOAT16 or the unsigned types, so `portable` and `cuda` scan; on the `dml` target
CUMULATIVE_SUMMATION is ONNX CumSum (exclusive, reverse), which the DirectML EP maps back onto
it (DmlOperatorCumSum.cpp; its six types are CumSum's registration there; FLOAT16 from opset 14).
The "cumsum" candidate is that node on every target, for FLOAT32, INT32 and INT64 (the CPU EP's
CumSum types; the CUDA EP's kernel sums each output's prefix in order, as DirectML does, at a
cost that grows with the axis length: no rule picks it before benchmarks do).
"""

from __future__ import annotations

import numpy as np

from .. import dtypes
from ..builder import GraphBuilder
from ..desc import OperatorDesc
from ..errors import ModelError
from ..schema import OperatorSchema
from ..targets import DML_NODE_DOC
from . import common

CANDIDATES = ("scan", "cumsum")  # choices.py
# ONNX CumSum's types on the CPU EP (the CUDA and DirectML EPs have them too): the "cumsum" candidate's
CUMSUM_TYPES = (dtypes.FLOAT32, dtypes.INT32, dtypes.INT64)
ROWS = ("CUMULATIVE_SUMMATION", "CUMULATIVE_PRODUCT")


def _product(desc: OperatorDesc) -> bool:
    return desc.schema.name == "CUMULATIVE_PRODUCT"


def exclusive(desc: OperatorDesc) -> bool:
    return bool(desc["HasExclusiveProduct"] if _product(desc) else desc["HasExclusiveSum"])


def applies(desc: OperatorDesc, candidate: str, opset: int) -> bool:
    """ "cumsum": ONNX CumSum, for CUMULATIVE_SUMMATION in a type every EP's CumSum has (the CUDA
    EP's sums each output's prefix in order, as DirectML does; its cost grows with the axis)."""
    if candidate == "cumsum":
        return desc.schema.name == "CUMULATIVE_SUMMATION" and desc.tensor("InputTensor").data_type in CUMSUM_TYPES
    return True


def validate(desc: OperatorDesc) -> None:
    rank = desc.tensor("InputTensor").rank
    if desc["Axis"] >= rank:
        raise ModelError(desc.at("Axis"), f"must be less than InputTensor's DimensionCount ({rank})")
    common.check_same_type(desc, "OutputTensor", "InputTensor")
    common.check_same_sizes(desc, "OutputTensor", "InputTensor")


# -- lowering ---------------------------------------------------------------------------------


def _shift(b: GraphBuilder, y: str, sizes: list[int], axis: int, d: int, identity: str, reverse: bool, n: int) -> str:
    if reverse:
        kept = b.slice(y, [axis], [d], [n], f"after_{d}", f"the elements from {d} on")
        parts = [kept, identity]
    else:
        kept = b.slice(y, [axis], [0], [n - d], f"before_{d}", f"the elements but the last {d}")
        parts = [identity, kept]
    return b.node("Concat", parts, f"shifted_{d}", f"moved {d} along the axis, the identity in the gap", axis=axis)


def scan(
    b: GraphBuilder, x: str, sizes: list[int], axis: int, dtype: dtypes.DataType, product: bool, reverse: bool, excl: bool
) -> str:
    """The inclusive (or exclusive) scan of x along `axis` by Add or Mul, in x's type."""
    n = sizes[axis]
    op, unit = ("Mul", 1) if product else ("Add", 0)
    identities: dict[int, str] = {}

    def identity(d: int) -> str:
        if d not in identities:
            shape = [d if i == axis else s for i, s in enumerate(sizes)]
            identities[d] = b.filled(shape, unit, dtype.numpy, f"identity_{d}", f"{unit}: the {op}'s identity")
        return identities[d]

    y = x
    if excl:
        y = _shift(b, y, sizes, axis, 1, identity(1), reverse, n) if n > 1 else identity(1)
    d = 1
    while d < n:
        moved = _shift(b, y, sizes, axis, d, identity(d), reverse, n)
        y = b.node(op, [y, moved], f"scan_{d}", f"each element {op} the one {d} before it (Hillis-Steele)")
        d *= 2
    return y


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    t = desc.tensor("InputTensor")
    x, axis, reverse = inputs["InputTensor"], desc["Axis"], desc["AxisDirection"] == "DECREASING"
    # CumSum takes FLOAT16 from opset 14 (CumSum-14)
    dml_node = b.target.dml_nodes and not _product(desc) and (b.opset >= 14 or t.data_type != dtypes.FLOAT16)
    if dml_node or b.variant == "cumsum":
        doc = DML_NODE_DOC if dml_node else "ONNX CumSum: the running sum, its direction and exclusivity as attributes"
        return b.node("CumSum", [x, b.i64(axis, "axis")], "cumsum", doc, exclusive=int(exclusive(desc)), reverse=int(reverse))
    work = dtypes.FLOAT32 if t.data_type == dtypes.FLOAT16 else t.data_type
    if work != t.data_type:
        x = b.cast(x, work, "in_float32", "FLOAT16 accumulated in FLOAT32, as DirectML does")
    y = scan(b, x, list(t.sizes), axis, work, _product(desc), reverse, exclusive(desc))
    if work != t.data_type:
        y = b.cast(y, t.data_type, "as_float16", "rounded once to FLOAT16")
    return y


# -- reference --------------------------------------------------------------------------------


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    """The page: the running sum or product along the axis, in its direction, without the element
    itself when exclusive. Integers in their own type (wrapping); floats in FLOAT64, rounded once."""
    x = np.asarray(inputs["InputTensor"])
    axis, reverse = desc["Axis"], desc["AxisDirection"] == "DECREASING"
    work = np.float64 if x.dtype.kind == "f" else x.dtype
    v = np.flip(x, axis) if reverse else x
    fn = np.cumprod if _product(desc) else np.cumsum
    with np.errstate(over="ignore", invalid="ignore"):
        y = fn(v.astype(work), axis=axis, dtype=work)
        if exclusive(desc):
            unit = np.ones_like(np.take(y, [0], axis)) if _product(desc) else np.zeros_like(np.take(y, [0], axis))
            y = np.concatenate([unit, np.take(y, range(y.shape[axis] - 1), axis)], axis)
        y = y.astype(x.dtype)
    return np.flip(y, axis) if reverse else y


def examples(op: OperatorSchema) -> list[common.Example]:
    """lowered_ops: each type, along the last axis, increasing and decreasing (exclusive)."""
    out: list[common.Example] = []
    flag = "HasExclusiveProduct" if op.name == "CUMULATIVE_PRODUCT" else "HasExclusiveSum"
    for t in common.example_types(op, "InputTensor"):
        x = common.example_tensor(t, [1, 1, 3, 4])
        out.append({"InputTensor": x, "OutputTensor": x, "Axis": 3, "AxisDirection": "INCREASING", flag: False})
        out.append({"InputTensor": x, "OutputTensor": x, "Axis": 2, "AxisDirection": "DECREASING", flag: True})
    return out
