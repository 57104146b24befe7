"""Matrix cases for DML_OPERATOR_PADDING and PADDING1 (dml2onnx/ops/padding.py): every data type
of each page's newest table at 1 to 8 dimensions, each mode (CONSTANT, EDGE, REFLECTION,
SYMMETRIC, WRAP), padding narrower than, as wide as and wider than the input (REFLECTION and
SYMMETRIC keep folding), a dimension of 1, PADDING's FLOAT value as each type converts it
(fractions, negatives into unsigned types, out of range, NaN) and PADDING1's typed values (the
types' extremes, beyond 2**53, -0), with inputs that must move bit for bit."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from dml2onnx.cases.common import Case, tensor_of
from dml2onnx.cases.slice import data
from dml2onnx.core import dtypes, operator_table

MODES = ("CONSTANT", "EDGE", "REFLECTION", "SYMMETRIC", "WRAP")
SHAPE = (3, 2, 4, 1, 3, 2, 2, 2)
FLOAT_VALUES = (9.0, -10.6, 300.0, 1e10, float("nan"), -0.0, 2.0**63)


def _typed(dtype: dtypes.DataType, k: int) -> Any:
    if dtype.is_float:
        return (7.5, -0.0, "nan", "inf")[k % 4]
    info = np.iinfo(dtype.numpy)
    pool = [int(info.max), int(info.min), 0] + ([2**53 + 1] if dtype.size == 8 else [])
    return pool[k % len(pool)]


def _pads(shape: tuple[int, ...], mode: str, width: str) -> tuple[list[int], list[int]]:
    starts, ends = [], []
    for i, n in enumerate(shape):
        if width == "narrow":
            s, e = (1, 0) if i % 2 == 0 else (0, 2)
            if mode == "REFLECTION" and n == 1:
                s, e = 0, 0
        elif width == "wide":  # wider than the input: folding again
            s, e = (2 * n + 1, n) if i % 3 == 0 else (0, 0)
        else:  # as wide as the input: REFLECTION reaches the opposite edge and one past
            s, e = (n, n - 1) if i == len(shape) - 1 else (0, 0)
        starts.append(s), ends.append(e)
    return starts, ends


def cases() -> Iterator[Case]:
    rng = np.random.default_rng(83)
    k = 0
    for op in ("PADDING", "PADDING1"):
        for dtype in operator_table.OPERATORS[op].support[0].tensors["InputTensor"].types:
            for rank in range(1, 9):
                k += 1
                mode = MODES[k % len(MODES)]
                width = ("narrow", "wide", "full")[k % 3]
                shape = SHAPE[:rank]
                starts, ends = _pads(shape, mode, width)
                out = [n + s + e for n, s, e in zip(shape, starts, ends, strict=True)]
                fields: dict[str, Any] = {
                    "InputTensor": tensor_of(dtype, shape),
                    "OutputTensor": tensor_of(dtype, out),
                    "PaddingMode": mode,
                }
                if op == "PADDING":
                    value = FLOAT_VALUES[k % len(FLOAT_VALUES)]
                    fields["PaddingValue"] = value
                else:
                    value = _typed(dtype, k)
                    fields |= {"PaddingValueDataType": dtype.name, "PaddingValue": value}
                fields |= {"DimensionCount": rank, "StartPadding": starts, "EndPadding": ends}
                name = f"{op}-{dtype}-rank{rank}-{mode}-{width}" + (f"-value{value}" if mode == "CONSTANT" else "")
                yield Case(name, op, fields, {"InputTensor": data(rng, shape, dtype)})
    for op in ("PADDING", "PADDING1"):  # every mode and width at 4 dimensions, and a single element
        for dtype in (dtypes.FLOAT16, dtypes.UINT64):
            for mode in MODES:
                for width in ("narrow", "wide", "full"):
                    for shape in ((2, 3, 1, 4), (1, 1, 1, 1)):
                        starts, ends = _pads(shape, mode, width)
                        out = [n + s + e for n, s, e in zip(shape, starts, ends, strict=True)]
                        fields = {
                            "InputTensor": tensor_of(dtype, shape),
                            "OutputTensor": tensor_of(dtype, out),
                            "PaddingMode": mode,
                        }
                        fields |= (
                            {"PaddingValue": -10.6}
                            if op == "PADDING"
                            else {"PaddingValueDataType": dtype.name, "PaddingValue": _typed(dtype, 1)}
                        )
                        fields |= {"DimensionCount": 4, "StartPadding": starts, "EndPadding": ends}
                        tag = "x".join(map(str, shape))
                        yield Case(f"{op}-{dtype}-{tag}-{mode}-{width}", op, fields, {"InputTensor": data(rng, shape, dtype)})
