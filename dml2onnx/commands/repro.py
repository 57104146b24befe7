"""One DirectML operator alone, as a DxDispatch model folder that reproduces what `dml2onnx compare`
found: the desc, its input buffers as .npy files, and a print of each output.

The folder is in DxDispatch's format (`dxdispatch.exe repro.json` on Windows, not run there yet;
dml2onnx's own forms remain where DxDispatch has none: a scalar union of type UNKNOWN as
`{"Bytes": [...]}`, a 4-bit tensor's .npy one element a byte) and runs here
(`dml2onnx run --ep dml-api repro.json`); each input resource is the tensor's whole buffer
(TotalTensorSizeInBytes, laid out through its Strides, what the strides skip 0), read from
`<resource>.npy` beside the model, and a tensor flagged OWNED_BY_DML is bound on the dispatchable,
as DirectML binds it at initialization. `expected/<resource>.npy` holds what the numpy reference
gives, `<engine>/<resource>.npy` what the engine gave (the buffers' logical values, by Sizes).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import numpy as np

from dml2onnx.commands.capture import file_names
from dml2onnx.core import tensor as packing
from dml2onnx.core.desc import OperatorDesc, split_point
from dml2onnx.core.tensor import TensorDesc, write_tensor

MODEL = "repro.json"
_OWNED_BY_DML = 1  # DML_TENSOR_FLAG_OWNED_BY_DML


def _buffer(t: TensorDesc, value: np.ndarray) -> tuple[np.ndarray, str | None]:
    """A tensor's whole buffer as the array its .npy holds, and the initialValuesDataType a 4-bit
    type needs (its .npy holds one element a byte, int8/uint8: resources.py)."""
    raw = bytearray(t.size_in_bytes)
    write_tensor(raw, 0, t, np.asarray(value).reshape(t.sizes))
    if t.data_type.is_packed:
        return packing.unpack(bytes(raw), t.buffer_elements, t.data_type), t.data_type.name
    return np.frombuffer(bytes(raw), t.data_type.numpy, count=len(raw) // t.data_type.size), None


def write(
    folder: Path,
    desc: OperatorDesc,
    name: str,
    feeds: dict[str, np.ndarray],
    expected: dict[str, np.ndarray],
    got: dict[str, np.ndarray] | None,
    engine: str,
) -> Path:
    """Writes the folder (which must not exist) for `desc`, dispatchable `name`, fed `feeds` (by
    input bind point); `expected` and `got` by output field (`got` None: the engine failed).
    Returns the model's path."""
    folder.mkdir()
    points = [*desc.inputs, *desc.outputs]
    names = file_names([p.replace("[", "_").replace("]", "") for p in points])
    resource = {p: names[p.replace("[", "_").replace("]", "")] for p in points}
    resources: dict[str, Any] = {}
    at_dispatch: dict[str, Any] = {}
    at_init: dict[str, Any] = {}
    for point in desc.inputs:
        t = desc.tensor(point)
        values, data_type = _buffer(t, feeds[point])
        np.save(folder / f"{resource[point]}.npy", values, allow_pickle=False)
        resources[resource[point]] = {"initialValues": {"sourcePath": f"{resource[point]}.npy"}} | (
            {"initialValuesDataType": data_type} if data_type else {}
        )
        _bind(at_init if t.flags & _OWNED_BY_DML else at_dispatch, point, resource[point])
    for point in desc.outputs:
        t = desc.tensor(point)
        resources[resource[point]] = {
            "initialValuesDataType": t.data_type.name,
            "initialValues": {"valueCount": t.buffer_elements, "value": 0},
        }
        _bind(at_dispatch, point, resource[point])
    dispatchable: dict[str, Any] = {"type": desc.schema.full_name, "desc": copy.deepcopy(desc.source)}
    if at_init:
        dispatchable["bindings"] = at_init
    commands: list[dict[str, Any]] = [{"type": "dispatch", "dispatchable": name, "bindings": at_dispatch}]
    commands += [{"type": "print", "resource": resource[p]} for p in desc.outputs]
    model = {"resources": resources, "dispatchables": {name: dispatchable}, "commands": commands}
    (folder / MODEL).write_text(json.dumps(model, indent=1) + "\n")
    for sub, values in (("expected", expected), (engine, got)):
        if values is None:
            continue
        (folder / sub).mkdir()
        for point in desc.outputs:
            np.save(folder / sub / f"{resource[point]}.npy", values[point], allow_pickle=False)
    return folder / MODEL


def _bind(bindings: dict[str, Any], point: str, resource: str) -> None:
    """A DxDispatch binding of one bind point: a tensor array's element goes into its field's list
    (bound in order, as the array's elements are)."""
    field, index = split_point(point)
    if index is None:
        bindings[point] = resource
    else:
        bindings.setdefault(field, []).append(resource)
