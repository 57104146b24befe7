"""The pooling operators (dml2onnx/ops/pooling.py): AVERAGE_POOLING, AVERAGE_POOLING1, LP_POOLING,
LP_POOLING1, MAX_POOLING, MAX_POOLING1 and MAX_POOLING2 (with OutputIndicesTensor: two outputs).
The page's example, by-hand
values, what DirectML's own API computed where the pages are silent, validation, the nodes each
target emits, and properties over random windows, strides, paddings, dilations and types
against the numpy reference. The matrix (dml2onnx/cases/pooling.py) runs them on every EP present
and through DirectML's API."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import numpy_helper

from dml2onnx import lowering
from dml2onnx.backends import dmlapi, runtime
from dml2onnx.core import operator_table
from dml2onnx.core.errors import format_path
from dml2onnx.graph import dml_ep
from dml2onnx.graph.builder import DEFAULT_OPSET
from dml2onnx.lowering import choices
from dml2onnx.ops import registry
from dml2onnx.ops.pooling import ROWS, Window
from strategies import SEEDS
from support import EPS, every_output, make_desc, mismatches, printed, refusal, run_cli, tensor

OPS = list(ROWS)
DILATED = ("AVERAGE_POOLING1", "LP_POOLING1", "MAX_POOLING2")
INDEXED = ("MAX_POOLING1", "MAX_POOLING2")  # with an optional OutputIndicesTensor


def pool_fields(op: str, dtype: str, sizes: list[int], window: list[int], **more: Any) -> dict[str, Any]:
    """A desc with OutputTensor's sizes from the pages' formula (Strides 1, no padding unless given)."""
    n = len(sizes) - 2
    fields: dict[str, Any] = {
        "DimensionCount": n,
        "Strides": [1] * n,
        "WindowSize": window,
        "StartPadding": [0] * n,
        "EndPadding": [0] * n,
    }
    if op in DILATED:
        fields["Dilations"] = [1] * n
    if op.startswith("AVERAGE"):
        fields["IncludePadding"] = False
    if op.startswith("LP"):
        fields["P"] = 2
    fields |= more
    w = Window(
        "",
        tuple(fields["Strides"]),
        tuple(window),
        tuple(fields["StartPadding"]),
        tuple(fields["EndPadding"]),
        tuple(fields.get("Dilations", [1] * n)),
    )
    out = [*sizes[:2], *w.output_sizes(tuple(sizes[2:]))]
    result = {"InputTensor": tensor(dtype, sizes), "OutputTensor": tensor(dtype, out)} | fields
    if isinstance(fields.get("OutputIndicesTensor"), str):  # the index type: sizes as OutputTensor's
        result["OutputIndicesTensor"] = tensor(fields["OutputIndicesTensor"], out)
    return result


def every_variant(op: str, fields: dict[str, Any], x: np.ndarray, ep: str = "cpu") -> np.ndarray:
    """The reference's OutputTensor, after checking every candidate on the targets that run on
    `ep` against the reference, every output (the `dml` target: the static DirectML EP check)."""
    return every_output_variant(op, fields, x, ep)["OutputTensor"]


def every_output_variant(op: str, fields: dict[str, Any], x: np.ndarray, ep: str = "cpu") -> dict[str, np.ndarray]:
    desc = make_desc(op, fields)
    want = registry.reference_outputs(desc, {"InputTensor": x})
    for variant in choices.available(desc, DEFAULT_OPSET):
        for target in ("portable", ep, "dml"):
            model = lowering.lower(desc, "t", target=target, variant=variant)
            assert dml_ep.check(model) == [], (target, variant)
            if target == "dml":
                continue
            got = every_output(runtime.create(model, "t", ep), desc, {"InputTensor": x})
            assert not (bad := mismatches(desc, got, want, ep)), (op, variant, target, bad)
    return want


# -- the pages' example and by-hand values ----------------------------------------------------------


PAGE_X = np.array([[3, 5, 7, 1], [9, 4, 2, 8]], np.float32).reshape(1, 1, 2, 4)


def test_max_pooling1_page_example() -> None:
    """MAX_POOLING1's OutputIndicesTensor example: [[3,5,7,1],[9,4,2,8]] with a window of 1x3 gives
    [[7,7],[9,8]] at indices [[2,2],[4,7]] (the input seen as one contiguous array)."""
    for op in ("MAX_POOLING", "MAX_POOLING1", "MAX_POOLING2"):
        assert every_variant(op, pool_fields(op, "FLOAT32", [1, 1, 2, 4], [1, 3]), PAGE_X).tolist() == [[[[7, 7], [9, 8]]]]
    for op in INDEXED:
        for index_type in ("UINT32", "UINT64"):
            fields = pool_fields(op, "FLOAT32", [1, 1, 2, 4], [1, 3], OutputIndicesTensor=index_type)
            got = every_output_variant(op, fields, PAGE_X)["OutputIndicesTensor"]
            assert got.dtype == np.dtype(index_type.lower()) and got.tolist() == [[[[2, 2], [4, 7]]]]


def test_indices_count_batches_and_channels_and_take_the_first_maximum() -> None:
    """As DirectML's API computed them (test_directml_indices): an index counts every batch and
    channel before it; of equal maxima the first in the window wins; NaN, -inf and the lowest
    value all count as the lowest (a window of them gives its first input element); a window
    entirely in padding gives 0."""
    x = np.arange(2 * 3 * 4 * 4, dtype=np.float32).reshape(2, 3, 4, 4)
    got = every_output_variant(
        "MAX_POOLING2",
        pool_fields("MAX_POOLING2", "FLOAT32", [2, 3, 4, 4], [2, 2], Strides=[2, 2], OutputIndicesTensor="UINT32"),
        x,
    )
    assert got["OutputIndicesTensor"][1, 2].ravel().tolist() == [85, 87, 93, 95]
    for x_row, extra, want in INDEX_CASES:
        fields = pool_fields("MAX_POOLING2", "FLOAT32", [1, 1, 2, 2], [2, 2], OutputIndicesTensor="UINT64", **extra)
        got = every_output_variant("MAX_POOLING2", fields, np.array(x_row, np.float32).reshape(1, 1, 2, 2))
        assert got["OutputIndicesTensor"].ravel().tolist() == want, (x_row, extra)


# (input [1, 1, 2, 2] row, fields, DirectML's indices) for a 2x2 window
INDEX_CASES = [
    ([1, 1, 1, 1], {}, [0]),
    ([np.nan, 3, np.nan, 3], {}, [1]),
    ([np.nan, -np.inf, np.nan, np.nan], {}, [0]),
    ([float(np.finfo(np.float32).min)] * 4, {"StartPadding": [1, 1], "EndPadding": [1, 1]}, [0, 0, 1, 0, 0, 1, 2, 2, 3]),
    ([0, 1, 2, 3], {"Strides": [3, 3], "StartPadding": [2, 2], "EndPadding": [2, 2]}, [0, 0, 0, 3]),
]


X = np.arange(1, 17, dtype=np.float32).reshape(1, 1, 4, 4)


def test_average_with_and_without_padding() -> None:
    pads = {"Strides": [2, 2], "StartPadding": [1, 1], "EndPadding": [1, 1]}
    without = every_variant("AVERAGE_POOLING", pool_fields("AVERAGE_POOLING", "FLOAT32", [1, 1, 4, 4], [3, 3], **pads), X)
    assert without[0, 0].tolist() == [[3.5, 5.0], [9.5, 11.0]]  # (1+2+5+6)/4, (2+3+4+6+7+8)/6, ...
    fields = pool_fields("AVERAGE_POOLING", "FLOAT32", [1, 1, 4, 4], [3, 3], IncludePadding=True, **pads)
    assert every_variant("AVERAGE_POOLING", fields, X).ravel().tolist() == pytest.approx([14 / 9, 30 / 9, 57 / 9, 99 / 9])


def test_dilations() -> None:
    for op in ("AVERAGE_POOLING1", "LP_POOLING1"):
        fields = pool_fields(op, "FLOAT32", [1, 1, 4, 4], [2, 2], Dilations=[2, 2], **({"P": 1} if op.startswith("LP") else {}))
        got = every_variant(op, fields, X)[0, 0]
        want = [[1 + 3 + 9 + 11, 2 + 4 + 10 + 12], [5 + 7 + 13 + 15, 6 + 8 + 14 + 16]]
        assert got.tolist() == (want if op.startswith("LP") else (np.array(want) / 4).tolist())


def test_lp_pooling_takes_absolute_values() -> None:
    x = np.array([-3, 4, -1, 2, -5, 0.5, -0.25, 7], np.float32).reshape(1, 1, 2, 4)
    for p, want in (
        (1, [12.5, 5.75, 10.25]),
        (2, [np.sqrt(9 + 16 + 25 + 0.25), np.sqrt(16 + 1 + 0.25 + 0.0625), np.sqrt(1 + 4 + 0.0625 + 49)]),
    ):
        got = every_variant("LP_POOLING", pool_fields("LP_POOLING", "FLOAT32", [1, 1, 2, 4], [2, 2], P=p), x)
        assert got.ravel().tolist() == pytest.approx(want, rel=1e-6)


def test_three_spatial_dimensions() -> None:
    x = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(1, 2, 3, 4, 5)
    got = every_variant("MAX_POOLING", pool_fields("MAX_POOLING", "FLOAT32", [1, 2, 3, 4, 5], [3, 4, 5]), x)
    assert got.ravel().tolist() == [59, 119]


# -- where the pages are silent: what DirectML's API computed (DirectML.dll of onnxruntime-directml
# 1.24.4 under Wine) ---------------------------------------------------------------------------------

FLT_LOWEST = float(np.finfo(np.float32).min)
# (op, dtype, extra fields, input row, DirectML's output row): a [1, 1, 1, 3] input
SETTLED = [
    # a window entirely in padding (StartPadding and EndPadding 2 of a 1x1 window): MAX gives the
    # type's lowest finite value, AVERAGE 0 / 0 = NaN (or 0 / WindowSize with IncludePadding), LP 0
    (
        "MAX_POOLING",
        "FLOAT32",
        {"StartPadding": [0, 2], "EndPadding": [0, 2]},
        [1, 2, 3],
        [FLT_LOWEST] * 2 + [1, 2, 3] + [FLT_LOWEST] * 2,
    ),
    (
        "MAX_POOLING",
        "FLOAT16",
        {"StartPadding": [0, 2], "EndPadding": [0, 2]},
        [1, 2, 3],
        [-65504.0] * 2 + [1, 2, 3] + [-65504.0] * 2,
    ),
    ("MAX_POOLING", "INT16", {"StartPadding": [0, 2], "EndPadding": [0, 2]}, [1, 2, 3], [-32768] * 2 + [1, 2, 3] + [-32768] * 2),
    ("MAX_POOLING", "UINT32", {"StartPadding": [0, 2], "EndPadding": [0, 2]}, [1, 2, 3], [0] * 2 + [1, 2, 3] + [0] * 2),
    (
        "AVERAGE_POOLING",
        "FLOAT32",
        {"StartPadding": [0, 2], "EndPadding": [0, 2]},
        [1, 2, 3],
        [np.nan] * 2 + [1, 2, 3] + [np.nan] * 2,
    ),
    (
        "AVERAGE_POOLING",
        "FLOAT32",
        {"StartPadding": [0, 2], "EndPadding": [0, 2], "IncludePadding": True},
        [1, 2, 3],
        [0, 0, 1, 2, 3, 0, 0],
    ),
    ("LP_POOLING", "FLOAT32", {"StartPadding": [0, 2], "EndPadding": [0, 2]}, [-1, 2, 3], [0, 0, 1, 2, 3, 0, 0]),
    # MAX skips NaN and starts from the lowest finite value: -inf alone gives -3.4e38
    ("MAX_POOLING", "FLOAT32", {}, [np.nan, -np.inf, 5], [FLT_LOWEST, FLT_LOWEST, 5]),
    ("MAX_POOLING", "FLOAT32", {"WindowSize": [1, 2]}, [np.nan, np.nan, np.inf], [FLT_LOWEST, np.inf]),
    ("MAX_POOLING", "FLOAT16", {"WindowSize": [1, 2]}, [np.nan, -np.inf, np.inf], [-65504.0, np.inf]),
    # AVERAGE and LP propagate NaN and infinities as IEEE arithmetic does
    ("AVERAGE_POOLING", "FLOAT32", {"WindowSize": [1, 2]}, [np.nan, 1, np.inf], [np.nan, np.inf]),
    ("LP_POOLING", "FLOAT32", {"WindowSize": [1, 2]}, [np.nan, 1, -np.inf], [np.nan, np.inf]),
    # OutputTensor's sizes by the pages' formula with WindowSize for a dilated window: the windows
    # past the padded input read padding there (IncludePadding still divides by WindowSize)
    ("AVERAGE_POOLING1", "FLOAT32", {"WindowSize": [1, 2], "Dilations": [1, 2], "IncludePadding": True}, [2, 4, 8], [5, 2]),
    ("LP_POOLING1", "FLOAT32", {"WindowSize": [1, 2], "Dilations": [1, 2], "P": 1}, [2, 4, 8], [10, 4]),
    ("AVERAGE_POOLING1", "FLOAT32", {"WindowSize": [1, 2], "Dilations": [1, 2]}, [2, 4, 8], [5, 4]),
]


def settled_fields(op: str, dtype: str, extra: dict[str, Any], out: int) -> dict[str, Any]:
    window = extra.get("WindowSize", [1, 1])
    fields = pool_fields(op, dtype, [1, 1, 1, 3], window, **{k: v for k, v in extra.items() if k != "WindowSize"})
    return fields | {"OutputTensor": tensor(dtype, [1, 1, 1, out])}


@pytest.mark.parametrize(("op", "dtype", "extra", "x", "want"), SETTLED)
def test_what_directml_computes(op: str, dtype: str, extra: dict[str, Any], x: list[float], want: list[float]) -> None:
    t = np.dtype(dtype.lower())
    got = every_variant(op, settled_fields(op, dtype, extra, len(want)), np.array(x, t).reshape(1, 1, 1, 3))
    np.testing.assert_array_equal(got.ravel(), np.array(want, t))


_why = dmlapi.missing()


@pytest.mark.skipif(_why is not None, reason=f"DirectML's API under Wine is not set up ({_why})")
def test_directml_computes_so() -> None:
    for op, dtype, extra, x, want in SETTLED:
        t = np.dtype(dtype.lower())
        desc = make_desc(op, settled_fields(op, dtype, extra, len(want)))
        got = dmlapi.execute(desc, {"InputTensor": np.array(x, t).reshape(1, 1, 1, 3)}).output
        np.testing.assert_array_equal(got.ravel(), np.array(want, t), err_msg=f"{op} {dtype} {extra}")


@pytest.mark.parametrize("op", ["MAX_POOLING", "AVERAGE_POOLING", "LP_POOLING1", "MAX_POOLING2"])
def test_paddings_past_directml_32_bit_arithmetic_are_refused(op: str) -> None:
    """DirectML computes paddings and padded sizes as 32-bit signed integers (test_directml_crops_by_a_negative_padding):
    2**31 or more is refused where it is written, 2**30 is taken."""
    for field, value, message in (
        ("StartPadding", 4294967295, "this is -1 (a crop)"),
        ("EndPadding", 2**31 - 2, "the padded size 6 + 0 + 2147483646 must be below 2**31"),
    ):
        f = pool_fields(op, "FLOAT32", [1, 1, 1, 6], [1, 3], OutputTensor=tensor("FLOAT32", [1, 1, 1, 4]))
        f[field] = [0, value]
        e = refusal(op, f)
        assert (format_path(e.path), message in e.rule) == (f"desc.{field}[1]", True), e.rule
    f = pool_fields(op, "FLOAT32", [1, 1, 1, 6], [1, 3], OutputTensor=tensor("FLOAT32", [1, 1, 1, 4]))
    lowering.validate(make_desc(op, f | {"StartPadding": [0, 2**30]}))


@pytest.mark.skipif(_why is not None, reason=f"DirectML's API under Wine is not set up ({_why})")
def test_directml_crops_by_a_negative_padding() -> None:
    """Why: DirectML reads a StartPadding of 4294967295 as -1 (windows of 3 from the second element on, the
    last one past the input)."""
    from dml2onnx.core import desc as desc_module

    x = np.arange(1, 7, dtype=np.float32).reshape(1, 1, 1, 6)
    for op, want in (("MAX_POOLING", [4, 5, 6, 6]), ("AVERAGE_POOLING", [3, 4, 5, 5.5])):
        f = pool_fields(op, "FLOAT32", [1, 1, 1, 6], [1, 3], OutputTensor=tensor("FLOAT32", [1, 1, 1, 4]))
        d = desc_module.parse_operator_desc(op, f | {"StartPadding": [0, 4294967295]}, ("desc",), ("type",))  # not validated
        assert dmlapi.execute(d, {"InputTensor": x}).output.ravel().tolist() == want


@pytest.mark.skipif(_why is not None, reason=f"DirectML's API under Wine is not set up ({_why})")
def test_directml_indices() -> None:
    """What test_indices_count_batches_and_channels_and_take_the_first_maximum and the page's
    example take, as DirectML computes it."""
    for op in INDEXED:
        desc = make_desc(op, pool_fields(op, "FLOAT32", [1, 1, 2, 4], [1, 3], OutputIndicesTensor="UINT32"))
        assert dmlapi.execute(desc, {"InputTensor": PAGE_X}).outputs["OutputIndicesTensor"].tolist() == [[[[2, 2], [4, 7]]]]
    x = np.arange(2 * 3 * 4 * 4, dtype=np.float32).reshape(2, 3, 4, 4)
    desc = make_desc(
        "MAX_POOLING2", pool_fields("MAX_POOLING2", "FLOAT32", [2, 3, 4, 4], [2, 2], Strides=[2, 2], OutputIndicesTensor="UINT32")
    )
    assert dmlapi.execute(desc, {"InputTensor": x}).outputs["OutputIndicesTensor"][1, 2].ravel().tolist() == [85, 87, 93, 95]
    for x_row, extra, want in INDEX_CASES:
        desc = make_desc(
            "MAX_POOLING2", pool_fields("MAX_POOLING2", "FLOAT32", [1, 1, 2, 2], [2, 2], OutputIndicesTensor="UINT64", **extra)
        )
        got = dmlapi.execute(desc, {"InputTensor": np.array(x_row, np.float32).reshape(1, 1, 2, 2)}).outputs
        assert got["OutputIndicesTensor"].ravel().tolist() == want, (x_row, extra)


# -- validation ----------------------------------------------------------------------------------

BASE = pool_fields("MAX_POOLING1", "FLOAT32", [1, 2, 5, 5], [3, 3])


def base(op: str) -> dict[str, Any]:
    return pool_fields(op, "FLOAT32", [1, 2, 5, 5], [3, 3])


@pytest.mark.parametrize(
    ("op", "fields", "path", "text"),
    [
        (
            "MAX_POOLING1",
            BASE | {"OutputIndicesTensor": tensor("UINT32", [1, 2, 3, 4])},
            "desc.OutputIndicesTensor.Sizes",
            "must be OutputTensor's Sizes [1, 2, 3, 3]",
        ),
        (
            "MAX_POOLING2",
            base("MAX_POOLING2") | {"OutputIndicesTensor": tensor("INT32", [1, 2, 3, 3])},
            "desc.OutputIndicesTensor.DataType",
            "UINT64",
        ),
        (
            "MAX_POOLING1",
            BASE | {"OutputTensor": tensor("FLOAT32", [2, 2, 3, 3])},
            "desc.OutputTensor.Sizes[0]",
            "must be InputTensor's N (1), not 2",
        ),
        (
            "MAX_POOLING1",
            BASE | {"OutputTensor": tensor("FLOAT32", [1, 1, 3, 3])},
            "desc.OutputTensor.Sizes[1]",
            "must be InputTensor's C (2), not 1",
        ),
        ("MAX_POOLING1", BASE | {"OutputTensor": tensor("FLOAT32", [1, 2, 3, 3, 1])}, "desc.OutputTensor", "same DimensionCount"),
        ("MAX_POOLING1", BASE | {"OutputTensor": tensor("FLOAT16", [1, 2, 3, 3])}, "desc.OutputTensor.DataType", "same DataType"),
        ("MAX_POOLING1", BASE | {"Strides": [1, 0]}, "desc.Strides[1]", "1 or more"),
        ("MAX_POOLING1", BASE | {"WindowSize": [0, 3]}, "desc.WindowSize[0]", "1 or more"),
        ("MAX_POOLING1", BASE | {"WindowSize": [3, 3, 3]}, "desc.WindowSize", "DimensionCount (2) elements"),
        ("MAX_POOLING1", BASE | {"EndPadding": [0]}, "desc.EndPadding", "DimensionCount (2) elements"),
        (
            "MAX_POOLING1",
            BASE
            | {"DimensionCount": 3, "Strides": [1] * 3, "WindowSize": [1] * 3, "StartPadding": [0] * 3, "EndPadding": [0] * 3},
            "desc.DimensionCount",
            "InputTensor's DimensionCount - 2",
        ),
        ("MAX_POOLING1", BASE | {"InputTensor": tensor("FLOAT32", [2, 5, 5])}, "desc.InputTensor", "4 to 5"),
        (
            "AVERAGE_POOLING",
            base("AVERAGE_POOLING") | {"InputTensor": tensor("INT32", [1, 2, 5, 5])},
            "desc.InputTensor.DataType",
            "FLOAT32",
        ),
        ("LP_POOLING", base("LP_POOLING") | {"P": 0}, "desc.P", "1 or more"),
        ("LP_POOLING1", base("LP_POOLING1") | {"Dilations": [0, 1]}, "desc.Dilations[0]", "1 or more"),
        (
            "AVERAGE_POOLING1",
            {k: v for k, v in base("AVERAGE_POOLING1").items() if k != "Dilations"},
            "desc.Dilations",
            "required",
        ),
    ],
)
def test_invalid(op: str, fields: dict[str, Any], path: str, text: str) -> None:
    e = refusal(op, fields)
    assert format_path(e.path).startswith(path) and text in str(e), (format_path(e.path), str(e))


def test_max_pooling_types_by_feature_level() -> None:
    fields = BASE | {"InputTensor": tensor("INT32", [1, 2, 5, 5]), "OutputTensor": tensor("INT32", [1, 2, 3, 3])}
    e = refusal("MAX_POOLING", {k: v for k, v in fields.items() if k != "OutputIndicesTensor"}, level="3_0")
    assert "feature level 5_0 allows it" in str(e)
    e = refusal(
        "MAX_POOLING1",
        fields | {"InputTensor": tensor("INT8", [1, 2, 5, 5]), "OutputTensor": tensor("INT8", [1, 2, 3, 3])},
        level="2_0",
    )
    assert "feature level 3_0 allows it" in str(e)


def test_a_model_binds_both_outputs(tmp_path: Any) -> None:
    """A DxDispatch model with MAX_POOLING1's OutputIndicesTensor bound: `run` writes both outputs
    (the executor writes every output of a dispatchable to its binding)."""
    desc = pool_fields("MAX_POOLING1", "FLOAT32", [1, 1, 2, 4], [1, 3], OutputIndicesTensor="UINT32")
    model = {
        "resources": {
            "x": {"initialValuesDataType": "FLOAT32", "initialValues": PAGE_X.ravel().tolist()},
            "y": {"initialValuesDataType": "FLOAT32", "initialValues": [0.0] * 4},
            "i": {"initialValuesDataType": "UINT32", "initialValues": [9] * 4},
        },
        "dispatchables": {"pool": {"type": "DML_OPERATOR_MAX_POOLING1", "desc": desc}},
        "commands": [
            {
                "type": "dispatch",
                "dispatchable": "pool",
                "bindings": {"InputTensor": "x", "OutputTensor": "y", "OutputIndicesTensor": "i"},
            },
            {"type": "print", "resource": "y"},
            {"type": "print", "resource": "i"},
        ],
    }
    path = tmp_path / "m.json"
    path.write_text(json.dumps(model))
    code, out, err = run_cli("run", str(path))
    assert code == 0, err
    assert printed(out) == {"y": [7, 7, 9, 8], "i": [2, 2, 4, 7]}
    code, out, err = run_cli("check", str(path))
    assert code == 0 and "0:pool.OutputIndicesTensor" in out, out
    unbound = json.loads(path.read_text())
    del unbound["commands"][0]["bindings"]["OutputIndicesTensor"]
    path.write_text(json.dumps(unbound))
    code, _, err = run_cli("run", str(path))
    assert code == 2 and "OutputIndicesTensor of 'pool' is not bound" in err, err


def test_rows_are_the_adopted_operators() -> None:
    assert set(ROWS) == set(registry.family("AVERAGE_POOLING").operators)


# -- candidates and graphs ------------------------------------------------------------------------


def nodes(op: str, fields: dict[str, Any], target: str, variant: str | None = None) -> list[str]:
    return [n.op_type for n in lowering.lower(make_desc(op, fields), "t", target=target, variant=variant).graph.node]


def test_the_dml_target_emits_the_pooling_nodes() -> None:
    pads = {"Strides": [2, 2], "StartPadding": [1, 1], "EndPadding": [1, 1]}
    assert nodes("AVERAGE_POOLING", pool_fields("AVERAGE_POOLING", "FLOAT16", [1, 2, 5, 5], [3, 3], **pads), "dml") == [
        "AveragePool"
    ]
    assert nodes("LP_POOLING", pool_fields("LP_POOLING", "FLOAT32", [1, 2, 5, 5], [3, 3], **pads), "dml") == ["LpPool"]
    assert nodes("MAX_POOLING", pool_fields("MAX_POOLING", "INT8", [1, 2, 5, 5], [3, 3], **pads), "dml") == ["MaxPool"]
    dilated = pool_fields("MAX_POOLING1", "FLOAT32", [1, 2, 5, 5], [2, 2])
    assert nodes("MAX_POOLING1", dilated, "dml") == ["MaxPool"]
    # the indices: MaxPool's second output on the dml target (the DirectML EP maps it onto
    # OutputIndicesTensor); elsewhere the first maximum found by Equal/Where/Min over the window
    # (the CUDA EP's MaxPool indices miss windows of equal lowest values)
    indexed = pool_fields("MAX_POOLING2", "FLOAT32", [1, 2, 5, 5], [2, 2], Dilations=[2, 1], OutputIndicesTensor="UINT64")
    assert nodes("MAX_POOLING2", indexed, "dml") == ["MaxPool", "Cast"]
    portable = nodes("MAX_POOLING2", indexed, "portable")
    assert portable.count("MaxPool") == 1 and {"Equal", "Where", "Min"} <= set(portable)
    # on the portable target, LP is an AveragePool of |x|^P (the CUDA EP has no LpPool)
    assert "LpPool" not in nodes("LP_POOLING", pool_fields("LP_POOLING", "FLOAT32", [1, 2, 5, 5], [3, 3], **pads), "portable")
    # dilated AVERAGE and LP, 32/64-bit MAX, and padding as large as the window: the slices
    assert "AveragePool" not in nodes(
        "AVERAGE_POOLING1", pool_fields("AVERAGE_POOLING1", "FLOAT32", [1, 2, 5, 5], [2, 2], Dilations=[2, 1]), "dml"
    )
    assert "MaxPool" not in nodes("MAX_POOLING", pool_fields("MAX_POOLING", "INT32", [1, 2, 5, 5], [2, 2]), "dml")
    assert "MaxPool" not in nodes(
        "MAX_POOLING", pool_fields("MAX_POOLING", "FLOAT32", [1, 2, 5, 5], [2, 2], StartPadding=[2, 0]), "dml"
    )


# -- properties ----------------------------------------------------------------------------------------


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, dict[str, Any], np.ndarray]:
    op = draw(st.sampled_from(OPS))
    dtype = draw(st.sampled_from([t.name for t in operator_table.OPERATORS[op].support[0].tensors["InputTensor"].types]))
    n = draw(st.integers(2, 3))
    window = [draw(st.integers(1, 3)) for _ in range(n)]
    dilations = [draw(st.integers(1, 2)) for _ in range(n)] if op in DILATED else [1] * n
    start = [draw(st.integers(0, k)) for k in window]
    end = [draw(st.integers(0, k)) for k in window]
    sizes = [draw(st.integers(1, 3)), draw(st.integers(1, 3))]
    for k, d, s, e in zip(window, dilations, start, end, strict=True):
        sizes.append(max(draw(st.integers(1, 6)), (k - 1) * d + 1 - s - e))
    more: dict[str, Any] = {"Strides": [draw(st.integers(1, 3)) for _ in range(n)], "StartPadding": start, "EndPadding": end}
    if op in DILATED:
        more["Dilations"] = dilations
    if op in INDEXED and draw(st.booleans()):
        types = operator_table.OPERATORS[op].support[0].tensors["OutputIndicesTensor"].types
        more["OutputIndicesTensor"] = draw(st.sampled_from([t.name for t in types]))
    if op.startswith("AVERAGE"):
        more["IncludePadding"] = draw(st.booleans())
    if op.startswith("LP"):
        more["P"] = draw(st.integers(1, 4))
    rng = np.random.default_rng(draw(SEEDS))
    t = np.dtype(dtype.lower())
    if t.kind == "f":
        x = (rng.standard_normal(sizes) * 3).astype(t)
    else:
        info = np.iinfo(t)
        x = rng.integers(int(info.min), int(info.max), size=sizes, endpoint=True, dtype=t)
    return op, pool_fields(op, dtype, sizes, window, **more), x


@EPS
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_every_candidate_matches_reference(ep: str, case: tuple[str, dict[str, Any], np.ndarray]) -> None:
    op, fields, x = case
    every_variant(op, fields, x, ep)


@settings(max_examples=40, deadline=None)
@given(case=cases())
def test_reference_matches_the_pages_loops(case: tuple[str, dict[str, Any], np.ndarray]) -> None:
    """The reference against a loop over every output element and window element, in Python numbers."""
    op, fields, x = case
    desc = make_desc(op, fields)
    outputs = registry.reference_outputs(desc, {"InputTensor": x})
    got = outputs["OutputTensor"]
    n = fields["DimensionCount"]
    dil = fields.get("Dilations", [1] * n)
    for index in np.ndindex(got.shape):
        vals, where = [], []
        for tap in np.ndindex(*fields["WindowSize"]):
            pos = [index[2 + a] * fields["Strides"][a] - fields["StartPadding"][a] + tap[a] * dil[a] for a in range(n)]
            if all(0 <= p < x.shape[2 + a] for a, p in enumerate(pos)):
                vals.append(x[(index[0], index[1], *pos)].item())
                where.append(int(np.ravel_multi_index((index[0], index[1], *pos), x.shape)))
        if "OutputIndicesTensor" in outputs:  # the first of the largest; 0 for padding alone
            first = where[vals.index(max(vals))] if vals else 0
            assert outputs["OutputIndicesTensor"][index].item() == first, (index, vals, where)
        if op.startswith("MAX"):
            want = max(vals) if vals else None
        elif op.startswith("LP"):
            want = sum(abs(v) ** fields["P"] for v in vals) ** (1 / fields["P"])
        else:
            divisor = int(np.prod(fields["WindowSize"])) if fields["IncludePadding"] else len(vals)
            want = sum(vals) / divisor if divisor else None
        if want is None:
            continue  # windows entirely in padding: test_empty_windows
        if x.dtype.kind == "f":
            assert got[index] == pytest.approx(np.array(want).astype(x.dtype).item(), rel=2e-3, abs=1e-6), (
                index,
                got[index],
                want,
            )
        else:
            assert got[index].item() == want, (index, got[index], want)


def test_float16_max_pooling_stays_in_float16_on_the_cuda_target() -> None:
    """The CUDA EP's MaxPool takes FLOAT16 (a max is exact in any float type): no Cast around it
    there, the floor of -inf and NaN in FLOAT16 too (-65504); the CPU EP's does not, so the
    portable graph holds it in FLOAT32. (Their values: the matrix on the GPU, tests/lowering.)"""
    desc = make_desc("MAX_POOLING", pool_fields("MAX_POOLING", "FLOAT16", [1, 1, 4, 4], [2, 2]))
    ops = {t: [n.op_type for n in lowering.lower(desc, "t", target=t).graph.node] for t in ("cuda", "portable")}
    assert ops["cuda"] == ["GreaterOrEqual", "Where", "MaxPool"]
    assert ops["portable"] == ["Cast", "GreaterOrEqual", "Where", "MaxPool", "Cast"]
    floor = [t for t in lowering.lower(desc, "t", target="cuda").graph.initializer if t.name.endswith("lowest")]
    assert [(t.data_type, numpy_helper.to_array(t).item()) for t in floor] == [(10, -65504.0)]
