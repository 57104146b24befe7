"""Matrix cases for the integer matrix multiplies (dml2onnx/ops/matrix_multiply_integer.py):
MATRIX_MULTIPLY_INTEGER and QUANTIZED_LINEAR_MATRIX_MULTIPLY with every pairing of INT8/UINT8, 2 to
4 dimensions, no / per-tensor / per-row-and-column zero points (of 1 to 4 dimensions), K = 3 and
K = 300 (chunked), the types' extremes (|x - zero point| = 255), an INT32 sum that wraps (K =
33100) and requantization ties; MATRIX_MULTIPLY_INTEGER_TO_FLOAT with every integer type and both
float types, with and without Bias, its dequantized values in [-1, 1] (tolerances.integer_to_float)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from dml2onnx.cases.common import Case, tensor_of
from dml2onnx.core import dtypes
from dml2onnx.lowering.tolerances import INTEGER_TO_FLOAT_LENGTH

INTEGER, TO_FLOAT, QUANTIZED = "MATRIX_MULTIPLY_INTEGER", "MATRIX_MULTIPLY_INTEGER_TO_FLOAT", "QUANTIZED_LINEAR_MATRIX_MULTIPLY"
BYTES = (dtypes.INT8, dtypes.UINT8)
WIDE = (dtypes.INT32, dtypes.INT16, dtypes.INT8, dtypes.UINT32, dtypes.UINT16, dtypes.UINT8)
F32 = np.float32


def _ints(rng: np.random.Generator, t: dtypes.DataType, shape: tuple[int, ...], extreme: bool = False) -> np.ndarray:
    info = np.iinfo(t.numpy)
    if extreme:
        return rng.choice(np.array([info.min, info.max], np.int64), shape).astype(t.numpy)
    return rng.integers(int(info.min), int(info.max), shape, endpoint=True).astype(t.numpy)


def _quantization(zp: str, rank: int, m: int, n: int, one_rank: bool = True) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(A's, B's) scale and zero point sizes: 'tensor' (all 1), 'rows' (M, N, at rank), 'short'
    (M and N at the fewest dimensions DirectML takes: [M, 1] and [N], or [1, N] where the page
    wants `one_rank` for them all)."""
    if zp == "rows":
        return (1,) * (rank - 2) + (m, 1), (1,) * (rank - 1) + (n,)
    if zp == "short":
        return (m, 1), ((1, n) if one_rank else (n,))
    return (1,) * rank, (1,) * rank


def _case(op: str, name: str, fields: dict[str, Any], inputs: dict[str, np.ndarray]) -> Case:
    return Case(f"{op}-{name}", op, fields, inputs)


def integer_cases(rng: np.random.Generator) -> Iterator[Case]:
    for at in BYTES:
        for bt in BYTES:
            for rank, k, zp in ((2, 3, "tensor"), (3, 300, "rows"), (4, 5, "short"), (4, 300, "none"), (2, 7, "rows")):
                batch = (2, 3, 4, 5)[: rank - 2]
                m, n = 3, 4
                shapes = {"ATensor": (*batch, m, k), "BTensor": (*batch, k, n), "OutputTensor": (*batch, m, n)}
                fields = {
                    f: tensor_of(dtypes.INT32 if f == "OutputTensor" else (at if f == "ATensor" else bt), s)
                    for f, s in shapes.items()
                }
                for extreme in (False, True):
                    inputs = {
                        "ATensor": _ints(rng, at, shapes["ATensor"], extreme),
                        "BTensor": _ints(rng, bt, shapes["BTensor"], extreme),
                    }
                    f = dict(fields)
                    if zp != "none":
                        a_zp, b_zp = _quantization(zp, rank, m, n, one_rank=False)
                        f |= {"AZeroPointTensor": tensor_of(at, a_zp), "BZeroPointTensor": tensor_of(bt, b_zp)}
                        inputs |= {
                            "AZeroPointTensor": _ints(rng, at, a_zp, extreme),
                            "BZeroPointTensor": _ints(rng, bt, b_zp, extreme),
                        }
                    shape = "x".join(map(str, shapes["ATensor"]))
                    yield _case(INTEGER, f"{at}-{bt}-{shape}-K{k}-zp_{zp}-{'extreme' if extreme else 'random'}", f, inputs)
    # 33100 products of 255 * 255: the INT32 sum wraps
    k = 33100
    yield _case(
        INTEGER,
        "INT8-UINT8-1x33100-wraps",
        {
            "ATensor": tensor_of(dtypes.INT8, (1, k)),
            "AZeroPointTensor": tensor_of(dtypes.INT8, (1,)),
            "BTensor": tensor_of(dtypes.UINT8, (k, 2)),
            "OutputTensor": tensor_of(dtypes.INT32, (1, 2)),
        },
        {
            "ATensor": np.full((1, k), 127, np.int8),
            "AZeroPointTensor": np.array([-128], np.int8),
            "BTensor": np.stack([np.full(k, 255), np.arange(k) % 256], axis=1).astype(np.uint8),
        },
    )


