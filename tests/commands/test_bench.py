"""`dml2onnx bench` on the CPU EP: DxDispatch-style lines, JSON, and sane figures."""

from __future__ import annotations

import json
import re
from pathlib import Path

from dml2onnx.formats import dxdispatch
from dml2onnx.lowering import choices
from support import make_desc, run_cli, tensor

MODELS = Path(__file__).resolve().parents[2] / "models"


def test_bench_text_lines() -> None:
    status, out, err = run_cli("bench", str(MODELS / "argmax.json"), "--ep", "cpu", "-i", "5")
    assert status == 0, err
    lines = out.splitlines()
    assert len(lines) == 3
    pattern = (
        r"^Dispatch 'argmax_\w+': 5 iterations, [\d.]+ ms median, [\d.]+ ms min, [\d.]+ GB/s \([\d.]+% of the \d+ GB/s copy\)"
    )
    assert all(re.match(pattern, line) for line in lines), lines
    assert "measuring the copy bandwidth" in err and "(3/3)" in err  # progress on stderr


def test_bench_json() -> None:
    status, out, _ = run_cli("bench", str(MODELS / "one_hot.json"), "--ep", "cpu", "-i", "3", "--json")
    assert status == 0
    result = json.loads(out)
    assert result["ep"] == "CPUExecutionProvider" and result["copy_gb_per_s"] > 0
    rows = result["dispatchables"]
    assert [r["dispatchable"] for r in rows] == [
        "one_hot_rows",
        "one_hot_columns",
        "one_hot_on_off_values",
        "one_hot_negative_and_out_of_range",
    ]
    model = dxdispatch.load(MODELS / "one_hot.json")
    for r in rows:
        desc = model.dispatchables[r["dispatchable"]].desc
        once = sum(
            desc.tensor(f).element_count * desc.tensor(f).data_type.size
            for f in ("IndicesTensor", "ValuesTensor", "OutputTensor")
        )
        assert r["iterations"] == 3 and 0 < r["min_ms"] <= r["median_ms"]
        assert r["bytes"] == once  # every input and the output, each once
        assert r["nodes_off_ep"] == [] and r["lowering"] == "one_hot"


def test_bench_binds_every_output() -> None:
    """MAX_POOLING1 with OutputIndicesTensor: both outputs are bound on the device and counted."""
    status, out, err = run_cli("bench", str(MODELS / "pooling.json"), "--ep", "cpu", "-i", "2", "--json")
    assert status == 0, err
    row = next(r for r in json.loads(out)["dispatchables"] if r["dispatchable"] == "max_pool")
    assert row["bytes"] == 8 * 4 + 4 * 4 + 4 * 4  # the input, the values and the UINT32 indices


def test_bench_rejects_zero_iterations() -> None:
    status, _, err = run_cli("bench", str(MODELS / "argmax.json"), "--ep", "cpu", "-i", "0")
    assert status == 2 and "--iterations" in err


