"""What ONNX MaxPool does with NaN and -inf on an EP (the pooling lowering's floor: DirectML starts
a max window at the lowest finite value and skips NaN): `python3 tools/gpu_pool_semantics.py [EP]`."""

from __future__ import annotations

import sys

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper


def maxpool(ep: str, x: np.ndarray, pads: list[int]) -> np.ndarray:
    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[1, 2], strides=[1, 2], pads=pads)
    graph = helper.make_graph(
        [node], "p", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    so = ort.SessionOptions()
    if ep != "CPUExecutionProvider":
        so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    return ort.InferenceSession(model.SerializeToString(), so, providers=[ep]).run(None, {"x": x})[0]


if __name__ == "__main__":
    ep = sys.argv[1] if len(sys.argv) > 1 else "CPUExecutionProvider"
    nan, inf = np.nan, np.inf
    x = np.array([[[[nan, 1, 2, nan, nan, nan, -inf, -inf, -inf, 3, nan, -inf]]]], np.float32)
    print(ep, "windows [nan 1] [2 nan] [nan nan] [-inf -inf] [-inf 3] [nan -inf]:", maxpool(ep, x, [0, 0, 0, 0]).ravel())
    y = np.array([[[[-inf, -inf, -inf]]]], np.float32)
    print(ep, "[-inf -inf] [-inf pad]:", maxpool(ep, y, [0, 0, 0, 1]).ravel())
