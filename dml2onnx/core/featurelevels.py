"""DirectML feature levels: which operators, data types, dimension counts and options a desc may
use at a `DML_FEATURE_LEVEL` (`--feature-level`). The levels' contents are the schema table's
support tables (schema.py); operator modules gate their options with `at_least`."""

from __future__ import annotations

from dml2onnx.core import dtypes, schema
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.errors import JsonPath, ModelError, UsageError
from dml2onnx.core.schema import SupportTable, TensorSupport
from dml2onnx.core.tensor import TensorDesc

LEVELS = schema.LEVELS
NEWEST = schema.NEWEST_LEVEL
key = schema.level_key


def at_least(level: str, wanted: str) -> bool:
    return key(level) >= key(wanted)


def parse(text: str) -> str:
    """`5_1`, `5.1` or `DML_FEATURE_LEVEL_5_1` -> `5_1`."""
    level = text.removeprefix("DML_FEATURE_LEVEL_").replace(".", "_")
    if level not in LEVELS:
        raise UsageError(f"--feature-level must be one of {', '.join(LEVELS)}, got {text!r}")
    return level


def _tables(desc: OperatorDesc) -> list[SupportTable]:
    function = desc.values.get("Function")
    return [t for t in desc.schema.support if not t.functions or function in t.functions]


def table(desc: OperatorDesc) -> SupportTable:
    """The support table in force for this desc at its feature level."""
    return next(t for t in _tables(desc) if at_least(desc.level, t.level))


def check_tensors(desc: OperatorDesc) -> None:
    """Each tensor's dimension count and data type against the page's table at desc.level; a
    refusal names the oldest level that would allow it, if any does."""
    current = table(desc)
    newer = [t for t in reversed(_tables(desc)) if key(t.level) > key(current.level)]
    op = f"DML_{desc.schema.name}" + (f" ({desc['Function']})" if "Function" in desc.values else "")
    at = "" if desc.level == NEWEST else f" at feature level {desc.level}"
    for field, support in current.tensors.items():
        value = desc.values.get(field)
        later = [(n.level, n.tensors[field]) for n in newer]
        if isinstance(value, tuple):  # a tensor array (JOIN's InputTensors): each element
            for index, t in enumerate(value):
                _check_tensor(desc, f"{field}[{index}]", t, support, later, op, at)
        elif value is not None:
            _check_tensor(desc, field, value, support, later, op, at)


def _check_tensor(
    desc: OperatorDesc, name: str, t: TensorDesc, support: TensorSupport, later: list[tuple[str, TensorSupport]], op: str, at: str
) -> None:
    """One tensor against its support: `later` the newer levels' supports, oldest first."""
    lo, hi = support.ranks
    if not lo <= t.rank <= hi:
        counts = str(lo) if lo == hi else f"{lo} to {hi}"
        allowed = next((level for level, s in later if s.ranks[0] <= t.rank <= s.ranks[1]), None)
        raise ModelError(
            desc.at(name, "Sizes"),
            f"{name} of {op} must have {counts} dimensions{at}, not {t.rank}" + _allowed_from(allowed),
        )
    if t.data_type not in support.types:
        allowed = next((level for level, s in later if t.data_type in s.types), None)
        raise ModelError(
            desc.at(name, "DataType"),
            f"{name} of {op} must be {dtypes.names(support.types)}{at}, not {t.data_type}" + _allowed_from(allowed),
        )


def _allowed_from(level: str | None) -> str:
    return f" (feature level {level} allows it)" if level else ""


def require(desc: OperatorDesc, wanted: str, path: JsonPath, rule: str) -> None:
    """Refuse an option that needs feature level `wanted`: `rule` says what the desc does."""
    if not at_least(desc.level, wanted):
        raise ModelError(path, f"{rule} needs feature level {wanted} or newer (this is {desc.level}: --feature-level)")
