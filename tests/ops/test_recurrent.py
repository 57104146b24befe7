"""DML_OPERATOR_RNN, LSTM and GRU: values by hand (the pages have no example: models/recurrent.json),
DxDispatch's dml_rnn, what DirectML's API computes where the pages are silent or wrong (a batch
entry of length 0 in the forward direction, lengths beyond seq_length, the output gate's peephole
on C_t, CELU refused in GRU and LSTM), every candidate lowering (the ONNX node of the dml target
run on the CPU EP where its kernels agree; the cuda target's cudnn node, the cells it applies to
and the CUDA EP's fallback rules), refusals at their JSON paths, and properties against the numpy
reference."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dml2onnx import lowering
from dml2onnx.backends import descpack, dmlapi, runtime, winhost
from dml2onnx.cases.common import ACTIVATIONS
from dml2onnx.cases.recurrent import CELLS, DIRECTIONS, cases, recurrent_case
from dml2onnx.core import dtypes
from dml2onnx.core.errors import format_path
from dml2onnx.graph.builder import DEFAULT_OPSET
from dml2onnx.lowering import choices
from dml2onnx.ops import recurrent, recurrent_reference, registry
from strategies import SEEDS
from support import every_output, make_desc, mismatches, refusal, run_cli, tensor

ROOT = Path(__file__).resolve().parents[2]
F32, F16 = dtypes.FLOAT32, dtypes.FLOAT16
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
IDENTITY = {"Type": "ACTIVATION_IDENTITY"}


def run_case(
    op: str, fields: dict[str, Any], feeds: dict[str, np.ndarray], target: str = "portable", variant: str | None = None
) -> dict[str, np.ndarray]:
    desc = make_desc(op, fields)
    return every_output(runtime.create(lowering.lower(desc, "t", target=target, variant=variant), "t", "cpu"), desc, feeds)


# -- values by hand ------------------------------------------------------------------------------


def test_models_by_hand() -> None:
    """models/recurrent.json's comment works each value out."""
    status, out, err = run_cli("run", str(ROOT / "models" / "recurrent.json"), "-q")
    assert status == 0, err
    assert out.splitlines() == [
        "Resource 'rnn_y': 3, 6",
        "Resource 'rnn_h': 6",
        "Resource 'lstm_y': 2, 108, 24, 0",
        "Resource 'lstm_h': 24, 108",
        "Resource 'lstm_c': 4, 9",
        "Resource 'gru_y': 4, 11",
        "Resource 'gru_lbr_y': 4, 12",
    ]


def test_dxdispatch_dml_rnn_runs_unchanged() -> None:
    """DxDispatch's models/dml_rnn.json: a bidirectional RNN over one step of 8 batch entries, ELU
    of positive sums (x itself): forward H = W x, backward likewise (both directions' W follow on)."""
    status, out, err = run_cli("run", str(ROOT / "tests" / "dxdispatch" / "dml_rnn.json"), "-q")
    assert status == 0, err
    x = np.arange(1, 33, dtype=np.float64).reshape(8, 4)
    w = (1 + 0.4 * np.arange(40)).reshape(2, 5, 4)
    want = np.stack([x @ w[0].T, x @ w[1].T])  # [2, 8, 5]: R is not used (H_0 = 0, one step)
    got = np.array([float(v) for v in out.split(": ")[1].split(", ")])
    np.testing.assert_allclose(got, want.ravel(), rtol=1e-6)
    assert out.startswith("Resource 'output': 18, 34, 50, 66, 82, 43.6, 85.2")


# -- what DirectML computes where the pages say otherwise or nothing -----------------------------


