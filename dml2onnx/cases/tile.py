"""Matrix cases for DML_OPERATOR_TILE (dml2onnx/ops/tile.py): every data type of the page's
newest table at 1 to 8 dimensions, repeating no dimension, one, several apart, and all of them
(8 dimensions repeated at once: more than one Expand step), with values that must move bit for
bit (extremes, beyond 2**53, NaN payloads, -0)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from dml2onnx.cases.common import Case, tensor_of
from dml2onnx.cases.slice import data
from dml2onnx.core import operator_table

SHAPE = (2, 3, 1, 2, 2, 1, 2, 1)


def _repeats(rank: int, pattern: str) -> list[int]:
    if pattern == "none":
        return [1] * rank
    if pattern == "one":
        return [1] * (rank - 1) + [3]
    if pattern == "apart":
        return [2 if i % 2 == 0 else 1 for i in range(rank)]
    return [2 + i % 2 for i in range(rank)]  # all


def cases() -> Iterator[Case]:
    rng = np.random.default_rng(61)
    patterns = ("one", "apart", "all", "none")
    for k, dtype in enumerate(operator_table.OPERATORS["TILE"].support[0].tensors["InputTensor"].types):
        for rank in range(1, 9):
            pattern = "all" if rank == 8 else patterns[(k + rank) % len(patterns)]
            shape = SHAPE[:rank]
            repeats = _repeats(rank, pattern)
            out = [n * r for n, r in zip(shape, repeats, strict=True)]
            fields = {
                "InputTensor": tensor_of(dtype, shape),
                "OutputTensor": tensor_of(dtype, out),
                "RepeatsCount": rank,
                "Repeats": repeats,
            }
            yield Case(f"TILE-{dtype}-rank{rank}-{pattern}", "TILE", fields, {"InputTensor": data(rng, shape, dtype)})
