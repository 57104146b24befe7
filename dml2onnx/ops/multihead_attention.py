"""DML_OPERATOR_MULTIHEAD_ATTENTION (6_1) and DML_OPERATOR_MULTIHEAD_ATTENTION1 (6_3):

    [Q, K, V + Bias] -> (Q x K^T) * Scale -> [+ RelativePositionBias] -> [+ mask] -> Softmax
    over the keys -> x V

per head, Q of [batch, sequence, headCount * headSize] (or a stacked tensor [batch, sequence,
headCount, 2 or 3, headSize], stacked on its fourth dimension), K and V of [batch,
keyValueSequence, ...] likewise, PastKey/PastValue [batch, headCount, past, headSize] put before
the new keys and values (the keys then number past + keyValueSequence), the output [batch,
sequence, headCount * valueHeadSize], OutputPresentKey/Value the keys and values attended to
([batch, headCount, keys, headSize]). MULTIHEAD_ATTENTION1 has QueryHeadCount query heads and
KeyValueHeadCount key/value heads (grouped-query attention: query head h reads key/value head
h // (QueryHeadCount / KeyValueHeadCount)); MULTIHEAD_ATTENTION has HeadCount of both.

What the pages leave open, as DirectML's own API (1.24, under Wine) computed it:
- every mask ADDS MaskFilterValue to the scores it filters (the page says "set to" for the
  length masks);
- BOOLEAN adds (1 - mask) * MaskFilterValue (a mask value of 2 subtracts it, -1 adds it twice);
  its tensor is [batch, headCount, sequence, keys] (no broadcast sizes: strides may broadcast);
- KEY_SEQUENCE_LENGTH [1, batch]: key positions >= length[b] filtered (over past + new keys;
  a negative length filters every key); KEY_SEQUENCE_END_START [2, batch]: row 0 the ends
  (exclusive), row 1 the starts (inclusive); end <= start filters every key;
- KEY_QUERY_SEQUENCE_LENGTH_START_END [keyLength[batch], queryStart[batch], queryEnd,
  keyStart[batch], keyEnd] counts query rows (b * sequence + s) and keys (b * keys + j) across
  the batches: batch b's rows are [queryStart[b], queryStart[b + 1]) (queryEnd for the last), its
  keys [keyStart[b], keyStart[b] + keyLength[b]); a row outside its batch's range has every key
  filtered; keyEnd is not read;
- BiasTensor: [hidden + hidden + valueHidden] in the last dimension (Q's, K's, V's biases, each
  head after head), added to Q, K and V, stacked ones too; OutputPresentKey/Value hold the
  biased keys/values;
- the unstacked Query/Key/Value tensors and OutputTensor have one DimensionCount (3, or 4-5
  with leading 1s); RelativePositionBias, BOOLEAN masks and the past/present tensors cover every
  key (past + new); PastKey and PastValue come together; either present output may be alone;
- a row with no key kept: KEY_SEQUENCE_LENGTH <= 0 and KEY_SEQUENCE_END_START's end <= start
  filter nothing (the row is computed unmasked, whatever MaskFilterValue); a range outside the
  keys filters every key (s + MaskFilterValue: uniform weights for a huge one, NaN for -inf);
  BOOLEAN and KEY_QUERY_SEQUENCE_LENGTH_START_END multiply, (1 - kept) * MaskFilterValue, so a
  MaskFilterValue of -inf gives NaN everywhere (0 * -inf), where the two range masks select it;
- with a BOOLEAN mask and a RelativePositionBias DirectML computes (Q x K^T + bias) * Scale +
  mask (NaN everywhere at Scale 0), against the page's order and its own with the other masks:
  the graphs and the reference keep the page's (tests/dml_findings.py);
- FLOAT16: what the mask adds is held as FLOAT16 (beyond +-65504 it is infinite: a -1e30 filter
  makes a wholly filtered row NaN there, not uniform as in FLOAT32); the scores and the softmax
  are FLOAT32-exact or near (results within 1.5e-3 of the exact ones over the matrix); the
  lowering computes in FLOAT32 and rounds once.
Not lowered yet (refused at its JSON path): MULTIHEAD_ATTENTION1's PastSequenceLengthsTensor
(DirectML takes it as INT32 only, with a sequence of 1 and no PastKey/PastValue, and writes the
new key/value rows in place, leaving the rest of the present tensors unwritten).

The lowering ("matmul"): per-head Reshape/Slice/Transpose, Add, Concat, Expand (grouped heads),
MatMul, Mul, Softmax (last axis), MatMul, in FLOAT32; the masks as Less/Not/And/Where (INT32) or
Cast/Sub/Mul (BOOLEAN). Every target takes it: the DirectML EP maps com.microsoft
MultiHeadAttention/GroupQueryAttention onto these operators, but only 3-D inputs, masks of other
layouts (a [batch, keys] key-padding mask, 1-D lengths) and its own defaults, and dml_ep's
registrations are ONNX-domain only: the dml target emits the plain graph, which the DirectML EP
runs whole."""

