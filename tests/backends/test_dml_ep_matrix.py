"""The whole operator matrix (dml2onnx/cases/'s all_cases()) on ONNX Runtime's
DirectML EP under Wine (`make test-dml`, run by CI after `make dml-setup`), lowered for the
`portable` and the `dml` targets, every node on the DirectML EP, every case that the stack can
run compared with the numpy reference.

A DirectML EP session costs about a second and gigabytes under lavapipe, so the cases run in
batches (tests/batched_sessions.py): BATCH_SIZE lowered graphs side by side in one model, one
session each; a batch whose session fails is bisected down to the cases that fail, each with
the host's error.

Where the hosts use Wine's d3d12.dll (vkd3d 1.6; DML2ONNX_VKD3D_DXIL=0, or no vkd3d-dxil.dll),
some nodes make the session fail: DirectML picks a kernel it has only as DXIL, which vkd3d 1.6
cannot compile (README); with tools/vkd3d-dxil.sh's vkd3d 1.14 they run and are compared.
Bisecting hundreds of such cases out of their batches would take a session per case and more,
so the nodes that may do it (likely_dxil) are first loaded alone, one session per distinct node;
a case holding a node that fails is reported failing with that node and its error, one such
case per node is loaded alone to confirm it, and the other cases run in batches. Every
session failure must match SESSION_FAILURES; a result that differs from the reference must be
one of tests/dml_findings.py's known disagreements (DirectML's own, which the DirectML EP
shares) or of DML_EP_FAILURES (the DirectML EP's alone). Every entry of
DML_EP_FAILURES, and of SESSION_FAILURES where it applies, must still occur.

The sessions run with DirectML graph fusion off (DML2ONNX_DML_FUSION=0): with it on, each case
of a merged graph is a fused partition of its own at about 1 GB and 0.5-1 s, so batching saves
nothing (12 cases: 13 GB). Fusion on, ONNX Runtime's default, is covered by tests/backends/test_winhost.py's
models.

Measured on the 2-core machine (Mesa 25.0.7 lavapipe, Wine 8, vkd3d 1.6), with the matrix at 5169
cases (ELEMENT_WISE operators included), BATCH_SIZE 200 (with vkd3d-dxil.dll, every case runs:
`make test-dml` took 3-4 min):
- `dml`: 4838 match; 217 fail at session creation on 16 DXIL-only nodes (FLOAT32 Add/Mul of two
  computed tensors of one shape: [12], [16], [3,2,4] ... [3,2,4,2,3,2,2,2], [2,3,4,5]); 114 differ:
  LOG_SUM_EXP 31, FLOAT16 overflow 26, INT64 order 23, FLOAT16 MVN 7, SIN/COS 4, DML_EP_FAILURES 23.
- `portable`: 4580 match; 503 fail at session creation on 16 DXIL-only nodes; 86 differ: LOG_SUM_EXP 31,
  FLOAT16 overflow 26, SIN/COS 4, DML_EP_FAILURES 25.
- About 150 s (`dml`) and 200 s (`portable`) on a loaded machine; the Wine host peaks at
  9.5 GB resident. With 16,003 cases (2026-12-02) the two targets' runs took 375 s and 275 s and the
  machine's used memory peaked at 21 GB: each target's lowered graphs are dropped once its run is done,
  and everything this module cached (and the host) after its last test."""

from __future__ import annotations

import functools
import gc
import re
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import onnx
import pytest
from onnx import helper

import dml_findings
from batched_sessions import Member, node_probe, run_bisecting, value_types
from dml2onnx import lowering
from dml2onnx.backends import runtime, winhost
from dml2onnx.backends.runtime import Session
from dml2onnx.cases import all_cases
from dml2onnx.cases.common import Case
from dml2onnx.ops import registry
from matrix_runs import graph_digest
from support import make_desc, mismatches

pytestmark = [
    pytest.mark.dml,
    pytest.mark.skipif(
        winhost.missing() is not None,
        reason=f"the DirectML EP under Wine is not set up ({winhost.missing()}): {winhost.SETUP_HINT}",
    ),
]