def lstm_identity(
    lengths: list[int], direction: str = "FORWARD", peephole: bool = False
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """One hidden unit, IDENTITY activations, W (i o f c) = [1, 1, 0, 1], R = 0: i = c = o = x,
    f = 0, so C_t = x^2 and H_t = x^3 (with Peephole (i o f) = [0, 1, 0]: o = x + C_t)."""
    d = 2 if direction == "BIDIRECTIONAL" else 1
    b = len(lengths)
    fields: dict[str, Any] = {
        "InputTensor": {"DataType": "FLOAT32", "Sizes": [1, 2, b, 1]},
        "WeightTensor": {"DataType": "FLOAT32", "Sizes": [1, d, 4, 1]},
        "RecurrenceTensor": {"DataType": "FLOAT32", "Sizes": [1, d, 4, 1]},
        "HiddenInitTensor": {"DataType": "FLOAT32", "Sizes": [1, d, b, 1]},
        "CellMemInitTensor": {"DataType": "FLOAT32", "Sizes": [1, d, b, 1]},
        "SequenceLengthsTensor": {"DataType": "UINT32", "Sizes": [1, 1, 1, b]},
        "OutputSequenceTensor": {"DataType": "FLOAT32", "Sizes": [2, d, b, 1]},
        "OutputSingleTensor": {"DataType": "FLOAT32", "Sizes": [1, d, b, 1]},
        "OutputCellSingleTensor": {"DataType": "FLOAT32", "Sizes": [1, d, b, 1]},
        "ActivationDescCount": 3 * d,
        "ActivationDescs": [IDENTITY] * 3 * d,
        "Direction": direction,
        "ClipThreshold": 0,
        "UseClipThreshold": False,
        "CoupleInputForget": False,
    }
    feeds = {
        "InputTensor": np.arange(2, 2 + 2 * b, dtype=np.float32).reshape(1, 2, b, 1),
        "WeightTensor": np.tile(np.array([1, 1, 0, 1], np.float32).reshape(1, 1, 4, 1), (1, d, 1, 1)),
        "RecurrenceTensor": np.zeros((1, d, 4, 1), np.float32),
        "HiddenInitTensor": np.full((1, d, b, 1), 5, np.float32),
        "CellMemInitTensor": np.full((1, d, b, 1), 7, np.float32),
        "SequenceLengthsTensor": np.array(lengths, np.uint32).reshape(1, 1, 1, b),
    }
    if peephole:
        fields["PeepholeTensor"] = {"DataType": "FLOAT32", "Sizes": [1, 1, d, 3]}
        feeds["PeepholeTensor"] = np.tile(np.array([0, 1, 0], np.float32), d).reshape(1, 1, d, 3)
    return fields, feeds


def length_zero_values() -> dict[str, np.ndarray]:
    """Batch of two, X_0 = [2, 3], X_1 = [4, 5], lengths [0, 2], H_0 = 5, C_0 = 7. Forward: entry 0
    (length 0) takes step 0 all the same: C = 4, and OutputSingleTensor is 0 (DirectML); entry 1
    runs both steps (H 27 then 125, C 9 then 25). Backward: entry 0 keeps H_0 and C_0; entry 1 runs
    t = 1 then 0 (H 125 then 27, C 25 then 9)."""
    return {
        "OutputSequenceTensor": np.array([[[0, 27], [0, 27]], [[0, 125], [0, 125]]], np.float32).reshape(2, 2, 2, 1),
        "OutputSingleTensor": np.array([[0, 125], [5, 27]], np.float32).reshape(1, 2, 2, 1),
        "OutputCellSingleTensor": np.array([[4, 25], [7, 9]], np.float32).reshape(1, 2, 2, 1),
    }


def test_length_zero_as_directml_computes_it() -> None:
    fields, feeds = lstm_identity([0, 2], "BIDIRECTIONAL")
    want = length_zero_values()
    desc = make_desc("LSTM", fields)
    for got in (registry.reference_outputs(desc, feeds), run_case("LSTM", fields, feeds)):
        for k, v in want.items():
            np.testing.assert_array_equal(got[k], v, err_msg=k)


def test_output_gate_peephole_multiplies_the_new_cell_state() -> None:
    """o = x + P_o * C_t (DirectML, ONNX), not C_{t-1} as the LSTM page writes: X_0 = 2 gives
    C = 4, o = 6, H = 24 (C_{t-1} = 7 would give o = 9, H = 36)."""
    fields, feeds = lstm_identity([2], peephole=True)
    for got in (registry.reference_outputs(make_desc("LSTM", fields), feeds), run_case("LSTM", fields, feeds)):
        assert got["OutputSequenceTensor"].ravel()[0] == 24


live = pytest.mark.skipif(dmlapi.missing() is not None, reason="DirectML's API under Wine is not set up (make dml-setup)")


@live
def test_directml_settles_length_zero_and_the_peephole() -> None:
    try:
        fields, feeds = lstm_identity([0, 2], "BIDIRECTIONAL")
        got = dmlapi.execute(make_desc("LSTM", fields), feeds).outputs
        for k, v in length_zero_values().items():
            np.testing.assert_array_equal(got[k], v, err_msg=k)
        fields, feeds = lstm_identity([2], peephole=True)
        assert dmlapi.execute(make_desc("LSTM", fields), feeds).outputs["OutputSequenceTensor"].ravel()[0] == 24
    finally:
        winhost.shutdown()


@live
def test_directml_agrees_with_the_reference_on_matrix_cases() -> None:
    """Every third matrix case through DirectML's API (all 157 agreed, the lengths-beyond rows included)."""
    try:
        for case in list(cases())[::3]:
            desc = make_desc(case.op, case.fields)
            got = dmlapi.execute(desc, case.inputs).outputs
            assert not (bad := mismatches(desc, got, registry.reference_outputs(desc, case.inputs), "dml")), (case.id, bad)
    finally:
        winhost.shutdown()


def cumulative(op: str, lengths: list[int]) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """A bidirectional cell over 3 steps, one unit, IDENTITY activations, that adds: H_t = H_{t-1} +
    X_t (RNN: W = R = 1; GRU: z = 1/2, r = 1, h = 2 X + H; LSTM: i = f = o = 1, c = X, so C_t =
    C_{t-1} + X_t and H_t = C_t), X_t = 2^t, H_0 = 1/1024 forward and 1/512 backward (C_0 twice
    that): each sum says which steps ran."""
    g, per, b = CELLS[op].gates, CELLS[op].activations, len(lengths)
    w, r, bias = {
        "RNN": ([1], [1], [0, 0]),
        "GRU": ([0, 0, 2], [0, 0, 1], [0.5, 1, 0, 0, 0, 0]),
        "LSTM": ([0, 0, 0, 1], [0, 0, 0, 0], [1, 1, 1, 0, 0, 0, 0, 0]),
    }[op]
    fields = recurrent_case(
        np.random.default_rng(0),
        op,
        F32,
        "BIDIRECTIONAL",
        seq=3,
        batch=b,
        input_size=1,
        hidden=1,
        peephole=False,
        lengths=lengths,
        acts=(IDENTITY,) * per,
    ).fields
    h0 = np.array([1 / 1024, 1 / 512], np.float32).reshape(1, 2, 1, 1) * np.ones((1, 1, b, 1), np.float32)
    feeds = {
        "InputTensor": np.repeat(2.0 ** np.arange(3, dtype=np.float32), b).reshape(1, 3, b, 1),
        "WeightTensor": np.tile(np.array(w, np.float32).reshape(1, 1, g, 1), (1, 2, 1, 1)),
        "RecurrenceTensor": np.tile(np.array(r, np.float32).reshape(1, 1, g, 1), (1, 2, 1, 1)),
        "BiasTensor": np.tile(np.array(bias, np.float32), 2).reshape(1, 1, 2, 2 * g),
        "HiddenInitTensor": h0,
        "SequenceLengthsTensor": np.array(lengths, np.uint32).reshape(1, 1, 1, b),
    }
    if op == "LSTM":
        feeds["CellMemInitTensor"] = 2 * h0
    return fields, feeds


def beyond_values(op: str) -> dict[str, np.ndarray]:
    """`cumulative` with lengths [0, 2, 3, 7] over 3 steps, as DirectML's API computes it: a length
    of 7 runs the 3 steps in both directions (backward from t = 2; no X is read past the tensor:
    probed with InputTensor's buffer padded with more powers of 2), but its forward
    OutputSingleTensor is 0, like a length of 0's; the forward cell state of a length of 0 is step
    0's (1 + C_0)."""
    s0 = {"RNN": 1 / 1024, "GRU": 1 / 1024, "LSTM": 2 / 1024}[op]  # the state the sums start from
    ran = np.array([[0, 1, 1, 1], [0, 1, 1, 1], [0, 0, 1, 1]])  # t < min(length, 3)
    forward = np.array([[0, 1, 1, 1], [0, 3, 3, 3], [0, 0, 7, 7]]) + s0 * ran
    backward = np.array([[0, 3, 7, 7], [0, 2, 6, 6], [0, 0, 4, 4]]) + 2 * s0 * ran
    single = [[0, 3 + s0, 7 + s0, 0], [1 / 512, 3 + 2 * s0, 7 + 2 * s0, 7 + 2 * s0]]
    values = {
        "OutputSequenceTensor": np.stack([forward, backward], 1)[..., None],
        "OutputSingleTensor": np.array(single)[None, ..., None],
    }
    if op == "LSTM":
        values["OutputCellSingleTensor"] = np.array(
            [[1 + s0, 3 + s0, 7 + s0, 7 + s0], [2 * s0, 3 + 2 * s0, 7 + 2 * s0, 7 + 2 * s0]]
        )[None, ..., None]
    return {k: v.astype(np.float32) for k, v in values.items()}


@pytest.mark.parametrize("op", sorted(CELLS))
def test_lengths_beyond_the_sequence_as_directml_computes_them(op: str) -> None:
    fields, feeds = cumulative(op, [0, 2, 3, 7])
    desc = make_desc(op, fields)
    for got in (registry.reference_outputs(desc, feeds), run_case(op, fields, feeds)):
        for k, v in beyond_values(op).items():
            np.testing.assert_array_equal(got[k], v, err_msg=k)


@live
def test_directml_settles_lengths_beyond_the_sequence() -> None:
    """DirectML's API, every cell: the values above, and lengths of 2^31 and 2^32 - 1 read as
    unsigned (as 7)."""
    try:
        for op in sorted(CELLS):
            fields, feeds = cumulative(op, [0, 2, 3, 7])
            got = dmlapi.execute(make_desc(op, fields), feeds).outputs
            for k, v in beyond_values(op).items():
                np.testing.assert_array_equal(got[k], v, err_msg=f"{op} {k}")
            fields, feeds = cumulative(op, [0, 2, 3, 2**31, 2**32 - 1])
            got = dmlapi.execute(make_desc(op, fields), feeds).outputs
            for k, v in beyond_values(op).items():  # batch entries 3 and 4 as the length of 7
                np.testing.assert_array_equal(got[k], np.concatenate([v, v[:, :, 3:]], 2), err_msg=f"{op} {k} unsigned")
    finally:
        winhost.shutdown()


def test_activation_descs_pack_as_an_array_of_operator_descs() -> None:
    """ActivationDescs: a pointer to ActivationDescCount DML_OPERATOR_DESCs {Type, Desc*} of 16
    bytes, each fused activation with null tensors and its parameters."""
    fields = base("GRU") | {
        "ActivationDescs": [{"Type": "ACTIVATION_LINEAR", "Alpha": 2.0, "Beta": -1.0}, {"Type": "ACTIVATION_TANH"}] * 2
    }
    desc = make_desc("GRU", fields)
    packed = descpack.pack(desc)
    _, desc_at = struct.unpack_from("<I4xQ", packed.blob, packed.root)
    offsets = descpack.layout(desc.schema)[1]
    count = struct.unpack_from("<I", packed.blob, desc_at + offsets["ActivationDescCount"])[0]
    (array,) = struct.unpack_from("<Q", packed.blob, desc_at + offsets["ActivationDescs"])
    types = [struct.unpack_from("<I4xQ", packed.blob, array + 16 * i) for i in range(count)]
    assert [t for t, _ in types] == [descpack.OPERATOR_TYPE[n] for n in ("ACTIVATION_LINEAR", "ACTIVATION_TANH") * 2]
    assert struct.unpack_from("<QQff", packed.blob, types[2][1]) == (0, 0, 2.0, -1.0)


# -- candidates and targets -------------------------------------------------------------------------


def test_candidates() -> None:
    rng = np.random.default_rng(0)
    plain = make_desc("GRU", recurrent_case(rng, "GRU", F32, "FORWARD").fields)
    assert choices.available(plain, DEFAULT_OPSET) == ("unrolled", "onnx_node")
    assert choices.available(plain, DEFAULT_OPSET, "portable") == ("unrolled",)
    assert choices.choose(plain, "dml", DEFAULT_OPSET) == "onnx_node"
    assert choices.choose(plain, "portable", DEFAULT_OPSET) == "unrolled"
    assert choices.choose(plain, "cuda", DEFAULT_OPSET) == "unrolled"  # cuDNN's GRU is LinearBeforeReset's
    softplus = ({"Type": "ACTIVATION_SOFTPLUS", "Steepness": 1.0},) * 2
    odd = make_desc("GRU", recurrent_case(rng, "GRU", F32, "FORWARD", acts=softplus).fields)
    assert choices.choose(odd, "dml", DEFAULT_OPSET) == "unrolled"  # the DirectML EP leaves Steepness unset


def test_dml_target_emits_one_onnx_node() -> None:
    rng = np.random.default_rng(1)
    for op in CELLS:
        desc = make_desc(op, recurrent_case(rng, op, F16, "BIDIRECTIONAL", lengths=[1, 4, 0]).fields)
        model = lowering.lower(desc, "t", target="dml")
        assert [n.op_type for n in model.graph.node].count(op) == 1


def cuda_ep_takes(node: Any) -> bool:
    """Whether the CUDA EP keeps an ONNX RNN/GRU/LSTM node (else it falls back to the CPU EP):
    RNNNeedFallbackToCPU in onnxruntime/core/providers/cuda/cuda_execution_provider.cc."""
    supported = {"LSTM": ["sigmoid", "tanh", "tanh"] * 2, "RNN": ["tanh"] * 2, "GRU": ["sigmoid", "tanh"] * 2}[node.op_type]
    for a in node.attribute:
        if a.name in ("activation_alpha", "activation_beta", "clip"):
            return False
        if a.name == "activations" and any(s.decode().lower() != supported[i] for i, s in enumerate(a.strings)):
            return False
        if (node.op_type, a.name) == ("LSTM", "input_forget") and a.i != 0:
            return False
        if (node.op_type, a.name) == ("GRU", "linear_before_reset") and a.i != 1:
            return False
    return not (node.op_type == "LSTM" and len(node.input) == 8 and node.input[7])


def test_cuda_target_chooses_cudnn_where_it_applies() -> None:
    """Every matrix case cuDNN computes (the default cells, GRU's LinearBeforeReset, LSTM without
    peepholes, clip or coupled gates) gets one ONNX node the CUDA EP keeps; the others the
    unrolled graph. The matrix (tests/lowering/test_matrix.py) runs each cudnn graph on the CPU EP (whose
    kernels stand in for cuDNN's: the same ONNX semantics at lengths 1..seq_length) and the CUDA EP."""
    chosen = []
    for case in cases():
        desc = make_desc(case.op, case.fields)
        takes = recurrent.cudnn_cell(desc)
        assert choices.choose(desc, "cuda", DEFAULT_OPSET) == ("cudnn" if takes else "unrolled"), case.id
        assert choices.choose(desc, "portable", DEFAULT_OPSET) == "unrolled"
        if takes:
            chosen.append(case.id)
            model = lowering.lower(desc, "t", target="cuda")
            (node,) = [n for n in model.graph.node if n.op_type == case.op]
            assert node.doc_string == recurrent.CUDNN_DOC and cuda_ep_takes(node), case.id
    assert len(chosen) == 55
    assert {c.split("-")[0] for c in chosen} == set(CELLS)


@pytest.mark.parametrize(
    ("op", "change"),
    [
        ("RNN", {"ActivationDescs": [{"Type": "ACTIVATION_RELU"}] * 2}),  # cuDNN has it; the CUDA EP refuses it
        ("GRU", {"LinearBeforeReset": False}),
        ("GRU", {"ActivationDescs": [{"Type": "ACTIVATION_TANH"}, {"Type": "ACTIVATION_SIGMOID"}] * 2}),
        ("LSTM", {"UseClipThreshold": True, "ClipThreshold": 1e30}),
        ("LSTM", {"CoupleInputForget": True}),
        ("LSTM", {"PeepholeTensor": tensor("FLOAT32", [1, 1, 2, 6])}),
        ("LSTM", {"ActivationDescs": [{"Type": "ACTIVATION_SIGMOID"}, {"Type": "ACTIVATION_TANH"}] * 3}),
    ],
)
def test_cudnn_refuses_what_cudnn_does_not_compute(op: str, change: dict[str, Any]) -> None:
    fields = recurrent_case(np.random.default_rng(3), op, F32, "BIDIRECTIONAL", peephole=False).fields
    fields |= {"LinearBeforeReset": True} if op == "GRU" else {}
    assert recurrent.cudnn_cell(make_desc(op, fields))
    assert not recurrent.cudnn_cell(make_desc(op, fields | change))


def onnx_node_cases() -> list[Any]:
    """The matrix's FLOAT32 cases the CPU EP's RNN/GRU/LSTM kernels compute as DirectML does: every
    length from 1 to seq_length (a length of 0 is DirectML's own: the kernels differ there; they
    refuse one beyond seq_length), activations the DirectML EP maps."""
    out = []
    for case in cases():
        lengths = case.inputs.get("SequenceLengthsTensor")
        seq = case.fields["InputTensor"]["Sizes"][1]
        if case.fields["InputTensor"]["DataType"] != "FLOAT32" or (
            lengths is not None and (lengths.min() == 0 or lengths.max() > seq)
        ):
            continue
        if recurrent.applies(make_desc(case.op, case.fields), "onnx_node", DEFAULT_OPSET):
            out.append(case)
    return out


@pytest.mark.parametrize("case", onnx_node_cases(), ids=lambda c: c.id)
def test_onnx_node_on_the_cpu_ep(case: Any) -> None:
    desc = make_desc(case.op, case.fields)
    got = run_case(case.op, case.fields, case.inputs, target="dml", variant="onnx_node")
    assert not (bad := mismatches(desc, got, registry.reference_outputs(desc, case.inputs), "cpu")), bad


# -- refusals -----------------------------------------------------------------------------------


def base(op: str = "LSTM", direction: str = "BIDIRECTIONAL") -> dict[str, Any]:
    return recurrent_case(np.random.default_rng(2), op, F32, direction, lengths=[1, 2, 3]).fields


@pytest.mark.parametrize(
    ("op", "change", "path", "message"),
    [
        ("RNN", {"InputTensor": tensor("FLOAT32", [2, 4, 3, 3])}, "desc.InputTensor.Sizes[0]", "must be 1"),
        ("LSTM", {"WeightTensor": tensor("FLOAT32", [1, 2, 6, 3])}, "desc.WeightTensor.Sizes", "must be [1, 2, 8, 3]"),
        ("GRU", {"RecurrenceTensor": tensor("FLOAT32", [1, 1, 6, 2])}, "desc.RecurrenceTensor.Sizes", "must be [1, 2, 6, 2]"),
        ("GRU", {"BiasTensor": tensor("FLOAT32", [1, 1, 2, 6])}, "desc.BiasTensor.Sizes", "must be [1, 1, 2, 12]"),
        ("LSTM", {"PeepholeTensor": tensor("FLOAT32", [1, 1, 2, 4])}, "desc.PeepholeTensor.Sizes", "3 * hidden_size"),
        ("LSTM", {"CellMemInitTensor": tensor("FLOAT32", [1, 1, 3, 2])}, "desc.CellMemInitTensor.Sizes", "must be"),
        ("RNN", {"HiddenInitTensor": tensor("FLOAT16", [1, 2, 3, 2])}, "desc.HiddenInitTensor.DataType", "same DataType"),
        ("RNN", {"SequenceLengthsTensor": tensor("UINT32", [1, 1, 3, 1])}, "desc.SequenceLengthsTensor.Sizes", "[1, 1, 1, 3]"),
        ("RNN", {"SequenceLengthsTensor": tensor("INT32", [1, 1, 1, 3])}, "desc.SequenceLengthsTensor.DataType", ""),
        ("GRU", {"OutputSequenceTensor": tensor("FLOAT32", [4, 1, 3, 2])}, "desc.OutputSequenceTensor.Sizes", "[4, 2, 3, 2]"),
        ("LSTM", {"OutputSingleTensor": tensor("FLOAT32", [2, 3, 2])}, "desc.OutputSingleTensor.Sizes", ""),
        (
            "RNN",
            {"ActivationDescCount": 1, "ActivationDescs": [{"Type": "ACTIVATION_TANH"}]},
            "desc.ActivationDescCount",
            "must be 2",
        ),
        (
            "GRU",
            {"ActivationDescs": [{"Type": "ACTIVATION_TANH"}] * 3 + [{"Type": "ACTIVATION_CELU", "Alpha": 1.0}]},
            "desc.ActivationDescs[3].Type",
            "CELU",
        ),
        (
            "LSTM",
            {"ActivationDescs": [{"Type": "ACTIVATION_SOFTMAX"}] * 6},
            "desc.ActivationDescs[0].Type",
            "cannot be a fused activation",
        ),
        (
            "RNN",
            {"ActivationDescs": [{"Type": "ACTIVATION_SOFTPLUS", "Steepness": 0.0}] * 2},
            "desc.ActivationDescs[0].Steepness",
            "must not be 0",
        ),
        ("RNN", {"ActivationDescCount": 3}, "desc.ActivationDescCount", "ActivationDescs has 2 elements"),
        ("RNN", {"Direction": "SIDEWAYS"}, "desc.Direction", "DML_RECURRENT_NETWORK_DIRECTION"),
    ],
)
def test_refusals(op: str, change: dict[str, Any], path: str, message: str) -> None:
    e = refusal(op, base(op) | change)
    assert format_path(e.path) == path, str(e)
    assert message in e.rule, e.rule


def test_an_output_is_required() -> None:
    f = {k: v for k, v in base("GRU").items() if not k.startswith("Output")}
    e = refusal("GRU", f)
    assert format_path(e.path) == "desc" and "at least one output" in e.rule


def test_celu_is_an_rnn_activation() -> None:
    """DirectML compiles CELU in RNN (matrix: rnn celu), not in GRU or LSTM."""
    f = base("RNN") | {"ActivationDescs": [{"Type": "ACTIVATION_CELU", "Alpha": 1.3}] * 2}
    make_desc("RNN", f)


# -- properties ---------------------------------------------------------------------------------------


@SETTINGS
@given(
    op=st.sampled_from(sorted(CELLS)),
    direction=st.sampled_from(DIRECTIONS),
    dtype=st.sampled_from((F32, F16)),
    seq=st.integers(1, 4),
    batch=st.integers(1, 3),
    input_size=st.integers(1, 4),
    hidden=st.integers(1, 4),
    optional=st.booleans(),
    with_lengths=st.booleans(),
    activation=st.sampled_from(sorted(ACTIVATIONS)),
    cudnn=st.booleans(),
    flags=st.tuples(st.booleans(), st.booleans(), st.booleans(), st.booleans()),
    seed=SEEDS,
)
def test_lowerings_match_the_reference(
    op: str,
    direction: str,
    dtype: dtypes.DataType,
    seq: int,
    batch: int,
    input_size: int,
    hidden: int,
    optional: bool,
    with_lengths: bool,
    activation: str,
    cudnn: bool,
    flags: tuple[bool, bool, bool, bool],
    seed: int,
) -> None:
    """The unrolled graph, and with `cudnn` a cell cuDNN computes, its cudnn graph too; lengths
    from 0 to seq_length + 2."""
    rng = np.random.default_rng(seed)
    lengths = [int(v) for v in rng.integers(0, seq + 3, batch)] if with_lengths else None
    if activation in recurrent_reference.REFUSED_ACTIVATIONS.get(op, ()):
        activation = "ACTIVATION_TANH"
    acts = ({"Type": activation, **ACTIVATIONS[activation]},) + tuple(
        {"Type": a} for a in ("ACTIVATION_TANH",) * (CELLS[op].activations - 1)
    )
    if cudnn:
        acts = tuple({"Type": a} for a in recurrent.CUDNN_ACTIVATIONS[op])
        flags = (op == "GRU", False, flags[2], False)
    extra: dict[str, Any] = {}
    if op == "GRU":
        extra["LinearBeforeReset"] = flags[0]
    if op == "LSTM":
        extra = {"CoupleInputForget": flags[0], "UseClipThreshold": flags[1], "ClipThreshold": 0.3 if flags[2] else 2.0}
    case = recurrent_case(
        rng,
        op,
        dtype,
        direction,
        seq=seq,
        batch=batch,
        input_size=input_size,
        hidden=hidden,
        optional=optional,
        peephole=flags[3],
        lengths=lengths,
        acts=acts,
        extra=extra,
    )
    desc = make_desc(op, case.fields)
    want = registry.reference_outputs(desc, case.inputs)
    got = run_case(op, case.fields, case.inputs)
    assert not (bad := mismatches(desc, got, want, "cpu")), (case.fields, bad)
    assert recurrent.cudnn_cell(desc) or not cudnn
    if cudnn:
        got = run_case(op, case.fields, case.inputs, target="cuda", variant="cudnn")
        assert not (bad := mismatches(desc, got, want, "cpu")), ("cudnn", case.fields, bad)
