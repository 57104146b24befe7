"""The comparisons and logical operators, DML_OPERATOR_ELEMENT_WISE_LOGICAL_* with IS_NAN and
IS_INFINITY: one row each in ROWS (the page's formula, its ONNX pattern and its numpy reference),
on element_wise.py's RowTable. DirectML has no BOOL: OutputTensor is UINT8 or UINT32 (whichever the
desc says, independently of the inputs' type) holding 0 or 1.

What the pages leave open, as DirectML's own API computed it (README: comparisons and logic):
- comparisons are exact in the inputs' type: INT64/UINT64 beyond 2**53 are compared as integers
  (no float casts), signed and unsigned types by their own order, FLOAT16 as its FLOAT32 value;
  NaN compares false (EQUALS of NaN and NaN is 0), -0 equals +0;
- LOGICAL_AND/OR/XOR/NOT read any nonzero input element as true (2 AND 1 is 1, NOT 2 is 0);
- IS_NAN and IS_INFINITY look at the value only (any NaN payload, either sign).

The ONNX ops are the ones every EP has: comparisons on INT32/INT64/UINT32/UINT64/FLOAT32 (the
CUDA EP has none on 8- and 16-bit integers, which are compared as INT32, exactly), And/Or/Xor/Not
on BOOL only (the inputs cast to BOOL: nonzero is true), IsNaN and IsInf on FLOAT32 (the DirectML
EP's IsInf takes FLOAT only; FLOAT16 widens exactly), and a Cast of the BOOL result to the
output's type.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from onnx import TensorProto

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.graph import dml_ep
from dml2onnx.graph.builder import GraphBuilder, onnx_type_name
from dml2onnx.graph.targets import DML_NODE_DOC
from dml2onnx.ops import common
from dml2onnx.ops.element_wise import Lower, Row, RowTable, _binary, _ufunc, dml_node, tensor_names
from dml2onnx.ops.family import Family

BOOL = TensorProto.BOOL  # not a DirectML type: only inside the graph
CANDIDATES = ("elementwise",)  # one lowering (choices.py)
BROADCASTS = True  # lower() takes inputs of size 1 where a buffer input repeats (lowering.py)


def _compare_int(op: str, doc: str) -> Lower:
    """In the inputs' own type from 32 bits up (exact, INT64/UINT64 included); 8/16-bit types in
    INT32, which holds every one of their values (the CUDA EP compares no narrower integers)."""

    def lower(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str:
        if p["__dtype__"].size < 4:
            xs = [b.cast(x, dtypes.INT32, f"to_int32_{i}", "in INT32 (exact)") for i, x in enumerate(xs)]
        return b.node(op, xs, op.lower(), doc)

    return lower


def _comparison(formula: str, onnx_op: str, f: Any) -> Row:
    return Row(
        f"f(a, b) = {formula}",
        _binary(onnx_op, formula),
        _ufunc(f),
        integer=_compare_int(onnx_op, f"{formula}, exact"),
        int_reference=_ufunc(f),
        dml=dml_node(onnx_op),
    )


def _truth(b: GraphBuilder, xs: list[str]) -> list[str]:
    return [b.cast(x, BOOL, f"truth_{i}", "nonzero is true") for i, x in enumerate(xs)]


def _logical(onnx_op: str, formula: str, f: Any) -> Row:
    def lower(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str:
        return b.node(onnx_op, _truth(b, xs), onnx_op.lower(), formula)

    def reference(xs: list[np.ndarray], p: dict[str, Any]) -> np.ndarray:
        return f(*(x != 0 for x in xs))

    return Row(
        f"f(a, b) = {formula}" if onnx_op != "Not" else f"f(x) = {formula}",
        lower,
        reference,
        integer=lower,
        int_reference=reference,
    )


def _is_infinity(b: GraphBuilder, xs: list[str], p: dict[str, Any], doc: str = "") -> str:
    mode = p.get("InfinityMode", "EITHER")
    attrs = {"detect_positive": int(mode != "NEGATIVE"), "detect_negative": int(mode != "POSITIVE")}
    return b.node("IsInf", xs, "isinf", doc or f"isinf(x), InfinityMode {mode}", **attrs)


def _dml_is_infinity(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str | None:
    """IsInf on the input's own type, where the DirectML EP registers it (FLOAT only)."""
    if not dml_ep.takes("IsInf", b.opset, T1=onnx_type_name(p["__dtype__"].onnx)):
        return None
    return _is_infinity(b, xs, p, DML_NODE_DOC)


