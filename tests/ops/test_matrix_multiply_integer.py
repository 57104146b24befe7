"""The integer matrix multiplies (dml2onnx/ops/matrix_multiply_integer.py): values by hand (the
pages have no example), the INT32 wrap, the requantization's order and ties, refusals, DirectML's
own results pinned, and properties against the numpy reference."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dml2onnx import lowering
from dml2onnx.backends import dmlapi, runtime
from dml2onnx.core.desc import parse_operator_desc
from dml2onnx.core.errors import ModelError, format_path
from dml2onnx.ops import matrix_multiply_integer as mmi
from strategies import SEEDS
from support import EPS, assert_matches_reference, make_desc, refusal, run_lowered, tensor

INTEGER, TO_FLOAT, QUANTIZED = mmi.INTEGER, mmi.TO_FLOAT, mmi.QUANTIZED
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
live = pytest.mark.skipif(dmlapi.missing() is not None, reason="DirectML's API under Wine is not set up (make dml-setup)")
A = np.array([[1, -2, 3], [4, 5, -6]], np.int8)
B = np.array([[7, 8], [9, 10], [11, 12]], np.uint8)
SUMS = ("float32_chunks", "integer")  # the candidates that compute the sum (choices.py; "native" is DirectML's)


def run_variant(desc: Any, feeds: dict[str, np.ndarray], variant: str, ep: str = "cpu") -> np.ndarray:
    return runtime.create(lowering.lower(desc, "test", variant=variant), "test", ep).run(feeds)


def integer_fields(a: str = "INT8", b: str = "UINT8", zero: bool = True, batch: tuple[int, ...] = ()) -> dict[str, Any]:
    fields = {
        "ATensor": tensor(a, (*batch, 2, 3)),
        "BTensor": tensor(b, (*batch, 3, 2)),
        "OutputTensor": tensor("INT32", (*batch, 2, 2)),
    }
    if zero:
        fields |= {"AZeroPointTensor": tensor(a, (2, 1)), "BZeroPointTensor": tensor(b, (2,))}
    return fields


def quantized_fields(out: str = "INT8") -> dict[str, Any]:
    one = (1, 1)
    return {
        "ATensor": tensor("INT8", (2, 3)),
        "AScaleTensor": tensor("FLOAT32", (2, 1)),
        "AZeroPointTensor": tensor("INT8", (2, 1)),
        "BTensor": tensor("UINT8", (3, 2)),
        "BScaleTensor": tensor("FLOAT32", one),
        "BZeroPointTensor": tensor("UINT8", one),
        "OutputScaleTensor": tensor("FLOAT32", one),
        "OutputZeroPointTensor": tensor(out, one),
        "OutputTensor": tensor(out, (2, 2)),
    }


def to_float_fields(t: str = "INT16", f: str = "FLOAT32") -> dict[str, Any]:
    return {
        "ATensor": tensor(t, (2, 3)),
        "AScaleTensor": tensor(f, (2, 1)),
        "AZeroPointTensor": tensor(t, (2, 1)),
        "BTensor": tensor(t, (3, 2)),
        "BScaleTensor": tensor(f, (1, 2)),
        "BZeroPointTensor": tensor(t, (1, 2)),
        "BiasTensor": tensor(f, (2, 2)),
        "OutputTensor": tensor(f, (2, 2)),
    }


def test_integer_by_hand() -> None:
    zero_a, zero_b = np.array([[1], [-1]], np.int8), np.array([7, 10], np.uint8)
    got = run_lowered(
        make_desc(INTEGER, integer_fields()), {"ATensor": A, "AZeroPointTensor": zero_a, "BTensor": B, "BZeroPointTensor": zero_b}
    )
    # rows [0, -3, 2] and [5, 6, -5] times columns [0, 2, 4] and [-2, 0, 2]
    np.testing.assert_array_equal(got, [[2, 4], [-8, -20]])
    plain = run_lowered(make_desc(INTEGER, integer_fields(zero=False)), {"ATensor": A, "BTensor": B})
    np.testing.assert_array_equal(plain, A.astype(np.int32) @ B.astype(np.int32))


@pytest.mark.parametrize("variant", SUMS)
@pytest.mark.parametrize("k", [256, 257, 1100])
def test_long_sums_are_exact(k: int, variant: str) -> None:
    """K beyond one FLOAT32-exact chunk: |x - zero point| = 255 everywhere, sums past 2**24."""
    fields = {
        "ATensor": tensor("INT8", (1, k)),
        "AZeroPointTensor": tensor("INT8", (1,)),
        "BTensor": tensor("UINT8", (k, 1)),
        "OutputTensor": tensor("INT32", (1, 1)),
    }
    feeds = {"ATensor": np.full((1, k), 127, np.int8), "AZeroPointTensor": np.array([-128], np.int8)}
    feeds["BTensor"] = np.full((k, 1), 255, np.uint8)
    assert run_variant(make_desc(INTEGER, fields), feeds, variant)[0, 0] == 255 * 255 * k


@pytest.mark.parametrize("variant", SUMS)
def test_integer_sum_wraps(variant: str) -> None:
    """33100 products of 255 * 255 wrap in INT32, as DirectML computes (-2142639796)."""
    k = 33100
    fields = {"ATensor": tensor("UINT8", (1, k)), "BTensor": tensor("UINT8", (k, 1)), "OutputTensor": tensor("INT32", (1, 1))}
    feeds = {"ATensor": np.full((1, k), 255, np.uint8), "BTensor": np.full((k, 1), 255, np.uint8)}
    assert run_variant(make_desc(INTEGER, fields), feeds, variant)[0, 0] == -2142639796


def test_int8_product_at_its_longest_k() -> None:
    """ "integer" up to K = 2**17 - 1: (-128) * (-128) 131071 times is 2147467264, the largest P
    (below 2**31); with zero points making every product -255 * 255 the sum wraps, as DirectML's.
    From K = 2**17 it does not apply."""
    k = 2**17 - 1
    fields = {"ATensor": tensor("INT8", (1, k)), "BTensor": tensor("INT8", (k, 1)), "OutputTensor": tensor("INT32", (1, 1))}
    feeds = {"ATensor": np.full((1, k), -128, np.int8), "BTensor": np.full((k, 1), -128, np.int8)}
    assert run_variant(make_desc(INTEGER, fields), feeds, "integer")[0, 0] == 128 * 128 * k
    zeros = {"AZeroPointTensor": tensor("INT8", (1, 1)), "BZeroPointTensor": tensor("UINT8", (1, 1))}
    fields |= zeros | {"BTensor": tensor("UINT8", (k, 1))}
    feeds = {
        "ATensor": feeds["ATensor"],
        "AZeroPointTensor": np.full((1, 1), 127, np.int8),
        "BTensor": np.full((k, 1), 255, np.uint8),
        "BZeroPointTensor": np.zeros((1, 1), np.uint8),
    }
    want = (-255 * 255 * k + 2**31) % 2**32 - 2**31
    assert run_variant(make_desc(INTEGER, fields), feeds, "integer")[0, 0] == want
    longer = make_desc(INTEGER, fields | {"ATensor": tensor("INT8", (1, k + 1)), "BTensor": tensor("UINT8", (k + 1, 1))})
    assert not mmi.applies(longer, "integer", 17) and mmi.applies(make_desc(INTEGER, fields), "integer", 17)


@pytest.mark.parametrize(
    ("a", "b", "zero", "k", "n", "nodes"),
    [
        ("INT8", "INT8", False, 8, 4, ["MatMulInteger"]),  # the CUDA EP's own pairing: nothing else
        ("INT8", "INT8", False, 3, 2, ["Cast", "Pad", "Cast", "Cast", "Pad", "Cast", "MatMulInteger", "Slice"]),
        ("UINT8", "INT8", False, 8, 4, ["Cast", "Sub", "Cast", "Cast", "ReduceSum", "Cast", "MatMulInteger", "Mul", "Sub"]),
    ],
)
def test_int8_product_nodes(a: str, b: str, zero: bool, k: int, n: int, nodes: list[str]) -> None:
    """The "integer" graph: K and N padded to multiples of 4 only where they are not, B's column
    sums only where A's offset is not 0 (UINT8: -128), no zero point passed to MatMulInteger."""
    fields = {"ATensor": tensor(a, (2, k)), "BTensor": tensor(b, (k, n)), "OutputTensor": tensor("INT32", (2, n))}
    model = lowering.lower(make_desc(INTEGER, fields), "t", variant="integer")
    assert [node.op_type for node in model.graph.node] == nodes
    matmul = next(node for node in model.graph.node if node.op_type == "MatMulInteger")
    assert len(matmul.input) == 2


