"""A function for every DirectML operator type, generated from the operator table.

`Convolution(input, filter, bias=None, *, strides=..., ...)` takes the desc's input tensors as
Expressions (a tensor array as a list), in struct order, and its other fields as keyword
arguments named after them in snake_case (`FusedActivation` -> `fused_activation`); count fields
(`DimensionCount`, `AxisCount`, ...) follow from the arrays they count. Its outputs follow
DirectMLX's output rules where the operator has one (shapes.py); `output_type`, `output_sizes`
and `outputs={field: ...}` name them where it has none or where the caller wants others. A call
returns its Expression, a dict of Expressions by output field for several outputs, or a list for
SPLIT's OutputTensors."""

from __future__ import annotations

import difflib
import inspect
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from dml2onnx import lowering
from dml2onnx.core import dtypes, operator_table
from dml2onnx.core.desc import parse_operator_desc
from dml2onnx.core.errors import ModelError
from dml2onnx.core.schema import Kind, OperatorSchema
from dml2onnx.dmlx import shapes
from dml2onnx.dmlx.activations import FusedActivation
from dml2onnx.dmlx.graph import Expression, Graph, json_float, output_tensor, tensor_json

_TENSORS = (Kind.INPUT, Kind.INPUT_ARRAY)
_OUTPUTS = (Kind.OUTPUT, Kind.OUTPUT_ARRAY)
# The keyword arguments every generated function has beside the desc's fields.
OUTPUT_ARGUMENTS = ("output_type", "output_sizes", "outputs")

# DirectMLX's spellings where the table's words do not camel-case into them.
_WORDS = {
    "ACOS": "ACos", "ASIN": "ASin", "ATAN": "ATan", "ACOSH": "ACosh", "ASINH": "ASinh", "ATANH": "ATanh",
    "YX": "YX", "NAN": "NaN", "ND": "ND", "ND1": "ND1", "2D": "2D", "GRU": "GRU", "LSTM": "LSTM", "RNN": "RNN",
    "NONZERO": "NonZero", "ARGMAX": "ArgMax", "ARGMIN": "ArgMin",
}  # fmt: skip
_NAMES = {
    "ELEMENT_WISE_LOGICAL_EQUALS": "Equals",
    "ELEMENT_WISE_LOGICAL_GREATER_THAN": "GreaterThan",
    "ELEMENT_WISE_LOGICAL_GREATER_THAN_OR_EQUAL": "GreaterThanOrEqual",
    "ELEMENT_WISE_LOGICAL_LESS_THAN": "LessThan",
    "ELEMENT_WISE_LOGICAL_LESS_THAN_OR_EQUAL": "LessThanOrEqual",
}
# DirectMLX's defaults for fields a caller rarely sets.
_DEFAULTS: dict[str, dict[str, Any]] = {
    "GEMM": {"TransA": "NONE", "TransB": "NONE", "Alpha": 1.0, "Beta": 1.0},
    "CONVOLUTION": {"Mode": "CROSS_CORRELATION", "Direction": "FORWARD", "GroupCount": 1},
    "CONVOLUTION_INTEGER": {"GroupCount": 1},
    "QUANTIZED_LINEAR_CONVOLUTION": {"GroupCount": 1},
    "TOP_K1": {"AxisDirection": "DECREASING"},
}
# Window arrays default to DirectMLX's: 1s and 0s over the input's spatial dimensions (rank - 2).
_WINDOW_ARRAYS = {"Strides": 1, "Dilations": 1, "StartPadding": 0, "EndPadding": 0, "OutputPadding": 0}
_WINDOWED = ("FilterTensor", "WindowSize", "WindowSizes")


def function_name(op: OperatorSchema) -> str:
    """DirectMLX's name: `ELEMENT_WISE_ADD` -> `Add`, `ACTIVATION_RELU` -> `ActivationRelu`, `GATHER_ND1` -> `GatherND1`."""
    if op.name in _NAMES:
        return _NAMES[op.name]
    words = op.name.removeprefix("ELEMENT_WISE_").split("_")
    return "".join(_WORDS.get(w, w.capitalize()) for w in words)


