"""DML_OPERATOR_VALUE_SCALE_2D: OutputTensor = InputTensor * Scale + Bias[channel], the channel
being the second dimension of the 4-D (NCHW) tensors (the page: "the scale and bias applied to each
channel").

What the page leaves open, as DirectML's own API showed it (1.24.4 under Wine): ChannelCount must be
InputTensor's channel count and 1 or 3 (2, 4 and a mismatch: E_INVALIDARG); the tensors must have
the same DataType and Sizes. FLOAT16 is computed in FLOAT32 and rounded once.

The lowering ("arithmetic"): `Mul` by Scale and `Add` of the Bias as a [1, C, 1, 1] constant, in
FLOAT32 (FLOAT16 cast there and back).
"""

from __future__ import annotations

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.errors import ModelError
from dml2onnx.core.schema import OperatorSchema
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.ops import common
from dml2onnx.ops.family import Family

CANDIDATES = ("arithmetic",)  # choices.py


def validate(desc: OperatorDesc) -> None:
    common.check_same_type(desc, "OutputTensor", "InputTensor")
    common.check_same_sizes(desc, "OutputTensor", "InputTensor")
    channels = desc.tensor("InputTensor").sizes[1]
    count = desc["ChannelCount"]
    if count != channels:
        raise ModelError(desc.at("ChannelCount"), f"must be InputTensor's channel count (Sizes[1] = {channels}), not {count}")
    if count not in (1, 3):  # DirectML refuses others (E_INVALIDARG, measured)
        raise ModelError(desc.at("ChannelCount"), f"must be 1 or 3, not {count}")


def _bias(desc: OperatorDesc) -> np.ndarray:
    return np.asarray(desc["Bias"], dtype=np.float32).reshape(1, -1, 1, 1)


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    x = inputs["InputTensor"]
    dtype = desc.tensor("InputTensor").data_type
    if dtype != dtypes.FLOAT32:
        x = b.cast(x, dtypes.FLOAT32, "float32", "computed in FLOAT32")
    y = b.node("Mul", [x, b.const(np.asarray(desc["Scale"], np.float32), "scale")], "scaled", "x * Scale")
    y = b.node("Add", [y, b.const(_bias(desc), "bias")], "biased", "x * Scale + Bias[channel]")
    if dtype != dtypes.FLOAT32:
        y = b.cast(y, dtype, "output", "rounded once")
    return y


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    """The page's formula per channel, in FLOAT32."""
    x = np.asarray(inputs["InputTensor"])
    with np.errstate(over="ignore", invalid="ignore"):
        y = (x.astype(np.float32) * np.float32(desc["Scale"])).astype(np.float32) + _bias(desc)
    return y.astype(x.dtype)


def examples(op: OperatorSchema) -> list[common.Example]:
    """onnx_ops: each type, three channels."""
    return [
        {
            "InputTensor": common.example_tensor(t, [1, 3, 2, 2]),
            "OutputTensor": common.example_tensor(t, [1, 3, 2, 2]),
            "Scale": 0.5,
            "ChannelCount": 3,
            "Bias": [1.0, 2.0, 3.0],
        }
        for t in common.example_types(op, "InputTensor")
    ]


OPERATOR_FAMILY = Family(("VALUE_SCALE_2D",), validate, lower, reference, CANDIDATES, examples=examples)
