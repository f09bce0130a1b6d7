"""Write the shipped ONNX models ``instances/onnx/gpt2-block.onnx`` and
``instances/onnx/llama-block.onnx``: transformer blocks built with ``onnx.helper`` the way
``torch.onnx.export`` writes them (node names such as ``/attn/MatMul``, scalar ``Constant``
nodes, ``Add(bias, MatMul)`` for a Linear on 3-D input, Reshape targets computed by
Shape / Gather / Unsqueeze / Concat chains), with random float32 weights (seed 0).

- GPT-2 block (opset 17): hidden 256, 4 heads of 64, sequence 32, batch 1; LayerNormalization,
  biased q/k/v/o projections, ``(Q K^T) / 8 -> Softmax -> V`` (no causal mask), residual Add,
  LayerNormalization, Linear 256x384, erf-form GELU (``F.gelu``), Linear 384x256, residual Add.
  The FFN is 1.5x (not GPT-2's 4x) so the file stays under 2 MB.
- LLaMA-style block (opset 18, ReduceMean axes as an input): hidden 256, 4 heads of 64,
  sequence 32; the RMSNorm chain of Hugging Face's ``LlamaRMSNorm`` (Cast, Pow 2, ReduceMean,
  Add eps, Sqrt, ``1 / sqrt``, Mul, Cast, Mul weight), q/k/v/o without biases, ``(Q K^T) *
  0.125``, SwiGLU ``x * sigmoid(x) * up`` with FFN 256, no rotary embedding.

    python benchmarks/make_onnx_models.py [--out instances/onnx]

The :class:`Builder` is also what ``tests/test_onnx_frontend.py`` writes its models with.
"""

from __future__ import annotations

import argparse
import math
import os
from collections import Counter

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HIDDEN, HEADS, SEQ = 256, 4, 32


