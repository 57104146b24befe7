"""The table of every DirectML operator (dml2onnx/core/operator_table.py), `dml2onnx ops`, the messages
for operator types that are not lowered or not DirectML's, and the README's generated overview."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from dml2onnx.backends import descpack
from dml2onnx.core import catalog, dtypes, operator_table, schema
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.schema import Kind
from dml2onnx.core.tensor import TensorDesc
from dml2onnx.lowering import onnx_ops
from dml2onnx.ops import registry
from support import run_cli, write_model

ROOT = Path(__file__).resolve().parents[2]
TABLE = operator_table.OPERATORS


def tensor(data_type: str, sizes: tuple[int, ...]) -> TensorDesc:
    return TensorDesc(dtypes.BY_NAME[data_type], sizes)


def _tool(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the tool loads
    spec.loader.exec_module(module)
    return module


# -- the generated table ---------------------------------------------------------------------------


def test_generated_table_is_current() -> None:
    """Regenerated from the committed facts files, the module is byte for byte what is committed."""
    generated = _tool("make_operator_table").generate()
    assert generated == (ROOT / "dml2onnx" / "core" / "operator_table.py").read_text(encoding="utf-8")


def test_every_operator_type() -> None:
    assert len(TABLE) == 177  # DirectML 1.15 (feature level 6_4): RESAMPLE3, FOLD and UNFOLD last
    assert sorted(operator_table.OPERATOR_TYPE.values()) == list(range(1, 178))
    assert operator_table.OPERATOR_TYPE["ELEMENT_WISE_IDENTITY"] == 1
    assert operator_table.OPERATOR_TYPE["DEQUANTIZE"] == 174
    assert [operator_table.OPERATOR_TYPE[n] for n in ("RESAMPLE3", "FOLD", "UNFOLD")] == [175, 176, 177]
    assert operator_table.ALIASES == {"SCATTER_ELEMENTS": "SCATTER"}
    assert set(TABLE) >= set(registry.BY_OPERATOR)
    assert sum(1 for n in TABLE if n.startswith("ELEMENT_WISE_")) == 65


def _fields(name: str) -> list[tuple[str, str, bool]]:
    return [(f.name, f.kind.name, f.optional) for f in TABLE[name].fields]


def test_fields_of_each_kind() -> None:
    assert _fields("ELEMENT_WISE_ADD") == [
        ("ATensor", "INPUT", False),
        ("BTensor", "INPUT", False),
        ("OutputTensor", "OUTPUT", False),
    ]
    assert _fields("ELEMENT_WISE_IDENTITY")[2] == ("ScaleBias", "SCALE_BIAS", True)
    clip1 = {f.name: f for f in TABLE["ELEMENT_WISE_CLIP1"].fields}
    assert clip1["MinMaxDataType"].kind is Kind.ENUM and clip1["MinMaxDataType"].enum == "DML_TENSOR_DATA_TYPE"
    assert (clip1["Min"].kind, clip1["Min"].data_type) == (Kind.SCALAR_UNION, "MinMaxDataType")
    join = {f.name: f for f in TABLE["JOIN"].fields}
    assert (join["InputCount"].kind, join["InputCount"].array) == (Kind.COUNT, "InputTensors")
    assert (join["InputTensors"].kind, join["InputTensors"].count) == (Kind.INPUT_ARRAY, "InputCount")
    assert TABLE["SPLIT"].field("OutputTensors").kind is Kind.OUTPUT_ARRAY
    lstm = TABLE["LSTM"]
    assert (lstm.field("ActivationDescs").kind, lstm.field("ActivationDescs").count) == (
        Kind.ACTIVATION_ARRAY,
        "ActivationDescCount",
    )
    assert lstm.field("UseClipThreshold").kind is Kind.BOOL
    assert TABLE["CONVOLUTION"].field("FusedActivation").kind is Kind.ACTIVATION
    assert TABLE["CONVOLUTION"].field("Direction").enum == "DML_CONVOLUTION_DIRECTION"
    assert [f.name for f in TABLE["SLICE1"].fields if f.count == "DimensionCount"] == [
        "InputWindowOffsets",
        "InputWindowSizes",
        "InputWindowStrides",
    ]
    assert TABLE["SLICE1"].field("InputWindowStrides").kind is Kind.INT_ARRAY
    assert TABLE["RESAMPLE"].field("Scales").kind is Kind.FLOAT_ARRAY
    assert TABLE["DIAGONAL_MATRIX1"].field("DiagonalFillBegin").kind is Kind.INT
    assert TABLE["ROI_ALIGN_GRAD"].field("AlignRegionsToCorners").kind is Kind.BOOL
    kinds = {f.kind for op in TABLE.values() for f in op.fields}
    assert kinds == set(Kind) - {Kind.UINT64}  # DirectMLSchema.h's UINT64 type has no operator field


def test_enums() -> None:
    enums = operator_table.ENUMS
    assert enums["DML_REDUCE_FUNCTION"]["SUM"] == 10 and len(enums["DML_REDUCE_FUNCTION"]) == 12
    assert enums["DML_TENSOR_DATA_TYPE"]["INT64"] == 11 and enums["DML_TENSOR_DATA_TYPE"]["INT4"] == 13
    assert enums["DML_PADDING_MODE"] == {"CONSTANT": 0, "EDGE": 1, "REFLECTION": 2, "SYMMETRIC": 3, "WRAP": 4}
    assert enums["DML_IS_INFINITY_MODE"] == {"EITHER": 0, "POSITIVE": 1, "NEGATIVE": 2}
    assert enums["DML_TENSOR_FLAGS"] == {"NONE": 0, "OWNED_BY_DML": 1}
    used = {f.enum for op in TABLE.values() for f in op.fields if f.kind is Kind.ENUM}
    assert used <= set(enums)
    for name, values in schema.ENUMS.items():  # the hand-written subset agrees
        assert values.items() <= enums[name].items(), name


def test_feature_levels() -> None:
    levels = {n: op.feature_level for n, op in TABLE.items()}
    assert levels["ELEMENT_WISE_ADD"] == "1_0"
    assert levels["ELEMENT_WISE_BIT_SHIFT_LEFT"] == "2_1"
    assert levels["ELEMENT_WISE_NEGATE"] == "5_0"
    assert levels["ACTIVATION_SWISH"] == "6_2"
    assert levels["MULTIHEAD_ATTENTION"] == "6_1"
    assert levels["SCATTER"] == "2_0"
    assert set(levels.values()) <= set(schema.LEVELS)


def test_hand_written_schema_agrees() -> None:
    """schema.py's lowered operators: the same fields (names, order, kinds, optional flags,
    enum types), the same feature level and the same support tables as the generated table."""
    for name, op in ((n, TABLE[n]) for n in registry.BY_OPERATOR):
        generated = TABLE[name]
        assert [(f.name, f.kind, f.optional, f.enum) for f in op.fields] == [
            (f.name, f.kind, f.optional, f.enum) for f in generated.fields
        ], name
        assert (op.feature_level, op.support, op.fusable) == (generated.feature_level, generated.support, generated.fusable)


def test_support_tables_name_fields() -> None:
    for name, op in TABLE.items():
        tensors = {f.name for f in op.fields if f.kind.name in ("INPUT", "OUTPUT", "INPUT_ARRAY", "OUTPUT_ARRAY")}
        for t in op.support:
            assert set(t.tensors) <= tensors, name
            # a page whose "introduced" level is an erratum may head its oldest table with it
            introduced = min((op.feature_level, *operator_table.PAGE_LEVEL_ERRATA.get(name, ())), key=schema.level_key)
            assert schema.level_key(t.level) >= schema.level_key(introduced), name
        assert (not op.support) == (name in operator_table.MISSING_SUPPORT), name


# -- C layouts of every operator -------------------------------------------------------------------


def test_layouts_of_new_kinds() -> None:
    """Offsets worked out by hand under the x64 ABI (and checked live against DirectML.h below)."""
    assert descpack.layout(TABLE["ELEMENT_WISE_CLIP1"]) == (
        48,
        {"InputTensor": 0, "OutputTensor": 8, "ScaleBias": 16, "MinMaxDataType": 24, "Min": 32, "Max": 40},
    )
    assert descpack.layout(TABLE["JOIN"]) == (32, {"InputCount": 0, "InputTensors": 8, "OutputTensor": 16, "Axis": 24})
    assert descpack.layout(TABLE["DIAGONAL_MATRIX1"]) == (
        40,
        {"InputTensor": 0, "OutputTensor": 8, "ValueDataType": 16, "Value": 24, "DiagonalFillBegin": 32, "DiagonalFillEnd": 36},
    )
    for op in TABLE.values():
        descpack.layout(op)  # every field kind has a layout


def test_pack_new_kinds() -> None:
    op = TABLE["ELEMENT_WISE_CLIP1"]
    t = tensor("FLOAT32", (2, 3))
    values = {"InputTensor": t, "OutputTensor": t, "ScaleBias": (2.0, 0.5)}
    values |= {"MinMaxDataType": "FLOAT32", "Min": np.float32(-1.5), "Max": np.float32(4.0)}
    packed = descpack.pack(OperatorDesc(op, values))
    assert packed.operator_type == 153
    _, at = descpack.layout(op)
    (scale_bias,) = struct.unpack_from("<Q", packed.blob, packed.desc + at["ScaleBias"])
    assert struct.unpack_from("<ff", packed.blob, scale_bias) == (2.0, 0.5)
    assert struct.unpack_from("<I4xf4xf", packed.blob, packed.desc + at["MinMaxDataType"]) == (1, -1.5, 4.0)

    join = TABLE["JOIN"]
    parts = [tensor("INT32", (2, 1)), tensor("INT32", (2, 3))]
    packed = descpack.pack(
        OperatorDesc(join, {"InputCount": 2, "InputTensors": parts, "OutputTensor": tensor("INT32", (2, 4)), "Axis": 1})
    )
    (array,) = struct.unpack_from("<Q", packed.blob, packed.desc + 8)
    assert [descpack.unpack_tensor(packed.blob, array + 16 * i).sizes for i in range(2)] == [(2, 1), (2, 3)]
    assert [b.name for b in packed.inputs] == ["InputTensors[0]", "InputTensors[1]"]


def _directml_h() -> Path | None:
    candidate = os.environ.get("DML2ONNX_DIRECTML_H")
    return Path(candidate) if candidate and Path(candidate).is_file() else None


def test_live_layout_of_every_operator(tmp_path: Path) -> None:
    """sizeof/offsetof of all 177 descs and every enum value, _Static_assert-ed against a DirectML.h
    compiled by mingw-w64's gcc (microsoft/DirectX-Headers include/directx/DirectML.h)."""
    header, gcc = _directml_h(), shutil.which("x86_64-w64-mingw32-gcc")
    if header is None or gcc is None:
        pytest.skip("set DML2ONNX_DIRECTML_H to a DirectML.h, with x86_64-w64-mingw32-gcc installed")
    text = header.read_text(encoding="utf-8-sig").replace("\r\n", "\n")
    body = text[text.index("enum DML_TENSOR_DATA_TYPE") : text.index("struct DML_BINDING_TABLE_DESC")]
    body = re.sub(r"^using (\w+) = (\w+);", r"typedef \2 \1;", body, flags=re.M)
    names = re.findall(r"^(struct|union|enum)\s+(\w+)\s*$", body, re.M)
    lines = ["#include <windows.h>", "#include <stddef.h>", "#define _Maybenull_", "#define _Field_size_(x)"]
    lines += ["#define _Field_size_opt_(x)", "#define _Inexpressible_(x)", "#define DML_TARGET_VERSION 0x6400"]
    lines += [f"typedef {k} {n} {n};" for k, n in names] + [body]
    for name, op in TABLE.items():
        struct_name = f"DML_{name}_OPERATOR_DESC"
        size, offsets = descpack.layout(op)
        lines.append(f'_Static_assert(sizeof({struct_name}) == {size}, "{struct_name}");')
        lines += [f'_Static_assert(offsetof({struct_name}, {f}) == {o}, "{struct_name}.{f}");' for f, o in offsets.items()]
        lines.append(f'_Static_assert(DML_OPERATOR_{name} == {operator_table.OPERATOR_TYPE[name]}, "{name}");')
    for enum, values in operator_table.ENUMS.items():
        prefix = "DML_TENSOR_FLAG" if enum == "DML_TENSOR_FLAGS" else enum
        lines += [f'_Static_assert({prefix}_{v} == {n}, "{enum} {v}");' for v, n in values.items()]
    source = tmp_path / "layout.c"
    source.write_text("\n".join(lines) + "\n")
    result = subprocess.run([gcc, "-fsyntax-only", str(source)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr[-3000:]


# -- dml2onnx ops ----------------------------------------------------------------------------------


def _ops_json(*args: str) -> list[dict[str, Any]]:
    status, out, err = run_cli("ops", "--json", *args)
    assert status == 0, err
    return json.loads(out)


def test_ops_json_lists_every_operator() -> None:
    listed = _ops_json()
    assert len(listed) == 177 and len({e["name"] for e in listed}) == 177
    by_name = {e["name"]: e for e in listed}
    argmax = by_name["DML_OPERATOR_ARGMAX"]
    assert (argmax["supported"], argmax["introduced"]) == (True, "3_0")
    assert argmax["data_types"]["OutputTensor"] == ["INT64", "INT32", "UINT64", "UINT32"]
    assert "INT64" in argmax["data_types"]["InputTensor"] and "ArgMax" in argmax["onnx_ops"]
    grad = by_name["DML_OPERATOR_ROI_ALIGN_GRAD"]
    assert (grad["supported"], grad["introduced"]) == (True, "4_1") and "MatMul" in grad["onnx_ops"]
    add = by_name["DML_OPERATOR_ELEMENT_WISE_ADD"]
    assert add["supported"] and {"Add", "Cast"} <= set(add["onnx_ops"])  # 8/16-bit integers: in INT32, then wrapped
    assert {e["name"] for e in listed if e["supported"]} == {f"DML_OPERATOR_{n}" for n in registry.BY_OPERATOR}
    assert by_name["DML_OPERATOR_ACTIVATION_SIGMOID"]["onnx_ops"] == ["Cast", "Sigmoid"]
    assert by_name["DML_OPERATOR_QUANTIZE"]["data_types"]["OutputTensor"] == ["INT8", "UINT8", "UINT4", "INT4"]  # 4-bit: lowered


def test_ops_feature_level() -> None:
    listed = {e["name"]: e for e in _ops_json("--feature-level", "4_1")}
    assert len(listed) == 152
    assert "DML_OPERATOR_ACTIVATION_GELU" not in listed and "DML_OPERATOR_ELEMENT_WISE_CLIP1" not in listed
    assert "DML_OPERATOR_ROI_ALIGN_GRAD" in listed  # introduced at 4_1 itself
    # the data types of the table in force at 3_0 (ARGMAX's integer 64-bit inputs come at 4_1)
    at_3_0 = {e["name"]: e for e in _ops_json("--feature-level", "DML_FEATURE_LEVEL_3_0")}
    assert "INT64" not in at_3_0["DML_OPERATOR_ARGMAX"]["data_types"]["InputTensor"]
    assert len(_ops_json("--feature-level", "1.0")) == 78


def test_ops_text_and_help() -> None:
    status, out, _ = run_cli("ops")
    lines = out.splitlines()
    assert status == 0 and len(lines) == 178
    assert lines[-1] == f"177 DirectML operators at feature level 6_4, {len(registry.BY_OPERATOR)} lowered by dml2onnx"
    argmax = next(line for line in lines if line.startswith("DML_OPERATOR_ARGMAX "))
    assert "3_0" in argmax and "lowered" in argmax and "-> " in argmax and "ArgMax" in argmax
    status, out, _ = run_cli("ops", "--help")
    assert status == 0 and "--json" in out and "--feature-level" in out and "--markdown" in out
    status, out, _ = run_cli("--help")
    assert "ops" in out


def test_ops_invalid_feature_level() -> None:
    status, out, err = run_cli("ops", "--feature-level", "4_2")
    assert status == 2 and out == ""
    assert err.splitlines() == [
        "dml2onnx: error: --feature-level must be one of 1_0, 2_0, 2_1, 3_0, 3_1, 4_0, 4_1, 5_0, 5_1, 5_2, 6_0, 6_1, "
        "6_2, 6_3, 6_4, got '4_2'"
    ]


def test_lowered_ops_examples_all_validate() -> None:
    """Every example desc behind the ONNX-op lists is valid (none is skipped), and each operator has some."""
    from dml2onnx import lowering
    from dml2onnx.core.desc import parse_operator_desc

    for name, op in ((n, TABLE[n]) for n in registry.BY_OPERATOR):
        examples = onnx_ops.example_descs(op)
        assert examples, name
        for e in examples:
            lowering.validate(parse_operator_desc(name, e, ("desc",), ("type",)))
        assert onnx_ops.onnx_ops(name), name
    assert set(onnx_ops.onnx_ops("REDUCE")) >= {"ReduceSum", "ReduceL2", "ReduceLogSumExp", "ArgMin"}


# -- messages --------------------------------------------------------------------------------------


def _model(op_type: str, desc: dict[str, Any] | None = None) -> dict[str, Any]:
    t = {"DataType": "FLOAT32", "Sizes": [2, 2]}
    return {
        "resources": {"a": {"initialValuesDataType": "FLOAT32", "initialValues": [1, 2, 3, 4]}},
        "dispatchables": {"op": {"type": op_type, "desc": desc or {"InputTensor": t, "OutputTensor": t}}},
        "commands": [{"type": "print", "resource": "a"}],
    }


def test_unknown_operator_type_refused(tmp_path: Path) -> None:
    # every DirectML operator is lowered now (177 of 177), so no real one is left to refuse as "not yet"
    assert len(registry.BY_OPERATOR) == len(operator_table.OPERATORS)
    status, out, err = run_cli("run", write_model(tmp_path, _model("DML_OPERATOR_ROI_ALIGN_GRADIENT")))
    assert (status, out) == (2, "")
    assert err == (
        "dml2onnx: error: dispatchables.op.type: unknown operator type 'DML_OPERATOR_ROI_ALIGN_GRADIENT': not a DirectML "
        "operator; did you mean DML_OPERATOR_ROI_ALIGN_GRAD?\n"
    )
    # short names and aliases are DirectML's too
    assert "DML_OPERATOR_SCATTER is a DirectML operator" in catalog.refusal("SCATTER_ELEMENTS")
    assert "DML_OPERATOR_GEMM is a DirectML operator" in catalog.refusal("GEMM")


def test_not_lowered_fused_activation(tmp_path: Path) -> None:
    t = {"DataType": "FLOAT32", "Sizes": [1, 2, 1, 2]}
    desc = {"InputTensor": t, "OutputTensor": t, "CrossChannel": False, "NormalizeVariance": True, "Epsilon": 1e-5}
    desc["FusedActivation"] = {"Type": "DML_OPERATOR_ROI_ALIGN_GRAD"}  # lowered, not fusable
    status, _, err = run_cli("run", write_model(tmp_path, _model("MEAN_VARIANCE_NORMALIZATION", desc)))
    assert status == 2
    assert err.startswith("dml2onnx: error: dispatchables.op.desc.FusedActivation.Type: DML_OPERATOR_ROI_ALIGN_GRAD cannot be")
    desc["FusedActivation"] = {"Type": "DML_OPERATOR_ROI_ALIGN_GRADIENT"}  # no operator at all
    status, _, err = run_cli("run", write_model(tmp_path, _model("MEAN_VARIANCE_NORMALIZATION", desc)))
    assert status == 2 and "not a DirectML operator" in err
    # SWISH is lowered, but DirectMLSchema.h does not make it a fusable activation
    desc["FusedActivation"] = {"Type": "DML_OPERATOR_ACTIVATION_SWISH", "SigmoidInputScale": 1.0}
    status, _, err = run_cli("run", write_model(tmp_path, _model("MEAN_VARIANCE_NORMALIZATION", desc)))
    assert status == 2
    assert "DML_OPERATOR_ACTIVATION_SWISH cannot be a fused activation" in err


def test_misspelt_operator(tmp_path: Path) -> None:
    status, _, err = run_cli("run", write_model(tmp_path, _model("DML_OPERATOR_ARGMAXX")))
    assert status == 2
    assert err == (
        "dml2onnx: error: dispatchables.op.type: unknown operator type 'DML_OPERATOR_ARGMAXX': not a DirectML "
        "operator; did you mean DML_OPERATOR_ARGMAX?\n"
    )
    assert catalog.refusal("element_wise_addd").endswith(
        "did you mean DML_OPERATOR_ELEMENT_WISE_ADD or DML_OPERATOR_ELEMENT_WISE_ADD1 or DML_OPERATOR_ELEMENT_WISE_TAN?"
    )
    assert catalog.refusal("FOO") == "unknown operator type 'FOO': not a DirectML operator"


# -- the README ------------------------------------------------------------------------------------


def test_readme_overview_is_current() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    tool = _tool("readme_operators")
    assert tool.BEGIN in readme and tool.END in readme
    assert tool.updated(readme) == readme, "run python tools/readme_operators.py"
    block = readme[readme.index(tool.BEGIN) : readme.index(tool.END)]
    lowered_5_1 = sum(
        1 for op in operator_table.OPERATORS.values() if op.feature_level == "5_1" and op.name in registry.BY_OPERATOR
    )
    assert f"- `5_1` (7, {lowered_5_1} lowered): **`ACTIVATION_GELU`**" in block
    assert block.count("`, ") + block.count("`**, ") + block.count("\n- ") >= 177
