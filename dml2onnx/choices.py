"""The choice among an operator's candidate lowerings. The generic code here only asks; each
operator's module (dml2onnx/ops/) owns its candidates and its rule:

- `CANDIDATES`: the candidate lowerings, in order; the first is the default.
- `applies(desc, candidate, opset) -> bool` (optional): whether a candidate applies to this desc
  (one that would build another candidate's graph, or none, does not).
- `choose(desc, target, options) -> str` (optional): the rule among the candidates that apply,
  for the targets whose graphs run on the EP that was measured (`portable` and `cuda`: the CUDA
  EP, docs/benchmarks.md). Without it, or on other targets, the first candidate that applies.
- `CUDA_ONLY` (optional): candidates built for the `cuda` target alone, whose graphs hold nodes
  checked on the CUDA and CPU EPs only (an If guarding a fast path: the DirectML EP's static check
  does not follow subgraphs); the other targets never see them.
- `DML_ONLY` (optional): candidates built for the `dml` target alone: ONNX nodes whose meaning on
  the DirectML EP is DirectML's own operator, where other EPs' kernels differ or refuse the data
  (Gather with an index out of range). The DirectML EP matrix (make test-dml) runs them.
- `ONLY_ON` (optional): candidate -> the targets it is built for, where it is more than one of
  them (RANDOM_GENERATOR's UINT64 bitwise graph on `cpu` and `dml`: the CUDA EP lacks BitShift);
  the first target named is the one its tests build it for. CUDA_ONLY and DML_ONLY are its
  one-target shorthands.
- `DML_PREFERENCE` (optional): on the `dml` target, the candidates whose ONNX node the DirectML EP
  turns back into one DirectML operator (LayerNormalization -> MEAN_VARIANCE_NORMALIZATION1, ...),
  best first; the first that applies is taken. `CPU_PREFERENCE` (optional): the same on `cpu`.

Every candidate is exact (or within tolerances.py) on every EP its target names, and the test
suites run each of them; they differ in speed, which depends on the EP and the shape."""

from __future__ import annotations

from types import ModuleType

from . import ops
from .desc import OperatorDesc
from .errors import UsageError

# The targets whose EP (the CUDA EP) the modules' rules were measured on; `cpu` takes the first
# candidate that applies, `dml` the first of the module's DML_PREFERENCE that applies.
MEASURED_TARGETS = ("portable", "cuda")


def _module(op: str) -> ModuleType:
    return ops.MODULES[op]


def candidates(op: str) -> tuple[str, ...]:
    """Every candidate lowering of the operator, the default first."""
    return _module(op).CANDIDATES


def measured(op: str) -> bool:
    """Whether the operator has a rule of its own (from benchmarks) among its candidates."""
    return hasattr(_module(op), "choose")


def only_on(op: str) -> dict[str, tuple[str, ...]]:
    """The candidates built for some targets alone, each with those targets (ONLY_ON, CUDA_ONLY,
    DML_ONLY together); a candidate not named here is built for every target."""
    module = _module(op)
    return (
        {c: ("cuda",) for c in getattr(module, "CUDA_ONLY", ())}
        | {c: ("dml",) for c in getattr(module, "DML_ONLY", ())}
        | dict(getattr(module, "ONLY_ON", {}))
    )


def available(desc: OperatorDesc, opset: int, target: str | None = None) -> tuple[str, ...]:
    """The candidates that apply to this desc (on `target`; every target's when None)."""
    module = _module(desc.schema.name)
    applies = getattr(module, "applies", None)
    limited = only_on(desc.schema.name)
    return tuple(
        c
        for c in module.CANDIDATES
        if (target is None or target in limited.get(c, (target,))) and (applies is None or applies(desc, c, opset))
    )


def target_of(op: str, candidate: str) -> str:
    """The target a test builds a candidate for: the first of those it is limited to (`cuda` for
    CUDA_ONLY ones, `dml` for DML_ONLY ones), else `portable`."""
    return only_on(op).get(candidate, ("portable",))[0]


def choose(desc: OperatorDesc, target: str, opset: int) -> str:
    """The lowering used unless one is asked for."""
    options = available(desc, opset, target)
    module = _module(desc.schema.name)
    if target in ("dml", "cpu"):
        preference = getattr(module, f"{target.upper()}_PREFERENCE", ())
        return next((c for c in preference if c in options), options[0])
    rule = getattr(module, "choose", None)
    if rule is None or target not in MEASURED_TARGETS:
        return options[0]
    chosen = rule(desc, target, options)
    assert chosen in options, f"{desc.schema.name}'s rule chose {chosen!r}, not one of {options}"
    return chosen


def resolve(desc: OperatorDesc, target: str, opset: int, variant: str | None) -> str:
    if variant is None:
        return choose(desc, target, opset)
    if variant not in available(desc, opset, target):
        raise UsageError(
            f"lowering '{variant}' does not apply to this DML_{desc.schema.name} on the {target} target "
            f"(candidates here: {', '.join(available(desc, opset, target))})"
        )
    return variant
