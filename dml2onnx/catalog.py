"""Every DirectML operator as dml2onnx sees it: whether it is lowered, the feature level that
introduced it, its data types per feature level, and the ONNX ops of its lowerings. The fields and
pages' facts come from operator_table.py (all of DirectML's operators); schema.OPERATORS holds the
lowered ones. `dml2onnx ops` prints this, and an unknown or not-yet-lowered operator type in a
desc is refused with a message from here."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from . import dtypes, operator_table, schema
from .schema import OperatorSchema, SupportTable, level_key

_PREFIX = "DML_OPERATOR_"


def short_name(type_name: str) -> str:
    return type_name.removeprefix(_PREFIX)


def find(type_name: str) -> OperatorSchema | None:
    """Any DirectML operator, lowered or not: full or short name, or an alias (SCATTER_ELEMENTS)."""
    short = short_name(type_name)
    short = operator_table.ALIASES.get(short, short)
    return operator_table.OPERATORS.get(short)


def refusal(type_name: str) -> str:
    """Why a desc type that schema.lookup does not know is refused."""
    op = find(type_name)
    if op is not None:
        return (
            f"{op.full_name} is a DirectML operator that dml2onnx does not lower yet "
            f"(dml2onnx ops lists the {len(schema.OPERATORS)} it lowers)"
        )
    names = list(operator_table.OPERATORS) + list(operator_table.ALIASES)
    close = difflib.get_close_matches(short_name(type_name).upper(), names, n=3, cutoff=0.75)
    hint = f"; did you mean {' or '.join(_PREFIX + c for c in close)}?" if close else ""
    return f"unknown operator type '{type_name}': not a DirectML operator{hint}"


def lowered(name: str) -> bool:
    return name in schema.OPERATORS


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


@dataclass(frozen=True)
class Entry:
    name: str  # DML_OPERATOR_...
    supported: bool
    introduced: str
    data_types: dict[str, list[str]]  # empty where the page's tables are not written down yet
    onnx_ops: tuple[str, ...]  # the ONNX ops of its lowerings (empty when not lowered)

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "supported": self.supported,
            "introduced": self.introduced,
            "data_types": self.data_types,
            "onnx_ops": list(self.onnx_ops),
        }


def entries(level: str = schema.NEWEST_LEVEL, with_onnx_ops: bool = True) -> list[Entry]:
    """Every DirectML operator available at `level`, in DML_OPERATOR_TYPE order."""
    from . import lowered_ops  # lowers example descs: imported only when asked for

    out = []
    for name, op in operator_table.OPERATORS.items():
        if not available(op, level):
            continue
        onnx_ops = lowered_ops.onnx_ops(name) if with_onnx_ops and lowered(name) else ()
        supported = lowered(name)
        out.append(Entry(op.full_name, supported, op.feature_level, data_types(op, level), onnx_ops))
    return out


def text_line(e: Entry) -> str:
    """One operator as `dml2onnx ops` prints it."""
    types = list(dict.fromkeys(t for names in e.data_types.values() for t in names))
    parts = [f"{e.name:<52}", e.introduced, "lowered  " if e.supported else "not yet  "]
    parts.append(", ".join(types) if types else "(tensor support table not recorded)")
    if e.onnx_ops:
        parts.append("-> " + ", ".join(e.onnx_ops))
    return "  ".join(parts)


def markdown() -> str:
    """The README's overview: every operator by the feature level that introduced it, lowered ones in bold."""
    every = entries(with_onnx_ops=False)
    lowered = sum(e.supported for e in every)
    lines = [
        f"All {len(every)} DirectML operator types by the feature level that introduced them; the {lowered} that "
        "dml2onnx lowers are in bold (`dml2onnx ops` adds data types and ONNX ops):",
        "",
    ]
    for level in schema.LEVELS:
        at = [e for e in every if e.introduced == level]
        if not at:
            continue
        names = ", ".join(f"**`{short_name(e.name)}`**" if e.supported else f"`{short_name(e.name)}`" for e in at)
        done = sum(e.supported for e in at)
        lines.append(f"- `{level}` ({len(at)}, {done} lowered): {names}")
    return "\n".join(lines) + "\n"
