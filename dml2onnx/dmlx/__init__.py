"""Building DirectML descs in Python, after DirectMLX's functional API (docs/python-api.md):

    g = dmlx.Graph()
    x = g.input("x", "FLOAT32", [2, 5])
    y = dmlx.OneHot(dmlx.ArgMax(x, [1]), values, 5, 1)
    g.run({"x": ...}, [y])

Each call computes its OutputTensor desc and is validated as its DxDispatch JSON would be (same
ModelError rules and messages, the path naming the call, e.g. `ArgMax_1.Axes[0]`)."""

from __future__ import annotations

from dml2onnx.dmlx.activations import ACTIVATION_FUNCTIONS, FusedActivation
from dml2onnx.dmlx.functions import (
    ActivationHardmax,
    ActivationHardmax1,
    ActivationLogSoftmax,
    ActivationLogSoftmax1,
    ActivationSoftmax,
    ActivationSoftmax1,
    ArgMax,
    ArgMin,
    MeanVarianceNormalization,
    OneHot,
    Reduce,
)
from dml2onnx.dmlx.graph import Expression, Graph, Node

globals().update(ACTIVATION_FUNCTIONS)  # ActivationRelu, ActivationLinear, ... (from the schema table)

__all__ = [
    "ActivationHardmax",
    "ActivationHardmax1",
    "ActivationLogSoftmax",
    "ActivationLogSoftmax1",
    "ActivationSoftmax",
    "ActivationSoftmax1",
    "ArgMax",
    "ArgMin",
    "Expression",
    "FusedActivation",
    "Graph",
    "MeanVarianceNormalization",
    "Node",
    "OneHot",
    "Reduce",
]