from __future__ import annotations

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.errors import ModelError
from dml2onnx.core.schema import OperatorSchema
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.ops import attention_masks, common
from dml2onnx.ops.attention_masks import Shape, expect, squeezed
from dml2onnx.ops.family import Family

CANDIDATES = ("matmul",)

FLOAT_TENSORS = (
    "QueryTensor",
    "KeyTensor",
    "ValueTensor",
    "StackedQueryKeyTensor",
    "StackedKeyValueTensor",
    "StackedQueryKeyValueTensor",
    "BiasTensor",
    "RelativePositionBiasTensor",
    "PastKeyTensor",
    "PastValueTensor",
    "OutputTensor",
    "OutputPresentKeyTensor",
    "OutputPresentValueTensor",
)
# The sources of Q, K and V: (field, its part of a stacked tensor or None)
_SOURCES = {
    "Q": (("QueryTensor", None), ("StackedQueryKeyTensor", 0), ("StackedQueryKeyValueTensor", 0)),
    "K": (("KeyTensor", None), ("StackedQueryKeyTensor", 1), ("StackedKeyValueTensor", 0), ("StackedQueryKeyValueTensor", 1)),
    "V": (("ValueTensor", None), ("StackedKeyValueTensor", 1), ("StackedQueryKeyValueTensor", 2)),
}
_NAMES = {"Q": "query", "K": "key", "V": "value"}


def head_counts(desc: OperatorDesc) -> tuple[int, int]:
    if desc.schema.name == "MULTIHEAD_ATTENTION":
        return desc["HeadCount"], desc["HeadCount"]
    return desc["QueryHeadCount"], desc["KeyValueHeadCount"]


# -- validation -------------------------------------------------------------------------------


def validate(desc: OperatorDesc) -> None:
    shape(desc)