def parameter_name(field: str) -> str:
    """`InputTensor` -> `input`, `ROITensor` -> `roi`, `TransA` -> `trans_a`, `InputTensors` -> `inputs`."""
    stem = re.sub(r"Tensor(s?)$", r"\1", field)
    stem = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", stem)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", stem).lower()


def needs_graph(op: OperatorSchema) -> bool:
    """No required input tensor: the Graph is an argument."""
    return not any(f.kind in _TENSORS and not f.optional for f in op.fields)


def _windowed(op: OperatorSchema) -> bool:
    return any(f.name in _WINDOWED for f in op.fields)


def _parameters(op: OperatorSchema) -> list[inspect.Parameter]:
    """Input tensors first, positional until the first optional one; then the fields, keyword-only."""
    positional, keyword = inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY
    required = inspect.Parameter.empty
    out: list[inspect.Parameter] = []
    if needs_graph(op):  # nothing to take the Graph from (FILL_VALUE_*), as DirectMLX's FillValueConstant(graph, ...)
        out.append(inspect.Parameter("graph", positional))
    kind = positional
    for f in op.fields:
        if f.kind not in _TENSORS:
            continue
        if f.optional:
            out.append(inspect.Parameter(parameter_name(f.name), kind, default=None))
            kind = keyword  # a required tensor after an optional one cannot stay positional
        else:
            out.append(inspect.Parameter(parameter_name(f.name), kind if kind is positional else keyword))
    defaults = _DEFAULTS.get(op.name, {})
    for f in op.fields:
        if f.kind in (*_TENSORS, *_OUTPUTS, Kind.COUNT):
            continue
        if f.name in defaults:
            default: Any = defaults[f.name]
        elif f.optional or (f.name in _WINDOW_ARRAYS and _windowed(op)):
            default = None
        else:
            default = required
        out.append(inspect.Parameter(parameter_name(f.name), keyword, default=default))
    out += [inspect.Parameter(name, keyword, default=None) for name in OUTPUT_ARGUMENTS]
    return out


def _json(value: Any) -> Any:
    """A field's Python value as DxDispatch JSON."""
    if isinstance(value, FusedActivation):
        return value.to_json()
    if isinstance(value, dtypes.DataType):
        return value.name
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return json_float(value)
    if isinstance(value, Mapping):
        return {k: _json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_json(v) for v in value]
    return value


def _field_json(kind: Kind, value: Any) -> Any:
    if kind is Kind.SCALE_BIAS and isinstance(value, (tuple, list)) and len(value) == 2:
        value = {"Scale": value[0], "Bias": value[1]}
    elif kind is Kind.SIZE_2D and isinstance(value, (tuple, list)) and len(value) == 2:
        value = {"Width": value[0], "Height": value[1]}
    return _json(value)


def _output_spec(value: Any, where: str) -> dict[str, Any] | None:
    """An output named by the caller: None (the rule's), (data type, sizes), or a tensor desc's JSON."""
    if value is None or isinstance(value, dict):
        return value
    if isinstance(value, (tuple, list)) and len(value) == 2 and not isinstance(value[0], int):
        return output_tensor(value[0], value[1])
    raise TypeError(f"{where} must be None, (data_type, sizes) or a tensor desc dict, not {value!r}")