def test_int8_product_keeps_its_scale_order() -> None:
    """QUANTIZED_LINEAR's "integer" graph holds a Reshape between MatMulInteger and the Cast:
    ONNX Runtime would otherwise fuse MatMulInteger -> Cast -> Mul into MatMulIntegerToFloat on the
    CPU EP, whose scale product misses DirectML's ties (the matrix's ties case: 12 of 4096)."""
    fields = quantized_fields()
    for name in ("AZeroPointTensor", "BZeroPointTensor"):
        del fields[name]
    fields["BTensor"] = tensor("INT8", (3, 4))
    fields["OutputTensor"] = tensor("INT8", (2, 4))
    nodes = [node.op_type for node in lowering.lower(make_desc(QUANTIZED, fields), "t", variant="integer").graph.node]
    assert nodes[nodes.index("MatMulInteger") + 1] == "Reshape", nodes


def test_quantized_rounds_then_adds_the_zero_point() -> None:
    """y = sum * (AScale / OutputScale) * BScale rounded halves to even, then + OutputZeroPoint
    (DirectML: round(2.5) + 1 = 3, not round(3.5) = 4), then saturated."""
    fields = quantized_fields()
    a = np.array([[1, 0, 0], [5, 0, 0]], np.int8)
    b = np.array([[5, 7], [0, 0], [0, 0]], np.uint8)  # sums 5, 7 and 25, 35
    feeds = {
        "ATensor": a,
        "AScaleTensor": np.array([[0.5], [8.0]], np.float32),
        "AZeroPointTensor": np.zeros((2, 1), np.int8),
        "BTensor": b,
        "BScaleTensor": np.ones((1, 1), np.float32),
        "BZeroPointTensor": np.zeros((1, 1), np.uint8),
        "OutputScaleTensor": np.ones((1, 1), np.float32),
        "OutputZeroPointTensor": np.ones((1, 1), np.int8),
    }
    got = run_lowered(make_desc(QUANTIZED, fields), feeds)
    np.testing.assert_array_equal(got, [[3, 5], [127, 127]])  # 2.5 -> 2 (+1), 3.5 -> 4 (+1); 200, 280 saturate
    feeds["OutputScaleTensor"] = np.full((1, 1), np.nan, np.float32)
    np.testing.assert_array_equal(run_lowered(make_desc(QUANTIZED, fields), feeds), np.ones((2, 2)))  # NaN: the zero point


