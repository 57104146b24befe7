"""DML_OPERATOR_ARGMIN: index of the minimum over the joint Axes, first (INCREASING) or last
(DECREASING) on ties, counted in row-major order of the reduced axes. ARGMAX's rules and
lowering with the order reversed: ONNX ArgMin for floats and 8/16-bit integers; 32/64-bit integers
ranked exactly by argmax.py's digits of the reversed order key, never through FLOAT32."""

from __future__ import annotations

import numpy as np

from ..builder import GraphBuilder
from ..desc import OperatorDesc
from . import argmax

validate = argmax.validate  # same fields, tables and relational rules as ARGMAX
# ARGMAX's candidates and rule: the same graphs with ArgMin, measured alike
CANDIDATES, applies, choose = argmax.CANDIDATES, argmax.applies, argmax.choose
examples = argmax.examples


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    return argmax.lower_arg(desc, b, inputs["InputTensor"], minimum=True, last=desc["AxisDirection"] == "DECREASING")


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    return argmax.reference_arg(desc, inputs, np.argmin)
