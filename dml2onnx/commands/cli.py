"""The dml2onnx command line: run, export, check, inspect, bench, capture, compare and ops."""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dml2onnx import __version__
from dml2onnx.backends import runtime
from dml2onnx.commands import (
    bench,
    bench_capture,
    capture,
    check,
    compare,
    export,
    inspection,
    listing,
    operator_info,
    options,
)
from dml2onnx.commands.loading import load
from dml2onnx.core import featurelevels, files, limits
from dml2onnx.core.errors import Dml2OnnxError, UsageError, one_line
from dml2onnx.core.jsonvalues import json_values
from dml2onnx.formats import onnx_dispatchable
from dml2onnx.graph import targets
from dml2onnx.run.executor import Executor


def graph_target(args: argparse.Namespace) -> str:
    """export's and inspect's target: --target, else --ep's own, else portable (runs on every EP)."""
    if args.target:
        return args.target
    if not args.ep:
        return "portable"
    ep = runtime.canonical(args.ep)
    if ep == runtime.DIRECTML:
        raise UsageError(f"--ep {args.ep}: DirectML's API runs the descs themselves, no ONNX graph; use --ep dml")
    return targets.for_engine(runtime.resolve(ep) if ep == "auto" else ep)


def _spelling_notes(args: argparse.Namespace) -> None:
    """A note for each engine named by an old spelling (`directml`), unless -q."""
    given = getattr(args, "ep", None)
    for ep in given if isinstance(given, list) else [given] if given else []:
        note = runtime.spelling_note(ep)
        if note and not args.quiet:
            print(f"dml2onnx: note: {note}", file=sys.stderr)


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
    options.common(run)
    options.ep(run, "cpu")
    options.iterations(run, 1, "run each dispatch N times, as DxDispatch's -i: the first run's time apart, then the median")
    options.free_dims(run)
    options.session_options(run)
    run.add_argument("--allow-any-path", action="store_true", help="let writeFile write outside the current folder")
    options.json_flag(run, "the engine, target, each dispatch's times, each printed resource's values and the files written")

    export = sub.add_parser(
        "export",
        help="write one .onnx file per dispatchable",
        description="Lower every dispatchable of a DxDispatch model and write DIR/<dispatchable>.onnx. "
        "Inputs are named after the desc's input tensor fields, the output is OutputTensor; an INT4/UINT4 tensor "
        "(or resource) is int8/uint8 there, one element a byte. An ONNX dispatchable "
        "is written as its graph, with its free dimension overrides applied.",
    )
    options.common(export)
    options.graphs_for(export)
    options.json_flag(export, "the target, opset and each file written, with its node count and ops")
    options.free_dims(export)
    export.add_argument("-o", "--output", metavar="DIR", required=True, help="output folder (anywhere; created if missing)")
    export.add_argument("--allow-any-path", action="store_true", help=argparse.SUPPRESS)  # before -o took any folder
    export.add_argument(
        "--functions",
        action="store_true",
        help="each DML operator as one model-local ONNX function (domain 'dml', named after the operator type)",
    )
    export.add_argument(
        "--single-graph",
        action="store_true",
        help="the whole command list as one graph, DIR/<model>.onnx: resources read before being written are inputs, "
        "resources printed or written to file are outputs",
    )
    export.add_argument(
        "--buffer-inputs",
        action="store_true",
        help="each input as its flat buffer (TotalTensorSizeInBytes worth of elements), the desc's Strides applied "
        "inside the graph; default: dense inputs of the tensors' logical Sizes (--single-graph always takes the "
        "resources' flat buffers)",
    )
    check = sub.add_parser(
        "check",
        help="compare every dispatch on each EP with the numpy reference, or check statically for DirectML",
        description="Run the model's dispatches on each execution provider (CPU fallback disabled on GPUs) and on "
        "the numpy reference, and print per dispatch and EP the max abs/rel error and how many nodes ran on that "
        "EP (an ONNX dispatchable: against the CPU EP). With --static (for --ep dml, without running it): list every "
        "node of the lowered graphs (and of ONNX dispatchables' graphs) that "
        "ONNX Runtime's DirectML EP would not take. Exit status 1 on a mismatch or a refused node.",
    )
    options.common(check)
    options.ep(check, None, repeatable=True)
    options.json_flag(check, "the engines, the targets their graphs were built for, a row per check")
    options.iterations(check, 1, "run each dispatch N times on each engine; a run whose outputs differ from the first's fails")
    check.add_argument("--static", action="store_true", help="no execution: the static DirectML EP check")
    options.free_dims(check)
    options.session_options(check)

    bench = sub.add_parser(
        "bench",
        help="time each dispatchable on an EP (io binding), or a captured model against its original",
        description="Time each dispatchable with inputs and outputs resident on the EP's device (no host copies in "
        "the timed loop): median and min over N iterations after warm-up, effective GB/s (bytes read + written "
        "once), and that as a fraction of the device's copy bandwidth measured in the same run. Given a capture "
        "folder (dml2onnx capture) and --original MODEL.onnx: the original model and the capture lowered (for "
        "portable and the EP's own target, or --target) timed in one process with the captured inputs, each "
        "graph's node count, median and min ms, its speed as a ratio of the original's, and its largest difference "
        "from the original's outputs.",
    )
    options.common(bench, "MODEL.json|CAPTURE_DIR", "a DxDispatch JSON model, or a dml2onnx capture folder (with --original)")
    options.ep(
        bench,
        "auto",
        also="bench binds tensors on the device, which neither dml under Wine nor dml-api can: auto passes them by, "
        "and naming them is an error (time them with run -i N)",
    )
    options.iterations(bench, 100, "timed iterations, after warm-up")
    bench.add_argument(
        "--original",
        metavar="MODEL.onnx",
        help="with a capture folder: the model it was captured from, timed beside the capture lowered for portable "
        "and for the engine's own target (or --target), in one process, with the captured inputs",
    )
    options.json_flag(bench, "the machine, versions and a row per dispatchable")
    options.free_dims(bench)
    options.session_options(bench)

    inspect = sub.add_parser(
        "inspect",
        help="show a lowered model in Netron (localhost) or as a text table",
        description="Lower a DxDispatch model (one dispatchable, or the whole command list as one graph) or read an "
        ".onnx file, and serve it in Netron on localhost, printing the address; --text prints a node table instead "
        "(node, op, inputs -> outputs with types and shapes, and what each node does for the desc).",
    )
    options.common(inspect, "MODEL.json|MODEL.onnx", "a DxDispatch JSON model or an ONNX file")
    options.graphs_for(inspect)
    inspect.add_argument("--dispatchable", metavar="NAME", help="only this dispatchable (default: all, as one graph)")
    inspect.add_argument("--text", action="store_true", help="print a node table instead of serving Netron")
    inspect.add_argument("--port", type=int, default=8080, help="localhost port for Netron (default 8080; 0: any free)")
    inspect.add_argument("--no-browser", action="store_true", help="serve without opening a web browser")
    inspect.add_argument("--functions", action="store_true", help="each DML operator as one ONNX function node")
    options.json_flag(inspect, "--text's node table (no Netron)")
    options.free_dims(inspect)

    capture = sub.add_parser(
        "capture",
        help="capture the DirectML graphs ONNX Runtime's DirectML EP runs for an ONNX model",
        description="Run MODEL.onnx on ONNX Runtime's DirectML EP (under Wine on Linux: make dml-setup) with graph "
        "serialization on, and write into DIR every partition it compiled (<stem>/Partition_N.bin and its "
        "constants), the inputs it ran with (inputs/), its outputs there (expected/), the nodes it ran outside any "
        "partition as ONNX models (outside/), a DxDispatch model <stem>.json that runs them all in order, bound "
        "by value name, writing each output to <output>.npy in the current folder, and <stem>.lowered.onnx, the whole "
        "model as DirectML runs it as one ONNX graph with the original inputs and outputs. Inputs not given are generated "
        "from --seed: floats from a standard normal, integers and booleans 0 or 1. Every input needs a static shape.",
    )
    capture.add_argument("model", metavar="MODEL.onnx", help="an ONNX model file")
    capture.add_argument("-o", "--output", metavar="DIR", required=True, help="the capture folder (new, or empty)")
    options.model_inputs(capture)
    capture.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    options.json_flag(capture, "each partition, the nodes outside any, and the files written")
    options.free_dims(capture, "the model")

    cmp = sub.add_parser(
        "compare",
        help="find the first DirectML node that differs from the numpy reference, and write a repro of each that does",
        description="Run every DirectML operator of the model alone on DirectML (its API, or --ep) and on the CPU EP (its "
        "lowering), each fed the numpy reference chain's inputs of that node, so errors do not compound, and each serialized "
        "graph whole as DirectML compiles it, against the chain of references; print per node its type, the ONNX node it "
        "came from (a capture), max abs/rel error, ULPs, the elements over the operator's tolerance, then the first node "
        "over it; write for each such node a DxDispatch model folder that reproduces it alone (dml2onnx run --ep dml-api, "
        "or DxDispatch on Windows). TARGET: a DxDispatch model, a capture folder, or an ONNX model (captured first, as "
        "dml2onnx capture does: make dml-setup). Exit status 0 when nothing diverges, 1 when something does.",
    )
    options.common(
        cmp, "TARGET", "a DxDispatch JSON model, a capture folder (dml2onnx capture), or an ONNX model (captured first)"
    )
    options.ep(cmp, runtime.DIRECTML, also="the engine compared with the reference; the CPU EP's lowering is compared too")
    cmp.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        help="the folder for the repros (new, or empty; default compare-<target>, numbered past one that exists; made "
        "only when a node diverges)",
    )
    cmp.add_argument("--atol", type=float, metavar="X", help="absolute tolerance of float outputs (default: each operator's)")
    cmp.add_argument("--rtol", type=float, metavar="X", help="relative tolerance of float outputs (default: each operator's)")
    options.model_inputs(cmp, "an ONNX TARGET: ")
    options.json_flag(cmp, 'a "nodes" list, "graphs", and "first_divergence": {"node", "type", ...} or null')
    options.free_dims(cmp)

    ops = sub.add_parser(
        "ops",
        help="list every DirectML operator, or one operator's fields, data types and a runnable example",
        description="Without NAME: every DirectML operator type (DML_OPERATOR_*, in DML_OPERATOR_TYPE order): whether "
        "dml2onnx lowers it, the feature level that introduced it, the data types of its doc page's 'Tensor support' "
        "table, and the ONNX ops of its portable lowerings (found by lowering an example desc of each data type with "
        "every candidate lowering). With NAME (CONVOLUTION or DML_OPERATOR_CONVOLUTION): that operator's desc fields "
        "in struct order with their kinds and enum values, its data types and dimension counts, its doc page, and "
        "with --example a DxDispatch model that runs it (dml2onnx run FILE).",
    )
    ops.add_argument("name", nargs="?", metavar="NAME", help="one operator (short or full name)")
    ops.add_argument("--example", action="store_true", help="with NAME: print a DxDispatch model that runs it")
    ops.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr (ops prints none)")
    options.json_flag(ops, "a list of operators, or NAME's facts as an object")
    ops.add_argument("--markdown", action="store_true", help="print the README's overview: operators by feature level")
    ops.add_argument(
        "--feature-level",
        metavar="LEVEL",
        help=f"only the operators available at this DML_FEATURE_LEVEL, with that level's data types (with NAME: "
        f"that operator's at that level) ({', '.join(featurelevels.LEVELS)}; default: all, with the newest level's)",
    )
    return p


