"""DxDispatch `resources`: byte buffers and their initializers (array, list, constant,
sequence, .npy, raw and image files; images.py decodes the images).

INT4 and UINT4 buffers are dml2onnx's own: DxDispatch parses the names but has no initializer,
print or .npy for them (JsonParsers.cpp's GenerateInitialValuesFrom* and Executor.cpp's print throw
"Invalid tensor data type"). Here their bytes pack two elements a byte, element 2k in the low
nibble (as DirectML reads them: tensor.py); values are given, printed and written to .npy one per
element (an int8/uint8 .npy in the type's range), raw files are the packed bytes. For DxDispatch,
declare such a buffer UINT8 holding the packed bytes: a 4-bit tensor binds to any buffer."""

from __future__ import annotations

import ast
import math
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dml2onnx.core import dtypes, files, halfconv, limits, tensor
from dml2onnx.core.errors import JsonPath, ModelError
from dml2onnx.core.jsonvalues import (
    expect_enum,
    expect_float,
    expect_int,
    expect_object,
    expect_string,
    expect_uint32,
    expect_uint64,
    reject_unknown_keys,
)
from dml2onnx.formats import images

_KEYS = ("initialValuesDataType", "initialValues", "sizeInBytes", "initialValuesOffsetInBytes")
_DATA_TYPES = {t.name: t.numpy for t in dtypes.ALL + dtypes.PACKED} | {"UNKNOWN": None}


@dataclass
class Resource:
    name: str
    data_type: dtypes.DataType | None  # None: UNKNOWN (a mixed list)
    initial: bytes  # the initializer's bytes, written at offset 0
    size: int  # sizeInBytes
    # "initialValues": "deferred": no bytes until an ONNX dispatchable's output, bound to it,
    # gives it that output's size and contents (DxDispatch's useDeferredBinding)
    deferred: bool = False
    count: int | None = None  # a 4-bit type's values given (an odd count leaves a nibble unused)

    @property
    def print_count(self) -> int:
        """DxDispatch prints the initial data's element count (no padding)."""
        assert self.data_type is not None
        return self.count if self.count is not None else len(self.initial) * 8 // self.data_type.element_bits

    @property
    def length(self) -> int:
        """Elements of its data type that the whole buffer (sizeInBytes) holds."""
        assert self.data_type is not None
        return self.size * 8 // self.data_type.element_bits

    def new_buffer(self) -> bytearray:
        buf = bytearray(self.size)
        buf[: len(self.initial)] = self.initial
        return buf

    def values(self) -> np.ndarray:
        """The new buffer's `length` elements, one per numpy element (a 4-bit type's unpacked): the
        flat input --single-graph takes for it."""
        assert self.data_type is not None
        return tensor.unpack(self.new_buffer(), self.length, self.data_type)


def _limit() -> str:
    return limits.text("buffer")


def parse_resource(name: str, value: Any, path: JsonPath, model_dir: Path) -> Resource:
    obj = expect_object(value, path)
    reject_unknown_keys(obj, _KEYS + images.KEYS, path, "a buffer resource")
    dtype: dtypes.DataType | None = None
    if "initialValuesDataType" in obj:
        p = path + ("initialValuesDataType",)
        short = expect_enum(obj["initialValuesDataType"], p, "DML_TENSOR_DATA_TYPE", _DATA_TYPES)
        dtype = dtypes.BY_NAME.get(short)
    if "initialValues" not in obj:
        raise ModelError(path + ("initialValues",), "required field is missing")
    if obj["initialValues"] == "deferred":
        return _deferred(name, obj, dtype, path)
    if images.names_image(obj["initialValues"]):
        data, dtype = _image_bytes(obj, dtype, path, model_dir)
    else:
        images.refuse_keys(obj, path)
        data, dtype = _initial_bytes(obj["initialValues"], dtype, path, model_dir)
    if not data:
        raise ModelError(path + ("initialValues",), "'initialValues' must be non-empty")
    offset = 0
    if "initialValuesOffsetInBytes" in obj:
        offset = expect_uint64(obj["initialValuesOffsetInBytes"], path + ("initialValuesOffsetInBytes",))
    if "sizeInBytes" in obj:
        size = expect_uint64(obj["sizeInBytes"], path + ("sizeInBytes",))
        if size < len(data) + offset:
            raise ModelError(
                path + ("sizeInBytes",), f"{size} bytes are too small for the {len(data)} initial bytes at offset {offset}"
            )
    else:
        size = (len(data) + 3) & ~3
    if size > limits.max_bytes():
        raise ModelError(path + ("sizeInBytes",), f"{size} bytes exceed the {_limit()}")
    init = obj["initialValues"]
    count = (len(init) if isinstance(init, list) else init.get("valueCount")) if dtype and dtype.is_packed else None
    return Resource(name, dtype, data, size, count=count)


