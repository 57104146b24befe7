"""Matrix cases for MEAN_VARIANCE_NORMALIZATION1 and MEAN_VARIANCE_NORMALIZATION2: both data types,
ranks 1-8 with every axis pattern, each normalization flag, Scale/Bias per channel, per element,
broadcast or absent, every fused activation, and extreme offsets (a large mean, constant groups)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from dml2onnx.cases.common import ACTIVATIONS, SIZES, Case, axis_patterns, tensor_of
from dml2onnx.core import dtypes

MVN1, MVN2 = "MEAN_VARIANCE_NORMALIZATION1", "MEAN_VARIANCE_NORMALIZATION2"
FLAGS: dict[str, list[dict[str, bool]]] = {
    MVN1: [{"NormalizeVariance": True}, {"NormalizeVariance": False}],
    MVN2: [{"UseMean": m, "UseVariance": v} for m in (True, False) for v in (True, False)],
}


def _flag_id(flags: dict[str, bool]) -> str:
    return "-".join(f"{k}{int(v)}" for k, v in flags.items())


def _case(
    rng: np.random.Generator,
    op: str,
    dtype: dtypes.DataType,
    shape: tuple[int, ...],
    axes: list[int],
    flags: dict[str, bool],
    extras: dict[str, tuple[int, ...]],
    activation: str | None = None,
    data: str = "normal",
    name: str = "",
) -> Case:
    fields: dict[str, Any] = {
        "InputTensor": tensor_of(dtype, shape),
        "OutputTensor": tensor_of(dtype, shape),
        "AxisCount": len(axes),
        "Axes": axes,
        **flags,
        "Epsilon": 1e-5,
    }
    if data == "offset":  # a large common offset: the mean must be taken before the squares
        x = rng.standard_normal(shape) + 100
    elif data == "constant":  # every group constant: variance 0, only Epsilon divides
        x = np.full(shape, 3.0)
    else:
        x = rng.standard_normal(shape) * 3 + 2
    inputs = {"InputTensor": x.astype(dtype.numpy)}
    for extra, sizes in extras.items():
        fields[extra] = tensor_of(dtype, sizes)
        inputs[extra] = rng.uniform(-2, 2, sizes).astype(dtype.numpy)
    if activation:
        fields["FusedActivation"] = {"Type": activation, **ACTIVATIONS[activation]}
    short = "MVN1" if op == MVN1 else "MVN2"
    parts = [short, str(dtype), "x".join(map(str, shape)), name or "axes" + "".join(map(str, axes)), _flag_id(flags)]
    parts += ["+".join(f"{k.removesuffix('Tensor')}{'x'.join(map(str, s))}" for k, s in extras.items()) or "plain"]
    parts += [activation or "none", data]
    return Case("-".join(parts), op, fields, inputs)


def _broadcasts(shape: tuple[int, ...]) -> dict[str, dict[str, tuple[int, ...]]]:
    rank = len(shape)
    channel = tuple(s if i == 1 else 1 for i, s in enumerate(shape))
    return {
        "none": {},
        "per_channel": {"ScaleTensor": channel, "BiasTensor": channel},
        "full": {"ScaleTensor": shape, "BiasTensor": (1,) * rank},
        "scale_only": {"ScaleTensor": tuple(s if i % 2 == 0 else 1 for i, s in enumerate(shape))},
        "bias_only": {"BiasTensor": tuple(s if i == rank - 1 else 1 for i, s in enumerate(shape))},
    }


def cases() -> Iterator[Case]:
    yield from mvn_cases()
    yield from mvn1_mvn2_cases()


def mvn1_mvn2_cases() -> Iterator[Case]:
    rng = np.random.default_rng(5)
    for op, flag_sets in FLAGS.items():
        for dtype in dtypes.FLOATS:
            for rank in range(1, 9):
                shape = SIZES[:rank]
                patterns = dict(axis_patterns(rank))
                if rank >= 3:
                    patterns["spatial"] = list(range(2, rank))  # InstanceNormalization's form
                for pattern, axes in patterns.items():
                    for flags in flag_sets:
                        yield _case(rng, op, dtype, shape, axes, flags, {}, name=pattern)
                for kind, extras in _broadcasts(shape).items():
                    axes = list(range(2, rank)) if rank >= 3 else [rank - 1]
                    yield _case(rng, op, dtype, shape, axes, flag_sets[0], extras, name=f"{kind}")
            shape4 = (2, 3, 4, 5)
            for flags in flag_sets:
                for data in ("offset", "constant"):
                    yield _case(rng, op, dtype, shape4, [2, 3], flags, {}, data=data)
            for activation in ACTIVATIONS:
                extras = _broadcasts(shape4)["per_channel"]
                yield _case(rng, op, dtype, shape4, [3, 1, 2], flag_sets[0], extras, activation)


def mvn_cases() -> Iterator[Case]:
    rng = np.random.default_rng(4)
    shape = (2, 3, 4, 5)
    for dtype in dtypes.FLOATS:
        for activation in (None, *ACTIVATIONS):
            for cross in (False, True):
                for normalize in (False, True):
                    for extras in ((), ("ScaleTensor",), ("BiasTensor",), ("ScaleTensor", "BiasTensor")):
                        if activation is not None and extras != ("ScaleTensor", "BiasTensor"):
                            continue
                        fields: dict[str, Any] = {
                            "InputTensor": tensor_of(dtype, shape),
                            "OutputTensor": tensor_of(dtype, shape),
                            "CrossChannel": cross,
                            "NormalizeVariance": normalize,
                            "Epsilon": 1e-5,
                        }
                        inputs = {"InputTensor": (rng.standard_normal(shape) * 3 + 2).astype(dtype.numpy)}
                        for i, name in enumerate(extras):
                            sizes = (1, 3, 1, 1) if i == 0 else (1, 1, 4, 5)
                            fields[name] = tensor_of(dtype, sizes)
                            inputs[name] = rng.uniform(-2, 2, sizes).astype(dtype.numpy)
                        if activation:
                            fields["FusedActivation"] = {"Type": activation, **ACTIVATIONS[activation]}
                        name = activation or "none"
                        yield Case(
                            f"MVN-{dtype}-{name}-cross{int(cross)}-norm{int(normalize)}-{'+'.join(extras) or 'plain'}",
                            "MEAN_VARIANCE_NORMALIZATION",
                            fields,
                            inputs,
                        )
