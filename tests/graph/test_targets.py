"""Lowering targets: every matrix case lowered for each target runs where that target says,
the DirectML-bound graphs pass the static DirectML EP check, and the static check itself
catches what the DirectML EP does not register."""

from __future__ import annotations

from collections import Counter

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from dml2onnx import lowering
from dml2onnx.backends import runtime
from dml2onnx.cases import all_cases
from dml2onnx.cases.common import Case
from dml2onnx.core import dtypes
from dml2onnx.graph import dml_ep
from dml2onnx.graph.builder import DEFAULT_OPSET, onnx_type_name
from dml2onnx.graph.targets import DML_NODE_DOC
from dml2onnx.lowering import choices
from dml2onnx.ops import registry
from matrix_runs import Lowered, differences, graph_digest, report
from support import make_desc, mismatches

CASES = all_cases()
OPERATORS = sorted({c.op for c in CASES})


def cases_of(op: str) -> list[Case]:
    return [c for c in CASES if c.op == op]


def lowered(case: Case, target: str) -> onnx.ModelProto:
    return lowering.lower(make_desc(case.op, case.fields), "case", target=target)


@pytest.mark.parametrize("op", OPERATORS)
def test_static_dml_check_passes_every_case_and_lowering(op: str) -> None:
    """The dml target's every candidate (test_matrix.py checks the portable graphs it builds)."""
    refused = {}
    for c in cases_of(op):
        desc = make_desc(c.op, c.fields)
        for variant in choices.available(desc, DEFAULT_OPSET, "dml"):
            problems = dml_ep.check(lowering.lower(desc, "case", target="dml", variant=variant))
            if problems:
                refused[f"{c.id}-{variant}"] = problems
    assert refused == {}


def _evaluator_inputs(case: Case, model: onnx.ModelProto) -> dict[str, np.ndarray] | str:
    """The case's inputs for onnx.reference, or why its dml-target graph is not run there."""
    inputs = dict(case.inputs)
    if case.op.startswith("ACTIVATION_LOG_SOFTMAX") and "extreme" in case.id:
        return "onnx.reference's LogSoftmax takes log(0) on these inputs; ORT runs the same node exactly"
    if case.op == "ONE_HOT" and inputs["ValuesTensor"].dtype.kind == "f":
        # onnx.reference computes off + mask * (on - off), inexact for infinities and large values
        values = inputs["ValuesTensor"]
        inputs["ValuesTensor"] = np.resize(np.array([1.5, -2.25, 7], values.dtype), values.shape)  # any size and rank
    if any(n.doc_string == DML_NODE_DOC for n in model.graph.node):
        return "the nodes the DirectML EP maps back onto the operator compute DirectML's rules there only (make test-dml)"
    normalizations = {"LayerNormalization", "InstanceNormalization"} & {n.op_type for n in model.graph.node}
    if normalizations and case.inputs["InputTensor"].dtype == np.float16:
        # test_matrix runs the same graphs on ONNX Runtime, which accumulates in FLOAT32
        return f"onnx.reference's {'/'.join(sorted(normalizations))} computes FLOAT16 inputs in FLOAT16 (errors ~0.1)"
    return inputs


def _evaluated(model: onnx.ModelProto, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray] | str:
    """Every output by graph output name, or why onnx.reference cannot run the graph."""
    with np.errstate(all="ignore"):
        try:
            evaluator = ReferenceEvaluator(model)
            return dict(zip(evaluator.output_names, evaluator.run(None, inputs), strict=True))
        except ValueError as e:
            if "at most 64 array objects" not in str(e):
                raise
            return "onnx.reference's GatherElements uses np.choose, which takes at most 64 positions on the axis"


