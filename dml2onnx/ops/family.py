"""The typed row every operator family fills in (ops/registry.py lists them all).

A family is one module under ops/ (or, for a single-axis form such as ACTIVATION_SOFTMAX, another
family's functions) lowering one or more DirectML operator types:

- `validate(desc)`: the page's rules beyond the generic ones (lowering.validate runs the schema's
  support tables first), as ModelErrors naming the desc's fields.
- `lower(desc, builder, inputs)`: the ONNX nodes; one output: its value's name, several: a dict
  from each set output field to its value (the same for `reference`).
- `reference(desc, inputs)`: the independent numpy reference.
- `candidates`: the candidate lowerings, the default first; `applies(desc, candidate, opset)`
  says whether one applies to a desc (one that would build another's graph does not); `choose(desc,
  target, options)` is the rule among them on the targets measured on the CUDA EP (`portable`,
  `cuda`), else the first that applies (lowering/choices.py asks).
- `cuda_only`, `dml_only`, `only_on`: candidates built for some targets alone (an If guarding a
  fast path on `cuda`; an ONNX node meaning DirectML's own operator on the DirectML EP, `dml`;
  `only_on`: candidate -> its targets, the first one the tests build it for).
- `dml_preference`, `cpu_preference`: on the `dml` (`cpu`) target, the candidates whose ONNX node
  that EP runs as one kernel, best first.
- `examples(op)`: small descs covering the newest support table's data types (`dml2onnx ops` lowers
  them to list the ONNX ops); none: the element-wise rule, less `not_lowered_types`.
- `broadcasts`: an element-wise family reading stride-0 inputs compactly and expanding its result.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.schema import OperatorSchema
from dml2onnx.graph.builder import GraphBuilder

Lowered = str | Mapping[str, str]
Computed = np.ndarray | Mapping[str, np.ndarray]


@dataclass(frozen=True)
class Family:
    operators: tuple[str, ...]
    validate: Callable[[OperatorDesc], None]
    lower: Callable[[OperatorDesc, GraphBuilder, dict[str, str]], Lowered]
    reference: Callable[[OperatorDesc, dict[str, np.ndarray]], Computed]
    candidates: tuple[str, ...]
    applies: Callable[[OperatorDesc, str, int], bool] | None = None
    choose: Callable[[OperatorDesc, str, tuple[str, ...]], str] | None = None
    cuda_only: tuple[str, ...] = ()
    dml_only: tuple[str, ...] = ()
    only_on: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    dml_preference: tuple[str, ...] = ()
    cpu_preference: tuple[str, ...] = ()
    examples: Callable[[OperatorSchema], list[dict[str, Any]]] | None = None
    not_lowered_types: tuple[str, ...] = ()
    broadcasts: bool = False

    def targets_of(self) -> dict[str, tuple[str, ...]]:
        """The candidates built for some targets alone, each with those targets; a candidate not
        named here is built for every target."""
        return {c: ("cuda",) for c in self.cuda_only} | {c: ("dml",) for c in self.dml_only} | dict(self.only_on)