TARGETS = ("portable", "dml")
# Cases per session. 200 (up to ~1500 nodes) load in 1-3 s and run in a few more.
BATCH_SIZE = 200

# Why a case's session may fail here: (regex on the failure text, reason). The text is
# "node <op> <type> [<sizes>]: <host error>" where a node's probe failed, the host's error alone
# where bisection isolated the case. Each reason must still occur.
DXIL = "DXIL-only kernel (vkd3d 1.6 compiles only DXBC)"
SESSION_FAILURES: tuple[tuple[str, str], ...] = (
    (r"^node (Add|Sub|Mul|Div) .*Failed to create Vulkan compute pipeline.*DXIL-only shader", DXIL),
)

# Where the DirectML EP computes otherwise than DirectML's API and the reference: case id regex ->
# reason. Each must still occur.
DML_EP_FAILURES: dict[str, str] = {
    r"^(ONE_HOT-UINT32-|ELEMENT_WISE_SIGN-INT64-|ELEMENT_WISE_MODULUS_FLOOR-INT64-)": "the DirectML EP compares INT64 "
    "values by their low 32 bits as signed (README): the portable ONE_HOT's range check on UINT32 indices cast to INT64 "
    "takes 4294967295 for -1, INT64 SIGN calls 2**31 negative, MODULUS_FLOOR's sign test past 32 bits goes wrong",
    r"^ELEMENT_WISE_(RECIP|DIVIDE|DIFFERENCE_SQUARE|SINH|COSH)-FLOAT16-": "the DirectML EP's Cast FLOAT32 -> FLOAT16 "
    "saturates at 65504 (as in the FLOAT16 overflow finding); the lowering computes in FLOAT32 and casts, where "
    "DirectML's own operator gives inf (RECIP of +0, a difference squared past 65504, SINH/COSH past 11.8)",
    r"^CAST-FLOAT64-U?INT(8|16|32)-": "the DirectML EP's FLOAT64 comparisons and clips (the lowering's range checks "
    "before the Cast) come out wrong under lavapipe: values in range become 0 or -1 (DirectML's own CAST is right)",
    r"^CONVOLUTION-FLOAT(32|16)-1d-strided-padded-backward-.*-G2-.*-resized\+4$": "the DirectML EP refuses the session "
    "(E_INVALIDARG in MLOperatorAuthorImpl.cpp) of a grouped 1-D ConvTranspose with output_padding that the lowering "
    "uses for an OutputTensor past the transposed result (DirectML's API computes the desc as the reference does)",
}


def expected_session_failures() -> tuple[tuple[str, str], ...]:
    """SESSION_FAILURES where the hosts use Wine's vkd3d 1.6; none where they use the DXIL-capable
    vkd3d that tools/vkd3d-dxil.sh builds (winhost.dxil_vkd3d()), which compiles those kernels."""
    return SESSION_FAILURES if winhost.dxil_vkd3d() is None else ()


def session_failure_reason(text: str) -> str | None:
    return next((why for pattern, why in expected_session_failures() if re.search(pattern, text, re.S)), None)


def dml_ep_failure_reason(case_id: str) -> str | None:
    return next((why for pattern, why in DML_EP_FAILURES.items() if re.search(pattern, case_id)), None)


def create(model: onnx.ModelProto, name: str) -> Session:
    return runtime.create(model, name, "dml")


def check_all_on_ep(session: Session) -> None:
    assert session.nodes_off_ep() == []


def run(members: list[Member], name: str) -> tuple[dict[str, dict[str, np.ndarray]], dict[str, str]]:
    """Outputs and isolated failures of `members`, bisected, with DirectML graph fusion off."""
    mp = pytest.MonkeyPatch()
    mp.setenv("DML2ONNX_DML_FUSION", "0")
    try:
        outcome = run_bisecting(members, create, name, check_all_on_ep)
    finally:
        mp.undo()
    return outcome.outputs, outcome.failures


# -- the nodes that may pick a DXIL-only kernel ------------------------------------------------------