def test_to_float_by_hand() -> None:
    fields = to_float_fields()
    feeds = {
        "ATensor": np.array([[2, 4, 6], [1, 1, 1]], np.int16),
        "AScaleTensor": np.array([[0.5], [2.0]], np.float32),
        "AZeroPointTensor": np.array([[2], [0]], np.int16),
        "BTensor": np.array([[1, 3], [2, 3], [3, 3]], np.int16),
        "BScaleTensor": np.array([[1.0, 0.25]], np.float32),
        "BZeroPointTensor": np.array([[0, 3]], np.int16),
        "BiasTensor": np.array([[0.5, 0], [0, -1]], np.float32),
    }
    got = run_lowered(make_desc(TO_FLOAT, fields), feeds)
    # A dequantized: [0, 1, 2], [2, 2, 2]; B: columns [1, 2, 3] and [0, 0, 0]
    np.testing.assert_array_equal(got, [[8.5, 0], [12, -1]])


def test_to_float_holds_float16_dequantized_values() -> None:
    """A FLOAT16 output: each dequantized value is rounded to FLOAT16 before the FLOAT32 sum
    (DirectML): 1 + 2**-12 is 1 in FLOAT16, so 2048 of them sum to 2048, not 2048.5."""
    k = 2048
    fields = {
        "ATensor": tensor("INT32", (1, k)),
        "AScaleTensor": tensor("FLOAT16", (1, 1)),
        "BTensor": tensor("INT32", (k, 1)),
        "BScaleTensor": tensor("FLOAT16", (1, 1)),
        "OutputTensor": tensor("FLOAT16", (1, 1)),
    }
    feeds = {
        "ATensor": np.full((1, k), 4097, np.int32),
        "AScaleTensor": np.full((1, 1), 2.0**-12, np.float16),
        "BTensor": np.ones((k, 1), np.int32),
        "BScaleTensor": np.ones((1, 1), np.float16),
    }
    assert run_lowered(make_desc(TO_FLOAT, fields), feeds)[0, 0] == 2048


