"""Where DirectML and the numpy reference part, node by node (`dml2onnx compare`, compare.py).

- The reference chain: the model's commands run on the numpy reference (run/executor.py), and
  inside each serialized graph each node's reference in graph order (serialized_graph.walk).
- Each node (a desc dispatchable, or each operator node of a serialized graph) runs alone on the
  engine (DirectML's API by default) and on the CPU EP (its lowering), fed the reference chain's
  inputs of that node, so one node's error does not compound into the next; its outputs are held
  to the operator's tolerance (lowering/tolerances.py) against the node's reference.
- Each serialized graph also runs whole as the engine compiles it (DirectML fuses it), fed the
  reference chain's inputs, against the chain of references: errors compound there, so it is held
  to a whole network's tolerance (graph_tolerance), and the fused graph may differ where each node
  alone does not.
- Each node over tolerance on the engine gets a folder that reproduces it alone (repro.py), written
  into a staging folder and renamed into place at the end, so a failure leaves nothing.
ONNX graph dispatchables (the nodes a capture found outside the partitions) have no desc: they run
on the reference chain (the CPU EP) and are listed as not compared.
"""

from __future__ import annotations

import io
import re
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np
import onnx

from dml2onnx import lowering
from dml2onnx.backends import dmlapi, runtime
from dml2onnx.commands import repro
from dml2onnx.commands.capture import file_name
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.errors import Dml2OnnxError
from dml2onnx.core.jsonvalues import json_number
from dml2onnx.formats import serialized_graph
from dml2onnx.formats.dxdispatch import Dispatch, Dispatchable, Model
from dml2onnx.formats.onnx_dispatchable import GraphDispatchable
from dml2onnx.graph import targets
from dml2onnx.lowering import tolerances
from dml2onnx.lowering.tolerances import Comparison, Tolerance, compare, compare_outputs, tolerance
from dml2onnx.run.executor import Executor

# ONNX Runtime's DirectML EP names each DirectML node after the first output of the ONNX node it
# came from (GraphDescBuilder.cpp, GetUniqueNodeName), with `_dmlEp_<k>` for its k-th DirectML node
_DML_EP_NAME = re.compile(r"^(?P<value>.+)_dmlEp_\d+$")


@dataclass(frozen=True)
class Output:
    """One output of a node on an engine against the reference."""

    field: str
    data_type: str
    elements: int
    max_abs: float
    max_rel: float
    max_ulps: float | None  # floats only: the largest distance in units in the last place
    mismatches: int  # elements beyond the tolerance
    atol: float
    rtol: float
    ok: bool

    def as_json(self) -> dict[str, Any]:
        return {
            "field": self.field,
            "data_type": self.data_type,
            "elements": self.elements,
            "max_abs": json_number(self.max_abs),
            "max_rel": json_number(self.max_rel),
            "max_ulps": None if self.max_ulps is None else json_number(self.max_ulps),
            "mismatches": self.mismatches,
            "atol": self.atol,
            "rtol": self.rtol,
            "over_tolerance": not self.ok,
        }


@dataclass(frozen=True)
class Verdict:
    """A node (or a whole graph) on one engine: each output, or why the engine could not run it."""

    outputs: tuple[Output, ...] = ()
    failure: str = ""

    @property
    def ok(self) -> bool:
        return not self.failure and all(o.ok for o in self.outputs)

    def worst(self, key: str) -> float:
        values = [getattr(o, key) for o in self.outputs if getattr(o, key) is not None]
        return max(values, default=0.0)

    @property
    def mismatches(self) -> int:
        return sum(o.mismatches for o in self.outputs)

    @property
    def elements(self) -> int:
        return sum(o.elements for o in self.outputs)

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "max_abs": json_number(self.worst("max_abs")),
            "max_rel": json_number(self.worst("max_rel")),
            "max_ulps": json_number(self.worst("max_ulps")) if any(o.max_ulps is not None for o in self.outputs) else None,
            "mismatches": self.mismatches,
            "elements": self.elements,
            "over_tolerance": not self.ok,
            "outputs": [o.as_json() for o in self.outputs],
        }
        return out | ({"failure": self.failure} if self.failure else {})


