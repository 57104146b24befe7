"""Writing files whole or not at all: a temporary file in the same folder, then a rename."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomic(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def npy_bytes(array_bytes: bytes, descr: str, shape: tuple[int, ...]) -> bytes:
    """An NPY 1.0 file, header padded to a multiple of 64 bytes as DxDispatch writes it."""
    dims = "".join(f"{d}," for d in shape)
    header = f"{{'descr':'{descr}', 'fortran_order':False, 'shape':({dims}), }}"
    pad = 64 - (10 + len(header) + 1) % 64
    header += " " * (pad % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode("latin1") + array_bytes


def inside_current_folder(target: str | Path) -> bool:
    """True when `target` (relative to the current folder) stays inside it, links resolved."""
    here = Path.cwd().resolve()
    return (here / Path(target)).resolve().is_relative_to(here)