def _deferred(name: str, obj: dict[str, Any], dtype: dtypes.DataType | None, path: JsonPath) -> Resource:
    """A deferred resource: its type must be the output's (onnx_dispatchable.py checks)."""
    for key in ("sizeInBytes", "initialValuesOffsetInBytes"):
        if key in obj:
            raise ModelError(path + (key,), "a deferred resource takes its size from the output bound to it")
    return Resource(name, _need_type(dtype, path, "a deferred resource"), b"", 0, deferred=True)


def _need_type(dtype: dtypes.DataType | None, path: JsonPath, what: str) -> dtypes.DataType:
    if dtype is None:
        raise ModelError(path + ("initialValuesDataType",), f"a known data type is required for {what}")
    return dtype


def _initial_bytes(
    init: Any, dtype: dtypes.DataType | None, path: JsonPath, model_dir: Path
) -> tuple[bytes, dtypes.DataType | None]:
    """The initial bytes, and the data type (a .npy file brings its own)."""
    p = path + ("initialValues",)
    if isinstance(init, str):
        raise ModelError(
            p,
            'expected an array, an object, or "deferred" (a resource an ONNX dispatchable\'s output sizes)',
        )
    if isinstance(init, list):
        if dtype is None:
            return _mixed_list(init, p), None
        return encode([element(v, dtype, p + (i,)) for i, v in enumerate(init)], dtype), dtype
    obj = expect_object(init, p, "an array or an object")
    if "sourcePath" in obj:
        reject_unknown_keys(obj, ["sourcePath"], p, "a file initializer")
        return _file_bytes(expect_string(obj["sourcePath"], p + ("sourcePath",)), dtype, p, model_dir)
    if "value" in obj:
        reject_unknown_keys(obj, ["valueCount", "value"], p, "a constant initializer")
        dtype = _need_type(dtype, path, "a constant initializer")
        count = _count(obj, p, dtype)
        return encode([element(obj["value"], dtype, p + ("value",))] * count, dtype), dtype
    if "valueStart" in obj:
        reject_unknown_keys(obj, ["valueCount", "valueStart", "valueDelta"], p, "a sequence initializer")
        dtype = _need_type(dtype, path, "a sequence initializer")
        count = _count(obj, p, dtype)
        if "valueDelta" not in obj:
            raise ModelError(p + ("valueDelta",), "required field is missing")
        start = element(obj["valueStart"], dtype, p + ("valueStart",))
        delta = element(obj["valueDelta"], dtype, p + ("valueDelta",))
        return _sequence(start, delta, count, dtype), dtype
    raise ModelError(p, "unknown initializer: expected an array, or an object with 'value', 'valueStart' or 'sourcePath'")


def _count(obj: dict[str, Any], p: JsonPath, dtype: dtypes.DataType) -> int:
    if "valueCount" not in obj:
        raise ModelError(p + ("valueCount",), "required field is missing")
    count = expect_uint32(obj["valueCount"], p + ("valueCount",))
    if count * dtype.size > limits.max_bytes():
        raise ModelError(p + ("valueCount",), f"{count} values of {dtype} exceed the {_limit()}")
    return count


def element(value: Any, dtype: dtypes.DataType, path: JsonPath) -> float | int:
    """One JSON value as an element of `dtype` (DxDispatch's per-type rules)."""
    if dtype.is_float:
        return expect_float(value, path)
    lo, hi = dtype.range
    return expect_int(value, path, lo, hi, dtype.name)


def encode(values: list[float | int], dtype: dtypes.DataType) -> bytes:
    if dtype == dtypes.FLOAT16:
        return halfconv.to_float16(values).tobytes()
    if dtype.is_packed:  # in range (element() checked): two a byte
        return tensor.pack(np.array(values, dtype=dtype.numpy), dtype)
    with np.errstate(over="ignore"):
        return np.array(values, dtype=np.float64 if dtype.is_float else object).astype(dtype.numpy).tobytes()