@dataclass
class NodeResult:
    index: int  # in graph order over the whole model
    dispatch: str  # the dispatchable it belongs to (a desc dispatchable is its own node)
    name: str
    type: str  # the operator type, short (REDUCE)
    function: str | None  # the operator's Function where it has one (REDUCE's LOG_SUM_EXP)
    onnx_value: str | None  # the ONNX value its DirectML EP name comes from (a capture's nodes)
    onnx_nodes: list[str]  # the ONNX nodes that write it, where the ONNX model is known
    engine: Verdict
    cpu: Verdict | None  # its lowering on the CPU EP (None when the engine is the CPU EP)
    repro: Path | None = None

    @property
    def label(self) -> str:
        return self.name if self.name == self.dispatch else f"{self.dispatch}/{self.name}"

    @property
    def kind(self) -> str:
        return f"{self.type} {self.function}" if self.function else self.type


@dataclass
class GraphResult:
    dispatch: str
    verdict: Verdict


@dataclass
class Report:
    target: str
    engine: str  # its label (DirectML API)
    ep: str
    nodes: list[NodeResult] = field(default_factory=list)
    graphs: list[GraphResult] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # ONNX graph dispatchables: no desc to compare
    folder: Path | None = None  # where the repros are

    @property
    def first_divergence(self) -> NodeResult | None:
        return next((n for n in self.nodes if not n.engine.ok), None)

    @property
    def diverged(self) -> bool:
        return any(not n.engine.ok or (n.cpu is not None and not n.cpu.ok) for n in self.nodes) or any(
            not g.verdict.ok for g in self.graphs
        )


# -- measuring ---------------------------------------------------------------------------------------


def _ordered(a: np.ndarray) -> np.ndarray:
    """Floats as integers in the same order, one apart between neighbours (-0 and +0 both 0): the
    sign-magnitude bits of a negative value x become INT_MIN - x, which cannot overflow."""
    bits = {2: np.int16, 4: np.int32, 8: np.int64}[a.dtype.itemsize]
    i = np.ascontiguousarray(a).view(bits).astype(np.int64)
    return np.where(i < 0, np.iinfo(bits).min - i, i)


def _ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """The distance of each pair in ULPs (FLOAT64's as Python integers: their difference may pass
    INT64's range)."""
    a, b = _ordered(got), _ordered(want)
    return np.abs(a.astype(object) - b.astype(object)) if got.dtype.itemsize == 8 else np.abs(a - b)


def measure(got: np.ndarray, want: np.ndarray, tol: Tolerance) -> tuple[int, float | None]:
    """The elements beyond `tol` (as tolerances.compare decides: NaN matches NaN, infinities must
    match exactly) and, for floats, the largest distance in ULPs of the type (inf where a NaN
    meets a number)."""
    if got.shape != want.shape or got.dtype != want.dtype:
        return int(want.size), float("inf") if want.dtype.kind == "f" else None
    if want.dtype.kind != "f":
        return int(np.count_nonzero(got != want)), None
    g, w = got.astype(np.float64), want.astype(np.float64)
    both_nan = np.isnan(g) & np.isnan(w)
    same = (g == w) | both_nan
    with np.errstate(invalid="ignore"):
        err = np.where(same, 0.0, np.abs(g - w))
        bad = ~same & (~np.isfinite(g) | ~np.isfinite(w) | (err > tol.atol + tol.rtol * np.abs(w)))
    one_nan = np.isnan(g) ^ np.isnan(w)
    if np.any(one_nan):
        return int(np.count_nonzero(bad)), float("inf")
    ulps = _ulps(got, want)
    ulps = np.where(both_nan, 0, ulps)
    return int(np.count_nonzero(bad)), float(ulps.max()) if ulps.size else 0.0


