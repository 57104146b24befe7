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
    bits: int = 0  # 0: the numpy type's width; 4: a packed 4-bit type (two elements a byte)

    @property
    def full_name(self) -> str:
        return f"DML_TENSOR_DATA_TYPE_{self.name}"

    @property
    def size(self) -> int:
        """Bytes of the numpy (and ONNX) type that holds one element: 1 for the 4-bit types,
        whose buffers hold two elements a byte (`element_bits`)."""
        return self.numpy.itemsize

    @property
    def element_bits(self) -> int:
        """Bits of one element in a DirectML buffer."""
        return self.bits or 8 * self.numpy.itemsize

    @property
    def is_packed(self) -> bool:
        """Two elements a byte (INT4, UINT4)."""
        return self.element_bits < 8

    @property
    def range(self) -> tuple[int, int]:
        """An integer type's (min, max): the 4-bit types' own, not their carrier's."""
        if self.is_packed:
            return (-(1 << (self.bits - 1)), (1 << (self.bits - 1)) - 1) if self.is_signed else (0, (1 << self.bits) - 1)
        info = np.iinfo(self.numpy)
        return int(info.min), int(info.max)

    @property
    def is_float(self) -> bool:
        return self.numpy.kind == "f"

    @property
    def is_signed(self) -> bool:
        return self.numpy.kind in "fi"

    def __str__(self) -> str:
        return self.name


def _dt(name: str, np_name: str, onnx_type: int, bits: int = 0) -> DataType:
    return DataType(name, np.dtype(np_name), onnx_type, bits)


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
# DirectML's 4-bit integers (feature level 6_3: QUANTIZE's output, DEQUANTIZE's input, their zero
# points). A DirectML buffer packs two a byte, element 2k in the low nibble (tensor.py); numpy and
# the lowered ONNX graphs hold one a byte, as INT8 in [-8, 7] and UINT8 in [0, 15].
INT4 = _dt("INT4", "int8", TensorProto.INT8, 4)
UINT4 = _dt("UINT4", "uint8", TensorProto.UINT8, 4)

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
# ALL: the full-width types (what mixed lists, casts and the numpy and ONNX look-ups take); PACKED:
# the 4-bit ones, in DML_TENSOR_DATA_TYPE order (UINT4 = 12, INT4 = 13); BY_NAME: both.
PACKED: tuple[DataType, ...] = (UINT4, INT4)
BY_NAME: dict[str, DataType] = {t.name: t for t in ALL + PACKED}
BY_ONNX: dict[int, DataType] = {t.onnx: t for t in ALL}
BY_NUMPY: dict[np.dtype, DataType] = {t.numpy: t for t in ALL}

# Groups the doc pages' data-type tables are made of.
FLOATS = (FLOAT32, FLOAT16)
INTEGERS = (INT64, INT32, INT16, INT8, UINT64, UINT32, UINT16, UINT8)
INTEGERS_32_64 = (INT64, INT32, UINT64, UINT32)


def names(types: tuple[DataType, ...] | list[DataType]) -> str:
    return ", ".join(t.name for t in types)
