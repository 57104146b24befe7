"""DML_OPERATOR_RANDOM_GENERATOR: Random123's known answers for Philox4x32-10, DirectML's own
values pinned (the counter's word order, the blocks' order in the output, the updated state), the
page's remark on the increment, chained executions, refusals (and DirectML's), the matrix through
DirectML's API, and properties of the lowered graph against the numpy reference."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dml2onnx import lowering
from dml2onnx.backends import dmlapi, runtime
from dml2onnx.cases.random_generator import cases, fields_for, state_sizes
from dml2onnx.core.desc import parse_operator_desc
from dml2onnx.core.errors import format_path
from dml2onnx.lowering import choices
from dml2onnx.ops import random_generator as rg
from dml2onnx.ops import registry
from strategies import shapes
from support import every_output, make_desc, printed, refusal, run_cli, tensor, write_model

OP = "RANDOM_GENERATOR"
SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_why = dmlapi.missing()
live = pytest.mark.skipif(_why is not None, reason=f"DirectML's API under Wine is not set up ({_why})")

# Random123 1.14's kat_vectors, philox4x32 10: counter (x0..x3), key (k0, k1) -> the four words
KNOWN_ANSWERS = (
    ([0, 0, 0, 0, 0, 0], [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]),
    ([0xFFFFFFFF] * 6, [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]),
    (
        [0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344, 0xA4093822, 0x299F31D0],
        [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1],
    ),
)
# DirectML's API (1.24.4 under Wine): counter 0, key (0x12345678, 0x9ABCDEF0), OutputTensor [1, 1, 2, 5]
# (models/random_generator.json: `run --ep directml` prints the same)
KEY = [0x12345678, 0x9ABCDEF0]
DIRECTML_FIRST = [41530167, 3971333517, 3859924214, 1156376693, 3951655478]
DIRECTML_FIRST += [1338898102, 4221713804, 1861049159, 544937547, 1565702602]
DIRECTML_SECOND = [2040618809, 2705101995, 1311211766, 3596742621, 147075313]
DIRECTML_SECOND += [2655628691, 1220927897, 241106907, 3022719645, 3579639521]


def lowered(desc: Any, variant: str = "uint32_halves") -> Any:
    """A CPU EP session of a candidate, built for its target (choices.target_of): uint64_bitwise
    at opset 18 (its BitwiseXor), the others at the default opset."""
    opset = {"opset": 18} if variant == "uint64_bitwise" else {}
    target = choices.target_of(OP, variant)
    return runtime.create(lowering.lower(desc, "t", target=target, variant=variant, **opset), "t", "cpu")


def feed(words: list[int], rank: int = 4) -> dict[str, np.ndarray]:
    return {"InputStateTensor": np.array(words, np.uint32).reshape(state_sizes(rank))}


def both(desc: Any, feeds: dict[str, np.ndarray]) -> list[dict[str, np.ndarray]]:
    """Every output of every candidate's graph (CPU EP) and of the reference."""
    return [*(every_output(lowered(desc, v), desc, feeds) for v in rg.CANDIDATES), registry.reference_outputs(desc, feeds)]


# -- values -------------------------------------------------------------------------------------------


def test_random123_known_answers() -> None:
    desc = make_desc(OP, fields_for([4]))
    for words, want in KNOWN_ANSWERS:
        assert rg.philox(np.array([words[:4]], np.uint32), (words[4], words[5])).ravel().tolist() == want
        for got in both(desc, feed(words)):
            assert got["OutputTensor"].tolist() == want


def test_directml_values_and_state() -> None:
    """Block j is Philox of counter + j, its words x0..x3 the output's elements 4j..4j+3 in logical
    order (the last block's words past N dropped); the state goes up by ceil(N / 4), key kept."""
    desc = make_desc(OP, fields_for([1, 1, 2, 5]))
    for got in both(desc, feed([0, 0, 0, 0, *KEY])):
        assert got["OutputTensor"].ravel().tolist() == DIRECTML_FIRST
        assert got["OutputStateTensor"].ravel().tolist() == [3, 0, 0, 0, *KEY]
    for got in both(desc, feed([3, 0, 0, 0, *KEY])):
        assert got["OutputTensor"].ravel().tolist() == DIRECTML_SECOND
        assert got["OutputStateTensor"].ravel().tolist() == [6, 0, 0, 0, *KEY]
    # the same blocks, 4 at a time: element 0 of the counter is its low word
    blocks = rg.philox(np.array([[j, 0, 0, 0] for j in range(6)], np.uint32), (KEY[0], KEY[1])).ravel()
    assert blocks[:10].tolist() == DIRECTML_FIRST and blocks[12:22].tolist() == DIRECTML_SECOND