def _peak(value: np.ndarray | None) -> float:
    """The largest finite magnitude of an input (0 for none)."""
    if value is None:
        return 0.0
    a = np.asarray(value, np.float64)
    return float(np.max(np.abs(a[np.isfinite(a)]), initial=0))


def scaled_tolerance(desc: OperatorDesc, point: str, ep: str, feeds: dict[str, np.ndarray]) -> Tolerance | None:
    """CONVOLUTION's and GEMM's tolerance at the node's own accumulation length and magnitudes.
    tolerances.py bounds their error for the tests' inputs (|x|, |w| <= 1, lengths up to
    CONVOLUTION_LENGTH and GEMM_LENGTH), which real networks' layers pass: a sum of L products errs
    by at most (L + 1) u sum|x w| in any order, so the bound at the node's length (never below the
    tests') grows with its inputs' largest magnitudes. None for the other operators (and GEMM with
    a fused SOFTMAX1, whose bound tolerances.compare_outputs knows)."""
    dtype = desc.tensor(point).data_type
    name = desc.schema.name
    if not dtype.is_float:
        return None
    if name == "CONVOLUTION":
        w = desc.tensor("FilterTensor").sizes
        kernel = int(np.prod(w[2:]))
        length = max(w[1] * kernel, w[0] // max(1, desc["GroupCount"]) * kernel, tolerances.CONVOLUTION_LENGTH)
        scale = max(1.0, _peak(feeds["InputTensor"]) * _peak(feeds["FilterTensor"]), _peak(feeds.get("BiasTensor")))
        t = tolerances.convolution(dtype, length, ep)
        return Tolerance(t.rtol, t.atol * scale)
    activation = desc["FusedActivation"] if name == "GEMM" else None
    if name != "GEMM" or (activation is not None and activation.schema.name == "ACTIVATION_SOFTMAX1"):
        return None
    a = desc.tensor("ATensor").sizes
    k = max(a[-2] if str(desc["TransA"]).endswith("TRANSPOSE") else a[-1], tolerances.GEMM_LENGTH)
    # the tests' bound S = 2k + 2 holds |Alpha| <= 2, |A|, |B|, |C| <= 1, |Beta| <= 2
    products = abs(desc["Alpha"]) * _peak(feeds["ATensor"]) * _peak(feeds["BTensor"]) / 2
    scale = max(1.0, products, abs(desc["Beta"]) * _peak(feeds.get("CTensor")) / 2)
    t = tolerances.gemm(dtype, k, ep)
    return Tolerance(t.rtol, t.atol * scale)


def verdict(
    desc: OperatorDesc,
    got: dict[str, np.ndarray],
    want: dict[str, np.ndarray],
    ep: str,
    feeds: dict[str, np.ndarray],
    atol: float | None = None,
    rtol: float | None = None,
) -> Verdict:
    """Each output of `desc` (by field) against the reference's, within the operator's tolerance on
    `ep` (tolerances.compare_outputs; CONVOLUTION's and GEMM's at the node's own size and
    magnitudes, scaled_tolerance), or `atol`/`rtol` where given (floats; integers stay exact)."""
    tols = {}
    for p in desc.outputs:
        own = scaled_tolerance(desc, p, ep, feeds) or tolerance(desc.schema.name, desc.tensor(p).data_type, ep, p)
        tols[p] = Tolerance(own.rtol if rtol is None else rtol, own.atol if atol is None else atol)
    ours = atol is not None or rtol is not None or any(scaled_tolerance(desc, p, ep, feeds) for p in desc.outputs)
    results: dict[str, Comparison] = (
        {p: compare(got[p], want[p], tols[p]) for p in desc.outputs} if ours else compare_outputs(desc, got, want, ep)
    )
    return Verdict(
        tuple(
            _output(p, desc.tensor(p).data_type.name, np.asarray(got[p]), np.asarray(want[p]), tols[p], results[p])
            for p in desc.outputs
        )
    )


def graph_tolerance(want: np.ndarray, atol: float | None, rtol: float | None) -> Tolerance:
    """A whole graph's output, where each node's error feeds the next: as the capture tests hold
    whole networks (tests/commands/test_capture.py), within 1e-4 of the output's scale (FLOAT16:
    1e-2, a few of its ulps at 1), at least 1; `atol`/`rtol` where given."""
    scale = max(1.0, float(np.max(np.abs(want[np.isfinite(want)]), initial=0))) if want.dtype.kind == "f" else 0.0
    own = Tolerance(0.0, (1e-2 if want.dtype == np.float16 else 1e-4) * scale)
    return Tolerance(own.rtol if rtol is None else rtol, own.atol if atol is None else atol)


def _output(name: str, data_type: str, got: np.ndarray, want: np.ndarray, tol: Tolerance, c: Comparison) -> Output:
    bad, ulps = measure(got, want, tol)
    return Output(name, data_type, int(want.size), c.max_abs, c.max_rel, ulps, bad, tol.atol, tol.rtol, c.ok)


# -- running -----------------------------------------------------------------------------------------


@dataclass
class _Step:
    """A node fed by the reference chain: its desc, inputs and reference outputs."""

    dispatch: str
    name: str
    desc: OperatorDesc
    feeds: dict[str, np.ndarray]
    reference: dict[str, np.ndarray]


@dataclass
class _Engine:
    """Runs one desc, or one serialized graph whole, on an engine: DirectML's API executes them
    itself; an ONNX Runtime EP runs their lowering for `target`."""

    ep: str
    opset: int
    target: str

    def node(self, desc: OperatorDesc, feeds: dict[str, np.ndarray], name: str) -> dict[str, np.ndarray]:
        if self.ep == runtime.DIRECTML:  # outputs start as zeros, as the graphs write them
            return dmlapi.execute(desc, feeds, name=name, output_fill=0).outputs
        model = lowering.lower(desc, name, self.opset, self.target)
        return lowering.by_field(desc, runtime.create(model, name, self.ep).run_all(feeds))

    def graph(self, d: GraphDispatchable, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        assert d.serialized is not None
        if self.ep == runtime.DIRECTML:
            return dmlapi.execute_graph(d.serialized, feeds, name=d.name)
        return runtime.create(d.model(self.opset, self.target), d.name, self.ep).run_all(feeds)

    def verdict(self, step: _Step, atol: float | None, rtol: float | None) -> tuple[dict[str, np.ndarray] | None, Verdict]:
        """The node's outputs here (None: the engine could not run it) and their verdict against
        its reference (a failure: why, DirectML refusing it for one)."""
        try:
            got = self.node(step.desc, step.feeds, step.name)
        except (Dml2OnnxError, dmlapi.DmlApiError) as e:
            return None, Verdict(failure=_first_line(e))
        return got, verdict(step.desc, got, step.reference, self.ep, step.feeds, atol, rtol)


def _steps(model: Model, opset: int, report: Report, whole: Any) -> Iterator[_Step]:
    """Every node of the model in graph order, fed by the reference chain; `whole(d, feeds,
    outputs)` is called for each serialized graph with the reference's graph inputs and outputs."""
    quiet = io.StringIO()
    chain = Executor(model, "reference", opset, quiet, quiet, write_files=False)
    for cmd in model.commands:
        if not isinstance(cmd, Dispatch):
            continue
        d = model.dispatchables[cmd.dispatchable]
        feeds = chain.inputs(cmd)
        chain.dispatch(cmd)  # the chain goes on through every dispatch, compared or not
        outputs = chain.results[-1][1]
        if isinstance(d, Dispatchable):
            yield _Step(d.name, d.name, d.desc, feeds, outputs)
        elif d.serialized is not None:
            for node, node_feeds, results in serialized_graph.walk(d.serialized, feeds):
                yield _Step(d.name, node.name, node.desc, node_feeds, results)
            whole(d, feeds, outputs)
        else:
            report.skipped.append(d.name)


def onnx_writers(model: onnx.ModelProto) -> dict[str, str]:
    """Each value of an ONNX model -> the node that writes it (its name, else `OpType #index`)."""
    return {v: n.name or f"{n.op_type} #{i}" for i, n in enumerate(model.graph.node) for v in n.output if v}


def run(
    model: Model,
    ep: str,
    opset: int,
    target: str | None,
    folder: Path,
    log: IO[str],
    atol: float | None = None,
    rtol: float | None = None,
    writers: dict[str, str] | None = None,
) -> Report:
    """Compares every node of `model` on `ep` (resolved: dml-api, dml, cuda or cpu) and on the CPU
    EP with the reference; writes a repro of each node over tolerance on `ep` into `folder` (made
    only then: staged beside it and renamed into place). `writers`: the ONNX model's value ->
    node, where the model was captured here."""
    engine = _Engine(ep, opset, (target or targets.for_engine(ep)) if ep in runtime.PROVIDERS else "portable")
    cpu = _Engine("cpu", opset, target or "cpu") if ep != "cpu" else None
    report = Report(str(model.path), runtime.label(ep), ep)
    staging: Path | None = None

    def whole(d: GraphDispatchable, feeds: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> None:
        graph = d.serialized
        assert graph is not None
        log.write(f"compare: {d.name} whole, as {report.engine} compiles it\n")
        try:
            got = engine.graph(d, feeds)
        except (Dml2OnnxError, dmlapi.DmlApiError) as e:
            report.graphs.append(GraphResult(d.name, Verdict(failure=_first_line(e))))
            return
        outputs = []
        for e in graph.output_edges:
            g, w = np.asarray(got[e.name]), np.asarray(want[e.name])
            tol = graph_tolerance(w, atol, rtol)
            outputs.append(_output(e.name, graph.outputs[e.name].data_type.name, g, w, tol, compare(g, w, tol)))
        report.graphs.append(GraphResult(d.name, Verdict(tuple(outputs))))

    try:
        dispatch = None
        for index, step in enumerate(_steps(model, opset, report, whole)):
            if step.dispatch != dispatch:
                dispatch = step.dispatch
                log.write(f"compare: {dispatch}: each node on {report.engine}{' and the CPU EP' if cpu else ''}\n")
            got, result = engine.verdict(step, atol, rtol)
            cpu_result = cpu.verdict(step, atol, rtol)[1] if cpu is not None else None
            value = m.group("value") if (m := _DML_EP_NAME.match(step.name)) and step.name != step.dispatch else None
            node = NodeResult(
                index,
                step.dispatch,
                step.name,
                step.desc.schema.name,
                _function(step.desc),
                value,
                [writers[value]] if writers and value in writers else [],
                result,
                cpu_result,
            )
            if not result.ok:
                if staging is None:
                    folder.parent.mkdir(parents=True, exist_ok=True)
                    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
                sub = f"{index:03d}_{file_name(node.label.replace('/', '_'))}"
                repro.write(
                    staging / sub,
                    step.desc,
                    file_name(step.name),
                    step.feeds,
                    step.reference,
                    got if isinstance(got, dict) else None,
                    ep,
                )
                node.repro = folder / sub / repro.MODEL
                log.write(f"compare: {node.label} ({node.kind}) is over tolerance: {folder / sub}\n")
            report.nodes.append(node)
        if staging is not None:
            if folder.exists():
                folder.rmdir()  # checked empty before anything ran
            staging.rename(folder)
            staging = None
            report.folder = folder
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
    return report


def _first_line(e: Exception) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def _function(desc: OperatorDesc) -> str | None:
    """The operator's function, where one field picks it (REDUCE's Function)."""
    value = desc.values.get("Function")
    return str(value).removeprefix("DML_REDUCE_FUNCTION_") if value is not None else None
