"""dml2onnx export: one .onnx file per dispatchable (or the whole command list as one graph)."""

from __future__ import annotations

import argparse
import json
import os
import re
import stat
from pathlib import Path

import onnx

from dml2onnx import lowering
from dml2onnx.commands.loading import load
from dml2onnx.core import files
from dml2onnx.core.errors import ModelError, RuntimeFailure, UsageError
from dml2onnx.formats import onnx_dispatchable
from dml2onnx.graph import dml_ep, targets
from dml2onnx.run import compose

_FILE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")


def _refuse_dml_fallback(name: str, model: onnx.ModelProto, target: str) -> None:
    """A graph lowered for DirectML must not fall back to the CPU there."""
    problems = dml_ep.check(model)
    if problems:
        more = f" (and {len(problems) - 3} more: dml2onnx check --static lists them)" if len(problems) > 3 else ""
        raise RuntimeFailure(
            f"'{name}' lowered for target {target} would not run on the DirectML EP: " + "; ".join(problems[:3]) + more
        )


def export(args: argparse.Namespace, target: str) -> None:
    args.target = target  # --target, --ep's own, or portable: the graphs every EP runs
    _check_output_folder(args.output)
    model = load(args)
    bound_for_dml = "dml" in targets.TARGETS[args.target].runs_on
    # Lower everything before writing anything: a failure leaves the folder untouched.
    if args.single_graph and args.buffer_inputs:
        raise UsageError("--buffer-inputs is for one file per dispatchable: --single-graph inputs are already flat resources")
    if args.single_graph:
        name = Path(args.model).stem
        if not _FILE_NAME.match(name):
            raise UsageError(f"the model's file name '{name}' cannot name an .onnx file: rename it")
        lowered = {name: compose.single_graph(model, name, args.opset, args.target, args.functions)}
    else:
        for name, d in model.dispatchables.items():
            if not _FILE_NAME.match(name):
                raise ModelError(d.path, "a dispatchable exported as a file needs a name of letters, digits, '_', '.' and '-'")
        graphs = {n for n, d in model.dispatchables.items() if isinstance(d, onnx_dispatchable.GraphDispatchable)}
        if graphs and args.buffer_inputs:
            raise UsageError(f"--buffer-inputs is for DirectML operator descs: '{min(graphs)}' is an ONNX graph")
        # An ONNX graph is written as it is (its free dimension overrides applied), not lowered
        lowered = {
            name: d.model(args.opset, args.target)
            if name in graphs
            else lowering.lower(d.desc, name, args.opset, args.target, buffer_inputs=args.buffer_inputs)
            for name, d in model.dispatchables.items()
        }
        if args.functions:
            lowered = {name: m if name in graphs else compose.as_function(m) for name, m in lowered.items()}
    if bound_for_dml:  # an ONNX graph is not lowered for a target: `check --static` checks it
        for name, m in lowered.items():
            if not isinstance(model.dispatchables.get(name), onnx_dispatchable.GraphDispatchable):
                _refuse_dml_fallback(name, m, args.target)
    out = Path(args.output)
    paths = {name: out / f"{name}.onnx" for name in lowered}
    for target in paths.values():  # every file checked before the first is written
        try:
            files.writable_target(target, from_model=False)
        except files.PathRefused as e:
            raise UsageError(f"-o {files.shown(args.output)}: {e}") from None
    written = []
    for name, m in lowered.items():
        try:
            files.write_atomic(paths[name], m.SerializeToString(), from_model=False)
        except files.PathRefused as e:  # the folder changed since the check
            raise UsageError(f"-o {files.shown(args.output)}: {e}") from None
        except OSError as e:
            raise RuntimeFailure(f"-o {files.shown(args.output)}: cannot write {name}.onnx: {e.strerror or e}") from None
        written.append({"file": str(paths[name]), **_facts(m)})
        if not args.json:
            print(f"{paths[name]}: {_describe(m)}")
    if args.json:
        print(json.dumps({"target": args.target, "opset": args.opset, "files": written}, indent=1))


def _check_output_folder(output: str) -> None:
    """`export -o DIR`: a name a folder can have, and a folder (or nothing yet) where it points. The
    user's own command line may name any folder (the current-folder rule is for paths a model writes)."""
    try:
        files.check_name(output, from_model=False)
    except files.PathRefused as e:
        raise UsageError(f"-o {e}") from None
    try:
        st = os.stat(output)
    except FileNotFoundError:
        return
    except OSError as e:
        raise UsageError(f"-o {files.shown(output)}: {e.strerror or e}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise UsageError(f"-o {files.shown(output)} is {files.kind(st.st_mode)}, not a folder")


def _facts(m: onnx.ModelProto) -> dict[str, object]:
    return {"nodes": len(m.graph.node), "ops": list(dict.fromkeys(n.op_type for n in m.graph.node))}


def _describe(m: onnx.ModelProto) -> str:
    ops = ", ".join(dict.fromkeys(n.op_type for n in m.graph.node))
    return f"{len(m.graph.node)} nodes ({ops}), opset {m.opset_import[0].version}"
