"""A bounds-checked reader of FlatBuffers binaries, for DirectML's serialized graphs.

A FlatBuffers file is a tree of tables reached through unsigned 32-bit offsets, each table
finding its fields through a vtable of 16-bit offsets (flatbuffers.dev, "Internals"). The
generated C++ readers DxDispatch uses trust every offset; a file downloaded from elsewhere must
not be trusted: here every offset, length and field is checked against the file's end before it is
read, so a truncated or corrupted file is a `ModelError` naming the field that points wrong, never
an IndexError, a huge allocation or a hang. Offsets to tables, vectors and strings are unsigned and
point forward, so a walk of the tree always ends.

Fields are numbered by their order in the schema (the generated headers' `VT_` constants are
4 + 2 * that number).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from dml2onnx.core.errors import JsonPath, ModelError

_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_I32 = struct.Struct("<i")
T = TypeVar("T")


@dataclass(frozen=True)
class Table:
    """One table of `buf` at `pos`; `path` names it in error messages (`nodes[2].desc`)."""

    buf: bytes
    pos: int
    path: JsonPath
    vtable: int
    vtable_size: int
    size: int

    @classmethod
    def at(cls, buf: bytes, pos: int, path: JsonPath) -> Table:
        _need(buf, pos, 4, path, "the table")
        vtable = pos - _I32.unpack_from(buf, pos)[0]
        _need(buf, vtable, 4, path, "the table's vtable")
        vtable_size, size = _U16.unpack_from(buf, vtable)[0], _U16.unpack_from(buf, vtable + 2)[0]
        if vtable_size < 4 or vtable_size % 2:
            raise ModelError(path, f"the table's vtable at byte {vtable} has an invalid size ({vtable_size})")
        _need(buf, vtable, vtable_size, path, "the table's vtable")
        if size < 4:
            raise ModelError(path, f"the table at byte {pos} has an invalid size ({size})")
        _need(buf, pos, size, path, "the table")
        return cls(buf, pos, path, vtable, vtable_size, size)

    def field(self, index: int, width: int, name: str) -> int | None:
        """The position of field `index` (`width` bytes wide), or None where it is absent."""
        slot = 4 + 2 * index
        if slot + 2 > self.vtable_size:
            return None
        offset = _U16.unpack_from(self.buf, self.vtable + slot)[0]
        if not offset:
            return None
        if offset + width > self.size:
            raise ModelError(self.path + (name,), f"the field lies outside its table (byte {offset} of {self.size})")
        return self.pos + offset

    def scalar(self, index: int, fmt: str, name: str, default: int | float = 0) -> int | float:
        """A scalar field (`fmt` a struct format such as "<B" or "<Q"), or its default."""
        layout = struct.Struct(fmt)
        pos = self.field(index, layout.size, name)
        return default if pos is None else layout.unpack_from(self.buf, pos)[0]

    def target(self, index: int, name: str) -> int | None:
        """Where the offset in field `index` points, or None where the field is absent."""
        pos = self.field(index, 4, name)
        return None if pos is None else follow(self.buf, pos, self.path + (name,))

    def table(self, index: int, name: str) -> Table | None:
        pos = self.target(index, name)
        return None if pos is None else Table.at(self.buf, pos, self.path + (name,))

    def string(self, index: int, name: str) -> str | None:
        pos = self.target(index, name)
        return None if pos is None else string_at(self.buf, pos, self.path + (name,))

    def vector(self, index: int, name: str, width: int) -> tuple[int, int] | None:
        """(position of the first element, element count) of a vector field, or None."""
        pos = self.target(index, name)
        return None if pos is None else vector_at(self.buf, pos, width, self.path + (name,))

    def scalars(self, index: int, name: str, code: str) -> tuple[int | float, ...] | None:
        """A vector of scalars (`code` one struct letter: "I", "i", "f")."""
        layout = struct.Struct("<" + code)
        found = self.vector(index, name, layout.size)
        if found is None:
            return None
        first, count = found
        return struct.unpack_from(f"<{count}{code}", self.buf, first)

    def bytes(self, index: int, name: str) -> bytes | None:
        found = self.vector(index, name, 1)
        return None if found is None else self.buf[found[0] : found[0] + found[1]]

    def tables(self, index: int, name: str) -> list[Table] | None:
        """A vector of tables."""
        return self._references(index, name, lambda pos, path: Table.at(self.buf, pos, path))

    def strings(self, index: int, name: str) -> list[str] | None:
        """A vector of strings."""
        return self._references(index, name, lambda pos, path: string_at(self.buf, pos, path))

    def _references(self, index: int, name: str, read: Callable[[int, JsonPath], T]) -> list[T] | None:
        found = self.vector(index, name, 4)
        if found is None:
            return None
        first, count = found
        out = []
        for i in range(count):
            path = self.path + (name, i)
            out.append(read(follow(self.buf, first + 4 * i, path), path))
        return out

    def union(self, type_index: int, value_index: int, name: str) -> tuple[int, int | None]:
        """A union field: (its type tag, where its value is: a table's or a struct's position)."""
        tag = int(self.scalar(type_index, "<B", f"{name}_type"))
        return tag, self.target(value_index, name)

    def struct(self, pos: int, fmt: str, name: str) -> tuple[int | float, ...]:
        """A struct's members at `pos` (a union's struct value)."""
        layout = struct.Struct(fmt)
        _need(self.buf, pos, layout.size, self.path + (name,), "the value")
        return layout.unpack_from(self.buf, pos)


def root(buf: bytes) -> Table:
    """The root table of a finished FlatBuffers buffer."""
    if len(buf) < 8:
        raise ModelError((), f"the file is {len(buf)} bytes long, too short to hold a flatbuffer")
    return Table.at(buf, follow(buf, 0, ()), ())


def follow(buf: bytes, pos: int, path: JsonPath) -> int:
    """Where the unsigned offset stored at `pos` points: forward, inside the buffer."""
    _need(buf, pos, 4, path, "the offset")
    offset = _U32.unpack_from(buf, pos)[0]
    if offset == 0 or pos + offset >= len(buf):
        raise ModelError(path, f"the offset at byte {pos} points outside the file (to byte {pos + offset} of {len(buf)})")
    return pos + offset


def vector_at(buf: bytes, pos: int, width: int, path: JsonPath) -> tuple[int, int]:
    _need(buf, pos, 4, path, "the vector's length")
    count = _U32.unpack_from(buf, pos)[0]
    _need(buf, pos + 4, count * width, path, f"the vector of {count} elements")
    return pos + 4, count


def string_at(buf: bytes, pos: int, path: JsonPath) -> str:
    first, count = vector_at(buf, pos, 1, path)
    try:
        return buf[first : first + count].decode("utf-8")
    except UnicodeDecodeError as e:
        raise ModelError(path, f"the string at byte {pos} is not UTF-8 ({e.reason} at its byte {e.start})") from None


def _need(buf: bytes, pos: int, size: int, path: JsonPath, what: str) -> None:
    if pos < 0 or pos + size > len(buf):
        raise ModelError(path, f"{what} at byte {pos} ({size} bytes) runs past the end of the file ({len(buf)} bytes)")
