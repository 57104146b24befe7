"""Every operator type built from Python runs on DirectML: each through DirectML's own API
(`ep="dml-api"`, a desc at a time), and all of them in one graph on the DirectML EP under Wine
(`ep="dml"`, one session), each against the numpy reference within tolerances.py."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import numpy as np
import pytest

from dml2onnx import dmlx
from dml2onnx.backends import dmlapi, winhost
from dml2onnx.core.desc import OperatorDesc
from dmlx_examples import NAMES, call_node, expressions, ramp, rebuilt, valid_examples
from support import mismatches

Call = tuple[dmlx.Graph, dict[str, np.ndarray], OperatorDesc, dict[str, dmlx.Expression]]


@pytest.fixture(scope="module", autouse=True)
def _memory_back_after_the_module() -> Iterator[None]:
    """The one graph of every operator leaves the Wine host holding its lavapipe memory (a heap that
    does not shrink): the host is closed after this module, so the tests after it start with the
    memory back (without it, make test-dml was killed for memory on the 24 GiB machine)."""
    yield
    gc.collect()
    winhost.shutdown()


def example_call(name: str) -> Call:
    """The operator's first example through its function: the graph, its inputs' values, the desc, its outputs."""
    example, desc = valid_examples(name)[0]
    g, inputs, result = rebuilt(example, desc, explicit=True)
    feeds = {k: ramp(e.tensor_desc) for k, e in inputs.items()}
    return g, feeds, call_node(result).desc, {e.output: e for e in expressions(result)}


@pytest.mark.skipif(dmlapi.missing() is not None, reason=f"DirectML's API under Wine: {dmlapi.missing()} (make dml-setup)")
@pytest.mark.parametrize("name", NAMES)
def test_every_operator_through_directml_api(name: str) -> None:
    g, feeds, desc, outputs = example_call(name)
    got = g.run(feeds, outputs, ep="dml-api")
    want = g.reference(feeds, outputs)
    assert not (bad := mismatches(desc, got, want, "dml-api")), bad


@pytest.mark.dml
def test_every_operator_on_the_dml_ep_in_one_graph() -> None:
    """One graph of every operator's example (one session: each its own takes seconds to load), on
    the DirectML EP, lowered for the dml target as `run --ep dml` lowers."""
    g = dmlx.Graph()
    feeds: dict[str, np.ndarray] = {}
    outputs: dict[str, dmlx.Expression] = {}
    descs: dict[str, tuple[OperatorDesc, dict[str, str]]] = {}
    for name in NAMES:
        example, desc = valid_examples(name)[0]
        _, inputs, result = rebuilt(example, desc, explicit=True, g=g, prefix=f"{name}.")
        feeds |= {k: ramp(e.tensor_desc) for k, e in inputs.items()}
        named = {f"{name}.{e.output}": e for e in expressions(result)}
        outputs |= named
        descs[name] = (call_node(result).desc, {e.output: k for k, e in named.items()})
    got = g.run(feeds, outputs, ep="dml", target="dml")
    want = g.reference(feeds, outputs)
    bad = []
    for name, (desc, keys) in descs.items():
        by_point = {point: got[k] for point, k in keys.items()}, {point: want[k] for point, k in keys.items()}
        if wrong := mismatches(desc, *by_point, "dml"):
            bad.append(f"{name}: {wrong}")
    assert not bad, "\n".join(bad)
