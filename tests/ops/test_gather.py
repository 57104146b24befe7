"""GATHER, GATHER_ELEMENTS, GATHER_ND, GATHER_ND1 (dml2onnx/ops/gather.py): the pages' examples,
negative and out-of-range indices by hand (as DirectML's API computed them), refusals, the
`cuda` target's "guarded" candidate (its condition at the range's edges, both branches), and
property tests against the reference, bit for bit (the `portable` and the `cuda` graphs; the
`dml` target's "native" nodes with indices in range, where every EP's node agrees with DirectML);
"native" on the DirectML EP with indices past 32 bits, where it is DirectML's operator."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

from dml2onnx import lowering
from dml2onnx.backends import runtime, winhost
from dml2onnx.cases.gather import _dims, _fields, bits, index_values
from dml2onnx.core import dtypes
from dml2onnx.core.desc import parse_operator_desc
from dml2onnx.core.errors import UsageError
from dml2onnx.core.operator_table import OPERATORS
from dml2onnx.graph.builder import DEFAULT_OPSET
from dml2onnx.lowering import choices
from dml2onnx.ops import gather, registry
from support import EP_PARAMS, make_desc, refusal, tensor

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
F32, U32 = "FLOAT32", "UINT32"


def run(op: str, fields: dict, feeds: dict, target: str = "portable") -> tuple[np.ndarray, np.ndarray]:
    """The CPU EP's result (of the graph for `target`) and the reference."""
    d = parse_operator_desc(op, fields, ("desc",), ("type",))
    lowering.validate(d)
    got = runtime.create(lowering.lower(d, "t", target=target), "t", "cpu").run(feeds)
    return got, registry.family(op).reference(d, feeds)


def check(op: str, fields: dict, feeds: dict, want: list) -> None:
    got, ref = run(op, fields, feeds)
    w = np.array(want, dtype=got.dtype)
    assert got.tobytes() == ref.tobytes() == w.tobytes(), (got, ref, w)


def test_gather_page_examples() -> None:
    x = np.arange(1, 7, dtype=np.float32)
    check(
        "GATHER",
        {
            "InputTensor": tensor(F32, [4]),
            "IndicesTensor": tensor(U32, [5]),
            "OutputTensor": tensor(F32, [5]),
            "Axis": 0,
            "IndexDimensions": 1,
        },
        {"InputTensor": np.array([11, 12, 13, 14], np.float32), "IndicesTensor": np.array([3, 1, 3, 0, 2], np.uint32)},
        [14, 12, 14, 11, 13],
    )
    check(
        "GATHER",
        {
            "InputTensor": tensor(F32, [3, 2]),
            "IndicesTensor": tensor(U32, [1, 4]),
            "OutputTensor": tensor(F32, [4, 2]),
            "Axis": 0,
            "IndexDimensions": 1,
        },
        {"InputTensor": x.reshape(3, 2), "IndicesTensor": np.array([[0, 1, 1, 2]], np.uint32)},
        [[1, 2], [3, 4], [3, 4], [5, 6]],
    )
    check(
        "GATHER",
        {
            "InputTensor": tensor(F32, [1, 3, 3]),
            "IndicesTensor": tensor(U32, [1, 1, 2]),
            "OutputTensor": tensor(F32, [3, 1, 2]),
            "Axis": 2,
            "IndexDimensions": 2,
        },
        {"InputTensor": np.arange(1, 10, dtype=np.float32).reshape(1, 3, 3), "IndicesTensor": np.array([[[0, 2]]], np.uint32)},
        [[[1, 3]], [[4, 6]], [[7, 9]]],
    )
    check(
        "GATHER",
        {
            "InputTensor": tensor(F32, [1, 3, 2]),
            "IndicesTensor": tensor(U32, [1, 2, 2]),
            "OutputTensor": tensor(F32, [2, 2, 2]),
            "Axis": 1,
            "IndexDimensions": 2,
        },
        {"InputTensor": x.reshape(1, 3, 2), "IndicesTensor": np.array([[[0, 1], [1, 2]]], np.uint32)},
        [[[1, 2], [3, 4]], [[3, 4], [5, 6]]],
    )