def test_choice_rule_picks_measured_winners() -> None:
    def choose(op: str, fields: dict, target: str = "cuda") -> str:
        return choices.choose(make_desc(op, fields), target, 17)

    def argmax_fields(sizes: list[int], axes: list[int]) -> dict:
        out = [1 if i in axes else s for i, s in enumerate(sizes)]
        fields = {"InputTensor": tensor("FLOAT32", sizes), "OutputTensor": tensor("INT64", out)}
        return fields | {"AxisCount": len(axes), "Axes": axes, "AxisDirection": "INCREASING"}

    def softmax(sizes: list[int], axes: list[int], dtype: str = "FLOAT32") -> dict:
        return {"InputTensor": tensor(dtype, sizes), "OutputTensor": tensor(dtype, sizes), "AxisCount": len(axes), "Axes": axes}

    # rows of more than 1024: the CUDA EP's LogSoftmax is exact alone (targets.cuda_warp_softmax)
    assert choose("ACTIVATION_LOG_SOFTMAX1", softmax([4096, 16384], [1])) == "in_place"
    assert choose("ACTIVATION_LOG_SOFTMAX1", softmax([4096, 16384], [0])) == "in_place"
    assert choose("ACTIVATION_LOG_SOFTMAX1", softmax([4096, 16384], [0], "FLOAT16")) == "in_place"
    assert choose("ACTIVATION_LOG_SOFTMAX1", softmax([64, 4096, 256], [1])) == "in_place"
    assert choose("ACTIVATION_LOG_SOFTMAX1", softmax([256, 1024, 256], [2, 0])) == "in_place"
    # rows of 1024 (or any row on `portable`, whose graphs DirectML runs too): the max goes first
    assert choose("ACTIVATION_LOG_SOFTMAX1", softmax([65536, 1024], [1])) == "argmax_max"
    assert choose("ACTIVATION_LOG_SOFTMAX1", softmax([4096, 16384], [1]), "portable") == "argmax_max"
    assert choose("ACTIVATION_LOG_SOFTMAX1", softmax([1024, 65536], [0])) == "reduce_chain"
    assert choose("ACTIVATION_LOG_SOFTMAX1", softmax([4096, 16384], [0]), "portable") == "reduce_chain"
    assert choose("ACTIVATION_LOG_SOFTMAX1", softmax([256, 1024, 256], [2, 0]), "portable") == "reduce_chain"
    assert choose("ACTIVATION_LOG_SOFTMAX1", softmax([4096, 16384], [0, 1])) == "reduce_chain"  # one long row
    # a few long rows: the one-step chain is slow, the chunked one is not; beyond 64 rows the
    # EP's kernel (a block per row) is faster
    assert choose("ACTIVATION_LOG_SOFTMAX1", softmax([16, 2**22], [1])) == "chunked_chain"
    assert choose("ACTIVATION_LOG_SOFTMAX1", softmax([4, 2**24], [1], "FLOAT16"), "portable") == "chunked_chain"
    assert choose("ACTIVATION_LOG_SOFTMAX1", softmax([4, 2**19], [1])) == "in_place"  # short enough
    assert choose("ACTIVATION_LOG_SOFTMAX1", softmax([64, 2**20], [1])) == "chunked_chain"
    assert choose("ACTIVATION_LOG_SOFTMAX1", softmax([128, 2**20], [1])) == "in_place"
    assert choose("ACTIVATION_LOG_SOFTMAX1", softmax([256, 2**18], [1])) == "in_place"
    assert choose("ACTIVATION_LOG_SOFTMAX1", softmax([4, 1048573], [1])) == "in_place"  # a prime: no chunks
    # ArgMax over one long row: per chunk first
    assert choose("ARGMAX", argmax_fields([4096, 16384], [0, 1])) == "two_stage"
    assert choose("ACTIVATION_HARDMAX1", softmax([4096, 16384], [0, 1])) == "two_stage"
    assert choose("ARGMAX", argmax_fields([16, 2**22], [1])) == "in_place"
    # axes in two runs, the last innermost: ArgMax over it in place first, no Transpose of the input
    assert choose("ACTIVATION_HARDMAX1", softmax([256, 1024, 256], [2, 0])) == "inner_first"
    assert choose("ARGMAX", argmax_fields([256, 1024, 256], [2, 0])) == "inner_first"
    assert choose("ARGMIN", argmax_fields([256, 1024, 256], [0, 2]) | {"AxisDirection": "DECREASING"}) == "inner_first"
    # ... but not on rows shorter than 128, which the EP's ArgMax scans with one thread each
    assert choose("ARGMAX", argmax_fields([256, 4096, 64], [2, 0])) == "in_place"
    # (Hardmax1 there: the Transpose + ArgMax, then its one-hot along the last reduced axis in place)
    assert choose("ACTIVATION_HARDMAX1", softmax([256, 4096, 64], [2, 0])) == "in_place"
    assert choose("ACTIVATION_HARDMAX1", softmax([256, 4096, 63], [2, 0])) == "one_hot_product"
    # the last run not innermost: the axes moved last for the ArgMax, and the one-hot along the last
    # reduced axis in place; where that axis is short, a one-hot per run, multiplied in place
    assert choose("ACTIVATION_HARDMAX1", softmax([64, 1024, 256, 4], [2, 0])) == "last_axis"
    assert choose("ACTIVATION_HARDMAX1", softmax([256, 1024, 32, 3], [2, 0])) == "one_hot_product"
    int64 = argmax_fields([4096, 16384], [1])
    int64["InputTensor"]["DataType"] = "INT64"
    assert choose("ARGMAX", int64, "portable") == "two_stage"  # the digit-by-digit ranking, on shorter rows
    assert choose("ARGMAX", int64) == "in_place"  # ranked from a DOUBLE ArgMax: one pass is as fast
    assert choose("ARGMAX", int64 | {"AxisDirection": "DECREASING"}) == "two_stage"  # only one chunk reversed
    int64_leading = argmax_fields([4096, 16384], [0])
    int64_leading["InputTensor"]["DataType"] = "INT64"
    assert choose("ARGMAX", int64_leading) == "last_axis"  # measured over trailing axes only
    # the last maximum without select_last_index: only the chosen chunk is reversed
    last = argmax_fields([4096, 16384], [1]) | {"AxisDirection": "DECREASING"}
    assert choose("ARGMAX", last) == "two_stage"
    assert choose("ARGMIN", argmax_fields([4, 64, 1024], [1, 2]) | {"AxisDirection": "DECREASING"}) == "two_stage"
    assert choose("ARGMAX", argmax_fields([4096, 16384], [0]) | {"AxisDirection": "DECREASING"}) == "last_axis"
    assert choose("ARGMAX", argmax_fields([16384, 1024], [1]) | {"AxisDirection": "DECREASING"}) == "in_place"
    assert choose("ARGMAX", last, "dml") == "in_place"  # DirectML has select_last_index
    assert choose("ACTIVATION_LOG_SOFTMAX1", softmax([4096, 16384], [1]), "cpu") == "in_place"  # not measured there
    mvn = {
        "InputTensor": tensor("FLOAT32", [2, 3, 4, 5]),
        "OutputTensor": tensor("FLOAT32", [2, 3, 4, 5]),
        "CrossChannel": False,
        "NormalizeVariance": True,
        "Epsilon": 1e-5,
    }
    assert choose("MEAN_VARIANCE_NORMALIZATION", mvn) == "layer_norm"
    assert choose("MEAN_VARIANCE_NORMALIZATION", mvn | {"CrossChannel": True}) == "reduce_chain"
    argmax = {
        "InputTensor": tensor("FLOAT32", [8, 4]),
        "OutputTensor": tensor("INT64", [1, 4]),
        "AxisCount": 1,
        "Axes": [0],
        "AxisDirection": "DECREASING",
    }
    assert choose("ARGMAX", argmax) == "last_axis"
    assert choose("ARGMAX", argmax | {"AxisDirection": "INCREASING"}) == "last_axis"
    assert choose("ARGMIN", argmax) == "last_axis"
    trailing = argmax | {"Axes": [1], "OutputTensor": tensor("INT64", [8, 1])}
    assert choose("ARGMAX", trailing) == "in_place"
    assert choose("ACTIVATION_HARDMAX1", softmax([64, 4096, 256], [1])) == "last_axis"
    assert choose("ACTIVATION_HARDMAX1", softmax([64, 4096, 256], [2])) == "in_place"