def _no_target_for_the_api(args: argparse.Namespace, eps: Sequence[str]) -> None:
    """--target picks ONNX graphs: DirectML's own API alone runs none, which a note says (the same
    options may be given to every engine in turn, so it is not an error)."""
    if args.target and eps and all(runtime.canonical(ep) == runtime.DIRECTML for ep in eps) and not args.quiet:
        print(
            f"dml2onnx: note: --target {args.target} does not apply: --ep {runtime.DIRECTML} runs the descs themselves, "
            "no lowered graph",
            file=sys.stderr,
        )


def _run(args: argparse.Namespace) -> None:
    _no_target_for_the_api(args, [args.ep])
    model = load(args)
    log = io.StringIO() if args.quiet else sys.stderr
    out = io.StringIO() if args.json else sys.stdout
    executor = Executor(
        model, args.ep, args.opset, out, log, args.target, allow_any_path=args.allow_any_path, iterations=args.iterations
    )
    executor.run()
    if args.json:
        print(json.dumps(run_json(executor), indent=1))


def run_json(executor: Executor) -> dict[str, Any]:
    """`run --json`: what ran where, each dispatch's times, each print's values, the files written."""
    return {
        "model": str(executor.model.path),
        "engine": executor.ep_name,
        "target": executor.target if executor.ep in runtime.PROVIDERS else None,
        "setup_ms": executor.setup_ms,
        "dispatches": executor.timings,
        "prints": [{"resource": name, "values": json_values(values)} for name, values in executor.printed],
        "files": executor.written,
    }


