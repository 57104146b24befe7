"""DML_OPERATOR_SPACE_TO_DEPTH(1) and DEPTH_TO_SPACE(1): the pages' examples (both orders), the
first operators' order (DEPTH_COLUMN_ROW), round trips, BlockSize 1, every type moved bit for bit
(FLOAT64 NaN payloads, 64-bit integers beyond 2**53), the dml target's DepthToSpace and
SpaceToDepth nodes, the "native" candidate's nodes on `portable` and `cuda` (FLOAT32, FLOAT64; the
other types keep the Transpose), refusals, and properties against the numpy reference."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import helper

from dml2onnx import lowering
from dml2onnx.backends import dmlapi, runtime
from dml2onnx.core import operator_table
from dml2onnx.graph import dml_ep
from dml2onnx.graph.builder import DEFAULT_OPSET
from dml2onnx.graph.targets import DML_NODE_DOC
from dml2onnx.lowering import choices
from strategies import SEEDS
from support import EPS, assert_matches_reference, make_desc, refusal, run_lowered, tensor

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TYPES = [t.name for t in operator_table.OPERATORS["DEPTH_TO_SPACE1"].support[0].tensors["InputTensor"].types]
ORDERS = ("DEPTH_COLUMN_ROW", "COLUMN_ROW_DEPTH")

# The pages' examples: the depth tensor [1, 8, 2, 3] and the space tensor [1, 2, 4, 6] under each order
DEPTH = np.array(
    [[0, 1, 2], [3, 4, 5], [9, 10, 11], [12, 13, 14], [18, 19, 20], [21, 22, 23], [27, 28, 29], [30, 31, 32]]
    + [[36, 37, 38], [39, 40, 41], [45, 46, 47], [48, 49, 50], [54, 55, 56], [57, 58, 59], [63, 64, 65], [66, 67, 68]],
    np.uint32,
).reshape(1, 8, 2, 3)
SPACE = {
    "DEPTH_COLUMN_ROW": [
        [[0, 18, 1, 19, 2, 20], [36, 54, 37, 55, 38, 56], [3, 21, 4, 22, 5, 23], [39, 57, 40, 58, 41, 59]],
        [[9, 27, 10, 28, 11, 29], [45, 63, 46, 64, 47, 65], [12, 30, 13, 31, 14, 32], [48, 66, 49, 67, 50, 68]],
    ],
    "COLUMN_ROW_DEPTH": [
        [[0, 9, 1, 10, 2, 11], [18, 27, 19, 28, 20, 29], [3, 12, 4, 13, 5, 14], [21, 30, 22, 31, 23, 32]],
        [[36, 45, 37, 46, 38, 47], [54, 63, 55, 64, 56, 65], [39, 48, 40, 49, 41, 50], [57, 66, 58, 67, 59, 68]],
    ],
}


def fields(op: str, dtype: str, src: tuple[int, ...], dst: tuple[int, ...], bs: int, order: str | None = None) -> dict[str, Any]:
    f: dict[str, Any] = {"InputTensor": tensor(dtype, src), "OutputTensor": tensor(dtype, dst), "BlockSize": bs}
    return f | ({"Order": order} if order else {})


@pytest.mark.parametrize("order", ORDERS)
def test_page_examples(order: str) -> None:
    space = np.array(SPACE[order], np.uint32).reshape(1, 2, 4, 6)
    d2s = make_desc("DEPTH_TO_SPACE1", fields("DEPTH_TO_SPACE1", "UINT32", (1, 8, 2, 3), (1, 2, 4, 6), 2, order))
    np.testing.assert_array_equal(run_lowered(d2s, {"InputTensor": DEPTH}), space)
    s2d = make_desc("SPACE_TO_DEPTH1", fields("SPACE_TO_DEPTH1", "UINT32", (1, 2, 4, 6), (1, 8, 2, 3), 2, order))
    np.testing.assert_array_equal(run_lowered(s2d, {"InputTensor": space}), DEPTH)


def test_first_operators_are_depth_column_row() -> None:
    """DEPTH_TO_SPACE and SPACE_TO_DEPTH (no Order) compute DEPTH_COLUMN_ROW's layout (DirectML's API too)."""
    space = np.array(SPACE["DEPTH_COLUMN_ROW"], np.uint32).reshape(1, 2, 4, 6)
    d2s = make_desc("DEPTH_TO_SPACE", fields("DEPTH_TO_SPACE", "UINT32", (1, 8, 2, 3), (1, 2, 4, 6), 2))
    np.testing.assert_array_equal(run_lowered(d2s, {"InputTensor": DEPTH}), space)
    s2d = make_desc("SPACE_TO_DEPTH", fields("SPACE_TO_DEPTH", "UINT32", (1, 2, 4, 6), (1, 8, 2, 3), 2))
    np.testing.assert_array_equal(run_lowered(s2d, {"InputTensor": space}), DEPTH)


def test_block_size_one_copies() -> None:
    x = np.arange(24, dtype=np.int16).reshape(1, 4, 2, 3)
    for op in ("DEPTH_TO_SPACE1", "SPACE_TO_DEPTH1"):
        desc = make_desc(op, fields(op, "INT16", x.shape, x.shape, 1, "COLUMN_ROW_DEPTH"))
        np.testing.assert_array_equal(run_lowered(desc, {"InputTensor": x}), x)


@pytest.mark.parametrize("dtype", ["FLOAT64", "UINT64", "INT64", "FLOAT16"])
def test_bits_are_moved_exactly(dtype: str) -> None:
    """Values a float cast would merge (2**53 + 1), NaN payloads and -0.0 come out bit for bit."""
    t = np.dtype(dtype.lower())
    if t.kind == "f":
        bits = np.arange(48, dtype=np.uint64 if t.itemsize == 8 else np.uint16) | (
            0x7FF8000000000001 if t.itemsize == 8 else 0x7C01
        )
        x = bits.view(t).copy()
        x[1], x[2] = -0.0, 1.5
    else:
        x = (np.arange(48, dtype=np.int64) + 2**53 + 1).astype(t)
    x = x.reshape(1, 2, 4, 6)
    s2d = make_desc("SPACE_TO_DEPTH1", fields("SPACE_TO_DEPTH1", dtype, (1, 2, 4, 6), (1, 8, 2, 3), 2, "COLUMN_ROW_DEPTH"))
    y = run_lowered(s2d, {"InputTensor": x})
    want = lowering.registry.family("SPACE_TO_DEPTH1").reference(s2d, {"InputTensor": x})
    assert y.tobytes() == want.tobytes()
    assert sorted(y.view(np.uint8).reshape(48, -1).tolist()) == sorted(x.view(np.uint8).reshape(48, -1).tolist())


@pytest.mark.parametrize("op", ["DEPTH_TO_SPACE", "DEPTH_TO_SPACE1", "SPACE_TO_DEPTH", "SPACE_TO_DEPTH1"])
def test_dml_target_nodes(op: str) -> None:
    """On the dml target: DepthToSpace (DCR, CRD) and SpaceToDepth (DCR only) for the DirectML EP
    to map back; SPACE_TO_DEPTH1 with COLUMN_ROW_DEPTH keeps its Reshape/Transpose."""
    depth, space = (1, 8, 2, 3), (1, 2, 4, 6)
    src, dst = (depth, space) if op.startswith("DEPTH") else (space, depth)
    for order in ORDERS if op.endswith("1") else (None,):
        model = lowering.lower(make_desc(op, fields(op, "INT8", src, dst, 2, order)), "t", target="dml")
        kinds = [n.op_type for n in model.graph.node]
        if op.startswith("SPACE") and order == "COLUMN_ROW_DEPTH":
            assert "SpaceToDepth" not in kinds
        else:
            node = next(n for n in model.graph.node if n.op_type in ("DepthToSpace", "SpaceToDepth"))
            assert node.doc_string == DML_NODE_DOC
        assert dml_ep.check(model) == []
        assert dml_ep.check(lowering.lower(make_desc(op, fields(op, "UINT64", src, dst, 2, order)), "t")) == []


def _nan_payloads(v: np.ndarray, dtype: str) -> np.ndarray:
    """Each value v as a NaN of `dtype` whose payload is v + 1 (signaling for even v, quiet for odd)."""
    t = np.dtype(dtype.lower())
    exponent, quiet = (0x7FF0000000000000, 1 << 51) if t.itemsize == 8 else (0x7F800000, 1 << 22)
    n = (v.astype(np.uint64) + 1) | exponent | np.where(v % 2 == 1, quiet, 0).astype(np.uint64)
    return n.astype(np.uint64 if t.itemsize == 8 else np.uint32).view(t)


@pytest.mark.parametrize("dtype", ["FLOAT32", "FLOAT64"])
@pytest.mark.parametrize(
    ("op", "order", "node", "mode"),
    [
        ("DEPTH_TO_SPACE", None, "DepthToSpace", "DCR"),
        ("DEPTH_TO_SPACE1", "DEPTH_COLUMN_ROW", "DepthToSpace", "DCR"),
        ("DEPTH_TO_SPACE1", "COLUMN_ROW_DEPTH", "DepthToSpace", "CRD"),
        ("SPACE_TO_DEPTH", None, "SpaceToDepth", None),
        ("SPACE_TO_DEPTH1", "DEPTH_COLUMN_ROW", "SpaceToDepth", None),
    ],
)
def test_native_node_on_portable_and_cuda(op: str, order: str | None, node: str, mode: str | None, dtype: str) -> None:
    """`portable` and `cuda` take ONNX's node for FLOAT32 and FLOAT64 (CUDA EP, H100: 1857 GB/s
    against 1124-1157 for the Transpose); on the CPU EP it moves the page's layout bit for bit
    (the page's values as NaN payloads, signaling and quiet)."""
    space = np.array(SPACE[order or "DEPTH_COLUMN_ROW"], np.uint32).reshape(1, 2, 4, 6)
    floats = _nan_payloads(DEPTH, dtype), _nan_payloads(space, dtype)
    src, dst = floats if op.startswith("DEPTH") else floats[::-1]
    desc = make_desc(op, fields(op, dtype, src.shape, dst.shape, 2, order))
    for target in ("portable", "cuda"):
        assert choices.choose(desc, target, DEFAULT_OPSET) == "native"
        model = lowering.lower(desc, "t", target=target)
        nodes = list(model.graph.node)
        assert [n.op_type for n in nodes] == [node]
        assert {a.name: helper.get_attribute_value(a) for a in nodes[0].attribute} == (
            {"blocksize": 2} | ({"mode": mode.encode()} if mode else {})
        )
        if target == "portable":
            assert dml_ep.check(model) == []
        got = runtime.create(model, "t", "cpu").run({"InputTensor": src})
        assert got.tobytes() == dst.tobytes()


@pytest.mark.parametrize("dtype", ["FLOAT16", "INT8", "UINT64"])
def test_other_types_keep_the_transpose(dtype: str) -> None:
    """Off the dml target "native" is ONNX's node only where the CPU and CUDA EPs have it and move
    the bits (the CPU EP's FLOAT16 DepthToSpace quiets a signaling NaN): the rest keep the Transpose,
    which the dml target's node replaces."""
    desc = make_desc("DEPTH_TO_SPACE1", fields("DEPTH_TO_SPACE1", dtype, (1, 8, 2, 3), (1, 2, 4, 6), 2, "COLUMN_ROW_DEPTH"))
    for target in ("portable", "cuda"):
        assert choices.choose(desc, target, DEFAULT_OPSET) == "transpose"
        kinds = [n.op_type for n in lowering.lower(desc, "t", target=target, variant="native").graph.node]
        assert "DepthToSpace" not in kinds and "Transpose" in kinds
    assert "DepthToSpace" in [n.op_type for n in lowering.lower(desc, "t", target="dml").graph.node]


def test_space_to_depth_column_row_depth_has_no_native_node() -> None:
    desc = make_desc("SPACE_TO_DEPTH1", fields("SPACE_TO_DEPTH1", "FLOAT32", (1, 2, 4, 6), (1, 8, 2, 3), 2, "COLUMN_ROW_DEPTH"))
    assert choices.available(desc, DEFAULT_OPSET) == ("transpose",)
    assert choices.choose(desc, "cuda", DEFAULT_OPSET) == "transpose"


REFUSALS = [
    ("DEPTH_TO_SPACE1", ("FLOAT32", (1, 8, 2, 3), (1, 8, 2, 3), 0), ("desc", "BlockSize"), "must be at least 1"),
    (
        "DEPTH_TO_SPACE1",
        ("FLOAT32", (1, 8, 2, 3), (1, 1, 6, 9), 3),
        ("desc", "InputTensor", "Sizes"),
        "must divide the channel count",
    ),
    ("SPACE_TO_DEPTH1", ("FLOAT32", (1, 2, 3, 6), (1, 8, 1, 3), 2), ("desc", "InputTensor", "Sizes"), "must divide the height"),
    ("DEPTH_TO_SPACE1", ("FLOAT32", (1, 8, 2, 3), (1, 2, 4, 7), 2), ("desc", "OutputTensor", "Sizes"), "must be [1, 2, 4, 6]"),
    ("SPACE_TO_DEPTH", ("FLOAT32", (1, 2, 4, 6), (1, 2, 8, 3), 2), ("desc", "OutputTensor", "Sizes"), "must be [1, 8, 2, 3]"),
]


@pytest.mark.parametrize(("op", "args", "path", "message"), REFUSALS)
def test_refusals(op: str, args: tuple[Any, ...], path: tuple[str, ...], message: str) -> None:
    """Each is refused by DirectML too (E_INVALIDARG, measured)."""
    f = fields(op, *args, order="DEPTH_COLUMN_ROW" if op.endswith("1") else None)
    e = refusal(op, f)
    assert e.path == path and message in e.rule, (e.path, e.rule)


def test_refuses_another_output_type() -> None:
    f = fields("DEPTH_TO_SPACE1", "UINT32", (1, 8, 2, 3), (1, 2, 4, 6), 2, "DEPTH_COLUMN_ROW")
    f["OutputTensor"]["DataType"] = "INT32"
    e = refusal("DEPTH_TO_SPACE1", f)
    assert e.path == ("desc", "OutputTensor", "DataType")


def test_older_levels_refuse_64_bit_types() -> None:
    e = refusal(
        "DEPTH_TO_SPACE1", fields("DEPTH_TO_SPACE1", "INT64", (1, 8, 2, 3), (1, 2, 4, 6), 2, "DEPTH_COLUMN_ROW"), level="4_1"
    )
    assert e.path == ("desc", "InputTensor", "DataType")
    e = refusal("SPACE_TO_DEPTH", fields("SPACE_TO_DEPTH", "INT32", (1, 2, 4, 6), (1, 8, 2, 3), 2), level="2_0")
    assert e.path == ("desc", "InputTensor", "DataType")


_why = dmlapi.missing()
live = pytest.mark.skipif(_why is not None, reason=f"DirectML's API under Wine is not set up ({_why})")


@live
@pytest.mark.parametrize("order", ORDERS)
def test_directml_computes_the_page(order: str) -> None:
    desc = make_desc("DEPTH_TO_SPACE1", fields("DEPTH_TO_SPACE1", "UINT32", (1, 8, 2, 3), (1, 2, 4, 6), 2, order))
    got = dmlapi.execute(desc, {"InputTensor": DEPTH}).output
    np.testing.assert_array_equal(got.reshape(2, 4, 6), SPACE[order])


@EPS
@SETTINGS
@given(
    op=st.sampled_from(["SPACE_TO_DEPTH", "SPACE_TO_DEPTH1", "DEPTH_TO_SPACE", "DEPTH_TO_SPACE1"]),
    n=st.integers(1, 2),
    c=st.integers(1, 3),
    h=st.integers(1, 3),
    w=st.integers(1, 3),
    bs=st.integers(1, 3),
    order=st.sampled_from(ORDERS),
    dtype=st.sampled_from(TYPES),
    seed=SEEDS,
)
def test_matches_reference(ep: str, op: str, n: int, c: int, h: int, w: int, bs: int, order: str, dtype: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    depth, space = (n, c * bs * bs, h, w), (n, c, h * bs, w * bs)
    src, dst = (depth, space) if op.startswith("DEPTH") else (space, depth)
    t = np.dtype(dtype.lower())
    if t.kind == "f":
        x = (rng.standard_normal(src) * 100).astype(t)
    else:
        info = np.iinfo(t)
        x = rng.integers(int(info.min), int(info.max), src, dtype=t, endpoint=True)
    assert_matches_reference(ep, op, fields(op, dtype, src, dst, bs, order if op.endswith("1") else None), {"InputTensor": x})
