"""Building DirectML descs in Python, after DirectMLX's functional API (docs/python-api.md):

    g = dmlx.Graph()
    x = g.input("x", "FLOAT32", [1, 1, 5, 5])
    w = g.input("w", "FLOAT32", [1, 1, 3, 3])
    y = dmlx.ActivationRelu(dmlx.Convolution(x, w, start_padding=[1, 1], end_padding=[1, 1]))
    g.run({"x": ..., "w": ...}, [y])

Every DirectML operator type has a function (operators.py, generated from the operator table,
DirectMLX's names: `Add`, `Gemm`, `MaxPooling2`, `GatherND1`, ...); some have DirectMLX's own
signatures instead (`Reduce`, `OneHot`, `MeanVarianceNormalization`, the activations), and
`operator(NAME)` gives the generated one of any type. Each call computes its output tensor descs
and is validated as its DxDispatch JSON would be (same ModelError rules and messages, the path
naming the call, e.g. `ArgMax_1.Axes[0]`)."""

from __future__ import annotations

from typing import Any

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
from dml2onnx.dmlx.operators import OPERATOR_FUNCTIONS, OperatorFunction, operator

# DirectMLX's own signatures where they are written by hand; the generated function elsewhere.
HAND_WRITTEN: dict[str, Any] = {
    "ActivationHardmax": ActivationHardmax,
    "ActivationHardmax1": ActivationHardmax1,
    "ActivationLogSoftmax": ActivationLogSoftmax,
    "ActivationLogSoftmax1": ActivationLogSoftmax1,
    "ActivationSoftmax": ActivationSoftmax,
    "ActivationSoftmax1": ActivationSoftmax1,
    "ArgMax": ArgMax,
    "ArgMin": ArgMin,
    "MeanVarianceNormalization": MeanVarianceNormalization,
    "OneHot": OneHot,
    "Reduce": Reduce,
    **ACTIVATION_FUNCTIONS,  # ActivationRelu, ActivationLinear, ... (DirectMLX's parameter order and defaults)
}
FUNCTIONS: dict[str, Any] = {f.__name__: f for f in OPERATOR_FUNCTIONS.values()} | HAND_WRITTEN
globals().update(FUNCTIONS)


def function_of(name: str) -> Any:
    """The public function of an operator type: DirectMLX's hand-written one, else the generated."""
    generated = operator(name)
    return FUNCTIONS[generated.__name__]


__all__ = ["Expression", "FusedActivation", "Graph", "Node", "OperatorFunction", "function_of", "operator", *sorted(FUNCTIONS)]