@pytest.mark.parametrize("op", OPERATORS)
def test_dml_target_semantics_with_onnx_reference_evaluator(op: str) -> None:
    """The dml-target graphs (ONNX Hardmax, ArgMax with select_last_index and integer inputs,
    OneHot of any type) run by onnx's own reference implementation, independent of ONNX Runtime
    (`make test-dml` runs them on the DirectML EP itself); but for Target.dml_nodes graphs, which
    mean DirectML's rules, not ONNX's, the cases onnx.reference cannot compute (_evaluator_inputs), and
    those whose graph is the portable one test_matrix.py runs (own_graph)."""
    found: dict[str, str] = {}
    not_run: Counter[str] = Counter()
    checked = 0
    for case in cases_of(op):
        model = own_graph(case, "dml")
        if model is None:
            not_run["the portable graph itself, which test_matrix.py runs on ONNX Runtime"] += 1
            continue
        inputs = _evaluator_inputs(case, model)
        got = inputs if isinstance(inputs, str) else _evaluated(model, inputs)
        if isinstance(got, str):
            not_run[got] += 1
            continue
        checked += 1
        desc = make_desc(case.op, case.fields)
        if bad := mismatches(desc, lowering.by_field(desc, got), registry.reference_outputs(desc, inputs), "reference"):
            found[case.id] = bad
    assert not found, report(found, checked)
    if not checked:
        pytest.skip("; ".join(f"{n} case(s): {why}" for why, n in not_run.items()))


def own_graph(case: Case, target: str) -> onnx.ModelProto | None:
    """The case lowered for `target`; None where the graph is the one test_matrix.py runs on the CPU
    EP (and a GPU EP) for the same candidate, built for the candidate's own target: the graph and its
    opsets byte for byte alike, one verdict (ROI_ALIGN_GRAD's and LSTM's every case, for `cpu`)."""
    desc = make_desc(case.op, case.fields)
    chosen = choices.resolve(desc, target, DEFAULT_OPSET, None)
    model = lowering.lower(desc, "case", target=target)
    own = choices.target_of(case.op, chosen)
    if own != target and graph_digest(lowering.lower(desc, "case", target=own, variant=chosen)) == graph_digest(model):
        return None
    return model


def own_graphs(op: str, target: str) -> list[Lowered]:
    return [Lowered(c.id, c, m) for c in cases_of(op) if (m := own_graph(c, target)) is not None]


@pytest.mark.parametrize("op", OPERATORS)
def test_cpu_target_on_the_cpu_ep(op: str) -> None:
    if not (items := own_graphs(op, "cpu")):
        pytest.skip("every case's cpu-target graph is one test_matrix.py runs on the CPU EP")
    assert not (found := differences(items, "cpu")), report(found, len(items))


@pytest.mark.gpu
@pytest.mark.skipif("cuda" not in runtime.available(), reason="no CUDA execution provider")
@pytest.mark.parametrize("op", OPERATORS)
def test_cuda_target_on_the_cuda_ep(op: str) -> None:
    if not (items := own_graphs(op, "cuda")):
        pytest.skip("every case's cuda-target graph is one test_matrix.py runs on the CUDA EP")
    assert not (found := differences(items, "cuda")), report(found, len(items))


def test_dml_target_maps_back_to_directml_operators() -> None:
    by_op = {c.op: c for c in CASES if "several" in c.id or c.op in ("ONE_HOT", "MEAN_VARIANCE_NORMALIZATION")}
    ops_used = {op: {n.op_type for n in lowered(c, "dml").graph.node} for op, c in by_op.items()}
    assert "Hardmax" in ops_used["ACTIVATION_HARDMAX1"] and "OneHot" not in ops_used["ACTIVATION_HARDMAX1"]
    assert "TopK" not in ops_used["ARGMAX"] and "Slice" not in ops_used["ARGMAX"]
    assert ops_used["ONE_HOT"] <= {"Reshape", "Slice", "OneHot"}
    assert "MeanVarianceNormalization" not in ops_used["MEAN_VARIANCE_NORMALIZATION"]  # DML's has a fixed epsilon