@pytest.mark.parametrize(
    ("op", "change", "path", "message"),
    [
        (INTEGER, {"BTensor": tensor("UINT8", (4, 2))}, "desc.BTensor.Sizes[0]", "must be 3 (K"),
        (INTEGER, {"OutputTensor": tensor("INT32", (2, 3))}, "desc.OutputTensor.Sizes[1]", "must be 2 (N"),
        (INTEGER, {"OutputTensor": tensor("INT32", (1, 2, 2))}, "desc.ATensor.Sizes", "same DimensionCount"),
        (INTEGER, {"AZeroPointTensor": tensor("INT8", (2,))}, "desc.AZeroPointTensor.Sizes[0]", "must be 1"),
        (INTEGER, {"AZeroPointTensor": tensor("INT8", (1, 3))}, "desc.AZeroPointTensor.Sizes[1]", "must be 1"),
        (INTEGER, {"BZeroPointTensor": tensor("UINT8", (3, 2))}, "desc.BZeroPointTensor.Sizes[0]", "must be 1"),
        (INTEGER, {"AZeroPointTensor": tensor("UINT8", (2, 1))}, "desc.AZeroPointTensor.DataType", "same DataType"),
        (QUANTIZED, {"OutputScaleTensor": tensor("FLOAT32", (1, 2))}, "desc.OutputScaleTensor.Sizes[1]", "must be 1"),
        (QUANTIZED, {"AZeroPointTensor": tensor("INT8", (1, 1))}, "desc.AZeroPointTensor.Sizes", "same Sizes"),
        (QUANTIZED, {"BScaleTensor": tensor("FLOAT32", (1,)), "BZeroPointTensor": tensor("UINT8", (1,))}, None, "DimensionCount"),
        (QUANTIZED, {"OutputZeroPointTensor": tensor("UINT8", (1, 1))}, "desc.OutputZeroPointTensor.DataType", "same DataType"),
        (TO_FLOAT, {"BTensor": tensor("INT8", (3, 2))}, "desc.BTensor.DataType", "same DataType"),
        (TO_FLOAT, {"BiasTensor": tensor("FLOAT32", (1, 2))}, "desc.BiasTensor.Sizes", "same Sizes"),
        (TO_FLOAT, {"BScaleTensor": tensor("FLOAT16", (1, 2))}, "desc.BScaleTensor.DataType", "same DataType"),
    ],
)
def test_refusals(op: str, change: dict[str, Any], path: str | None, message: str) -> None:
    base = {INTEGER: integer_fields(), QUANTIZED: quantized_fields(), TO_FLOAT: to_float_fields()}[op]
    e = refusal(op, base | change)
    if path is not None:
        assert format_path(e.path) == path, str(e)
    assert message in e.rule, str(e)


def test_batch_broadcast_refused() -> None:
    e = refusal(INTEGER, integer_fields(zero=False, batch=(2,)) | {"ATensor": tensor("INT8", (1, 2, 3))})
    assert format_path(e.path) == "desc.ATensor.Sizes[0]" and "stride of 0" in e.rule


def test_feature_levels() -> None:
    """2_1 wants 4 dimensions; 4_0 takes 2 to 4, B's zero point of 1 dimension only from 5_2 (A's
    from 4_0); TO_FLOAT from 6_2."""
    fields = integer_fields(zero=False)
    refusal(INTEGER, fields, level="2_1")
    make_desc(INTEGER, fields)
    column = integer_fields() | {"AZeroPointTensor": tensor("INT8", (1,))}  # B's zero point is [2]
    assert format_path(refusal(INTEGER, column, level="4_0").path).startswith("desc.BZeroPointTensor")
    row = integer_fields() | {"AZeroPointTensor": tensor("INT8", (1,)), "BZeroPointTensor": tensor("UINT8", (1, 2))}
    lowering.validate(parse_operator_desc(INTEGER, row, ("desc",), ("type",), level="4_0"))
    with pytest.raises(ModelError):
        parse_operator_desc(TO_FLOAT, to_float_fields(), ("desc",), ("type",), level="6_1")


