"""DML_OPERATOR_UNFOLD (im2col) and DML_OPERATOR_FOLD (col2im), feature level 6_4: sliding windows
over the DimensionCount spatial dimensions of an (N, C, *spatial) tensor.

UNFOLD copies each window of the zero-padded input into a column of the (N, C * prod(WindowSizes),
BlockCount) output: row c * prod(WindowSizes) + k (k the window offset, row-major), column l (the
block, row-major over BlocksPerDimension). FOLD is its adjoint: each column of its (N, C *
prod(WindowSizes), BlockCount) input is added back at its window's place in the padded output,
overlaps summed, and the padding cropped. Per dimension d (the pages' formula):

    BlocksPerDimension[d] = (Spatial[d] + StartPadding[d] + EndPadding[d]
                             - Dilations[d] * (WindowSizes[d] - 1) - 1) / Strides[d] + 1

Spatial is UNFOLD's input and FOLD's output. The pages' examples are PyTorch's unfold and fold.

What the pages leave open, as DirectML's API (1.15 in onnxruntime-directml 1.24.4, under Wine)
showed it:
- the data types: every 8- to 64-bit integer, FLOAT16 and FLOAT32 (the pages' column is blank;
  FLOAT64 fails, DXGI_ERROR_UNSUPPORTED);
- the rules: InputTensor and OutputTensor of one DataType; UNFOLD's input and FOLD's output of
  DimensionCount + 2 dimensions, the other tensor of 3 with exactly the sizes above; WindowSizes,
  Strides and Dilations at least 1; at least one block per dimension (E_INVALIDARG otherwise; the
  pages' "the same DimensionCount" contradicts their own examples);
- FOLD's sums: 8/16-bit integers saturate, 32-bit ones wrap, 64-bit ones are exact (within
  wrapping); FLOAT16 and FLOAT32 accumulate in their own type (FLOAT16 1000.5 + 0.25 + 2048 + 1 gave
  3048), which the tolerances cover.

The lowering (one form, exact moves for every type): the spatial dimensions flattened, a zero
appended as a spare slot, and one Gather with a table computed here of each output's source (the
slot where it reads padding, or where no window reaches). FOLD gathers every window offset's
contribution to each output element, [N, C, K, S], and ReduceSums the K axis in FLOAT32 for the
floats; for the integers it gathers each window offset's part and adds them up (ONNX Runtime's
integer ReduceSum saturates INT32 and loses INT64's low bits, measured): in INT32 for the 8/16-bit
ones (then saturated), in the type itself for the others (Add wraps).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.errors import ModelError
from dml2onnx.core.schema import OperatorSchema
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.ops import common
from dml2onnx.ops.family import Family

CANDIDATES = ("gather",)  # one lowering (choices.py)
_WINDOW_FIELDS = ("WindowSizes", "Strides", "Dilations", "StartPadding", "EndPadding")


def _spatial(desc: OperatorDesc) -> tuple[int, ...]:
    """The spatial sizes the windows slide over: UNFOLD's input's, FOLD's output's."""
    image = desc.tensor("InputTensor" if desc.schema.name == "UNFOLD" else "OutputTensor")
    return image.sizes[2:]


def blocks(desc: OperatorDesc) -> tuple[int, ...]:
    """BlocksPerDimension (may be 0 or less for a desc validate refuses)."""
    w, s, d, p0, p1 = (desc[f] for f in _WINDOW_FIELDS)
    return tuple((n + p0[i] + p1[i] - d[i] * (w[i] - 1) - 1) // s[i] + 1 if s[i] else 0 for i, n in enumerate(_spatial(desc)))


def validate(desc: OperatorDesc) -> None:
    common.check_same_type(desc, "OutputTensor", "InputTensor")
    unfold = desc.schema.name == "UNFOLD"
    image, columns = ("InputTensor", "OutputTensor") if unfold else ("OutputTensor", "InputTensor")
    count = desc["DimensionCount"]
    img, col = desc.tensor(image), desc.tensor(columns)
    if img.rank != count + 2:
        raise ModelError(desc.at(image, "Sizes"), f"must have DimensionCount + 2 ({count + 2}) dimensions, not {img.rank}")
    for field in ("WindowSizes", "Strides", "Dilations"):
        for i, v in enumerate(desc[field]):
            if v < 1:
                raise ModelError(desc.at(field, i), "must be at least 1")
    per_dimension = blocks(desc)
    for i, n in enumerate(per_dimension):
        if n < 1:
            raise ModelError(
                desc.at("WindowSizes", i),
                f"the window ({desc['WindowSizes'][i]}, dilation {desc['Dilations'][i]}) is wider than the padded "
                f"size {img.sizes[2 + i] + desc['StartPadding'][i] + desc['EndPadding'][i]}: no block fits",
            )
    want = (img.sizes[0], img.sizes[1] * math.prod(desc["WindowSizes"]), math.prod(per_dimension))
    if col.sizes != want:
        raise ModelError(
            desc.at(columns, "Sizes"),
            f"must be (N, C * prod(WindowSizes), BlockCount) = {list(want)}, not {list(col.sizes)}",
        )


def _sources(desc: OperatorDesc) -> np.ndarray:
    """For each window offset k (row-major) and block l (row-major), the flat padded position
    relative to the unpadded image, as [K, L] flat image indices with -1 where it is padding."""
    w, s, d, p0, _ = (desc[f] for f in _WINDOW_FIELDS)
    spatial = _spatial(desc)
    per_dimension = blocks(desc)
    offsets = list(itertools.product(*(range(n) for n in w)))
    starts = list(itertools.product(*(range(n) for n in per_dimension)))
    k, l_ = np.array(offsets, np.int64).reshape(len(offsets), 1, -1), np.array(starts, np.int64).reshape(1, len(starts), -1)
    position = l_ * np.array(s) + k * np.array(d) - np.array(p0)  # [K, L, dims]
    inside = np.all((position >= 0) & (position < np.array(spatial)), axis=-1)
    flat = np.ravel_multi_index(tuple(np.clip(position, 0, np.array(spatial) - 1).transpose(2, 0, 1)), spatial)
    return np.where(inside, flat, -1)


def _unfold_table(desc: OperatorDesc) -> np.ndarray:
    """UNFOLD's [K, L] gather table into the flat image with its spare zero at the end."""
    src = _sources(desc)
    return np.where(src >= 0, src, math.prod(_spatial(desc)))