def quantized_cases(rng: np.random.Generator) -> Iterator[Case]:
    for at in BYTES:
        for bt in BYTES:
            for ot in BYTES:
                for rank, k, per in ((2, 3, "tensor"), (3, 300, "rows"), (4, 6, "short"), (4, 40, "rows")):
                    batch = (2, 3, 4, 5)[: rank - 2]
                    m, n = 3, 4
                    shapes = {"ATensor": (*batch, m, k), "BTensor": (*batch, k, n), "OutputTensor": (*batch, m, n)}
                    types = {"ATensor": at, "BTensor": bt, "OutputTensor": ot}
                    fields = {f: tensor_of(types[f], s) for f, s in shapes.items()}
                    inputs = {"ATensor": _ints(rng, at, shapes["ATensor"]), "BTensor": _ints(rng, bt, shapes["BTensor"])}
                    a_q, b_q = _quantization(per, rank, m, n)
                    o_q = a_q
                    for prefix, t, sizes in (("A", at, a_q), ("B", bt, b_q), ("Output", ot, o_q)):
                        fields[f"{prefix}ScaleTensor"] = tensor_of(dtypes.FLOAT32, sizes)
                        fields[f"{prefix}ZeroPointTensor"] = tensor_of(t, sizes)
                        inputs[f"{prefix}ScaleTensor"] = rng.uniform(0.01, 0.1, sizes).astype(F32)
                        inputs[f"{prefix}ZeroPointTensor"] = (
                            rng.integers(-20, 20, sizes).astype(t.numpy)
                            if t == dtypes.INT8
                            else rng.integers(100, 150, sizes).astype(t.numpy)
                        )
                    # outputs around the type's range, some saturated
                    inputs["OutputScaleTensor"] = (inputs["OutputScaleTensor"] * np.sqrt(k) * 20).astype(F32)
                    shape = "x".join(map(str, shapes["ATensor"]))
                    yield _case(QUANTIZED, f"{at}-{bt}-{ot}-{shape}-K{k}-{per}", fields, inputs)
    yield _ties_case(rng)


def _ties_case(rng: np.random.Generator) -> Case:
    """K = 1 with per-row and per-column scales from a pool whose ratios make ties (0.1 / 0.2 * 3):
    the order of the scale products decides the rounding (ops docstring)."""
    m, n = 64, 64
    pool = F32([0.1, 0.3, 0.7, 1.1, 0.2, 0.6, 1.4, 2.2, 0.05, 0.15, 0.35, 0.55, 3.3, 0.9, 0.45, 0.25])
    fields = {
        "ATensor": tensor_of(dtypes.INT8, (m, 1)),
        "AScaleTensor": tensor_of(dtypes.FLOAT32, (m, 1)),
        "BTensor": tensor_of(dtypes.INT8, (1, n)),
        "BScaleTensor": tensor_of(dtypes.FLOAT32, (1, n)),
        "OutputScaleTensor": tensor_of(dtypes.FLOAT32, (m, 1)),
        "OutputZeroPointTensor": tensor_of(dtypes.INT8, (m, 1)),
        "OutputTensor": tensor_of(dtypes.INT8, (m, n)),
    }
    inputs = {
        "ATensor": rng.integers(-20, 21, (m, 1)).astype(np.int8),
        "AScaleTensor": rng.choice(pool, (m, 1)),
        "BTensor": rng.integers(-20, 21, (1, n)).astype(np.int8),
        "BScaleTensor": rng.choice(pool, (1, n)),
        "OutputScaleTensor": rng.choice(pool, (m, 1)),
        "OutputZeroPointTensor": rng.integers(-3, 4, (m, 1)).astype(np.int8),
    }
    return _case(QUANTIZED, "INT8-INT8-INT8-64x1-ties", fields, inputs)


def to_float_cases(rng: np.random.Generator) -> Iterator[Case]:
    for it in WIDE:
        for ft in dtypes.FLOATS:
            for rank, k, per, bias in (
                (2, 3, "tensor", True),
                (3, INTEGER_TO_FLOAT_LENGTH, "rows", False),
                (4, 7, "short", True),
            ):
                batch = (2, 3)[: rank - 2] if rank < 4 else (2, 1)
                m, n = 3, 4
                shapes = {"ATensor": (*batch, m, k), "BTensor": (*batch, k, n), "OutputTensor": (*batch, m, n)}
                fields = {f: tensor_of(ft if f == "OutputTensor" else it, s) for f, s in shapes.items()}
                inputs: dict[str, np.ndarray] = {}
                a_q, b_q = _quantization(per, rank, m, n)
                info = np.iinfo(it.numpy)
                for prefix, sizes in (("A", a_q), ("B", b_q)):
                    x = _ints(rng, it, shapes[f"{prefix}Tensor"])
                    zero = rng.integers(int(info.min) // 4, int(info.max) // 4, sizes, endpoint=True).astype(it.numpy)
                    fields[f"{prefix}ScaleTensor"] = tensor_of(ft, sizes)
                    fields[f"{prefix}ZeroPointTensor"] = tensor_of(it, sizes)
                    # |x - zero point| < 1.25 (max - min): scales keep every dequantized value in [-1, 1]
                    scale = rng.uniform(0.5, 0.8, sizes) / (1.25 * (float(info.max) - float(info.min)))
                    inputs |= {
                        f"{prefix}Tensor": x,
                        f"{prefix}ZeroPointTensor": zero,
                        f"{prefix}ScaleTensor": scale.astype(ft.numpy),
                    }
                if bias:
                    fields["BiasTensor"] = tensor_of(ft, shapes["OutputTensor"])
                    inputs["BiasTensor"] = rng.uniform(-1, 1, shapes["OutputTensor"]).astype(ft.numpy)
                shape = "x".join(map(str, shapes["ATensor"]))
                yield _case(TO_FLOAT, f"{it}-{ft}-{shape}-K{k}-{per}{'-bias' if bias else ''}", fields, inputs)


def cases() -> Iterator[Case]:
    rng = np.random.default_rng(23)
    yield from integer_cases(rng)
    yield from quantized_cases(rng)
    yield from to_float_cases(rng)
