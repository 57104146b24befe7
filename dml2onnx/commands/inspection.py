"""`dml2onnx inspect`: a lowered model as a text table, or served in Netron on localhost."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, TextIO

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


def table(model: onnx.ModelProto, name: str) -> dict[str, Any]:
    """What --text prints (and --json writes): the model's opsets, target and producer, its inputs
    and outputs with types and shapes, and each node (and each function's), with what it does."""
    props = {p.key: p.value for p in model.metadata_props}
    types = _types(model)
    packed = any(f'"{t.name}"' in props.get(k, "") for t in dtypes.PACKED for k in ("dml2onnx.desc", "dml2onnx.dispatchables"))
    return {
        "model": name,
        "operator": props.get("dml2onnx.operator", model.doc_string or "ONNX model"),
        "opsets": {o.domain or "ai.onnx": o.version for o in model.opset_import},
        "target": props.get("dml2onnx.target"),
        "producer": f"{model.producer_name} {model.producer_version}".strip(),
        "inputs": [{"name": v.name, "type": types.get(v.name, "?")} for v in model.graph.input],
        "outputs": [{"name": v.name, "type": types.get(v.name, "?")} for v in model.graph.output],
        "notes": [FOUR_BIT_NOTE] if packed else [],
        "nodes": _nodes(model.graph.node, types),
        "functions": [
            {
                "name": f"{f.domain}.{f.name}" + (f":{f.overload}" if f.overload else ""),
                "inputs": list(f.input),
                "outputs": list(f.output),
                "nodes": _nodes(f.node, types),
            }
            for f in model.functions
        ],
    }


def _nodes(nodes: Any, types: dict[str, str]) -> list[dict[str, Any]]:
    return [
        {
            "name": n.name or "(unnamed)",
            "op": f"{n.domain}.{n.op_type}" if n.domain else n.op_type,
            "inputs": [{"name": v, "type": types.get(v)} for v in n.input if v],
            "outputs": [{"name": v, "type": types.get(v)} for v in n.output],
            "doc": n.doc_string or None,
        }
        for n in nodes
    ]


def text(info: dict[str, Any], out: TextIO) -> None:
    """table()'s node table as text: node, op, inputs -> outputs with types and shapes, what each node does."""
    opsets = ", ".join(f"{domain} {version}" for domain, version in info["opsets"].items())
    out.write(f"model {info['model']}: {info['operator']}\n")
    out.write(f"  opsets {opsets}; target {info['target'] or '-'}; producer {info['producer']}\n")
    for kind in ("inputs", "outputs"):
        out.write(f"  {kind}: " + ", ".join(f"{v['name']} {v['type']}" for v in info[kind]) + "\n")
    for note in info["notes"]:
        out.write(f"  {note}\n")
    _write_nodes(info["nodes"], out, "  ")
    for f in info["functions"]:
        out.write(f"  function {f['name']}({', '.join(f['inputs'])}) -> {', '.join(f['outputs'])}\n")
        _write_nodes(f["nodes"], out, "    ")


def _write_nodes(nodes: list[dict[str, Any]], out: TextIO, indent: str) -> None:
    def values(vs: list[dict[str, Any]]) -> str:
        return ", ".join(f"{v['name']} {v['type']}" if v["type"] else v["name"] for v in vs)

    for i, n in enumerate(nodes):
        out.write(f"{indent}{i + 1:>3}  {n['name']}  {n['op']}\n")
        out.write(f"{indent}       {values(n['inputs']) or '(no inputs)'} -> {values(n['outputs'])}\n")
        if n["doc"]:
            out.write(f"{indent}       {n['doc']}\n")


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
