"""DML_OPERATOR_MULTIHEAD_ATTENTION and MULTIHEAD_ATTENTION1: values by hand (the pages have no
example), what DirectML computes where the pages are silent (masks add MaskFilterValue, BOOLEAN's
(1 - mask), END_START's row order, biased present keys, the grouping of query heads), refusals at
their JSON paths (the parts not lowered yet among them), the targets, and properties over random
shapes, layouts and fields against the numpy reference."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dml2onnx import lowering
from dml2onnx.backends import dmlapi, runtime
from dml2onnx.core.errors import format_path
from dml2onnx.graph import dml_ep
from dml2onnx.ops import registry
from strategies import SEEDS
from support import EPS, assert_matches_reference, every_output, make_desc, mismatches, refusal, tensor

MHA, MHA1 = "MULTIHEAD_ATTENTION", "MULTIHEAD_ATTENTION1"
SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def fields(
    dtype: str = "FLOAT32", b: int = 1, s: int = 1, kv: int = 2, h: int = 1, d: int = 1, op: str = MHA, g: int | None = None
) -> dict[str, Any]:
    g = h if g is None else g
    heads = {"HeadCount": h} if op == MHA else {"QueryHeadCount": h, "KeyValueHeadCount": g}
    return {
        "QueryTensor": tensor(dtype, (b, s, h * d)),
        "KeyTensor": tensor(dtype, (b, kv, g * d)),
        "ValueTensor": tensor(dtype, (b, kv, g * d)),
        "OutputTensor": tensor(dtype, (b, s, h * d)),
        "Scale": 1.0,
        "MaskFilterValue": -10000.0,
        "MaskType": "NONE",
        **heads,
    }


def run(op: str, f: dict[str, Any], feeds: dict[str, Any], ep: str = "cpu") -> dict[str, np.ndarray]:
    desc = make_desc(op, f)
    feeds = {
        k: np.asarray(v, np.int32 if k == "MaskTensor" else desc.tensor(k).data_type.numpy).reshape(desc.tensor(k).sizes)
        for k, v in feeds.items()
    }
    return every_output(runtime.create(lowering.lower(desc, "t"), "t", ep), desc, feeds)


def test_by_hand() -> None:
    """One head of size 1, two keys: scores q*k = [0, ln 3], weights [1/4, 3/4]."""
    got = run(MHA, fields(), {"QueryTensor": [1], "KeyTensor": [0, np.log(3)], "ValueTensor": [4, 8]})
    np.testing.assert_allclose(got["OutputTensor"].ravel(), [4 / 4 + 8 * 3 / 4], rtol=1e-6)


def test_scale_multiplies_the_scores_and_heads_are_separate() -> None:
    """Two heads of size 1: head 0 scores [0, 2 ln 3] * Scale 0.5, head 1 equal scores."""
    f = fields(h=2) | {"Scale": 0.5}
    feeds = {"QueryTensor": [2, 1], "KeyTensor": [0, 5, np.log(3), 5], "ValueTensor": [4, 1, 8, 3]}
    np.testing.assert_allclose(run(MHA, f, feeds)["OutputTensor"].ravel(), [7, 2], rtol=1e-6)


def test_past_keys_come_first_and_are_the_present_ones() -> None:
    f = fields() | {
        "PastKeyTensor": tensor("FLOAT32", (1, 1, 1, 1)),
        "PastValueTensor": tensor("FLOAT32", (1, 1, 1, 1)),
        "OutputPresentKeyTensor": tensor("FLOAT32", (1, 1, 3, 1)),
        "OutputPresentValueTensor": tensor("FLOAT32", (1, 1, 3, 1)),
    }
    feeds = {"QueryTensor": [0], "KeyTensor": [5, 6], "ValueTensor": [1, 2], "PastKeyTensor": [4], "PastValueTensor": [6]}
    got = run(MHA, f, feeds)
    np.testing.assert_array_equal(got["OutputPresentKeyTensor"].ravel(), [4, 5, 6])
    np.testing.assert_array_equal(got["OutputPresentValueTensor"].ravel(), [6, 1, 2])
    np.testing.assert_allclose(got["OutputTensor"].ravel(), [3], rtol=1e-6)  # equal weights: the mean


# -- what DirectML computes where the pages are silent ------------------------------------------

# (name, extra fields, extra feeds, DirectML's output) over fields(kv=4) with query [1], keys
# [0, 0, ln 3, 0] (scores), values [1, 2, 3, 4] and MaskFilterValue -ln 3: each measured through
# DirectML's API under Wine (test_directml_computes_so)
LN3 = float(np.log(3))
_KEYS = [0, 0, LN3, 0]
_VALUES = [1, 2, 3, 4]
SETTLED = [
    # the length mask ADDS MaskFilterValue to keys 2 and 3 (the page says "set to"): scores
    # [0, 0, 0, -ln 3], weights [3, 3, 3, 1] / 10
    ("length", {"MaskType": "KEY_SEQUENCE_LENGTH", "MaskTensor": tensor("INT32", (1, 1))}, [2], (3 + 6 + 9 + 4) / 10),
    # a length of 0 filters every key: the softmax of scores - ln 3 is that of the scores
    ("length0", {"MaskType": "KEY_SEQUENCE_LENGTH", "MaskTensor": tensor("INT32", (1, 1))}, [0], (1 + 2 + 9 + 4) / 6),
    # END_START: row 0 the end (exclusive), row 1 the start: [1, 3) keeps keys 1 and 2
    ("end_start", {"MaskType": "KEY_SEQUENCE_END_START", "MaskTensor": tensor("INT32", (2, 1))}, [3, 1], (1 + 6 + 27 + 4) / 14),
    # KEY_QUERY_SEQUENCE_LENGTH_START_END [keyLength, queryStart, queryEnd, keyStart, keyEnd]:
    # row 0 in [0, 1) keeps keys [1, 1 + 2); a row outside [queryStart, queryEnd) filters every key
    (
        "packed",
        {"MaskType": "KEY_QUERY_SEQUENCE_LENGTH_START_END", "MaskTensor": tensor("INT32", (5,))},
        [2, 0, 1, 1, 0],
        38 / 14,
    ),
    (
        "packed_row_out",
        {"MaskType": "KEY_QUERY_SEQUENCE_LENGTH_START_END", "MaskTensor": tensor("INT32", (5,))},
        [2, 1, 2, 1, 0],
        16 / 6,
    ),
    # BOOLEAN adds (1 - mask) * MaskFilterValue: 2 adds +ln 3 (key 1), -1 adds -2 ln 3 (key 2)
    (
        "boolean",
        {"MaskType": "BOOLEAN", "MaskTensor": tensor("INT32", (1, 1, 1, 4))},
        [1, 2, -1, 1],
        (1 * 9 + 2 * 27 + 3 * 3 + 4 * 9) / (9 + 27 + 3 + 9),
    ),
]


def _settled(name: str, extra: dict[str, Any], mask: list[int]) -> tuple[dict[str, Any], dict[str, Any]]:
    f = fields(kv=4) | {"MaskFilterValue": -LN3} | extra
    return f, {"QueryTensor": [1], "KeyTensor": _KEYS, "ValueTensor": _VALUES, "MaskTensor": mask}


@pytest.mark.parametrize(("name", "extra", "mask", "want"), SETTLED)
def test_masks(name: str, extra: dict[str, Any], mask: list[int], want: float) -> None:
    f, feeds = _settled(name, extra, mask)
    np.testing.assert_allclose(run(MHA, f, feeds)["OutputTensor"].ravel(), [want], rtol=1e-6)


# (name, data type, MaskType, mask, MaskFilterValue, DirectML's output) over the same query, keys
# and values: what a row with no key kept gives
_LENGTH, _END_START, _BOOLEAN = "KEY_SEQUENCE_LENGTH", "KEY_SEQUENCE_END_START", "BOOLEAN"
FILTERED = [
    # an empty range (length <= 0, end <= start) filters nothing, even -inf: the unmasked row
    ("length0-inf", "FLOAT32", _LENGTH, [0], -np.inf, 16 / 6),
    ("end_before_start-inf", "FLOAT16", _END_START, [1, 3], -np.inf, 16 / 6),
    # a range past the keys filters them all: s - 1e30 is -1e30 for every key (uniform weights)
    ("past_the_keys-1e30", "FLOAT32", _END_START, [9, 4], -1e30, 2.5),
    # ... and NaN for -inf, or in FLOAT16 for a filter beyond its range (held as FLOAT16: -inf)
    ("past_the_keys-inf", "FLOAT32", _END_START, [9, 4], -np.inf, np.nan),
    ("past_the_keys-1e30-half", "FLOAT16", _END_START, [9, 4], -1e30, np.nan),
    # BOOLEAN multiplies: (1 - 1) * -inf is NaN for the kept keys too
    ("boolean-inf", "FLOAT32", _BOOLEAN, [1, 1, 0, 1], -np.inf, np.nan),
    # -inf on filtered keys only: exactly the kept keys' softmax (keys 0, 1)
    ("length2-inf", "FLOAT32", _LENGTH, [2], -np.inf, 1.5),
]


def _filtered(dtype: str, kind: str, mask: list[int], filter_value: float) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    shape = {_LENGTH: (1, 1), _END_START: (2, 1), _BOOLEAN: (1, 1, 1, 4)}[kind]
    f = fields(dtype, kv=4) | {"MaskType": kind, "MaskFilterValue": filter_value, "MaskTensor": tensor("INT32", shape)}
    t = np.dtype(dtype.lower())
    feeds = {"QueryTensor": np.ones((1, 1, 1), t), "KeyTensor": np.array(_KEYS, t).reshape(1, 4, 1)}
    feeds |= {"ValueTensor": np.array(_VALUES, t).reshape(1, 4, 1), "MaskTensor": np.array(mask, np.int32).reshape(shape)}
    return f, feeds


@pytest.mark.parametrize(("name", "dtype", "kind", "mask", "filter_value", "want"), FILTERED)
def test_rows_with_no_key_kept(name: str, dtype: str, kind: str, mask: list[int], filter_value: float, want: float) -> None:
    f, feeds = _filtered(dtype, kind, mask, filter_value)
    got = run(MHA, f, feeds)["OutputTensor"].ravel().astype(np.float64)
    np.testing.assert_allclose(got, [want], rtol=2e-3 if dtype == "FLOAT16" else 1e-6)


def test_grouped_query_heads_read_their_group() -> None:
    """4 query heads over 2 key/value heads: query heads 0, 1 read kv head 0, heads 2, 3 kv head 1."""
    f = fields(h=4, g=2, kv=1, op=MHA1)
    got = run(MHA1, f, {"QueryTensor": [1, 2, 3, 4], "KeyTensor": [0, 0], "ValueTensor": [10, 20]})
    np.testing.assert_array_equal(got["OutputTensor"].ravel(), [10, 10, 20, 20])


def test_bias_is_in_the_present_keys() -> None:
    f = fields(kv=1) | {"BiasTensor": tensor("FLOAT32", (3,)), "OutputPresentKeyTensor": tensor("FLOAT32", (1, 1, 1, 1))}
    got = run(MHA, f, {"QueryTensor": [1], "KeyTensor": [2], "ValueTensor": [3], "BiasTensor": [10, 20, 30]})
    np.testing.assert_array_equal(got["OutputPresentKeyTensor"].ravel(), [22])
    np.testing.assert_array_equal(got["OutputTensor"].ravel(), [33])


_why = dmlapi.missing()
live = pytest.mark.skipif(_why is not None, reason=f"DirectML's API under Wine is not set up ({_why})")


@live
def test_directml_computes_so() -> None:
    for name, extra, mask, want in SETTLED:
        f, feeds = _settled(name, extra, mask)
        desc = make_desc(MHA, f)
        feeds = {
            k: np.asarray(v, np.int32 if k == "MaskTensor" else np.float32).reshape(desc.tensor(k).sizes)
            for k, v in feeds.items()
        }
        np.testing.assert_allclose(dmlapi.execute(desc, feeds).output.ravel(), [want], rtol=1e-5, err_msg=name)
    for name, dtype, kind, mask, filter_value, want in FILTERED:
        f, feeds = _filtered(dtype, kind, mask, filter_value)
        got = dmlapi.execute(make_desc(MHA, f), feeds).output.ravel().astype(np.float64)
        np.testing.assert_allclose(got, [want], rtol=2e-3 if dtype == "FLOAT16" else 1e-5, err_msg=name)
    f = fields(h=4, g=2, kv=1, op=MHA1)
    desc = make_desc(MHA1, f)
    feeds = {"QueryTensor": np.arange(1, 5, dtype=np.float32).reshape(1, 1, 4), "KeyTensor": np.zeros((1, 1, 2), np.float32)}
    feeds["ValueTensor"] = np.array([10, 20], np.float32).reshape(1, 1, 2)
    np.testing.assert_array_equal(dmlapi.execute(desc, feeds).output.ravel(), [10, 10, 20, 20])


@live
def test_directml_scales_the_relative_position_bias_with_a_boolean_mask() -> None:
    """The finding (tests/dml_findings.py): the page adds RelativePositionBias after Scale, as
    DirectML does with no mask and the length masks; with a BOOLEAN mask DirectML computes
    (Q x K^T + bias) * Scale + mask, and NaN everywhere at Scale 0. The graphs keep the page's order."""
    f = fields(kv=4) | {"Scale": 0.5, "RelativePositionBiasTensor": tensor("FLOAT32", (1, 1, 1, 4))}
    feeds = {"QueryTensor": [1], "KeyTensor": _KEYS, "ValueTensor": _VALUES, "RelativePositionBiasTensor": [0, LN3, 0, 0]}
    boolean = {"MaskType": "BOOLEAN", "MaskTensor": tensor("INT32", (1, 1, 1, 4)), "MaskFilterValue": -LN3}
    cases = {"none": ({}, {}), "boolean": (boolean, {"MaskTensor": [1, 1, 1, 0]})}
    got = {}
    for name, (extra, mask) in cases.items():
        desc = make_desc(MHA, f | extra)
        typed = {
            k: np.asarray(v, np.int32 if k == "MaskTensor" else np.float32).reshape(desc.tensor(k).sizes)
            for k, v in (feeds | mask).items()
        }
        got[name] = float(dmlapi.execute(desc, typed).output.ravel()[0])
        want = float(registry.reference_outputs(desc, typed)["OutputTensor"].ravel()[0])
        if name == "none":  # scores [0, ln 3, ln 3 / 2, 0]: the page's order
            assert abs(got[name] - want) < 1e-5
    # (Q x K^T + bias) * Scale + mask: scores [0, ln 3 / 2, ln 3 / 2, -ln 3]; the page's: [0, ln 3, ln 3 / 2, -ln 3]
    w = np.exp(np.array([0, LN3 / 2, LN3 / 2, -LN3]))
    np.testing.assert_allclose(got["boolean"], float((w * _VALUES).sum() / w.sum()), rtol=1e-5)
    desc = make_desc(MHA, f | boolean | {"Scale": 0.0})
    typed = {
        k: np.asarray(v, np.int32 if k == "MaskTensor" else np.float32).reshape(desc.tensor(k).sizes)
        for k, v in (feeds | {"MaskTensor": [1, 1, 1, 0]}).items()
    }
    assert np.isnan(dmlapi.execute(desc, typed).output).all()


