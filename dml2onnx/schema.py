"""The one table of DirectML operator descs this tool knows.

Each row names the desc's fields exactly as in directml.h, in struct order, with their kind.
The table drives JSON parsing, bind points (input/output tensor fields) and the generic
validation (required fields, counts, enum values, and per feature level the dimension counts and
data types of each page's "Tensor support" tables); each operator's module adds its own rules.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from . import dtypes
from .dtypes import DataType

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

    def tensor_fields(self, kind: Kind) -> tuple[Field, ...]:
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


def _tensors(*names: str, optional: tuple[str, ...] = ()) -> tuple[Field, ...]:
    return tuple(Field(n, Kind.OUTPUT if n == "OutputTensor" else Kind.INPUT, n in optional) for n in names)


# Data-type lists as the doc pages write them.
F = dtypes.FLOATS
F64 = (dtypes.FLOAT64,)
I8_32 = (dtypes.INT32, dtypes.INT16, dtypes.INT8, dtypes.UINT32, dtypes.UINT16, dtypes.UINT8)  # 3_0's integers
ALL_INTS = dtypes.INTEGERS
INDICES = dtypes.INTEGERS_32_64
I32 = (dtypes.INT32, dtypes.UINT32)
I32_64 = (dtypes.INT64, dtypes.INT32, dtypes.UINT64, dtypes.UINT32)
U32 = (dtypes.UINT32,)


def _table(level: str, *tensors: tuple[str, int, int, tuple[DataType, ...]], functions: tuple[str, ...] = ()) -> SupportTable:
    return SupportTable(level, {n: TensorSupport((lo, hi), types) for n, lo, hi, types in tensors}, functions)


def _same(
    level: str, names: tuple[str, ...], lo: int, hi: int, types: tuple[DataType, ...], **kw: tuple[str, ...]
) -> SupportTable:
    """A table in which every tensor has the same dimension counts and types."""
    return _table(level, *((n, lo, hi, types) for n in names), **kw)


_IO = ("InputTensor", "OutputTensor")
_IN_OUT = _tensors(*_IO)
_AXES = (Field("AxisCount", Kind.COUNT, array="Axes"), Field("Axes", Kind.UINT_ARRAY, count="AxisCount"))
_DIRECTION = Field("AxisDirection", Kind.ENUM, enum="DML_AXIS_DIRECTION")
_MVN_TENSORS = ("InputTensor", "ScaleTensor", "BiasTensor", "OutputTensor")
_MVN_IO = _tensors(*_MVN_TENSORS, optional=("ScaleTensor", "BiasTensor"))
_MVN_TAIL = (Field("Epsilon", Kind.FLOAT), Field("FusedActivation", Kind.ACTIVATION, optional=True))
# ACTIVATION_SOFTMAX / LOG_SOFTMAX / HARDMAX (the single-axis forms)
_SOFTMAX_TABLES = (_same("3_0", _IO, 1, 8, F), _same("2_0", _IO, 4, 5, F), _same("1_0", _IO, 4, 4, F))
_ARG_TABLES = (
    _table("4_1", ("InputTensor", 1, 8, F + ALL_INTS), ("OutputTensor", 1, 8, INDICES)),
    _table("3_0", ("InputTensor", 1, 8, F + I8_32), ("OutputTensor", 1, 8, INDICES)),
)
_REDUCE_ARG = ("ARGMAX", "ARGMIN")
_REDUCE_FLOAT = ("AVERAGE", "L2", "LOG_SUM", "LOG_SUM_EXP")
_REDUCE_L1 = ("L1", "SUM_SQUARE")
_REDUCE_MINMAX = ("MIN", "MAX")
_REDUCE_SUM = ("MULTIPLY", "SUM")
_REDUCE_TABLES = (
    *(
        _table(level, ("InputTensor", lo, hi, t), ("OutputTensor", lo, hi, o), functions=_REDUCE_ARG)
        for level, lo, hi, t, o in (
            ("4_1", 1, 8, F + ALL_INTS, INDICES),
            ("3_0", 1, 8, F + I8_32, INDICES),
            ("2_1", 4, 4, F + I8_32, U32),
            ("1_0", 4, 4, F, U32),
        )
    ),
    _same("3_0", _IO, 1, 8, F, functions=_REDUCE_FLOAT),
    _same("1_0", _IO, 4, 4, F, functions=_REDUCE_FLOAT),
    _same("5_0", _IO, 1, 8, F + I32_64, functions=_REDUCE_L1),
    _same("3_0", _IO, 1, 8, F, functions=_REDUCE_L1),
    _same("1_0", _IO, 4, 4, F, functions=_REDUCE_L1),
    _same("5_0", _IO, 1, 8, F + ALL_INTS, functions=_REDUCE_MINMAX),
    _same("3_0", _IO, 1, 8, F + I8_32, functions=_REDUCE_MINMAX),
    _same("2_1", _IO, 4, 4, F + I32, functions=_REDUCE_MINMAX),
    _same("1_0", _IO, 4, 4, F, functions=_REDUCE_MINMAX),
    _same("5_0", _IO, 1, 8, F + I32_64, functions=_REDUCE_SUM),
    _same("3_0", _IO, 1, 8, F + I32, functions=_REDUCE_SUM),
    _same("2_1", _IO, 4, 4, F + I32, functions=_REDUCE_SUM),
    _same("1_0", _IO, 4, 4, F, functions=_REDUCE_SUM),
)
_ONE_HOT = ("IndicesTensor", "ValuesTensor", "OutputTensor")


def _one_hot_table(level: str, lo: int, hi: int, indices: tuple[DataType, ...], values: tuple[DataType, ...]) -> SupportTable:
    return _table(level, ("IndicesTensor", lo, hi, indices), ("ValuesTensor", lo, hi, values), ("OutputTensor", lo, hi, values))


def _activation(name: str, *params: str, level: str = "1_0", tables: tuple[SupportTable, ...] | None = None) -> OperatorSchema:
    fields = _IN_OUT + tuple(Field(p, Kind.FLOAT) for p in params)
    return OperatorSchema(f"ACTIVATION_{name}", fields, level, tables or ACTIVATION_TABLES, fusable=True)


# The activations' pages: FLOAT32/FLOAT16, 4 dimensions at first, 4 to 5 from 2_0, 1 to 8 from
# 3_0 (RELU and SHRINK add integer types at 5_1).
ACTIVATION_TABLES = (_same("3_0", _IO, 1, 8, F), _same("2_0", _IO, 4, 5, F), _same("1_0", _IO, 4, 4, F))

OPERATORS: dict[str, OperatorSchema] = {
    s.name: s
    for s in (
        OperatorSchema("ACTIVATION_HARDMAX", _IN_OUT, "1_0", _SOFTMAX_TABLES),
        OperatorSchema("ACTIVATION_LOG_SOFTMAX", _IN_OUT, "1_0", _SOFTMAX_TABLES),
        OperatorSchema("ACTIVATION_SOFTMAX", _IN_OUT, "1_0", _SOFTMAX_TABLES),
        OperatorSchema("ACTIVATION_HARDMAX1", _IN_OUT + _AXES, "5_1", (_same("5_1", _IO, 1, 8, F),)),
        OperatorSchema("ACTIVATION_LOG_SOFTMAX1", _IN_OUT + _AXES, "5_1", (_same("5_1", _IO, 1, 8, F),)),
        OperatorSchema("ACTIVATION_SOFTMAX1", _IN_OUT + _AXES, "5_1", (_same("5_1", _IO, 1, 8, F),)),
        OperatorSchema(
            "MEAN_VARIANCE_NORMALIZATION",
            _MVN_IO + (Field("CrossChannel", Kind.BOOL), Field("NormalizeVariance", Kind.BOOL)) + _MVN_TAIL,
            "1_0",
            (_same("1_0", _MVN_TENSORS, 4, 4, F),),
        ),
        OperatorSchema(
            "MEAN_VARIANCE_NORMALIZATION1",
            _MVN_IO + _AXES + (Field("NormalizeVariance", Kind.BOOL),) + _MVN_TAIL,
            "2_1",
            (_same("3_1", _MVN_TENSORS, 1, 8, F), _same("2_1", _MVN_TENSORS, 4, 4, F)),
        ),
        OperatorSchema(
            "MEAN_VARIANCE_NORMALIZATION2",
            _MVN_IO + _AXES + (Field("UseMean", Kind.BOOL), Field("UseVariance", Kind.BOOL)) + _MVN_TAIL,
            "6_3",
            (_same("6_3", _MVN_TENSORS, 1, 8, F),),
        ),
        OperatorSchema("ARGMAX", _IN_OUT + _AXES + (_DIRECTION,), "3_0", _ARG_TABLES),
        OperatorSchema("ARGMIN", _IN_OUT + _AXES + (_DIRECTION,), "3_0", _ARG_TABLES),
        OperatorSchema(
            "REDUCE", (Field("Function", Kind.ENUM, enum="DML_REDUCE_FUNCTION"), *_IN_OUT, *_AXES), "1_0", _REDUCE_TABLES
        ),
        OperatorSchema(
            "ONE_HOT",
            _tensors(*_ONE_HOT) + (Field("Axis", Kind.UINT),),
            "2_0",
            (
                _one_hot_table("4_1", 1, 8, INDICES, F64 + F + ALL_INTS),
                _one_hot_table("3_0", 1, 8, INDICES, F + I8_32),
                _one_hot_table("2_1", 4, 4, U32, F + I8_32),
                _one_hot_table("2_0", 4, 4, U32, F),
            ),
        ),
        # The activations that "Using fused operators to improve performance" lists as fusable
        # (ELEMENT_WISE_CLIP is fusable into CONVOLUTION and GEMM only, so not here); each is a
        # standalone operator too.
        _activation("LINEAR", "Alpha", "Beta"),
        _activation("SIGMOID"),
        _activation("HARD_SIGMOID", "Alpha", "Beta"),
        _activation("TANH"),
        _activation("SCALED_TANH", "Alpha", "Beta"),
        _activation("RELU", tables=(_same("5_1", _IO, 1, 8, F + I8_32[:3]), *ACTIVATION_TABLES)),
        _activation("LEAKY_RELU", "Alpha"),
        _activation("THRESHOLDED_RELU", "Alpha"),
        _activation("ELU", "Alpha"),
        _activation("CELU", "Alpha", level="3_0", tables=(_same("3_0", _IO, 1, 8, F),)),
        _activation("SCALED_ELU", "Alpha", "Gamma"),
        _activation("SOFTPLUS", "Steepness"),
        _activation("PARAMETRIC_SOFTPLUS", "Alpha", "Beta"),
        _activation("SOFTSIGN"),
        _activation("IDENTITY"),
        _activation(
            "SHRINK", "Bias", "Threshold", level="2_0", tables=(_same("5_1", _IO, 1, 8, F + I8_32), *ACTIVATION_TABLES[:2])
        ),
        _activation("GELU", level="5_1", tables=(_same("5_1", _IO, 1, 8, F),)),
    )
}


# Fused activations DirectML takes beyond the pages' list, and the operators it takes them in
# (every ACTIVATION_* tried as GEMM's, CONVOLUTION's, ELEMENT_WISE_ADD1's and MVN1's
# FusedActivation through DirectML 1.15's API: only these created an operator). ONNX Runtime's
# DirectML EP fuses a MatMul's Softmax into GEMM this way (attention).
FUSED_ONLY_INTO: dict[str, tuple[str, ...]] = {"ACTIVATION_SOFTMAX1": ("GEMM",)}


def lookup(type_name: str) -> OperatorSchema | None:
    """Full (`DML_OPERATOR_ARGMAX`) or short (`ARGMAX`) form, as DxDispatch accepts."""
    short = type_name[len("DML_OPERATOR_") :] if type_name.startswith("DML_OPERATOR_") else type_name
    return OPERATORS.get(short)


def enum_value(enum: str, text: str) -> str | None:
    """The short name of `text` in `enum` (full or short form), or None."""
    prefix = enum + "_"
    short = text[len(prefix) :] if text.startswith(prefix) else text
    return short if short in ENUMS[enum] else None


# Lowered operators whose fields and tensor support tables are the generated table's rows as they
# are (operator_table.py, from DirectMLSchema.h and the pages), by the family module under ops/
# that lowers them (one row per operator there).
ADOPTED: dict[str, tuple[str, ...]] = {
    "element_wise": (
        "ELEMENT_WISE_IDENTITY",
        "ELEMENT_WISE_ABS",
        "ELEMENT_WISE_ADD",
        "ELEMENT_WISE_EXP",
        "ELEMENT_WISE_LOG",
        "ELEMENT_WISE_SQRT",
        "ELEMENT_WISE_RECIP",
        "ELEMENT_WISE_CEIL",
        "ELEMENT_WISE_FLOOR",
        "ELEMENT_WISE_ERF",
        "ELEMENT_WISE_TANH",
        "ELEMENT_WISE_SIN",
        "ELEMENT_WISE_COS",
        "ELEMENT_WISE_NEGATE",
        "ELEMENT_WISE_SIGN",
        "ELEMENT_WISE_ROUND",
    ),
    "element_wise_arithmetic": (
        "ELEMENT_WISE_ADD1",
        "ELEMENT_WISE_SUBTRACT",
        "ELEMENT_WISE_MULTIPLY",
        "ELEMENT_WISE_DIVIDE",
        "ELEMENT_WISE_MAX",
        "ELEMENT_WISE_MIN",
        "ELEMENT_WISE_MEAN",
        "ELEMENT_WISE_DIFFERENCE_SQUARE",
        "ELEMENT_WISE_MODULUS_TRUNCATE",
        "ELEMENT_WISE_MODULUS_FLOOR",
        "ELEMENT_WISE_CLIP",
        "ELEMENT_WISE_CLIP1",
        "ELEMENT_WISE_THRESHOLD",
    ),
    "cast": ("CAST",),
    "fill_value": ("FILL_VALUE_CONSTANT", "FILL_VALUE_SEQUENCE"),
    "element_wise_logical": (
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
    "element_wise_bits": (
        "ELEMENT_WISE_BIT_AND",
        "ELEMENT_WISE_BIT_OR",
        "ELEMENT_WISE_BIT_XOR",
        "ELEMENT_WISE_BIT_NOT",
        "ELEMENT_WISE_BIT_COUNT",
        "ELEMENT_WISE_BIT_SHIFT_LEFT",
        "ELEMENT_WISE_BIT_SHIFT_RIGHT",
    ),
    "element_wise_if": ("ELEMENT_WISE_IF",),
    "diagonal_matrix": ("DIAGONAL_MATRIX", "DIAGONAL_MATRIX1"),
    "activation_more": ("ACTIVATION_HARD_SWISH", "ACTIVATION_SWISH", "ACTIVATION_PARAMETERIZED_RELU"),
    "gradients": ("ACTIVATION_RELU_GRAD", "ELEMENT_WISE_CLIP_GRAD", "ELEMENT_WISE_CLIP_GRAD1"),
    "element_wise_pow": ("ELEMENT_WISE_POW", "ELEMENT_WISE_CONSTANT_POW"),
    "element_wise_trig": (
        "ELEMENT_WISE_ACOS",
        "ELEMENT_WISE_ACOSH",
        "ELEMENT_WISE_ASIN",
        "ELEMENT_WISE_ASINH",
        "ELEMENT_WISE_ATAN",
        "ELEMENT_WISE_ATANH",
        "ELEMENT_WISE_ATAN_YX",
        "ELEMENT_WISE_TAN",
        "ELEMENT_WISE_SINH",
        "ELEMENT_WISE_COSH",
    ),
    "element_wise_quantized": (
        "ELEMENT_WISE_QUANTIZE_LINEAR",
        "ELEMENT_WISE_DEQUANTIZE_LINEAR",
        "ELEMENT_WISE_QUANTIZED_LINEAR_ADD",
    ),
    "batch_normalization": ("BATCH_NORMALIZATION",),
    "batch_normalization_training": ("BATCH_NORMALIZATION_TRAINING",),
    "local_response_normalization": ("LOCAL_RESPONSE_NORMALIZATION",),
    "lp_normalization": ("LP_NORMALIZATION",),
    "gemm": ("GEMM",),
    "pooling": (
        *("AVERAGE_POOLING", "AVERAGE_POOLING1", "LP_POOLING", "LP_POOLING1"),
        *("MAX_POOLING", "MAX_POOLING1", "MAX_POOLING2"),
    ),
    "convolution": ("CONVOLUTION",),
    "roi": ("ROI_POOLING", "ROI_ALIGN", "ROI_ALIGN1"),
    "max_unpooling": ("MAX_UNPOOLING",),
    "gather": ("GATHER", "GATHER_ELEMENTS", "GATHER_ND", "GATHER_ND1"),
    "scatter": ("SCATTER", "SCATTER_ND"),
    "join": ("JOIN",),
    "split": ("SPLIT",),
    "multihead_attention": ("MULTIHEAD_ATTENTION", "MULTIHEAD_ATTENTION1"),
    "slice": ("SLICE", "SLICE1", "SLICE_GRAD"),
    "padding": ("PADDING", "PADDING1"),
    "tile": ("TILE",),
    "space_depth": ("SPACE_TO_DEPTH", "SPACE_TO_DEPTH1", "DEPTH_TO_SPACE", "DEPTH_TO_SPACE1"),
    "cumulative": ("CUMULATIVE_SUMMATION", "CUMULATIVE_PRODUCT"),
    "reverse_subsequences": ("REVERSE_SUBSEQUENCES",),
    "resample": ("UPSAMPLE_2D", "RESAMPLE", "RESAMPLE1", "RESAMPLE2", "RESAMPLE3"),
    "fold": ("FOLD", "UNFOLD"),
    "resample_grad": ("RESAMPLE_GRAD", "RESAMPLE_GRAD1"),
    "value_scale_2d": ("VALUE_SCALE_2D",),
    "top_k": ("TOP_K", "TOP_K1"),
    "nonzero_coordinates": ("NONZERO_COORDINATES",),
    "recurrent": ("RNN", "LSTM", "GRU"),
    "quantize": ("QUANTIZE", "DEQUANTIZE", "DYNAMIC_QUANTIZE_LINEAR"),
    "convolution_integer": ("CONVOLUTION_INTEGER", "QUANTIZED_LINEAR_CONVOLUTION"),
    "quantized_pooling": ("QUANTIZED_LINEAR_AVERAGE_POOLING",),
    "random_generator": ("RANDOM_GENERATOR",),
    "batch_normalization_grad": ("BATCH_NORMALIZATION_GRAD", "BATCH_NORMALIZATION_TRAINING_GRAD"),
    "adam_optimizer": ("ADAM_OPTIMIZER",),
    "pooling_grad": ("AVERAGE_POOLING_GRAD", "MAX_POOLING_GRAD"),
    "local_response_normalization_grad": ("LOCAL_RESPONSE_NORMALIZATION_GRAD",),
    "roi_align_grad": ("ROI_ALIGN_GRAD",),
    "matrix_multiply_integer": (
        "MATRIX_MULTIPLY_INTEGER",
        "MATRIX_MULTIPLY_INTEGER_TO_FLOAT",
        "QUANTIZED_LINEAR_MATRIX_MULTIPLY",
    ),
}


def _adopt() -> None:
    # operator_table imports this module's classes, which exist by now (dml2onnx/__init__ imports
    # this module first, so operator_table never starts before it)
    from . import operator_table

    OPERATORS.update({n: operator_table.OPERATORS[n] for names in ADOPTED.values() for n in names})


_adopt()