def shape(desc: OperatorDesc) -> Shape:
    for name in FLOAT_TENSORS:
        common.check_same_type(desc, name, "OutputTensor")
    if desc.schema.name == "MULTIHEAD_ATTENTION1" and desc.optional_tensor("PastSequenceLengthsTensor") is not None:
        raise ModelError(
            desc.at("PastSequenceLengthsTensor"),
            "PastSequenceLengthsTensor is not lowered yet (DirectML writes the new key/value rows into the present "
            "tensors in place, leaving the rest unwritten)",
        )
    heads, kv_heads = head_counts(desc)
    count_field = "HeadCount" if desc.schema.name == "MULTIHEAD_ATTENTION" else "QueryHeadCount"
    if heads < 1 or kv_heads < 1:
        raise ModelError(desc.at(count_field if heads < 1 else "KeyValueHeadCount"), "head counts must be 1 or more")
    if heads % kv_heads:
        raise ModelError(
            desc.at("KeyValueHeadCount"), f"QueryHeadCount ({heads}) must be a multiple of KeyValueHeadCount ({kv_heads})"
        )
    sources = {}
    for part, options in _SOURCES.items():
        present = [(n, i) for n, i in options if desc.optional_tensor(n) is not None]
        if len(present) != 1:
            names = " or ".join(n for n, _ in options)
            at = desc.at(present[1][0]) if present else desc.at(options[0][0])
            raise ModelError(at, f"exactly one {_NAMES[part]} tensor must be set ({names}), not {len(present)}")
        sources[part] = present[0]
    # a stacked Q/K carries one head count for both
    for stacked in ("StackedQueryKeyTensor", "StackedQueryKeyValueTensor"):
        if desc.optional_tensor(stacked) is not None and heads != kv_heads:
            raise ModelError(desc.at(stacked), f"{stacked} stacks queries and keys of one head count: the head counts differ")
    for stacked, n in (("StackedQueryKeyTensor", 2), ("StackedKeyValueTensor", 2), ("StackedQueryKeyValueTensor", 3)):
        t = desc.optional_tensor(stacked)
        if t is not None and (t.sizes[3] != n or t.sizes[2] != (heads if "Query" in stacked else kv_heads)):
            h = heads if "Query" in stacked else kv_heads
            raise ModelError(desc.at(stacked, "Sizes"), f"{stacked} must be [batch, sequence, {h} (heads), {n}, headSize]")
    # DirectML refuses unstacked Q/K/V and an output of different dimension counts (measured)
    plain = [n for n in ("QueryTensor", "KeyTensor", "ValueTensor") if desc.optional_tensor(n) is not None]
    for n in plain:
        common.check_same_rank(desc, n, "OutputTensor")
    q_name, _ = sources["Q"]
    if q_name == "QueryTensor":
        batch, sequence, hidden = squeezed(desc, q_name, 3)
        if hidden % heads:
            raise ModelError(
                desc.at(q_name, "Sizes"), f"QueryTensor's hidden size {hidden} must be a multiple of the {heads} heads"
            )
        head = hidden // heads
    else:
        batch, sequence, _, _, head = desc.tensor(q_name).sizes
    k_name, _ = sources["K"]
    if k_name == "KeyTensor":
        kb, kv, k_hidden = squeezed(desc, k_name, 3)
        expect(
            desc,
            k_name,
            (kb, k_hidden),
            (batch, kv_heads * head),
            "[batch, keyValueSequence, kvHeads * headSize] at batch and hidden",
        )
    elif k_name == "StackedQueryKeyTensor":
        kv = sequence
    else:
        t = desc.tensor(k_name)
        kv = t.sizes[1]
        expect(desc, k_name, (t.sizes[0], t.sizes[4]), (batch, head), "[batch, ..., headSize] at batch and headSize")
    v_name, _ = sources["V"]
    if v_name == "ValueTensor":
        vb, vkv, v_hidden = squeezed(desc, v_name, 3)
        expect(desc, v_name, (vb, vkv), (batch, kv), "[batch, keyValueSequence, ...]")
        if v_hidden % kv_heads:
            raise ModelError(
                desc.at(v_name, "Sizes"), f"ValueTensor's hidden size {v_hidden} must be a multiple of {kv_heads} heads"
            )
        value_head = v_hidden // kv_heads
    else:
        value_head = head
        t = desc.tensor(v_name)
        if v_name == "StackedQueryKeyValueTensor":
            pass
        elif (t.sizes[0], t.sizes[1]) != (batch, kv):
            raise ModelError(desc.at(v_name, "Sizes"), f"{v_name} must be [batch {batch}, keyValueSequence {kv}, ...]")
    past = 0
    pk, pv = desc.optional_tensor("PastKeyTensor"), desc.optional_tensor("PastValueTensor")
    if (pk is None) != (pv is None):
        missing = "PastValueTensor" if pv is None else "PastKeyTensor"
        raise ModelError(desc.at(missing), "PastKeyTensor and PastValueTensor must be set together")
    if pk is not None:
        past = squeezed(desc, "PastKeyTensor", 4)[2]
        expect(
            desc,
            "PastKeyTensor",
            squeezed(desc, "PastKeyTensor", 4),
            (batch, kv_heads, past, head),
            "[batch, kvHeads, past, headSize]",
        )
        want = (batch, kv_heads, past, value_head)
        expect(desc, "PastValueTensor", squeezed(desc, "PastValueTensor", 4), want, "[batch, kvHeads, past, valueHeadSize]")
    s = Shape(batch, sequence, kv, past, heads, kv_heads, head, value_head, sources)
    expect(
        desc,
        "OutputTensor",
        squeezed(desc, "OutputTensor", 3),
        (batch, sequence, heads * value_head),
        "[batch, sequence, heads * valueHeadSize]",
    )
    for name, size in (("OutputPresentKeyTensor", head), ("OutputPresentValueTensor", value_head)):
        if desc.optional_tensor(name) is not None:
            expect(
                desc,
                name,
                squeezed(desc, name, 4),
                (batch, kv_heads, s.keys, size),
                "[batch, kvHeads, past + keyValueSequence, headSize]",
            )
    if desc.optional_tensor("BiasTensor") is not None:
        (n,) = squeezed(desc, "BiasTensor", 1)
        want_n = (heads + kv_heads) * head + kv_heads * value_head
        if n != want_n:
            raise ModelError(
                desc.at("BiasTensor", "Sizes"), f"BiasTensor must hold hidden + hidden + valueHidden = {want_n} values, not {n}"
            )
    if desc.optional_tensor("RelativePositionBiasTensor") is not None:
        got = squeezed(desc, "RelativePositionBiasTensor", 4)
        expect(desc, "RelativePositionBiasTensor", got, s.scores, "[batch, heads, sequence, past + keyValueSequence]")
    attention_masks.validate(desc, s)
    return s