# -- refusals -------------------------------------------------------------------------------------


def _stacked_qkv() -> dict[str, Any]:
    f = fields(s=2, kv=2, h=2, d=2)
    del f["QueryTensor"], f["KeyTensor"], f["ValueTensor"]
    return f | {"StackedQueryKeyValueTensor": tensor("FLOAT32", (1, 2, 2, 3, 2))}


@pytest.mark.parametrize(
    ("op", "change", "path", "message"),
    [
        (MHA, {"OutputTensor": tensor("FLOAT16", (1, 1, 1))}, "desc.QueryTensor.DataType", "same DataType"),
        (
            MHA,
            {"StackedQueryKeyTensor": tensor("FLOAT32", (1, 1, 1, 2, 1))},
            "desc.StackedQueryKeyTensor",
            "exactly one query tensor",
        ),
        (MHA, {"KeyTensor": None}, "desc.KeyTensor", "exactly one key tensor"),
        (MHA, {"HeadCount": 0}, "desc.HeadCount", "1 or more"),
        (MHA, {"HeadCount": 2}, "desc.QueryTensor.Sizes", "multiple of the 2 heads"),
        (MHA, {"QueryTensor": tensor("FLOAT32", (1, 1, 1, 1))}, "desc.QueryTensor.Sizes", "same DimensionCount"),
        (MHA, {"KeyTensor": tensor("FLOAT32", (2, 2, 1))}, "desc.KeyTensor.Sizes", "at batch and hidden"),
        (MHA, {"ValueTensor": tensor("FLOAT32", (1, 3, 1))}, "desc.ValueTensor.Sizes", "keyValueSequence"),
        (
            MHA,
            {"OutputTensor": tensor("FLOAT32", (1, 2, 1))},
            "desc.OutputTensor.Sizes",
            "[batch, sequence, heads * valueHeadSize]",
        ),
        (MHA, {"BiasTensor": tensor("FLOAT32", (4,))}, "desc.BiasTensor.Sizes", "hidden + hidden + valueHidden = 3"),
        (MHA, {"BiasTensor": tensor("FLOAT32", (3, 1))}, "desc.BiasTensor.Sizes", "must be 1"),
        (MHA, {"MaskTensor": tensor("INT32", (1, 1))}, "desc.MaskTensor", "MaskType NONE takes no MaskTensor"),
        (MHA, {"MaskType": "BOOLEAN"}, "desc.MaskTensor", "needs a MaskTensor"),
        (MHA, {"MaskType": "BOOLEAN", "MaskTensor": tensor("INT32", (1, 1, 1, 1))}, "desc.MaskTensor.Sizes", "[1, 1, 1, 2]"),
        (MHA, {"MaskType": "KEY_SEQUENCE_LENGTH", "MaskTensor": tensor("INT32", (1,))}, "desc.MaskTensor.Sizes", "[1, batch]"),
        (MHA, {"MaskType": "KEY_SEQUENCE_END_START", "MaskTensor": tensor("INT32", (1, 1))}, "desc.MaskTensor.Sizes", "[2, 1]"),
        (
            MHA,
            {"MaskType": "KEY_QUERY_SEQUENCE_LENGTH_START_END", "MaskTensor": tensor("INT32", (4,))},
            "desc.MaskTensor.Sizes",
            "[3 * batch + 2] = [5]",
        ),
        (
            MHA,
            {"RelativePositionBiasTensor": tensor("FLOAT32", (1, 1, 1, 1))},
            "desc.RelativePositionBiasTensor.Sizes",
            "past + keyValueSequence",
        ),
        (MHA, {"PastKeyTensor": tensor("FLOAT32", (1, 1, 1, 1))}, "desc.PastValueTensor", "set together"),
        (
            MHA,
            {"PastKeyTensor": tensor("FLOAT32", (1, 1, 1, 2)), "PastValueTensor": tensor("FLOAT32", (1, 1, 1, 1))},
            "desc.PastKeyTensor.Sizes",
            "[batch, kvHeads, past, headSize]",
        ),
        (MHA, {"OutputPresentKeyTensor": tensor("FLOAT32", (1, 1, 3, 1))}, "desc.OutputPresentKeyTensor.Sizes", "[1, 1, 2, 1]"),
        (MHA1, {"QueryHeadCount": 3, "KeyValueHeadCount": 2}, "desc.KeyValueHeadCount", "multiple of KeyValueHeadCount"),
        (
            MHA1,
            {"PastSequenceLengthsTensor": tensor("FLOAT32", (1,))},
            "desc.PastSequenceLengthsTensor",
            "PastSequenceLengthsTensor is not lowered yet",
        ),
        (MHA1, {"PastSequenceLengthsTensor": tensor("INT32", (1,))}, "desc.PastSequenceLengthsTensor.DataType", "not INT32"),
    ],
)
def test_refusals(op: str, change: dict[str, Any], path: str, message: str) -> None:
    f = fields(op=op)
    f = {k: v for k, v in (f | change).items() if v is not None}
    e = refusal(op, f)
    assert format_path(e.path) == path, str(e)
    assert message in e.rule, e.rule


