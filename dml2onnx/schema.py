"""The one table of DirectML operator descs this tool knows.

Each row names the desc's fields exactly as in directml.h, in struct order, with their kind.
The table drives JSON parsing, bind points (input/output tensor fields) and the generic
validation (required fields, counts, enum values); each operator's module adds its own rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


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


@dataclass(frozen=True)
class Field:
    name: str
    kind: Kind
    optional: bool = False
    enum: str | None = None  # key into ENUMS for Kind.ENUM
    array: str | None = None  # for Kind.COUNT: the array field it counts


@dataclass(frozen=True)
class OperatorSchema:
    name: str  # short form, e.g. "ARGMAX"
    fields: tuple[Field, ...]
    feature_level: str  # the DML_FEATURE_LEVEL that introduced it
    fusable: bool = False  # may appear as a FusedActivation

    @property
    def full_name(self) -> str:
        return f"DML_OPERATOR_{self.name}"

    def field(self, name: str) -> Field:
        return next(f for f in self.fields if f.name == name)

    def tensor_fields(self, kind: Kind) -> tuple[Field, ...]:
        return tuple(f for f in self.fields if f.kind is kind)


ENUMS: dict[str, dict[str, int]] = {
    "DML_AXIS_DIRECTION": {"INCREASING": 0, "DECREASING": 1},
    "DML_TENSOR_TYPE": {"BUFFER": 1},
    "DML_TENSOR_FLAGS": {"NONE": 0, "OWNED_BY_DML": 1},
}


def _tensors(*names: str, optional: tuple[str, ...] = ()) -> tuple[Field, ...]:
    return tuple(Field(n, Kind.OUTPUT if n == "OutputTensor" else Kind.INPUT, n in optional) for n in names)


_IN_OUT = _tensors("InputTensor", "OutputTensor")
_AXES = (Field("AxisCount", Kind.COUNT, array="Axes"), Field("Axes", Kind.UINT_ARRAY))


def _activation(name: str, *params: str, level: str = "1_0") -> OperatorSchema:
    return OperatorSchema(f"ACTIVATION_{name}", _IN_OUT + tuple(Field(p, Kind.FLOAT) for p in params), level, fusable=True)


OPERATORS: dict[str, OperatorSchema] = {
    s.name: s
    for s in (
        OperatorSchema("ACTIVATION_HARDMAX1", _IN_OUT + _AXES, "5_1"),
        OperatorSchema("ACTIVATION_LOG_SOFTMAX1", _IN_OUT + _AXES, "5_1"),
        OperatorSchema(
            "MEAN_VARIANCE_NORMALIZATION",
            _tensors("InputTensor", "ScaleTensor", "BiasTensor", "OutputTensor", optional=("ScaleTensor", "BiasTensor"))
            + (
                Field("CrossChannel", Kind.BOOL),
                Field("NormalizeVariance", Kind.BOOL),
                Field("Epsilon", Kind.FLOAT),
                Field("FusedActivation", Kind.ACTIVATION, optional=True),
            ),
            "1_0",
        ),
        OperatorSchema("ARGMAX", _IN_OUT + _AXES + (Field("AxisDirection", Kind.ENUM, enum="DML_AXIS_DIRECTION"),), "3_0"),
        OperatorSchema("ONE_HOT", _tensors("IndicesTensor", "ValuesTensor", "OutputTensor") + (Field("Axis", Kind.UINT),), "2_0"),
        # The activations that "Using fused operators to improve performance" lists as fusable
        # (ELEMENT_WISE_CLIP is fusable into CONVOLUTION and GEMM only, so not here).
        _activation("LINEAR", "Alpha", "Beta"),
        _activation("SIGMOID"),
        _activation("HARD_SIGMOID", "Alpha", "Beta"),
        _activation("TANH"),
        _activation("SCALED_TANH", "Alpha", "Beta"),
        _activation("RELU"),
        _activation("LEAKY_RELU", "Alpha"),
        _activation("THRESHOLDED_RELU", "Alpha"),
        _activation("ELU", "Alpha"),
        _activation("CELU", "Alpha", level="3_0"),
        _activation("SCALED_ELU", "Alpha", "Gamma"),
        _activation("SOFTPLUS", "Steepness"),
        _activation("PARAMETRIC_SOFTPLUS", "Alpha", "Beta"),
        _activation("SOFTSIGN"),
        _activation("IDENTITY"),
        _activation("SHRINK", "Bias", "Threshold", level="2_0"),
        _activation("GELU", level="5_1"),
    )
}


def lookup(type_name: str) -> OperatorSchema | None:
    """Full (`DML_OPERATOR_ARGMAX`) or short (`ARGMAX`) form, as DxDispatch accepts."""
    short = type_name[len("DML_OPERATOR_") :] if type_name.startswith("DML_OPERATOR_") else type_name
    return OPERATORS.get(short)


def enum_value(enum: str, text: str) -> str | None:
    """The short name of `text` in `enum` (full or short form), or None."""
    prefix = enum + "_"
    short = text[len(prefix) :] if text.startswith(prefix) else text
    return short if short in ENUMS[enum] else None
