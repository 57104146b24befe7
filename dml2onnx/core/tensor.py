"""`DML_BUFFER_TENSOR_DESC`: data type, sizes, strides and the buffer they imply; the 4-bit
types' buffers packed and unpacked (`pack`, `unpack`, `read`, `write`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from dml2onnx.core import dtypes

MAX_DIMENSIONS = 8  # DML_TENSOR_DIMENSION_COUNT_MAX1
_MAX_CHECKED = 2**24  # elements whose buffer offsets `overlapping` compares one by one


@dataclass(frozen=True)
class TensorDesc:
    data_type: dtypes.DataType
    sizes: tuple[int, ...]
    strides: tuple[int, ...] | None = None  # in elements; None: packed
    flags: int = 0
    total_size_in_bytes: int | None = None  # None: DirectML's minimum (see below)
    guaranteed_base_offset_alignment: int = 0

    @property
    def rank(self) -> int:
        return len(self.sizes)

    @property
    def element_count(self) -> int:
        return math.prod(self.sizes)

    @property
    def layout(self) -> tuple[int, ...]:
        """The strides in elements, packed ones when the desc gives none."""
        return self.strides if self.strides is not None else dense_strides(self.sizes)

    @property
    def packed(self) -> bool:
        """Element i of the logical (row-major) order is element i of the buffer."""
        return all(s == 1 or st == d for s, st, d in zip(self.sizes, self.layout, dense_strides(self.sizes), strict=True))

    @property
    def span(self) -> int:
        """Buffer elements from the first to the furthest one the tensor touches."""
        return sum((s - 1) * st for s, st in zip(self.sizes, self.layout, strict=True)) + 1

    @property
    def min_size_in_bytes(self) -> int:
        """What DMLCalcBufferTensorSize gives: the furthest element's end, rounded up to 4 (for
        the 4-bit types: the byte holding the furthest element's nibble, then rounded up to 4)."""
        return (byte_count(self.span, self.data_type) + 3) & ~3

    @property
    def size_in_bytes(self) -> int:
        return self.total_size_in_bytes if self.total_size_in_bytes is not None else self.min_size_in_bytes

    @property
    def buffer_elements(self) -> int:
        """Whole elements in the tensor's buffer (TotalTensorSizeInBytes): the flat input of
        `export --buffer-inputs`."""
        return self.size_in_bytes * 8 // self.data_type.element_bits

    def offsets(self) -> np.ndarray:
        """The buffer element of each logical element, shaped like the tensor (int64)."""
        out = np.zeros(self.sizes, dtype=np.int64)
        for axis, (s, st) in enumerate(zip(self.sizes, self.layout, strict=True)):
            shape = [1] * self.rank
            shape[axis] = s
            out += (np.arange(s, dtype=np.int64) * st).reshape(shape)
        return out

    def nested_order(self) -> list[int] | None:
        """The axes of size > 1 and stride > 0 from the largest stride to the smallest when each
        axis fits inside one step of the axis before it (padded and transposed layouts, which
        Reshape/Slice/Transpose read), else None. Axes of stride 0 are broadcast."""
        axes = sorted((i for i, s in enumerate(self.sizes) if s > 1 and self.layout[i] > 0), key=lambda i: -self.layout[i])
        st, s = self.layout, self.sizes
        for outer, inner in pairwise(axes):
            if st[outer] % st[inner] or st[outer] < st[inner] * s[inner]:
                return None
        return axes

    @property
    def overlapping(self) -> bool:
        """Two logical elements share a buffer element (stride 0, or windows that overlap)."""
        if self.nested_order() is not None:
            return any(s > 1 and st == 0 for s, st in zip(self.sizes, self.layout, strict=True))
        if self.element_count > _MAX_CHECKED:  # too many to compare one by one: not proven apart
            return True
        return bool(np.unique(self.offsets()).size != self.element_count)

    def describe(self) -> str:
        text = f"{self.data_type.name}{list(self.sizes)}"
        return text if self.packed else f"{text} strides {list(self.layout)}"


def dense_strides(sizes: tuple[int, ...]) -> tuple[int, ...]:
    strides, acc = [], 1
    for s in reversed(sizes):
        strides.append(acc)
        acc *= s
    return tuple(reversed(strides))