def test_stacked_refusals() -> None:
    e = refusal(MHA, _stacked_qkv() | {"StackedQueryKeyValueTensor": tensor("FLOAT32", (1, 2, 2, 2, 2))})
    assert format_path(e.path) == "desc.StackedQueryKeyValueTensor.Sizes" and "3, headSize" in e.rule
    g = {k: v for k, v in _stacked_qkv().items() if k != "HeadCount"} | {"QueryHeadCount": 2, "KeyValueHeadCount": 1}
    e = refusal(MHA1, g)
    assert format_path(e.path) == "desc.StackedQueryKeyValueTensor" and "head counts differ" in e.rule


def test_feature_levels() -> None:
    e = refusal(MHA1, fields(op=MHA1), level="6_2")
    assert "6_3" in str(e)


# -- targets --------------------------------------------------------------------------------------


def test_targets_run_on_the_directml_ep_without_fallback() -> None:
    """Plain ONNX ops on every target (module doc: the DirectML EP's com.microsoft
    MultiHeadAttention is not emitted)."""
    from dml2onnx.cases.multihead_attention import cases

    for case in cases():
        desc = make_desc(case.op, case.fields)
        for target in ("portable", "dml", "cuda"):
            model = lowering.lower(desc, "t", target=target)
            assert {n.domain for n in model.graph.node} == {""}
            if target != "cuda":
                assert dml_ep.check(model) == [], (case.id, target)


