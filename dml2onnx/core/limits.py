"""Size limits checked before anything is allocated: a hostile model is refused in
milliseconds instead of exhausting memory. The default follows DirectML: 4 GiB buffers, element
counts that fit in UINT32. `--max-bytes` changes the byte limit for one command."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

DEFAULT_MAX_BYTES = 4 * 2**30
MAX_ELEMENTS = 2**32 - 1

_max_bytes = DEFAULT_MAX_BYTES


def max_bytes() -> int:
    return _max_bytes


def describe(n: int) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} bytes"


def text(kind: str) -> str:
    """How error messages name the limit: `tensor limit of 4 GiB (--max-bytes)`."""
    return f"{kind} limit of {describe(max_bytes())} (--max-bytes)"


@contextlib.contextmanager
def bytes_limit(limit: int) -> Iterator[None]:
    """Applies `limit` (bytes) while the block runs."""
    global _max_bytes
    previous, _max_bytes = _max_bytes, limit
    try:
        yield
    finally:
        _max_bytes = previous


# Images (dml2onnx/formats/images.py): an image's width x height, checked from its header before it is
# decoded, and on resampleSize and writeFile dimensions. A small file can claim a huge image (a
# "decompression bomb"); 8192 x 8192 is 256 MiB of RGBA, below Pillow's own warning limit.
MAX_IMAGE_PIXELS = 8192 * 8192
