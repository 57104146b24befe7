"""Exports the small real networks of dml2onnx/cases/corpus/ (run once, with PyTorch and transformers;
neither is a dependency of dml2onnx):

    python -m venv /tmp/torchenv && /tmp/torchenv/bin/pip install torch==2.13.0 transformers onnx onnxscript
    /tmp/torchenv/bin/python tools/make_networks.py dml2onnx/cases/corpus
    /tmp/torchenv/bin/python tools/make_networks.py --larger DIR   # bench only, not committed: see below

Each network is exported by PyTorch's TorchScript exporter (opset 17) with static shapes and
weights from a fixed seed: the graphs ONNX Runtime's DirectML EP gets are then what real exports
give it (attention masks, GroupNorm, Resize, LSTM/GRU, FLOAT16). The architectures the onnx wheel
ships as onnx/backend/test/data/light/*.onnx get their weights at test time instead
(dml2onnx/cases/corpus.py); the QDQ-quantized network is made there too, by ONNX Runtime's quantizer.

`--larger` exports the same architectures at sizes where the GPU's work, not its kernel launches,
takes the time (BERT and GPT-2 4 layers 256 wide at batch 16 x 256 tokens, the UNet block 64 channels at
batch 16 x 32 x 32, the detection head at batch 32 x 256 x 256, the FLOAT16 CNN at batch 32 x 64 x 64), for
`tools/gpu_corpus.py bench`: tens of MB, so they are made where they are timed and not committed (PyTorch is
on the GPU machine: `python3 tools/make_networks.py --larger $OUT` there).
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from torch import nn

OPSET = 17


def export(model: nn.Module, args: tuple[torch.Tensor, ...], names: list[str], outputs: list[str], path: Path) -> None:
    model.eval()
    with torch.no_grad():
        torch.onnx.export(
            model,
            args,
            str(path),
            input_names=names,
            output_names=outputs,
            opset_version=OPSET,
            dynamo=False,
            do_constant_folding=True,
        )
    print(f"{path}: {path.stat().st_size} bytes")


class Encoder(nn.Module):
    """A BERT encoder (2 layers, 64 wide) with its padding mask."""

    def __init__(self, layers: int = 2, width: int = 64, positions: int = 64) -> None:
        super().__init__()
        from transformers import BertConfig, BertModel

        config = BertConfig(
            vocab_size=100,
            hidden_size=width,
            num_hidden_layers=layers,
            num_attention_heads=4,
            intermediate_size=2 * width,
            max_position_embeddings=positions,
            attn_implementation="eager",
        )
        self.bert = BertModel(config, add_pooling_layer=False)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.bert(input_ids=ids, attention_mask=mask).last_hidden_state


class Decoder(nn.Module):
    """A GPT-2 decoder (2 layers, 64 wide): causal attention and a padding mask."""

    def __init__(self, layers: int = 2, width: int = 64, positions: int = 64) -> None:
        super().__init__()
        from transformers import GPT2Config, GPT2Model

        config = GPT2Config(
            vocab_size=100, n_embd=width, n_layer=layers, n_head=4, n_positions=positions, attn_implementation="eager"
        )
        self.gpt2 = GPT2Model(config)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.gpt2(input_ids=ids, attention_mask=mask, use_cache=False).last_hidden_state


class UNetBlock(nn.Module):
    """A diffusion UNet's up block: two ResNet blocks with GroupNorm, SiLU and a time embedding,
    a spatial self-attention, then a bilinear 2x Resize and a convolution."""

    def __init__(self, c: int = 32) -> None:
        super().__init__()
        self.norm1, self.conv1 = nn.GroupNorm(8, c), nn.Conv2d(c, c, 3, padding=1)
        self.time = nn.Linear(16, c)
        self.norm2, self.conv2 = nn.GroupNorm(8, c), nn.Conv2d(c, c, 3, padding=1)
        self.norm3 = nn.GroupNorm(8, c)
        self.heads, self.qkv, self.proj = 4, nn.Linear(c, 3 * c), nn.Linear(c, c)
        self.up = nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        h = self.conv1(nn.functional.silu(self.norm1(x)))
        h = h + self.time(nn.functional.silu(t))[:, :, None, None]
        h = self.conv2(nn.functional.silu(self.norm2(h)))
        x = x + h
        n, c, hh, ww = x.shape
        s = self.norm3(x).reshape(n, c, hh * ww).transpose(1, 2)
        q, k, v = (t.reshape(n, hh * ww, self.heads, c // self.heads).transpose(1, 2) for t in self.qkv(s).chunk(3, -1))
        weights = torch.softmax(q @ k.transpose(-1, -2) / (c // self.heads) ** 0.5, -1)
        a = self.proj((weights @ v).transpose(1, 2).reshape(n, hh * ww, c))
        x = x + a.transpose(1, 2).reshape(n, c, hh, ww)
        x = nn.functional.interpolate(x, scale_factor=2.0, mode="bilinear", align_corners=False)
        return self.up(x)


class DetectionHead(nn.Module):
    """A YOLO-style detector: a small backbone, two scales of anchors, boxes decoded on a grid
    (sigmoid, exp, grid offsets) and concatenated."""

    def __init__(self, classes: int = 3, anchors: int = 2) -> None:
        super().__init__()
        self.a, self.k = anchors, classes + 5
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.BatchNorm2d(16), nn.LeakyReLU(0.1))
        self.down = nn.Sequential(nn.Conv2d(16, 32, 3, 2, 1), nn.BatchNorm2d(32), nn.LeakyReLU(0.1), nn.MaxPool2d(2))
        self.head1 = nn.Conv2d(16, anchors * self.k, 1)
        self.head2 = nn.Conv2d(32, anchors * self.k, 1)
        self.register_buffer("sizes", torch.tensor([[10.0, 13.0], [33.0, 23.0]]))

    def decode(self, p: torch.Tensor, stride: float) -> torch.Tensor:
        n, _, h, w = p.shape
        p = p.reshape(n, self.a, self.k, h, w).permute(0, 1, 3, 4, 2)
        ys, xs = torch.meshgrid(torch.arange(h, dtype=torch.float32), torch.arange(w, dtype=torch.float32), indexing="ij")
        grid = torch.stack((xs, ys), -1)[None, None]
        xy = (p[..., 0:2].sigmoid() + grid) * stride
        wh = p[..., 2:4].exp() * self.sizes[None, :, None, None, :]
        rest = p[..., 4:].sigmoid()
        return torch.cat((xy, wh, rest), -1).reshape(n, -1, self.k)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = self.stem(x)
        b = self.down(a)
        return torch.cat((self.decode(self.head1(a), 2.0), self.decode(self.head2(b), 8.0)), 1)


class Recurrent(nn.Module):
    """An LSTM then a GRU over a sequence, and a linear read-out."""

    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(8, 16, batch_first=True)
        self.gru = nn.GRU(16, 12, batch_first=True, bidirectional=True)
        self.out = nn.Linear(24, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h, _ = self.lstm(x)
        h, _ = self.gru(torch.tanh(h))
        return self.out(h)


class ConvNet(nn.Module):
    """A small CNN (conv, batch norm, ReLU, pooling, a linear layer): in FLOAT16, and in FLOAT32
    the network dml2onnx/cases/corpus.py quantizes (QDQ)."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1),
            nn.BatchNorm2d(32),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Linear(32, 10),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.body(x), -1)


