"""The operator functions other than the element-wise activations, with DirectMLX's output
rules: ArgMax/ArgMin/Reduce keep the rank with 1 on each reduced axis, OneHot sets `axis` to
`output_length`, the others keep the input's data type and sizes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dml2onnx.core import schema
from dml2onnx.dmlx.activations import FusedActivation
from dml2onnx.dmlx.graph import Expression, json_float


def _same(function: str, op: str, x: Expression, fields: dict[str, Any] | None = None) -> Expression:
    return x.graph.call(function, op, {"InputTensor": x}, fields or {}, x.tensor_desc.data_type, x.sizes)


def _axes_form(function: str, op: str, x: Expression, axes: Sequence[int] | None) -> Expression:
    """DML_OPERATOR_<op> without axes, DML_OPERATOR_<op>1 with them."""
    return _same(function, op, x) if axes is None else _same(function, f"{op}1", x, {"Axes": list(axes)})


def ActivationHardmax(x: Expression, axes: Sequence[int] | None = None) -> Expression:
    """ACTIVATION_HARDMAX, or ACTIVATION_HARDMAX1 over `axes` (feature level 5_1)."""
    return _axes_form("ActivationHardmax", "ACTIVATION_HARDMAX", x, axes)


def ActivationLogSoftmax(x: Expression, axes: Sequence[int] | None = None) -> Expression:
    """ACTIVATION_LOG_SOFTMAX, or ACTIVATION_LOG_SOFTMAX1 over `axes` (feature level 5_1)."""
    return _axes_form("ActivationLogSoftmax", "ACTIVATION_LOG_SOFTMAX", x, axes)


def ActivationSoftmax(x: Expression, axes: Sequence[int] | None = None) -> Expression:
    """ACTIVATION_SOFTMAX, or ACTIVATION_SOFTMAX1 over `axes` (feature level 5_1), as DirectMLX's overloads."""
    return _axes_form("ActivationSoftmax", "ACTIVATION_SOFTMAX", x, axes)


def ActivationHardmax1(x: Expression, axes: Sequence[int]) -> Expression:
    """ACTIVATION_HARDMAX1 over `axes`."""
    return _axes_form("ActivationHardmax1", "ACTIVATION_HARDMAX", x, axes)


def ActivationLogSoftmax1(x: Expression, axes: Sequence[int]) -> Expression:
    """ACTIVATION_LOG_SOFTMAX1 over `axes`."""
    return _axes_form("ActivationLogSoftmax1", "ACTIVATION_LOG_SOFTMAX", x, axes)


def ActivationSoftmax1(x: Expression, axes: Sequence[int]) -> Expression:
    """ACTIVATION_SOFTMAX1 over `axes`."""
    return _axes_form("ActivationSoftmax1", "ACTIVATION_SOFTMAX", x, axes)


def _reduced(x: Expression, axes: Sequence[int]) -> list[int]:
    return [1 if i in axes else s for i, s in enumerate(x.sizes)]


def _arg(function: str, x: Expression, axes: Sequence[int], direction: str, output_type: str) -> Expression:
    fields = {"Axes": list(axes), "AxisDirection": direction}
    op = function.upper()
    return x.graph.call(function, op, {"InputTensor": x}, fields, output_type, _reduced(x, axes))


def ArgMax(x: Expression, axes: Sequence[int], direction: str = "INCREASING", output_type: str = "UINT32") -> Expression:
    """DML_OPERATOR_ARGMAX: `output_type` indices, 1 on each axis (DECREASING: the last maximum)."""
    return _arg("ArgMax", x, axes, direction, output_type)


def ArgMin(x: Expression, axes: Sequence[int], direction: str = "INCREASING", output_type: str = "UINT32") -> Expression:
    """DML_OPERATOR_ARGMIN: `output_type` indices, 1 on each axis (DECREASING: the last minimum)."""
    return _arg("ArgMin", x, axes, direction, output_type)


def Reduce(x: Expression, function: str, axes: Sequence[int] | None = None, output_type: str | None = None) -> Expression:
    """DML_OPERATOR_REDUCE with `function` (ARGMAX, SUM, ...) over `axes` (None: every axis); the
    output type defaults to UINT32 for ARGMAX/ARGMIN, else the input's."""
    axes = list(range(x.rank)) if axes is None else list(axes)
    if output_type is None:
        arg = schema.enum_value("DML_REDUCE_FUNCTION", function) in ("ARGMAX", "ARGMIN")
        output_type = "UINT32" if arg else x.data_type
    fields = {"Function": function, "Axes": axes}
    return x.graph.call("Reduce", "REDUCE", {"InputTensor": x}, fields, output_type, _reduced(x, axes))


def OneHot(indices: Expression, values: Expression, output_length: int, axis: int) -> Expression:
    """DML_OPERATOR_ONE_HOT: values' data type, indices' sizes with `axis` set to `output_length`."""
    sizes = list(indices.sizes)
    if axis < len(sizes):  # otherwise the desc is refused, naming Axis
        sizes[axis] = output_length
    tensors = {"IndicesTensor": indices, "ValuesTensor": values}
    return indices.graph.call("OneHot", "ONE_HOT", tensors, {"Axis": axis}, values.tensor_desc.data_type, sizes)


def MeanVarianceNormalization(
    x: Expression,
    scale: Expression | None = None,
    bias: Expression | None = None,
    axes: Sequence[int] | None = None,
    normalize_variance: bool = True,
    epsilon: float = 1e-5,
    fused_activation: FusedActivation | None = None,
    *,
    normalize_mean: bool | None = None,
    cross_channel: bool | None = None,
) -> Expression:
    """MEAN_VARIANCE_NORMALIZATION1 over `axes`; with `normalize_mean`, MEAN_VARIANCE_NORMALIZATION2
    (UseMean, UseVariance: DirectMLX from target 0x6300); with `cross_channel` instead of
    `axes`, the original MEAN_VARIANCE_NORMALIZATION (4 dimensions, axes {1,2,3} or {2,3})."""
    fields: dict[str, Any] = {}
    if cross_channel is not None:
        if axes is not None or normalize_mean is not None:
            raise TypeError("MeanVarianceNormalization: cross_channel takes neither axes nor normalize_mean")
        op, fields = "MEAN_VARIANCE_NORMALIZATION", {"CrossChannel": cross_channel, "NormalizeVariance": normalize_variance}
    elif axes is None:
        raise TypeError("MeanVarianceNormalization needs axes (or cross_channel)")
    elif normalize_mean is not None:
        op, fields = (
            "MEAN_VARIANCE_NORMALIZATION2",
            {"Axes": list(axes), "UseMean": normalize_mean, "UseVariance": normalize_variance},
        )
    else:
        op, fields = "MEAN_VARIANCE_NORMALIZATION1", {"Axes": list(axes), "NormalizeVariance": normalize_variance}
    fields["Epsilon"] = json_float(epsilon)
    if fused_activation is not None:
        fields["FusedActivation"] = fused_activation.to_json()
    tensors = {"InputTensor": x, "ScaleTensor": scale, "BiasTensor": bias}
    return x.graph.call("MeanVarianceNormalization", op, tensors, fields, x.tensor_desc.data_type, x.sizes)