def _check(args: argparse.Namespace) -> int:
    model = load(args)
    if args.static:
        if args.ep and args.ep != ["dml"]:
            raise UsageError("--static checks the DirectML EP only: use --ep dml or no --ep")
        return 0 if check.static_dml(model, sys.stdout, args.opset, args.target or "portable") else 1
    eps = args.ep or runtime.engines()
    is_onnx = [isinstance(d, onnx_dispatchable.GraphDispatchable) and d.serialized is None for d in model.dispatchables.values()]
    if not args.ep and all(is_onnx):  # DirectML's API would run every graph on the DirectML EP: `dml` again
        eps = [ep for ep in eps if ep != runtime.DIRECTML]
    eps = list(dict.fromkeys(runtime.resolve(ep) for ep in eps))  # auto: the best present, named
    _no_target_for_the_api(args, eps)
    log = None if args.quiet else sys.stderr
    return 0 if check.dynamic(model, eps, sys.stdout, args.opset, args.target, log, args.json, args.iterations) else 1


def _inspect(args: argparse.Namespace) -> None:
    args.target = graph_target(args)
    model, name = inspection.load(
        args.model,
        args.dispatchable,
        args.opset,
        args.target,
        args.functions,
        args.feature_level,
        (args.free_dim_name, args.free_dim_denotation),
    )
    if args.json:
        print(json.dumps(inspection.table(model, name), indent=1))
        return
    if args.text:
        inspection.text(inspection.table(model, name), sys.stdout)
        return
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be in [0, 65535], got {args.port}")
    inspection.serve(model, name, args.port, not args.no_browser)
    inspection.wait()