def _sequence(start: float | int, delta: float | int, count: int, dtype: dtypes.DataType) -> bytes:
    """value, value + delta, ... accumulated in the target type, as DxDispatch does."""
    if dtype == dtypes.FLOAT16:
        return _float16_sequence(start, delta, count).tobytes()
    if dtype.is_float:  # np.add.accumulate adds one element at a time in the array's type
        steps = np.full(count, np.frombuffer(encode([delta], dtype), dtype.numpy)[0], dtype=dtype.numpy)
        if count:
            steps[0] = np.frombuffer(encode([start], dtype), dtype.numpy)[0]
        with np.errstate(over="ignore", invalid="ignore"):
            return np.add.accumulate(steps, dtype=dtype.numpy).tobytes()
    # Integers wrap in their own width; modulo 2**64 first, then truncated to the width.
    with np.errstate(over="ignore"):
        seq = np.arange(count, dtype=np.uint64) * np.uint64(int(delta) % 2**64) + np.uint64(int(start) % 2**64)
    if dtype.is_packed:  # wrapping in 4 bits
        return tensor.pack(seq.astype(np.uint8), dtype)  # each value's low 4 bits
    return seq.astype(dtype.numpy).tobytes()


def _float16_sequence(start: float | int, delta: float | int, count: int) -> np.ndarray:
    """Each step is half(float(v) + float(delta)), truncated. A half has 65536 states, so the
    sequence repeats within 65537 steps: compute one period, then tile it."""
    out = np.empty(count, dtype=np.float16)
    v = halfconv.to_float16(start)[()]
    d = np.float32(halfconv.to_float16(delta)[()])
    seen: dict[int, int] = {}
    for i in range(count):
        key = int(np.asarray(v).view(np.uint16))
        if key in seen:  # out[first:i] is one period: double the periodic part until full
            first, pos = seen[key], i
            while pos < count:
                n = min(pos - first, count - pos)
                out[pos : pos + n] = out[first : first + n]
                pos += n
            break
        seen[key] = i
        out[i] = v
        with np.errstate(over="ignore", invalid="ignore"):
            v = halfconv.to_float16(np.float32(v) + d)[()]
    return out


_LIST_TYPES = {t.name: t for t in dtypes.ALL if t != dtypes.FLOAT16}


def _mixed_list(items: list[Any], p: JsonPath) -> bytes:
    """initialValuesDataType UNKNOWN: `[{"type": "UINT8", "value": 15}, ...]`, packed."""
    out = bytearray()
    for i, item in enumerate(items):
        ip = p + (i,)
        obj = expect_object(item, ip)
        reject_unknown_keys(obj, ["type", "value", "name"], ip, "a list element")
        if "type" not in obj or "value" not in obj:
            raise ModelError(ip, "a list element needs 'type' and 'value'")
        short = expect_enum(obj["type"], ip + ("type",), "DML_TENSOR_DATA_TYPE", {k: 0 for k in _LIST_TYPES})
        t = _LIST_TYPES[short]
        out += encode([element(obj["value"], t, ip + ("value",))], t)
    return bytes(out)


def _resolve(source: str, model_dir: Path) -> Path:
    """Relative to the model's folder if the file is there, else to the current folder."""
    path = Path(source)
    if not path.is_absolute() and os.path.lexists(model_dir / path):
        return model_dir / path
    return path


def _read_source(source: str, sp: JsonPath, model_dir: Path, extra: int = 0) -> tuple[Path, bytes]:
    """The file a sourcePath names (at `sp`) and its bytes: at most the buffer limit + `extra`."""
    try:
        files.check_name(source)
        path = _resolve(source, model_dir)
        return path, files.read_regular(path, limits.max_bytes() + extra, f"the {_limit()}", label=source)
    except files.PathRefused as e:
        raise ModelError(sp, str(e)) from None


