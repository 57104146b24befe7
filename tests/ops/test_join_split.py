"""JOIN and SPLIT (dml2onnx/ops/join.py, split.py): the first operators with tensor arrays
(InputTensors, OutputTensors: one bind point `Field[i]` per element, bound as an array of
resources). DxDispatch's own examples, bit-exact data movement on every target, validation
refusals, and random shapes against the reference; the matrix (dml2onnx/cases/join_split.py) runs
them on every EP present and through DirectML's API."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dml2onnx import lowering
from dml2onnx.backends import dmlapi, runtime
from dml2onnx.cases.join_split import bit_patterns
from dml2onnx.core import dtypes, operator_table
from dml2onnx.core.errors import format_path
from dml2onnx.graph import dml_ep
from dml2onnx.graph.builder import DEFAULT_OPSET
from dml2onnx.lowering import choices
from dml2onnx.ops import registry
from strategies import SEEDS
from support import EPS, every_output, make_desc, printed, refusal, run_cli, tensor

MODEL = Path(__file__).parents[2] / "models" / "join_split.json"
TYPES = [t.name for t in operator_table.OPERATORS["JOIN"].support[0].tensors["InputTensors"].types]


def join_fields(dtype: str, parts: list[list[int]], axis: int) -> dict[str, Any]:
    whole = list(parts[0])
    whole[axis] = sum(p[axis] for p in parts)
    return {
        "InputCount": len(parts),
        "InputTensors": [tensor(dtype, p) for p in parts],
        "OutputTensor": tensor(dtype, whole),
        "Axis": axis,
    }


def split_fields(dtype: str, parts: list[list[int]], axis: int) -> dict[str, Any]:
    j = join_fields(dtype, parts, axis)
    return {"InputTensor": j["OutputTensor"], "OutputCount": len(parts), "OutputTensors": j["InputTensors"], "Axis": axis}


def bytes_everywhere(op: str, fields: dict[str, Any], feeds: dict[str, np.ndarray], ep: str = "cpu") -> dict[str, np.ndarray]:
    """The reference's outputs, after checking that every target's graph (the dml one statically)
    gives their exact bytes on `ep`."""
    desc = make_desc(op, fields)
    want = registry.reference_outputs(desc, feeds)
    for variant in choices.available(desc, DEFAULT_OPSET):
        for target in ("portable", "cpu", "cuda", "dml"):
            model = lowering.lower(desc, "t", target=target, variant=variant)
            if target in ("portable", "dml"):
                assert dml_ep.check(model) == [], (target, variant)
            if target in ("portable", ep):
                got = every_output(runtime.create(model, "t", ep), desc, feeds)
                assert {k: v.tobytes() for k, v in got.items()} == {k: v.tobytes() for k, v in want.items()}, target
    return want


def test_dxdispatch_examples_print_what_dxdispatch_prints() -> None:
    """dml_join binds its InputTensors as an array of three resources (two windows of one); dml_split
    its OutputTensors to three resources."""
    code, out, err = run_cli("run", str(MODEL))
    assert code == 0, err
    assert {k: v for k, v in printed(out).items() if k != "joined"} == {
        "Out": [1, 2, 3, 100, 115, 5, 6, 7, 8, 9],
        "Out1": [1, 2],
        "Out2": [3, 4],
        "Out3": [5, 6],
    }
    # INT64 beyond 2**53, printed exactly (printed() reads floats)
    assert "Resource 'joined': 9007199254740993, -9007199254740995, 7, 4611686018427387905, -4611686018427387907, -7" in out


def test_graphs_name_array_elements_as_bind_points() -> None:
    join = lowering.lower(make_desc("JOIN", join_fields("FLOAT32", [[2, 1], [2, 3]], 1)), "j")
    assert [i.name for i in join.graph.input] == ["InputTensors[0]", "InputTensors[1]"]
    assert [o.name for o in join.graph.output] == ["OutputTensor"]
    split = lowering.lower(make_desc("SPLIT", split_fields("FLOAT32", [[2, 1], [2, 3]], 1)), "s")
    assert [o.name for o in split.graph.output] == ["OutputTensors[0]", "OutputTensors[1]"]
    assert [n.op_type for n in join.graph.node] == ["Concat"] and [n.op_type for n in split.graph.node] == ["Split"]


@pytest.mark.parametrize("dtype", TYPES)
def test_every_type_bit_for_bit(dtype: str) -> None:
    rng = np.random.default_rng(3)
    parts = [[2, 1, 3], [2, 4, 3], [2, 2, 3]]
    feeds = {f"InputTensors[{i}]": bit_patterns(rng, tuple(p), dtypes.BY_NAME[dtype]) for i, p in enumerate(parts)}
    joined = bytes_everywhere("JOIN", join_fields(dtype, parts, 1), feeds)["OutputTensor"]
    back = bytes_everywhere("SPLIT", split_fields(dtype, parts, 1), {"InputTensor": joined})
    assert [back[f"OutputTensors[{i}]"].tobytes() for i in range(3)] == [feeds[f"InputTensors[{i}]"].tobytes() for i in range(3)]


BASE = join_fields("FLOAT32", [[2, 3], [2, 1]], 1)


@pytest.mark.parametrize(
    ("op", "fields", "path", "text"),
    [
        ("JOIN", BASE | {"Axis": 2}, "desc.Axis", "less than the tensors' DimensionCount (2)"),
        ("JOIN", BASE | {"OutputTensor": tensor("FLOAT32", [2, 5])}, "desc.OutputTensor.Sizes[1]", "must be 4, the sum"),
        (
            "JOIN",
            BASE | {"InputTensors": [tensor("FLOAT32", [2, 3]), tensor("FLOAT32", [3, 1])]},
            "desc.InputTensors[1].Sizes[0]",
            "only Axis 1 may differ",
        ),
        (
            "JOIN",
            BASE | {"InputTensors": [tensor("FLOAT32", [2, 3]), tensor("INT32", [2, 1])]},
            "desc.InputTensors[1]",
            "DataType",
        ),
        ("JOIN", BASE | {"InputCount": 3}, "desc.InputCount", "InputCount is 3 but InputTensors has 2 elements"),
        ("JOIN", BASE | {"InputCount": 0, "InputTensors": []}, "desc.InputTensors", "at least one tensor desc"),
        (
            "JOIN",
            BASE | {"InputTensors": [tensor("FLOAT32", [2, 3]), tensor("FLOAT32", [2, 1, 1, 1, 1, 1, 1, 1, 1])]},
            "desc.InputTensors[1]",
            "",
        ),
        ("SPLIT", split_fields("FLOAT32", [[2, 3], [2, 1]], 1) | {"Axis": 5}, "desc.Axis", "less than"),
        (
            "SPLIT",
            split_fields("FLOAT32", [[2, 3], [2, 1]], 1) | {"InputTensor": tensor("FLOAT32", [2, 7])},
            "desc.InputTensor.Sizes[1]",
            "must be 4, the sum of the OutputTensors' sizes",
        ),
    ],
)
def test_refusals(op: str, fields: dict[str, Any], path: str, text: str) -> None:
    e = refusal(op, fields)
    assert format_path(e.path).startswith(path) and text in str(e), (format_path(e.path), str(e))


def test_feature_levels_check_each_array_element() -> None:
    fields = join_fields("INT8", [[1, 1, 2, 2], [1, 2, 2, 2]], 1)
    e = refusal("JOIN", fields, level="2_0")
    assert format_path(e.path) == "desc.InputTensors[0].DataType" and "feature level 2_1 allows it" in str(e), str(e)


def test_array_bindings_are_checked(tmp_path: Path) -> None:
    model = json.loads(MODEL.read_text().split("\n", 4)[4])
    model["commands"][0]["bindings"]["InputTensors"] = ["A", "B"]
    path = tmp_path / "m.json"
    path.write_text(json.dumps(model))
    code, _, err = run_cli("run", str(path))
    assert code == 2 and "commands[0].bindings.InputTensors" in err and "requires 3 resources" in err, err
    model["commands"][0]["bindings"]["InputTensors"] = "A"
    path.write_text(json.dumps(model))
    code, _, err = run_cli("run", str(path))
    assert code == 2 and "requires 3 resources (an array, as in the desc), but one was bound" in err, err
    del model["commands"][0]["bindings"]["InputTensors"]
    path.write_text(json.dumps(model))
    code, _, err = run_cli("run", str(path))
    assert code == 2 and "InputTensors[0] of 'join' is not bound" in err, err
    model["commands"][0]["bindings"]["InputTensors"] = ["A", "B", {"name": "A", "elementOffset": 8}]  # 2 elements left, 5 needed
    path.write_text(json.dumps(model))
    code, _, err = run_cli("run", str(path))
    assert code == 2 and "commands[0].bindings.InputTensors[2]" in err and "needs 20" in err, err


@st.composite
def drawn(draw: st.DrawFn) -> tuple[str, list[list[int]], int, int]:
    rank = draw(st.integers(1, 8))
    axis = draw(st.integers(0, rank - 1))
    base = [draw(st.integers(1, 3)) for _ in range(rank)]
    count = draw(st.integers(1, 4))
    parts = [base[:axis] + [draw(st.integers(1, 3))] + base[axis + 1 :] for _ in range(count)]
    return draw(st.sampled_from(TYPES)), parts, axis, draw(SEEDS)


@EPS
@settings(max_examples=40, deadline=None)
@given(case=drawn())
def test_random_joins_and_splits_move_every_bit(ep: str, case: tuple[str, list[list[int]], int, int]) -> None:
    dtype, parts, axis, seed = case
    rng = np.random.default_rng(seed)
    feeds = {f"InputTensors[{i}]": bit_patterns(rng, tuple(p), dtypes.BY_NAME[dtype]) for i, p in enumerate(parts)}
    joined = bytes_everywhere("JOIN", join_fields(dtype, parts, axis), feeds, ep)["OutputTensor"]
    assert joined.tobytes() == np.concatenate(list(feeds.values()), axis=axis).tobytes()
    bytes_everywhere("SPLIT", split_fields(dtype, parts, axis), {"InputTensor": joined}, ep)


_why = dmlapi.missing()


@pytest.mark.skipif(_why is not None, reason=f"DirectML's API under Wine is not set up ({_why})")
def test_directml_moves_every_bit() -> None:
    rng = np.random.default_rng(9)
    for dtype in ("FLOAT32", "FLOAT16", "FLOAT64", "UINT64", "INT8"):
        parts = [[2, 3, 1], [2, 3, 2]]
        feeds = {f"InputTensors[{i}]": bit_patterns(rng, tuple(p), dtypes.BY_NAME[dtype]) for i, p in enumerate(parts)}
        desc = make_desc("JOIN", join_fields(dtype, parts, 2))
        got = dmlapi.execute(desc, feeds).outputs["OutputTensor"]
        assert got.tobytes() == np.concatenate(list(feeds.values()), axis=2).tobytes(), dtype
        split = make_desc("SPLIT", split_fields(dtype, parts, 2))
        outs = dmlapi.execute(split, {"InputTensor": got}).outputs
        assert [outs[f"OutputTensors[{i}]"].tobytes() for i in range(2)] == [v.tobytes() for v in feeds.values()], dtype