def test_counter_carries_through_words_and_wraps() -> None:
    desc = make_desc(OP, fields_for([9]))  # 3 blocks
    cases_ = {
        (0xFFFFFFFF, 0xFFFFFFFF, 0, 0): [[0xFFFFFFFF, 0xFFFFFFFF, 0, 0], [0, 0, 1, 0], [1, 0, 1, 0]],
        (0xFFFFFFFE, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF): [[0xFFFFFFFE] + [0xFFFFFFFF] * 3, [0xFFFFFFFF] * 4, [0] * 4],
    }
    for counter, rows in cases_.items():
        want = rg.philox(np.array(rows, np.uint32), (5, 6)).ravel()[:9]
        assert rg.counter_rows(sum(w << (32 * i) for i, w in enumerate(counter)), 3).tolist() == rows
        next_state = rg.counter_rows(sum(w << (32 * i) for i, w in enumerate(counter)), 4)[3].tolist()
        for got in both(desc, feed([*counter, 5, 6])):
            assert got["OutputTensor"].tolist() == want.tolist()
            assert got["OutputStateTensor"].ravel().tolist() == [*next_state, 5, 6]


def test_chained_executions_continue_the_sequence() -> None:
    """Two executions of 6 through the state they pass on: blocks 0-1 then 2-3, so the second's
    first words are the longer run's elements 8.. (6 is not a multiple of 4: words 6, 7 skipped)."""
    short, long = make_desc(OP, fields_for([2, 3])), make_desc(OP, fields_for([16], with_state=False))
    start = feed([0xFFFFFFFF, 7, 0, 0, 11, 12])
    first = every_output(lowered(short), short, start)
    second = every_output(lowered(short, "uint64_bitwise"), short, {"InputStateTensor": first["OutputStateTensor"]})
    whole = every_output(lowered(long), long, start)["OutputTensor"]
    assert first["OutputTensor"].ravel().tolist() == whole[:6].tolist()
    assert second["OutputTensor"].ravel().tolist() == whole[8:14].tolist()


def test_the_pages_remark_on_the_increment() -> None:
    """Counter 0x48656c6c'6f46726f'6d536561'74746c65 and OutputTensor {3, 3, 20, 7219}: up by
    324,855, to ...'7479615c (the page prints ...'746f776e, which is not the sum)."""
    counter = 0x48656C6C_6F46726F_6D536561_74746C65
    desc = make_desc(OP, fields_for([3, 3, 20, 7219]))
    assert rg.blocks(desc) == 324855
    words = [(counter >> (32 * i)) & 0xFFFFFFFF for i in range(4)]
    got = registry.reference_outputs(desc, feed([*words, 1, 2]))["OutputStateTensor"].ravel().tolist()
    assert got == [0x7479615C, 0x6D536561, 0x6F46726F, 0x48656C6C, 1, 2]


@pytest.mark.parametrize("ep", ["cpu", pytest.param("directml", marks=live)])
def test_strided_output_is_filled_in_logical_order(tmp_path: Path, ep: str) -> None:
    """OutputTensor [1, 1, 2, 5] with Strides [10, 10, 1, 2] (column-major rows): element (r, c)
    holds word 5r + c, at buffer offset r + 2c (DirectML's API measured the same)."""
    out = tensor("UINT32", [1, 1, 2, 5]) | {"Strides": [10, 10, 1, 2]}
    model = {
        "resources": {
            "state": {"initialValuesDataType": "UINT32", "initialValues": [0, 0, 0, 0, *KEY]},
            "bits": {"initialValuesDataType": "UINT32", "initialValues": {"valueCount": 10, "value": 0}},
        },
        "dispatchables": {"rng": {"type": "DML_OPERATOR_RANDOM_GENERATOR", "desc": fields_for([1]) | {"OutputTensor": out}}},
        "commands": [
            {"type": "dispatch", "dispatchable": "rng", "bindings": {"InputStateTensor": "state", "OutputTensor": "bits"}},
            {"type": "print", "resource": "bits"},
        ],
    }
    del model["dispatchables"]["rng"]["desc"]["OutputStateTensor"]
    status, stdout, err = run_cli("run", write_model(tmp_path, model), "--ep", ep)
    assert status == 0, err
    want = np.array(DIRECTML_FIRST).reshape(2, 5).T.ravel().tolist()
    assert printed(stdout)["bits"] == want


