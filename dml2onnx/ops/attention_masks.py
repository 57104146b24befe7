"""MULTIHEAD_ATTENTION(1)'s MaskTensor (dml2onnx/ops/multihead_attention.py, whose module doc says
what DirectML computes for each MaskType): its validation, what it adds to the scores in the
lowered graph and in the reference, and the size helpers both modules use."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.errors import ModelError
from dml2onnx.graph.builder import GraphBuilder


@dataclass(frozen=True)
class Shape:
    """The desc's sizes: batch, sequence (queries), kv (new keys), past, heads, kv_heads,
    head (Q/K head size), value_head (V's), and where Q, K and V come from."""

    batch: int
    sequence: int
    kv: int
    past: int
    heads: int
    kv_heads: int
    head: int
    value_head: int
    sources: dict[str, tuple[str, int | None]]

    @property
    def keys(self) -> int:
        return self.past + self.kv

    @property
    def scores(self) -> tuple[int, int, int, int]:
        return (self.batch, self.heads, self.sequence, self.keys)


def squeezed(desc: OperatorDesc, name: str, keep: int) -> tuple[int, ...]:
    """The last `keep` sizes of a tensor whose leading sizes must be 1."""
    t = desc.tensor(name)
    lead = t.sizes[: t.rank - keep]
    if any(s != 1 for s in lead):
        raise ModelError(desc.at(name, "Sizes"), f"{name}'s sizes before its last {keep} must be 1, not {list(t.sizes)}")
    return t.sizes[t.rank - keep :]


def expect(desc: OperatorDesc, name: str, got: tuple[int, ...], want: tuple[int, ...], what: str) -> None:
    if tuple(got) != tuple(want):
        raise ModelError(desc.at(name, "Sizes"), f"{name} must be {what} = {list(want)} (leading 1s allowed), not {list(got)}")


# -- validation ---------------------------------------------------------------------------------


def validate(desc: OperatorDesc, s: Shape) -> None:
    mask, kind = desc.optional_tensor("MaskTensor"), desc["MaskType"]
    if kind == "NONE":
        if mask is not None:
            raise ModelError(desc.at("MaskTensor"), "MaskType NONE takes no MaskTensor")
        return
    if mask is None:
        raise ModelError(desc.at("MaskTensor"), f"MaskType {kind} needs a MaskTensor")
    if kind == "KEY_QUERY_SEQUENCE_LENGTH_START_END":
        expect(desc, "MaskTensor", squeezed(desc, "MaskTensor", 1), (3 * s.batch + 2,), "[3 * batch + 2]")
        return
    if kind == "BOOLEAN":
        if mask.rank < 4:
            raise ModelError(desc.at("MaskTensor", "Sizes"), "a BOOLEAN mask is [batch, heads, sequence, keys]")
        expect(desc, "MaskTensor", squeezed(desc, "MaskTensor", 4), s.scores, "[batch, heads, sequence, past + keyValueSequence]")
        return
    rows = 1 if kind == "KEY_SEQUENCE_LENGTH" else 2
    if mask.rank < 2:
        raise ModelError(desc.at("MaskTensor", "Sizes"), f"a {kind} mask is [{rows}, batch]")
    expect(desc, "MaskTensor", squeezed(desc, "MaskTensor", 2), (rows, s.batch), f"[{rows}, batch]")


# -- lowering -----------------------------------------------------------------------------------


def lower(desc: OperatorDesc, b: GraphBuilder, mask: str, s: Shape, half: bool) -> str:
    """What the MaskTensor adds to the FLOAT32 scores (module doc); `half`: a FLOAT16 desc."""
    added = _added_graph(desc, b, mask, s)
    if half:  # DirectML holds what the mask adds as FLOAT16: beyond its range, infinite
        magnitude = b.node("Abs", [added], "added_magnitude", "|added|")
        limit = b.scalar(65520.0, dtypes.FLOAT32, "half_overflow")
        finite = b.node("Less", [magnitude, limit], "half_finite", "rounds to a finite FLOAT16")
        huge = b.node("Not", [finite], "half_infinite", "rounds to an infinite FLOAT16 (or NaN)")
        infinite = b.node("Mul", [added, b.scalar(np.inf, dtypes.FLOAT32, "infinity")], "added_infinite", "+-inf of its sign")
        added = b.node("Where", [huge, infinite, added], "added_as_float16", "what the mask adds, FLOAT16's infinities")
    return added


def _in_range(b: GraphBuilder, x: str, start: str, end: str, step: str, doc: str) -> str:
    """start <= x < end (INT32, broadcast)."""
    below_end = b.node("Less", [x, end], f"{step}_below_end", "x < end")
    from_start = b.node(
        "Not", [b.node("Less", [x, start], f"{step}_before_start", "x < start")], f"{step}_from_start", "x >= start"
    )
    return b.node("And", [from_start, below_end], step, doc)


def _packed_kept(b: GraphBuilder, mask: str, s: Shape) -> str:
    """KEY_QUERY_SEQUENCE_LENGTH_START_END [keyLength[B], queryStart[B], queryEnd, keyStart[B], keyEnd]:
    query row b * sequence + s is batch b's where queryStart[b] <= it < queryStart[b + 1] (queryEnd
    after the last), key b * keys + j is kept where keyStart[b] <= it < keyStart[b] + keyLength[b];
    keyEnd is not read (as DirectML computes)."""
    n = s.batch
    flat = b.reshape(mask, [-1], "packed_mask", "the mask as [3 * batch + 2]")

    def part(lo: int, hi: int, step: str, doc: str) -> str:
        return b.reshape(b.slice(flat, [0], [lo], [hi], f"{step}_values", doc), [n, 1, 1, 1], step, f"{doc} per batch")

    key_length = part(0, n, "key_lengths", "keyLength")
    query_start, query_end = (
        part(n, 2 * n, "query_starts", "queryStart"),
        part(n + 1, 2 * n + 1, "query_ends", "the next queryStart"),
    )
    key_start = part(2 * n + 1, 3 * n + 1, "key_starts", "keyStart")
    key_end = b.node("Add", [key_start, key_length], "key_ends", "keyStart + keyLength")
    rows = np.arange(n * s.sequence, dtype=np.int32).reshape(n, 1, s.sequence, 1)
    keys = np.arange(n * s.keys, dtype=np.int32).reshape(n, 1, 1, s.keys)
    row_kept = _in_range(b, b.const(rows, "query_rows"), query_start, query_end, "query_kept", "the row is its batch's")
    key_kept = _in_range(b, b.const(keys, "key_rows"), key_start, key_end, "key_kept", "the key is its batch's")
    return b.node("And", [row_kept, key_kept], "kept", "kept query row and key")


def _added_graph(desc: OperatorDesc, b: GraphBuilder, mask: str, s: Shape) -> str:
    """What the mask adds to the scores (FLOAT32, broadcast to [batch, heads, sequence, keys])."""
    kind, filter_value = desc["MaskType"], b.scalar(desc["MaskFilterValue"], dtypes.FLOAT32, "mask_filter_value")
    if kind == "BOOLEAN":
        m = b.cast(b.reshape(mask, list(s.scores), "mask_4d", "as 4-D"), dtypes.FLOAT32, "mask_float", "the mask in FLOAT32")
        unkept = b.node("Sub", [b.scalar(1.0, dtypes.FLOAT32, "one"), m], "one_minus_mask", "1 - mask")
        return b.node("Mul", [unkept, filter_value], "mask_added", "(1 - mask) * MaskFilterValue, as DirectML adds it")
    if kind == "KEY_QUERY_SEQUENCE_LENGTH_START_END":  # (1 - kept) * MaskFilterValue, as BOOLEAN
        kept = b.cast(_packed_kept(b, mask, s), dtypes.FLOAT32, "kept_float", "kept as 1, filtered as 0")
        unkept = b.node("Sub", [b.scalar(1.0, dtypes.FLOAT32, "one"), kept], "unkept", "1 - kept")
        return b.node("Mul", [unkept, filter_value], "mask_added", "(1 - kept) * MaskFilterValue, as DirectML adds it")
    positions = b.const(np.arange(s.keys, dtype=np.int32), "key_positions")
    rows = b.reshape(mask, [-1, s.batch, 1, 1, 1], "mask_rows", "[rows, batch, 1, 1, 1]")
    if kind == "KEY_SEQUENCE_LENGTH":  # [0, length)
        end = b.reshape(rows, [s.batch, 1, 1, 1], "key_ends", "length per batch")
        start = b.const(np.zeros((1, 1, 1, 1), np.int32), "key_starts")
    else:  # KEY_SEQUENCE_END_START: row 0 the ends, row 1 the starts
        end = b.reshape(b.slice(rows, [0], [0], [1], "ends", "row 0"), [s.batch, 1, 1, 1], "key_ends", "end per batch")
        start = b.reshape(b.slice(rows, [0], [1], [2], "starts", "row 1"), [s.batch, 1, 1, 1], "key_starts", "start per batch")
    kept = _in_range(b, positions, start, end, "in_range", "start <= key < end")
    # an empty range (end <= start) filters nothing: DirectML computes such a row unmasked
    empty = b.node("Not", [b.node("Less", [start, end], "nonempty", "start < end")], "empty", "end <= start")
    kept = b.node("Or", [kept, empty], "kept", "in the range, or every key where the range is empty")
    zero = b.scalar(0.0, dtypes.FLOAT32, "zero")
    return b.node("Where", [kept, zero, filter_value], "mask_added", "0 where kept, MaskFilterValue where filtered")


# -- reference ----------------------------------------------------------------------------------


def added(desc: OperatorDesc, mask: np.ndarray, s: Shape) -> np.ndarray:
    """What the MaskTensor adds to the [batch, heads, sequence, keys] scores (float64; a
    FLOAT16 desc's held as FLOAT16)."""
    result = _added_reference(desc, mask, s)
    dtype = desc.tensor("OutputTensor").data_type.numpy
    if dtype == np.float16:  # held as FLOAT16 (module doc)
        with np.errstate(over="ignore"):
            result = result.astype(np.float16).astype(np.float64)
    return result


def _added_reference(desc: OperatorDesc, mask: np.ndarray, s: Shape) -> np.ndarray:
    filter_value = np.float64(np.float32(desc["MaskFilterValue"]))
    m = mask.astype(np.int64)
    if desc["MaskType"] == "BOOLEAN":
        with np.errstate(invalid="ignore"):  # 0 * -inf: NaN, as DirectML computes
            return (1 - m.reshape(s.scores)) * filter_value
    if desc["MaskType"] == "KEY_QUERY_SEQUENCE_LENGTH_START_END":
        with np.errstate(invalid="ignore"):
            return (1 - _packed_kept_reference(m.reshape(-1), s)) * filter_value
    rows = m.reshape(-1, s.batch)
    end, start = rows[0][:, None], (rows[1][:, None] if desc["MaskType"] == "KEY_SEQUENCE_END_START" else 0)
    pos = np.arange(s.keys)[None, :]
    kept = ((start <= pos) & (pos < end)) | (end <= start)  # an empty range filters nothing
    return np.where(kept, 0.0, filter_value)[:, None, None, :]


def _packed_kept_reference(m: np.ndarray, s: Shape) -> np.ndarray:
    """KEY_QUERY_SEQUENCE_LENGTH_START_END (_packed_kept's rule), 1 where kept: rows and keys
    counted across the batches."""
    n = s.batch
    key_length, query_start, key_start = m[:n], m[n : 2 * n + 1], m[2 * n + 1 : 3 * n + 1]
    kept = np.zeros(s.scores)
    for b in range(n):
        rows = b * s.sequence + np.arange(s.sequence)
        keys = b * s.keys + np.arange(s.keys)
        row_kept = (query_start[b] <= rows) & (rows < query_start[b + 1])
        key_kept = (key_start[b] <= keys) & (keys < key_start[b] + key_length[b])
        kept[b, :, row_kept[:, None] & key_kept[None, :]] = 1.0
    return kept
