"""Finding DirectML operators by name: the generated table (operator_table.py) holds all of them,
and every one is lowered (ops/registry.py says by which family). Desc parsers look operator types
up here, and an unknown type is refused with a message from here; the pages' facts per feature
level (when an operator came, its data types) are read here for `dml2onnx ops`."""

from __future__ import annotations

import difflib

from dml2onnx.core import dtypes, operator_table
from dml2onnx.core.schema import OperatorSchema, SupportTable, level_key

_PREFIX = "DML_OPERATOR_"

OPERATORS: dict[str, OperatorSchema] = operator_table.OPERATORS


def short_name(type_name: str) -> str:
    return type_name.removeprefix(_PREFIX)


def lookup(type_name: str) -> OperatorSchema | None:
    """Full (`DML_OPERATOR_ARGMAX`) or short (`ARGMAX`) form, as DxDispatch accepts."""
    return OPERATORS.get(short_name(type_name))


def find(type_name: str) -> OperatorSchema | None:
    """Any DirectML operator: full or short name, or an alias (SCATTER_ELEMENTS)."""
    short = short_name(type_name)
    short = operator_table.ALIASES.get(short, short)
    return OPERATORS.get(short)


def refusal(type_name: str) -> str:
    """Why a desc type that `lookup` does not know is refused."""
    op = find(type_name)
    if op is not None:
        return (
            f"{op.full_name} is a DirectML operator that dml2onnx does not lower yet "
            f"(dml2onnx ops lists the {len(OPERATORS)} it lowers)"
        )
    close = close_names(type_name, cutoff=0.75)
    hint = f"; did you mean {' or '.join(_PREFIX + c for c in close)}?" if close else ""
    return f"unknown operator type '{type_name}': not a DirectML operator{hint}"


def close_names(type_name: str, cutoff: float) -> list[str]:
    """Up to three operator names (short form, aliases included) close to a misspelt one: by
    spelling, else those the name begins or ends (`CONV` -> CONVOLUTION..., `RELU` -> ACTIVATION_RELU)."""
    names = list(OPERATORS) + list(operator_table.ALIASES)
    short = short_name(type_name).upper()
    close = difflib.get_close_matches(short, names, n=3, cutoff=cutoff)
    if close or len(short) < 3:
        return close
    parts = [n for n in names if n.startswith(short) or n.endswith("_" + short)]
    return sorted(parts, key=len)[:3]


def available(op: OperatorSchema, level: str) -> bool:
    return level_key(op.feature_level) <= level_key(level)


def tables_at(op: OperatorSchema, level: str) -> list[SupportTable]:
    """The page's tables in force at `level`: the newest one at or below it (one per function
    group for REDUCE, whose page has a table per group of functions)."""
    out: list[SupportTable] = []
    seen: set[tuple[str, ...]] = set()
    for t in op.support:
        if t.functions in seen or level_key(t.level) > level_key(level):
            continue
        seen.add(t.functions)
        out.append(t)
    return out


def data_types(op: OperatorSchema, level: str) -> dict[str, list[str]]:
    """{tensor: [type names]} at `level` (union over REDUCE's function groups), the 4-bit INT4 and
    UINT4 included (QUANTIZE's and DEQUANTIZE's, lowered since dtypes models them)."""
    out: dict[str, list[str]] = {}
    for t in tables_at(op, level):
        for tensor, support in t.tensors.items():
            names = out.setdefault(tensor, [])
            for name in (d.name for d in support.types):
                if name not in names:
                    names.append(name)
    order = [d.name for d in dtypes.ALL + dtypes.PACKED]
    return {k: sorted(v, key=order.index) for k, v in out.items()}
