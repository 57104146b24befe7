"""The corpus of real networks whose DirectML graphs the tests capture (tests/commands/test_capture.py).

- The architectures the onnx wheel ships as onnx/backend/test/data/light/*.onnx (AlexNet,
  DenseNet-121, Inception v1 and v2, ResNet-50, ShuffleNet, SqueezeNet, VGG-19, ZFNet-512): their
  weights are ConstantOfShape nodes there; here each becomes an initializer drawn from a seed
  (He-scaled convolution and linear weights, batch norm statistics near 1), so the activations
  stay in range through every layer.
- Networks exported once by PyTorch (tools/make_networks.py, dml2onnx/cases/corpus/*.onnx): transformer
  encoder and causal decoder blocks with attention masks, a diffusion UNet up block (GroupNorm,
  SiLU, attention, bilinear Resize), a YOLO-style detection head, LSTM and GRU, FLOAT16 variants.
- A QDQ-quantized CNN: dml2onnx/cases/corpus/convnet.onnx through ONNX Runtime's static quantizer.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

EXPORTED = Path(__file__).parent / "corpus"
LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
LIGHT_NAMES = (
    "bvlc_alexnet",
    "densenet121",
    "inception_v1",
    "inception_v2",
    "resnet50",
    "shufflenet",
    "squeezenet",
    "vgg19",
    "zfnet512",
)
EXPORTED_NAMES = (
    "bert_encoder",
    "bert_encoder_fp16",
    "gpt2_decoder",
    "unet_up_block",
    "detection_head",
    "lstm_gru",
    "convnet_fp16",
)
NAMES = (*LIGHT_NAMES, *EXPORTED_NAMES, "convnet_qdq")


def light_with_weights(name: str, target: Path, seed: int = 0) -> Path:
    """The light model `name` with its ConstantOfShape weights as seeded initializers."""
    model = onnx.load(str(LIGHT / f"light_{name}.onnx"))
    rng = np.random.default_rng(seed)
    shapes = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    nodes, weights = [], []
    for node in model.graph.node:
        if node.op_type != "ConstantOfShape" or node.input[0] not in shapes:
            nodes.append(node)
            continue
        shape = [int(d) for d in shapes[node.input[0]]]
        weights.append(numpy_helper.from_array(_weight(node.output[0], shape, rng), node.output[0]))
    used = {v for n in nodes for v in n.input}
    kept = [t for t in model.graph.initializer if t.name in used]
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    del model.graph.initializer[:]
    model.graph.initializer.extend(kept + weights)
    inputs = [vi for vi in model.graph.input if vi.name not in shapes]
    del model.graph.input[:]
    model.graph.input.extend(inputs)
    model.ir_version = max(model.ir_version, 7)  # initializers need not be graph inputs
    onnx.checker.check_model(model)
    path = target / f"{name}.onnx"
    onnx.save(model, str(path))
    return path


def _weight(name: str, shape: list[int], rng: np.random.Generator) -> np.ndarray:
    low = name.lower()
    if len(shape) > 1:  # convolution and linear weights: He scaling by the fan-in
        return rng.normal(0, np.sqrt(2.0 / int(np.prod(shape[1:]))), shape).astype(np.float32)
    if "var" in low or "_riv" in low:  # batch norm variances
        return rng.uniform(0.5, 1.5, shape).astype(np.float32)
    if low.endswith(("_s_0", "_w_0")) or "scale" in low:  # batch norm scales
        return rng.uniform(0.8, 1.2, shape).astype(np.float32)
    return rng.normal(0, 0.1, shape).astype(np.float32)  # biases and means


def quantized(target: Path) -> Path:
    """dml2onnx/cases/corpus/convnet.onnx quantized statically (QDQ, UINT8 activations, INT8 weights).
    Biases stay FLOAT32: with ONNX Runtime's INT32-quantized biases (its default) the DirectML EP
    fails the session itself (AbiCustomRegistry.cpp, E_INVALIDARG: onnxruntime-directml 1.24.4)."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            rng = np.random.default_rng(1)
            self.items: Iterator[dict[str, np.ndarray]] = iter(
                [{"image": rng.standard_normal((1, 3, 16, 16)).astype(np.float32)} for _ in range(8)]
            )

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.items, None)

    path = target / "convnet_qdq.onnx"
    quantize_static(
        str(EXPORTED / "convnet.onnx"),
        str(path),
        Reader(),
        quant_format=QuantFormat.QDQ,
        activation_type=QuantType.QUInt8,
        weight_type=QuantType.QInt8,
        extra_options={"QuantizeBias": False},
    )
    return path


def network(name: str, target: Path) -> Path:
    """The model file of a corpus network (made under `target` where it is made)."""
    os.makedirs(target, exist_ok=True)
    if name in LIGHT_NAMES:
        return light_with_weights(name, target)
    if name == "convnet_qdq":
        return quantized(target)
    return EXPORTED / f"{name}.onnx"