def test_other_page_examples() -> None:
    check(
        "GATHER_ELEMENTS",
        {
            "InputTensor": tensor(F32, [3, 3]),
            "IndicesTensor": tensor(U32, [2, 3]),
            "OutputTensor": tensor(F32, [2, 3]),
            "Axis": 0,
        },
        {
            "InputTensor": np.arange(1, 10, dtype=np.float32).reshape(3, 3),
            "IndicesTensor": np.array([[1, 2, 0], [2, 0, 0]], np.uint32),
        },
        [[4, 8, 3], [7, 2, 3]],
    )
    nd = {"InputDimensionCount": 2, "IndicesDimensionCount": 2}
    check(
        "GATHER_ND",
        {"InputTensor": tensor(F32, [2, 2]), "IndicesTensor": tensor(U32, [2, 1]), "OutputTensor": tensor(F32, [2, 2]), **nd},
        {"InputTensor": np.arange(4, dtype=np.float32).reshape(2, 2), "IndicesTensor": np.array([[1], [0]], np.uint32)},
        [[2, 3], [0, 1]],
    )
    check(
        "GATHER_ND",
        {
            "InputTensor": tensor(F32, [1, 2, 2, 2]),
            "IndicesTensor": tensor(U32, [1, 1, 2, 2]),
            "OutputTensor": tensor(F32, [1, 1, 2, 2]),
            "InputDimensionCount": 3,
            "IndicesDimensionCount": 2,
        },
        {
            "InputTensor": np.arange(8, dtype=np.float32).reshape(1, 2, 2, 2),
            "IndicesTensor": np.array([[[[0, 1], [1, 0]]]], np.uint32),
        },
        [[[[2, 3], [4, 5]]]],
    )
    check(
        "GATHER_ND1",
        {
            "InputTensor": tensor(F32, [1, 3, 2, 2]),
            "IndicesTensor": tensor(U32, [1, 3, 2, 2]),
            "OutputTensor": tensor(F32, [1, 1, 3, 2]),
            "InputDimensionCount": 3,
            "IndicesDimensionCount": 3,
            "BatchDimensionCount": 1,
        },
        {
            "InputTensor": np.arange(12, dtype=np.float32).reshape(1, 3, 2, 2),
            "IndicesTensor": np.array([[[[0, 0], [1, 1]], [[1, 1], [0, 0]], [[0, 1], [1, 0]]]], np.uint32),
        },
        [[[[0, 3], [7, 4], [9, 10]]]],
    )


def test_negative_and_out_of_range_as_directml() -> None:
    """Measured through DirectML's API: the row-major offset, the last element outside the input."""
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    fields = {
        "InputTensor": tensor(F32, [3, 4]),
        "IndicesTensor": tensor("INT32", [1, 4]),
        "OutputTensor": tensor(F32, [3, 4]),
        "Axis": 1,
        "IndexDimensions": 1,
    }
    check(
        "GATHER",
        fields,
        {"InputTensor": x, "IndicesTensor": np.array([[-1, -4, -5, 4]], np.int32)},
        [[3, 0, 11, 4], [7, 4, 3, 8], [11, 8, 7, 11]],
    )
    fields = {
        "InputTensor": tensor(F32, [5]),
        "IndicesTensor": tensor("UINT64", [4]),
        "OutputTensor": tensor(F32, [4]),
        "Axis": 0,
        "IndexDimensions": 1,
    }
    # UINT64: never negative (2**64 - 1 is past the end; DirectML reads it as -1: a finding)
    check(
        "GATHER",
        fields,
        {"InputTensor": np.arange(10, 15, dtype=np.float32), "IndicesTensor": np.array([4, 5, 2**63, 2**64 - 1], np.uint64)},
        [14, 14, 14, 14],
    )
    fields = {
        "InputTensor": tensor(F32, [3, 4]),
        "IndicesTensor": tensor("INT64", [5, 2]),
        "OutputTensor": tensor(F32, [1, 5]),
        "InputDimensionCount": 2,
        "IndicesDimensionCount": 2,
    }
    idx = np.array([[1, -1], [1, -4], [1, -5], [1, 4], [2**40, -(2**62)]], np.int64)
    check("GATHER_ND", fields, {"InputTensor": x, "IndicesTensor": idx}, [[7, 4, 3, 8, 11]])


