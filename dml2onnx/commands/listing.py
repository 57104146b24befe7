"""`dml2onnx ops`: every DirectML operator as dml2onnx sees it: whether it is lowered (a row of
ops/registry.py), the feature level that introduced it, its data types per feature level, and the
ONNX ops of its lowerings (lowering/onnx_ops.py). The README's operator overview is `markdown()`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dml2onnx.core import operator_table, schema
from dml2onnx.core.catalog import available, data_types, short_name
from dml2onnx.lowering import onnx_ops
from dml2onnx.ops import registry


def lowered(name: str) -> bool:
    return name in registry.BY_OPERATOR


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
    out = []
    for name, op in operator_table.OPERATORS.items():
        if not available(op, level):
            continue
        ops_used = onnx_ops.onnx_ops(name) if with_onnx_ops and lowered(name) else ()
        supported = lowered(name)
        out.append(Entry(op.full_name, supported, op.feature_level, data_types(op, level), ops_used))
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