class OperatorFunction:
    """One operator's function (see the module's docstring); `op` is its table row."""

    def __init__(self, op: OperatorSchema) -> None:
        self.op = op
        self.__name__ = self.__qualname__ = function_name(op)
        self.__signature__ = inspect.Signature(_parameters(op))
        self.__doc__ = describe(op)

    def __repr__(self) -> str:
        return f"<dmlx function {self.__name__}{self.__signature__} for {self.op.full_name}>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            bound = self.__signature__.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.__name__}: {self._unbound(kwargs) or e}") from None
        bound.apply_defaults()
        a = bound.arguments
        op = self.op
        tensors: dict[str, Any] = {}
        for f in op.fields:
            if f.kind in _TENSORS:
                tensors[f.name] = a[parameter_name(f.name)]
        graph = a["graph"] if needs_graph(op) else _graph_of(tensors)
        if not isinstance(graph, Graph):
            raise TypeError(f"{self.__name__}: graph must be a dmlx.Graph, not {type(graph).__name__}")
        fields = self._fields_json(a, tensors)
        outputs = self._outputs(a, tensors, fields, graph)
        results = graph.call_many(self.__name__, op.name, tensors, fields, outputs)
        if op.tensor_of(Kind.OUTPUT_ARRAY):
            return list(results.values())
        return next(iter(results.values())) if len(results) == 1 else results

    def _unbound(self, kwargs: dict[str, Any]) -> str:
        """What is wrong with the keywords: one it does not take, with the closest it does."""
        known = list(self.__signature__.parameters)
        for key in kwargs:
            if key not in known:
                close = difflib.get_close_matches(key, known, n=2, cutoff=0.6) or [k for k in known if k == key.lower()]
                hint = f" (did you mean {' or '.join(close)}?)" if close else f" (it takes {', '.join(known)})"
                return f"no argument {key!r}{hint}"
        return ""

    def _fields_json(self, a: dict[str, Any], tensors: dict[str, Any]) -> dict[str, Any]:
        op = self.op
        fields: dict[str, Any] = {}
        first = next((t for t in tensors.values() if isinstance(t, Expression)), None)
        for f in op.fields:
            if f.kind in (*_TENSORS, *_OUTPUTS, Kind.COUNT):
                continue
            value = a[parameter_name(f.name)]
            if value is None and f.name in _WINDOW_ARRAYS and _windowed(op) and first is not None:
                value = [_WINDOW_ARRAYS[f.name]] * (first.rank - 2)
            if value is not None:
                fields[f.name] = _field_json(f.kind, value)
        for f in op.fields:
            if f.kind is Kind.COUNT and f.array is not None:
                counted = op.field(f.array)
                if counted.kind in _TENSORS:
                    fields[f.name] = len(tensors[f.array] or ())
                elif counted.kind in _OUTPUTS:
                    fields[f.name] = len(a["output_sizes"] or ())
                else:
                    fields[f.name] = len(fields.get(f.array) or ())
        return fields

    def _outputs(self, a: dict[str, Any], tensors: dict[str, Any], fields: dict[str, Any], graph: Graph) -> dict[str, Any]:
        """Each output's tensor desc JSON: the caller's, else the rule's."""
        op = self.op
        given = dict(a["outputs"] or {})
        unknown = [k for k in given if k not in {f.name for f in op.fields if f.kind in _OUTPUTS}]
        if unknown:
            names = ", ".join(f.name for f in op.fields if f.kind in _OUTPUTS)
            raise TypeError(f"{self.__name__}: {unknown[0]!r} is not an output of {op.full_name} ({names})")
        first = next(f for f in op.fields if f.kind in _OUTPUTS)
        wanted = [f for f in op.fields if f.kind in _OUTPUTS and (not f.optional or f.name in given or f is first)]
        if first.kind is Kind.OUTPUT_ARRAY:
            if a["output_sizes"] is None:
                raise TypeError(f"{self.__name__} needs output_sizes: a list of each output's sizes")
            data_type = a["output_type"] or _first_type(tensors)
            return {first.name: [output_tensor(data_type, s) for s in a["output_sizes"]]}
        specs: dict[str, dict[str, Any] | None] = {
            f.name: _output_spec(given.get(f.name), f"outputs[{f.name!r}]") for f in wanted
        }
        if specs[first.name] is None and (a["output_type"] is not None or a["output_sizes"] is not None):
            specs[first.name] = {"DataType": a["output_type"], "Sizes": a["output_sizes"]}
        if all(s is not None and s.get("DataType") is not None and s.get("Sizes") is not None for s in specs.values()):
            return {k: _cleaned(s) for k, s in specs.items() if s is not None}
        guesses = self._guess(tensors, fields, list(specs), graph)
        out = {}
        for name, spec in specs.items():
            data_type, sizes = guesses.get(name, (None, None))
            spec = dict(spec or {})
            spec.setdefault("DataType", None)
            spec.setdefault("Sizes", None)
            if spec["DataType"] is None:
                spec["DataType"] = data_type.name if data_type is not None else None
            if spec["Sizes"] is None:
                spec["Sizes"] = list(sizes) if sizes is not None else None
            missing = [w for w, k in (("type", "DataType"), ("sizes", "Sizes")) if spec[k] is None]
            if missing:
                how = (
                    " and ".join(f"output_{w}" for w in missing)
                    if name == first.name
                    else f"outputs={{{name!r}: (data_type, sizes)}}"
                )
                raise TypeError(
                    f"{self.__name__} needs {name}'s {' and '.join(missing)} ({how}): "
                    + ("its output rule leaves it open" if shapes.rule(op) else f"{op.full_name} has no output rule here")
                )
            out[name] = _cleaned(spec)
        return out

    def _guess(self, tensors: dict[str, Any], fields: dict[str, Any], wanted: list[str], graph: Graph) -> dict[str, shapes.Guess]:
        """The output rule's answer, from the desc parsed with placeholder outputs (the first input's)."""
        rule = shapes.rule(self.op)
        if rule is None:
            return {}
        first = next((t for t in _expressions(tensors)), None)
        placeholder = tensor_json(first.tensor_desc) if first is not None else output_tensor("FLOAT32", [1])
        placeholder.pop("Strides", None)
        obj = {k: (tensor_json(v.tensor_desc) if isinstance(v, Expression) else [tensor_json(e.tensor_desc) for e in v])
               for k, v in tensors.items() if v is not None}  # fmt: skip
        obj |= {name: placeholder for name in wanted} | fields
        name = graph.next_name(self.__name__)
        desc = parse_operator_desc(self.op.name, obj, (name,), (name,), level=graph.feature_level)
        try:
            return rule(desc)
        except (ArithmeticError, IndexError, KeyError, TypeError, ValueError):
            try:  # the desc's own mistake, at its path, unless it is about the placeholder outputs
                lowering.validate(desc)
            except ModelError as e:
                if not (len(e.path) > 1 and e.path[1] in wanted):
                    raise
            raise TypeError(f"{self.__name__}: the output rule cannot apply to these inputs; give output_sizes") from None


