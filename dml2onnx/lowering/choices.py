"""The choice among an operator's candidate lowerings. The generic code here only asks; each
family's row (ops/registry.py, the fields of ops/family.Family) holds its candidates and its rule:
`candidates` (the first is the default), `applies`, `choose` (for the targets whose graphs run on
the EP that was measured, `portable` and `cuda`: the CUDA EP, docs/benchmarks.md; without it, or on
other targets, the first candidate that applies), `cuda_only` / `dml_only` / `only_on` (candidates
built for some targets alone: an If guarding a fast path is checked on the CUDA and CPU EPs only,
as the DirectML EP's static check does not follow subgraphs; an ONNX node meaning DirectML's own
operator on the DirectML EP, where other EPs' kernels differ or refuse the data), and
`dml_preference` / `cpu_preference` (on the `dml` or `cpu` target, the candidates whose ONNX node
that EP turns back into one kernel, best first; the first that applies is taken).

Every candidate is exact (or within tolerances.py) on every EP its target names, and the test
suites run each of them; they differ in speed, which depends on the EP and the shape."""

from __future__ import annotations

from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.errors import UsageError
from dml2onnx.ops import registry

# The targets whose EP (the CUDA EP) the families' rules were measured on; `cpu` takes the first
# candidate that applies, `dml` the first of the family's dml_preference that applies.
MEASURED_TARGETS = ("portable", "cuda")


def candidates(op: str) -> tuple[str, ...]:
    """Every candidate lowering of the operator, the default first."""
    return registry.family(op).candidates


def measured(op: str) -> bool:
    """Whether the operator has a rule of its own (from benchmarks) among its candidates."""
    return registry.family(op).choose is not None


def only_on(op: str) -> dict[str, tuple[str, ...]]:
    """The candidates built for some targets alone, each with those targets (ONLY_ON, CUDA_ONLY,
    DML_ONLY together); a candidate not named here is built for every target."""
    return registry.family(op).targets_of()


def available(desc: OperatorDesc, opset: int, target: str | None = None) -> tuple[str, ...]:
    """The candidates that apply to this desc (on `target`; every target's when None)."""
    family = registry.family(desc.schema.name)
    applies = family.applies
    limited = family.targets_of()
    return tuple(
        c
        for c in family.candidates
        if (target is None or target in limited.get(c, (target,))) and (applies is None or applies(desc, c, opset))
    )


def target_of(op: str, candidate: str) -> str:
    """The target a test builds a candidate for: the first of those it is limited to (`cuda` for
    CUDA_ONLY ones, `dml` for DML_ONLY ones), else `portable`."""
    return only_on(op).get(candidate, ("portable",))[0]


def choose(desc: OperatorDesc, target: str, opset: int) -> str:
    """The lowering used unless one is asked for."""
    options = available(desc, opset, target)
    family = registry.family(desc.schema.name)
    if target in ("dml", "cpu"):
        preference = family.dml_preference if target == "dml" else family.cpu_preference
        return next((c for c in preference if c in options), options[0])
    rule = family.choose
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
