"""Broadcast buffer inputs of the element-wise operators stay compact (lowering.py, BROADCASTS):
with `--buffer-inputs`, an input whose stride is 0 on an axis is fed as its buffer and never
expanded; the graph equals the one on the dense logical tensors, bit for bit, on every
element-wise operator and data type of the matrix."""

from __future__ import annotations

import copy

import numpy as np
import onnx
import pytest

from dml2onnx import lowering
from dml2onnx.backends import runtime
from dml2onnx.cases import all_cases
from dml2onnx.cases.common import Case
from dml2onnx.core import dtypes
from dml2onnx.core.tensor import dense_strides
from dml2onnx.lowering import tolerances
from dml2onnx.ops import registry
from support import make_desc


def _first_per_operator_and_type() -> list[Case]:
    seen: set[tuple[str, str]] = set()
    chosen = []
    for case in all_cases():
        if not registry.family(case.op).broadcasts:
            continue
        shapes = [a.shape for a in case.inputs.values()]
        key = (case.op, str(next(iter(case.inputs.values())).dtype))
        if key in seen or len(shapes[0]) < 2 or shapes[0][0] < 2:
            continue
        seen.add(key)
        chosen.append(case)
    return chosen


CASES = _first_per_operator_and_type()


def _broadcast(case: Case, which: list[str]) -> tuple[dict, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The case with the inputs in `which` repeating their first row (stride 0 on axis 0): its
    fields, the logical inputs and the buffers."""
    fields = copy.deepcopy(case.fields)
    logical, buffers = {}, {}
    for name, a in case.inputs.items():
        if name in which:
            row = a[:1]
            strides = [0, *dense_strides(a.shape[1:])]
            fields[name] = fields[name] | {"Strides": strides}
            logical[name] = np.broadcast_to(row, a.shape).copy()
            buffers[name] = row.ravel()
        else:
            logical[name], buffers[name] = a, a.ravel()
    return fields, logical, buffers


def _same(op: str, got: np.ndarray, want: np.ndarray) -> bool:
    """Integers bit for bit; floats within the operator's tolerance (the CPU EP's vector code
    takes other paths on a shorter input: softplus differs by an ulp)."""
    dtype = dtypes.BY_NUMPY.get(want.dtype)
    if dtype is None or not dtype.is_float:
        return bool(np.array_equal(got, want))
    return tolerances.compare(got, want, tolerances.tolerance(op, dtype, "cpu")).ok


def test_the_cases_cover_every_broadcasting_family() -> None:
    assert {registry.family(c.op).operators for c in CASES} == {f.operators for f in registry.FAMILIES if f.broadcasts}
    assert len(CASES) > 100


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_compact_broadcast_buffers_equal_the_dense_tensors(case: Case) -> None:
    names = list(case.inputs)
    # every input repeating (the result is expanded once at the end), and for two inputs one of them
    for which in [names] + ([names[1:]] if len(names) > 1 else []):
        fields, logical, buffers = _broadcast(case, which)
        desc = make_desc(case.op, fields)
        for n in names:  # DirectML's buffer: whole 4-byte words (TotalTensorSizeInBytes)
            buffers[n] = np.concatenate(
                [buffers[n], np.zeros(desc.tensor(n).buffer_elements - buffers[n].size, buffers[n].dtype)]
            )
        dense = runtime.create(lowering.lower(desc, "t"), "t", "cpu").run(logical)
        model = lowering.lower(desc, "t", buffer_inputs=True)
        compact = {i.name: [d.dim_value for d in i.type.tensor_type.shape.dim] for i in model.graph.input}
        assert compact == {n: [buffers[n].size] for n in names}
        kinds = [n.op_type for n in model.graph.node]
        if "GatherElements" not in kinds:  # IF's gathering select needs its operands at full size
            assert kinds.count("Expand") == (1 if which == names else 0), "only the result is expanded"
        got = runtime.create(model, "t", "cpu").run(buffers)
        assert _same(case.op, got, dense), f"{case.id} with {which} repeating"


def test_a_packed_buffer_input_is_only_reshaped() -> None:
    case = CASES[0]
    desc = make_desc(case.op, case.fields)
    model = lowering.lower(desc, "t", buffer_inputs=True)
    assert {n.op_type for n in model.graph.node} & {"Expand", "Slice", "Gather"} == set()
    assert isinstance(model, onnx.ModelProto)