def _bench(args: argparse.Namespace) -> None:
    if args.iterations < 1:
        raise UsageError(f"--iterations must be at least 1, got {args.iterations}")
    if Path(args.model).is_dir():
        if not args.original:
            raise UsageError(f"{files.shown(args.model)} is a folder: bench of a capture needs --original MODEL.onnx")
        log = io.StringIO() if args.quiet else sys.stderr
        settings = onnx_dispatchable.command_line_settings(args.free_dim_name, args.free_dim_denotation)
        bench_capture.bench_capture(
            Path(args.model), Path(args.original), args.ep, args.iterations, args.target, sys.stdout, log, args.json, settings
        )
        return
    if args.original:
        raise UsageError("--original is for a capture folder (dml2onnx bench CAPTURE_DIR --original MODEL.onnx)")
    model = load(args)
    log = io.StringIO() if args.quiet else sys.stderr
    bench.bench(model, args.ep, args.iterations, sys.stdout, log, args.json, args.opset, args.target)


def _capture(args: argparse.Namespace) -> None:
    settings = onnx_dispatchable.command_line_settings(args.free_dim_name, args.free_dim_denotation)
    log = io.StringIO() if args.quiet else sys.stderr
    captured = capture.capture(Path(args.model), Path(args.output), options.input_files(args.input), args.seed, settings, log)
    if args.json:
        print(json.dumps(capture_json(captured), indent=1))
        return
    for p in captured.partitions:
        print(f"{p.path}: {len(p.graph.nodes)} nodes" if p.graph else f"{p.path}: dml2onnx cannot read it: {p.problem}")
    for n in captured.outside:
        print(f"outside any partition: {n.name or '(unnamed)'} ({n.op_type})")
    print(f"{captured.model_json}: runs {len(captured.units)} dispatchables (cd {files.shown(captured.folder)} to run it)")
    if captured.lowered is not None:
        print(f"{captured.lowered}: the whole model as DirectML runs it, lowered to one ONNX graph")