# -- lowering ---------------------------------------------------------------------------------


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> dict[str, str]:
    s = shape(desc)
    dtype = desc.tensor("OutputTensor").data_type
    half = dtype == dtypes.FLOAT16
    f32: dict[str, str] = {}

    def value(name: str) -> str:
        if name not in f32:
            f32[name] = b.cast(inputs[name], dtypes.FLOAT32, f"{name}_to_float32", f"{name} in FLOAT32") if half else inputs[name]
        return f32[name]

    bias = None
    if desc.optional_tensor("BiasTensor") is not None:
        bias = b.reshape(value("BiasTensor"), [-1], "bias_flat", "BiasTensor as [hidden + hidden + valueHidden]")
    offsets = {"Q": 0, "K": s.heads * s.head, "V": (s.heads + s.kv_heads) * s.head}
    per_head = {"Q": (s.sequence, s.heads, s.head), "K": (s.kv, s.kv_heads, s.head), "V": (s.kv, s.kv_heads, s.value_head)}
    heads_first = {}
    for part, (name, index) in s.sources.items():
        seq, h, d = per_head[part]
        lower_name = _NAMES[part]
        x = value(name)
        if index is None:
            x = b.reshape(x, [s.batch, seq, h, d], f"{lower_name}_heads", f"{name} as [batch, sequence, heads, headSize]")
        else:
            x = b.slice(x, [3], [index], [index + 1], f"{lower_name}_of_{name}", f"the {lower_name} part of {name}")
            x = b.reshape(
                x, [s.batch, seq, h, d], f"{lower_name}_heads", f"the {lower_name} as [batch, sequence, heads, headSize]"
            )
        if bias is not None:
            part_bias = b.slice(
                bias, [0], [offsets[part]], [offsets[part] + h * d], f"{lower_name}_bias", f"the {lower_name}'s bias"
            )
            part_bias = b.reshape(part_bias, [h, d], f"{lower_name}_bias_heads", "per head")
            x = b.node("Add", [x, part_bias], f"{lower_name}_plus_bias", f"{lower_name} + its bias")
        heads_first[part] = b.transpose(x, [0, 2, 1, 3], f"{lower_name}_heads_first", "[batch, heads, sequence, headSize]")
    results: dict[str, str] = {}
    for part, past_name, present_name in (
        ("K", "PastKeyTensor", "OutputPresentKeyTensor"),
        ("V", "PastValueTensor", "OutputPresentValueTensor"),
    ):
        x = heads_first[part]
        if s.past:
            d = s.head if part == "K" else s.value_head
            p = b.reshape(value(past_name), [s.batch, s.kv_heads, s.past, d], f"{past_name}_4d", f"{past_name} as 4-D")
            x = b.node("Concat", [p, x], f"{_NAMES[part]}_after_past", f"{past_name}, then the new {_NAMES[part]}s", axis=2)
        if desc.optional_tensor(present_name) is not None:
            out = b.reshape(x, list(desc.tensor(present_name).sizes), f"{present_name}_sizes", f"{present_name} at its sizes")
            results[present_name] = b.cast(out, dtype, f"{present_name}_to_float16", "in FLOAT16") if half else out
        if s.kv_heads != s.heads:
            d = s.head if part == "K" else s.value_head
            group = s.heads // s.kv_heads
            x = b.reshape(x, [s.batch, s.kv_heads, 1, s.keys, d], f"{_NAMES[part]}_groups", "one group per key/value head")
            x = b.node(
                "Expand",
                [x, b.i64([s.batch, s.kv_heads, group, s.keys, d], f"{_NAMES[part]}_group_sizes")],
                f"{_NAMES[part]}_per_query_head",
                "each key/value head for its group of query heads",
            )
            x = b.reshape(x, [s.batch, s.heads, s.keys, d], f"{_NAMES[part]}_query_heads", "[batch, heads, keys, headSize]")
        heads_first[part] = x
    key_t = b.transpose(heads_first["K"], [0, 1, 3, 2], "key_transposed", "K^T per head")
    scores = b.node("MatMul", [heads_first["Q"], key_t], "scores", "Q x K^T per head: [batch, heads, sequence, keys]")
    scores = b.node("Mul", [scores, b.scalar(desc["Scale"], dtypes.FLOAT32, "scale")], "scaled", "(Q x K^T) * Scale")
    if desc.optional_tensor("RelativePositionBiasTensor") is not None:
        rpb = b.reshape(value("RelativePositionBiasTensor"), list(s.scores), "relative_position_bias", "as 4-D")
        scores = b.node("Add", [scores, rpb], "plus_relative_position_bias", "+ RelativePositionBias")
    if desc["MaskType"] != "NONE":
        added = attention_masks.lower(desc, b, inputs["MaskTensor"], s, half)
        scores = b.node("Add", [scores, added], "masked", "+ the mask's MaskFilterValue")
    probabilities = b.node("Softmax", [scores], "softmax", "softmax over the keys", axis=-1)
    out = b.node("MatMul", [probabilities, heads_first["V"]], "attention", "softmax x V: [batch, heads, sequence, valueHeadSize]")
    out = b.transpose(out, [0, 2, 1, 3], "sequence_first", "[batch, sequence, heads, valueHeadSize]")
    out = b.reshape(out, list(desc.tensor("OutputTensor").sizes), "output_sizes", "OutputTensor at its sizes")
    results["OutputTensor"] = b.cast(out, dtype, "to_float16", "in FLOAT16") if half else out
    return results


