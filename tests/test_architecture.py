"""The package's layers (README, "How it fits together"): every module imports only its own layer
and those below it, there is no import cycle, no dml2onnx import inside a function or under
TYPE_CHECKING, no hand-written module over 600 lines, and nothing imports from tests/."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())
PACKAGE = ROOT / "dml2onnx"
# lowest first; `dml2onnx` itself (the version) is below them all, `__main__` above
LAYERS = ("core", "graph", "ops", "lowering", "cases", "formats", "backends", "run", "dmlx", "commands")
GENERATED = {"dml2onnx.core.operator_table", "dml2onnx.graph.dml_ep_registry"}
MAX_LINES = 600


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


MODULES = _modules()


def _target(module: str, node: ast.ImportFrom | ast.Import) -> list[str]:
    """The dml2onnx modules an import statement loads (a name imported from a package that is a
    module counts as that module)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name in MODULES]
    if node.level:
        base = module.split(".")
        if MODULES[module].name != "__init__.py":
            base = base[:-1]
        base = base[: len(base) - node.level + 1]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module or ""
    out = []
    for a in node.names:
        full = f"{source}.{a.name}"
        out.append(full if full in MODULES else source)
    return [m for m in out if m in MODULES]


def _imports() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        graph[module] = {t for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom) for t in _target(module, n)}
        graph[module].discard(module)
    return graph


IMPORTS = _imports()


def layer(module: str) -> int:
    parts = module.split(".")
    if len(parts) == 1:
        return -1
    if parts[1] == "__main__":
        return len(LAYERS)
    return LAYERS.index(parts[1])


def test_every_module_is_in_a_layer() -> None:
    assert len(MODULES) > 100 and "dml2onnx.core.desc" in MODULES
    for module in MODULES:
        layer(module)  # raises for a subpackage not in LAYERS


def test_no_import_runs_back_up() -> None:
    upward = sorted(f"{m} -> {t}" for m, targets in IMPORTS.items() for t in targets if layer(t) > layer(m))
    assert upward == []


def test_no_import_cycle() -> None:
    seen: dict[str, int] = {}  # 1: on the current path, 2: done
    cycles = []

    def visit(m: str, path: list[str]) -> None:
        seen[m] = 1
        for t in sorted(IMPORTS[m]):
            if seen.get(t) == 1:
                cycles.append(" -> ".join([*path[path.index(t) :], t]))
            elif t not in seen:
                visit(t, [*path, t])
        seen[m] = 2

    for m in MODULES:
        if m not in seen:
            visit(m, [m])
    assert cycles == []


def test_imports_are_at_module_level() -> None:
    """No dml2onnx import inside a function or an `if TYPE_CHECKING:` block: such imports exist
    only to dodge a cycle or a layer."""
    hidden = []
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.If):
                for inner in ast.walk(node):
                    if isinstance(inner, ast.Import | ast.ImportFrom) and _target(module, inner):
                        hidden.append(f"{module}:{inner.lineno}")
    assert hidden == []


def test_hand_written_modules_are_small() -> None:
    long = {m: n for m, p in MODULES.items() if m not in GENERATED and (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}


@pytest.mark.parametrize("top", ["dml2onnx", "tools", "benchmarks"])
def test_nothing_reaches_into_tests(top: str) -> None:
    offenders = [
        str(p.relative_to(ROOT)) for p in (ROOT / top).rglob("*.py") if '"tests"' in p.read_text() and "sys.path" in p.read_text()
    ]
    assert offenders == []