# -- refusals -----------------------------------------------------------------------------------------

REFUSALS = (
    ({"InputStateTensor": tensor("UINT32", [2, 3])}, "desc.InputStateTensor.Sizes[0]", "must be 1"),
    ({"InputStateTensor": tensor("UINT32", [6, 1])}, "desc.InputStateTensor.Sizes[0]", "must be 1"),
    ({"InputStateTensor": tensor("UINT32", [1, 1, 1, 7])}, "desc.InputStateTensor.Sizes[3]", "must be 6"),
    ({"OutputStateTensor": tensor("UINT32", [6])}, "desc.OutputStateTensor", "DimensionCount"),
    ({"OutputTensor": tensor("INT32", [4])}, "desc.OutputTensor.DataType", "INT32"),
)


@pytest.mark.parametrize(("change", "path", "text"), REFUSALS)
def test_refusals(change: dict[str, Any], path: str, text: str) -> None:
    e = refusal(OP, fields_for([4]) | change)
    assert format_path(e.path).startswith(path) and text in str(e.rule), (format_path(e.path), e.rule)


def test_feature_level_3_0_takes_4d_states_only() -> None:
    refusal(OP, fields_for([1, 1, 1, 4], state_rank=1), level="3_0")
    refusal(OP, fields_for([4]), level="3_0")
    lowering.validate(parse_operator_desc(OP, fields_for([1, 1, 2, 2]), ("desc",), ("type",), level="3_0"))


@live
def test_directml_refuses_what_is_refused() -> None:
    for change, _, _ in REFUSALS[:4]:
        desc = parse_operator_desc(OP, fields_for([4]) | change, ("desc",), ("type",))
        size = int(np.prod(desc.tensor("InputStateTensor").sizes))
        with pytest.raises(dmlapi.DmlApiError) as e:
            dmlapi.execute(desc, {"InputStateTensor": np.zeros(desc.tensor("InputStateTensor").sizes, np.uint32)})
        assert e.value.hresult == 0x80070057, (change, size)


@live
def test_matrix_through_directml() -> None:
    """Every matrix case through DirectML's own API: bit for bit the reference's, state included;
    and an OutputTensor with Strides is written in logical order."""
    for case in cases():
        desc = make_desc(OP, case.fields)
        got = dmlapi.execute(desc, case.inputs).outputs
        want = registry.reference_outputs(desc, case.inputs)
        assert got.keys() == want.keys(), case.id
        for k in want:
            assert np.array_equal(got[k], want[k]), (case.id, k)
    strided = fields_for([1, 1, 2, 3]) | {"OutputTensor": tensor("UINT32", [1, 1, 2, 3]) | {"Strides": [6, 6, 1, 2]}}
    desc = make_desc(OP, strided)
    got = dmlapi.execute(desc, feed([9, 0, 0, 0, 1, 2])).output
    assert np.array_equal(got, registry.reference_outputs(desc, feed([9, 0, 0, 0, 1, 2]))["OutputTensor"])


# -- the graph ------------------------------------------------------------------------------------------


def test_portable_graph_has_no_64_bit_or_bitwise_nodes() -> None:
    model = lowering.lower(make_desc(OP, fields_for([2, 3])), "t")
    kinds = {n.op_type for n in model.graph.node}
    assert not kinds & {"BitShift", "BitwiseAnd", "BitwiseXor", "BitwiseOr", "Mod"}, kinds
    assert {"Mul", "Div", "Gather"} <= kinds
    assert all(i.data_type != onnx.TensorProto.UINT64 for i in model.graph.initializer)
    casts = {a.i for n in model.graph.node if n.op_type == "Cast" for a in n.attribute}
    assert casts <= {onnx.TensorProto.INT32, onnx.TensorProto.UINT32}, casts