def test_dml_target_emits_the_native_nodes() -> None:
    """MatMulInteger (ONNX's input order: A, B, then the zero points) and QLinearMatMul with zeros
    for an absent zero point; TO_FLOAT keeps the portable graph."""
    at = lowering.lower(make_desc(INTEGER, integer_fields()), "t", target="dml")
    assert [(n.op_type, list(n.input)) for n in at.graph.node] == [
        ("MatMulInteger", ["ATensor", "BTensor", "AZeroPointTensor", "BZeroPointTensor"])
    ]
    fields = quantized_fields()
    del fields["AZeroPointTensor"]
    q = lowering.lower(make_desc(QUANTIZED, fields), "t", target="dml")
    assert [n.op_type for n in q.graph.node] == ["QLinearMatMul"]
    assert [i.name for i in q.graph.initializer] == ["t/AZeroPointTensor_zeros"]
    f = lowering.lower(make_desc(TO_FLOAT, to_float_fields()), "t", target="dml")
    assert "MatMul" in {n.op_type for n in f.graph.node}


@pytest.mark.parametrize("op", [INTEGER, QUANTIZED, TO_FLOAT])
def test_portable_graph_nodes(op: str) -> None:
    """float32_chunks: FLOAT32 MatMuls only; the default (choose) takes MatMulInteger where
    `integer` applies (MATRIX_MULTIPLY_INTEGER_TO_FLOAT sums in FLOAT32: it has no `integer`)."""
    fields = {INTEGER: integer_fields(), QUANTIZED: quantized_fields(), TO_FLOAT: to_float_fields()}[op]
    desc = make_desc(op, fields)
    chunks = {n.op_type for n in lowering.lower(desc, "t", variant="float32_chunks").graph.node}
    assert not chunks & {"MatMulInteger", "QLinearMatMul", "ReduceSum"}, chunks
    default = {n.op_type for n in lowering.lower(desc, "t").graph.node}
    assert ("MatMulInteger" in default) == (op != TO_FLOAT) and "QLinearMatMul" not in default, default


# -- DirectML's own results ---------------------------------------------------------------------------


@live
def test_directml_pins() -> None:
    """DirectML: the INT32 wrap, round(y) + zero point, NaN as the zero point."""
    k = 33100
    fields = {"ATensor": tensor("UINT8", (1, k)), "BTensor": tensor("UINT8", (k, 1)), "OutputTensor": tensor("INT32", (1, 1))}
    feeds = {"ATensor": np.full((1, k), 255, np.uint8), "BTensor": np.full((k, 1), 255, np.uint8)}
    assert dmlapi.execute(make_desc(INTEGER, fields), feeds).output[0, 0] == -2142639796
    a = np.array([[1, 0, 0], [5, 0, 0]], np.int8)
    feeds = {
        "ATensor": a,
        "AScaleTensor": np.array([[0.5], [8.0]], np.float32),
        "AZeroPointTensor": np.zeros((2, 1), np.int8),
        "BTensor": np.array([[5, 7], [0, 0], [0, 0]], np.uint8),
        "BScaleTensor": np.ones((1, 1), np.float32),
        "BZeroPointTensor": np.zeros((1, 1), np.uint8),
        "OutputScaleTensor": np.ones((1, 1), np.float32),
        "OutputZeroPointTensor": np.ones((1, 1), np.int8),
    }
    desc = make_desc(QUANTIZED, quantized_fields())
    np.testing.assert_array_equal(dmlapi.execute(desc, feeds).output, [[3, 5], [127, 127]])
    feeds["OutputScaleTensor"] = np.full((1, 1), np.nan, np.float32)
    np.testing.assert_array_equal(dmlapi.execute(desc, feeds).output, np.ones((2, 2)))


@live
@pytest.mark.parametrize(
    ("op", "change"),
    [
        (INTEGER, {"AZeroPointTensor": tensor("INT8", (2,))}),  # [M] for A: refused
        (
            INTEGER,
            {
                "ATensor": tensor("INT8", (1, 2, 3)),
                "BTensor": tensor("UINT8", (2, 3, 2)),
                "OutputTensor": tensor("INT32", (2, 2, 2)),
            },
        ),
        (QUANTIZED, {"AZeroPointTensor": tensor("INT8", (1, 1))}),  # zero point and scale differ
        (QUANTIZED, {"OutputScaleTensor": tensor("FLOAT32", (1, 2)), "OutputZeroPointTensor": tensor("INT8", (1, 2))}),
    ],
)
def test_directml_refuses_what_validation_refuses(op: str, change: dict[str, Any]) -> None:
    fields = {INTEGER: integer_fields(), QUANTIZED: quantized_fields()}[op] | change
    refusal(op, fields)
    desc = parse_operator_desc(op, fields, ("desc",), ("type",))
    feeds = {n: np.zeros(desc.tensor(n).sizes, desc.tensor(n).data_type.numpy) for n in desc.inputs}
    with pytest.raises(dmlapi.DmlApiError):
        dmlapi.execute(desc, feeds)


