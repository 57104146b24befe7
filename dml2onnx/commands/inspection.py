"""`dml2onnx inspect`: a lowered model as a text table, or served in Netron on localhost."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TextIO

import onnx
from onnx import TensorProto

from dml2onnx import lowering
from dml2onnx.core import dtypes, files, limits
from dml2onnx.core.errors import ModelError, RuntimeFailure, UsageError
from dml2onnx.core.schema import NEWEST_LEVEL
from dml2onnx.formats import dxdispatch, onnx_dispatchable
from dml2onnx.run import compose


def load(
    path: str,
    dispatchable: str | None,
    opset: int,
    target: str,
    functions: bool,
    level: str = NEWEST_LEVEL,
    free_dims: tuple[list[str], list[str]] = ([], []),
) -> tuple[onnx.ModelProto, str]:
    """An .onnx file as it is, or a DxDispatch model lowered: one dispatchable, or all of them as
    one graph. Returns the model and a name for it. An ONNX dispatchable is its graph as it is,
    `free_dims` (-f, -F) and its own free dimension overrides applied."""
    p = Path(path)
    if p.suffix.lower() == ".onnx":
        if dispatchable:
            raise UsageError("--dispatchable applies to DxDispatch models, not .onnx files")
        limit = limits.max_bytes()
        try:
            raw = files.read_regular(p, limit, f"the limit of {limits.describe(limit)} (--max-bytes)", pipes=True)
        except files.PathRefused as e:
            raise ModelError((), str(e)) from None
        try:  # external data is not loaded: the graph is what is shown, and its file names are not trusted
            model = onnx.load_from_string(raw)
            model = onnx.shape_inference.infer_shapes(model)
        except onnx.onnx_cpp2py_export.shape_inference.InferenceError as e:
            raise ModelError((), f"cannot read {files.shown(path)} as an ONNX model: {e}") from None
        except Exception as e:  # protobuf's DecodeError and friends: the file is not a model
            raise ModelError((), f"{files.shown(path)} is not an ONNX model: {type(e).__name__}") from None
        return model, p.stem
    model = dxdispatch.load(p, level)
    onnx_dispatchable.apply_command_line(model.dispatchables, *free_dims)
    names = list(model.dispatchables)
    if dispatchable is None and len(names) == 1:
        dispatchable = names[0]
    if dispatchable is None:
        return compose.single_graph(model, p.stem, opset, target, functions), p.stem
    if dispatchable not in model.dispatchables:
        raise UsageError(f"no dispatchable '{dispatchable}' in {path} (dispatchables: {', '.join(names)})")
    d = model.dispatchables[dispatchable]
    if isinstance(d, onnx_dispatchable.GraphDispatchable):  # shapes inferred for the table, the graph unchanged
        return onnx.shape_inference.infer_shapes(d.model(opset, target)), dispatchable
    lowered = lowering.lower(d.desc, dispatchable, opset, target)
    return (compose.as_function(lowered) if functions else lowered), dispatchable


FOUR_BIT_NOTE = (
    "INT4/UINT4 tensors (and resources) are int8/uint8 here, one element a byte, in [-8, 7] / [0, 15]; "
    "DirectML's buffers pack two a byte, element 2k in the low nibble"
)


def _types(model: onnx.ModelProto) -> dict[str, str]:
    def describe(t: onnx.TypeProto) -> str:
        tt = t.tensor_type
        elem = TensorProto.DataType.Name(tt.elem_type).lower()
        dims = ",".join(str(d.dim_value) if d.HasField("dim_value") else (d.dim_param or "?") for d in tt.shape.dim)
        return f"{elem}[{dims}]"

    g = model.graph
    out = {
        i.name: f"{TensorProto.DataType.Name(i.data_type).lower()}[{','.join(map(str, i.dims))}] (constant)"
        for i in g.initializer
    }
    for vi in [*g.input, *g.output, *g.value_info]:
        out[vi.name] = describe(vi.type)
    return out


def text(model: onnx.ModelProto, name: str, out: TextIO) -> None:
    """A node table: node, op, inputs -> outputs with types and shapes, and what each node does."""
    props = {p.key: p.value for p in model.metadata_props}
    opsets = ", ".join(f"{o.domain or 'ai.onnx'} {o.version}" for o in model.opset_import)
    out.write(f"model {name}: {props.get('dml2onnx.operator', model.doc_string or 'ONNX model')}\n")
    out.write(
        f"  opsets {opsets}; target {props.get('dml2onnx.target', '-')}; "
        f"producer {model.producer_name} {model.producer_version}\n"
    )
    types = _types(model)
    for kind, values in (("inputs", model.graph.input), ("outputs", model.graph.output)):
        out.write(f"  {kind}: " + ", ".join(f"{v.name} {types.get(v.name, '?')}" for v in values) + "\n")
    if any(f'"{t.name}"' in props.get(k, "") for t in dtypes.PACKED for k in ("dml2onnx.desc", "dml2onnx.dispatchables")):
        out.write(f"  {FOUR_BIT_NOTE}\n")
    _nodes(model.graph.node, types, out, "  ")
    for f in model.functions:
        overload = f":{f.overload}" if f.overload else ""
        out.write(f"  function {f.domain}.{f.name}{overload}({', '.join(f.input)}) -> {', '.join(f.output)}\n")
        _nodes(f.node, types, out, "    ")


def _nodes(nodes: list[onnx.NodeProto] | object, types: dict[str, str], out: TextIO, indent: str) -> None:
    for i, n in enumerate(nodes):  # type: ignore[arg-type]
        op = f"{n.domain}.{n.op_type}" if n.domain else n.op_type
        ins = ", ".join(f"{v} {types[v]}" if v in types else v for v in n.input if v)
        outs = ", ".join(f"{v} {types[v]}" if v in types else v for v in n.output)
        out.write(f"{indent}{i + 1:>3}  {n.name or '(unnamed)'}  {op}\n")
        out.write(f"{indent}       {ins or '(no inputs)'} -> {outs}\n")
        if n.doc_string:
            out.write(f"{indent}       {n.doc_string}\n")


def serve(model: onnx.ModelProto, name: str, port: int, browse: bool, out: TextIO = sys.stdout) -> tuple[str, int]:
    """Serves the model in Netron on localhost; returns the (host, port) it listens on."""
    try:
        import netron
    except ImportError:
        raise RuntimeFailure("Netron is not installed: pip install dml2onnx[inspect] (or pip install netron)") from None
    try:
        data = bytearray(model.SerializeToString())  # bytes would go through Netron's experimental object path
        address = netron.serve(f"{name}.onnx", data=data, address=("localhost", port), browse=browse)
    except OSError as e:
        raise RuntimeFailure(f"cannot serve on localhost:{port}: {e.strerror or e}") from None
    out.write(f"Serving {name}.onnx in Netron at http://{address[0]}:{address[1]} (Ctrl+C stops)\n")
    out.flush()
    return address


def wait() -> None:
    """Until Ctrl+C, then stops every Netron server of this process."""
    import netron

    netron.wait()