def main(folder: str) -> None:
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    ids = torch.randint(0, 100, (1, 16))
    mask = torch.ones(1, 16, dtype=torch.int64)
    mask[0, 12:] = 0
    export(Encoder(), (ids, mask), ["input_ids", "attention_mask"], ["hidden"], out / "bert_encoder.onnx")
    export(Decoder(), (ids, mask), ["input_ids", "attention_mask"], ["hidden"], out / "gpt2_decoder.onnx")
    x, t = torch.randn(1, 32, 8, 8), torch.randn(1, 16)
    export(UNetBlock(), (x, t), ["sample", "time_embedding"], ["upsampled"], out / "unet_up_block.onnx")
    export(DetectionHead(), (torch.randn(1, 3, 32, 32),), ["image"], ["boxes"], out / "detection_head.onnx")
    export(Recurrent(), (torch.randn(2, 6, 8),), ["sequence"], ["scores"], out / "lstm_gru.onnx")
    export(ConvNet(), (torch.randn(1, 3, 16, 16),), ["image"], ["probabilities"], out / "convnet.onnx")
    export(ConvNet().half(), (torch.randn(1, 3, 16, 16).half(),), ["image"], ["probabilities"], out / "convnet_fp16.onnx")
    export(Encoder().half(), (ids, mask), ["input_ids", "attention_mask"], ["hidden"], out / "bert_encoder_fp16.onnx")


def larger(folder: str) -> None:
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    ids = torch.randint(0, 100, (16, 256))
    mask = torch.ones(16, 256, dtype=torch.int64)
    mask[:, 200:] = 0
    export(Encoder(4, 256, 256), (ids, mask), ["input_ids", "attention_mask"], ["hidden"], out / "bert_b16s256.onnx")
    export(Decoder(4, 256, 256), (ids, mask), ["input_ids", "attention_mask"], ["hidden"], out / "gpt2_b16s256.onnx")
    x, t = torch.randn(16, 64, 32, 32), torch.randn(16, 16)
    export(UNetBlock(64), (x, t), ["sample", "time_embedding"], ["upsampled"], out / "unet_up_block_b16.onnx")
    export(DetectionHead(), (torch.randn(32, 3, 256, 256),), ["image"], ["boxes"], out / "detection_head_b32.onnx")
    export(ConvNet().half(), (torch.randn(32, 3, 64, 64).half(),), ["image"], ["probabilities"], out / "convnet_fp16_b32.onnx")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--larger"]:
        larger(sys.argv[2])
    else:
        main(sys.argv[1] if len(sys.argv) > 1 else "dml2onnx/cases/corpus")