# -- properties -----------------------------------------------------------------------------------


@st.composite
def descs(draw: st.DrawFn) -> tuple[str, dict[str, Any], dict[str, np.ndarray]]:
    op = draw(st.sampled_from([MHA, MHA1]))
    dtype = draw(st.sampled_from(["FLOAT32", "FLOAT16"]))
    rng = np.random.default_rng(draw(SEEDS))
    b, s, kv, d = draw(st.integers(1, 3)), draw(st.integers(1, 4)), draw(st.integers(1, 5)), draw(st.integers(1, 8))
    g = draw(st.integers(1, 2))
    h = g * (draw(st.integers(1, 2)) if op == MHA1 else 1)
    layout = draw(st.sampled_from(["plain", "qk", "kv", "qkv"] if h == g else ["plain", "kv"]))
    if layout in ("qk", "qkv"):
        kv = s
    dv = draw(st.integers(1, 4)) if layout in ("plain", "qk") else d
    past = draw(st.integers(0, 3))
    rank = draw(st.integers(3, 5))
    lead = (1,) * (rank - 3)
    heads = {"HeadCount": h} if op == MHA else {"QueryHeadCount": h, "KeyValueHeadCount": g}
    f: dict[str, Any] = {
        "OutputTensor": tensor(dtype, lead + (b, s, h * dv)),
        "Scale": draw(st.sampled_from([1 / np.sqrt(d), 1.0 if d <= 4 else 0.25, -0.5, 0.0])),
        "MaskFilterValue": -10000.0,
        "MaskType": "NONE",
        **heads,
    }
    feeds: dict[str, np.ndarray] = {}

    def add(name: str, shape: tuple[int, ...], scale: float = 1.0) -> None:
        f[name] = tensor(dtype, shape)
        feeds[name] = (rng.uniform(-1, 1, shape) * scale).astype(np.dtype(dtype.lower()))

    if layout in ("plain", "kv"):
        add("QueryTensor", lead + (b, s, h * d))
    if layout == "plain":
        add("KeyTensor", lead + (b, kv, g * d))
    if layout in ("plain", "qk"):
        add("ValueTensor", lead + (b, kv, g * dv))
    if layout == "qk":
        add("StackedQueryKeyTensor", (b, s, h, 2, d))
    if layout == "kv":
        add("StackedKeyValueTensor", (b, kv, g, 2, d))
    if layout == "qkv":
        add("StackedQueryKeyValueTensor", (b, s, h, 3, d))
    if draw(st.booleans()):
        add("BiasTensor", (1,) * draw(st.integers(0, 4)) + ((h + g) * d + g * dv,), 0.25)
    keys = past + kv
    if past:
        add("PastKeyTensor", (b, g, past, d))
        add("PastValueTensor", (b, g, past, dv))
    for name, size in (("OutputPresentKeyTensor", d), ("OutputPresentValueTensor", dv)):
        if draw(st.booleans()):
            f[name] = tensor(dtype, (b, g, keys, size))
    if draw(st.booleans()):
        add("RelativePositionBiasTensor", (b, h, s, keys))
    mask = draw(
        st.sampled_from(
            ["NONE", "KEY_SEQUENCE_LENGTH", "KEY_SEQUENCE_END_START", "BOOLEAN", "KEY_QUERY_SEQUENCE_LENGTH_START_END"]
        )
    )
    if mask != "NONE":
        if mask == "KEY_SEQUENCE_LENGTH":
            m = rng.integers(1, keys + 2, (1, b))
        elif mask == "KEY_SEQUENCE_END_START":
            start = rng.integers(0, keys, b)
            m = np.stack([start + rng.integers(1, keys - start + 2), start])
        elif mask == "KEY_QUERY_SEQUENCE_LENGTH_START_END":  # every row its batch's, keys from 1 on
            starts = np.arange(b) * keys + rng.integers(0, keys, b)
            lengths = rng.integers(1, keys + 1, b)
            m = np.concatenate([lengths, np.arange(b + 1) * s, starts, [b * keys]])
        else:
            m = rng.integers(0, 2, (b, h, s, keys))
            m[..., rng.integers(0, keys)] = 1  # no row wholly filtered: the scores stay within the tolerance's bound
        f |= {"MaskType": mask, "MaskTensor": tensor("INT32", m.shape)}
        feeds["MaskTensor"] = m.astype(np.int32)
    return op, f, feeds


@EPS
@SETTINGS
@given(case=descs())
def test_matches_reference(ep: str, case: tuple[str, dict[str, Any], dict[str, np.ndarray]]) -> None:
    op, f, feeds = case
    assert_matches_reference(ep, op, f, feeds)


@pytest.mark.parametrize("opset", [13, 21])
def test_opsets(opset: int) -> None:
    from dml2onnx.cases.multihead_attention import cases

    case = next(c for c in cases() if c.id.endswith("past-everything"))
    desc = make_desc(case.op, case.fields)
    got = every_output(runtime.create(lowering.lower(desc, "t", opset=opset), "t", "cpu"), desc, case.inputs)
    assert not mismatches(desc, got, registry.reference_outputs(desc, case.inputs), "cpu")
