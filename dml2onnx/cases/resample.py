"""Matrix cases for DML_OPERATOR_UPSAMPLE_2D, …_RESAMPLE, …_RESAMPLE1, …_RESAMPLE2, …_RESAMPLE3
(dml2onnx/ops/resample.py) and …_VALUE_SCALE_2D (value_scale_2d.py): every data type of each page's
newest table, every dimension count allowed, both interpolation modes, both rounding directions
(RESAMPLE2, RESAMPLE3), Antialiased TRUE and FALSE in turn, and RESAMPLE3's own geometries below
0.5 with it TRUE (DirectML's iterative downsampling: half-pixel, corners, tf's pair, and offsets on
axis 0 that DirectML computes within a few ulps of the passes), scales up and down, dyadic and
not, pixel offsets at the centres, the corners and in between.
NEAREST moves values (bit patterns checked: NaN payloads, -0, extremes); LINEAR on INT8/UINT8 keeps
dyadic weights (exact in FLOAT32 whatever the order of the lerps, so the truncation is exact too),
and floats keep |x| <= tolerances.RESAMPLE_MAGNITUDE."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from dml2onnx.cases.common import Case, tensor_of
from dml2onnx.cases.slice import data
from dml2onnx.core import dtypes, operator_table
from dml2onnx.lowering.tolerances import RESAMPLE_MAGNITUDE

SHAPE = (2, 3, 3, 4)
HALF = (0.5, -0.5)  # (input, output) offsets of pixel centres (RESAMPLE's)
# name: (scale of the scaled axes, (input offset, output offset), dyadic)
GEOMETRIES = {
    "up2": (2.0, HALF, True),
    "down2": (0.5, HALF, True),
    "up4-corners": (4.0, (0.0, 0.0), True),
    "shift": (1.0, (0.25, 0.75), True),
    "up1.5": (1.5, HALF, False),
    "up3-corners": (3.0, (0.0, 0.0), False),
    "down0.75": (0.75, (0.0, 0.5), False),
}
# RESAMPLE3 only, Antialiased TRUE: the iterative downsampling (ops/resample.py)
ANTIALIASED = {
    "aa-down0.3": (0.3, HALF, False),
    "aa-down0.25-corners": (0.25, (0.0, 0.0), True),  # 4 -> 2 -> 1 at whole coordinates: dyadic
    "aa-down0.3-tf": (0.3, (0.0, -0.5), False),
    "aa-down0.4-offsets": (0.4, (0.3, 0.1), False),  # not exact in DirectML: a few ulps (tolerances.py)
}
MODES = ("NEAREST_NEIGHBOR", "LINEAR")


def _values(rng: np.random.Generator, shape: tuple[int, ...], dtype: dtypes.DataType, mode: str) -> np.ndarray:
    if mode == "NEAREST_NEIGHBOR" or not dtype.is_float:
        return data(rng, shape, dtype)
    return rng.uniform(-RESAMPLE_MAGNITUDE, RESAMPLE_MAGNITUDE, shape).astype(dtype.numpy)


def _out(n: int, scale: float) -> int:
    return max(1, int(n * scale) + (0 if float(n * scale).is_integer() else 1))


def _resample_cases(op: str, rng: np.random.Generator) -> Iterator[Case]:
    table = operator_table.OPERATORS[op].support[0].tensors["InputTensor"]
    lo, hi = table.ranks
    k = 0
    for dtype in table.types:
        for rank in range(lo, hi + 1):
            shape = SHAPE[-rank:]
            for mode in MODES:
                geometries = GEOMETRIES | (ANTIALIASED if op == "RESAMPLE3" else {})
                for name, (scale, (ip, op_), dyadic) in geometries.items():
                    k += 1
                    if mode == "LINEAR" and not dtype.is_float and not dyadic:
                        continue
                    if rank != hi and name not in ("up2", "up1.5", "down2", "aa-down0.3", "aa-down0.25-corners"):
                        continue  # fewer geometries at the lower ranks
                    if op == "RESAMPLE" and (ip, op_) != HALF:
                        continue
                    # the last two axes scaled (the last one alone at rank 1), all four every third case
                    scaled = set(range(rank)) if k % 3 == 0 else {rank - 1, max(0, rank - 2)}
                    scales = [scale if a in scaled else 1.0 for a in range(rank)]
                    outs = [_out(n, s) for n, s in zip(shape, scales, strict=True)]
                    fields = {
                        "InputTensor": tensor_of(dtype, shape),
                        "OutputTensor": tensor_of(dtype, outs),
                        "InterpolationMode": mode,
                    }
                    if op == "RESAMPLE":
                        fields |= {"ScaleCount": rank, "Scales": scales}
                    else:
                        fields |= {
                            "DimensionCount": rank,
                            "Scales": scales,
                            "InputPixelOffsets": [ip if a in scaled else 0.5 for a in range(rank)],
                            "OutputPixelOffsets": [op_ if a in scaled else -0.5 for a in range(rank)],
                        }
                    directions: tuple[str | None, ...] = (None,)
                    if op == "RESAMPLE3":
                        fields["Antialiased"] = k % 2 == 0 or name.startswith("aa-")
                    if op in ("RESAMPLE2", "RESAMPLE3"):  # both at the highest rank, else one in turn (LINEAR ignores it)
                        both = rank == hi and mode == "NEAREST_NEIGHBOR"
                        directions = ("INCREASING", "DECREASING") if both else (("INCREASING", "DECREASING")[k % 2],)
                        k += len(directions) - 1
                    for d in directions:
                        f = fields | ({"RoundingDirection": d} if d else {})
                        x = _values(rng, shape, dtype, mode)
                        yield Case(f"{op}-{dtype}-rank{rank}-{mode}-{name}{'-' + d if d else ''}", op, f, {"InputTensor": x})


def _upsample_cases(rng: np.random.Generator) -> Iterator[Case]:
    for dtype in operator_table.OPERATORS["UPSAMPLE_2D"].support[0].tensors["InputTensor"].types:
        for rank in (4, 5):
            shape = (1, 2, 2, 3, 3)[-rank:]
            for mode in MODES:
                for w, h in ((2, 2), (3, 1), (1, 4)):
                    outs = [*shape[:-2], shape[-2] * h, shape[-1] * w]
                    fields = {
                        "InputTensor": tensor_of(dtype, shape),
                        "OutputTensor": tensor_of(dtype, outs),
                        "InterpolationMode": mode,
                        "ScaleSize": {"Width": w, "Height": h},
                    }
                    x = _values(rng, shape, dtype, mode)
                    yield Case(f"UPSAMPLE_2D-{dtype}-rank{rank}-{mode}-{w}x{h}", "UPSAMPLE_2D", fields, {"InputTensor": x})


def _value_scale_cases(rng: np.random.Generator) -> Iterator[Case]:
    for dtype in operator_table.OPERATORS["VALUE_SCALE_2D"].support[0].tensors["InputTensor"].types:
        for channels, bias in ((1, [0.25]), (3, [1.0, -2.5, 0.0])):
            for scale in (0.5, -3.0, 1.0):
                shape = (2, channels, 3, 4)
                fields = {
                    "InputTensor": tensor_of(dtype, shape),
                    "OutputTensor": tensor_of(dtype, shape),
                    "Scale": scale,
                    "ChannelCount": channels,
                    "Bias": bias,
                }
                x = rng.uniform(-RESAMPLE_MAGNITUDE, RESAMPLE_MAGNITUDE, shape).astype(dtype.numpy)
                yield Case(f"VALUE_SCALE_2D-{dtype}-C{channels}-scale{scale}", "VALUE_SCALE_2D", fields, {"InputTensor": x})


def cases() -> Iterator[Case]:
    rng = np.random.default_rng(2121)
    yield from _upsample_cases(rng)
    for op in ("RESAMPLE", "RESAMPLE1", "RESAMPLE2", "RESAMPLE3"):
        yield from _resample_cases(op, rng)
    yield from _value_scale_cases(rng)
