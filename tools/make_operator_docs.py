"""Regenerates docs/operators.md (every operator's fields, types, doc page and a runnable example)
from the operator table: python tools/make_operator_docs.py (tests/commands/test_operator_info.py
checks that it is current)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from dml2onnx.commands import operator_info  # noqa: E402

PAGE = ROOT / "docs" / "operators.md"

if __name__ == "__main__":
    PAGE.write_text(operator_info.markdown_page(), encoding="utf-8")
    print(f"{PAGE.relative_to(ROOT)}: {PAGE.read_text(encoding='utf-8').count(chr(10))} lines")