class Builder:
    """Nodes and initializers of one graph, named as torch.onnx names them."""

    def __init__(self, opset: int, seed: int = 0) -> None:
        self.opset = opset
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.rng = np.random.default_rng(seed)
        self.count: Counter = Counter()

    def node(self, op: str, inputs: list[str], scope: str = "", n_out: int = 1, **attrs) -> str:
        """Add a node ``/scope/Op_k``; returns its first output."""
        k = self.count[(scope, op)]
        self.count[(scope, op)] += 1
        name = f"{scope}/{op}" + (f"_{k}" if k else "")
        outputs = [f"{name}_output_{i}" for i in range(n_out)]
        self.nodes.append(helper.make_node(op, inputs, outputs, name=name, **attrs))
        return outputs[0]

    def scalar(self, value: float, scope: str = "", dtype=np.float32) -> str:
        """A scalar ``Constant`` node, as torch writes Python numbers."""
        return self.node("Constant", [], scope, value=numpy_helper.from_array(np.array(value, dtype=dtype)))

    def ints(self, values: list[int], scope: str = "") -> str:
        return self.node("Constant", [], scope, value=numpy_helper.from_array(np.array(values, dtype=np.int64)))

    def init(self, name: str, value: np.ndarray) -> str:
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def weight(self, name: str, shape: tuple, std: float | None = None, mean: float = 0.0) -> str:
        std = 1 / math.sqrt(shape[0]) if std is None else std
        return self.init(name, (mean + std * self.rng.standard_normal(shape)).astype(np.float32))

    def model(self, inputs: list[tuple[str, list]], outputs: list[tuple[str, list]], name: str = "graph",
              elem: int = TensorProto.FLOAT) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, name, [helper.make_tensor_value_info(n, elem, s) for n, s in inputs],
                                  [helper.make_tensor_value_info(n, elem, s) for n, s in outputs],
                                  initializer=self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)],
                                  producer_name="dfopt benchmarks/make_onnx_models.py")
        onnx.checker.check_model(model)
        return model

    # -- layers as torch.onnx exports them ------------------------------------------------------
    def linear(self, x: str, d_in: int, d_out: int, scope: str, bias: bool = True) -> str:
        """``nn.Linear`` on 3-D input: MatMul by the transposed weight, then ``Add(bias, .)``."""
        y = self.node("MatMul", [x, self.weight(f"{scope.strip('/').replace('/', '.')}.weight_t", (d_in, d_out))],
                      scope)
        if bias:
            b = self.weight(f"{scope.strip('/').replace('/', '.')}.bias", (d_out,), std=0.1)
            y = self.node("Add", [b, y], scope)
        return y

    def reduce_mean(self, x: str, scope: str) -> str:
        if self.opset >= 18:
            return self.node("ReduceMean", [x, self.ints([-1], scope)], scope, keepdims=1)
        return self.node("ReduceMean", [x], scope, axes=[-1], keepdims=1)

    def layernorm(self, x: str, n: int, scope: str, decomposed: bool = False) -> str:
        key = scope.strip("/").replace("/", ".")
        g, b = self.weight(f"{key}.weight", (n,), std=0.1, mean=1.0), self.weight(f"{key}.bias", (n,), std=0.1)
        if not decomposed:
            return self.node("LayerNormalization", [x, g, b], scope, axis=-1, epsilon=1e-5)
        mean = self.reduce_mean(x, scope)
        d = self.node("Sub", [x, mean], scope)
        var = self.reduce_mean(self.node("Pow", [d, self.scalar(2.0, scope)], scope), scope)
        s = self.node("Sqrt", [self.node("Add", [var, self.scalar(1e-5, scope)], scope)], scope)
        return self.node("Add", [self.node("Mul", [self.node("Div", [d, s], scope), g], scope), b], scope)

    def rmsnorm(self, x: str, n: int, scope: str, form: str = "rsqrt") -> str:
        """``LlamaRMSNorm``: ``form`` rsqrt (``Div(1, Sqrt)`` then Mul), reciprocal or div."""
        key = scope.strip("/").replace("/", ".")
        w = self.weight(f"{key}.weight", (n,), std=0.1, mean=1.0)
        x = self.node("Cast", [x], scope, to=TensorProto.FLOAT)
        var = self.reduce_mean(self.node("Pow", [x, self.scalar(2.0, scope)], scope), scope)
        s = self.node("Sqrt", [self.node("Add", [var, self.scalar(1e-6, scope)], scope)], scope)
        if form == "div":
            normed = self.node("Div", [x, s], scope)
        else:
            inv = self.node("Reciprocal", [s], scope) if form == "reciprocal" else \
                self.node("Div", [self.scalar(1.0, scope), s], scope)
            normed = self.node("Mul", [x, inv], scope)
        return self.node("Mul", [w, self.node("Cast", [normed], scope, to=TensorProto.FLOAT)], scope)

    def gelu_erf(self, x: str, scope: str, form: str = "torch") -> str:
        """``F.gelu``: ``(x * (erf(x / sqrt2) + 1)) * 0.5``; ``form`` hf: ``(x * 0.5) * (1 + erf(x * 0.7071))``."""
        if form == "hf":
            half = self.node("Mul", [x, self.scalar(0.5, scope)], scope)
            e = self.node("Erf", [self.node("Mul", [x, self.scalar(1 / math.sqrt(2), scope)], scope)], scope)
            return self.node("Mul", [half, self.node("Add", [self.scalar(1.0, scope), e], scope)], scope)
        e = self.node("Erf", [self.node("Div", [x, self.scalar(math.sqrt(2), scope)], scope)], scope)
        plus = self.node("Add", [e, self.scalar(1.0, scope)], scope)
        return self.node("Mul", [self.node("Mul", [x, plus], scope), self.scalar(0.5, scope)], scope)

    def gelu_tanh(self, x: str, scope: str, form: str = "torch") -> str:
        """``F.gelu(approximate="tanh")`` (cube as x * (x * x)); ``form`` hf: ``NewGELUActivation`` (Pow 3)."""
        if form == "hf":
            half = self.node("Mul", [x, self.scalar(0.5, scope)], scope)
            cube = self.node("Pow", [x, self.scalar(3.0, scope)], scope)
            inner = self.node("Add", [x, self.node("Mul", [cube, self.scalar(0.044715, scope)], scope)], scope)
            t = self.node("Tanh", [self.node("Mul", [inner, self.scalar(math.sqrt(2 / math.pi), scope)], scope)],
                          scope)
            return self.node("Mul", [half, self.node("Add", [t, self.scalar(1.0, scope)], scope)], scope)
        cube = self.node("Mul", [x, self.node("Mul", [x, x], scope)], scope)
        inner = self.node("Add", [x, self.node("Mul", [self.scalar(0.044715, scope), cube], scope)], scope)
        t = self.node("Tanh", [self.node("Mul", [self.scalar(math.sqrt(2 / math.pi), scope), inner], scope)], scope)
        plus = self.node("Add", [self.scalar(1.0, scope), t], scope)
        return self.node("Mul", [self.scalar(0.5, scope), self.node("Mul", [x, plus], scope)], scope)

    def silu(self, x: str, scope: str) -> str:
        return self.node("Mul", [x, self.node("Sigmoid", [x], scope)], scope)

    def split_heads(self, x: str, heads: int, scope: str, perm: list[int], dynamic: bool) -> str:
        """``view(B, S, H, D)`` (the target from a Shape chain when ``dynamic``) and ``permute``."""
        if dynamic:
            shape = self.node("Shape", [x], scope)
            dims = [self.node("Unsqueeze", [self.node("Gather", [shape, self.scalar(i, scope, np.int64)], scope,
                                                      axis=0), self.ints([0], scope)], scope) for i in (0, 1)]
            target = self.node("Concat", dims + [self.ints([heads, -1], scope)], scope, axis=0)
        else:
            target = self.ints([1, SEQ, heads, -1], scope)
        return self.node("Transpose", [self.node("Reshape", [x, target], scope)], scope, perm=perm)

    def attention(self, x: str, hidden: int, heads: int, scope: str, bias: bool, scale: str = "div") -> str:
        """q/k/v projections, ``Q K^T`` scaled (``scale``: div by sqrt(d), mul by 1/sqrt(d), or sdpa:
        sqrt of the scale on Q and on K^T), Softmax, ``@ V``, heads merged, o projection."""
        d = hidden // heads
        q = self.split_heads(self.linear(x, hidden, hidden, f"{scope}/q_proj", bias), heads, scope, [0, 2, 1, 3], True)
        k = self.split_heads(self.linear(x, hidden, hidden, f"{scope}/k_proj", bias), heads, scope, [0, 2, 3, 1],
                             False)
        v = self.split_heads(self.linear(x, hidden, hidden, f"{scope}/v_proj", bias), heads, scope, [0, 2, 1, 3],
                             False)
        if scale == "sdpa":
            root = self.scalar(1 / math.sqrt(math.sqrt(d)), scope)
            q, k = self.node("Mul", [q, root], scope), self.node("Mul", [k, root], scope)
        s = self.node("MatMul", [q, k], scope)
        if scale == "div":
            s = self.node("Div", [s, self.scalar(math.sqrt(d), scope)], scope)
        elif scale == "mul":
            s = self.node("Mul", [s, self.scalar(1 / math.sqrt(d), scope)], scope)
        p = self.node("Softmax", [s], scope, axis=-1)
        ctx = self.node("Transpose", [self.node("MatMul", [p, v], scope)], scope, perm=[0, 2, 1, 3])
        ctx = self.node("Reshape", [ctx, self.ints([1, SEQ, hidden], scope)], scope)
        return self.linear(ctx, hidden, hidden, f"{scope}/o_proj", bias)