def test_bits_moved_exactly() -> None:
    x = np.array([np.nan, -0.0, 1.0, np.inf], np.float32)
    x.view(np.uint32)[0] = 0x7FC12345  # a NaN payload
    fields = {
        "InputTensor": tensor(F32, [4]),
        "IndicesTensor": tensor(U32, [4]),
        "OutputTensor": tensor(F32, [4]),
        "Axis": 0,
        "IndexDimensions": 1,
    }
    got, ref = run("GATHER", fields, {"InputTensor": x, "IndicesTensor": np.array([1, 0, 0, 3], np.uint32)})
    assert got.view(np.uint32).tolist() == ref.view(np.uint32).tolist() == [0x80000000, 0x7FC12345, 0x7FC12345, 0x7F800000]
    big = np.array([2**53 + 1, -(2**63), 2**63 - 1], np.int64)
    fields = {
        "InputTensor": tensor("INT64", [3]),
        "IndicesTensor": tensor("INT32", [3]),
        "OutputTensor": tensor("INT64", [3]),
        "Axis": 0,
    }
    got, ref = run("GATHER_ELEMENTS", fields, {"InputTensor": big, "IndicesTensor": np.array([-3, 2, 1], np.int32)})
    assert got.tolist() == ref.tolist() == [2**53 + 1, 2**63 - 1, -(2**63)]


def test_refusals() -> None:
    base = {
        "InputTensor": tensor(F32, [3, 2]),
        "IndicesTensor": tensor(U32, [1, 2]),
        "OutputTensor": tensor(F32, [3, 2]),
        "Axis": 1,
        "IndexDimensions": 2,
    }
    e = refusal("GATHER", base)  # the page's example 3: {3, 1, 2} overflows 2 dimensions (DirectML refuses it too)
    assert e.path == ("desc", "OutputTensor", "Sizes") and "more than" in str(e)
    e = refusal("GATHER", {**base, "Axis": 2})
    assert e.path == ("desc", "Axis")
    e = refusal("GATHER", {**base, "IndicesTensor": tensor(U32, [2, 2]), "IndexDimensions": 1})
    assert e.path == ("desc", "IndicesTensor", "Sizes", 0)
    e = refusal("GATHER", {**base, "OutputTensor": tensor("INT32", [3, 2]), "IndexDimensions": 1})
    assert e.path == ("desc", "OutputTensor", "DataType")
    ge = {
        "InputTensor": tensor(F32, [3, 4]),
        "IndicesTensor": tensor(U32, [2, 4]),
        "OutputTensor": tensor(F32, [2, 4]),
        "Axis": 1,
    }
    e = refusal("GATHER_ELEMENTS", ge)
    assert e.path == ("desc", "IndicesTensor", "Sizes", 0)
    nd = {
        "InputTensor": tensor(F32, [1, 3, 4]),
        "IndicesTensor": tensor(U32, [1, 1, 3]),
        "OutputTensor": tensor(F32, [1, 1, 1]),
        "InputDimensionCount": 2,
        "IndicesDimensionCount": 1,
    }
    e = refusal("GATHER_ND", nd)
    assert e.path == ("desc", "IndicesTensor", "Sizes", 2)
    e = refusal("GATHER_ND", {**nd, "InputTensor": tensor(F32, [2, 3, 4])})
    assert e.path == ("desc", "InputTensor", "Sizes", 0)
    e = refusal(
        "GATHER_ND1", {**nd, "IndicesTensor": tensor(U32, [1, 1, 2]), "IndicesDimensionCount": 1, "BatchDimensionCount": 1}
    )
    assert e.path == ("desc", "BatchDimensionCount")


def guarded_model(op: str, fields: dict) -> onnx.ModelProto:
    """The `cuda` target's graph ("guarded"), with its If's condition as a second output."""
    d = parse_operator_desc(op, fields, ("desc",), ("type",))
    lowering.validate(d)
    assert "guarded" in choices.available(d, DEFAULT_OPSET, "cuda")
    model = lowering.lower(d, "t", target="cuda", variant="guarded")
    (branch,) = [n for n in model.graph.node if n.op_type == "If"]
    model.graph.output.append(helper.make_tensor_value_info(branch.input[0], TensorProto.BOOL, []))
    return model