def _fold_table(desc: OperatorDesc) -> np.ndarray:
    """FOLD's [K, S] gather table into the flat [K * L] columns with a spare zero at the end: for
    each window offset k and output element, the column that adds into it (every (k, l) reaches
    at most one element, and an element at most one l per k)."""
    src = _sources(desc)
    n_k, n_l = src.shape
    size = math.prod(_spatial(desc))
    table = np.full((n_k, size), n_k * n_l, np.int64)
    k, l_ = np.nonzero(src >= 0)
    table[k, src[k, l_]] = k * n_l + l_
    return table


def _with_spare(b: GraphBuilder, x: str, n: int, c: int, length: int, dtype: dtypes.DataType) -> str:
    """x as [n, c, length + 1]: its windows' source as one axis, a zero appended."""
    flat = b.reshape(x, [n, c, length], "flat", "the windows' source as one axis")
    spare = b.filled([n, c, 1], 0, dtype.numpy, "spare", "the zero read where a window reaches padding")
    return b.node("Concat", [flat, spare], "with_spare", "a zero after the last element", axis=2)


def _sum_type(dtype: dtypes.DataType) -> dtypes.DataType:
    """FLOAT32 for the floats, INT32 for the 8/16-bit integers (saturated afterwards), the type
    itself for the others (wrapping, as ONNX Add on them does)."""
    if dtype.is_float:
        return dtypes.FLOAT32
    return dtypes.INT32 if dtype.size < 4 else dtype


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    x_desc, out = desc.tensor("InputTensor"), desc.tensor("OutputTensor")
    dtype = x_desc.data_type
    if desc.schema.name == "UNFOLD":
        n, c = x_desc.sizes[:2]
        padded = _with_spare(b, inputs["InputTensor"], n, c, math.prod(x_desc.sizes[2:]), dtype)
        y = b.node("Gather", [padded, b.i64(_unfold_table(desc), "sources")], "windows", "each window's elements", axis=2)
        return b.reshape(y, list(out.sizes), "columns", "(N, C * K, BlockCount)")
    n, c = out.sizes[:2]
    ct = _sum_type(dtype)
    x = inputs["InputTensor"] if ct == dtype else b.cast(inputs["InputTensor"], ct, "widened", f"in {ct}")
    padded = _with_spare(b, x, n, c, math.prod(x_desc.sizes[1:]) // c, ct)
    table = _fold_table(desc)
    if dtype.is_float:  # every window offset's part, [N, C, K, S], summed over K
        parts = b.node("Gather", [padded, b.i64(table, "sources")], "parts", "each offset's part of each element", axis=2)
        y = b.reduce("ReduceSum", parts, [2], "sum", "the overlapping windows summed", keepdims=False)
    else:  # ONNX Runtime's integer ReduceSum saturates INT32 and rounds INT64 (measured): Adds wrap
        y = ""
        for k, row in enumerate(table):
            part = b.node("Gather", [padded, b.i64(row, f"sources{k}")], f"part{k}", f"window offset {k}'s part", axis=2)
            y = part if not y else b.node("Add", [y, part], f"sum{k}", f"offsets 0 to {k} summed")
    if dtype.is_float and dtype != ct:
        y = b.cast(y, dtype, "narrowed", f"in {dtype}")
    elif dtype != ct:  # 8/16-bit sums saturate
        lo, hi = (int(v) for v in (np.iinfo(dtype.numpy).min, np.iinfo(dtype.numpy).max))
        y = b.node("Max", [y, b.scalar(lo, ct, "type_min")], "at_least_min", f"at least {lo}")
        y = b.node("Min", [y, b.scalar(hi, ct, "type_max")], "at_most_max", f"at most {hi}")
        y = b.cast(y, dtype, "narrowed", f"in {dtype}")
    return b.reshape(y, list(out.sizes), "image", "(N, C, *spatial)")


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    x = inputs["InputTensor"]
    out = desc.tensor("OutputTensor")
    src = _sources(desc)
    if desc.schema.name == "UNFOLD":
        n, c = x.shape[:2]
        flat = np.concatenate([x.reshape(n, c, -1), np.zeros((n, c, 1), x.dtype)], axis=2)
        return flat[:, :, np.where(src >= 0, src, flat.shape[2] - 1)].reshape(out.sizes)
    n, c = out.sizes[:2]
    n_k, n_l = src.shape
    columns = x.reshape(n, c, n_k, n_l)
    wide = np.float64 if x.dtype.kind == "f" else object  # exact sums, then the type's rule
    total = np.zeros((n, c, math.prod(out.sizes[2:])), wide)
    k, l_ = np.nonzero(src >= 0)
    for kk, ll in zip(k, l_, strict=True):
        total[:, :, src[kk, ll]] += columns[:, :, kk, ll].astype(wide)
    if x.dtype.kind == "f":
        return total.astype(x.dtype).reshape(out.sizes)
    info = np.iinfo(x.dtype)
    if x.dtype.itemsize < 4:
        total = np.clip(total, int(info.min), int(info.max))
    else:
        total = np.vectorize(lambda v: common.wrap_int(int(v), x.dtype), otypes=[object])(total)
    return total.astype(x.dtype).reshape(out.sizes)


def examples(op: OperatorSchema) -> list[common.Example]:
    """onnx_ops: each type, a 3x3 window over 4x4 with padding 1 (FOLD: the adjoint)."""
    out: list[common.Example] = []
    window = {
        "DimensionCount": 2,
        "WindowSizes": [3, 3],
        "Strides": [1, 1],
        "Dilations": [1, 1],
        "StartPadding": [1, 1],
        "EndPadding": [1, 1],
    }
    image, columns = [1, 2, 4, 4], [1, 18, 16]
    for t in common.example_types(op, "InputTensor"):
        ins, outs = (image, columns) if op.name == "UNFOLD" else (columns, image)
        out.append({"InputTensor": common.example_tensor(t, ins), "OutputTensor": common.example_tensor(t, outs)} | window)
    return out


OPERATOR_FAMILY = Family(("FOLD", "UNFOLD"), validate, lower, reference, CANDIDATES, examples=examples)
