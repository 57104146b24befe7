"""A binding: which resource (and where in it) a dispatchable's bind point reads or writes, in a
DxDispatch model's dispatch commands and dispatchables."""

from __future__ import annotations

from dataclasses import dataclass

from dml2onnx.core.errors import JsonPath


@dataclass(frozen=True)
class Binding:
    resource: str
    offset: int  # bytes from the start of the resource
    path: JsonPath
    shape: tuple[int, ...] | None = None  # an ONNX dispatchable's binding shape (onnx_dispatchable.py)
