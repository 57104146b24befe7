"""DML_OPERATOR_ELEMENT_WISE_IF: f(cond, a, b) = a where cond != 0, else b, one row in ROWS on
element_wise.py's RowTable. ConditionTensor is UINT8; ATensor, BTensor and OutputTensor share one
DataType (every type of the page's table, FLOAT64 and 64-bit integers included); all four have
the same Sizes (broadcasting is a zero stride).

What the page leaves open, as DirectML's own API computed it (README: ELEMENT_WISE_IF): any
nonzero condition selects ATensor (2, 7, 128, 255 as well as 1), and the selected element is
moved bit for bit (NaN payloads, -0, INT64/UINT64 beyond 2**53 unchanged).

The ONNX pattern: the condition cast to BOOL (nonzero is true), then Where. Where is on every EP
for FLOAT32, FLOAT16, FLOAT64, INT32, INT64 and UINT8 (the CUDA EP's where.cc); INT8, INT16 and
UINT16 are moved through INT32, UINT32 through INT64 (value-preserving Casts both ways), and
UINT64 through INT64 (a Cast modulo 2**64 both ways: the same 64 bits on every EP). ONNX
Runtime's CPU Where is no plain copy for floats (a selected -0 of its second input becomes +0,
FLOAT16 NaN payloads become 0x7E00): on the targets that run on the CPU EP (`portable`, `cpu`)
floats are gathered instead (select()); the `cuda` target keeps Where (exact on the CUDA EP).
The `dml` target's Where takes the type itself (the DirectML EP registers Where for every type
and turns it back into ELEMENT_WISE_IF).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from onnx import TensorProto

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.schema import OperatorSchema
from dml2onnx.graph import dml_ep
from dml2onnx.graph.builder import GraphBuilder, onnx_type_name
from dml2onnx.ops import common
from dml2onnx.ops.element_wise import Row, RowTable
from dml2onnx.ops.family import Family

CANDIDATES = ("elementwise",)  # one lowering (choices.py); the `dml` target takes Row.dml
BROADCASTS = True  # lower() takes inputs of size 1 where a buffer input repeats (lowering.py)

# The types every EP's Where takes (CPU, CUDA, DirectML), and the type that carries the others.
WHERE_TYPES = (dtypes.FLOAT32, dtypes.FLOAT16, dtypes.FLOAT64, dtypes.INT32, dtypes.INT64, dtypes.UINT8)
CARRIER = {
    dtypes.INT8: dtypes.INT32,
    dtypes.INT16: dtypes.INT32,
    dtypes.UINT16: dtypes.INT32,
    dtypes.UINT32: dtypes.INT64,
    dtypes.UINT64: dtypes.INT64,  # modulo 2**64: the same bits
}


def where(b: GraphBuilder, cond: str, a: str, other: str, dtype: dtypes.DataType, step: str = "select") -> str:
    """Where(cond, a, other) on `dtype` values, exact on the CUDA and DirectML EPs (and on the CPU
    EP but for a selected `a` of -0, see select): the types some EP's Where lacks go through their
    CARRIER and back (not on the `dml` target: the DirectML EP has them all)."""
    carrier = CARRIER.get(dtype)
    if carrier is None or (b.target.dml_nodes and dml_ep.takes("Where", b.opset, T=onnx_type_name(dtype.onnx))):
        return b.node("Where", [cond, a, other], step, "a where the condition holds, else the other")
    a, other = (
        b.cast(x, carrier, f"{step}_in_{carrier.name.lower()}_{i}", f"exactly, in {carrier}") for i, x in enumerate((a, other))
    )
    y = b.node("Where", [cond, a, other], step, f"a where the condition holds, else the other (in {carrier})")
    return b.cast(y, dtype, f"{step}_as_{dtype.name.lower()}", f"back to {dtype}: the same value")


def select(
    b: GraphBuilder,
    cond: str,
    a: str,
    other: str,
    dtype: dtypes.DataType,
    sizes: tuple[int, ...],
    step: str = "select",
    constant: bool = False,
) -> str:
    """`a` where the BOOL `cond` holds, else `other`, bit for bit on every EP of the target, at
    `sizes` (the operands broadcast to them). ONNX Runtime's CPU Where turns a selected `a` of -0
    into +0 (it merges `cond ? a : 0` and `cond ? 0 : other` by `x != 0 ? x : y`) and FLOAT16 NaN
    payloads into 0x7E00: floats on a target that runs on the CPU EP are gathered instead, from
    Concat(other, a) along axis 0 at row cond * sizes[0] + row (GatherElements copies the
    elements as they are, everywhere). So are `constant` operands on every target: ONNX Runtime
    folds a constant Where with its CPU kernel when it creates the session, whatever the EP."""
    if not gathers(b, dtype, constant):
        return where(b, cond, a, other, dtype, step)
    shape = b.i64(list(sizes), f"{step}_sizes")

    def full(x: str, name: str) -> str:
        if b.shapes.get(x) == tuple(sizes):  # an input at the output's sizes already
            return x
        return b.node("Expand", [x, shape], f"{step}_{name}", f"{name} at the output's sizes")

    rows = b.const(np.arange(sizes[0], dtype=np.int32).reshape((sizes[0],) + (1,) * (len(sizes) - 1)), f"{step}_rows")
    pick = b.node(
        "Mul",
        [
            b.cast(cond, dtypes.INT32, f"{step}_flag", "1 where a, 0 where the other"),
            b.scalar(sizes[0], dtypes.INT32, f"{step}_height"),
        ],
        f"{step}_offset",
        "sizes[0] where a",
    )
    index = full(b.node("Add", [pick, rows], f"{step}_index", "the row of the chosen element in Concat(other, a)"), "index")
    data = b.node("Concat", [full(other, "other"), full(a, "a")], f"{step}_both", "other above a, along axis 0", axis=0)
    return b.node(
        "GatherElements", [data, index], step, "a where the condition holds, else the other: copied as they are", axis=0
    )


def gathers(b: GraphBuilder, dtype: dtypes.DataType, constant: bool = False) -> bool:
    """Whether select() gathers (giving the output's sizes) rather than using Where (giving the
    operands' broadcast shape)."""
    return dtype.is_float and (constant or ("cpu" in b.target.runs_on and not b.target.dml_nodes))


def _truth(b: GraphBuilder, cond: str) -> str:
    return b.cast(cond, TensorProto.BOOL, "truth", "nonzero is true")


def _lower(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str:
    cond, a, other = xs
    return select(b, _truth(b, cond), a, other, p["__dtype__"], p["__sizes__"])


def _dml(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str | None:
    """Where on the type itself, which the DirectML EP turns back into ELEMENT_WISE_IF."""
    if not dml_ep.takes("Where", b.opset, T=onnx_type_name(p["__dtype__"].onnx)):
        return None
    cond, a, other = xs
    return b.node("Where", [_truth(b, cond), a, other], "where", "the node the DirectML EP maps back onto ELEMENT_WISE_IF")


def _reference(xs: list[np.ndarray], p: dict[str, Any]) -> np.ndarray:
    cond, a, other = xs
    return np.where(cond != 0, a, other)


ROWS: dict[str, Row] = {
    "ELEMENT_WISE_IF": Row(
        "f(cond, a, b) = a where cond != 0, else b",
        _lower,
        _reference,
        integer=_lower,
        int_reference=_reference,
        dml=_dml,
    ),
}


class IfFamily(RowTable):
    """The element-wise family with a UINT8 condition before the value inputs: the rows see the
    inputs as they are (no ScaleBias, no float widening: data movement only), typed by ATensor."""

    def validate(self, desc: OperatorDesc) -> None:
        for name in ("ATensor", "BTensor", "OutputTensor"):
            common.check_same_type(desc, name, "ATensor")
        for name in ("ConditionTensor", "ATensor", "BTensor"):
            common.check_same_sizes(desc, name, "OutputTensor")

    def _params(self, desc: OperatorDesc) -> dict[str, Any]:
        return {"__dtype__": desc.tensor("ATensor").data_type, "__sizes__": desc.tensor("OutputTensor").sizes}

    def lower(self, desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
        row, xs, p = self.rows[desc.schema.name], [inputs[n] for n in _NAMES], self._params(desc)
        if b.target.dml_nodes and row.dml is not None:
            y = row.dml(b, xs, p)
            if y is not None:
                return y
        return row.lower(b, xs, p)

    def reference(self, desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
        row = self.rows[desc.schema.name]
        return np.asarray(row.reference([inputs[n] for n in _NAMES], self._params(desc)))


_NAMES = ("ConditionTensor", "ATensor", "BTensor")
FAMILY = IfFamily(ROWS)
validate, lower, reference = FAMILY.validate, FAMILY.lower, FAMILY.reference


def examples(op: OperatorSchema) -> list[common.Example]:
    """onnx_ops: a UINT8 condition and each value type of the page's newest table."""
    shape = [2, 3, 4, 5]
    return [
        {"ConditionTensor": common.example_tensor("UINT8", shape)}
        | {n: common.example_tensor(t, shape) for n in ("ATensor", "BTensor", "OutputTensor")}
        for t in common.example_types(op, "OutputTensor")
    ]


OPERATOR_FAMILY = Family(("ELEMENT_WISE_IF",), validate, lower, reference, CANDIDATES, examples=examples, broadcasts=True)