def native_taken(op: str, fields: dict, feeds: dict) -> bool:
    """Whether the `cuda` graph takes its native branch on these inputs (the CPU EP), its result
    checked against the reference on the way."""
    model = guarded_model(op, fields)
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    got, taken = session.run(["OutputTensor", model.graph.output[-1].name], feeds)
    ref = registry.family(op).reference(parse_operator_desc(op, fields, ("desc",), ("type",)), feeds)
    assert got.tobytes() == ref.tobytes(), (got, ref)
    return bool(taken)


def test_guarded_only_on_the_cuda_target() -> None:
    ge = {
        "InputTensor": tensor(F32, [3, 4]),
        "IndicesTensor": tensor(U32, [3, 2]),
        "OutputTensor": tensor(F32, [3, 2]),
        "Axis": 1,
    }
    d = parse_operator_desc("GATHER_ELEMENTS", ge, ("desc",), ("type",))
    assert {t: choices.choose(d, t, DEFAULT_OPSET) for t in ("portable", "cpu", "cuda", "dml")} == {
        "portable": "flat",
        "cpu": "flat",
        "cuda": "guarded",
        "dml": "native",
    }
    (branch,) = [n for n in guarded_model("GATHER_ELEMENTS", ge).graph.node if n.op_type == "If"]
    bodies = {a.name: helper.get_attribute_value(a) for a in branch.attribute}
    then, otherwise = bodies["then_branch"], bodies["else_branch"]
    assert [n.op_type for n in then.node] == ["Cast", "GatherElements"]
    assert "GatherElements" not in {n.op_type for n in otherwise.node} and "Gather" in {n.op_type for n in otherwise.node}
    # a dimension of 2**24 or more: FLOAT32 no longer tells dim - 1 from dim
    for sizes, expected in (([2**24 - 1], ("flat", "guarded", "native", "masked")), ([2**24], ("flat", "native", "masked"))):
        fields = {
            "InputTensor": tensor(F32, sizes),
            "IndicesTensor": tensor(U32, [1]),
            "OutputTensor": tensor(F32, [1]),
            "Axis": 0,
            "IndexDimensions": 1,
        }
        assert choices.available(parse_operator_desc("GATHER", fields, ("desc",), ("type",)), DEFAULT_OPSET) == expected
    nd = {"InputTensor": tensor(F32, [2, 2]), "IndicesTensor": tensor(U32, [2, 1]), "OutputTensor": tensor(F32, [2, 2])}
    nd |= {"InputDimensionCount": 2, "IndicesDimensionCount": 2}
    assert choices.available(parse_operator_desc("GATHER_ND", nd, ("desc",), ("type",)), DEFAULT_OPSET) == ("flat", "native")
    assert choices.available(parse_operator_desc("GATHER_ND", nd, ("desc",), ("type",)), DEFAULT_OPSET, "cuda") == ("flat",)


