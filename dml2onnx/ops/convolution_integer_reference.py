"""CONVOLUTION_INTEGER's and QUANTIZED_LINEAR_CONVOLUTION's meaning, apart from their lowering
(convolution_integer.py): the desc as convolution.py's forward cross-correlation, validation, and
the numpy reference (exact integer accumulation, then the requantization in FLOAT32)."""

from __future__ import annotations

from typing import Any

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc, TensorDesc
from dml2onnx.core.errors import ModelError
from dml2onnx.ops import common, convolution

QUANTIZED = "QUANTIZED_LINEAR_CONVOLUTION"
ARRAYS = ("Strides", "Dilations", "StartPadding", "EndPadding")


class Forward:
    """The desc seen as convolution.py's FORWARD CROSS_CORRELATION desc without Bias, OutputPadding
    or fused activation: its shape rules and reference apply as they are."""

    def __init__(self, desc: OperatorDesc) -> None:
        self.desc = desc
        dims = desc["DimensionCount"]
        self._fixed = {"Mode": "CROSS_CORRELATION", "Direction": "FORWARD", "OutputPadding": (0,) * dims}
        self._fixed["FusedActivation"] = None

    def __getitem__(self, name: str) -> Any:
        return self._fixed[name] if name in self._fixed else self.desc[name]

    def at(self, name: str, *more: str | int) -> Any:
        return self.desc.at(name, *more)

    def tensor(self, name: str) -> TensorDesc:
        return self.desc.tensor(name)

    def optional_tensor(self, name: str) -> TensorDesc | None:
        return self.desc.optional_tensor(name) if name != "BiasTensor" else None


def quantized(desc: OperatorDesc) -> bool:
    return desc.schema.name == QUANTIZED


def accumulation_length(desc: OperatorDesc) -> int:
    """K: the products summed into one output element (C/G * kernel volume)."""
    return convolution.accumulation_length(Forward(desc))  # type: ignore[arg-type]


def largest_centred(desc: OperatorDesc, name: str, zero: str) -> int:
    """The largest |value - zero point| the types allow: 255 with a zero point, else the type's."""
    if desc.optional_tensor(zero) is not None:
        return 255
    return 128 if desc.tensor(name).data_type == dtypes.INT8 else 255


# -- validation -----------------------------------------------------------------------------------


def validate(desc: OperatorDesc) -> None:
    for name in ("FilterTensor", "OutputTensor", "BiasTensor"):
        if name in desc.values:
            common.check_same_rank(desc, name, "InputTensor")
    common.check_same_type(desc, "InputZeroPointTensor", "InputTensor")
    common.check_same_type(desc, "FilterZeroPointTensor", "FilterTensor")
    if quantized(desc):
        common.check_same_type(desc, "OutputZeroPointTensor", "OutputTensor")
    elif desc.optional_tensor("InputZeroPointTensor") is not None:
        common.check_same_rank(desc, "FilterZeroPointTensor", "InputZeroPointTensor")
    rank = desc.tensor("InputTensor").rank
    dims = desc["DimensionCount"]
    if dims != rank - 2:
        raise ModelError(
            desc.at("DimensionCount"),
            f"must be {rank - 2}: the spatial dimensions of the {rank}-D tensors (rank minus batch and channel), not {dims}",
        )
    for name in ARRAYS:
        if len(desc[name]) != dims:
            raise ModelError(desc.at(name), f"{name} must have DimensionCount ({dims}) elements, not {len(desc[name])}")
        if name in ("Strides", "Dilations"):
            for i, v in enumerate(desc[name]):
                if v < 1:
                    raise ModelError(desc.at(name, i), f"{name} must be at least 1, not {v}")
    forward = Forward(desc)
    convolution._check_channels(forward)  # type: ignore[arg-type]
    bias = desc.values.get("BiasTensor")
    if bias is not None:  # convolution.py's rule on BiasTensor's sizes, {1, M, 1...}
        m = desc.tensor("OutputTensor").sizes[1]
        for i, s in enumerate(bias.sizes):
            if s != (m if i == 1 else 1):
                raise ModelError(
                    desc.at("BiasTensor", "Sizes", i), f"must be {m if i == 1 else 1} (BiasTensor is {{1, M, 1...}}), not {s}"
                )
    convolution._check_output(forward)  # type: ignore[arg-type]
    m = desc.tensor("OutputTensor").sizes[1]
    for name in ("InputZeroPointTensor", "InputScaleTensor", "OutputScaleTensor", "OutputZeroPointTensor"):
        _check_values(desc, name, None)
    for name in ("FilterZeroPointTensor", "FilterScaleTensor"):
        _check_values(desc, name, m)
    for prefix in ("Input", "Filter", "Output"):  # DirectML refuses (E_INVALIDARG) other sizes
        zero, scale = desc.values.get(f"{prefix}ZeroPointTensor"), desc.values.get(f"{prefix}ScaleTensor")
        if zero is not None and scale is not None and zero.sizes != scale.sizes:
            raise ModelError(
                desc.at(f"{prefix}ZeroPointTensor", "Sizes"),
                f"must be {prefix}ScaleTensor's Sizes {list(scale.sizes)} (a zero point has its scale's sizes),"
                f" not {list(zero.sizes)}",
            )