@pytest.mark.parametrize("target", ["portable", "cuda", "dml"])
def test_one_hot_slices_values_only_beyond_two(target: str) -> None:
    """OffValue and OnValue are the first two elements: a longer ValuesTensor is sliced to them, a
    2-element one goes to OneHot as it is (one kernel less before the CUDA EP copies it to the host)."""
    for count, sliced in ((2, False), (3, True), (4, True)):
        fields = {
            "IndicesTensor": {"DataType": "INT32", "Sizes": [4, 1]},
            "ValuesTensor": {"DataType": "FLOAT32", "Sizes": [1, count]},
            "OutputTensor": {"DataType": "FLOAT32", "Sizes": [4, 5]},
            "Axis": 1,
        }
        model = lowering.lower(make_desc("ONE_HOT", fields), "t", target=target)
        assert ("Slice" in {n.op_type for n in model.graph.node}) == sliced, (count, target)
        values = np.array([[-2.5, 7.0, 9.0, 11.0][:count]], np.float32)
        got = ReferenceEvaluator(model).run(
            None, {"IndicesTensor": np.array([[0], [4], [5], [-1]], np.int32), "ValuesTensor": values}
        )
        want = np.full((4, 5), -2.5, np.float32)
        want[0, 0] = want[1, 4] = want[3, 4] = 7.0
        np.testing.assert_array_equal(got[0], want)


def test_target_is_recorded_in_metadata() -> None:
    for target in ("portable", "cpu", "cuda", "dml"):
        props = {p.key: p.value for p in lowered(CASES[0], target).metadata_props}
        assert props["dml2onnx.target"] == target


def _graph(
    node: onnx.NodeProto,
    inputs: list[onnx.ValueInfoProto],
    out_type: int,
    opset: int = 17,
    initializers: list[onnx.TensorProto] | None = None,
) -> onnx.ModelProto:
    g = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("y", out_type, None)], initializers or [])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def test_static_check_refuses_unregistered_ops_types_and_versions() -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    gelu = _graph(helper.make_node("Gelu", ["x"], ["y"], name="g"), [x], TensorProto.FLOAT, opset=20)
    assert "no DirectML kernel for Gelu-20" in dml_ep.check(gelu)[0]
    i16 = helper.make_tensor_value_info("i", TensorProto.INT16, [3])
    depth = helper.make_tensor("d", TensorProto.INT64, [], [4])
    values = helper.make_tensor("v", TensorProto.FLOAT, [2], [0, 1])
    one_hot = _graph(
        helper.make_node("OneHot", ["i", "d", "v"], ["y"], name="oh"), [i16], TensorProto.FLOAT, initializers=[depth, values]
    )
    assert "input 0 'i' is INT16" in dml_ep.check(one_hot)[0]
    starts = helper.make_tensor_value_info("s", TensorProto.INT64, [1])
    ends = helper.make_tensor("e", TensorProto.INT64, [1], [2])
    sliced = _graph(
        helper.make_node("Slice", ["x", "s", "e"], ["y"], name="sl"), [x, starts], TensorProto.FLOAT, initializers=[ends]
    )
    assert "input 1 's' must be a constant initializer" in dml_ep.check(sliced)[0]
    b = helper.make_tensor_value_info("b", TensorProto.BOOL, [3])
    equal = _graph(helper.make_node("Equal", ["b", "b"], ["y"], name="eq"), [b], TensorProto.BOOL)
    assert "is BOOL" in dml_ep.check(equal)[0]
    identity23 = _graph(helper.make_node("Identity", ["x"], ["y"], name="id"), [x], TensorProto.FLOAT, opset=23)
    assert "Identity-23" in dml_ep.check(identity23)[0]


def test_sixty_four_bit_tensors_are_listed() -> None:
    int64_case = next(c for c in CASES if c.id.startswith("ARGMAX-INT64-INT64"))
    assert dml_ep.sixty_four_bit_nodes(lowered(int64_case, "portable"))


