"""Matrix cases for DML_OPERATOR_RESAMPLE_GRAD and …_RESAMPLE_GRAD1 (dml2onnx/ops/resample_grad.py):
both data types, every dimension count of the newest tables (1 to 4), both interpolation modes,
both rounding directions (RESAMPLE_GRAD1), the gradients of scaling up and down, by dyadic scales
and not, with the pixel offsets at the centres, the corners, unequal (where swapping them matters)
and a shift. OutputGradientTensor has SHAPE's trailing sizes, InputGradientTensor the forward's
output sizes; the gradients are finite with |g| <= tolerances.RESAMPLE_MAGNITUDE and every output
element a sum of at most tolerances.RESAMPLE_GRAD_TERMS terms (scaling all four axes only where
that holds)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from dml2onnx.cases.common import Case, tensor_of
from dml2onnx.core import desc as desc_module
from dml2onnx.core import operator_table
from dml2onnx.core.dtypes import DataType
from dml2onnx.lowering.tolerances import RESAMPLE_GRAD_TERMS, RESAMPLE_MAGNITUDE
from dml2onnx.ops import resample_grad

SHAPE = (2, 3, 3, 4)
HALF = (0.5, -0.5)  # (input, output) offsets of pixel centres
# name: (scale of the scaled axes, (InputPixelOffset, OutputPixelOffset))
GEOMETRIES = {
    "up2": (2.0, HALF),
    "down2": (0.5, HALF),
    "up3-corners": (3.0, (0.0, 0.0)),
    "up1.5": (1.5, HALF),
    "up2.5-unequal": (2.5, (0.25, 0.5)),
    "down0.75-unequal": (0.75, (0.0, 0.5)),
    "shift": (1.0, (0.25, 0.75)),
}
MODES = ("NEAREST_NEIGHBOR", "LINEAR")


def _out(n: int, scale: float) -> int:
    return max(1, int(n * scale) + (0 if float(n * scale).is_integer() else 1))


def _fields(op: str, dtype: DataType, rank: int, mode: str, scale: float, offsets: tuple[float, float], scaled: set[int]) -> dict:
    out = SHAPE[-rank:]
    scales = [scale if a in scaled else 1.0 for a in range(rank)]
    ip, op_ = offsets
    return {
        "InputGradientTensor": tensor_of(dtype, [_out(n, s) for n, s in zip(out, scales, strict=True)]),
        "OutputGradientTensor": tensor_of(dtype, out),
        "InterpolationMode": mode,
        "DimensionCount": rank,
        "Scales": scales,
        "InputPixelOffsets": [ip if a in scaled else 0.5 for a in range(rank)],
        "OutputPixelOffsets": [op_ if a in scaled else -0.5 for a in range(rank)],
    }


def _terms(op: str, fields: dict) -> int:
    f = fields | ({"RoundingDirection": "INCREASING"} if op == "RESAMPLE_GRAD1" else {})
    return resample_grad.terms(desc_module.parse_operator_desc(op, f, ("desc",), ("type",)))


def cases() -> Iterator[Case]:
    rng = np.random.default_rng(134)
    k = 0
    for op in resample_grad.ROWS:
        table = operator_table.OPERATORS[op].support[0].tensors["InputGradientTensor"]
        lo, hi = table.ranks
        for dtype in table.types:
            for rank in range(lo, hi + 1):
                for mode in MODES:
                    for name, (scale, offsets) in GEOMETRIES.items():
                        k += 1
                        if rank != hi and name not in ("up2", "down2", "up2.5-unequal"):
                            continue  # fewer geometries at the lower ranks
                        # the last two axes scaled (the last one alone at rank 1), all of them every
                        # third case where the sums stay within the tolerance's bound
                        scaled = {rank - 1, max(0, rank - 2)}
                        fields = _fields(op, dtype, rank, mode, scale, offsets, set(range(rank)))
                        if k % 3 == 0 and _terms(op, fields) <= RESAMPLE_GRAD_TERMS:
                            scaled = set(range(rank))
                        fields = _fields(op, dtype, rank, mode, scale, offsets, scaled)
                        assert _terms(op, fields) <= RESAMPLE_GRAD_TERMS
                        directions: tuple[str | None, ...] = (None,)
                        if op == "RESAMPLE_GRAD1":  # both at the highest rank, else one in turn
                            both = rank == hi and mode == "NEAREST_NEIGHBOR"
                            directions = ("INCREASING", "DECREASING") if both else (("INCREASING", "DECREASING")[k % 2],)
                        for d in directions:
                            f = fields | ({"RoundingDirection": d} if d else {})
                            shape = f["InputGradientTensor"]["Sizes"]
                            g = rng.uniform(-RESAMPLE_MAGNITUDE, RESAMPLE_MAGNITUDE, shape).astype(dtype.numpy)
                            case_id = f"{op}-{dtype}-rank{rank}-{mode}-{name}{'-' + d if d else ''}"
                            yield Case(case_id, op, f, {"InputGradientTensor": g})
