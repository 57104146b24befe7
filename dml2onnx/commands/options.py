"""The options the commands share, each meaning the same wherever it appears (README: the table of
shared options): the model and its limits, --ep, --json, -i, -f/-F and ONNX Runtime's session options."""

from __future__ import annotations

import argparse
from pathlib import Path

from dml2onnx.backends import runtime
from dml2onnx.core import featurelevels, limits
from dml2onnx.core.errors import UsageError
from dml2onnx.graph import targets
from dml2onnx.graph.builder import DEFAULT_OPSET, MAX_OPSET, MIN_OPSET


def opset(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not MIN_OPSET <= value <= MAX_OPSET:
        raise argparse.ArgumentTypeError(f"must be in [{MIN_OPSET}, {MAX_OPSET}]")
    return value


def size_in_bytes(text: str) -> int:
    units = {"k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}
    t = text.strip().lower().removesuffix("ib").removesuffix("b")
    try:
        value = int(t[:-1]) * units[t[-1]] if t and t[-1] in units else int(t)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (bytes, or with K, M, G, T)") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1 byte")
    return value


def feature_level(text: str) -> str:
    try:
        return featurelevels.parse(text)
    except UsageError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix("--feature-level ")) from None


def common(sub: argparse.ArgumentParser, model: str = "MODEL.json", model_help: str = "a DxDispatch JSON model") -> None:
    """The model, --max-bytes, --opset, --feature-level and --target that every command takes."""
    sub.add_argument("model", metavar=model, help=model_help)
    sub.add_argument(
        "--max-bytes",
        type=size_in_bytes,
        default=limits.DEFAULT_MAX_BYTES,
        metavar="N",
        help="refuse any tensor or buffer larger than N bytes (K/M/G suffixes; default 4G, DirectML's buffer limit)",
    )
    sub.add_argument(
        "--opset",
        type=opset,
        default=DEFAULT_OPSET,
        help=f"ONNX opset of the lowered graphs (default {DEFAULT_OPSET}, {MIN_OPSET}-{MAX_OPSET})",
    )
    sub.add_argument(
        "--feature-level",
        type=feature_level,
        default=featurelevels.NEWEST,
        metavar="LEVEL",
        help=f"the DML_FEATURE_LEVEL the descs must be valid for: which operators, data types, dimension counts and "
        f"options they may use ({', '.join(featurelevels.LEVELS)}; default {featurelevels.NEWEST}, the newest)",
    )
    sub.add_argument(
        "--target",
        choices=targets.NAMES,
        help="lowering target: the ONNX graphs built for an EP (default: run, check and bench use the EP's own, "
        "cpu, cuda or dml; export and inspect use portable, the graphs that run without fallback on all three)",
    )
    sub.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")


# The engines every command names alike: ONNX Runtime's EPs, and DirectML's own API (runtime.py).
ENGINES = runtime.ENGINE_NAMES
ENGINES_HELP = (
    "cpu, cuda and dml are ONNX Runtime's execution providers (dml: the DirectML EP; on Linux under Wine, make "
    f"dml-setup), GPU EPs without CPU fallback; {runtime.DIRECTML} is DirectML's own API running the descs (and "
    "compiling serialized graphs), no ONNX; auto is the best present: DirectML, then CUDA, then the CPU (on Linux: "
    f"CUDA, then the DirectML EP under Wine, then the CPU). {', '.join(runtime.OLD_SPELLINGS)} is the old spelling of "
    f"{runtime.DIRECTML}"
)


def ep(sub: argparse.ArgumentParser, default: str | None, repeatable: bool = False, also: str = "") -> None:
    said = "default: every engine present" if default is None else f"default {default}"
    sub.add_argument(
        "--ep",
        choices=(*ENGINES, *runtime.OLD_SPELLINGS),
        metavar="{" + ",".join(ENGINES) + "}",
        action="append" if repeatable else "store",
        default=default,
        help=f"the engine ({'repeatable; ' if repeatable else ''}{said}): {ENGINES_HELP}" + (f". {also}" if also else ""),
    )