def test_dml_target_emits_the_nodes_the_directml_ep_maps_back() -> None:
    """Target.dml_nodes: a desc without ScaleBias whose node the DirectML EP registers for its
    type (and opset) lowers to that one node (a comparison's BOOL then cast to the output's type);
    otherwise the portable pattern. make test-dml checks what they compute there."""
    expect = {  # operator: (ONNX op, type-constraint label, the graph's nodes)
        "CAST": ("Cast", "T1", {"Cast"}),
        "ELEMENT_WISE_ABS": ("Abs", "T", {"Abs"}),
        "ELEMENT_WISE_DIVIDE": ("Div", "T", {"Div"}),
        "ELEMENT_WISE_MODULUS_TRUNCATE": ("Mod", "T", {"Mod"}),
        "ELEMENT_WISE_CLIP": ("Clip", "T", {"Clip"}),
        "ELEMENT_WISE_LOGICAL_LESS_THAN": ("Less", "T", {"Less", "Cast"}),
        "ELEMENT_WISE_IS_NAN": ("IsNaN", "T1", {"IsNaN", "Cast"}),
    }
    mapped, kept = set(), set()
    for c in CASES:
        if c.op not in expect or "ScaleBias" in c.fields:
            continue
        onnx_op, label, nodes = expect[c.op]
        first = next(iter(c.fields.values()))["DataType"]
        onnx_type = onnx_type_name(dtypes.BY_NAME[first].onnx)
        takes = dml_ep.takes(onnx_op, DEFAULT_OPSET, **{label: onnx_type})
        if c.op == "ELEMENT_WISE_CLIP":  # an integer tensor's FLOAT bounds: DirectML's own conversion
            takes = takes and dtypes.BY_NAME[first].is_float
        if c.op == "CAST":
            out = dtypes.BY_NAME[c.fields["OutputTensor"]["DataType"]]
            takes = takes and dml_ep.takes("Cast", DEFAULT_OPSET, T2=onnx_type_name(out.onnx))
            if out.name == first:
                continue  # a cast to the same type is no node at all
        model = lowered(c, "dml")
        marked = any(n.doc_string == DML_NODE_DOC for n in model.graph.node)
        if takes:
            assert {n.op_type for n in model.graph.node} == nodes and marked, c.id
            mapped.add(c.op)
        else:
            assert not marked, c.id
            kept.add(c.op)
    assert mapped == set(expect)
    assert kept == {"ELEMENT_WISE_CLIP", "ELEMENT_WISE_MODULUS_TRUNCATE"}  # integer CLIP; no 64-bit Mod on the EP


def test_cuda_only_candidates_stay_on_the_cuda_target() -> None:
    """A CUDA_ONLY candidate (an If around a fast path) is offered and chosen on `cuda` alone; asked
    for on another target it is refused with the reason."""
    from dml2onnx.core.errors import UsageError

    desc = make_desc(
        "CUMULATIVE_SUMMATION",
        {
            "InputTensor": {"DataType": "FLOAT32", "Sizes": [2, 128]},
            "OutputTensor": {"DataType": "FLOAT32", "Sizes": [2, 128]},
            "Axis": 1,
            "AxisDirection": "DML_AXIS_DIRECTION_INCREASING",
            "HasExclusiveSum": False,
        },
    )
    assert "blocked" in choices.available(desc, DEFAULT_OPSET) and "blocked" in choices.available(desc, DEFAULT_OPSET, "cuda")
    for target in ("portable", "cpu", "dml"):
        assert "blocked" not in choices.available(desc, DEFAULT_OPSET, target)
    assert choices.choose(desc, "cuda", DEFAULT_OPSET) == "blocked"
    assert choices.target_of("CUMULATIVE_SUMMATION", "blocked") == "cuda"
    with pytest.raises(UsageError, match="does not apply to this DML_CUMULATIVE_SUMMATION on the portable target"):
        lowering.lower(desc, "t", target="portable", variant="blocked")
    assert "If" in [n.op_type for n in lowering.lower(desc, "t", target="cuda").graph.node]
