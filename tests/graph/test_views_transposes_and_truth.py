"""graph/views.fold, two of its rewrites: a Reshape that only adds or drops dimensions of 1 beside a
Transpose folds into the permutation (_unit_views_into_transposes); an integer Clip read only as
truth values goes (_drop_clips_read_as_truth). Each keeps every value the graph outputs."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from dml2onnx.graph import views


def _model(
    nodes: list[onnx.NodeProto],
    inputs: dict[str, tuple[int, list[int]]],
    outputs: dict[str, tuple[int, list[int]]],
    consts: dict[str, np.ndarray],
) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(k, t, s) for k, (t, s) in inputs.items()],
        [helper.make_tensor_value_info(k, t, s) for k, (t, s) in outputs.items()],
        [numpy_helper.from_array(v, k) for k, v in consts.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)


def _folded(model: onnx.ModelProto) -> onnx.ModelProto:
    folded = views.fold(onnx.shape_inference.infer_shapes(model))
    onnx.checker.check_model(folded, full_check=True)
    onnx.shape_inference.infer_shapes(folded, check_type=True, strict_mode=True)
    return folded


def _heads(split: list[int], perm: list[int], after: list[int], x: list[int]) -> onnx.ModelProto:
    nodes = [
        helper.make_node("Reshape", ["x", "split"], ["heads"], name="split"),
        helper.make_node("Transpose", ["heads"], ["moved"], name="move", perm=perm),
        helper.make_node("Reshape", ["moved", "after"], ["y"], name="after"),
    ]
    consts = {"split": np.array(split, np.int64), "after": np.array(after, np.int64)}
    return _model(nodes, {"x": (TensorProto.FLOAT, x)}, {"y": (TensorProto.FLOAT, after)}, consts)


@pytest.mark.parametrize(
    ("x", "split", "perm", "after", "kept"),
    [
        # GPT-2's heads out of a Split: [1, 1, 16, 64] -> [16, 4, 16] -> [4, 16, 16] -> DirectML's [1, 4, 16, 16]
        ([1, 1, 16, 64], [16, 4, 16], [1, 0, 2], [1, 4, 16, 16], ["Reshape", "Transpose"]),
        # K for Q x K^T: the heads' dimension first, the sequence last
        ([1, 1, 16, 64], [16, 4, 16], [1, 2, 0], [1, 4, 16, 16], ["Reshape", "Transpose"]),
        # the heads merged back: DirectML's [1, 4, 16, 16] as [4, 16, 16], moved, [16, 64]
        ([1, 4, 16, 16], [4, 16, 16], [1, 0, 2], [16, 64], ["Transpose", "Reshape"]),
        # neither side only 1s: both stay
        ([2, 12], [4, 6], [1, 0], [3, 8], ["Reshape", "Transpose", "Reshape"]),
    ],
)
def test_a_transpose_takes_in_the_views_of_1s_beside_it(
    x: list[int], split: list[int], perm: list[int], after: list[int], kept: list[str]
) -> None:
    model = _heads(split, perm, after, x)
    feeds = {"x": np.arange(np.prod(x), dtype=np.float32).reshape(x)}
    folded = _folded(model)
    assert [n.op_type for n in folded.graph.node] == kept
    np.testing.assert_array_equal(_run(folded, feeds)[0], _run(model, feeds)[0])


@st.composite
def _transposes(draw: st.DrawFn) -> tuple[list[int], list[int], list[int], list[int]]:
    """A tensor's dimensions, a view of them with 1s added or dropped (or merged, split), a permutation,
    and a view of its result likewise."""
    big = draw(st.lists(st.integers(2, 4), min_size=1, max_size=4))

    def with_ones(dims: list[int]) -> list[int]:
        out = list(dims)
        for _ in range(draw(st.integers(0, 2))):
            out.insert(draw(st.integers(0, len(out))), 1)
        return out

    x = with_ones([int(np.prod(big))] if draw(st.booleans()) else big)
    middle = with_ones(big)
    perm = draw(st.permutations(range(len(middle))))
    moved = [middle[k] for k in perm]
    after = with_ones([d for d in moved if d != 1]) if draw(st.booleans()) else [int(np.prod(moved))]
    return x, middle, list(perm), after


@settings(max_examples=60, deadline=None)
@given(_transposes())
def test_folding_views_into_a_transpose_keeps_every_element_in_place(
    case: tuple[list[int], list[int], list[int], list[int]],
) -> None:
    x, middle, perm, after = case
    model = _heads(middle, perm, after, x)
    feeds = {"x": np.arange(np.prod(x), dtype=np.float32).reshape(x)}
    folded = _folded(model)
    moved = [middle[k] for k in perm]
    ones_only = [d for d in after if d != 1] == [d for d in moved if d != 1] or [d for d in x if d != 1] == [
        d for d in middle if d != 1
    ]
    assert len(folded.graph.node) <= (2 if ones_only else 3)
    got, want = _run(folded, feeds)[0], _run(model, feeds)[0]
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def _clip_then_truth(dtype: int, lo: int, hi: int, reader: str = "Cast") -> onnx.ModelProto:
    """DirectML's attention mask: a UINT8 mask clipped to [lo, hi], read by a Gather of its rows and a
    Cast to BOOL (or another `reader` after the Gather)."""
    np_type = helper.tensor_dtype_to_np_dtype(dtype)
    last = (
        helper.make_node("Cast", ["rows"], ["y"], name="truth", to=TensorProto.BOOL)
        if reader == "Cast"
        else helper.make_node(reader, ["rows", "rows"], ["y"], name="sum")
    )
    nodes = [
        helper.make_node("Clip", ["mask", "lo", "hi"], ["clipped"], name="clip"),
        helper.make_node("Reshape", ["clipped", "flat"], ["flat_mask"], name="flat"),
        helper.make_node("Gather", ["flat_mask", "index"], ["rows"], name="gather"),
        last,
    ]
    consts = {
        "lo": np.array(lo, np_type),
        "hi": np.array(hi, np_type),
        "flat": np.array([8], np.int64),
        "index": np.array([[0, 1, 2, 3], [4, 5, 6, 7]], np.int64),
    }
    out = TensorProto.BOOL if reader == "Cast" else dtype
    return _model(nodes, {"mask": (dtype, [2, 4])}, {"y": (out, [2, 4])}, consts)


@pytest.mark.parametrize(
    ("dtype", "lo", "hi", "goes"),
    [
        (TensorProto.UINT8, 0, 1, True),  # DirectML's CLIP of the UINT8 mask to [0, 1]
        (TensorProto.UINT8, 0, 200, True),
        (TensorProto.INT32, -1, 1, True),
        (TensorProto.INT32, 0, 1, False),  # -5 would read false
        (TensorProto.UINT8, 1, 1, False),  # 0 would read true
        (TensorProto.INT64, -3, 0, False),  # 7 would read false
    ],
)
def test_an_integer_clip_read_as_truth_goes_where_it_keeps_each_truth(dtype: int, lo: int, hi: int, goes: bool) -> None:
    model = _clip_then_truth(dtype, lo, hi)
    np_type = helper.tensor_dtype_to_np_dtype(dtype)
    values = [0, 1, 2, 255, 7, 0, 9, 1] if np_type == np.uint8 else [0, 1, -5, 300, -256, 0, 7, -1]
    feeds = {"mask": np.array(values, np_type).reshape(2, 4)}
    folded = _folded(model)
    assert ("Clip" not in [n.op_type for n in folded.graph.node]) == goes
    np.testing.assert_array_equal(_run(folded, feeds)[0], _run(model, feeds)[0])


def test_a_clip_whose_values_are_read_as_numbers_stays() -> None:
    folded = _folded(_clip_then_truth(TensorProto.UINT8, 0, 1, reader="Add"))
    assert "Clip" in [n.op_type for n in folded.graph.node]
