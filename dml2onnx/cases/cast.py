"""Matrix cases for CAST (dml2onnx/ops/cast.py: every pair of the page's newest table's types at
ranks 1-8, and each type's edges: the integer types' ends, values beyond 2**53 and 2**63, NaN,
infinities, halves, FLOAT16's overflow) and the fills (dml2onnx/ops/fill_value.py: every type,
ranks 1-8, sequences that wrap). INT64/UINT64 to FLOAT64 are left out: under vkd3d DirectML's
kernel for them fails to build ("Failed to create Vulkan compute pipeline"); tests/ops/test_cast.py
covers them on ONNX Runtime."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from dml2onnx.cases.common import SIZES, Case, tensor_of
from dml2onnx.core import dtypes, operator_table

UNRUNNABLE = {("INT64", "FLOAT64"), ("UINT64", "FLOAT64")}


def edges(t: dtypes.DataType) -> np.ndarray:
    if t.is_float:
        pool = [0, -0.0, 1.5, -1.5, 2.5, -0.7, 1e10, -1e10, np.inf, -np.inf, np.nan, 300, -300, 70000, 65520]
        pool += [3e9, -3e9, 2.0**31, 2.0**32, 2.0**63, -(2.0**63), 1e19, 2.0**53 + 2, 255.9, -128.9, 2147483646.0]
        with np.errstate(over="ignore"):
            return np.array(pool, np.float64).astype(t.numpy)
    info = np.iinfo(t.numpy)
    pool = [int(info.min), int(info.min) + 1, -300, -129, -128, -1, 0, 1, 127, 128, 255, 256, 300, 65535, 65536]
    pool += [2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**53 + 1, 2**62 + 3, int(info.max) - 1, int(info.max)]
    return np.array([v for v in pool if info.min <= v <= info.max], dtype=object).astype(t.numpy)


def _random(rng: np.random.Generator, t: dtypes.DataType, shape: tuple[int, ...]) -> np.ndarray:
    pool = edges(t)
    return rng.choice(pool, size=shape) if not t.is_float else (rng.standard_normal(shape) * 100).astype(t.numpy)


def cast_cases(rng: np.random.Generator) -> Iterator[Case]:
    types = operator_table.OPERATORS["CAST"].support[0].tensors["InputTensor"].types
    outs = operator_table.OPERATORS["CAST"].support[0].tensors["OutputTensor"].types
    for src in types:
        for dst in outs:
            if (src.name, dst.name) in UNRUNNABLE:
                continue
            x = edges(src)
            yield Case(f"CAST-{src}-{dst}-edges", "CAST", _io(src, dst, x.shape), {"InputTensor": x})
            r = (len(src.name) + len(dst.name)) % 8 + 1
            x = _random(rng, src, SIZES[:r])
            yield Case(f"CAST-{src}-{dst}-rank{r}", "CAST", _io(src, dst, x.shape), {"InputTensor": x})
    for r in range(1, 9):
        x = _random(rng, dtypes.FLOAT32, SIZES[:r])
        yield Case(f"CAST-FLOAT32-INT8-ranks{r}", "CAST", _io(dtypes.FLOAT32, dtypes.INT8, x.shape), {"InputTensor": x})


def _io(src: dtypes.DataType, dst: dtypes.DataType, shape: tuple[int, ...]) -> dict:
    return {"InputTensor": tensor_of(src, shape), "OutputTensor": tensor_of(dst, shape)}


def _fill_values(t: dtypes.DataType) -> list[tuple[str, list]]:
    if t.is_float:
        return [("plain", [3.2, 1.5]), ("negative", [-2.5, -0.25]), ("special", [-0.0, "nan"])]
    info = np.iinfo(t.numpy)
    return [("plain", [3, 2]), ("wrap", [int(info.max) - 5, 1]), ("ends", [int(info.min), int(info.max)])]


def fill_cases() -> Iterator[Case]:
    for op in ("FILL_VALUE_CONSTANT", "FILL_VALUE_SEQUENCE"):
        for t in operator_table.OPERATORS[op].support[0].tensors["OutputTensor"].types:
            for r in range(1, 9):
                for label, (start, delta) in _fill_values(t)[r % 3 : r % 3 + 1] if r > 1 else _fill_values(t):
                    fields = {"OutputTensor": tensor_of(t, SIZES[:r]), "ValueDataType": t.name}
                    if op == "FILL_VALUE_CONSTANT":
                        fields["Value"] = start
                    else:
                        fields |= {"ValueStart": start, "ValueDelta": delta}
                    yield Case(f"{op}-{t}-rank{r}-{label}", op, fields, {})


def cases() -> Iterator[Case]:
    yield from cast_cases(np.random.default_rng(61))
    yield from fill_cases()
