"""One module per DirectML operator (the element-wise activations share one), each with
validate(desc), lower(desc, builder, inputs), reference(desc, inputs) and its candidate lowerings
(CANDIDATES, and optionally applies and choose: choices.py says how they are asked). The schema's support
tables check data types and dimension counts before validate runs (lowering.validate).

An operator with one output returns its value (lower: the ONNX value's name; reference: an
array). One with several (desc.outputs: MAX_POOLING2, BATCH_NORMALIZATION_TRAINING, attention)
returns a dict from each set output field to its value, from both; `reference_outputs` and
lowering.lower take either."""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from types import ModuleType
from typing import Any, TypeVar

import numpy as np

from ..schema import ADOPTED, OPERATORS

_MODULE_OF: dict[str, str] = {
    "ACTIVATION_HARDMAX": "hardmax",
    "ACTIVATION_HARDMAX1": "hardmax1",
    "ACTIVATION_LOG_SOFTMAX": "log_softmax",
    "ACTIVATION_LOG_SOFTMAX1": "log_softmax1",
    "ACTIVATION_SOFTMAX": "softmax",
    "ACTIVATION_SOFTMAX1": "softmax1",
    "MEAN_VARIANCE_NORMALIZATION": "mean_variance_normalization",
    "MEAN_VARIANCE_NORMALIZATION1": "mean_variance_normalization1",
    "MEAN_VARIANCE_NORMALIZATION2": "mean_variance_normalization2",
    "ARGMAX": "argmax",
    "ARGMIN": "argmin",
    "REDUCE": "reduce",
    "ONE_HOT": "one_hot",
    **{name: "element_wise_activation" for name, op in OPERATORS.items() if op.fusable},
    **{name: module for module, names in ADOPTED.items() for name in names},
}


T = TypeVar("T")


class _Modules(Mapping[str, ModuleType]):
    """Operator name -> its module, imported when first used."""

    def __getitem__(self, name: str) -> ModuleType:
        return importlib.import_module(f"{__name__}.{_MODULE_OF[name]}")

    def __iter__(self) -> Iterator[str]:
        return iter(_MODULE_OF)

    def __len__(self) -> int:
        return len(_MODULE_OF)


MODULES: Mapping[str, ModuleType] = _Modules()


def by_output(desc: Any, result: T | Mapping[str, T]) -> dict[str, T]:
    """A module's lower() or reference() result as {output field: value}, checked against the
    desc's set outputs."""
    got = dict(result) if isinstance(result, Mapping) else {desc.output: result}
    if set(got) != set(desc.outputs):
        raise AssertionError(f"{desc.schema.name} gave outputs {sorted(got)}, its desc sets {list(desc.outputs)}")
    return {name: got[name] for name in desc.outputs}


def reference_outputs(desc: Any, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The numpy reference of every output the desc sets."""
    return by_output(desc, MODULES[desc.schema.name].reference(desc, dict(inputs)))
