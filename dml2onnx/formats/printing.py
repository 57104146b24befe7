"""DxDispatch's `print` text: `Resource 'NAME': v1, v2, ...` with C++ ostream formatting
(6 significant digits, like %g)."""

from __future__ import annotations

import math

import numpy as np


def format_value(v: np.generic) -> str:
    if isinstance(v, np.floating):
        f = float(v)
        if math.isnan(f):
            return "nan"
        return f"{f:g}"
    # INT8/UINT8 print as numbers here; DxDispatch streams them as raw characters.
    return str(int(v))


def format_print(name: str, values: np.ndarray, verbose: bool = False) -> str:
    if not verbose:
        return f"Resource '{name}': " + ", ".join(format_value(v) for v in values) + "\n"
    width = math.floor(math.log10(len(values))) + 1 if len(values) else 1
    size = values.dtype.itemsize
    lines = []
    for i, v in enumerate(values):
        bits = int.from_bytes(v.tobytes(), "little")
        lines.append(f"[{i:>{width}}] {format_value(v)} (0x{bits:>{2 * size}X})\n")
    return f"Resource '{name}':\n" + "".join(lines) + "\n"
