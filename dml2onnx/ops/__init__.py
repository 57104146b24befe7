"""One module per DirectML operator (the element-wise activations share one), each with
validate(desc), lower(desc, builder, inputs), reference(desc, inputs) and its candidate lowerings
(CANDIDATES, and optionally applies and choose: choices.py says how they are asked). The schema's support
tables check data types and dimension counts before validate runs (lowering.validate)."""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from types import ModuleType

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


class _Modules(Mapping[str, ModuleType]):
    """Operator name -> its module, imported when first used."""

    def __getitem__(self, name: str) -> ModuleType:
        return importlib.import_module(f"{__name__}.{_MODULE_OF[name]}")

    def __iter__(self) -> Iterator[str]:
        return iter(_MODULE_OF)

    def __len__(self) -> int:
        return len(_MODULE_OF)


MODULES: Mapping[str, ModuleType] = _Modules()