@pytest.mark.parametrize("ep", EP_PARAMS)
@pytest.mark.parametrize("owned", [False, True], ids=["input", "owned"])
@pytest.mark.parametrize("index_type", ["INT32", "INT64", "UINT32", "UINT64"])
def test_masked_embedding_lookup_at_the_edges_of_the_range(index_type: str, owned: bool, ep: str) -> None:
    """ "masked" (an embedding lookup: nothing before Axis), every target's where it applies: no If, no
    reduction; each index in range reads its row, each one outside reads the input's last element in
    every place of its row, as DirectML (and "flat") do; every edge of every index type, bit for bit.
    A constant input (OWNED_BY_DML) takes the padded table: one Gather of the rows, no mask."""
    fields = {
        "InputTensor": tensor(F32, [1, 5, 3]) | ({"Flags": "DML_TENSOR_FLAG_OWNED_BY_DML"} if owned else {}),
        "IndicesTensor": tensor(index_type, [1, 1, 4]),
        "OutputTensor": tensor(F32, [1, 4, 3]),
        "Axis": 1,
        "IndexDimensions": 1,
    }
    d = make_desc("GATHER", fields)
    assert {choices.choose(d, t, DEFAULT_OPSET) for t in ("portable", "cpu", "cuda")} == {"masked"}
    cuda = lowering.lower(d, "t", target="cuda")
    clamp = [n.op_type for n in cuda.graph.node if n.op_type in ("Cast", "Clip")]
    if owned:  # the cuda target clamps INT64 indices with one INT64 Clip (the CPU EP's is wrong past 31 bits)
        widened = {"INT32": ["Cast", "Clip", "Cast"], "INT64": ["Clip"], "UINT32": ["Cast", "Clip"], "UINT64": ["Cast", "Clip"]}
        assert clamp == widened[index_type]
    # the cuda target's graph runs where it is meant to: on the CUDA EP
    for target in ("portable", "cuda") if ep == "cuda" else ("portable",):
        model = lowering.lower(d, "t", target=target)
        ops = [n.op_type for n in model.graph.node]
        assert not {"If", "ReduceMax", "ReduceMin"} & set(ops)
        assert (ops.count("Gather"), "Where" in ops, "GatherElements" in ops) == ((2, False, False) if owned else (1, True, True))
        session = runtime.create(model, "t", ep)
        x = np.arange(15, dtype=np.float32).reshape(1, 5, 3)
        x.view(np.uint32)[0, 4, 2] = 0x7FC12345  # the last element, read by every index out of range: a NaN payload
        x[0, 1, 1] = -0.0
        dtype = np.dtype(index_type.lower())
        for values, _ in EDGES[index_type]:
            feeds = {"InputTensor": x, "IndicesTensor": np.array(values, dtype).reshape(1, 1, 4)}
            got, want = session.run(feeds), registry.family("GATHER").reference(d, feeds)
            assert got.tobytes() == want.tobytes(), (target, values)  # moved, never selected: -0.0 and the payload kept
            outside = [k for k, v in enumerate(values) if not (-5 <= v < 5 if dtype.kind == "i" else v < 5)]
            assert all(np.isnan(want[0, k]).all() for k in outside), values


EDGES = {  # (indices, native branch taken) for a dimension of 5
    "INT32": [
        ([-5, 4, 0, -1], True),
        ([-6, 0, 0, 0], False),
        ([5, 0, 0, 0], False),
        ([-(2**31), 0, 0, 0], False),
        ([2**31 - 1, 0, 0, 0], False),
    ],
    "INT64": [([-5, 4, 0, -1], True), ([-6, 0, 0, 0], False), ([5, 0, 0, 0], False), ([-(2**63), 2**63 - 1, 0, 0], False)],
    "UINT32": [([4, 0, 3, 1], True), ([5, 0, 0, 0], False), ([2**32 - 1, 0, 0, 0], False)],
    "UINT64": [([4, 0, 3, 1], True), ([5, 0, 0, 0], False), ([2**63, 0, 0, 0], False), ([2**64 - 1, 0, 0, 0], False)],
}


@pytest.mark.parametrize("index_type", list(EDGES))
@pytest.mark.parametrize("op", ["GATHER", "GATHER_ELEMENTS"])
def test_guard_at_the_edges_of_the_range(op: str, index_type: str) -> None:
    """[-dim, dim) for signed indices, [0, dim) for unsigned: exactly these take the native node;
    both branches give DirectML's result (outside: the next row, the last element)."""
    x = np.arange(15, dtype=np.float32).reshape(3, 5)
    if op == "GATHER":
        fields = {"IndicesTensor": tensor(index_type, [1, 4]), "OutputTensor": tensor(F32, [3, 4]), "IndexDimensions": 1}
    else:
        fields = {"IndicesTensor": tensor(index_type, [3, 4]), "OutputTensor": tensor(F32, [3, 4])}
    fields |= {"InputTensor": tensor(F32, [3, 5]), "Axis": 1}
    dtype = np.dtype(index_type.lower())
    for values, native in EDGES[index_type]:
        idx = np.array(values, dtype).reshape(1, 4)
        idx = idx if op == "GATHER" else np.repeat(idx, 3, axis=0)
        assert native_taken(op, fields, {"InputTensor": x, "IndicesTensor": idx}) == native, values