def _image_bytes(
    obj: dict[str, Any], dtype: dtypes.DataType | None, path: JsonPath, model_dir: Path
) -> tuple[bytes, dtypes.DataType]:
    """An image initializer's bytes and data type: its fields checked first, then the file read
    and decoded."""
    p = path + ("initialValues",)
    reject_unknown_keys(obj["initialValues"], ["sourcePath"], p, "a file initializer")
    shape = images.parse_resample(obj, dtype, path)
    source, sp = obj["initialValues"]["sourcePath"], p + ("sourcePath",)
    images.pillow(sp, "decoding")  # before reading the file: the missing library is the first thing to fix
    _, raw = _read_source(source, sp, model_dir)
    return images.decode(raw, source, shape, sp), shape.data_type


def _file_bytes(source: str, dtype: dtypes.DataType | None, p: JsonPath, model_dir: Path) -> tuple[bytes, dtypes.DataType | None]:
    sp = p + ("sourcePath",)
    images.refuse_other(source, sp, writing=False)
    path, raw = _read_source(source, sp, model_dir, _NPY_MAX_HEADER)
    if path.suffix.lower() != ".npy":
        return raw, _need_type(dtype, p[:-1], "a raw file initializer")
    file_type, data = read_npy(raw, sp, source)
    if dtype is not None and dtype.is_packed and dtype.numpy == file_type.numpy:  # one element a byte: packed
        values = np.frombuffer(data, dtype.numpy)
        lo, hi = dtype.range
        if values.size and not lo <= int(values.min()) <= int(values.max()) <= hi:
            raise ModelError(sp, f"{files.shown(source)} holds values outside {dtype}'s range [{lo}, {hi}]")
        return tensor.pack(values, dtype), dtype
    if dtype is not None and dtype != file_type:
        raise ModelError(p[:-1] + ("initialValuesDataType",), f"is {dtype} but {files.shown(source)} holds {file_type}")
    return data, file_type


_NPY_MAGIC = b"\x93NUMPY"
# numpy's own reader refuses headers past 10,000 bytes (np.load's max_header_size): a header is
# a short dict, and a long one is a way to make literal_eval work hard.
_NPY_MAX_HEADER = 10_000


def read_npy(raw: bytes, p: JsonPath, source: str) -> tuple[dtypes.DataType, bytes]:
    """The data type and the bytes after the header; pickles (object arrays) are refused."""

    def bad(why: str) -> ModelError:
        return ModelError(p, f"{files.shown(source)} is not a valid .npy file: {why}")

    if not raw.startswith(_NPY_MAGIC) or len(raw) < 10:
        raise bad("missing the NUMPY magic")
    major = raw[6]
    if major == 1:
        (hlen,), start = struct.unpack("<H", raw[8:10]), 10
    elif major in (2, 3):
        if len(raw) < 12:
            raise bad("truncated header")
        (hlen,), start = struct.unpack("<I", raw[8:12]), 12
    else:
        raise bad(f"format version {major} is not supported")
    if hlen > _NPY_MAX_HEADER:
        raise bad(f"a header of {hlen} bytes (numpy reads at most {_NPY_MAX_HEADER})")
    if start + hlen > len(raw):
        raise bad("truncated header")
    try:
        header = ast.literal_eval(raw[start : start + hlen].decode("latin1"))
        descr, fortran, shape = header["descr"], header["fortran_order"], header["shape"]
        np_type = np.dtype(descr)
    except Exception:  # any malformed header is the file's fault, not ours
        raise bad("malformed header") from None
    if fortran:
        raise bad("Fortran-ordered arrays are not supported")
    if np_type.hasobject or np_type.fields is not None or np_type.subdtype is not None:
        raise bad(f"dtype {descr!r} is not a plain numeric type (pickles are refused)")
    if np_type.kind == "b":
        np_type = np.dtype(np.int8)  # as DxDispatch: bool reads as INT8
    dtype = dtypes.BY_NUMPY.get(np_type.newbyteorder("="))
    if dtype is None:
        raise bad(f"dtype {descr!r} has no DirectML data type")
    data = raw[start + hlen :]
    if np_type.byteorder == ">":
        data = np.frombuffer(data[: len(data) // dtype.size * dtype.size], np_type).astype(dtype.numpy).tobytes()
    if not isinstance(shape, tuple) or not all(isinstance(d, int) and d >= 0 for d in shape):
        raise bad("malformed shape")
    expected = math.prod(shape) * dtype.size
    if expected > limits.max_bytes():
        raise bad(f"the array is larger than the {_limit()}")
    if len(data) < expected:
        data += bytes(expected - len(data))  # DxDispatch zero-pads a short file
    return dtype, data