def test_candidates_and_the_choice() -> None:
    desc = make_desc(OP, fields_for([2, 5]))
    assert choices.available(desc, 17) == ("uint32_halves", "byte_tables")  # BitwiseXor is opset 18
    assert choices.available(desc, 18) == rg.CANDIDATES
    assert choices.available(desc, 21, "portable") == ("uint32_halves",)  # the CUDA EP lacks Bitwise*
    assert choices.available(desc, 21, "cuda") == ("uint32_halves", "byte_tables")
    assert choices.available(desc, 21, "cpu") == choices.available(desc, 21, "dml") == ("uint32_halves", "uint64_bitwise")
    for target in ("cpu", "dml"):
        assert choices.choose(desc, target, 18) == "uint64_bitwise" and choices.choose(desc, target, 17) == "uint32_halves"
    assert choices.target_of(OP, "uint64_bitwise") == "cpu" and choices.target_of(OP, "byte_tables") == "cuda"


# the kinds of node byte_tables uses, every one registered by the CUDA EP for the types it takes
CUDA_NODES = {"Add", "Mul", "Div", "Cast", "Gather", "GatherElements", "ReduceSum", "Range", "Concat", "Split", "Slice"}
CUDA_NODES |= {"Reshape", "Transpose", "Unsqueeze"}


def test_byte_tables_graph_is_the_cuda_eps() -> None:
    """18 nodes a round, every one of a kind and type the CUDA EP registers; the sums in FLOAT64
    (its integer ReduceSum computes in FLOAT32)."""
    model = onnx.shape_inference.infer_shapes(
        lowering.lower(make_desc(OP, fields_for([2, 3])), "t", target="cuda", variant="byte_tables")
    )
    types = {v.name: v.type.tensor_type.elem_type for v in model.graph.value_info} | {
        i.name: i.data_type for i in model.graph.initializer
    }
    kinds = {n.op_type for n in model.graph.node}
    assert kinds <= CUDA_NODES, kinds - CUDA_NODES
    assert len(model.graph.node) <= 240 and sum(n.op_type == "GatherElements" for n in model.graph.node) == rg.ROUNDS
    assert {types[n.input[0]] for n in model.graph.node if n.op_type == "ReduceSum"} == {onnx.TensorProto.DOUBLE}
    arithmetic = {types[n.input[0]] for n in model.graph.node if n.op_type in ("Add", "Mul", "Div")}
    assert arithmetic <= {onnx.TensorProto.UINT32, onnx.TensorProto.UINT64, onnx.TensorProto.INT32, onnx.TensorProto.DOUBLE}


@live
@pytest.mark.parametrize("args", [["--target", "portable"], ["--target", "dml", "--opset", "18"]])
def test_model_on_the_directml_ep(args: list[str]) -> None:
    """models/random_generator.json on the DirectML EP under Wine prints what the CPU EP and
    DirectML's own API print."""
    model = str(Path(__file__).parents[2] / "models" / "random_generator.json")
    outs = [run_cli("run", model, "--ep", ep, *args) for ep in ("dml", "cpu", "directml")]
    assert all(status == 0 for status, _, _ in outs), [err for _, _, err in outs]
    assert outs[0][1] == outs[1][1] == outs[2][1]
    assert printed(outs[0][1])["bits1"] == DIRECTML_FIRST


@pytest.mark.parametrize("variant", ["uint32_halves", "byte_tables"])
@pytest.mark.parametrize("opset", [13, 18, 21])
def test_every_opset(opset: int, variant: str) -> None:
    """Split takes num_outputs from opset 18 on; the graphs are the same otherwise."""
    desc = make_desc(OP, fields_for([2, 5]))
    model = lowering.lower(desc, "t", opset=opset, target=choices.target_of(OP, variant), variant=variant)
    start = feed([0, 0, 0, 0, *KEY])
    assert every_output(runtime.create(model, "t", "cpu"), desc, start)["OutputTensor"].ravel().tolist() == DIRECTML_FIRST


WORDS = st.one_of(st.sampled_from([0, 1, 0xFFFFFFFE, 0xFFFFFFFF]), st.integers(0, 2**32 - 1))


@SETTINGS
@given(out=shapes(max_rank=8), state=st.lists(WORDS, min_size=6, max_size=6), rank=st.integers(1, 8), with_state=st.booleans())
def test_property_lowered_matches_reference(out: tuple[int, ...], state: list[int], rank: int, with_state: bool) -> None:
    desc = make_desc(OP, fields_for(out, rank, with_state))
    *graphs, want = both(desc, feed(state, rank))
    for got in graphs:
        assert got.keys() == want.keys()
        for k in want:
            assert np.array_equal(got[k], want[k]), k
