"""Matrix cases for JOIN and SPLIT (dml2onnx/ops/join.py, split.py): every data type of the newest
table (FLOAT64 and the 64-bit integers included), ranks 1 to 8, the axis first, last or in the
middle, one to three parts of different sizes along it (a part of size 1 too); floats as random
bit patterns (NaN payloads, infinities, subnormals, -0: data movement is bit for bit), integers
at their extremes (INT64/UINT64 beyond 2**53)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from dml2onnx.cases.common import SIZES, Case, int_values, tensor_of
from dml2onnx.core import dtypes, operator_table


def bit_patterns(rng: np.random.Generator, shape: tuple[int, ...], dtype: dtypes.DataType) -> np.ndarray:
    """Every bit pattern equally likely for floats (NaN payloads, -0, subnormals), the extremes for
    integers."""
    if not dtype.is_float:
        return int_values(rng, shape, dtype, "extreme")
    bits = np.dtype(f"u{dtype.size}")
    return rng.integers(0, np.iinfo(bits).max, size=shape, dtype=bits, endpoint=True).view(dtype.numpy)


def cases() -> Iterator[Case]:
    rng = np.random.default_rng(23)
    for dtype in operator_table.OPERATORS["JOIN"].support[0].tensors["InputTensors"].types:
        for rank in range(1, 9):
            axis = (0, rank - 1, rank // 2)[rank % 3]
            count = 1 + rank % 3
            whole = list(SIZES[:rank])
            part_sizes = [(1, 2, 3)[i] for i in range(count)]
            whole[axis] = sum(part_sizes)
            parts = [tuple(whole[:axis] + [s] + whole[axis + 1 :]) for s in part_sizes]
            pieces = [bit_patterns(rng, p, dtype) for p in parts]
            name = f"{dtype}-rank{rank}-axis{axis}-parts{count}"
            yield Case(
                f"JOIN-{name}",
                "JOIN",
                {
                    "InputCount": count,
                    "InputTensors": [tensor_of(dtype, p) for p in parts],
                    "OutputTensor": tensor_of(dtype, whole),
                    "Axis": axis,
                },
                {f"InputTensors[{i}]": x for i, x in enumerate(pieces)},
            )
            yield Case(
                f"SPLIT-{name}",
                "SPLIT",
                {
                    "InputTensor": tensor_of(dtype, whole),
                    "OutputCount": count,
                    "OutputTensors": [tensor_of(dtype, p) for p in parts],
                    "Axis": axis,
                },
                {"InputTensor": np.concatenate(pieces, axis=axis)},
            )
