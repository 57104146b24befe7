"""The dml2onnx command line: run and export."""

from __future__ import annotations

import argparse
import io
import re
import sys
from collections.abc import Sequence
from pathlib import Path

import onnx

from . import __version__, dxdispatch, lowering
from .builder import DEFAULT_OPSET, MAX_OPSET, MIN_OPSET
from .errors import Dml2OnnxError, ModelError
from .executor import Executor
from .files import write_atomic

_FILE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")


def _opset(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not MIN_OPSET <= value <= MAX_OPSET:
        raise argparse.ArgumentTypeError(f"must be in [{MIN_OPSET}, {MAX_OPSET}]")
    return value


def _model_and_opset(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("model", metavar="MODEL.json", help="a DxDispatch JSON model")
    sub.add_argument(
        "--opset",
        type=_opset,
        default=DEFAULT_OPSET,
        help=f"ONNX opset of the lowered graphs (default {DEFAULT_OPSET}, {MIN_OPSET}-{MAX_OPSET})",
    )


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="dml2onnx",
        description="Compile DirectML operator descs (DxDispatch JSON models) to ONNX and run them on ONNX Runtime.",
        epilog="Exit status: 0 done, 1 runtime failure, 2 invalid model or arguments.",
    )
    p.add_argument("--version", action="version", version=f"dml2onnx {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    run = sub.add_parser(
        "run",
        help="execute a model's commands (dispatch, print, writeFile)",
        description="Execute the commands of a DxDispatch model in order. `print` output goes to stdout "
        "exactly as DxDispatch prints it; progress goes to stderr.",
    )
    _model_and_opset(run)
    run.add_argument(
        "--ep",
        choices=("auto", "cpu", "cuda", "dml"),
        default="cpu",
        help="execution provider (default: cpu); auto picks DirectML, then CUDA, then CPU. "
        "GPU EPs run with CPU fallback disabled.",
    )
    run.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")

    export = sub.add_parser(
        "export",
        help="write one .onnx file per dispatchable",
        description="Lower every dispatchable of a DxDispatch model and write DIR/<dispatchable>.onnx. "
        "Inputs are named after the desc's input tensor fields, the output is OutputTensor.",
    )
    _model_and_opset(export)
    export.add_argument("-o", "--output", metavar="DIR", required=True, help="output folder")
    export.add_argument(
        "--target",
        choices=lowering.TARGETS,
        default="portable",
        help="execution provider the graph is lowered for (default portable: runs without fallback "
        "on the CPU, CUDA and DirectML EPs)",
    )
    return p


def _run(args: argparse.Namespace) -> None:
    model = dxdispatch.load(args.model)
    log = io.StringIO() if args.quiet else sys.stderr
    Executor(model, args.ep, args.opset, sys.stdout, log).run()


def _export(args: argparse.Namespace) -> None:
    model = dxdispatch.load(args.model)
    for name, d in model.dispatchables.items():
        if not _FILE_NAME.match(name):
            raise ModelError(d.path, "a dispatchable exported as a file needs a name of letters, digits, '_', '.' and '-'")
    # Lower everything before writing anything: a failure leaves the folder untouched.
    lowered = {name: lowering.lower(d.desc, name, args.opset, args.target) for name, d in model.dispatchables.items()}
    out = Path(args.output)
    for name, m in lowered.items():
        target = out / f"{name}.onnx"
        write_atomic(target, m.SerializeToString())
        print(f"{target}: {_describe(m)}")


def _describe(m: onnx.ModelProto) -> str:
    ops = ", ".join(dict.fromkeys(n.op_type for n in m.graph.node))
    return f"{len(m.graph.node)} nodes ({ops}), opset {m.opset_import[0].version}"


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        {"run": _run, "export": _export}[args.command](args)
    except Dml2OnnxError as e:
        print(f"dml2onnx: error: {e}", file=sys.stderr)
        return e.exit_status
    except KeyboardInterrupt:
        return 130
    return 0