def graphs_for(sub: argparse.ArgumentParser) -> None:
    """export's and inspect's --ep: nothing runs; the graphs are lowered for that engine's target."""
    sub.add_argument(
        "--ep",
        choices=(*ENGINES, *runtime.OLD_SPELLINGS),
        metavar="{" + ",".join(e for e in ENGINES if e != runtime.DIRECTML) + "}",
        help="the engine the graphs are for: they are lowered for its target, as run lowers for it (default: the "
        "portable target; --target overrides); auto: the best engine present",
    )


def json_flag(sub: argparse.ArgumentParser, what: str) -> None:
    """--json: every command's answer as one JSON document on stdout (progress stays on stderr)."""
    sub.add_argument("--json", action="store_true", help=f"print JSON instead of text: {what}")


def iterations(sub: argparse.ArgumentParser, default: int, what: str) -> None:
    sub.add_argument("-i", "--iterations", type=positive, default=default, metavar="N", help=f"{what} (default {default})")


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def free_dims(sub: argparse.ArgumentParser, of: str = "ONNX dispatchables") -> None:
    """DxDispatch's -f and -F: free dimension overrides of ONNX dispatchables' graph inputs (`of`:
    what the command's graphs are: capture's is the model itself)."""
    over = " (repeatable; over the JSON's freeDimension{}Overrides)" if of == "ONNX dispatchables" else " (repeatable)"
    sub.add_argument(
        "-f",
        "--free-dim-name",
        action="append",
        default=[],
        metavar="NAME:VALUE",
        help=f"{of}: set every graph input dimension named NAME to VALUE" + over.format("Name"),
    )
    sub.add_argument(
        "-F",
        "--free-dim-denotation",
        action="append",
        default=[],
        metavar="DENOTATION:VALUE",
        help=f"{of}: set every graph input dimension with this denotation (e.g. DATA_BATCH) to VALUE" + over.format("Denotation"),
    )


def session_options(sub: argparse.ArgumentParser) -> None:
    """DxDispatch's -e, -l and -L: the ONNX Runtime session options of ONNX dispatchables."""
    sub.add_argument(
        "-e",
        "--session-config",
        action="append",
        default=[],
        metavar="KEY:VALUE",
        help="ONNX dispatchables: a SessionOptions config entry (repeatable; over the JSON's sessionOptionsConfigEntries)",
    )
    sub.add_argument(
        "-l",
        "--graph-optimization-level",
        type=int,
        choices=(0, 1, 2, 99),
        help="ONNX dispatchables: ONNX Runtime's graph optimization level, 0 disabled, 1 basic, 2 extended, 99 all "
        "(over the JSON's graphOptimizationLevel; default 99)",
    )
    sub.add_argument(
        "-L",
        "--ort-logging-level",
        type=int,
        choices=range(5),
        metavar="{0-4}",
        help="ONNX dispatchables: ONNX Runtime's logging level, 0 verbose to 4 fatal (over the JSON's loggingLevel)",
    )


def model_inputs(sub: argparse.ArgumentParser, of: str = "") -> None:
    """capture's --input and --seed: an ONNX model's inputs, given or generated (`of`: for which
    TARGET, where a command takes other kinds too)."""
    sub.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="NAME=FILE.npy",
        help=f"{of}the value of a graph input (repeatable; the others are generated)",
    )
    sub.add_argument("--seed", type=int, default=0, help=f"{of}seed of the generated inputs (default 0)")


def input_files(items: list[str]) -> dict[str, Path]:
    """--input NAME=FILE.npy ... as {NAME: FILE}."""
    given = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise UsageError(f"--input {item!r}: expected NAME=FILE.npy")
        given[name] = Path(path)
    return given
