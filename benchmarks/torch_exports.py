"""Real PyTorch exports through the ONNX front end: the node chains ``torch.onnx.export`` writes
(TorchScript and dynamo exporters, opsets 17 and 18) for four modules written as their model
families write them, imported and compared with the module's own output.

- ``llama``: ``LlamaRMSNorm`` (``x.pow(2).mean``, ``rsqrt``), q/k/v/o without bias, rotary
  embedding at static positions (``rotate_half`` by slicing, ``cat``), grouped-query attention
  (``repeat_kv``: ``[:, :, None].expand(...).reshape``), ``scaled_dot_product_attention(is_causal=True)``
  on 4-D tensors, SwiGLU;
- ``gpt2``: LayerNorm, one fused qkv Linear ``split`` into q, k, v, causal SDPA, GELU (erf);
- ``cnn``: Conv-BN-ReLU stem with stride 2, max pool, a depthwise conv, a ResNet basic block
  (BatchNorm in eval mode), adaptive average pool, flatten, Linear;
- ``mlp``: Linear-ReLU-Linear on 2-D input.

torch is not a dependency of dfopt (``pip install dfopt[torch]``; the dynamo exporter also needs
``onnxscript``); no test needs this script. Usage::

    python benchmarks/torch_exports.py

Results: ``benchmarks/results/torch-exports.json`` (per module, exporter and opset: the op kinds
imported and the max abs error against the module, or the export's or the import's error);
summarised in docs/onnx.md.
"""

from __future__ import annotations

import collections
import datetime
import inspect
import json
import os
import platform
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from dfopt.frontend import import_onnx
from dfopt.reference import evaluate

OUT = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "torch-exports.json"


class RMSNorm(nn.Module):
    """``LlamaRMSNorm``."""

    def __init__(self, n: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n) + 0.1 * torch.randn(n))
        self.eps = eps

    def forward(self, x):
        var = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(var + self.eps))


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class Llama(nn.Module):
    """A Llama decoder layer: RMSNorm, rotary q/k, grouped-query causal attention, SwiGLU."""

    def __init__(self, h: int = 64, heads: int = 4, kv: int = 2, ffn: int = 96):
        super().__init__()
        self.h, self.heads, self.kv, self.d = h, heads, kv, h // heads
        self.q, self.o = nn.Linear(h, h, bias=False), nn.Linear(h, h, bias=False)
        self.k, self.v = nn.Linear(h, kv * self.d, bias=False), nn.Linear(h, kv * self.d, bias=False)
        self.n1, self.n2 = RMSNorm(h), RMSNorm(h)
        self.gate, self.up = nn.Linear(h, ffn, bias=False), nn.Linear(h, ffn, bias=False)
        self.down = nn.Linear(ffn, h, bias=False)
        self.register_buffer("inv_freq", 1.0 / (10000 ** (torch.arange(0, self.d, 2).float() / self.d)))

    def forward(self, x):
        b, s, _ = x.shape
        t = self.n1(x)
        q = self.q(t).view(b, s, self.heads, self.d).transpose(1, 2)
        k = self.k(t).view(b, s, self.kv, self.d).transpose(1, 2)
        v = self.v(t).view(b, s, self.kv, self.d).transpose(1, 2)
        freqs = torch.arange(s).float()[:, None] * self.inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos()[None, None], emb.sin()[None, None]
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        rep = self.heads // self.kv
        k = k[:, :, None].expand(b, self.kv, rep, s, self.d).reshape(b, self.heads, s, self.d)
        v = v[:, :, None].expand(b, self.kv, rep, s, self.d).reshape(b, self.heads, s, self.d)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, s, self.h)
        x = x + self.o(a)
        t = self.n2(x)
        return x + self.down(F.silu(self.gate(t)) * self.up(t))


