"""The 17 element-wise activations (`ActivationRelu(x)`, ...) and `FusedActivation`, generated
from the schema table with DirectMLX's names, parameter order and defaults."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dml2onnx.core import catalog, operator_table
from dml2onnx.core.schema import Kind, OperatorSchema
from dml2onnx.dmlx.graph import Expression, json_float

# DirectMLX.h's defaults (ActivationX and FusedActivation::X); LINEAR and PARAMETRIC_SOFTPLUS have none.
DEFAULTS: dict[str, dict[str, float]] = {
    "ACTIVATION_ELU": {"Alpha": 1.0},
    "ACTIVATION_CELU": {"Alpha": 1.0},
    "ACTIVATION_HARD_SIGMOID": {"Alpha": 0.2, "Beta": 0.5},
    "ACTIVATION_LEAKY_RELU": {"Alpha": 0.01},
    "ACTIVATION_SCALED_ELU": {"Alpha": 1.67326319217681884765625, "Gamma": 1.05070102214813232421875},
    "ACTIVATION_SCALED_TANH": {"Alpha": 1.0, "Beta": 0.5},
    "ACTIVATION_SOFTPLUS": {"Steepness": 1.0},
    "ACTIVATION_THRESHOLDED_RELU": {"Alpha": 1.0},
    "ACTIVATION_SHRINK": {"Bias": 0.0, "Threshold": 0.5},
}
ELEMENT_WISE: tuple[OperatorSchema, ...] = tuple(op for op in operator_table.OPERATORS.values() if op.fusable)


def params(op: OperatorSchema) -> list[str]:
    """The FLOAT fields in struct order: DirectMLX's param1, param2."""
    return [f.name for f in op.fields if f.kind is Kind.FLOAT]


def camel(op: OperatorSchema) -> str:
    """`ACTIVATION_HARD_SIGMOID` -> `HardSigmoid`."""
    return "".join(w.capitalize() for w in op.name.removeprefix("ACTIVATION_").split("_"))


def _signature(op: OperatorSchema, first: list[inspect.Parameter], returns: type) -> inspect.Signature:
    defaults = DEFAULTS.get(op.name, {})
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    floats = [
        inspect.Parameter(p.lower(), kind, default=defaults.get(p, inspect.Parameter.empty), annotation=float) for p in params(op)
    ]
    return inspect.Signature(first + floats, return_annotation=returns)


def _bound(sig: inspect.Signature, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    bound = sig.bind(*args, **kwargs)
    bound.apply_defaults()
    return bound.arguments


def _activation_function(op: OperatorSchema) -> Callable[..., Expression]:
    name = f"Activation{camel(op)}"
    x = inspect.Parameter("x", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Expression)
    sig = _signature(op, [x], Expression)

    def activation(*args: Any, **kwargs: Any) -> Expression:
        a = _bound(sig, args, kwargs)
        x = a["x"]
        fields = {p: json_float(a[p.lower()]) for p in params(op)}
        return x.graph.call(name, op.name, {"InputTensor": x}, fields, x.tensor_desc.data_type, x.sizes)

    activation.__name__ = activation.__qualname__ = name
    activation.__signature__ = sig  # type: ignore[attr-defined]
    activation.__doc__ = f"{op.full_name}: output of x's data type and sizes."
    return activation


ACTIVATION_FUNCTIONS: dict[str, Callable[..., Expression]] = {
    f"Activation{camel(op)}": _activation_function(op) for op in ELEMENT_WISE
}


@dataclass(frozen=True)
class FusedActivation:
    """DirectMLX's FusedActivation: an activation (`RELU`, `ACTIVATION_RELU` or
    `DML_OPERATOR_ACTIVATION_RELU`) and up to two parameters in struct order (Alpha and Beta,
    Alpha and Gamma for SCALED_ELU, Bias and Threshold for SHRINK, Steepness for SOFTPLUS).
    Factories: `FusedActivation.Relu()`, `FusedActivation.LeakyRelu(alpha=0.01)`, ..."""

    activation: str
    param1: float = 0.0
    param2: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """The FusedActivation field of a desc, as DxDispatch JSON."""
        op = catalog.lookup(self.activation) or catalog.lookup(f"ACTIVATION_{self.activation}")
        if op is None:  # parsing refuses it with the JSON path's message
            return {"type": self.activation}
        values = dict(zip(params(op), (self.param1, self.param2), strict=False))
        return {"type": op.full_name, "desc": {k: json_float(v) for k, v in values.items()}}


def _factory(op: OperatorSchema) -> Callable[..., FusedActivation]:
    sig = _signature(op, [], FusedActivation)

    def factory(*args: Any, **kwargs: Any) -> FusedActivation:
        a = _bound(sig, args, kwargs)
        return FusedActivation(op.name, *(float(a[p.lower()]) for p in params(op)))

    factory.__name__ = factory.__qualname__ = camel(op)
    factory.__signature__ = sig  # type: ignore[attr-defined]
    factory.__doc__ = f"A fused {op.full_name}."
    return factory


for _op in ELEMENT_WISE:
    setattr(FusedActivation, camel(_op), staticmethod(_factory(_op)))