def capture_json(captured: capture.Capture) -> dict[str, Any]:
    """`capture --json`: each partition (its node count, or why dml2onnx cannot read it), the nodes
    outside any, the DxDispatch model that runs them all, and the whole model lowered."""
    return {
        "folder": str(captured.folder),
        "partitions": [
            {"file": str(p.path), "nodes": len(p.graph.nodes)} if p.graph else {"file": str(p.path), "problem": p.problem}
            for p in captured.partitions
        ],
        "outside": [{"name": n.name or None, "op": n.op_type} for n in captured.outside],
        "model": str(captured.model_json),
        "dispatchables": len(captured.units),
        "lowered": str(captured.lowered) if captured.lowered is not None else None,
    }


def _ops(args: argparse.Namespace) -> None:
    level = featurelevels.parse(args.feature_level) if args.feature_level else featurelevels.NEWEST
    if args.json and args.markdown:
        raise UsageError("--json and --markdown: pick one")
    if args.example and not args.name:
        raise UsageError("--example needs an operator NAME (dml2onnx ops CONVOLUTION --example)")
    if args.name:
        if args.markdown:
            raise UsageError("--markdown lists every operator: leave NAME out")
        if args.example and args.feature_level:
            raise UsageError("--example writes a model for the newest feature level: leave --feature-level out")
        if args.example and args.json:
            raise UsageError("--example prints a model, which is JSON already: leave out --json")
        if args.example:
            print(operator_info.example_json(args.name), end="")
            return
        info = operator_info.facts(args.name, level)
        print(json.dumps(info, indent=1) if args.json else operator_info.text(info))
        return
    if args.markdown:
        print(listing.markdown(), end="")
        return
    entries = listing.entries(level)
    if args.json:
        print(json.dumps([e.as_json() for e in entries], indent=1))
        return
    for e in entries:
        print(listing.text_line(e))
    lowered = sum(e.supported for e in entries)
    print(f"{len(entries)} DirectML operators at feature level {level}, {lowered} lowered by dml2onnx")


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    """The arguments; one that the command does not take is refused by that command's parser (its
    usage, exit 2), naming the commands that do take it."""
    parser = _parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        commands: dict[str, argparse.ArgumentParser] = next(
            a.choices for a in parser._actions if isinstance(a, argparse._SubParsersAction)
        )
        option = next((x.split("=")[0] for x in extra if x.startswith("-")), None)
        takers = [name for name, sub in commands.items() if option in sub._option_string_actions]
        where = f" ({option} is an option of {', '.join(takers)})" if option and takers else ""
        commands[args.command].error(f"unrecognized arguments: {' '.join(extra)}{where}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(argv)
    _spelling_notes(args)
    try:
        commands = {
            "run": _run,
            "export": lambda args: export.export(args, graph_target(args)),
            "check": _check,
            "inspect": _inspect,
            "bench": _bench,
            "capture": _capture,
            "compare": lambda args: compare.command(args, sys.stdout, io.StringIO() if args.quiet else sys.stderr),
            "ops": _ops,
        }
        with limits.bytes_limit(getattr(args, "max_bytes", limits.DEFAULT_MAX_BYTES)):
            status = commands[args.command](args)
    except Dml2OnnxError as e:
        print(f"dml2onnx: error: {one_line(str(e))}", file=sys.stderr)
        return e.exit_status
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader left (`dml2onnx ops | head`): stop quietly, as other tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error when Python flushes
        return 141
    except OSError as e:  # the machine's (a full disk, a vanished file): one line, a runtime failure
        if os.environ.get("DML2ONNX_TRACEBACK"):
            raise
        print(f"dml2onnx: error: {one_line(str(e))}", file=sys.stderr)
        return 1
    except Exception as e:  # a bug of dml2onnx's: one line, and how to see where
        if os.environ.get("DML2ONNX_TRACEBACK"):
            raise
        what = one_line(str(e))
        print(
            f"dml2onnx: internal error: {type(e).__name__}: {what[:400]}{'...' if len(what) > 400 else ''} "
            "(a bug in dml2onnx; DML2ONNX_TRACEBACK=1 shows where)",
            file=sys.stderr,
        )
        return 1
    return status or 0