def test_guarded_scalar_index() -> None:
    """IndexDimensions 0: Gather takes one scalar index (the axis dropped, then OutputTensor's Sizes)."""
    fields = {
        "InputTensor": tensor(F32, [1, 3, 4]),
        "IndicesTensor": tensor("INT64", [1, 1, 1]),
        "OutputTensor": tensor(F32, [1, 1, 4]),
        "Axis": 1,
        "IndexDimensions": 0,
    }
    x = np.arange(12, dtype=np.float32).reshape(1, 3, 4)
    for index, native in ((-3, True), (2, True), (3, False), (-4, False)):
        feeds = {"InputTensor": x, "IndicesTensor": np.full((1, 1, 1), index, np.int64)}
        assert native_taken("GATHER", fields, feeds) == native, index


@pytest.mark.parametrize(("bound", "float_type"), gather.GUARD_TYPES)
def test_guard_next_to_its_limits(bound: int, float_type: dtypes.DataType) -> None:
    """dim = bound - 1, the largest compared in FLOAT32, and dim = bound, the smallest past it
    (the flat lowering): the guard still tells dim - 1 from dim and
    -dim from -dim - 1, and dim + 2 (which rounds to dim + 1) from anything in range."""
    for dim in (bound - 1, bound):
        fields = {
            "InputTensor": tensor(F32, [dim]),
            "IndicesTensor": tensor("INT32", [3]),
            "OutputTensor": tensor(F32, [3]),
            "Axis": 0,
            "IndexDimensions": 1,
        }
        if dim >= gather.GUARD_TYPES[-1][0]:
            assert "guarded" not in choices.available(make_desc("GATHER", fields), DEFAULT_OPSET, "cuda")
            continue
        if dim < bound:
            (cast,) = [n for n in guarded_model("GATHER", fields).graph.node if n.op_type == "Cast"]
            assert helper.get_attribute_value(cast.attribute[0]) == float_type.onnx
        x = np.arange(dim, dtype=np.float32)
        for values, native in (
            ([dim - 1, -dim, 0], True),
            ([dim, 0, 0], False),
            ([-dim - 1, 0, 0], False),
            ([dim + 2, 0, 0], False),
            ([0, -dim - 2, 0], False),
        ):
            idx = np.array(values, np.int32)
            assert native_taken("GATHER", fields, {"InputTensor": x, "IndicesTensor": idx}) == native, (dim, values)


ND = {"InputDimensionCount": 2, "IndicesDimensionCount": 2}
# One desc of each operator ([3, 4] FLOAT32 input), with the index type left to fill in
NATIVE_DESCS = {
    "GATHER": {"IndicesTensor": [1, 8], "OutputTensor": [3, 8], "Axis": 1, "IndexDimensions": 1},
    "GATHER_ELEMENTS": {"IndicesTensor": [2, 4], "OutputTensor": [2, 4], "Axis": 0},
    "GATHER_ND": {"IndicesTensor": [8, 1], "OutputTensor": [8, 4], **ND},
    "GATHER_ND1": {"IndicesTensor": [3, 1], "OutputTensor": [1, 3], **ND, "BatchDimensionCount": 1},
    "SCATTER": {"IndicesTensor": [2, 4], "UpdatesTensor": [2, 4], "OutputTensor": [3, 4], "Axis": 0},
    "SCATTER_ND": {"IndicesTensor": [4, 2], "UpdatesTensor": [1, 4], "OutputTensor": [3, 4], **ND},
}


def native_desc(op: str, index_type: str) -> dict:
    fields = {"InputTensor": tensor(F32, [3, 4])}
    for name, value in NATIVE_DESCS[op].items():
        fields[name] = tensor(index_type if name == "IndicesTensor" else F32, value) if isinstance(value, list) else value
    return fields


def op_types(op: str, fields: dict, target: str = "dml", opset: int = DEFAULT_OPSET) -> list[str]:
    return [n.op_type for n in lowering.lower(make_desc(op, fields), "t", opset=opset, target=target).graph.node]