def likely_dxil(model: onnx.ModelProto, node: onnx.NodeProto, types: dict[str, onnx.TypeProto]) -> bool:
    """A two-input float Add/Sub/Mul/Div of two computed (not initializer) tensors of one shape,
    a multiple of 4 elements: what DirectML serves with a DXIL-only kernel here (measured: every
    failing node of the matrix is one; the rest of the README's rule, GatherElements on an inner
    axis, loads alone). Only a schedule: a node missed here fails its batch, which is bisected."""
    if node.op_type not in ("Add", "Sub", "Mul", "Div") or len(node.input) != 2:
        return False
    if {i.name for i in model.graph.initializer} & set(node.input):
        return False
    a, b = (types[i].tensor_type for i in node.input)
    if a != b or a.elem_type not in (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16):
        return False
    return int(np.prod([d.dim_value for d in a.shape.dim])) % 4 == 0


def describe(node: onnx.NodeProto, types: dict[str, onnx.TypeProto]) -> str:
    t = types[node.input[0]].tensor_type
    sizes = [d.dim_value for d in t.shape.dim]
    return f"{node.op_type} {helper.tensor_dtype_to_string(t.elem_type).removeprefix('TensorProto.')} {sizes}"


@dataclass(frozen=True)
class Lowered:
    case: Case
    model: onnx.ModelProto
    suspects: tuple[str, ...]  # describe() of its LIKELY_DXIL nodes

    @functools.cached_property
    def digest(self) -> str:
        return graph_digest(self.model)


@pytest.fixture(scope="module", autouse=True)
def _memory_back_after_the_module() -> Iterator[None]:
    """Both targets' lowered cases and results stay cached while this module's tests read them; after
    them they are dropped, and the Wine host with its lavapipe memory closed (a later test starts a
    fresh one), so the tests after this module (the corpus captures) start with the memory back: the
    2-core machine has 24 GiB, and the two together came within 2 GiB of it."""
    yield
    lowered.cache_clear()
    target_run.cache_clear()
    gc.collect()
    winhost.shutdown()


@functools.cache
def lowered(target: str) -> tuple[Lowered, ...]:
    out = []
    for case in sorted(all_cases(), key=lambda c: c.op):  # one operator's cases together
        model = lowering.lower(make_desc(case.op, case.fields), "case", target=target)
        types = value_types(model)
        suspects = tuple(dict.fromkeys(describe(n, types) for n in model.graph.node if likely_dxil(model, n, types)))
        out.append(Lowered(case, model, suspects))
    return tuple(out)


def failing_nodes(target: str) -> dict[str, str]:
    """describe() -> the host's error, for each likely-DXIL node whose own session fails (none
    probed where the DXIL-capable vkd3d is in use: such a node then fails its batch, bisected)."""
    if not expected_session_failures():
        return {}
    probes: dict[str, Member] = {}
    for low in lowered(target):
        types = value_types(low.model)
        for i, node in enumerate(low.model.graph.node):
            if likely_dxil(low.model, node, types):
                key = describe(node, types)
                probes.setdefault(key, node_probe(low.model, i, key))
    failures: dict[str, str] = {}
    for probe in probes.values():  # one session each: many of them fail
        failures.update(run([probe], f"{target}-probe")[1])
    return failures


# -- the matrix ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """One case's result: ok, or why not (`reason` None: unexplained), with what was compared."""

    case_id: str
    ok: bool
    reason: str | None = None
    detail: str = ""


@dataclass
class TargetRun:
    verdicts: dict[str, Verdict]
    failing_nodes: dict[str, str]  # describe() -> the host's error
    unconfirmed: list[str]  # failing nodes whose first case loaded alone
    digests: dict[str, str]  # case id -> Lowered.digest of the graph that gave its verdict


def compared(case: Case, got: dict[str, np.ndarray]) -> Verdict:
    """`got`: the case's every output by graph output name."""
    desc = make_desc(case.op, case.fields)
    detail = mismatches(desc, lowering.by_field(desc, got), registry.reference_outputs(desc, case.inputs), "dml")
    if not detail:
        return Verdict(case.id, True)
    reason = dml_findings.known_disagreement(case.id) or dml_ep_failure_reason(case.id)
    return Verdict(case.id, False, reason, detail)