# -- reference --------------------------------------------------------------------------------


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The page's decomposition in float64, per head, with what DirectML showed (module doc)."""
    s = shape(desc)
    dtype = desc.tensor("OutputTensor").data_type.numpy
    per_head = {"Q": (s.sequence, s.heads, s.head), "K": (s.kv, s.kv_heads, s.head), "V": (s.kv, s.kv_heads, s.value_head)}
    bias = inputs["BiasTensor"].astype(np.float64).reshape(-1) if inputs.get("BiasTensor") is not None else None
    start = 0
    parts = {}
    for part in ("Q", "K", "V"):
        name, index = s.sources[part]
        seq, h, d = per_head[part]
        x = inputs[name].astype(np.float64)
        x = x.reshape(s.batch, seq, h, d) if index is None else x[:, :, :, index, :]
        if bias is not None:
            x = x + bias[start : start + h * d].reshape(h, d)
        start += h * d
        parts[part] = x.transpose(0, 2, 1, 3)  # [batch, heads, sequence, headSize]
    out: dict[str, np.ndarray] = {}
    for part, past_name, present_name in (
        ("K", "PastKeyTensor", "OutputPresentKeyTensor"),
        ("V", "PastValueTensor", "OutputPresentValueTensor"),
    ):
        if s.past:
            past = inputs[past_name].astype(np.float64).reshape(s.batch, s.kv_heads, s.past, -1)
            parts[part] = np.concatenate([past, parts[part]], axis=2)
        if desc.optional_tensor(present_name) is not None:
            out[present_name] = parts[part].reshape(desc.tensor(present_name).sizes).astype(dtype)
        parts[part] = np.repeat(parts[part], s.heads // s.kv_heads, axis=1)  # query head h reads kv head h // group
    scores = parts["Q"] @ parts["K"].transpose(0, 1, 3, 2) * np.float64(np.float32(desc["Scale"]))
    if inputs.get("RelativePositionBiasTensor") is not None:
        scores = scores + inputs["RelativePositionBiasTensor"].astype(np.float64).reshape(s.scores)
    if desc["MaskType"] != "NONE":
        added = attention_masks.added(desc, inputs["MaskTensor"], s)
        scores = scores + added
    with np.errstate(invalid="ignore", over="ignore"):
        e = np.exp(scores - scores.max(axis=-1, keepdims=True))
        p = e / e.sum(axis=-1, keepdims=True)
    result = (p @ parts["V"]).transpose(0, 2, 1, 3)
    out["OutputTensor"] = result.reshape(desc.tensor("OutputTensor").sizes).astype(dtype)
    return {name: out[name] for name in desc.outputs}


def examples(op: OperatorSchema) -> list[common.Example]:
    """onnx_ops: each type, Q/K/V 3-D with a bias, a BOOLEAN mask and past/present keys and
    values; and a StackedKeyValueTensor with a RelativePositionBias and a KEY_SEQUENCE_END_START
    mask (the length masks' ops)."""
    out = []
    for t in common.example_types(op, "QueryTensor"):
        kvh = 2 if op.name == "MULTIHEAD_ATTENTION" else 1
        heads = {"HeadCount": 2} if op.name == "MULTIHEAD_ATTENTION" else {"QueryHeadCount": 2, "KeyValueHeadCount": 1}
        common_fields = {"Scale": 0.5, "MaskFilterValue": -10000.0, **heads}
        out.append(
            {
                "QueryTensor": common.example_tensor(t, [1, 2, 8]),
                "KeyTensor": common.example_tensor(t, [1, 3, 4 * kvh]),
                "ValueTensor": common.example_tensor(t, [1, 3, 4 * kvh]),
                "BiasTensor": common.example_tensor(t, [8 + 8 * kvh]),
                "MaskTensor": common.example_tensor("INT32", [1, 2, 2, 4]),
                "PastKeyTensor": common.example_tensor(t, [1, kvh, 1, 4]),
                "PastValueTensor": common.example_tensor(t, [1, kvh, 1, 4]),
                "OutputTensor": common.example_tensor(t, [1, 2, 8]),
                "OutputPresentKeyTensor": common.example_tensor(t, [1, kvh, 4, 4]),
                "OutputPresentValueTensor": common.example_tensor(t, [1, kvh, 4, 4]),
                "MaskType": "BOOLEAN",
                **common_fields,
            }
        )
        out.append(
            {
                "QueryTensor": common.example_tensor(t, [1, 2, 8]),
                "StackedKeyValueTensor": common.example_tensor(t, [1, 3, kvh, 2, 4]),
                "MaskTensor": common.example_tensor("INT32", [2, 1]),
                "RelativePositionBiasTensor": common.example_tensor(t, [1, 2, 2, 3]),
                "OutputTensor": common.example_tensor(t, [1, 2, 8]),
                "MaskType": "KEY_SEQUENCE_END_START",
                **common_fields,
            }
        )
    return out


OPERATOR_FAMILY = Family(
    ("MULTIHEAD_ATTENTION", "MULTIHEAD_ATTENTION1"), validate, lower, reference, CANDIDATES, examples=examples
)