# -- buffers of packed 4-bit elements --------------------------------------------------------------


def byte_count(elements: int, data_type: dtypes.DataType) -> int:
    """Bytes that `elements` buffer elements occupy (two a byte for the 4-bit types, rounded up)."""
    return (elements * data_type.element_bits + 7) // 8


def unpack(raw: bytes | bytearray | memoryview, count: int, data_type: dtypes.DataType) -> np.ndarray:
    """The first `count` elements of a buffer, one per numpy element (little-endian; a 4-bit
    type's element 2k in byte k's low nibble, 2k + 1 in its high one, signed ones sign-extended)."""
    n = byte_count(count, data_type)
    if not data_type.is_packed:
        return np.frombuffer(raw, data_type.numpy.newbyteorder("<"), count=count).astype(data_type.numpy)
    b = np.frombuffer(raw, np.uint8, count=n)
    nibbles = np.stack([b & 0xF, b >> 4], axis=-1).reshape(-1)[:count]
    if data_type.is_signed:
        return ((nibbles.astype(np.int16) ^ 8) - 8).astype(np.int8)
    return nibbles.astype(np.uint8)


def pack(values: np.ndarray, data_type: dtypes.DataType, into: bytes | bytearray | None = None) -> bytes:
    """Elements as buffer bytes: the inverse of `unpack`. A 4-bit type's values keep their low 4
    bits; an odd count's last byte keeps the high nibble of `into`'s byte there (else 0)."""
    v = np.asarray(values).reshape(-1)
    if not data_type.is_packed:
        return v.astype(data_type.numpy.newbyteorder("<")).tobytes()
    nibbles = v.astype(np.int16).astype(np.uint8) & 0xF
    n = byte_count(v.size, data_type)
    padded = np.zeros(2 * n, np.uint8)
    padded[: v.size] = nibbles
    if v.size % 2 and into is not None and len(into) >= n:
        padded[-1] = into[n - 1] >> 4
    return (padded[0::2] | (padded[1::2] << 4)).tobytes()


def read(raw: bytes | bytearray, offset: int, t: TensorDesc) -> np.ndarray:
    """The tensor's logical array (Sizes, through Strides) from a buffer region at byte `offset`."""
    elements = unpack(memoryview(raw)[offset:], t.span, t.data_type)
    if t.packed:
        return elements[: t.element_count].reshape(t.sizes).copy()
    return elements[t.offsets()]


def write(raw: bytearray, offset: int, t: TensorDesc, values: np.ndarray) -> None:
    """Writes the logical array where the strides put it; the elements in between (and a 4-bit
    byte's other nibble) keep their values."""
    n = byte_count(t.span, t.data_type)
    elements = unpack(bytes(raw[offset : offset + n]), t.span, t.data_type).copy()
    elements[t.offsets().reshape(-1)] = np.asarray(values).reshape(-1)
    raw[offset : offset + n] = pack(elements, t.data_type, raw[offset : offset + n])


def view(buffer: bytearray | bytes, offset: int, tensor: TensorDesc) -> np.ndarray:
    """The tensor's elements in a bound buffer region, through its strides (no copy; writable
    when the buffer is)."""
    flat = np.frombuffer(buffer, dtype=tensor.data_type.numpy, count=tensor.span, offset=offset)
    size = flat.itemsize
    return np.lib.stride_tricks.as_strided(
        flat, tensor.sizes, [st * size for st in tensor.layout], writeable=flat.flags.writeable
    )


def read_tensor(buffer: bytearray | bytes, offset: int, tensor: TensorDesc) -> np.ndarray:
    """The tensor's elements from a bound buffer region (the bytes are reinterpreted; a 4-bit
    type's unpacked, two a byte: tensor.read)."""
    if tensor.data_type.is_packed:
        return read(buffer, offset, tensor)
    return view(buffer, offset, tensor).copy()


def write_tensor(buffer: bytearray, offset: int, tensor: TensorDesc, values: np.ndarray) -> None:
    """Writes the elements where the strides put them; the bytes in between (and the other nibble
    of a 4-bit type's byte) keep their values."""
    if tensor.data_type.is_packed:
        write(buffer, offset, tensor, values)
        return
    view(buffer, offset, tensor)[...] = values