def failed(case_id: str, text: str) -> Verdict:
    return Verdict(case_id, False, session_failure_reason(text) or dml_ep_failure_reason(case_id), f"session failed: {text}")


@functools.cache
def target_run(target: str) -> TargetRun:
    """The whole matrix for one target (cached: every test of the target reads it). A case whose
    graph is the one the first target ran (about half of them: the targets differ on few operators)
    takes that verdict: the same graph on the same EP, not run twice."""
    earlier = target_run(TARGETS[0]) if target != TARGETS[0] else None
    bad_nodes = failing_nodes(target)
    verdicts: dict[str, Verdict] = {}
    unconfirmed: list[str] = []
    confirmed: set[str] = set()
    rest = []
    digests = {low.case.id: low.digest for low in lowered(target)}
    for low in lowered(target):
        if earlier is not None and earlier.digests[low.case.id] == low.digest:
            verdicts[low.case.id] = earlier.verdicts[low.case.id]
            continue
        node = next((s for s in low.suspects if s in bad_nodes), None)
        if node is None:
            rest.append(low)
            continue
        if node not in confirmed:
            # The first case of each failing node, alone: the node fails inside its graph too.
            confirmed.add(node)
            outputs, failures = run([Member(low.case.id, low.model, low.case.inputs)], f"{target}-confirm")
            if not failures:
                unconfirmed.append(f"{node} (case {low.case.id})")
                verdicts[low.case.id] = compared(low.case, outputs[low.case.id])
                continue
        verdicts[low.case.id] = failed(low.case.id, f"node {node}: {bad_nodes[node]}")
    for start in range(0, len(rest), BATCH_SIZE):
        part = rest[start : start + BATCH_SIZE]
        outputs, failures = run([Member(x.case.id, x.model, x.case.inputs) for x in part], f"{target}-{start}")
        for x in part:
            if x.case.id in failures:
                verdicts[x.case.id] = failed(x.case.id, failures[x.case.id])
            else:
                verdicts[x.case.id] = compared(x.case, outputs[x.case.id])
    lowered.cache_clear()  # this target's graphs are not read again: their memory back for the next run
    return TargetRun(verdicts, bad_nodes, unconfirmed, digests)


@functools.cache
def case_ids() -> dict[str, tuple[str, ...]]:
    """Each operator's case ids (all_cases() builds every case's inputs: once, not once per test)."""
    out: dict[str, list[str]] = {}
    for c in all_cases():
        out.setdefault(c.op, []).append(c.id)
    return {op: tuple(ids) for op, ids in sorted(out.items())}


def operators() -> list[str]:
    return list(case_ids())


def cases_of(op: str) -> tuple[str, ...]:
    return case_ids()[op]


@pytest.mark.parametrize("op", operators())
@pytest.mark.parametrize("target", TARGETS)
def test_operator_on_the_directml_ep(target: str, op: str) -> None:
    """Each case of the operator matches the reference, or fails for a listed reason."""
    result = target_run(target).verdicts
    unexplained = [result[i] for i in cases_of(op) if not result[i].ok and result[i].reason is None]
    assert not unexplained, f"{len(unexplained)} case(s) unexplained:\n" + "\n".join(
        f"{v.case_id}: {v.detail[:400]}" for v in unexplained[:20]
    )


@pytest.mark.parametrize("target", TARGETS)
def test_failing_nodes_fail_inside_their_cases(target: str) -> None:
    """A node that fails alone makes the first case holding it fail alone too."""
    assert target_run(target).unconfirmed == []


def test_every_listed_failure_still_occurs() -> None:
    """Each entry of SESSION_FAILURES and DML_EP_FAILURES still explains a case (a fixed stack or
    lowering must take its entry out)."""
    seen = {v.reason for t in TARGETS for v in target_run(t).verdicts.values() if not v.ok}
    listed = {why for _, why in expected_session_failures()} | set(DML_EP_FAILURES.values())
    assert listed <= seen, f"listed but no longer seen: {sorted(listed - seen)}"
