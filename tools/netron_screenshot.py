"""Saves a Netron screenshot of a lowered dispatchable (docs/ keeps one of a multi-axis Hardmax1).

python tools/netron_screenshot.py models/hardmax1.json hardmax_axes_0_2 docs/netron-hardmax1.png
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import netron  # noqa: E402

from dml2onnx.commands import inspection  # noqa: E402
from dml2onnx.commands.screenshot import render  # noqa: E402


def main(model: str, dispatchable: str, png: str) -> None:
    lowered, name = inspection.load(model, dispatchable, 17, "portable", False)
    host, port = inspection.serve(lowered, name, 0, browse=False)
    try:
        ops = sorted({n.op_type for n in lowered.graph.node})
        render(f"http://{host}:{port}/", ops, Path(png))
    finally:
        netron.stop()
    print(f"{png}: {name} ({', '.join(ops)})")


if __name__ == "__main__":
    main(*sys.argv[1:4])