# -- properties -----------------------------------------------------------------------------------


def _random_case(
    op: str, seed: int, rank: int, k: int, per: bool, types: tuple[str, str, str]
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    batch = tuple(int(v) for v in rng.integers(1, 3, rank - 2))
    m, n = (int(v) for v in rng.integers(1, 5, 2))
    a_t, b_t, o_t = types
    row = (1,) * (rank - 2) + ((m if per else 1), 1)
    col = (1,) * (rank - 1) + ((n if per else 1),)
    fields: dict[str, Any] = {"ATensor": tensor(a_t, (*batch, m, k)), "BTensor": tensor(b_t, (*batch, k, n))}
    fields["OutputTensor"] = tensor(o_t, (*batch, m, n))
    quant = {"A": (a_t, row), "B": (b_t, col)} | ({"Output": (o_t, row)} if op == QUANTIZED else {})
    for prefix, (t, sizes) in quant.items():
        fields[f"{prefix}ZeroPointTensor"] = tensor(t if op != TO_FLOAT else a_t, sizes)
        if op != INTEGER:
            fields[f"{prefix}ScaleTensor"] = tensor("FLOAT32" if op == QUANTIZED else o_t, sizes)
    feeds: dict[str, np.ndarray] = {}
    for name, spec in fields.items():
        dtype = np.dtype({"FLOAT16": "float16", "FLOAT32": "float32"}.get(spec["DataType"], spec["DataType"].lower()))
        if name == "OutputTensor":
            continue
        if dtype.kind == "f":
            scale = np.sqrt(k) * 200 if name == "OutputScaleTensor" else 1.0  # outputs of tens, some saturated
            if op == TO_FLOAT:
                scale = 0.5 / float(np.iinfo(np.dtype(a_t.lower())).max - np.iinfo(np.dtype(a_t.lower())).min)
            feeds[name] = (rng.uniform(0.25, 1, spec["Sizes"]) * scale).astype(dtype)
        else:
            info = np.iinfo(dtype)
            feeds[name] = rng.integers(int(info.min), int(info.max), spec["Sizes"], endpoint=True).astype(dtype)
    return fields, feeds


@EPS
@SETTINGS
@given(seed=SEEDS, rank=st.integers(2, 4), k=st.sampled_from([1, 5, 64, 300]), per=st.booleans(), data=st.data())
def test_integer_properties(ep: str, seed: int, rank: int, k: int, per: bool, data: st.DataObject) -> None:
    types = (data.draw(st.sampled_from(["INT8", "UINT8"])), data.draw(st.sampled_from(["INT8", "UINT8"])))
    op = data.draw(st.sampled_from([INTEGER, QUANTIZED]))
    out = "INT32" if op == INTEGER else data.draw(st.sampled_from(["INT8", "UINT8"]))
    fields, feeds = _random_case(op, seed, rank, k, per, (*types, out))
    desc = make_desc(op, fields)
    variant = data.draw(st.sampled_from(SUMS))
    np.testing.assert_array_equal(run_variant(desc, feeds, variant, ep), mmi.reference(desc, feeds))


@EPS
@SETTINGS
@given(seed=SEEDS, rank=st.integers(2, 4), k=st.sampled_from([1, 7, 64]), per=st.booleans(), data=st.data())
def test_to_float_properties(ep: str, seed: int, rank: int, k: int, per: bool, data: st.DataObject) -> None:
    t = data.draw(st.sampled_from(["INT32", "INT16", "INT8", "UINT32", "UINT16", "UINT8"]))
    f = data.draw(st.sampled_from(["FLOAT32", "FLOAT16"]))
    fields, feeds = _random_case(TO_FLOAT, seed, rank, k, per, (t, t, f))
    assert_matches_reference(ep, TO_FLOAT, fields, feeds)
