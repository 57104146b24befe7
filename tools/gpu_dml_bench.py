"""Times the `dml` target on ONNX Runtime's DirectML EP under Wine beside the CUDA and CPU EPs, in
one process (run on the GPU machine by tools/gpu-dml.sh; runs anywhere the Wine host is set up).

The Wine host has no device-bound I/O, so every DirectML EP time here is end to end: the inputs
through a pipe into the Wine process, upload, the graph, readback, the output back through the
pipe. The CUDA and CPU EPs are timed the same way (numpy in, numpy out, `session.run`), and the
CUDA EP also with io binding (inputs and output resident on the GPU), for scale. DirectML's own
API (dml_exec, the desc itself) is timed end to end too, with the execute time the host measures
around the command list (ExecuteCommandLists to the fence).

Each EP runs the lowering dml2onnx picks for it: target `dml` on the DirectML EP, `cuda` on the
CUDA EP, `cpu` on the CPU EP. Outputs are compared with the CPU EP's.

    python3 tools/gpu_dml_bench.py [--quick] [-i N] > results.json
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from dml2onnx import lowering  # noqa: E402
from dml2onnx.backends import dmlapi, runtime, winhost  # noqa: E402
from dml2onnx.commands import bench  # noqa: E402
from dml2onnx.core.desc import OperatorDesc, parse_operator_desc  # noqa: E402


def t(dtype: str, sizes: list[int]) -> dict[str, Any]:
    return {"DataType": dtype, "Sizes": sizes}


def desc(op: str, fields: dict[str, Any]) -> OperatorDesc:
    d = parse_operator_desc(op, fields, ("desc",), ("type",))
    lowering.validate(d)
    return d


def cases(quick: bool, with_mvn: bool = False) -> list[tuple[str, OperatorDesc, dict[str, np.ndarray]]]:
    rng = np.random.default_rng(0)
    out = []
    shapes = {"1M": [1024, 1024], "16M": [4096, 4096]}
    for label, shape in shapes.items():
        if quick and label != "1M":
            continue
        x = rng.standard_normal(shape).astype(np.float32)
        f = {"InputTensor": t("FLOAT32", shape), "OutputTensor": t("FLOAT32", shape), "AxisCount": 1, "Axes": [1]}
        out.append((f"LOG_SOFTMAX1 rows {label}", desc("ACTIVATION_LOG_SOFTMAX1", f), {"InputTensor": x}))
        out.append((f"HARDMAX1 rows {label}", desc("ACTIVATION_HARDMAX1", f), {"InputTensor": x}))
        fa = {
            "InputTensor": t("FLOAT32", shape),
            "OutputTensor": t("UINT32", [shape[0], 1]),
            "AxisCount": 1,
            "Axes": [1],
            "AxisDirection": "DML_AXIS_DIRECTION_INCREASING",
        }
        out.append((f"ARGMAX rows {label}", desc("ARGMAX", fa), {"InputTensor": x}))
        depth = 256
        rows = int(np.prod(shape)) // depth
        idx = rng.integers(0, depth, size=[rows, 1]).astype(np.int32)
        fo = {
            "IndicesTensor": t("INT32", [rows, 1]),
            "ValuesTensor": t("FLOAT32", [1, 2]),
            "OutputTensor": t("FLOAT32", [rows, depth]),
            "Axis": 1,
        }
        out.append(
            (
                f"ONE_HOT depth {depth} {label}",
                desc("ONE_HOT", fo),
                {"IndicesTensor": idx, "ValuesTensor": np.array([[0, 1]], np.float32)},
            )
        )
        if not with_mvn:  # MVN hung the DirectML hosts on the H100 (no answer in 150 s): opt in
            continue
        mshape = [16, 4, 128, 128] if label == "1M" else [64, 16, 128, 128]
        fm = {
            "InputTensor": t("FLOAT32", mshape),
            "OutputTensor": t("FLOAT32", mshape),
            "CrossChannel": False,
            "NormalizeVariance": True,
            "Epsilon": 1e-5,
        }
        out.append(
            (
                f"MVN per-channel {label}",
                desc("MEAN_VARIANCE_NORMALIZATION", fm),
                {"InputTensor": rng.standard_normal(mshape).astype(np.float32)},
            )
        )
    return out


def timed(fn: Callable[[], Any], iterations: int, warmup: int = 2) -> tuple[dict[str, float], Any]:
    result = None
    for _ in range(warmup):
        result = fn()
    samples = []
    for _ in range(iterations):
        start = time.perf_counter()
        result = fn()
        samples.append((time.perf_counter() - start) * 1e3)
    return {"median_ms": statistics.median(samples), "min_ms": min(samples), "iterations": iterations}, result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("-i", "--iterations", type=int, default=10)
    parser.add_argument("--mvn", action="store_true", help="also MVN (hung DirectML on the H100 under vkd3d)")
    args = parser.parse_args()
    rt = runtime.ort()
    eps = [ep for ep in ("dml", "cuda", "cpu") if ep in runtime.available()]
    info: dict[str, Any] = {
        "machine": platform.node(),
        "onnxruntime_python": rt.__version__,
        "providers": rt.get_available_providers(),
        "eps": eps,
        "timing": "end to end (numpy in, numpy out) unless the key says bound",
    }
    log = sys.stderr
    if "dml" in eps:
        start = time.perf_counter()
        h = winhost.host()
        info["dml_host"] = {"onnxruntime_dll": h.version, "mode": h.ep, "start_s": round(time.perf_counter() - start, 2)}
    try:
        d = dmlapi.host()
        info["directml_api"] = {"adapter": d.device.adapter, "max_feature_level": d.device.max_feature_level}
    except Exception as e:
        info["directml_api"] = {"error": str(e)}
    print(f"info: {json.dumps(info)}", file=log, flush=True)
    rows = []
    for name, dsc, feeds in cases(args.quick, args.mvn):
        out_t = dsc.tensor("OutputTensor")
        nbytes = sum(a.nbytes for a in feeds.values()) + out_t.element_count * out_t.data_type.size
        row: dict[str, Any] = {"case": name, "bytes": nbytes}
        ref = None
        for ep, target in (("cpu", "cpu"), ("cuda", "cuda"), ("dml", "dml")):
            if ep not in eps:
                continue
            key = f"{ep}_ep"
            try:
                model = lowering.lower(dsc, name.split()[0].lower(), target=target)
                start = time.perf_counter()
                s = runtime.create(model, name.split()[0].lower(), ep)
                load_ms = (time.perf_counter() - start) * 1e3
                timing, got = timed(lambda s=s, feeds=feeds: s.run(feeds), args.iterations)
                timing["load_ms"] = load_ms
                timing["target"] = target
                if ref is None:
                    ref = got
                else:
                    timing["max_abs_vs_cpu"] = float(np.max(np.abs(got.astype(np.float64) - ref.astype(np.float64))))
                row[key] = timing
                if ep == "cuda":
                    bound = bench.Bound(s, feeds, bench.graph_outputs(dsc))
                    bt = bound.time(args.iterations * 2)
                    row["cuda_ep_bound"] = {"median_ms": bt.median_ms, "min_ms": bt.min_ms, "iterations": bt.iterations}
                del s
            except Exception as e:
                row[key] = {"error": str(e).splitlines()[0][:400], "target": target}
        try:
            stats: list[dict[str, float]] = []

            def api(dsc: Any = dsc, feeds: Any = feeds, name: str = name, stats: list[Any] = stats) -> Any:
                r = dmlapi.execute(dsc, feeds, name=name.split()[0].lower())
                stats.append(r.stats)
                return r.output

            timing, got = timed(api, args.iterations)
            timing["execute_ms_median"] = statistics.median(s["execute_ms"] for s in stats[-args.iterations :])
            if ref is not None:
                timing["max_abs_vs_cpu"] = float(np.max(np.abs(got.astype(np.float64) - ref.astype(np.float64))))
            row["directml_api"] = timing
        except Exception as e:
            row["directml_api"] = {"error": str(e).splitlines()[0][:400]}
        print(json.dumps(row), file=log, flush=True)
        rows.append(row)
    json.dump({"info": info, "cases": rows}, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    try:
        main()
    except Exception:
        traceback.print_exc()
        sys.exit(1)
