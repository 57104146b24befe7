"""The pooling operators' window (pooling.py, quantized_pooling.py, pooling_grad.py): its
geometry, the input elements each window holds, and the numpy windows the references take.

A window o reads input element o * Strides + tap * Dilations - StartPadding along each spatial
dimension; elements outside the input are padding. DirectML computes as many windows as
OutputTensor's spatial sizes say, whatever the pages' formula gives (measured: pooling.py), so
`window` extends EndPadding to cover every window past the padded input: they read padding there.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from dml2onnx.core.desc import OperatorDesc


@dataclass(frozen=True)
class Window:
    kind: str  # "AVERAGE", "LP" or "MAX"
    strides: tuple[int, ...]
    sizes: tuple[int, ...]
    start: tuple[int, ...]
    end: tuple[int, ...]
    dilations: tuple[int, ...]
    include_padding: bool = False
    p: int = 0
    out: tuple[int, ...] | None = None  # OutputTensor's spatial sizes, where the desc gives them

    def formula_sizes(self, spatial: tuple[int, ...]) -> tuple[int, ...]:
        """The windows that fit in the padded input: the pages' formula."""
        return tuple(
            (n + s + e - x) // st + 1
            for n, s, e, x, st in zip(spatial, self.start, self.end, self.extents, self.strides, strict=True)
        )

    @property
    def extents(self) -> tuple[int, ...]:
        return tuple((k - 1) * d + 1 for k, d in zip(self.sizes, self.dilations, strict=True))

    def output_sizes(self, spatial: tuple[int, ...]) -> tuple[int, ...]:
        """OutputTensor's spatial sizes: the desc's, else the pages' formula."""
        return self.out if self.out is not None else self.formula_sizes(spatial)


def window(desc: OperatorDesc, raw: bool = False) -> Window:
    """The desc's window with OutputTensor's spatial sizes. Where they reach past the padded input
    (ceil mode, more windows, a window larger than the input), EndPadding is extended to cover the
    windows past it: DirectML treats those elements as padding (measured; module docstring).
    `raw`: the desc's EndPadding, no output sizes (the pages' formula)."""
    name = desc.schema.name
    kind = name.split("_POOLING")[0]
    n = desc["DimensionCount"]
    dilations = desc["Dilations"] if "Dilations" in desc.values else (1,) * n
    end = desc["EndPadding"]
    out = None
    if not raw:
        x, out = desc.tensor("InputTensor").sizes[2:], desc.tensor("OutputTensor").sizes[2:]
        end = tuple(
            e + max(0, (o - 1) * st + (k - 1) * d + 1 - (size + s + e))
            for size, o, st, k, d, s, e in zip(
                x, out, desc["Strides"], desc["WindowSize"], dilations, desc["StartPadding"], end, strict=True
            )
        )
    return Window(
        kind,
        desc["Strides"],
        desc["WindowSize"],
        desc["StartPadding"],
        end,
        dilations,
        bool(desc.values.get("IncludePadding", False)),
        desc.values.get("P", 0),
        out,
    )


def taps(w: Window, spatial: tuple[int, ...], axis: int) -> np.ndarray:
    """[out, WindowSize] booleans: whether each tap of each window along `axis` is an input element."""
    out = w.output_sizes(spatial)[axis]
    pos = np.arange(out)[:, None] * w.strides[axis] - w.start[axis] + np.arange(w.sizes[axis])[None, :] * w.dilations[axis]
    return (pos >= 0) & (pos < spatial[axis])


def counts(w: Window, spatial: tuple[int, ...]) -> np.ndarray:
    """The number of input elements in each window, at the output's spatial sizes."""
    c = np.ones((), np.int64)
    for a in range(len(spatial)):
        per_axis = taps(w, spatial, a).sum(axis=1)
        c = np.multiply.outer(c, per_axis)
    return c


def has_empty_windows(w: Window, spatial: tuple[int, ...]) -> bool:
    return bool((counts(w, spatial) == 0).any())


def lowest(t: np.dtype) -> float | int:
    """MAX_POOLING's start value: the type's lowest finite value (DirectML's max over a window
    starts there: -inf gives -3.4e38 in FLOAT32, -65504 in FLOAT16; NaN is skipped; a window
    entirely in padding gives it)."""
    return float(np.finfo(t).min) if t.kind == "f" else int(np.iinfo(t).min)


def windows(w: Window, x: np.ndarray, fill: float | int) -> tuple[np.ndarray, np.ndarray]:
    """(values, valid): [taps, N, C, out...] of every window element, `fill` where padding."""
    spatial = x.shape[2:]
    out = w.output_sizes(spatial)
    pad = [(0, 0), (0, 0), *zip(w.start, w.end, strict=True)]
    xp = np.pad(x, pad, constant_values=np.array(fill).astype(x.dtype) if x.dtype != object else fill)
    valid = np.pad(np.ones(x.shape, bool), pad, constant_values=False)
    vals, masks = [], []
    for offset in itertools.product(*(range(k) for k in w.sizes)):
        index = (slice(None), slice(None)) + tuple(
            slice(o * d, o * d + (n - 1) * s + 1, s) for o, d, n, s in zip(offset, w.dilations, out, w.strides, strict=True)
        )
        vals.append(xp[index])
        masks.append(valid[index])
    return np.stack(vals), np.stack(masks)