def _is_infinity_reference(xs: list[np.ndarray], p: dict[str, Any]) -> np.ndarray:
    x, mode = xs[0], p.get("InfinityMode", "EITHER")
    return np.isinf(x) & {"EITHER": True, "POSITIVE": x > 0, "NEGATIVE": x < 0}[mode]


ROWS: dict[str, Row] = {
    "ELEMENT_WISE_LOGICAL_EQUALS": _comparison("a == b", "Equal", np.equal),
    "ELEMENT_WISE_LOGICAL_GREATER_THAN": _comparison("a > b", "Greater", np.greater),
    "ELEMENT_WISE_LOGICAL_GREATER_THAN_OR_EQUAL": _comparison("a >= b", "GreaterOrEqual", np.greater_equal),
    "ELEMENT_WISE_LOGICAL_LESS_THAN": _comparison("a < b", "Less", np.less),
    "ELEMENT_WISE_LOGICAL_LESS_THAN_OR_EQUAL": _comparison("a <= b", "LessOrEqual", np.less_equal),
    "ELEMENT_WISE_LOGICAL_AND": _logical("And", "a && b", np.logical_and),
    "ELEMENT_WISE_LOGICAL_OR": _logical("Or", "a || b", np.logical_or),
    "ELEMENT_WISE_LOGICAL_XOR": _logical("Xor", "a != b (as truth values)", np.logical_xor),
    "ELEMENT_WISE_LOGICAL_NOT": _logical("Not", "!x", np.logical_not),
    "ELEMENT_WISE_IS_NAN": Row(
        "f(x) = isnan(x)",
        lambda b, xs, p: b.node("IsNaN", xs, "isnan", "isnan(x)"),
        _ufunc(np.isnan),
        dml=dml_node("IsNaN", label="T1"),
    ),
    "ELEMENT_WISE_IS_INFINITY": Row(
        "f(x) = isinf(x) with the sign InfinityMode asks",
        _is_infinity,
        _is_infinity_reference,
        dml=_dml_is_infinity,
    ),
}


_SAME_TYPE = ("ELEMENT_WISE_LOGICAL_AND", "ELEMENT_WISE_LOGICAL_OR", "ELEMENT_WISE_LOGICAL_XOR", "ELEMENT_WISE_LOGICAL_NOT")


class LogicalFamily(RowTable):
    """The rows compute BOOL; the output takes it as 0/1 in its own type (UINT8 or UINT32)."""

    def validate(self, desc: OperatorDesc) -> None:
        super().validate(desc)
        if desc.schema.name in _SAME_TYPE:  # DirectML's CreateOperator refuses another one (E_INVALIDARG, measured)
            common.check_same_type(desc, "OutputTensor", tensor_names(desc)[0])

    def lower(self, desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
        out = desc.tensor("OutputTensor").data_type
        return b.cast(super().lower(desc, b, inputs), out, "as_output", f"0/1 in {out}")


FAMILY = LogicalFamily(ROWS, same_output_type=False)
validate, lower, reference = FAMILY.validate, FAMILY.lower, FAMILY.reference


OPERATOR_FAMILY = Family(
    (
        "ELEMENT_WISE_LOGICAL_EQUALS",
        "ELEMENT_WISE_LOGICAL_GREATER_THAN",
        "ELEMENT_WISE_LOGICAL_GREATER_THAN_OR_EQUAL",
        "ELEMENT_WISE_LOGICAL_LESS_THAN",
        "ELEMENT_WISE_LOGICAL_LESS_THAN_OR_EQUAL",
        "ELEMENT_WISE_LOGICAL_AND",
        "ELEMENT_WISE_LOGICAL_OR",
        "ELEMENT_WISE_LOGICAL_XOR",
        "ELEMENT_WISE_LOGICAL_NOT",
        "ELEMENT_WISE_IS_NAN",
        "ELEMENT_WISE_IS_INFINITY",
    ),
    validate,
    lower,
    reference,
    CANDIDATES,
    broadcasts=True,
)
