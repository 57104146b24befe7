"""DML_OPERATOR_TILE: OutputTensor[c] = InputTensor[c mod InputTensor.Sizes] (each dimension
repeated Repeats[i] times; OutputTensor.Sizes[i] = InputTensor.Sizes[i] * Repeats[i]). Rules: the
same DataType and DimensionCount, RepeatsCount = DimensionCount, every repeat at least 1, the
output's sizes (DirectML's CreateOperator refuses the others: E_INVALIDARG, measured).

Lowerings (byte moves, exact for every type): "expand" reshapes the input so that a unit
dimension precedes each repeated one (untouched neighbours merged) and Expands it, at most 8
dimensions a step (the CUDA and DirectML EPs' limit), every type on every EP; "tile" is ONNX Tile,
which the CUDA EP has for FLOAT32, FLOAT16, FLOAT64, INT32 and INT64 only (other types take
"expand"; so does FLOAT16, whose CPU EP Tile quiets signaling NaNs), and which the DirectML EP
maps back onto DML_TILE for every type (DmlOperatorTile.cpp): the `dml` target emits it
(DML_PREFERENCE).
"""

from __future__ import annotations

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.errors import ModelError
from dml2onnx.core.schema import OperatorSchema
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.graph.targets import DML_NODE_DOC
from dml2onnx.ops import common
from dml2onnx.ops.family import Family

CANDIDATES = ("expand", "tile")  # choices.py
DML_PREFERENCE = ("tile",)
# The CUDA EP's Tile types (FLOAT16 too, but the CPU EP's FLOAT16 Tile quiets a signaling NaN: 0x7D01
# becomes 0x7F01), which every EP moves bit for bit
TILE_TYPES = (dtypes.FLOAT32, dtypes.FLOAT64, dtypes.INT32, dtypes.INT64)
MAX_RANK = 8


def validate(desc: OperatorDesc) -> None:
    common.check_same_type(desc, "OutputTensor", "InputTensor")
    common.check_same_rank(desc, "OutputTensor", "InputTensor")
    x, out = desc.tensor("InputTensor"), desc.tensor("OutputTensor")
    if desc["RepeatsCount"] != x.rank:
        raise ModelError(desc.at("RepeatsCount"), f"must be InputTensor's DimensionCount ({x.rank}), not {desc['RepeatsCount']}")
    for i, (n, r, o) in enumerate(zip(x.sizes, desc["Repeats"], out.sizes, strict=True)):
        if r < 1:
            raise ModelError(desc.at("Repeats", i), "a repeat must be at least 1")
        if o != n * r:
            raise ModelError(
                desc.at("OutputTensor", "Sizes", i),
                f"must be InputTensor.Sizes[{i}] * Repeats[{i}] ({n} * {r} = {n * r}), not {o}",
            )


def choose(desc: OperatorDesc, target: str, options: tuple[str, ...]) -> str:
    return "tile" if desc.tensor("InputTensor").data_type in TILE_TYPES else "expand"


def _groups(sizes: tuple[int, ...], repeated: list[int]) -> list[list[int]]:
    """The repeated dimensions in groups whose reshaped form has at most MAX_RANK dimensions."""
    groups: list[list[int]] = []
    for axis in repeated:
        if groups and _rank(sizes, [*groups[-1], axis]) <= MAX_RANK:
            groups[-1].append(axis)
        else:
            groups.append([axis])
    return groups


def _rank(sizes: tuple[int, ...], group: list[int]) -> int:
    return len(_reshaped(list(sizes), set(group)))


def _reshaped(sizes: list[int], group: set[int]) -> list[int]:
    return _units(sizes, group)[0]


def _units(sizes: list[int], group: set[int]) -> tuple[list[int], dict[int, int]]:
    """The input's sizes with a 1 before each dimension of `group` and the others merged in runs,
    and where each of those 1s is."""
    shape: list[int] = []
    units: dict[int, int] = {}
    run = None
    for i, n in enumerate(sizes):
        if i in group:
            if run is not None:
                shape.append(run)
                run = None
            units[i] = len(shape)
            shape += [1, n]
        else:
            run = n if run is None else run * n
    if run is not None:
        shape.append(run)
    return shape, units


def _lower_expand(desc: OperatorDesc, b: GraphBuilder, x: str) -> str:
    sizes = list(desc.tensor("InputTensor").sizes)
    repeats = desc["Repeats"]
    repeated = [i for i, r in enumerate(repeats) if r > 1]
    for k, group in enumerate(_groups(tuple(sizes), repeated)):
        shape, units = _units(sizes, set(group))
        target = list(shape)
        for axis, position in units.items():  # the unit dimension before each repeated one takes the repeat
            target[position] = repeats[axis]
        x = b.reshape(x, shape, f"step{k}_units", f"a unit dimension before dimensions {group}")
        x = b.node("Expand", [x, b.i64(target, f"step{k}_repeats")], f"step{k}_expand", f"dimensions {group} repeated")
        for axis in group:
            sizes[axis] *= repeats[axis]
        x = b.reshape(x, sizes, f"step{k}_shape", f"dimensions {group} tiled")
    return x


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
    x = inputs["InputTensor"]
    repeats = desc["Repeats"]
    if all(r == 1 for r in repeats):
        return x
    if b.variant == "tile" and (b.target.dml_nodes or desc.tensor("InputTensor").data_type in TILE_TYPES):
        doc = "the input repeated" + (f": {DML_NODE_DOC}" if b.target.dml_nodes else "")
        return b.node("Tile", [x, b.i64(list(repeats), "repeats")], "tile", doc)
    return _lower_expand(desc, b, x)


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    """The page's definition, by the index of each output element: c mod InputTensor.Sizes."""
    x = inputs["InputTensor"]
    out = desc.tensor("OutputTensor").sizes
    return x[np.ix_(*[np.arange(o) % n for o, n in zip(out, x.shape, strict=True)])]


def examples(op: OperatorSchema) -> list[common.Example]:
    """onnx_ops: each type, two dimensions repeated."""
    return [
        {
            "InputTensor": common.example_tensor(t, [1, 2, 3]),
            "OutputTensor": common.example_tensor(t, [2, 2, 9]),
            "RepeatsCount": 3,
            "Repeats": [2, 1, 3],
        }
        for t in common.example_types(op, "InputTensor")
    ]


OPERATOR_FAMILY = Family(
    ("TILE",), validate, lower, reference, CANDIDATES, choose=choose, dml_preference=DML_PREFERENCE, examples=examples
)
