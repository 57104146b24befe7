"""The Python API builds and runs every DirectML operator type: each example desc of each
operator (the same ones `dml2onnx ops NAME --example` draws from), rebuilt by its generated
function from input Expressions and keyword fields, is the same desc; its outputs inferred by the
operator's output rule are the example's; and the graph runs on the CPU EP as the numpy reference
computes it. tests/backends/test_dmlx_engines.py runs one per operator on DirectML."""

from __future__ import annotations

import numpy as np
import pytest

from dml2onnx import dmlx
from dml2onnx.core import catalog, dtypes
from dml2onnx.dmlx import shapes
from dmlx_examples import NAMES, call_node, expressions, plain, ramp, rebuilt, valid_examples
from support import EPS, mismatches


def test_every_operator_has_a_function_and_a_valid_example() -> None:
    assert len(dmlx.FUNCTIONS) == len(NAMES) == 177
    for name in NAMES:
        assert valid_examples(name), name
        assert dmlx.function_of(name) is getattr(dmlx, dmlx.function_of(name).__name__)


@pytest.mark.parametrize("name", NAMES)
def test_given_outputs_rebuild_every_example_exactly(name: str) -> None:
    for example, desc in valid_examples(name):
        _, _, result = rebuilt(example, desc, explicit=True)
        assert plain(call_node(result).desc) == plain(desc), example


# Examples whose outputs are not the rule's: a SLICE1 output shorter than its window (DirectML
# takes the first elements), where DirectMLX's rule gives the whole window.
OTHER_THAN_THE_RULE = {"SLICE1"}


@pytest.mark.parametrize("name", [n for n in NAMES if shapes.rule(catalog.lookup(n))])
def test_output_rules_give_the_examples_outputs(name: str) -> None:
    """The first output's sizes and data type as the example's, but where DirectMLX's rule names
    another type (UINT8 for comparisons, UINT32 for indices) or none (CAST's, given); every output validated."""
    for example, desc in valid_examples(name):
        try:
            _, _, result = rebuilt(example, desc, explicit=False)
        except TypeError as e:  # the rule leaves the type open (CAST) or all (DIAGONAL_MATRIX1 without input)
            assert "its output rule leaves it open" in str(e), e
            out = desc.tensor(desc.outputs[0])
            sizes = list(out.sizes) if "output_sizes" in str(e) else None
            _, _, result = rebuilt(example, desc, explicit=False, output_type=out.data_type.name, output_sizes=sizes)
        got, want = call_node(result).desc.tensor(desc.outputs[0]), desc.tensor(desc.outputs[0])
        if name not in OTHER_THAN_THE_RULE:
            assert got.sizes == want.sizes, example
        if name in shapes.UINT8_RESULTS:
            assert got.data_type == dtypes.UINT8
        elif name in ("ARGMAX", "ARGMIN") or example.get("Function") in ("ARGMAX", "ARGMIN"):
            assert got.data_type == dtypes.UINT32  # DirectMLX's indices; the examples' are INT64
        else:
            assert got.data_type == want.data_type, example


# Operators whose example (indices of 1) writes one element many times: the CPU EP writes in order, as
# the reference; the CUDA EP's writer is any (H200). The matrix checks them there with distinct indices.
COLLIDING_WRITES = ("MAX_UNPOOLING", "SCATTER", "SCATTER_ND")


@EPS
@pytest.mark.parametrize("name", NAMES)
def test_every_operator_runs_as_the_reference(name: str, ep: str) -> None:
    """On the CPU EP (and the CUDA EP where onnxruntime-gpu is), lowered for the EP's own target."""
    if ep == "cuda" and name in COLLIDING_WRITES:
        pytest.skip("the example's indices are all 1: every update writes one element, whose last writer ONNX leaves open")
    example, desc = valid_examples(name)[0]
    g, inputs, result = rebuilt(example, desc, explicit=True)
    feeds = {k: ramp(e.tensor_desc) for k, e in inputs.items()}
    node = call_node(result)
    outputs = {e.output: e for e in expressions(result)}
    got = g.run(feeds, outputs, ep=ep)
    want = g.reference(feeds, outputs)
    assert not (bad := mismatches(node.desc, got, want, ep)), bad


def test_a_missing_output_says_which_argument_names_it() -> None:
    g = dmlx.Graph()
    x = g.input("x", "FLOAT32", [2, 3])
    with pytest.raises(TypeError, match=r"Cast needs OutputTensor's type \(output_type\)"):
        dmlx.Cast(x)
    assert dmlx.Cast(x, output_type="INT32").data_type == "INT32"
    with pytest.raises(TypeError, match="DML_OPERATOR_ROI_ALIGN has no output rule"):
        dmlx.RoiAlign(x, x, x, reduction_function="AVERAGE", interpolation_mode="LINEAR", spatial_scale_x=1.0,
                      spatial_scale_y=1.0, out_of_bounds_input_value=0.0, minimum_samples_per_output=1,
                      maximum_samples_per_output=1)  # fmt: skip
    with pytest.raises(TypeError, match=r"Cast: no argument 'output_types' \(did you mean output_type or output_sizes\?\)"):
        dmlx.Cast(x, output_types="INT32")
    with pytest.raises(TypeError, match=r"TopK1: no argument 'K' \(did you mean k\?\)"):
        dmlx.TopK1(x, axis=1, K=1)
    with pytest.raises(TypeError, match="Cast: missing a required argument: 'input'"):
        dmlx.Cast(output_type="INT32")
    with pytest.raises(TypeError, match="'OutputFooTensor' is not an output of DML_OPERATOR_TOP_K1"):
        dmlx.TopK1(x, axis=1, k=1, outputs={"OutputFooTensor": None})


def test_a_convolution_gemm_chain_from_python() -> None:
    """The README's walk: a convolution, a fused ReLU, a GEMM and an ADD, every engine's answer the reference's."""
    g = dmlx.Graph()
    x = g.input("x", "FLOAT32", [1, 2, 5, 5])
    w = g.input("w", "FLOAT32", [3, 2, 3, 3])
    conv = dmlx.Convolution(x, w, strides=[2, 2], start_padding=[1, 1], end_padding=[1, 1],
                            fused_activation=dmlx.FusedActivation.Relu())  # fmt: skip
    assert (conv.data_type, conv.sizes) == ("FLOAT32", (1, 3, 3, 3))
    m = g.input("m", "FLOAT32", [1, 3, 3, 4], strides=[0, 0, 4, 1])  # one matrix, broadcast over the channels
    y = dmlx.Gemm(conv, m, alpha=0.5)
    assert y.sizes == (1, 3, 3, 4)
    z = dmlx.Add(y, y)
    top = dmlx.TopK1(z, axis=3, k=2)
    assert set(top) == {"OutputValueTensor", "OutputIndexTensor"} and top["OutputIndexTensor"].data_type == "UINT32"
    rng = np.random.default_rng(7)
    feeds = {
        "x": rng.normal(size=(1, 2, 5, 5)),
        "w": rng.normal(size=(3, 2, 3, 3)),
        "m": np.broadcast_to(rng.normal(size=(3, 4)), (1, 3, 3, 4)),
    }
    outs = {"z": z, "values": top["OutputValueTensor"], "indices": top["OutputIndexTensor"]}
    got, want = g.run(feeds, outs), g.reference(feeds, outs)
    np.testing.assert_allclose(got["z"], want["z"], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got["values"], want["values"], rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(got["indices"], want["indices"])
    assert want["indices"].dtype == dtypes.UINT32.numpy
