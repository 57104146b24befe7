"""The shape of DirectML's operator table: feature levels, field kinds, fields, "Tensor support"
tables and operator schemas (the rows themselves are generated: operator_table.py).

Each row names the desc's fields exactly as in directml.h, in struct order, with their kind.
The table drives JSON parsing, bind points (input/output tensor fields) and the generic
validation (required fields, counts, enum values, and per feature level the dimension counts and
data types of each page's "Tensor support" tables); each operator's family (ops/) adds its own rules.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from dml2onnx.core.dtypes import DataType

# directml.h's DML_FEATURE_LEVEL values, oldest first, with the DirectML release that brought each.
LEVELS: dict[str, str] = {
    "1_0": "1.0.0",
    "2_0": "1.1.0",
    "2_1": "1.2.0",
    "3_0": "1.4.0",
    "3_1": "1.5.0",
    "4_0": "1.6.0",
    "4_1": "1.7.0",
    "5_0": "1.8.0",
    "5_1": "1.9.0",
    "5_2": "1.10.0",
    "6_0": "1.11.0",
    "6_1": "1.12.0",
    "6_2": "1.13.0",
    "6_3": "1.15.0",
    "6_4": "1.15.0",
}
NEWEST_LEVEL = next(reversed(LEVELS))


def level_key(level: str) -> tuple[int, int]:
    major, minor = level.split("_")
    return int(major), int(minor)


class Kind(Enum):
    INPUT = "input tensor"  # DML_TENSOR_DESC* bound to an input resource
    OUTPUT = "output tensor"  # DML_TENSOR_DESC* bound to an output resource
    UINT = "UINT"
    UINT_ARRAY = "UINT array"  # length given by the field named in `count_of` of its COUNT field
    COUNT = "UINT count"  # AxisCount: the length of another array field
    ENUM = "enum"
    BOOL = "BOOL"
    FLOAT = "FLOAT"
    ACTIVATION = "fused activation"  # const DML_OPERATOR_DESC*, an activation with null tensors
    # The kinds below appear only in operators that are not lowered yet (operator_table.py lists
    # every DirectML operator); descpack.py knows their C layouts.
    INPUT_ARRAY = "input tensor array"  # const DML_TENSOR_DESC* to `count` descs (JOIN's InputTensors)
    OUTPUT_ARRAY = "output tensor array"  # likewise for outputs (SPLIT's OutputTensors)
    INT = "INT"
    UINT64 = "UINT64"
    INT_ARRAY = "INT array"  # const INT*, length given by the field named in `count`
    FLOAT_ARRAY = "FLOAT array"  # const FLOAT*, likewise
    ACTIVATION_ARRAY = "operator desc array"  # const DML_OPERATOR_DESC* to `count` descs (RNN's ActivationDescs)
    SCALE_BIAS = "scale bias"  # const DML_SCALE_BIAS* {FLOAT Scale; FLOAT Bias}: f(x * Scale + Bias)
    SIZE_2D = "size 2D"  # DML_SIZE_2D {UINT Width; UINT Height}, by value
    SCALAR_UNION = "scalar union"  # DML_SCALAR_UNION: 8 bytes holding a value of the type in `data_type`


@dataclass(frozen=True)
class Field:
    name: str
    kind: Kind
    optional: bool = False
    enum: str | None = None  # key into ENUMS for Kind.ENUM
    array: str | None = None  # for Kind.COUNT: the (first) array field it counts
    count: str | None = None  # for array kinds: the COUNT field that holds its length
    data_type: str | None = None  # for Kind.SCALAR_UNION: the DML_TENSOR_DATA_TYPE field giving its type


@dataclass(frozen=True)
class TensorSupport:
    ranks: tuple[int, int]  # supported dimension counts, lowest and highest
    types: tuple[DataType, ...]


@dataclass(frozen=True)
class SupportTable:
    """One "Tensor support" table of a doc page: it holds from `level` up to the next newer table."""

    level: str  # "3_0" for "DML_FEATURE_LEVEL_3_0 and above"
    tensors: dict[str, TensorSupport]
    functions: tuple[str, ...] = ()  # DML_OPERATOR_REDUCE: the functions it is for (empty: every one)


@dataclass(frozen=True)
class OperatorSchema:
    name: str  # short form, e.g. "ARGMAX"
    fields: tuple[Field, ...]
    feature_level: str  # the DML_FEATURE_LEVEL that introduced it
    support: tuple[SupportTable, ...] = field(default=())  # newest first
    fusable: bool = False  # may appear as a FusedActivation

    @property
    def full_name(self) -> str:
        return f"DML_OPERATOR_{self.name}"

    def field(self, name: str) -> Field:
        return next(f for f in self.fields if f.name == name)

    def tensor_of(self, kind: Kind) -> tuple[Field, ...]:
        return tuple(f for f in self.fields if f.kind is kind)

    def types(self, tensor: str, function: str | None = None) -> tuple[DataType, ...]:
        """The data types `tensor` takes at the newest feature level."""
        return next(t for t in self.support if not t.functions or function in t.functions).tensors[tensor].types


ENUMS: dict[str, dict[str, int]] = {
    "DML_AXIS_DIRECTION": {"INCREASING": 0, "DECREASING": 1},
    "DML_REDUCE_FUNCTION": {
        f: i
        for i, f in enumerate(
            ("ARGMAX", "ARGMIN", "AVERAGE", "L1", "L2", "LOG_SUM", "LOG_SUM_EXP", "MAX", "MIN", "MULTIPLY", "SUM", "SUM_SQUARE")
        )
    },
    "DML_TENSOR_TYPE": {"BUFFER": 1},
    "DML_TENSOR_FLAGS": {"NONE": 0, "OWNED_BY_DML": 1},
}


# Fused activations DirectML takes beyond the pages' list, and the operators it takes them in
# (every ACTIVATION_* tried as GEMM's, CONVOLUTION's, ELEMENT_WISE_ADD1's and MVN1's
# FusedActivation through DirectML 1.15's API: only these created an operator). ONNX Runtime's
# DirectML EP fuses a MatMul's Softmax into GEMM this way (attention).
FUSED_ONLY_INTO: dict[str, tuple[str, ...]] = {"ACTIVATION_SOFTMAX1": ("GEMM",)}


def enum_value(enum: str, text: str) -> str | None:
    """The short name of `text` in `enum` (full or short form), or None."""
    prefix = enum + "_"
    short = text[len(prefix) :] if text.startswith(prefix) else text
    return short if short in ENUMS[enum] else None