def gpt2_block(hidden: int = HIDDEN, heads: int = HEADS, ffn: int = 384, seed: int = 0,
               gelu: str = "erf") -> onnx.ModelProto:
    """The GPT-2 block; ``gelu`` tanh writes the GELU in its tanh form (same weights: the model an
    import of the erf form equals exactly)."""
    b = Builder(17, seed)
    x = "hidden_states"
    a = b.attention(b.layernorm(x, hidden, "/ln_1"), hidden, heads, "/attn", bias=True, scale="div")
    r1 = b.node("Add", [x, a], "")
    fc = b.linear(b.layernorm(r1, hidden, "/ln_2"), hidden, ffn, "/mlp/c_fc")
    h = b.gelu_erf(fc, "/mlp/act") if gelu == "erf" else b.gelu_tanh(fc, "/mlp/act")
    out = b.node("Add", [r1, b.linear(h, ffn, hidden, "/mlp/c_proj")], "/residual")
    b.nodes.append(helper.make_node("Identity", [out], ["output"], name="/Identity"))
    return b.model([(x, [1, SEQ, hidden])], [("output", [1, SEQ, hidden])], "gpt2_block")


def llama_block(hidden: int = HIDDEN, heads: int = HEADS, ffn: int = 256, seed: int = 0) -> onnx.ModelProto:
    b = Builder(18, seed)
    x = "hidden_states"
    a = b.attention(b.rmsnorm(x, hidden, "/input_layernorm"), hidden, heads, "/self_attn", bias=False, scale="mul")
    r1 = b.node("Add", [x, a], "")
    h = b.rmsnorm(r1, hidden, "/post_attention_layernorm")
    gate = b.silu(b.linear(h, hidden, ffn, "/mlp/gate_proj", bias=False), "/mlp/act_fn")
    up = b.linear(h, hidden, ffn, "/mlp/up_proj", bias=False)
    down = b.linear(b.node("Mul", [gate, up], "/mlp"), ffn, hidden, "/mlp/down_proj", bias=False)
    b.nodes.append(helper.make_node("Add", [r1, down], ["output"], name="/Add_1"))
    return b.model([(x, [1, SEQ, hidden])], [("output", [1, SEQ, hidden])], "llama_block")


MODELS = {"gpt2-block": gpt2_block, "llama-block": llama_block}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=os.path.join("instances", "onnx"))
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    for name, make in MODELS.items():
        path = os.path.join(args.out, f"{name}.onnx")
        onnx.save(make(), path)
        print(f"wrote {path} ({os.path.getsize(path) / 2**20:.2f} MiB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