@pytest.mark.parametrize("op", list(NATIVE_DESCS))
def test_native_on_the_dml_target(op: str) -> None:
    """The `dml` target's graph is the ONNX node the DirectML EP turns back into the operator,
    with Reshapes around it and the indices Cast where ONNX's node does not take their type
    (UINT32, UINT64; GatherND and ScatterND take INT64 only); no other target offers it."""
    node = gather.DML_NATIVE[op]
    for index_type in ("INT32", "INT64", "UINT32", "UINT64"):
        fields = native_desc(op, index_type)
        d = make_desc(op, fields)
        assert choices.choose(d, "dml", DEFAULT_OPSET) == "native"
        types = op_types(op, fields)
        assert types.count(node) == 1 and set(types) <= {node, "Reshape", "Cast"}, types
        cast = index_type != "INT64" and not (index_type == "INT32" and node in ("Gather", "GatherElements", "ScatterElements"))
        assert ("Cast" in types) == cast, (index_type, types)
        for target in ("portable", "cpu", "cuda"):
            assert "native" not in choices.available(d, DEFAULT_OPSET, target)
            with pytest.raises(UsageError, match="'native' does not apply"):
                lowering.lower(d, "t", target=target, variant="native")


def test_native_refused_where_the_directml_ep_has_no_kernel() -> None:
    """The DirectML EP registers ScatterElements and ScatterND to opset 17: from 18 the `dml`
    target keeps the flat lowering for SCATTER and SCATTER_ND (which the static check refuses too,
    README); Gather, GatherElements and GatherND are registered at every opset."""
    for op in NATIVE_DESCS:
        d = make_desc(op, native_desc(op, "INT32"))
        for opset in (13, 17, 18, 21):
            native = opset <= 17 or not op.startswith("SCATTER")
            assert choices.choose(d, "dml", opset) == ("native" if native else "flat"), (op, opset)
            assert ("Where" not in op_types(op, native_desc(op, "INT32"), opset=opset)) == native  # flat: Where
    with pytest.raises(UsageError, match="'native' does not apply"):
        lowering.lower(make_desc("SCATTER", native_desc("SCATTER", "INT32")), "t", opset=18, target="dml", variant="native")


def test_native_one_tuple_keeps_a_dimension() -> None:
    """IndicesDimensionCount 1 (one tuple): GatherND's indices keep a leading 1, so its output is
    not a scalar (the DirectML EP refuses that one: 80070057 Invalid parameter, measured)."""
    fields = {"InputTensor": tensor(F32, [3]), "IndicesTensor": tensor("INT64", [1]), "OutputTensor": tensor(F32, [1])}
    fields |= {"InputDimensionCount": 1, "IndicesDimensionCount": 1}
    model = lowering.lower(make_desc("GATHER_ND", fields), "t", target="dml")
    inferred = onnx.shape_inference.infer_shapes(model).graph
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim] for v in [*inferred.value_info, *inferred.output]}
    (node,) = [n for n in model.graph.node if n.op_type == "GatherND"]
    assert shapes[node.input[1]] == [1, 1] and shapes[node.output[0]] == [1]
    x = np.array([5, 6, 7], np.float32)
    got = runtime.create(model, "t", "cpu").run({"InputTensor": x, "IndicesTensor": np.array([-1], np.int64)})
    assert got.tolist() == [7]