def _cleaned(spec: dict[str, Any]) -> dict[str, Any]:
    out = dict(spec)
    out["DataType"] = out["DataType"].name if isinstance(out["DataType"], dtypes.DataType) else str(out["DataType"])
    out["DataType"] = out["DataType"].removeprefix("DML_TENSOR_DATA_TYPE_")
    out["Sizes"] = [int(n) for n in out["Sizes"]]
    return out


def _expressions(tensors: dict[str, Any]) -> list[Expression]:
    out: list[Expression] = []
    for v in tensors.values():
        if isinstance(v, Expression):
            out.append(v)
        elif isinstance(v, Sequence) and not isinstance(v, str):
            out += [e for e in v if isinstance(e, Expression)]
    return out


def _first_type(tensors: dict[str, Any]) -> str:
    found = _expressions(tensors)
    return found[0].data_type if found else "FLOAT32"


def _graph_of(tensors: dict[str, Any]) -> Graph | None:
    found = _expressions(tensors)
    return found[0].graph if found else None


def describe(op: OperatorSchema) -> str:
    rule = "outputs by DirectMLX's rule" if shapes.rule(op) else "outputs must be given (output_type, output_sizes, outputs)"
    return f"{op.full_name} (`dml2onnx ops {op.name}` lists its fields); {rule}."


OPERATOR_FUNCTIONS: dict[str, OperatorFunction] = {name: OperatorFunction(op) for name, op in operator_table.OPERATORS.items()}


def operator(name: str) -> Callable[..., Any]:
    """The generated function of an operator type (`CONVOLUTION` or `DML_OPERATOR_CONVOLUTION`)."""
    short = name.removeprefix("DML_OPERATOR_")
    if short not in OPERATOR_FUNCTIONS:
        raise KeyError(f"no DirectML operator {name!r}")
    return OPERATOR_FUNCTIONS[short]
