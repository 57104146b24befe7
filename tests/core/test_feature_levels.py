"""`--feature-level`: operators, data types, dimension counts and options gated by each page's
availability and per-level support tables, refused with the level that would allow them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dml2onnx import lowering
from dml2onnx.core import featurelevels, operator_table
from dml2onnx.core.desc import parse_operator_desc
from dml2onnx.core.errors import ModelError, UsageError
from support import run_cli, tensor


def validate_at(level: str, op: str, fields: dict[str, Any]) -> None:
    lowering.validate(parse_operator_desc(op, fields, ("desc",), ("type",), level=level))


def refusal(level: str, op: str, fields: dict[str, Any]) -> ModelError:
    with pytest.raises(ModelError) as e:
        validate_at(level, op, fields)
    return e.value


def argmax(in_type: str, sizes: list[int], out_type: str = "UINT32") -> dict[str, Any]:
    return {
        "InputTensor": tensor(in_type, sizes),
        "OutputTensor": tensor(out_type, [1] * len(sizes)),
        "AxisCount": len(sizes),
        "Axes": list(range(len(sizes))),
        "AxisDirection": "INCREASING",
    }


def test_levels_parse_in_every_spelling() -> None:
    assert featurelevels.parse("5_1") == featurelevels.parse("5.1") == featurelevels.parse("DML_FEATURE_LEVEL_5_1") == "5_1"
    with pytest.raises(UsageError, match="must be one of 1_0, 2_0"):
        featurelevels.parse("7_0")
    assert featurelevels.NEWEST == "6_4" and list(featurelevels.LEVELS) == sorted(featurelevels.LEVELS, key=featurelevels.key)


def test_operator_introduced_later_is_refused_with_its_level() -> None:
    hardmax1 = {"InputTensor": tensor("FLOAT32", [2]), "OutputTensor": tensor("FLOAT32", [2]), "AxisCount": 1, "Axes": [0]}
    e = refusal("5_0", "ACTIVATION_HARDMAX1", hardmax1)
    assert e.path == ("type",) and "needs feature level 5_1" in e.rule and "this is 5_0" in e.rule
    validate_at("5_1", "ACTIVATION_HARDMAX1", hardmax1)
    assert "needs feature level 3_0" in refusal("2_1", "ARGMAX", argmax("FLOAT32", [2, 2])).rule


def test_data_type_gate_names_the_level_that_allows_it() -> None:
    e = refusal("4_0", "ARGMAX", argmax("INT64", [2, 2]))
    assert e.path == ("desc", "InputTensor", "DataType")
    assert "at feature level 4_0, not INT64 (feature level 4_1 allows it)" in e.rule
    validate_at("4_1", "ARGMAX", argmax("INT64", [2, 2]))
    e = refusal("4_1", "ARGMAX", argmax("FLOAT64", [2]))  # no level allows it: no hint
    assert "allows it" not in e.rule


def test_one_hot_ranks_and_types_by_level() -> None:
    def one_hot(index: str, value: str, sizes: list[int]) -> dict[str, Any]:
        index_sizes = [*sizes[:-1], 1]
        return {
            "IndicesTensor": tensor(index, index_sizes),
            "ValuesTensor": tensor(value, [1] * (len(sizes) - 1) + [2]),
            "OutputTensor": tensor(value, sizes),
            "Axis": len(sizes) - 1,
        }

    e = refusal("2_1", "ONE_HOT", one_hot("UINT32", "FLOAT32", [2, 3]))
    assert e.path == ("desc", "IndicesTensor", "Sizes") and "must have 4 dimensions" in e.rule and "3_0 allows it" in e.rule
    validate_at("2_1", "ONE_HOT", one_hot("UINT32", "INT8", [1, 1, 2, 3]))
    e = refusal("2_0", "ONE_HOT", one_hot("UINT32", "INT8", [1, 1, 2, 3]))
    assert e.path == ("desc", "ValuesTensor", "DataType") and "2_1 allows it" in e.rule
    e = refusal("2_1", "ONE_HOT", one_hot("INT32", "FLOAT32", [1, 1, 2, 3]))
    assert "3_0 allows it" in e.rule
    e = refusal("3_0", "ONE_HOT", one_hot("INT32", "FLOAT64", [2, 3]))
    assert "4_1 allows it" in e.rule
    validate_at("4_1", "ONE_HOT", one_hot("INT32", "FLOAT64", [2, 3]))


def test_fused_activation_gated_by_its_own_level() -> None:
    fields = {
        "InputTensor": tensor("FLOAT32", [1, 1, 2, 2]),
        "OutputTensor": tensor("FLOAT32", [1, 1, 2, 2]),
        "CrossChannel": False,
        "NormalizeVariance": True,
        "Epsilon": 1e-5,
        "FusedActivation": {"Type": "ACTIVATION_GELU"},
    }
    e = refusal("5_0", "MEAN_VARIANCE_NORMALIZATION", fields)
    assert e.path == ("desc", "FusedActivation", "Type") and "needs feature level 5_1" in e.rule
    validate_at("5_1", "MEAN_VARIANCE_NORMALIZATION", fields)


def test_tables_only_grow_with_the_level() -> None:
    """A newer table never drops a type or a dimension count an older one allowed (page sanity)."""
    for op in operator_table.OPERATORS.values():
        for old, new in zip(op.support[1:], op.support, strict=False):
            if old.functions != new.functions:
                continue
            assert featurelevels.key(new.level) > featurelevels.key(old.level), op.name
            for name, o in old.tensors.items():
                n = new.tensors[name]
                assert set(o.types) <= set(n.types), (op.name, name, new.level)
                assert n.ranks[0] <= o.ranks[0] and n.ranks[1] >= o.ranks[1], (op.name, name, new.level)
        # a page that says the operator came earlier than DirectML.h does (PAGE_LEVEL_ERRATA: SCATTER's
        # page says 1_0, DirectML.h 2_0) may have a table from its own level
        first = operator_table.PAGE_LEVEL_ERRATA.get(op.name, (op.feature_level,))[0]
        oldest = min(featurelevels.key(op.feature_level), featurelevels.key(first))
        assert all(featurelevels.key(t.level) >= oldest for t in op.support), op.name


@pytest.mark.parametrize(
    ("model", "oldest"),
    [
        ("hardmax1", "5_1"),
        ("log_softmax1", "5_1"),
        ("argmax", "3_0"),
        ("argmin", "3_0"),
        ("reduce", "3_0"),  # 2-D tensors: REDUCE itself is 1_0, with 4 dimensions only
        ("one_hot", "3_0"),
        ("mean_variance_normalization", "1_0"),
        ("strided_views", "5_1"),
    ],
)
def test_seed_models_run_from_their_oldest_level(model: str, oldest: str) -> None:
    path = str(Path("models") / f"{model}.json")
    status, _, err = run_cli("check", path, "--ep", "cpu", "--feature-level", oldest)
    assert status == 0, err
    if oldest == "1_0":
        return
    older = list(featurelevels.LEVELS)[list(featurelevels.LEVELS).index(oldest) - 1]
    status, _, err = run_cli("run", path, "--feature-level", older)
    assert status == 2 and "feature level" in err and len(err.strip().splitlines()) == 1, err


def test_bad_feature_level_on_the_command_line(tmp_path: Path) -> None:
    (tmp_path / "m.json").write_text(json.dumps({"resources": {}, "dispatchables": {}, "commands": []}))
    status, _, err = run_cli("run", str(tmp_path / "m.json"), "--feature-level", "9_9")
    levels = "1_0, 2_0, 2_1, 3_0, 3_1, 4_0, 4_1, 5_0, 5_1, 5_2, 6_0, 6_1, 6_2, 6_3, 6_4"
    assert status == 2 and err.strip().splitlines()[-1].endswith(f"must be one of {levels}, got '9_9'")
