"""A static check of an ONNX graph against what ONNX Runtime's DirectML EP registers: it runs
everywhere in an instant (the EP itself runs here only under Wine, `make dml-setup`), so this is
how every `dml` and `portable` lowering is kept honest.

`dml_ep_registry.REGISTRY` maps each op to its kernels, `(since, last_opset, types, cpu_inputs,
query)`:
- since: the ONNX schema version the kernel serves. ONNX Runtime matches a DirectML kernel only
  when the node's schema version equals it exactly.
- last_opset: the last model opset at which that schema version is current (None: still current).
- types: allowed element types per ONNX type-constraint label (labels not listed: unconstrained).
- cpu_inputs: input indices that must be constant initializers (read when the kernel is created).
- query: the name of the EP's support-query callback, or "".
"""

from __future__ import annotations

import onnx
import onnx.inliner
from onnx import TensorProto

from dml2onnx.graph.dml_ep_registry import REGISTRY, SOURCE_VERSION

__all__ = ["SOURCE_VERSION", "check", "sixty_four_bit_nodes", "takes"]

_64_BIT = {"INT64", "UINT64", "DOUBLE"}


def _element_types(model: onnx.ModelProto) -> dict[str, str]:
    g = model.graph
    types = {i.name: TensorProto.DataType.Name(i.data_type) for i in g.initializer}
    for vi in [*g.input, *g.output, *g.value_info]:
        if vi.type.HasField("tensor_type"):
            types[vi.name] = TensorProto.DataType.Name(vi.type.tensor_type.elem_type)
    return types


def _as_onnx_runtime_sees_it(model: onnx.ModelProto) -> onnx.ModelProto:
    """ONNX Runtime inlines model-local functions and turns Constant nodes into initializers
    before it assigns nodes to EPs; the check looks at the graph after the same steps."""
    if model.functions:
        model = onnx.inliner.inline_local_functions(model)
        graph = model.graph
        constants = [
            n
            for n in graph.node
            if n.op_type == "Constant"
            and n.domain in ("", "ai.onnx")
            and len(n.attribute) == 1
            and n.attribute[0].name == "value"
        ]
        for n in constants:
            tensor = onnx.TensorProto()
            tensor.CopyFrom(n.attribute[0].t)
            tensor.name = n.output[0]
            graph.initializer.append(tensor)
            graph.node.remove(n)
    if not model.graph.value_info:
        model = onnx.shape_inference.infer_shapes(model)
    return model


def _opset(model: onnx.ModelProto) -> int:
    return next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))


def takes(op_type: str, opset: int, **types: str) -> bool:
    """Whether the DirectML EP has a kernel for `op_type` at this model opset with these element
    types per type-constraint label (e.g. takes("Cast", 17, T1="FLOAT", T2="INT8"))."""
    if not onnx.defs.has(op_type, opset):
        return False
    since = onnx.defs.get_schema(op_type, opset).since_version
    kernel = next((k for k in REGISTRY.get(op_type, ()) if k[0] == since), None)
    return kernel is not None and all(label not in kernel[2] or t in kernel[2][label] for label, t in types.items())


def check(model: onnx.ModelProto) -> list[str]:
    """One line per node the DirectML EP would not take (empty: every node runs on it)."""
    model = _as_onnx_runtime_sees_it(model)
    opset, types = _opset(model), _element_types(model)
    constants = {i.name for i in model.graph.initializer}
    problems = []
    for node in model.graph.node:
        where = f"{node.name} ({node.op_type})"
        if node.domain not in ("", "ai.onnx"):
            problems.append(f"{where}: domain '{node.domain}' is not registered by the DirectML EP")
            continue
        schema = onnx.defs.get_schema(node.op_type, opset)
        kernels = REGISTRY.get(node.op_type, ())
        kernel = next((k for k in kernels if k[0] == schema.since_version), None)
        if kernel is None:
            versions = ", ".join(str(k[0]) for k in kernels) or "none"
            problems.append(
                f"{where}: no DirectML kernel for {node.op_type}-{schema.since_version} "
                f"(opset {opset}); registered versions: {versions}"
            )
            continue
        _, _, allowed, cpu_inputs, _ = kernel
        for kind, names, formals in (("input", node.input, schema.inputs), ("output", node.output, schema.outputs)):
            for i, name in enumerate(names):
                if not name or not formals:
                    continue
                label = formals[min(i, len(formals) - 1)].type_str
                t = types.get(name)
                if label in allowed and t is not None and t not in allowed[label]:
                    problems.append(
                        f"{where}: {kind} {i} '{name}' is {t}; the DirectML EP takes {label} in {', '.join(allowed[label])}"
                    )
        for i in cpu_inputs:
            if i < len(node.input) and node.input[i] and node.input[i] not in constants:
                problems.append(f"{where}: input {i} '{node.input[i]}' must be a constant initializer")
    return problems


def sixty_four_bit_nodes(model: onnx.ModelProto) -> list[str]:
    """Nodes with INT64/UINT64/DOUBLE tensors on the GPU: the DirectML EP takes them only on devices
    that report those data types (DML_FEATURE_TENSOR_DATA_TYPE_SUPPORT); constants are exempt."""
    model = _as_onnx_runtime_sees_it(model)
    types = _element_types(model)
    constants = {i.name for i in model.graph.initializer}
    return [
        f"{n.name} ({n.op_type})"
        for n in model.graph.node
        if any(types.get(v) in _64_BIT for v in [*n.input, *n.output] if v and v not in constants)
    ]
