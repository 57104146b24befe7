"""Matrix cases for DML_OPERATOR_SLICE, SLICE1 and SLICE_GRAD (dml2onnx/ops/slice.py): every data
type of each page's newest table at 1 to 8 dimensions, with windows that are whole, contiguous,
strided, at the input's far edge, shorter than the window allows (SLICE1, SLICE_GRAD) and
reversed (negative strides), and values that must move bit for bit: the types' extremes, INT64
and UINT64 beyond 2**53, FLOAT NaN payloads, infinities and -0."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from dml2onnx.cases.common import Case, tensor_of, values
from dml2onnx.core import dtypes, operator_table

SIZES_BIG = (5, 4, 3, 2, 3, 2, 2, 2)


def data(rng: np.random.Generator, shape: tuple[int, ...], dtype: dtypes.DataType) -> np.ndarray:
    """Values with the bit patterns a conversion would change: NaN payloads, -0, infinities."""
    x = values(rng, shape, dtype, "extreme")
    if dtype.is_float and x.size >= 4:
        bits = {2: [0x7D01, 0xFE03, 0x8000, 0x7C00], 4: [0x7F800001, 0xFFC12345, 0x80000000, 0xFF800000]}
        bits[8] = [0x7FF0000000000001, 0xFFF8000000000123, 0x8000000000000000, 0x7FF0000000000000]
        flat = x.reshape(-1).view(f"u{dtype.size}")
        flat[:4] = bits[dtype.size]
        x = rng.permutation(flat).view(dtype.numpy).reshape(shape)
    return x


def _windows(rank: int, pattern: str) -> tuple[list[int], list[int], list[int], list[int]]:
    """(offsets, window sizes, strides, output sizes) over SIZES_BIG[:rank]."""
    full = SIZES_BIG[:rank]
    offsets, sizes, strides, outs = [], [], [], []
    for i, n in enumerate(full):
        o, w, s = 0, n, 1
        if pattern == "contiguous" and n > 1:
            o, w = 1, n - 1
        elif pattern == "strided" and n > 2:
            o, w, s = 1, n - 1, 2
        elif pattern == "edge" and i == rank - 1:
            o, w, s = n - 1, 1, 3
        elif pattern == "reversed" and i % 2 == 0:
            s = -1 if n < 3 else -2
        elif pattern == "short" and n > 2:
            w, s = n, 2  # the output takes fewer elements than the window allows
        most = 1 + (w - 1) // abs(s)
        out = most - 1 if pattern == "short" and n > 2 and most > 1 else most
        offsets.append(o), sizes.append(w), strides.append(s), outs.append(out)
    return offsets, sizes, strides, outs


PATTERNS = ("whole", "contiguous", "strided", "edge", "reversed", "short")


def cases() -> Iterator[Case]:
    rng = np.random.default_rng(71)
    for op in ("SLICE", "SLICE1", "SLICE_GRAD"):
        table = operator_table.OPERATORS[op].support[0]
        types = table.tensors["InputGradientTensor" if op == "SLICE_GRAD" else "InputTensor"].types
        for k, dtype in enumerate(types):
            for rank in range(1, 9):
                pattern = PATTERNS[(k + rank) % len(PATTERNS)]
                if op == "SLICE" and pattern in ("reversed", "short"):
                    pattern = "strided"
                offsets, sizes, strides, outs = _windows(rank, pattern)
                full = SIZES_BIG[:rank]
                fields = {"DimensionCount": rank}
                if op == "SLICE":
                    fields |= {"InputTensor": tensor_of(dtype, full), "OutputTensor": tensor_of(dtype, outs)}
                    fields |= {"Offsets": offsets, "Sizes": outs, "Strides": [abs(s) for s in strides]}
                    feeds = {"InputTensor": data(rng, full, dtype)}
                else:
                    window = {"InputWindowOffsets": offsets, "InputWindowSizes": sizes, "InputWindowStrides": strides}
                    if op == "SLICE1":
                        fields |= {"InputTensor": tensor_of(dtype, full), "OutputTensor": tensor_of(dtype, outs)} | window
                        feeds = {"InputTensor": data(rng, full, dtype)}
                    else:
                        fields |= {
                            "InputGradientTensor": tensor_of(dtype, outs),
                            "OutputGradientTensor": tensor_of(dtype, full),
                        } | window
                        feeds = {"InputGradientTensor": data(rng, tuple(outs), dtype)}
                yield Case(f"{op}-{dtype}-rank{rank}-{pattern}", op, fields, feeds)
        for dtype in (dtypes.FLOAT32, dtypes.INT64):  # every pattern at 4 dimensions
            for pattern in PATTERNS:
                if op == "SLICE" and pattern in ("reversed", "short"):
                    continue
                offsets, sizes, strides, outs = _windows(4, pattern)
                strides = [-s if i == 3 and op != "SLICE" else s for i, s in enumerate(strides)]
                full = SIZES_BIG[:4]
                if op == "SLICE":
                    fields = {"InputTensor": tensor_of(dtype, full), "OutputTensor": tensor_of(dtype, outs), "DimensionCount": 4}
                    fields |= {"Offsets": offsets, "Sizes": outs, "Strides": strides}
                    feeds = {"InputTensor": data(rng, full, dtype)}
                elif op == "SLICE1":
                    fields = {"InputTensor": tensor_of(dtype, full), "OutputTensor": tensor_of(dtype, outs), "DimensionCount": 4}
                    fields |= {"InputWindowOffsets": offsets, "InputWindowSizes": sizes, "InputWindowStrides": strides}
                    feeds = {"InputTensor": data(rng, full, dtype)}
                else:
                    fields = {"InputGradientTensor": tensor_of(dtype, outs), "OutputGradientTensor": tensor_of(dtype, full)}
                    fields |= {"DimensionCount": 4, "InputWindowOffsets": offsets, "InputWindowSizes": sizes}
                    fields |= {"InputWindowStrides": strides}
                    feeds = {"InputGradientTensor": data(rng, tuple(outs), dtype)}
                yield Case(f"{op}-{dtype}-rank4-all-{pattern}", op, fields, feeds)
