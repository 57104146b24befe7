"""Where a graph's time goes on the GPU: the CUDA kernels that one run launches, with their device
time, recorded by PyTorch's profiler (CUPTI sees every kernel of the process, ONNX Runtime's too).
Only on the GPU machine, where PyTorch is installed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def breakdown(run: Callable[[], None], repeat: int = 5, top: int = 10) -> list[dict[str, Any]]:
    """The `top` kernels by device time per run of `run` (which must synchronize): name, microseconds
    per run, launches per run. The whole run's kernel time is the sum over every kernel."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    run()  # warm: no first-run allocations in the record
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(repeat):
            run()
        torch.cuda.synchronize()
    rows = []
    for event in prof.key_averages():
        device_us = getattr(event, "device_time_total", None)
        if device_us is None:
            device_us = getattr(event, "cuda_time_total", 0)
        if device_us <= 0:
            continue
        rows.append({"kernel": event.key[:120], "us": device_us / repeat, "launches": event.count / repeat})
    rows.sort(key=lambda r: -r["us"])
    total = sum(r["us"] for r in rows)
    return [{"kernel": "(all kernels)", "us": total, "launches": sum(r["launches"] for r in rows)}, *rows[:top]]