# Indices past 32 bits, on a [3, 4] input of 100 + its offsets: what DirectML's API computed
# (dmlapi, hide_int64), minus 100 (SCATTER: the updates are 500 + their position). Each index's
# low 32 bits enter a 32-bit offset (modulo 2**32: UINT32 2**32 - 1 on row 1 of GATHER reads offset
# 4 - 1 = 3, 2**31 rows of 4 are offset 0), which the reference (whole indices) does not model:
# tests/dml_findings.py's 64-bit finding, for UINT32 too. "native" on the DirectML EP is DirectML's operator.
INDICES_PAST_32_BITS = {
    "INT64": [2**31, -(2**31) - 1, 2**32 + 1, 2**32 - 1, -(2**32) + 1, 2**63 - 1, -(2**63), 2**31 + 2],
    "UINT32": [2**31, 2**31 + 1, 2**32 - 1, 2**32 - 4, 2**32 - 3, 3, 4, 5],
    "UINT64": [2**63, 2**64 - 1, 2**64 - 3, 2**32 + 1, 2**32 - 1, 2**31, 2**63 + 1, 2],
}
DIRECTML_PAST_32_BITS = {
    ("GATHER", "UINT32"): [[11, 11, 11, 11, 11, 3, 4, 5], [11, 11, 3, 0, 1, 7, 8, 9], [11, 11, 7, 4, 5, 11, 11, 11]],
    ("GATHER", "INT64"): [[11, 11, 1, 11, 5, 11, 4, 11], [11, 11, 5, 3, 9, 3, 8, 11], [11, 11, 9, 7, 11, 7, 11, 11]],
    ("GATHER", "UINT64"): [[4, 3, 1, 1, 11, 11, 5, 2], [8, 7, 5, 5, 3, 11, 9, 6], [11, 11, 9, 9, 7, 11, 11, 10]],
    ("GATHER_ELEMENTS", "UINT64"): [[11, 9, 2, 7], [11, 1, 11, 11]],
    ("GATHER_ND", "UINT32"): [[0, 1, 2, 3], [4, 5, 6, 7]] + [[11] * 4] * 6,
    ("SCATTER", "UINT32"): [[400, 1, 2, 3], [4, 401, 6, 7], [8, 9, 10, 11]],
    ("SCATTER_ND", "INT64"): [[0, 1, 2, 401], [4, 5, 6, 7], [8, 9, 10, 11]],
}


@pytest.mark.dml
@pytest.mark.skipif(winhost.missing() is not None, reason=f"the DirectML EP under Wine is not set up: {winhost.SETUP_HINT}")
@pytest.mark.parametrize(("op", "index_type"), list(DIRECTML_PAST_32_BITS))
def test_native_on_the_directml_ep_past_32_bits(op: str, index_type: str) -> None:
    """On the DirectML EP "native" computes what DirectML's API computed for indices past 32 bits
    (where the reference, and so the flat lowering, differ)."""
    fields = native_desc(op, index_type)
    d = make_desc(op, fields)
    idx = np.array(INDICES_PAST_32_BITS[index_type], np.dtype(index_type.lower())).reshape(fields["IndicesTensor"]["Sizes"])
    feeds = {"InputTensor": np.arange(12, dtype=np.float32).reshape(3, 4) + 100, "IndicesTensor": idx}
    if op.startswith("SCATTER"):
        feeds["UpdatesTensor"] = (np.arange(8, dtype=np.float32) + 500)[: d.tensor("UpdatesTensor").element_count].reshape(
            fields["UpdatesTensor"]["Sizes"]
        )
    got = runtime.create(lowering.lower(d, "t", target="dml"), "t", "dml").run(feeds)
    want = np.array(DIRECTML_PAST_32_BITS[op, index_type], np.float32) + 100
    assert got.tolist() == want.tolist()
    assert registry.family(op).reference(d, feeds).tolist() != want.tolist()


@SETTINGS
@given(
    op=st.sampled_from(("GATHER", "GATHER_ELEMENTS", "GATHER_ND", "GATHER_ND1")),
    rank=st.integers(1, 8),
    type_index=st.integers(0, 10),
    index_index=st.integers(0, 3),
    outside=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
    target=st.sampled_from(("portable", "cuda", "dml")),
)
def test_property_against_reference(
    op: str, rank: int, type_index: int, index_index: int, outside: bool, seed: int, target: str
) -> None:
    """`dml`: indices in range only (the CPU EP's nodes refuse others; the DirectML EP matrix
    runs them)."""
    outside = outside and target != "dml"
    table = OPERATORS[op].support[0].tensors
    dtype = table["InputTensor"].types[type_index % len(table["InputTensor"].types)]
    index = table["IndicesTensor"].types[index_index]
    fields = _fields(op, dtype, index, rank)
    if fields is None:
        return
    rng = np.random.default_rng(seed)
    feeds = {
        "InputTensor": bits(rng, dtype, tuple(fields["InputTensor"]["Sizes"])),
        "IndicesTensor": index_values(rng, index, _dims(op, fields), outside),
    }
    got, ref = run(op, fields, feeds, target)
    assert got.tobytes() == ref.tobytes()