def _check_values(desc: OperatorDesc, name: str, channels: int | None) -> None:
    """One value (sizes all 1), or with `channels`, one per output channel on dimension 1."""
    t = desc.values.get(name)
    if t is None:
        return
    per_channel = channels is not None and t.rank >= 2 and t.sizes[1] == channels
    for i, s in enumerate(t.sizes):
        if s != 1 and not (per_channel and i == 1):
            want = "1" if channels is None else f"1 ({name} is {{1, 1, 1, 1}} or {{1, M, 1, 1}}, M = {channels})"
            raise ModelError(desc.at(name, "Sizes", i), f"must be {want}, not {s}")


# -- reference ------------------------------------------------------------------------------------


def _centred_values(x: np.ndarray, zero: np.ndarray | None) -> np.ndarray:
    """x - zero point (one value, or one per output channel along x's dimension 0) in FLOAT64."""
    v = x.astype(np.float64)
    if zero is None:
        return v
    z = zero.astype(np.float64).reshape(-1)
    return v - z.reshape([-1] + [1] * (x.ndim - 1)) if z.size > 1 else v - z[0]


def accumulate(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    """acc (+ Bias), exact (convolution.py's FLOAT64 sums of integers below 2**53), wrapped to INT32."""
    x = _centred_values(inputs["InputTensor"], inputs.get("InputZeroPointTensor"))
    w = _centred_values(inputs["FilterTensor"], inputs.get("FilterZeroPointTensor"))
    acc = convolution.reference(Forward(desc), {"InputTensor": x, "FilterTensor": w}).astype(np.int64)  # type: ignore[arg-type]
    if inputs.get("BiasTensor") is not None:
        acc = acc + inputs["BiasTensor"].astype(np.int64)
    return acc.astype(np.int32)  # numpy wraps: two's complement


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    acc = accumulate(desc, inputs)
    if not quantized(desc):
        return acc
    one = lambda name: np.float32(inputs[name].reshape(-1)[0])  # noqa: E731
    w_scale = inputs["FilterScaleTensor"].astype(np.float32).reshape([1, -1] + [1] * (acc.ndim - 2))
    multiplier = (one("InputScaleTensor") * w_scale) / one("OutputScaleTensor")
    with np.errstate(all="ignore"):
        r = np.rint(acc.astype(np.float32) * multiplier)
        if inputs.get("OutputZeroPointTensor") is not None:
            r = r + one("OutputZeroPointTensor")
    out = desc.tensor("OutputTensor").data_type.numpy
    info = np.iinfo(out)
    return np.clip(r, info.min, info.max).astype(out)
