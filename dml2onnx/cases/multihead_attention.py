"""Matrix cases for DML_OPERATOR_MULTIHEAD_ATTENTION and MULTIHEAD_ATTENTION1
(dml2onnx/ops/multihead_attention.py), both data types of the pages' tables (FLOAT32, FLOAT16):

- `plain`: Query/Key/Value [batch, sequence, hidden] at 3, 4 and 5 dimensions (leading 1s),
  one head or several, a value head size of its own, one query, Scale 1/sqrt(headSize), 1, 0, -0.5;
- `stacked_*`: StackedQueryKey + Value, Query + StackedKeyValue, StackedQueryKeyValue, each with
  a BiasTensor too (1-D and 5-D);
- `mask_*`: every MaskType: KEY_SEQUENCE_LENGTH (0, partial, the whole and past the keys,
  negative), KEY_SEQUENCE_END_START (end <= start among them), BOOLEAN (0/1, and 2 and -1: (1 -
  mask) * MaskFilterValue), KEY_QUERY_SEQUENCE_LENGTH_START_END (rows outside their batch's
  range, shifted key starts, past keys); a MaskFilterValue of -10000 where no row is wholly
  filtered, -2 where one is (the rows then are softmax(scores - 2)), and -inf, -1e30, -70000
  (beyond FLOAT16) with wholly filtered rows and empty ranges (NaN, uniform, unmasked rows);
- `rpb`, `past`, `present`: RelativePositionBias, PastKey/PastValue with and without the present
  outputs, the present outputs alone (one of them, or both), all of them with a mask and a bias;
- MULTIHEAD_ATTENTION1: grouped-query attention (4 query heads over 2 and 1 key/value heads)
  with each layout that allows it, past/present, masks and bias.

The inputs keep the bounds tolerances.attention() states: |Q|, |K|, |V| <= 1, |bias| <= 1/4,
|RelativePositionBias| <= 1, head size <= 8, keys <= 16."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from dml2onnx.cases.common import Case, tensor_of
from dml2onnx.core import dtypes

TYPES = (dtypes.FLOAT32, dtypes.FLOAT16)


class _Builder:
    """One desc and its inputs: batch b, sequence s, new keys kv, heads h (kv_heads g), head
    size d (value head size dv)."""

    def __init__(
        self, rng: np.random.Generator, op: str, dtype: dtypes.DataType, b: int, s: int, kv: int, h: int, d: int, **kw: Any
    ) -> None:
        self.rng, self.op, self.dtype = rng, op, dtype
        self.b, self.s, self.kv, self.h, self.d = b, s, kv, h, d
        self.g = kw.get("g", h)
        self.dv = kw.get("dv", d)
        self.past = kw.get("past", 0)
        self.fields: dict[str, Any] = {"Scale": kw.get("scale", 1 / np.sqrt(d)), "MaskFilterValue": -10000.0, "MaskType": "NONE"}
        if op == "MULTIHEAD_ATTENTION":
            self.fields["HeadCount"] = h
        else:
            self.fields |= {"QueryHeadCount": h, "KeyValueHeadCount": self.g}
        self.inputs: dict[str, np.ndarray] = {}
        lead = (1,) * (kw.get("rank", 3) - 3)
        self.lead = lead
        self.out(lead + (b, s, h * self.dv), "OutputTensor")

    @property
    def keys(self) -> int:
        return self.past + self.kv

    def add(self, name: str, shape: tuple[int, ...], scale: float = 1.0, dtype: dtypes.DataType | None = None) -> None:
        t = dtype or self.dtype
        self.fields[name] = tensor_of(t, shape)
        if t.is_float:
            self.inputs[name] = (self.rng.uniform(-1, 1, shape) * scale).astype(t.numpy)

    def out(self, shape: tuple[int, ...], name: str) -> None:
        self.fields[name] = tensor_of(self.dtype, shape)

    def qkv(self, layout: str = "plain") -> _Builder:
        b, s, kv, h, g, d, dv, lead = self.b, self.s, self.kv, self.h, self.g, self.d, self.dv, self.lead
        if layout == "plain":
            self.add("QueryTensor", lead + (b, s, h * d))
            self.add("KeyTensor", lead + (b, kv, g * d))
            self.add("ValueTensor", lead + (b, kv, g * dv))
        elif layout == "qk":
            self.add("StackedQueryKeyTensor", (b, s, h, 2, d))
            self.add("ValueTensor", lead + (b, s, g * dv))
        elif layout == "kv":
            self.add("QueryTensor", lead + (b, s, h * d))
            self.add("StackedKeyValueTensor", (b, kv, g, 2, d))
        else:
            self.add("StackedQueryKeyValueTensor", (b, s, h, 3, d))
        return self

    def bias(self, rank: int = 1) -> _Builder:
        n = (self.h + self.g) * self.d + self.g * self.dv
        self.add("BiasTensor", (1,) * (rank - 1) + (n,), 0.25)
        return self

    def scores_shape(self, rank: int = 4) -> tuple[int, ...]:
        return (1,) * (rank - 4) + (self.b, self.h, self.s, self.keys)

    def rpb(self, rank: int = 4) -> _Builder:
        self.add("RelativePositionBiasTensor", self.scores_shape(rank))
        return self

    def with_past(self, present: bool = True) -> _Builder:
        self.add("PastKeyTensor", (self.b, self.g, self.past, self.d))
        self.add("PastValueTensor", (self.b, self.g, self.past, self.dv))
        if present:
            self.present()
        return self

    def present(self, which: str = "both") -> _Builder:
        if which in ("both", "key"):
            self.out((self.b, self.g, self.keys, self.d), "OutputPresentKeyTensor")
        if which in ("both", "value"):
            self.out((self.b, self.g, self.keys, self.dv), "OutputPresentValueTensor")
        return self

    def mask(self, kind: str, values: np.ndarray, filter_value: float = -10000.0) -> _Builder:
        values = np.asarray(values, np.int32)
        self.fields |= {"MaskType": kind, "MaskFilterValue": filter_value, "MaskTensor": tensor_of(dtypes.INT32, values.shape)}
        self.inputs["MaskTensor"] = values
        return self

    def case(self, name: str) -> Case:
        return Case(f"{self.op}-{self.dtype}-{name}", self.op, dict(self.fields), dict(self.inputs))


def _cases(op: str, dtype: dtypes.DataType, rng: np.random.Generator) -> Iterator[Case]:
    def new(b: int = 2, s: int = 3, kv: int = 4, h: int = 2, d: int = 4, **kw: Any) -> _Builder:
        return _Builder(rng, op, dtype, b, s, kv, h, d, **kw)

    for rank in (3, 4, 5):
        yield new(rank=rank).qkv().case(f"plain-{rank}d")
    yield new(b=1, s=1, kv=1, h=1, d=1).qkv().case("plain-one")
    yield new(s=1, kv=16, h=1, d=8).qkv().case("plain-long")
    yield new(dv=3, rank=4).qkv().case("plain-value-head")
    for scale in (1.0, 0.0, -0.5):
        yield new(scale=scale).qkv().case(f"plain-scale{scale}")
    for layout in ("qk", "kv", "qkv"):
        if op == "MULTIHEAD_ATTENTION":
            yield new(kv=3).qkv(layout).case(f"stacked_{layout}")
            yield new(kv=3).qkv(layout).bias(5 if layout == "qkv" else 1).case(f"stacked_{layout}-bias")
    yield new(dv=2).qkv().bias().case("bias")
    yield new(rank=5).qkv().bias(3).case("bias-5d")
    # masks (b = 3: one length per batch)
    yield new(b=3).qkv().mask("KEY_SEQUENCE_LENGTH", [[1, 3, 4]]).case("mask_length")
    yield new(b=3).qkv().mask("KEY_SEQUENCE_LENGTH", [[0, 9, -1]], -2.0).case("mask_length-empty")
    yield new(b=3, rank=5).qkv().mask("KEY_SEQUENCE_LENGTH", [[[2, 1, 4]]]).case("mask_length-3d")
    yield new(b=3).qkv().mask("KEY_SEQUENCE_END_START", [[4, 3, 2], [0, 1, 1]]).case("mask_end_start")
    yield new(b=3).qkv().mask("KEY_SEQUENCE_END_START", [[2, 1, 9], [2, 3, -2]], -2.0).case("mask_end_start-empty")
    # [keyLength[3], queryStart[3], queryEnd, keyStart[3], keyEnd]: rows and keys counted across
    # the batches (3 rows and 4 keys each); a row outside its batch's range is wholly filtered
    yield new(b=3).qkv().mask("KEY_QUERY_SEQUENCE_LENGTH_START_END", [2, 4, 1, 0, 3, 6, 9, 0, 4, 8, 12]).case("mask_packed")
    packed = [3, 2, 5, 1, 2, 7, 8, 1, 4, 9, 0]  # rows 0, 7, 8 outside; key starts 1, 4, 9
    yield new(b=3).qkv().mask("KEY_QUERY_SEQUENCE_LENGTH_START_END", packed, -2.0).case("mask_packed-shifted")
    yield (
        new(b=2, past=2)
        .qkv()
        .with_past()
        .mask("KEY_QUERY_SEQUENCE_LENGTH_START_END", [[4, 6, 0, 3, 6, 1, 6, 12]])
        .case("mask_packed-past")
    )
    keep = rng.integers(0, 2, (2, 2, 3, 4))
    keep[..., 0] = 1  # no row wholly filtered
    yield new().qkv().mask("BOOLEAN", keep).case("mask_boolean")
    yield new().qkv().mask("BOOLEAN", rng.choice([0, 1, 2, -1], (2, 2, 3, 4)), -2.0).case("mask_boolean-values")
    yield new(rank=5).qkv().mask("BOOLEAN", keep.reshape(1, 2, 2, 3, 4)).case("mask_boolean-5d")
    if op == "MULTIHEAD_ATTENTION":  # filters of no range, -inf and beyond FLOAT16 (module doc)
        # -70000 as FLOAT32 would add s - 70000 (s rounded to 2**-8: beyond the tolerance's bound)
        for mf in (-np.inf, -1e30, -70000.0) if dtype == dtypes.FLOAT16 else (-np.inf, -1e30):
            name = f"filter{mf:g}"
            yield new(b=3).qkv().mask("KEY_SEQUENCE_LENGTH", [[2, 0, -1]], mf).case(f"mask_length-{name}")
            yield new(b=3).qkv().mask("KEY_SEQUENCE_END_START", [[3, 9, 1], [1, 4, 5]], mf).case(f"mask_end_start-{name}")
            keep = rng.integers(0, 2, (2, 2, 3, 4))
            keep[0, 0, 1] = 0  # one row wholly filtered
            yield new().qkv().mask("BOOLEAN", keep, mf).case(f"mask_boolean-{name}")
            packed = [2, 4, 0, 3, 5, 0, 4, 8]  # row 5 outside
            yield new(b=2).qkv().mask("KEY_QUERY_SEQUENCE_LENGTH_START_END", packed, mf).case(f"mask_packed-{name}")
    # relative position bias, past and present
    yield new().qkv().rpb().case("rpb")
    # DirectML scales the bias with a BOOLEAN mask ((Q x K^T + bias) * Scale: tests/dml_findings.py)
    keep = rng.integers(0, 2, (2, 2, 3, 4))
    keep[..., 0] = 1
    yield new().qkv().rpb().mask("BOOLEAN", keep).case("mask_boolean-rpb")
    yield new(rank=5).qkv().rpb(5).case("rpb-5d")
    yield new(past=2).qkv().with_past().case("past")
    yield new(past=3).qkv().with_past(present=False).case("past-no-present")
    yield new().qkv().present().case("present")
    yield new().qkv().present("key").case("present-key")
    yield new().qkv().present("value").case("present-value")
    big = new(b=3, past=2, dv=2).qkv().with_past().bias().rpb()
    yield big.mask("KEY_SEQUENCE_LENGTH", [[1, 6, 3]]).case("past-everything")
    big = new(past=1).qkv("kv" if op == "MULTIHEAD_ATTENTION" else "plain").with_past().bias()
    keep = rng.integers(0, 2, (2, 2, 3, 5))
    keep[..., 1] = 1
    yield big.mask("BOOLEAN", keep).case("past-stacked-boolean")
    if op == "MULTIHEAD_ATTENTION1":
        for g in (2, 1):
            yield new(h=4, g=g).qkv().case(f"gqa{g}")
            yield new(h=4, g=g, kv=3).qkv("kv").bias().case(f"gqa{g}-stacked_kv-bias")
            yield new(h=4, g=g, past=2, dv=3).qkv().with_past().bias().rpb().case(f"gqa{g}-past")
            yield new(h=4, g=g, b=3).qkv().present().mask("KEY_SEQUENCE_END_START", [[4, 3, 2], [0, 1, 1]]).case(f"gqa{g}-mask")
        yield new(h=4, g=2, rank=4).qkv().present("value").case("gqa2-4d")


def cases() -> Iterator[Case]:
    rng = np.random.default_rng(164)
    for op in ("MULTIHEAD_ATTENTION", "MULTIHEAD_ATTENTION1"):
        for dtype in TYPES:
            yield from _cases(op, dtype, rng)
