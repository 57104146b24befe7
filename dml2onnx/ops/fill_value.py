"""DML_OPERATOR_FILL_VALUE_CONSTANT and DML_OPERATOR_FILL_VALUE_SEQUENCE: an OutputTensor (no
input) filled with Value, or with element i (in row-major order of the coordinates) =
ValueStart + i * ValueDelta. The scalar unions have ValueDataType, which must be the output's.

What DirectML computes where the page's pseudocode (`Value += Delta`) leaves it open (measured
through its API, README: fills): not an accumulation; FLOAT32 and FLOAT16 compute
start + float(i) * delta in FLOAT32 (FLOAT16 rounds that once), integers wrap modulo 2**bits
(UINT8 10 with delta 254 is 10, 8, 6, ...; INT8 counts 127, -128, -127).
"""

from __future__ import annotations

import math

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.errors import ModelError
from dml2onnx.core.schema import OperatorSchema
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.ops import common
from dml2onnx.ops.family import Family

CANDIDATES = ("elementwise",)  # one lowering (choices.py)
ROWS = ("FILL_VALUE_CONSTANT", "FILL_VALUE_SEQUENCE")
SCALARS = {"FILL_VALUE_CONSTANT": ("Value",), "FILL_VALUE_SEQUENCE": ("ValueStart", "ValueDelta")}


def validate(desc: OperatorDesc) -> None:
    value_type, out = desc["ValueDataType"], desc.tensor("OutputTensor").data_type
    if value_type != out.name:
        raise ModelError(desc.at("ValueDataType"), f"must be OutputTensor's DataType ({out}), not {value_type}")


def _bits64(v: np.generic) -> int:
    """An integer scalar as the INT64 with the same value modulo 2**64."""
    w = int(v) % (1 << 64)
    return w - (1 << 64) if w >= 1 << 63 else w


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    out = desc.tensor("OutputTensor")
    t, sizes = out.data_type, out.sizes
    if desc.schema.name == "FILL_VALUE_CONSTANT":
        return b.filled(sizes, desc["Value"], t.numpy, "fill", "Value everywhere")
    start, delta = desc["ValueStart"], desc["ValueDelta"]
    count = math.prod(sizes)
    zero, one = b.i64(0, "zero"), b.i64(1, "one")
    i = b.node("Range", [zero, b.i64(count, "count"), one], "index", "i: each element's row-major index")
    if t.is_float:
        f32 = dtypes.FLOAT32
        fi = b.cast(i, f32, "index_float32", "i in FLOAT32")
        y = b.node("Mul", [fi, b.scalar(float(delta), f32, "delta")], "steps", "i * ValueDelta")
        y = b.node("Add", [y, b.scalar(float(start), f32, "start")], "sequence", "ValueStart + i * ValueDelta")
        if t != f32:
            y = b.cast(y, t, "to_float16", "rounded once to FLOAT16")
    else:
        y = b.node("Mul", [i, b.i64(_bits64(delta), "delta")], "steps", "i * ValueDelta modulo 2**64")
        y = b.node("Add", [y, b.i64(_bits64(start), "start")], "sequence", "ValueStart + i * ValueDelta modulo 2**64")
        if t != dtypes.INT64:
            y = b.cast(y, t, f"to_{t.name.lower()}", f"the low {t.size * 8} bits: wrapping, as {t}")
    return b.reshape(y, sizes, "output_shape", "the output's dimensions")


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    out = desc.tensor("OutputTensor")
    t, sizes = out.data_type, out.sizes
    if desc.schema.name == "FILL_VALUE_CONSTANT":
        return np.full(sizes, desc["Value"], dtype=t.numpy)
    start, delta = desc["ValueStart"], desc["ValueDelta"]
    count = math.prod(sizes)
    if t.is_float:
        i = np.arange(count, dtype=np.float64).astype(np.float32)
        with np.errstate(over="ignore", invalid="ignore"):
            y = np.float32(start) + i * np.float32(delta)
            return y.astype(t.numpy).reshape(sizes)
    bits = t.size * 8
    values = [(int(start) + k * int(delta)) % (1 << bits) for k in range(count)]
    if t.is_signed:
        values = [v - (1 << bits) if v >= 1 << (bits - 1) else v for v in values]
    return np.array(values, dtype=object).astype(t.numpy).reshape(sizes)


def examples(op: OperatorSchema) -> list[common.Example]:
    """onnx_ops: each output type, its scalar unions 1."""
    return [
        {"OutputTensor": common.example_tensor(t, [2, 3, 4, 5]), "ValueDataType": t} | dict.fromkeys(SCALARS[op.name], 1)
        for t in common.example_types(op, "OutputTensor")
    ]


OPERATOR_FAMILY = Family(
    ("FILL_VALUE_CONSTANT", "FILL_VALUE_SEQUENCE"), validate, lower, reference, CANDIDATES, examples=examples
)
