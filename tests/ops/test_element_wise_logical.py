"""The comparisons and logical operators (dml2onnx/ops/element_wise_logical.py): by hand, what
DirectML's own API computed; validation; and properties over random shapes, input and output
types and special values against the numpy reference, exactly. The matrix
(dml2onnx/cases/element_wise_logical.py) runs them on every EP present and through DirectML's API."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dml2onnx import lowering
from dml2onnx.core import operator_table
from dml2onnx.core.errors import format_path
from dml2onnx.graph import dml_ep
from dml2onnx.ops import registry
from dml2onnx.ops.element_wise_logical import ROWS
from strategies import SEEDS, shapes
from support import EPS, lowered_and_reference, make_desc, refusal, run_cli, tensor

COMPARISONS = {
    "EQUALS": "ELEMENT_WISE_LOGICAL_EQUALS",
    "GT": "ELEMENT_WISE_LOGICAL_GREATER_THAN",
    "GE": "ELEMENT_WISE_LOGICAL_GREATER_THAN_OR_EQUAL",
    "LT": "ELEMENT_WISE_LOGICAL_LESS_THAN",
    "LE": "ELEMENT_WISE_LOGICAL_LESS_THAN_OR_EQUAL",
}
LOGICAL = ("AND", "OR", "XOR")


def inputs_of(op: str) -> list[str]:
    return [f.name for f in operator_table.OPERATORS[op].fields if f.kind.name == "INPUT"]


def run(op: str, dtype: str, out: str, *xs: list[Any], **extra: Any) -> list[int]:
    arrays = [np.array(x, dtype=object).astype(dtype.lower()) for x in xs]
    names = inputs_of(op)
    fields = {n: tensor(dtype, a.shape) for n, a in zip(names, arrays, strict=True)}
    fields |= {"OutputTensor": tensor(out, arrays[0].shape), **extra}
    got, want = lowered_and_reference("cpu", op, fields, dict(zip(names, arrays, strict=True)))
    assert got.dtype == want.dtype == np.dtype(out.lower())
    assert got.tolist() == want.tolist()
    return got.tolist()


# -- by hand: what DirectML's API computed (onnxruntime-directml 1.24.4 under Wine) ----------------

BIG = [2**53, 2**53 + 1, 2**62 + 1, 2**32 + 5, -(2**63), 2**63 - 1]
BIG_B = [2**53 + 1, 2**53 + 1, 2**62, 5, 2**63 - 1, -(2**63)]


@pytest.mark.parametrize(
    ("op", "want"),
    [
        ("EQUALS", [0, 1, 0, 0, 0, 0]),
        ("GT", [0, 0, 1, 1, 0, 1]),
        ("GE", [0, 1, 1, 1, 0, 1]),
        ("LT", [1, 0, 0, 0, 1, 0]),
        ("LE", [1, 1, 0, 0, 1, 0]),
    ],
)
def test_int64_beyond_2_53_compares_exactly(op: str, want: list[int]) -> None:
    """No float casts: neighbours past 2**53 stay apart (DirectML's API agrees on these; it orders
    values whose high halves are equal by their low halves as signed, dml_findings)."""
    assert run(COMPARISONS[op], "INT64", "UINT8", BIG, BIG_B) == want


def test_unsigned_types_compare_as_unsigned() -> None:
    assert run(COMPARISONS["GT"], "UINT64", "UINT32", [2**64 - 1, 2**63, 0], [0, 2**63 - 1, 2**64 - 1]) == [1, 1, 0]
    assert run(COMPARISONS["LT"], "UINT32", "UINT8", [2**32 - 1, 2**31], [1, 2**31 - 1]) == [0, 0]
    assert run(COMPARISONS["GE"], "INT8", "UINT8", [-128, 127, -1], [127, -128, 0]) == [0, 1, 0]
    assert run(COMPARISONS["LE"], "UINT16", "UINT32", [65535, 0], [0, 65535]) == [0, 1]


def test_nan_compares_false_and_zeros_are_equal() -> None:
    a, b = [np.nan, np.nan, 1.0, -0.0, np.inf, -np.inf], [np.nan, 1.0, np.nan, 0.0, np.inf, np.inf]
    for dtype in ("FLOAT32", "FLOAT16"):
        assert run(COMPARISONS["EQUALS"], dtype, "UINT8", a, b) == [0, 0, 0, 1, 1, 0]
        assert run(COMPARISONS["GE"], dtype, "UINT32", a, b) == [0, 0, 0, 1, 1, 0]
        assert run(COMPARISONS["LT"], dtype, "UINT8", a, b) == [0, 0, 0, 0, 0, 1]


def test_float16_compares_its_own_values() -> None:
    # 2049 is not a FLOAT16: both sides round to 2048 when the input is made
    assert run(COMPARISONS["EQUALS"], "FLOAT16", "UINT8", [2048, 65504, 6e-8], [2049, np.inf, 0]) == [1, 0, 0]


@pytest.mark.parametrize("dtype", ["UINT8", "UINT32"])
def test_logical_reads_nonzero_as_true(dtype: str) -> None:
    top = 255 if dtype == "UINT8" else 2**32 - 1
    a, b = [0, 1, 2, top, 0, 2, 3, 1], [0, 0, 1, 2, 5, 4, 0, top]
    assert run("ELEMENT_WISE_LOGICAL_AND", dtype, dtype, a, b) == [0, 0, 1, 1, 0, 1, 0, 1]
    assert run("ELEMENT_WISE_LOGICAL_OR", dtype, dtype, a, b) == [0, 1, 1, 1, 1, 1, 1, 1]
    assert run("ELEMENT_WISE_LOGICAL_XOR", dtype, dtype, a, b) == [0, 1, 0, 0, 1, 0, 1, 0]
    assert run("ELEMENT_WISE_LOGICAL_NOT", dtype, dtype, a) == [1, 0, 0, 0, 1, 0, 0, 0]


SPECIALS = [0.0, -0.0, 1.0, np.nan, -np.nan, np.inf, -np.inf, 65504.0]


@pytest.mark.parametrize("dtype", ["FLOAT32", "FLOAT16"])
def test_is_nan_and_is_infinity(dtype: str) -> None:
    x = np.array(SPECIALS, np.float32)
    if dtype == "FLOAT32":  # NaN payloads, quiet and signalling, either sign
        x = np.concatenate([x, np.array([0x7FC00001, 0xFFFFFFFF, 0x7F800001], np.uint32).view(np.float32)])
    nans = [0, 0, 0, 1, 1, 0, 0, 0] + [1, 1, 1][: len(x) - 8]
    rest = [0] * (len(x) - 8)
    assert run("ELEMENT_WISE_IS_NAN", dtype, "UINT32", x.tolist()) == nans
    assert run("ELEMENT_WISE_IS_NAN", dtype, "UINT8", x.tolist()) == nans
    modes = {"EITHER": [0, 0, 0, 0, 0, 1, 1, 0], "POSITIVE": [0, 0, 0, 0, 0, 1, 0, 0], "NEGATIVE": [0, 0, 0, 0, 0, 0, 1, 0]}
    for mode, want in modes.items():
        assert run("ELEMENT_WISE_IS_INFINITY", dtype, "UINT8", x.tolist(), InfinityMode=mode) == want + rest


def test_is_infinity_mode_in_full_form() -> None:
    fields = {"InputTensor": tensor("FLOAT32", [2]), "OutputTensor": tensor("UINT8", [2])}
    x = np.array([np.inf, -np.inf], np.float32)
    for mode, want in (("DML_IS_INFINITY_MODE_NEGATIVE", [0, 1]), ("DML_IS_INFINITY_MODE_EITHER", [1, 1])):
        got, ref = lowered_and_reference("cpu", "ELEMENT_WISE_IS_INFINITY", fields | {"InfinityMode": mode}, {"InputTensor": x})
        assert got.tolist() == ref.tolist() == want


# -- the graphs ------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", sorted(ROWS))
def test_graphs_use_ops_every_ep_has(op: str) -> None:
    """Every node on the DirectML EP (static check) and, but for the `dml` target, only the types the CUDA EP takes:
    comparisons on 32/64-bit integers and FLOAT32, logic on BOOL, IsNaN/IsInf on FLOAT32 (the
    matrix ran on the CUDA EP without CPU fallback: ORT 1.31.1, H100)."""
    table = operator_table.OPERATORS[op].support[0].tensors
    names = inputs_of(op)
    for dtype in table[names[0]].types:
        for out in table["OutputTensor"].types:
            if op.endswith(("_AND", "_OR", "_XOR", "_NOT")) and out != dtype:
                continue
            fields = {n: tensor(dtype.name, [2, 3]) for n in names} | {"OutputTensor": tensor(out.name, [2, 3])}
            if op.endswith("IS_INFINITY"):
                fields["InfinityMode"] = "POSITIVE"
            desc = make_desc(op, fields)
            for target in ("portable", "dml", "cuda"):
                model = lowering.lower(desc, "t", target=target)
                assert dml_ep.check(model) == [], (op, dtype, out, target)
                if target == "dml":  # the nodes the DirectML EP maps back, in the inputs' own type
                    continue
                types = {v.name: v.type.tensor_type.elem_type for v in (*model.graph.input, *model.graph.value_info)}
                for node in model.graph.node:
                    if node.op_type in ("Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual"):
                        assert types.get(node.input[0], 1) in (1, 6, 7, 12, 13), (op, dtype, node.op_type)
                    if node.op_type in ("IsNaN", "IsInf"):
                        assert types.get(node.input[0], 1) == 1


# -- validation -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "fields", "path", "text"),
    [
        ("EQUALS", {"BTensor": tensor("INT32", [2, 3])}, "desc.BTensor.DataType", "same DataType"),
        ("LT", {"BTensor": tensor("FLOAT32", [3, 2])}, "desc.BTensor.Sizes", "same Sizes"),
        ("GT", {"OutputTensor": tensor("FLOAT32", [2, 3])}, "desc.OutputTensor.DataType", "UINT32, UINT8"),
        ("GE", {"OutputTensor": tensor("UINT8", [2, 3, 1])}, "desc.OutputTensor.Sizes", "same DimensionCount"),
        ("AND", {"OutputTensor": tensor("UINT32", [2, 3])}, "desc.OutputTensor.DataType", "same DataType"),
        ("NOT", {"InputTensor": tensor("UINT32", [2, 3])}, "desc.OutputTensor.DataType", "same DataType"),
        ("OR", {"ATensor": tensor("INT32", [2, 3]), "BTensor": tensor("INT32", [2, 3])}, "desc.ATensor.DataType", "must be"),
        ("IS_NAN", {"InputTensor": tensor("INT32", [2, 3])}, "desc.InputTensor.DataType", "FLOAT32, FLOAT16"),
        ("IS_INFINITY", {"OutputTensor": tensor("UINT32", [2, 3])}, "desc.OutputTensor.DataType", "UINT8"),
        ("IS_INFINITY", {"InfinityMode": "BOTH"}, "desc.InfinityMode", "EITHER"),
    ],
)
def test_invalid(op: str, fields: dict[str, Any], path: str, text: str) -> None:
    name = COMPARISONS.get(op, f"ELEMENT_WISE_LOGICAL_{op}" if op in (*LOGICAL, "NOT") else f"ELEMENT_WISE_{op}")
    dtype = "UINT8" if op in (*LOGICAL, "NOT") else "FLOAT32"
    base = {n: tensor(dtype, [2, 3]) for n in inputs_of(name)} | {"OutputTensor": tensor("UINT8", [2, 3])}
    if name.endswith("IS_INFINITY"):
        base["InfinityMode"] = "EITHER"
    e = refusal(name, base | fields)
    assert format_path(e.path) == path and text in str(e), str(e)


def test_invalid_model_exits_2(tmp_path: Any) -> None:
    model = {
        "resources": {"a": {"initialValuesDataType": "UINT8", "initialValues": [1, 0]}},
        "dispatchables": {
            "and": {
                "type": "DML_OPERATOR_ELEMENT_WISE_LOGICAL_AND",
                "desc": {n: tensor("UINT8", [2]) for n in ("ATensor", "BTensor")} | {"OutputTensor": tensor("UINT32", [2])},
            }
        },
        "commands": [
            {"type": "dispatch", "dispatchable": "and", "bindings": {"ATensor": "a", "BTensor": "a", "OutputTensor": "a"}}
        ],
    }
    path = tmp_path / "m.json"
    path.write_text(json.dumps(model))
    code, _, err = run_cli("run", str(path))
    assert code == 2 and "dispatchables.and.desc.OutputTensor.DataType" in err, err


def test_rows_are_the_adopted_operators() -> None:
    assert set(ROWS) == set(registry.family("ELEMENT_WISE_LOGICAL_EQUALS").operators)


# -- properties -----------------------------------------------------------------------------------


def _pool(dtype: np.dtype, logical: bool) -> np.ndarray:
    """Few distinct values, so that equal pairs are common: the type's ends, neighbours past 2**53
    for 64-bit types, signed zeros, infinities and NaN for floats; truth values other than 1."""
    if dtype.kind == "f":
        return np.array([0.0, -0.0, 1.0, -1.0, 0.5, np.inf, -np.inf, np.nan, 1e4, -3e4], dtype)
    info = np.iinfo(dtype)
    if logical:
        return np.array([0, 0, 1, 1, 2, int(info.max)], dtype=object).astype(dtype)
    pool = [int(info.min), int(info.min) + 1, -1, 0, 1, 2, int(info.max) - 1, int(info.max)]
    if dtype.itemsize == 8:
        pool += [2**53, 2**53 + 1, 2**31, 2**31 - 1, 2**32, 2**32 + 1, -(2**53) - 1]
    return np.array([v for v in pool if info.min <= v <= info.max], dtype=object).astype(dtype)


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, dict[str, Any], dict[str, np.ndarray]]:
    op = draw(st.sampled_from(sorted(ROWS)))
    table = operator_table.OPERATORS[op].support[0].tensors
    names = inputs_of(op)
    dtype = draw(st.sampled_from([d.name for d in table[names[0]].types]))
    logical = op.endswith(("_AND", "_OR", "_XOR", "_NOT"))
    out = dtype if logical else draw(st.sampled_from([d.name for d in table["OutputTensor"].types]))
    shape = draw(shapes())
    rng = np.random.default_rng(draw(SEEDS))
    pool = _pool(np.dtype(dtype.lower()), logical)
    feeds = {n: rng.choice(pool, size=shape) for n in names}
    fields: dict[str, Any] = {n: tensor(dtype, shape) for n in names} | {"OutputTensor": tensor(out, shape)}
    if op.endswith("IS_INFINITY"):
        fields["InfinityMode"] = draw(st.sampled_from(["EITHER", "POSITIVE", "NEGATIVE"]))
    return op, fields, feeds


@EPS
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_matches_reference(ep: str, case: tuple[str, dict[str, Any], dict[str, np.ndarray]]) -> None:
    op, fields, feeds = case
    got, want = lowered_and_reference(ep, op, fields, feeds)
    assert got.dtype == want.dtype and np.array_equal(got, want), (op, fields, got.ravel()[:8], want.ravel()[:8])


@settings(max_examples=40, deadline=None)
@given(case=cases())
def test_reference_matches_python(case: tuple[str, dict[str, Any], dict[str, np.ndarray]]) -> None:
    """The reference against Python's own integers and floats, element by element (no numpy
    promotion between the operands can blur INT64/UINT64 values)."""
    op, fields, feeds = case
    desc = make_desc(op, fields)

    want = registry.family(desc.schema.name).reference(desc, feeds).ravel().tolist()
    xs = [feeds[n].ravel().tolist() for n in inputs_of(op)]
    mode = desc.values.get("InfinityMode")
    funcs = {
        "ELEMENT_WISE_LOGICAL_EQUALS": lambda a, b: a == b,
        "ELEMENT_WISE_LOGICAL_GREATER_THAN": lambda a, b: a > b,
        "ELEMENT_WISE_LOGICAL_GREATER_THAN_OR_EQUAL": lambda a, b: a >= b,
        "ELEMENT_WISE_LOGICAL_LESS_THAN": lambda a, b: a < b,
        "ELEMENT_WISE_LOGICAL_LESS_THAN_OR_EQUAL": lambda a, b: a <= b,
        "ELEMENT_WISE_LOGICAL_AND": lambda a, b: bool(a) and bool(b),
        "ELEMENT_WISE_LOGICAL_OR": lambda a, b: bool(a) or bool(b),
        "ELEMENT_WISE_LOGICAL_XOR": lambda a, b: bool(a) != bool(b),
        "ELEMENT_WISE_LOGICAL_NOT": lambda a: not a,
        "ELEMENT_WISE_IS_NAN": lambda a: a != a,
        "ELEMENT_WISE_IS_INFINITY": lambda a: abs(a) == float("inf") and (mode == "EITHER" or (a > 0) == (mode == "POSITIVE")),
    }
    assert want == [int(funcs[op](*args)) for args in zip(*xs, strict=True)]