class GPT2(nn.Module):
    """A GPT-2 block: LayerNorm, a fused qkv projection split in three, causal SDPA, GELU."""

    def __init__(self, h: int = 64, heads: int = 4):
        super().__init__()
        self.h, self.heads, self.d = h, heads, h // heads
        self.ln1, self.ln2 = nn.LayerNorm(h), nn.LayerNorm(h)
        self.qkv, self.o = nn.Linear(h, 3 * h), nn.Linear(h, h)
        self.fc, self.proj = nn.Linear(h, 4 * h), nn.Linear(4 * h, h)

    def forward(self, x):
        b, s, _ = x.shape
        q, k, v = (t.view(b, s, self.heads, self.d).transpose(1, 2) for t in self.qkv(self.ln1(x)).split(self.h, -1))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, s, self.h)
        x = x + self.o(a)
        return x + self.proj(F.gelu(self.fc(self.ln2(x))))


class BasicBlock(nn.Module):
    """torchvision's ResNet ``BasicBlock`` (BatchNorm with random running statistics)."""

    def __init__(self, c: int = 8):
        super().__init__()
        self.c1, self.c2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.b1, self.b2 = nn.BatchNorm2d(c), nn.BatchNorm2d(c)
        for bn in (self.b1, self.b2):
            bn.running_mean.normal_(0, 0.1)
            bn.running_var.uniform_(0.5, 1.5)

    def forward(self, x):
        return F.relu(self.b2(self.c2(F.relu(self.b1(self.c1(x))))) + x)


class CNN(nn.Module):
    """A stride-2 stem with BatchNorm, max pool, a depthwise conv, a basic block, global pool, Linear."""

    def __init__(self):
        super().__init__()
        self.stem, self.bn = nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.BatchNorm2d(8)
        self.dw, self.block = nn.Conv2d(8, 8, 3, padding=1, groups=8), BasicBlock(8)
        self.pool, self.fc = nn.AdaptiveAvgPool2d(1), nn.Linear(8, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.stem(x))), 2)
        return self.fc(torch.flatten(self.pool(self.block(self.dw(x))), 1))


def export(module: nn.Module, x: torch.Tensor, opset: int, dynamo: bool, folder: str) -> str:
    path = os.path.join(folder, f"m-{opset}-{int(dynamo)}.onnx")
    kw = {"dynamo": dynamo} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    module.eval()
    with torch.no_grad():
        torch.onnx.export(module, (x,), path, opset_version=opset, input_names=["x"], output_names=["y"], **kw)
    return path


def run(module: nn.Module, x: torch.Tensor, opset: int, dynamo: bool) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        try:
            path = export(module, x, opset, dynamo, folder)
        except Exception as err:  # what the exporter raises
            return {"export": f"{type(err).__name__}: {str(err)[:300]}"}
        try:
            imported = import_onnx(path)
        except Exception as err:  # an InstanceError naming the node, or a front-end fault
            return {"import": f"{type(err).__name__}: {str(err)[:600]}"}
    with torch.no_grad():
        want = module(x).numpy()
    got = evaluate(imported.graph, imported.feeds({"x": x.numpy()}))[imported.graph.outputs[0]]
    return {"ops": len(imported.graph.ops), "kinds": dict(collections.Counter(op.op for op in imported.graph.ops)),
            "max_abs_error": float(np.abs(got - want).max())}


def main() -> int:
    torch.manual_seed(0)
    cases = {"llama": (Llama(), torch.randn(1, 16, 64)), "gpt2": (GPT2(), torch.randn(1, 16, 64)),
             "cnn": (CNN(), torch.randn(1, 3, 16, 16)),
             "mlp": (nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 5)), torch.randn(8, 16))}
    results = {}
    for name, (module, x) in cases.items():
        for exporter in ("torchscript", "dynamo"):
            for opset in (17, 18):
                key = f"{name}/{exporter}/{opset}"
                results[key] = run(module, x, opset, exporter == "dynamo")
                print(key, json.dumps(results[key])[:200], file=sys.stderr, flush=True)
    out = {"date": datetime.date.today().isoformat(), "machine": platform.node(), "torch": torch.__version__,
           "results": results}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    tmp = OUT.with_suffix(".tmp")
    tmp.write_text(json.dumps(out, indent=1) + "\n")
    os.replace(tmp, OUT)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
