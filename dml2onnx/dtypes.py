"""DirectML tensor data types and their numpy / ONNX counterparts."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from onnx import TensorProto


@dataclass(frozen=True)
class DataType:
    """One `DML_TENSOR_DATA_TYPE_*` value."""

    name: str  # short form, e.g. "FLOAT32"
    numpy: np.dtype
    onnx: int  # TensorProto element type

    @property
    def full_name(self) -> str:
        return f"DML_TENSOR_DATA_TYPE_{self.name}"

    @property
    def size(self) -> int:
        return self.numpy.itemsize

    @property
    def is_float(self) -> bool:
        return self.numpy.kind == "f"

    @property
    def is_signed(self) -> bool:
        return self.numpy.kind in "fi"

    def __str__(self) -> str:
        return self.name


def _dt(name: str, np_name: str, onnx_type: int) -> DataType:
    return DataType(name, np.dtype(np_name), onnx_type)


FLOAT64 = _dt("FLOAT64", "float64", TensorProto.DOUBLE)
FLOAT32 = _dt("FLOAT32", "float32", TensorProto.FLOAT)
FLOAT16 = _dt("FLOAT16", "float16", TensorProto.FLOAT16)
INT64 = _dt("INT64", "int64", TensorProto.INT64)
INT32 = _dt("INT32", "int32", TensorProto.INT32)
INT16 = _dt("INT16", "int16", TensorProto.INT16)
INT8 = _dt("INT8", "int8", TensorProto.INT8)
UINT64 = _dt("UINT64", "uint64", TensorProto.UINT64)
UINT32 = _dt("UINT32", "uint32", TensorProto.UINT32)
UINT16 = _dt("UINT16", "uint16", TensorProto.UINT16)
UINT8 = _dt("UINT8", "uint8", TensorProto.UINT8)

ALL: tuple[DataType, ...] = (
    FLOAT64,
    FLOAT32,
    FLOAT16,
    INT64,
    INT32,
    INT16,
    INT8,
    UINT64,
    UINT32,
    UINT16,
    UINT8,
)
BY_NAME: dict[str, DataType] = {t.name: t for t in ALL}
BY_ONNX: dict[int, DataType] = {t.onnx: t for t in ALL}
BY_NUMPY: dict[np.dtype, DataType] = {t.numpy: t for t in ALL}

# Groups the doc pages' data-type tables are made of.
FLOATS = (FLOAT32, FLOAT16)
INTEGERS = (INT64, INT32, INT16, INT8, UINT64, UINT32, UINT16, UINT8)
INTEGERS_32_64 = (INT64, INT32, UINT64, UINT32)


def names(types: tuple[DataType, ...] | list[DataType]) -> str:
    return ", ".join(t.name for t in types)
