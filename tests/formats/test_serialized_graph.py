"""DirectML serialized graphs (DxDispatch's dmlSerializedGraph dispatchables): DxDispatch's own
Partition_0.bin, and graphs written here with flatbuffers.Builder in the layout of DxDispatch's
DmlGraphDesc_generated.h / OperatorFieldTypes_generated.h (as ONNX Runtime's
DmlGraphSerialization.cpp writes them)."""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import flatbuffers
import numpy as np
import onnx
import pytest

from dml2onnx.backends import dmlapi, runtime
from dml2onnx.core import catalog
from dml2onnx.core.errors import ModelError, UsageError
from dml2onnx.formats import serialized_graph as sg
from support import printed, run_cli

MATMUL_ADD = Path(__file__).parents[1] / "dxdispatch" / "matmul_add"
FLOAT32 = "DML_TENSOR_DATA_TYPE_FLOAT32"

# -- a writer of serialized graphs ------------------------------------------------------------------
# Union tags of AttributeFieldVariant, NodeDesc, ConstantNodeDescDetail and ScalarVariant.
VARIANT = {
    "Activation": 1,
    "ActivationArray": 2,
    "UInt32": 3,
    "UInt64": 4,
    "Int32": 5,
    "Float32": 6,
    "UIntArray": 7,
    "IntArray": 8,
    "FloatArray": 9,
    "ScaleBias": 10,
    "Size2D": 11,
    "ScalarUnionData": 12,
    "Bool": 13,
}
STRUCTS = {"UInt32": "<I", "UInt64": "<Q", "Int32": "<i", "Float32": "<f", "ScaleBias": "<ff", "Size2D": "<II", "Bool": "<B"}


@dataclass
class Attr:
    """One AttributeDesc: `kind` a member of AttributeFieldVariant, or None for a valueless one."""

    kind: str | None
    value: Any = None
    name: str | None = None
    tag: int | None = None  # the union tag written (default: kind's)


@dataclass
class Tensor:
    sizes: list[int]
    data_type: str = FLOAT32
    strides: list[int] | None = None
    total: int = 0


@dataclass
class Op:
    name: str
    type: str
    inputs: list[str]
    outputs: list[str]
    in_tensors: list[Tensor]
    out_tensors: list[Tensor]
    attrs: list[Attr] = field(default_factory=list)


@dataclass
class Const:
    name: str
    outputs: list[str]
    data: bytes | None = None  # ConstantRawData
    file: str | None = None  # ConstantName


class Writer:
    def __init__(self) -> None:
        self.b = flatbuffers.Builder(1024)

    def strings(self, items: list[str]) -> int:
        offsets = [self.b.CreateString(s) for s in items]
        return self.offsets(offsets)

    def offsets(self, offsets: list[int]) -> int:
        self.b.StartVector(4, len(offsets), 4)
        for o in reversed(offsets):
            self.b.PrependUOffsetTRelative(o)
        return self.b.EndVector()

    def table(self, fields: dict[int, tuple[str, Any]]) -> int:
        """A table from {field index: (kind, value)}: "offset" or "u8"/"u64" scalars."""
        self.b.StartObject(max(fields) + 1 if fields else 0)
        for i, (kind, v) in fields.items():
            if kind == "offset":
                self.b.PrependUOffsetTRelativeSlot(i, v, 0)
            elif kind == "u8":
                self.b.PrependUint8Slot(i, v, 0)
            else:
                self.b.PrependUint64Slot(i, v, 0)
        return self.b.EndObject()

    def struct(self, fmt: str, *values: Any) -> int:
        """A struct, inline (as a union's struct value is), aligned to its widest member."""
        raw = struct.pack(fmt, *values)
        self.b.Prep(8 if fmt in ("<Q", "<q", "<d") else min(4, len(raw)), len(raw))
        for byte in reversed(raw):
            self.b.PrependUint8(byte)
        return self.b.Offset()

    def tensor(self, t: Tensor) -> int:
        fields: dict[int, tuple[str, Any]] = {0: ("offset", self.b.CreateString(t.data_type))}
        fields[1] = ("offset", self.b.CreateNumpyVector(np.array(t.sizes, np.uint32)))
        if t.strides is not None:
            fields[2] = ("offset", self.b.CreateNumpyVector(np.array(t.strides, np.uint32)))
        if t.total:
            fields[3] = ("u64", t.total)
        return self.table(fields)

    def attr(self, a: Attr) -> int:
        value = None
        if a.value is None:
            pass  # a null field: the tag alone (ONNX Runtime writes a valueless AttributeDesc)
        elif a.kind in STRUCTS:
            value = self.struct(STRUCTS[a.kind], *(a.value if isinstance(a.value, tuple) else (a.value,)))
        elif a.kind in ("UIntArray", "IntArray", "FloatArray"):
            dtype = {"UIntArray": np.uint32, "IntArray": np.int32, "FloatArray": np.float32}[a.kind]
            value = self.table({0: ("offset", self.b.CreateNumpyVector(np.array(a.value, dtype)))})
        elif a.kind == "Activation":
            value = self.activation(*a.value)
        elif a.kind == "ScalarUnionData":  # (ScalarVariant tag, fmt, value)
            tag, fmt, v = a.value
            data = self.struct(fmt, v)
            value = self.table({0: ("u8", tag), 1: ("offset", data)})
        fields: dict[int, tuple[str, Any]] = {}
        if a.name is not None:
            fields[0] = ("offset", self.b.CreateString(a.name))
        tag = a.tag if a.tag is not None else VARIANT.get(a.kind or "", 0)
        if tag:
            fields[1] = ("u8", tag)
        if value is not None:
            fields[2] = ("offset", value)
        return self.table(fields)

    def activation(self, type_name: str, attrs: list[Attr]) -> int:
        attr_offsets = [self.attr(a) for a in attrs]
        return self.table({0: ("offset", self.b.CreateString(type_name)), 1: ("offset", self.offsets(attr_offsets))})

    def node(self, n: Op | Const) -> int:
        if isinstance(n, Op):
            ins = self.offsets([self.tensor(t) for t in n.in_tensors])
            outs = self.offsets([self.tensor(t) for t in n.out_tensors])
            attrs = self.offsets([self.attr(a) for a in n.attrs])
            kind, desc = (
                1,
                self.table(
                    {0: ("offset", self.b.CreateString(n.type)), 1: ("offset", ins), 2: ("offset", outs), 3: ("offset", attrs)}
                ),
            )
            in_names = n.inputs
        else:
            if n.file is not None:
                detail = 1, self.table({0: ("offset", self.b.CreateString(n.file))})
            else:
                detail = 2, self.table({0: ("offset", self.b.CreateByteVector(n.data or b""))})
            kind, desc = 2, self.table({0: ("u8", detail[0]), 1: ("offset", detail[1])})
            in_names = []
        return self.table(
            {
                0: ("u8", kind),
                1: ("offset", desc),
                2: ("offset", self.b.CreateString(n.name)),
                3: ("offset", self.strings(in_names)),
                4: ("offset", self.strings(n.outputs)),
            }
        )


def serialized(nodes: list[Op | Const], inputs: list[str], outputs: list[str]) -> bytes:
    """A DmlGraphDesc flatbuffer."""
    w = Writer()
    node_offsets = [w.node(n) for n in nodes]
    top = w.table({0: ("offset", w.offsets(node_offsets)), 1: ("offset", w.strings(inputs)), 2: ("offset", w.strings(outputs))})
    w.b.Finish(top)
    return bytes(w.b.Output())


def parse(data: bytes, folder: Path = MATMUL_ADD) -> sg.SerializedGraph:
    return sg.parse(data, folder / "graph.bin", ("dispatchables", "g", "sourcePath"), label="graph.bin")


def refused(data: bytes, folder: Path = MATMUL_ADD) -> str:
    with pytest.raises(ModelError) as e:
        parse(data, folder)
    message = str(e.value)
    assert message.startswith("dispatchables.g.sourcePath: 'graph.bin': "), message
    assert "\n" not in message
    return message


def run_cpu(graph: sg.SerializedGraph, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The ONNX graph on the CPU EP, checked against the numpy reference of the same graph."""
    model = sg.to_onnx(graph, "g")
    got = runtime.create(model, "g", "cpu").run_all(feeds)
    want = sg.reference(graph, feeds)
    assert list(got) == list(want) == list(graph.outputs)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-6, err_msg=name)
    return got


def f32(values: Any) -> np.ndarray:
    return np.asarray(values, np.float32)


T2 = Tensor([2])


def relu(name: str, x: str, y: str, t_in: Tensor, t_out: Tensor | None = None) -> Op:
    return Op(name, "DML_OPERATOR_ACTIVATION_RELU", [x], [y], [t_in], [t_out or t_in])


def add(name: str, a: str, b: str, y: str, t: Tensor) -> Op:
    return Op(name, "DML_OPERATOR_ELEMENT_WISE_ADD", [a, b], [y], [t, t], [t])


# -- DxDispatch's model -----------------------------------------------------------------------------


def test_dxdispatch_partition_descs_and_edges() -> None:
    g = sg.load(MATMUL_ADD / "Partition_0.bin", ("dispatchables", "matmul_add", "sourcePath"), label="matmul_add/Partition_0.bin")
    assert (g.input_names, g.output_names) == (("model_input",), ("model_output",))
    const_b, const_c, gemm = g.nodes
    assert isinstance(const_b, sg.ConstantNode) and isinstance(const_c, sg.ConstantNode)
    assert (const_b.name, const_b.file, const_b.output_names) == (
        "matmul_b_tensor",
        str(MATMUL_ADD / "matmul_b_tensor.bin"),
        ("matmul_b_tensor-nodeIdx:0-outputIdx:0",),
    )
    assert np.array_equal(np.frombuffer(const_b.data, np.float32), np.full(25, 1.5, np.float32))
    assert np.array_equal(np.frombuffer(const_c.data, np.float32), np.ones(5, np.float32))
    assert isinstance(gemm, sg.OperatorNode) and gemm.name == "model_output_dmlEp_0"
    d = gemm.desc
    assert d.schema.name == "GEMM"
    assert (gemm.node.inputs, gemm.node.outputs) == (("ATensor", "BTensor", "CTensor"), ("OutputTensor",))
    sizes = {f: d.tensor(f).sizes for f in ("ATensor", "BTensor", "CTensor", "OutputTensor")}
    assert sizes == {"ATensor": (1, 1, 1, 5), "BTensor": (1, 1, 5, 5), "CTensor": (1, 1, 1, 5), "OutputTensor": (1, 1, 1, 5)}
    assert {f: d.tensor(f).total_size_in_bytes for f in sizes} == {
        "ATensor": 20,
        "BTensor": 100,
        "CTensor": 20,
        "OutputTensor": 20,
    }
    # the constants read from files are owned by DirectML, as DxDispatch flags them
    assert [d.tensor(f).flags for f in sizes] == [0, 1, 1, 0]
    assert all(d.tensor(f).data_type.name == "FLOAT32" and d.tensor(f).strides is None for f in sizes)
    assert (d["TransA"], d["TransB"], d["Alpha"], d["Beta"], d["FusedActivation"]) == ("NONE", "NONE", 1.0, 1.0, None)
    assert g.input_edges == [sg.InputEdge(0, 2, 0, "model_input")]
    assert g.output_edges == [sg.OutputEdge(2, 0, 0, "model_output")]
    assert g.intermediate_edges == [
        sg.IntermediateEdge(0, 0, 2, 1, "matmul_b_tensor-nodeIdx:0-outputIdx:0"),
        sg.IntermediateEdge(1, 0, 2, 2, "add_b_tensor-nodeIdx:1-outputIdx:0"),
    ]
    assert {n: t.sizes for n, t in g.inputs.items()} == {"model_input": (1, 1, 1, 5)}
    assert {n: t.sizes for n, t in g.outputs.items()} == {"model_output": (1, 1, 1, 5)}


def test_dxdispatch_partition_runs_as_its_onnx_model_does() -> None:
    g = sg.load(MATMUL_ADD / "Partition_0.bin")
    model = sg.to_onnx(g, "matmul_add")
    onnx.checker.check_model(model, full_check=True)
    assert [i.name for i in model.graph.input] == ["model_input"]
    assert [o.name for o in model.graph.output] == ["model_output"]
    x = np.full((1, 1, 1, 5), 1.5, np.float32)  # DxDispatch's model: 5 x 1.5
    got = run_cpu(g, {"model_input": x})["model_output"]
    b = np.fromfile(MATMUL_ADD / "matmul_b_tensor.bin", np.float32).reshape(5, 5)
    c = np.fromfile(MATMUL_ADD / "add_b_tensor.bin", np.float32)
    want = x.reshape(1, 5) @ b + c  # 5 * 1.5 * 1.5 + 1
    np.testing.assert_array_equal(got.reshape(1, 5), want)
    np.testing.assert_array_equal(want, np.full((1, 5), 12.25, np.float32))
    # ONNX Runtime running the ONNX model this partition was made from
    onnx_model = runtime.ort().InferenceSession(str(MATMUL_ADD / "matmul_add.onnx"), providers=["CPUExecutionProvider"])
    (expected,) = onnx_model.run(None, {"model_input": x.reshape(1, 5)})
    np.testing.assert_array_equal(got.reshape(1, 5), expected)


def test_missing_graph_file_and_constant_file(tmp_path: Path) -> None:
    with pytest.raises(ModelError) as e:
        sg.load(tmp_path / "nope.bin", ("dispatchables", "g", "sourcePath"), label="nope.bin")
    assert str(e.value) == "dispatchables.g.sourcePath: cannot read 'nope.bin': No such file or directory"
    (tmp_path / "Partition_0.bin").write_bytes((MATMUL_ADD / "Partition_0.bin").read_bytes())
    with pytest.raises(ModelError) as e:
        sg.load(tmp_path / "Partition_0.bin", ("dispatchables", "g", "sourcePath"), label="Partition_0.bin")
    assert "'Partition_0.bin': nodes[0].desc.data.name: cannot read" in str(e.value)
    assert "matmul_b_tensor.bin': No such file or directory" in str(e.value)


# -- graphs written here ----------------------------------------------------------------------------


def test_chain_through_a_reshaped_intermediate_and_an_inline_constant() -> None:
    t4 = Tensor([1, 1, 2, 3])
    data = serialized(
        [
            Const("bias", ["b"], data=f32([1, -2, 3, -4, 5, -6]).tobytes()),
            add("add", "x", "b", "t", t4),
            relu("relu", "t", "y", Tensor([6])),  # reads the [1, 1, 2, 3] buffer as [6]
        ],
        ["x"],
        ["y"],
    )
    g = parse(data)
    assert g.intermediate_edges == [sg.IntermediateEdge(0, 0, 1, 1, "b"), sg.IntermediateEdge(1, 0, 2, 0, "t")]
    x = f32([[[[0.5, 0.5, -5, 5, -5, 5]]]]).reshape(1, 1, 2, 3)
    got = run_cpu(g, {"x": x})["y"]
    np.testing.assert_array_equal(got, f32([1.5, 0, 0, 1, 0, 0]))


def test_fused_activation_and_several_outputs_in_graph_output_order() -> None:
    t = Tensor([2, 2])
    linear = Attr("Activation", ("DML_OPERATOR_ACTIVATION_LINEAR", [Attr("Float32", 2.0, "Alpha"), Attr("Float32", 1.0, "Beta")]))
    add1 = Op("add1", "DML_OPERATOR_ELEMENT_WISE_ADD1", ["x", "x"], ["z"], [t, t], [t], [linear])
    g = parse(serialized([add1, relu("r", "z", "w", t)], ["x"], ["w", "z"]))
    assert g.operators[0].desc["FusedActivation"].schema.name == "ACTIVATION_LINEAR"
    assert g.operators[0].desc["FusedActivation"]["Alpha"] == 2.0
    x = f32([[1, -1], [-3, 0.25]])
    got = run_cpu(g, {"x": x})
    assert list(got) == ["w", "z"]
    np.testing.assert_array_equal(got["z"], 2 * (x + x) + 1)
    np.testing.assert_array_equal(got["w"], np.maximum(2 * (x + x) + 1, 0))


def test_gemm_without_c_and_a_fused_relu() -> None:
    a, b, y = Tensor([2, 3]), Tensor([3, 2]), Tensor([2, 2])
    attrs = [
        Attr("UInt32", 0, "TransA"),
        Attr("UInt32", 1, "TransB"),  # DML_MATRIX_TRANSFORM_TRANSPOSE
        Attr("Float32", 0.5, "Alpha"),
        Attr("Float32", 1.0, "Beta"),
        Attr("Activation", ("DML_OPERATOR_ACTIVATION_RELU", [])),
    ]
    b = Tensor([2, 3])  # transposed
    gemm = Op("gemm", "DML_OPERATOR_GEMM", ["a", "b", ""], ["y"], [a, b], [y], attrs)
    g = parse(serialized([gemm], ["a", "b"], ["y"]))
    assert g.operators[0].node.inputs == ("ATensor", "BTensor", None)
    assert g.operators[0].desc["TransB"] == "TRANSPOSE"
    av, bv = f32(np.arange(6).reshape(2, 3) - 2), f32(np.arange(6).reshape(2, 3) - 3)
    got = run_cpu(g, {"a": av, "b": bv})["y"]
    np.testing.assert_allclose(got, np.maximum(0.5 * av @ bv.T, 0))


def test_input_read_as_a_broadcast_and_as_itself_is_its_flat_buffer() -> None:
    row, grid = Tensor([1, 3]), Tensor([2, 3], strides=[0, 1])  # the row repeated by stride 0
    nodes = [relu("r", "x", "a", row), add("s", "x", "x", "b", grid)]
    nodes[1].in_tensors = [grid, grid]
    nodes[1].out_tensors = [Tensor([2, 3])]
    g = parse(serialized(nodes, ["x"], ["a", "b"]))
    assert g.inputs["x"].sizes == (3,) and g.inputs["x"].packed  # the flat buffer: views differ
    got = run_cpu(g, {"x": f32([-1, 2, -3])})
    np.testing.assert_array_equal(got["a"], f32([[0, 2, 0]]))
    np.testing.assert_array_equal(got["b"], f32([[-2, 4, -6], [-2, 4, -6]]))


def test_strided_producer_laid_out_as_its_buffer() -> None:
    # IDENTITY writes [2, 3] transposed into its buffer (strides [1, 2]); RELU reads it as [6]
    t_out = Tensor([2, 3], strides=[1, 2])
    ident = Op("id", "DML_OPERATOR_ELEMENT_WISE_IDENTITY", ["x"], ["t"], [Tensor([2, 3])], [t_out], [Attr("ScaleBias", None)])
    g = parse(serialized([ident, relu("r", "t", "y", Tensor([6]))], ["x"], ["y"]))
    x = f32([[1, -2, 3], [4, -5, 6]])
    got = run_cpu(g, {"x": x})["y"]
    np.testing.assert_array_equal(got, np.maximum(x.T.reshape(6), 0))  # the buffer is x transposed
    # as a graph output, the tensor is written through its strides (by the caller, as executor.py does)
    g = parse(serialized([ident], ["x"], ["t"]))
    assert g.outputs["t"].layout == (1, 2) and run_cpu(g, {"x": x})["t"].shape == (2, 3)


def test_scale_bias_scalar_unions_and_join_of_an_input_array() -> None:
    t = Tensor([1, 2])
    half_bits = int(np.array(2.5, np.float16).view(np.uint16))
    fill_half = Op(
        "fill16",
        "DML_OPERATOR_FILL_VALUE_CONSTANT",
        [],
        ["h"],
        [],
        [Tensor([2], "DML_TENSOR_DATA_TYPE_FLOAT16")],
        [Attr("UInt32", 2, "ValueDataType"), Attr("ScalarUnionData", (1, "<8s", struct.pack("<H6x", half_bits)), "Value")],
    )
    fill = Op(  # the Float32 member (ScalarVariant 10) rather than ByteArray
        "fill",
        "DML_OPERATOR_FILL_VALUE_CONSTANT",
        [],
        ["f"],
        [],
        [t],
        [Attr("UInt32", 1), Attr("ScalarUnionData", (10, "<f", -4.0))],
    )
    scaled = Op(
        "scale", "DML_OPERATOR_ELEMENT_WISE_IDENTITY", ["x"], ["s"], [t], [t], [Attr("ScaleBias", (3.0, 0.5), "ScaleBias")]
    )
    join = Op("join", "DML_OPERATOR_JOIN", ["f", "s"], ["y"], [t, t], [Tensor([2, 2])], [Attr("UInt32", 2), Attr("UInt32", 0)])
    g = parse(serialized([fill_half, fill, scaled, join], ["x"], ["y", "h"]))
    assert g.operators[3].node.inputs == ("InputTensors[0]", "InputTensors[1]")
    assert g.operators[0].desc["Value"] == np.float16(2.5)
    got = run_cpu(g, {"x": f32([[1, 2]])})
    np.testing.assert_array_equal(got["y"], f32([[-4, -4], [3.5, 6.5]]))
    np.testing.assert_array_equal(got["h"], np.array([2.5, 2.5], np.float16))


def test_split_outputs_are_bound_by_their_elements() -> None:
    split = Op("split", "DML_OPERATOR_SPLIT", ["x"], ["a", "b"], [Tensor([4])], [T2, T2], [Attr("UInt32", 2), Attr("UInt32", 0)])
    g = parse(serialized([split], ["x"], ["b", "a"]))
    assert g.operators[0].node.outputs == ("OutputTensors[0]", "OutputTensors[1]")
    assert g.output_edges == [sg.OutputEdge(0, 1, 0, "b"), sg.OutputEdge(0, 0, 1, "a")]
    got = run_cpu(g, {"x": f32([1, 2, 3, 4])})
    assert list(got) == ["b", "a"]
    np.testing.assert_array_equal(got["a"], f32([1, 2]))
    np.testing.assert_array_equal(got["b"], f32([3, 4]))


def test_array_bool_int_and_size_attributes() -> None:
    t = Tensor([1, 1, 2, 4])
    u32 = lambda *v: Attr("UIntArray", list(v))  # noqa: E731
    reverse = Op(  # SLICE1 with the last axis read backwards
        "slice",
        "DML_OPERATOR_SLICE1",
        ["x"],
        ["r"],
        [t],
        [t],
        [Attr("UInt32", 4), u32(0, 0, 0, 0), u32(1, 1, 2, 4), Attr("IntArray", [1, 1, 1, -1])],
    )
    wide = Tensor([1, 1, 2, 8])
    upsample = Op("up", "DML_OPERATOR_UPSAMPLE_2D", ["r"], ["u"], [t], [wide], [Attr("Size2D", (2, 1)), Attr("UInt32", 0)])
    mvn = Op(
        "mvn",
        "DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION",
        ["u", "", ""],
        ["m"],
        [wide],
        [wide],
        [Attr("Bool", 0), Attr("Bool", 1), Attr("Float32", 0.0), Attr(None, tag=1)],
    )
    eye = Op(
        "eye",
        "DML_OPERATOR_DIAGONAL_MATRIX1",
        [""],
        ["d"],
        [],
        [Tensor([3, 3])],
        [Attr("UInt32", 1), Attr("ScalarUnionData", (10, "<f", 7.0)), Attr("Int32", -1), Attr("Int32", 1)],
    )
    resample = Op(
        "resample",
        "DML_OPERATOR_RESAMPLE1",
        ["x"],
        ["s"],
        [t],
        [wide],
        [
            Attr("UInt32", 0),
            Attr("UInt32", 4),
            Attr("FloatArray", [1, 1, 1, 2]),
            Attr("FloatArray", [0.5] * 4),
            Attr("FloatArray", [-0.5] * 4),
        ],
    )
    g = parse(serialized([reverse, upsample, mvn, eye, resample], ["x"], ["r", "u", "m", "d", "s"]))
    d = {n.name: n.desc for n in g.operators}
    assert (d["slice"]["InputWindowSizes"], d["slice"]["InputWindowStrides"]) == ((1, 1, 2, 4), (1, 1, 1, -1))
    assert (d["up"]["ScaleSize"], d["up"]["InterpolationMode"]) == ((2, 1), "NEAREST_NEIGHBOR")
    assert (d["mvn"]["CrossChannel"], d["mvn"]["NormalizeVariance"], d["mvn"]["ScaleTensor"]) == (False, True, None)
    assert (d["eye"]["DiagonalFillBegin"], d["eye"]["Value"], d["eye"]["InputTensor"]) == (-1, np.float32(7), None)
    assert (d["resample"]["Scales"], d["resample"]["OutputPixelOffsets"]) == ((1, 1, 1, 2), (-0.5,) * 4)
    x = f32(np.arange(8).reshape(1, 1, 2, 4)) ** 2
    got = run_cpu(g, {"x": x})
    np.testing.assert_array_equal(got["r"], x[..., ::-1])
    np.testing.assert_array_equal(got["u"], np.repeat(x[..., ::-1], 2, axis=3))
    u = got["u"].astype(np.float64)
    mean, var = u.mean(axis=(2, 3), keepdims=True), u.var(axis=(2, 3), keepdims=True)
    np.testing.assert_allclose(got["m"], (u - mean) / np.sqrt(var), rtol=1e-5)
    rows, cols = np.indices((3, 3))
    np.testing.assert_array_equal(got["d"], np.where((cols - rows >= -1) & (cols - rows < 1), 7, 0).astype(np.float32))
    np.testing.assert_array_equal(got["s"], np.repeat(x, 2, axis=3))  # nearest, RESAMPLE's half-pixel offsets


def test_constant_by_name_is_read_next_to_the_graph_file(tmp_path: Path) -> None:
    f32([10, 20]).tofile(tmp_path / "weights.bin")
    t = Tensor([2])
    g = parse(serialized([Const("w", ["wv"], file="weights"), add("a", "x", "wv", "y", t)], ["", "x"], ["y"]), tmp_path)
    assert g.nodes[0].file == str(tmp_path / "weights.bin")
    assert g.operators[0].desc.tensor("BTensor").flags == 1  # DML_TENSOR_FLAG_OWNED_BY_DML
    assert list(g.inputs) == ["x"]  # graph input 0 has no name: no edge uses it
    np.testing.assert_array_equal(run_cpu(g, {"x": f32([1, 2])})["y"], f32([11, 22]))


def test_names_collide_with_no_lowering_name() -> None:
    # node names that are value names, or "/"-prefixes of them, get prefixes of their own
    t = Tensor([2])
    g = parse(serialized([relu("y", "x", "y/t", t), relu("y", "y/t", "y", t)], ["x"], ["y"]))
    model = sg.to_onnx(g, "g")
    assert len({n.output[0] for n in model.graph.node}) == len(model.graph.node)
    np.testing.assert_array_equal(run_cpu(g, {"x": f32([-1, 1])})["y"], f32([0, 1]))


def test_descs_are_checked_at_the_feature_level() -> None:
    gelu = Op("g", "DML_OPERATOR_ACTIVATION_GELU", ["x"], ["y"], [T2], [T2])
    data = serialized([gelu], ["x"], ["y"])
    assert parse(data).operators[0].desc.level == "6_4"
    with pytest.raises(ModelError) as e:
        sg.parse(data, MATMUL_ADD / "graph.bin", level="5_0", label="graph.bin")
    assert str(e.value) == (
        "'graph.bin': nodes[0].desc.type: DML_OPERATOR_ACTIVATION_GELU needs feature level 5_1 or newer "
        "(this is 5_0: --feature-level)"
    )


def test_opset_and_target_are_checked() -> None:
    g = sg.load(MATMUL_ADD / "Partition_0.bin")
    with pytest.raises(UsageError):
        sg.to_onnx(g, "g", opset=5)
    with pytest.raises(UsageError):
        sg.to_onnx(g, "g", target="tpu")
    assert sg.to_onnx(g, "g", opset=21, target="cpu").opset_import[0].version == 21


# -- refusals ---------------------------------------------------------------------------------------


def test_unknown_operator_types_are_refused_as_in_json_models() -> None:
    # every DirectML operator is lowered now: the not-lowered-yet half has no real operator left
    unknown = Op("n", "DML_OPERATOR_ROI_ALIGN_GRADIENT", ["x"], ["y"], [T2], [T2])
    message = refused(serialized([unknown], ["x"], ["y"]))
    assert message.endswith(f"nodes[0].desc.type: {catalog.refusal('DML_OPERATOR_ROI_ALIGN_GRADIENT')}")
    assert "did you mean DML_OPERATOR_ROI_ALIGN_GRAD?" in message
    assert "not a DirectML operator" in refused(serialized([Op("n", "DML_OPERATOR_FOO", ["x"], ["y"], [T2], [T2])], ["x"], ["y"]))
    softmax = Attr("Activation", ("DML_OPERATOR_ACTIVATION_SOFTMAX", []))
    add1 = Op("n", "DML_OPERATOR_ELEMENT_WISE_ADD1", ["x", "x"], ["y"], [T2, T2], [T2], [softmax])
    assert "cannot be a fused activation" in refused(serialized([add1], ["x"], ["y"]))


@pytest.mark.parametrize(
    ("attrs", "expected"),
    [
        (
            [Attr("UInt32", 0), Attr("UInt32", 0), Attr("Float32", 1.0), Attr("Float32", 1.0)],
            "has 4 attributes, but DML_OPERATOR_GEMM has 5",
        ),
        (
            [Attr("Float32", 0.0), Attr("UInt32", 0), Attr("Float32", 1.0), Attr("Float32", 1.0), Attr(None, tag=1)],
            "TransA (enum) holds a Float32, not a UInt32",
        ),
        (
            [Attr("UInt32", 7), Attr("UInt32", 0), Attr("Float32", 1.0), Attr("Float32", 1.0), Attr(None)],
            "7 is not a DML_MATRIX_TRANSFORM value",
        ),
        ([Attr("UInt32", 0), Attr(None, tag=3), Attr("Float32", 1.0), Attr("Float32", 1.0), Attr(None)], "TransB has no value"),
        (
            [Attr("UInt32", 0, "TransB"), Attr("UInt32", 0), Attr("Float32", 1), Attr("Float32", 1), Attr(None)],
            "names the field 'TransB'",
        ),
    ],
)
def test_attribute_errors(attrs: list[Attr], expected: str) -> None:
    gemm = Op("n", "DML_OPERATOR_GEMM", ["a", "b", ""], ["y"], [Tensor([2, 2]), Tensor([2, 2])], [Tensor([2, 2])], attrs)
    message = refused(serialized([gemm], ["a", "b"], ["y"]))
    assert "nodes[0].desc.attributes" in message and expected in message, message


@pytest.mark.parametrize(
    ("nodes", "inputs", "outputs", "expected"),
    [
        (
            [relu("r", "t", "y", T2), relu("s", "x", "t", T2)],
            ["x"],
            ["y"],
            "nodes[0].inputNames[0]: InputTensor reads 't', which only nodes[1], after it",
        ),
        ([relu("r", "q", "y", T2)], ["x"], ["y"], "reads 'q', which is neither a graph input nor any node's output"),
        (
            [relu("r", "x", "y", T2), relu("s", "x", "y", T2)],
            ["x"],
            ["y"],
            "nodes[1].outputNames[0]: 'y' is written by nodes[0] already",
        ),
        ([relu("r", "x", "t", T2)], ["x"], ["y"], "graphOutputNames[0]: no node writes graph output 'y'"),
        ([relu("r", "x", "x2", T2)], ["x", "x"], ["x2"], "graphInputNames[1]: repeats the name 'x'"),
        ([relu("r", "x", "y", T2), relu("s", "y", "x", T2)], ["x"], ["y"], "'x' is a graph input's name"),
        ([Const("c", ["y"], data=bytes(8))], [], ["y"], "graph output 'y' is a constant"),
        ([Op("r", "DML_OPERATOR_ACTIVATION_RELU", ["x", "z"], ["y"], [T2], [T2])], ["x"], ["y"], "inputNames: has 2 names, but"),
        (
            [Op("r", "DML_OPERATOR_ACTIVATION_RELU", ["x"], ["y"], [T2, T2], [T2])],
            ["x"],
            ["y"],
            "desc.inputs: has 2 tensor descs",
        ),
        ([Op("r", "DML_OPERATOR_ACTIVATION_RELU", [], ["y"], [], [T2])], ["x"], ["y"], "inputNames: has 0 names, too few"),
        ([Op("r", "DML_OPERATOR_ACTIVATION_RELU", ["x"], ["y"], [], [T2])], ["x"], ["y"], "none for InputTensor ('x')"),
        (
            [Op("r", "DML_OPERATOR_ACTIVATION_RELU", [""], ["y"], [], [T2])],
            ["x"],
            ["y"],
            "InputTensor: required field is missing",
        ),
        (
            [relu("r", "x", "y", Tensor([0]))],
            ["x"],
            ["y"],
            "nodes[0].DML_OPERATOR_ACTIVATION_RELU.InputTensor.Sizes[0]: sizes must be at least 1",
        ),
        (
            [relu("r", "x", "t", T2), relu("s", "t", "y", Tensor([2], "DML_TENSOR_DATA_TYPE_FLOAT16"))],
            ["x"],
            ["y"],
            "nodes[1].DML_OPERATOR_ACTIVATION_RELU.InputTensor: reads 't' (FLOAT32[2]) as FLOAT16, but it holds FLOAT32",
        ),
        (
            [relu("r", "x", "t", T2), relu("s", "t", "y", Tensor([3]))],
            ["x"],
            ["y"],
            "reads 3 elements of 't' (FLOAT32[2]) (FLOAT32[3]), but it holds 2",
        ),
        (
            [Const("c", ["k"], data=bytes(4)), add("a", "x", "k", "y", T2)],
            ["x"],
            ["y"],
            "reads 2 elements of constant nodes[0] (4 bytes)",
        ),
        (
            [relu("r", "x", "y", T2), relu("s", "x", "z", Tensor([2], "DML_TENSOR_DATA_TYPE_FLOAT16"))],
            ["x"],
            ["y", "z"],
            "nodes[1].DML_OPERATOR_ACTIVATION_RELU.InputTensor: reads graph input 'x' as FLOAT16, "
            "but nodes[0].DML_OPERATOR_ACTIVATION_RELU.InputTensor reads it as FLOAT32",
        ),
        ([Const("", ["k"], data=bytes(8))], [], [], "nodes[0].name: the node has no name"),
        ([Const("c", ["k"], file="")], [], [], "nodes[0].desc.data.name: the constant node has no constant data name"),
        ([Const("c", ["k"], file="w\0")], [], [], "nodes[0].desc.data.name: 'w\\x00.bin' contains a NUL character"),
        ([], ["x"], ["y"], "nodes: the graph has no nodes"),
    ],
)
def test_graph_errors(nodes: list[Op | Const], inputs: list[str], outputs: list[str], expected: str) -> None:
    message = refused(serialized(nodes, inputs, outputs))
    assert expected in message, message


def test_truncated_and_empty_files() -> None:
    data = (MATMUL_ADD / "Partition_0.bin").read_bytes()
    assert refused(b"").endswith("'graph.bin': the file is 0 bytes long, too short to hold a flatbuffer")
    assert "runs past the end of the file" in refused(data[:600]) or "points outside the file" in refused(data[:600])


def test_fuzzed_files_are_read_or_refused_with_a_model_error() -> None:
    """Random truncations and byte flips of DxDispatch's file and of a graph with more kinds of
    fields: each is read (and lowered) or refused with a one-line ModelError, nothing else."""
    rng = random.Random(22)
    t = Tensor([2, 2])
    linear = Attr("Activation", ("DML_OPERATOR_ACTIVATION_LINEAR", [Attr("Float32", 2.0, "Alpha"), Attr("Float32", 1.0, "Beta")]))
    mine = serialized(
        [
            Const("c", ["k"], data=f32([1, 2, 3, 4]).tobytes()),
            Op("a", "DML_OPERATOR_ELEMENT_WISE_ADD1", ["x", "k"], ["z"], [t, t], [t], [linear]),
            Op("i", "DML_OPERATOR_ELEMENT_WISE_IDENTITY", ["z"], ["y"], [t], [t], [Attr("ScaleBias", (2.0, 1.0), "ScaleBias")]),
        ],
        ["x"],
        ["y"],
    )
    seeds = [(MATMUL_ADD / "Partition_0.bin").read_bytes(), mine]
    read = lowered = 0
    for i in range(1000):
        data = bytearray(seeds[i % 2])
        if i % 4 < 2:
            data = data[: rng.randrange(len(data))]
        else:
            for _ in range(rng.randint(1, 4)):
                data[rng.randrange(len(data))] = rng.randrange(256)
        try:
            g = parse(bytes(data))
        except ModelError as e:
            assert "\n" not in str(e) and str(e).startswith("dispatchables.g.sourcePath: 'graph.bin': ")
            continue
        read += 1
        try:
            sg.to_onnx(g, "g")
            lowered += 1
        except ModelError as e:
            assert "\n" not in str(e)
    assert read > 20 and lowered > 20, (read, lowered)


def test_dispatchable_runs_and_checks_against_its_reference() -> None:
    """DxDispatch's dmlSerializedGraph_matmul_add.json as a dispatchable: `run` prints the input
    (5 x 1.5) times the constant B plus the constant C, as numpy computes them from the constant
    files, and `check` compares the EPs with the descs' numpy references, not with the CPU EP."""
    model = str(MATMUL_ADD.parent / "dmlSerializedGraph_matmul_add.json")
    b = np.fromfile(MATMUL_ADD / "matmul_b_tensor.bin", np.float32).reshape(5, 5)
    c = np.fromfile(MATMUL_ADD / "add_b_tensor.bin", np.float32)
    want = np.full((1, 5), 1.5, np.float32) @ b + c
    status, out, err = run_cli("run", model)
    assert status == 0, err
    assert printed(out)["model_output"] == pytest.approx(want.ravel().tolist())
    status, out, err = run_cli("check", model, "--ep", "cpu")
    assert status == 0, out + err
    assert "0:matmul_add  CPUExecutionProvider" in out and "no numpy reference" not in out


# -- what ONNX Runtime's DirectML EP writes beyond the pages -----------------------------------------


def test_bool_fields_written_as_uint32_are_read_as_directml_reads_them() -> None:
    """DirectMLSchema.h types most BOOL fields as UINT, and ONNX Runtime writes them so: pooling's
    IncludePadding, MVN's CrossChannel and NormalizeVariance (any nonzero value is TRUE)."""
    x4 = Tensor([1, 1, 3, 3])
    pool = Op(
        "pool",
        "DML_OPERATOR_AVERAGE_POOLING",
        ["x"],
        ["p"],
        [x4],
        [Tensor([1, 1, 2, 2])],
        [
            Attr("UInt32", 2),
            Attr("UIntArray", [2, 2]),
            Attr("UIntArray", [2, 2]),
            Attr("UIntArray", [1, 1]),
            Attr("UIntArray", [0, 0]),
            Attr("UInt32", 7),  # IncludePadding: TRUE
        ],
    )
    mvn = Op(
        "mvn",
        "DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION",
        ["x", "", ""],
        ["m"],
        [x4],
        [x4],
        [Attr("UInt32", 0), Attr("UInt32", 1), Attr("Float32", 0.0), Attr(None, tag=1)],
    )
    g = parse(serialized([pool, mvn], ["x"], ["p", "m"]))
    d = {n.name: n.desc for n in g.operators}
    assert (d["pool"]["IncludePadding"], d["mvn"]["CrossChannel"], d["mvn"]["NormalizeVariance"]) == (True, False, True)
    x = f32(np.arange(9).reshape(1, 1, 3, 3))
    got = run_cpu(g, {"x": x})
    padded = np.pad(x[0, 0], ((1, 0), (1, 0)))  # the padding counted in every window: sums / 4
    want = np.array([[padded[i : i + 2, j : j + 2].sum() / 4 for j in (0, 2)] for i in (0, 2)], np.float32)
    np.testing.assert_array_equal(got["p"][0, 0], want)
    v = x.astype(np.float64)
    np.testing.assert_allclose(got["m"], (v - v.mean()) / v.std(), rtol=1e-6)


def test_a_cast_to_bool_is_clip1_with_an_unknown_type_its_bytes_read_as_the_tensors() -> None:
    """ONNX Runtime's DirectML EP writes a Cast to BOOL as CAST then CLIP1 with MinMaxDataType
    UNKNOWN and Min/Max as ByteArray scalars (BERT's attention mask)."""
    u8 = Tensor([1, 1, 1, 6], "DML_TENSOR_DATA_TYPE_UINT8")
    clip = Op(
        "clip",
        "DML_OPERATOR_ELEMENT_WISE_CLIP1",
        ["x"],
        ["y"],
        [u8],
        [u8],
        [
            Attr(None, tag=10),  # ScaleBias: null
            Attr("UInt32", 0),  # DML_TENSOR_DATA_TYPE_UNKNOWN
            Attr("ScalarUnionData", (1, "<8s", bytes(8))),
            Attr("ScalarUnionData", (1, "<8s", bytes([1]) + b"\xee" * 7)),  # only the first byte is a UINT8's
        ],
    )
    g = parse(serialized([clip], ["x"], ["y"]))
    desc = g.operators[0].desc
    assert desc["MinMaxDataType"] == "UNKNOWN" and desc.source["Max"] == {"Bytes": [1] + [0xEE] * 7}
    x = np.array([0, 1, 2, 3, 200, 255], np.uint8).reshape(1, 1, 1, 6)
    np.testing.assert_array_equal(run_cpu(g, {"x": x})["y"], np.minimum(x, 1))


def test_softmax1_fused_into_gemm_as_attention_writes_it() -> None:
    a, b, y = Tensor([1, 2, 3, 4]), Tensor([1, 2, 4, 5]), Tensor([1, 2, 3, 5])
    softmax = ("DML_OPERATOR_ACTIVATION_SOFTMAX1", [Attr("UInt32", 1), Attr("UIntArray", [3])])
    gemm = Op(
        "gemm",
        "DML_OPERATOR_GEMM",
        ["a", "b", ""],
        ["y"],
        [a, b],
        [y],
        [Attr("UInt32", 0), Attr("UInt32", 0), Attr("Float32", 0.5), Attr("Float32", 0.0), Attr("Activation", softmax)],
    )
    g = parse(serialized([gemm], ["a", "b"], ["y"]))
    assert g.operators[0].desc["FusedActivation"].schema.name == "ACTIVATION_SOFTMAX1"
    rng = np.random.default_rng(3)
    av, bv = f32(rng.standard_normal((1, 2, 3, 4))), f32(rng.standard_normal((1, 2, 4, 5)))
    got = run_cpu(g, {"a": av, "b": bv})["y"]
    logits = 0.5 * (av.astype(np.float64) @ bv)
    e = np.exp(logits - logits.max(-1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(-1, keepdims=True), rtol=1e-6)


@pytest.mark.parametrize("target", ["portable", "cuda", "dml"])
def test_gather_in_a_graph_for_every_target(target: str) -> None:
    """The cuda target's GATHER reads its indices inside an If's branch: composing it into a graph
    renames what the branch reads too (it ended in ONNX's shape inference's traceback). Two channels
    before Axis: the cuda target guards it (with nothing before Axis it takes "masked", no If)."""
    data, idx = Tensor([1, 2, 4, 3]), Tensor([1, 1, 1, 5], "DML_TENSOR_DATA_TYPE_INT32")
    out = Tensor([1, 2, 5, 3])
    gather = Op("gather", "DML_OPERATOR_GATHER", ["r", "i"], ["y"], [data, idx], [out], [Attr("UInt32", 2), Attr("UInt32", 1)])
    g = parse(serialized([relu("relu", "x", "r", data), gather], ["x", "i"], ["y"]))
    model = sg.to_onnx(g, "g", target=target)
    x = f32(np.arange(24).reshape(1, 2, 4, 3) - 5)
    i = np.array([3, 0, 0, 2, 1], np.int32).reshape(1, 1, 1, 5)
    got = runtime.create(model, "g", "cpu").run_all({"x": x, "i": i})["y"]
    np.testing.assert_array_equal(got, np.maximum(x, 0)[:, :, [3, 0, 0, 2, 1], :])
    assert "If" in [n.op_type for n in model.graph.node] or target != "cuda"


# -- DirectML's own API compiles the whole graph (IDMLDevice1::CompileGraph) ---------------------------

live = pytest.mark.skipif(dmlapi.missing() is not None, reason="DirectML's API under Wine is not set up (make dml-setup)")


def _directml_cases(folder: Path) -> dict[str, tuple[sg.SerializedGraph, dict[str, np.ndarray]]]:
    """Graphs of every shape of node and edge: inline and file constants (the latter OWNED_BY_DML),
    reinterpreted intermediates, fused activations, several outputs, null optional inputs."""
    t4, t2x2 = Tensor([1, 1, 2, 3]), Tensor([2, 2])
    chain = [
        Const("bias", ["b"], data=f32([1, -2, 3, -4, 5, -6]).tobytes()),
        add("add", "x", "b", "t", t4),
        relu("relu", "t", "y", Tensor([6])),
    ]
    linear = Attr("Activation", ("DML_OPERATOR_ACTIVATION_LINEAR", [Attr("Float32", 2.0), Attr("Float32", 1.0)]))
    add1 = Op("add1", "DML_OPERATOR_ELEMENT_WISE_ADD1", ["x", "x"], ["z"], [t2x2, t2x2], [t2x2], [linear])
    f32([10, 20]).tofile(folder / "weights.bin")
    by_name = [Const("w", ["wv"], file="weights"), add("a", "x", "wv", "y", Tensor([2]))]
    softmax = ("DML_OPERATOR_ACTIVATION_SOFTMAX1", [Attr("UInt32", 1), Attr("UIntArray", [3])])
    gemm_attrs = [Attr("UInt32", 0), Attr("UInt32", 0), Attr("Float32", 0.5), Attr("Float32", 0.0), Attr("Activation", softmax)]
    gemm = Op(
        "gemm",
        "DML_OPERATOR_GEMM",
        ["a", "b", ""],
        ["y"],
        [Tensor([1, 2, 3, 4]), Tensor([1, 2, 4, 5])],
        [Tensor([1, 2, 3, 5])],
        gemm_attrs,
    )
    rng = np.random.default_rng(9)
    return {
        "chain": (parse(serialized(chain, ["x"], ["y"])), {"x": f32(rng.standard_normal((1, 1, 2, 3)))}),
        "outputs": (parse(serialized([add1, relu("r", "z", "w", t2x2)], ["x"], ["w", "z"])), {"x": f32([[1, -1], [-3, 0.25]])}),
        "by_name": (parse(serialized(by_name, ["", "x"], ["y"]), folder), {"x": f32([1.5, -2])}),
        "matmul_add": (sg.load(MATMUL_ADD / "Partition_0.bin"), {"model_input": np.full((1, 1, 1, 5), 1.5, np.float32)}),
        "attention": (
            parse(serialized([gemm], ["a", "b"], ["y"])),
            {"a": f32(rng.standard_normal((1, 2, 3, 4))), "b": f32(rng.standard_normal((1, 2, 4, 5)))},
        ),
    }


@live
@pytest.mark.parametrize("case", ["chain", "outputs", "by_name", "matmul_add", "attention"])
def test_directml_compiles_the_whole_graph_as_the_reference_computes_it(case: str, tmp_path: Path) -> None:
    graph, feeds = _directml_cases(tmp_path)[case]
    got = dmlapi.execute_graph(graph, feeds)
    want = sg.reference(graph, feeds)
    assert list(got) == list(want) == list(graph.outputs)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-6, atol=1e-7, err_msg=name)


@live
def test_dxdispatch_serialized_graph_model_on_directml() -> None:
    status, out, err = run_cli("run", str(MATMUL_ADD.parent / "dmlSerializedGraph_matmul_add.json"), "--ep", "directml")
    assert status == 0, err
    assert printed(out) == {"model_output": [12.25] * 5}
    assert "Dispatch 'matmul_add': 1 iteration" in err and "(DirectML API)" in err
