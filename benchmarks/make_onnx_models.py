"""Write the shipped ONNX models ``instances/onnx/gpt2-block.onnx``,
``instances/onnx/llama-block.onnx`` and ``instances/onnx/resnet-block.onnx``: blocks built with
``onnx.helper`` the way ``torch.onnx.export`` writes them (node names such as ``/attn/MatMul``, scalar ``Constant``
nodes, ``Add(bias, MatMul)`` for a Linear on 3-D input, Reshape targets computed by
Shape / Gather / Unsqueeze / Concat chains), with random float32 weights (seed 0).

- GPT-2 block (opset 17): hidden 256, 4 heads of 64, sequence 32, batch 1; LayerNormalization,
  biased q/k/v/o projections, ``(Q K^T) / 8 + causal mask -> Softmax -> V`` (the mask a
  constant Add of -inf above the diagonal), residual Add,
  LayerNormalization, Linear 256x384, erf-form GELU (``F.gelu``), Linear 384x256, residual Add.
  The FFN is 1.5x (not GPT-2's 4x) so the file stays under 2 MB.
- LLaMA-style block (opset 18, ReduceMean axes as an input): hidden 256, 4 query heads of 64
  and 2 key/value heads (grouped-query attention: ``repeat_kv`` as Unsqueeze / Expand /
  Reshape), sequence 32; the RMSNorm chain of Hugging Face's ``LlamaRMSNorm`` (Cast, Pow 2,
  ReduceMean, Add eps, Sqrt, ``1 / sqrt``, Mul, Cast, Mul weight), q/k/v/o without biases, the
  rotary embedding on q and k (``LlamaRotaryEmbedding`` at static positions: inv_freq, Cos, Sin,
  folded; ``rotate_half`` by two Slices, Neg and Concat), ``(Q K^T) * 0.125``, SwiGLU
  ``x * sigmoid(x) * up`` with FFN 256.
- ResNet basic block (opset 17): 16 channels of 16 x 16, batch 1; Conv 3x3 -> BatchNormalization
  -> Relu -> Conv 3x3 -> BatchNormalization, the identity added, Relu (torchvision's
  ``BasicBlock`` in inference).

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

    def rotary_tables(self, d: int, seq: int, scope: str, base: float = 10000.0) -> tuple[str, str]:
        """``LlamaRotaryEmbedding`` at static positions: ``inv_freq`` (an initializer) times the
        positions 0..S-1, the angles concatenated twice, ``Cos`` and ``Sin``, unsqueezed to
        ``[1, 1, S, d]`` (all folded by the import)."""
        inv = self.init(f"{scope.strip('/').replace('/', '.')}.inv_freq",
                        # in float64, then rounded: float32 powers differ in the last bit between CPUs
                        (1.0 / base ** (np.arange(0, d, 2, dtype=np.float64) / d)).astype(np.float32))
        pos = self.node("Constant", [], scope, value=numpy_helper.from_array(np.arange(seq, dtype=np.float32)))
        freqs = self.node("Mul", [self.node("Unsqueeze", [pos, self.ints([1], scope)], scope),
                                  self.node("Unsqueeze", [inv, self.ints([0], scope)], scope)], scope)
        emb = self.node("Concat", [freqs, freqs], scope, axis=-1)
        tables = []
        for op in ("Cos", "Sin"):
            tables.append(self.node("Unsqueeze", [self.node(op, [emb], scope), self.ints([0, 1], scope)], scope))
        return tables[0], tables[1]

    def rope(self, x: str, cos: str, sin: str, d: int, scope: str, split: bool = False) -> str:
        """``apply_rotary_pos_emb``: ``x * cos + rotate_half(x) * sin``, the halves by two Slices
        (torch's ``x[..., :d/2]``, ``x[..., d/2:]`` with INT64_MAX as the end) or one Split."""
        if split:
            kw = {"num_outputs": 2} if self.opset >= 18 else {}
            extra = [] if self.opset >= 18 else [self.ints([d // 2, d // 2], scope)]
            k = self.count[(scope, "Split")]
            self.count[(scope, "Split")] += 1
            name = f"{scope}/Split" + (f"_{k}" if k else "")
            x1, x2 = f"{name}_output_0", f"{name}_output_1"
            self.nodes.append(helper.make_node("Split", [x, *extra], [x1, x2], name=name, axis=-1, **kw))
        else:
            x1 = self.node("Slice", [x, self.ints([0], scope), self.ints([d // 2], scope), self.ints([-1], scope)],
                           scope)
            x2 = self.node("Slice", [x, self.ints([d // 2], scope), self.ints([2 ** 63 - 1], scope),
                                     self.ints([-1], scope)], scope)
        rotated = self.node("Concat", [self.node("Neg", [x2], scope), x1], scope, axis=-1)
        return self.node("Add", [self.node("Mul", [x, cos], scope), self.node("Mul", [rotated, sin], scope)], scope)

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

    def attention(self, x: str, hidden: int, heads: int, scope: str, bias: bool, scale: str = "div",
                  causal: bool = False) -> str:
        """q/k/v projections, ``Q K^T`` scaled (``scale``: div by sqrt(d), mul by 1/sqrt(d), or sdpa:
        sqrt of the scale on Q and on K^T), with ``causal`` the Add of the constant ``[1, 1, S, S]``
        mask (0 on and below the diagonal, -inf above: torch's folded ``is_causal``), Softmax,
        ``@ V``, heads merged, o projection."""
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
        if causal:
            tri = np.triu(np.full((SEQ, SEQ), -np.inf, np.float32), k=1).reshape(1, 1, SEQ, SEQ)
            s = self.node("Add", [s, self.init(f"{scope.strip('/')}.causal_mask", tri)], scope)
        p = self.node("Softmax", [s], scope, axis=-1)
        ctx = self.node("Transpose", [self.node("MatMul", [p, v], scope)], scope, perm=[0, 2, 1, 3])
        ctx = self.node("Reshape", [ctx, self.ints([1, SEQ, hidden], scope)], scope)
        return self.linear(ctx, hidden, hidden, f"{scope}/o_proj", bias)

    def llama_attention(self, x: str, hidden: int, heads: int, kv_heads: int, scope: str, seq: int = SEQ) -> str:
        """``LlamaAttention``: q/k/v projections without bias (k and v to ``kv_heads`` heads),
        heads split to ``[1, H, S, d]``, the rotary embedding on q and k, ``repeat_kv`` (Unsqueeze,
        Expand, Reshape) when ``kv_heads < heads``, ``(Q K^T) * d^-0.5``, Softmax, ``@ V``, o."""
        d = hidden // heads
        cos, sin = self.rotary_tables(d, seq, f"{scope}/rotary_emb")

        def split(t: str, n: int) -> str:
            shaped = self.node("Reshape", [t, self.ints([1, seq, n, d], scope)], scope)
            return self.node("Transpose", [shaped], scope, perm=[0, 2, 1, 3])

        q = self.rope(split(self.linear(x, hidden, hidden, f"{scope}/q_proj", False), heads), cos, sin, d, scope)
        k = self.rope(split(self.linear(x, hidden, kv_heads * d, f"{scope}/k_proj", False), kv_heads), cos, sin, d,
                      scope)
        v = split(self.linear(x, hidden, kv_heads * d, f"{scope}/v_proj", False), kv_heads)
        if kv_heads != heads:
            k, v = (self.repeat_kv(t, kv_heads, heads // kv_heads, seq, d, scope) for t in (k, v))
        s = self.node("MatMul", [q, self.node("Transpose", [k], scope, perm=[0, 1, 3, 2])], scope)
        p = self.node("Softmax", [self.node("Mul", [s, self.scalar(1 / math.sqrt(d), scope)], scope)], scope, axis=-1)
        ctx = self.node("Transpose", [self.node("MatMul", [p, v], scope)], scope, perm=[0, 2, 1, 3])
        ctx = self.node("Reshape", [ctx, self.ints([1, seq, hidden], scope)], scope)
        return self.linear(ctx, hidden, hidden, f"{scope}/o_proj", False)

    def repeat_kv(self, t: str, kv_heads: int, n_rep: int, seq: int, d: int, scope: str) -> str:
        """``repeat_kv``: ``t[:, :, None].expand(1, kv, n_rep, S, d).reshape(1, kv * n_rep, S, d)``."""
        wide = self.node("Expand", [self.node("Unsqueeze", [t, self.ints([2], scope)], scope),
                                    self.ints([1, kv_heads, n_rep, seq, d], scope)], scope)
        return self.node("Reshape", [wide, self.ints([1, kv_heads * n_rep, seq, d], scope)], scope)


def gpt2_block(hidden: int = HIDDEN, heads: int = HEADS, ffn: int = 384, seed: int = 0,
               gelu: str = "erf") -> onnx.ModelProto:
    """The GPT-2 block; ``gelu`` tanh writes the GELU in its tanh form (same weights: the model an
    import of the erf form equals exactly)."""
    b = Builder(17, seed)
    x = "hidden_states"
    a = b.attention(b.layernorm(x, hidden, "/ln_1"), hidden, heads, "/attn", bias=True, scale="div", causal=True)
    r1 = b.node("Add", [x, a], "")
    fc = b.linear(b.layernorm(r1, hidden, "/ln_2"), hidden, ffn, "/mlp/c_fc")
    h = b.gelu_erf(fc, "/mlp/act") if gelu == "erf" else b.gelu_tanh(fc, "/mlp/act")
    out = b.node("Add", [r1, b.linear(h, ffn, hidden, "/mlp/c_proj")], "/residual")
    b.nodes.append(helper.make_node("Identity", [out], ["output"], name="/Identity"))
    return b.model([(x, [1, SEQ, hidden])], [("output", [1, SEQ, hidden])], "gpt2_block")


def llama_block(hidden: int = HIDDEN, heads: int = HEADS, ffn: int = 256, seed: int = 0,
                kv_heads: int = 2) -> onnx.ModelProto:
    b = Builder(18, seed)
    x = "hidden_states"
    a = b.llama_attention(b.rmsnorm(x, hidden, "/input_layernorm"), hidden, heads, kv_heads, "/self_attn")
    r1 = b.node("Add", [x, a], "")
    h = b.rmsnorm(r1, hidden, "/post_attention_layernorm")
    gate = b.silu(b.linear(h, hidden, ffn, "/mlp/gate_proj", bias=False), "/mlp/act_fn")
    up = b.linear(h, hidden, ffn, "/mlp/up_proj", bias=False)
    down = b.linear(b.node("Mul", [gate, up], "/mlp"), ffn, hidden, "/mlp/down_proj", bias=False)
    b.nodes.append(helper.make_node("Add", [r1, down], ["output"], name="/Add_1"))
    return b.model([(x, [1, SEQ, hidden])], [("output", [1, SEQ, hidden])], "llama_block")


def resnet_block(channels: int = 16, size: int = 16, seed: int = 0) -> onnx.ModelProto:
    """torchvision's ``BasicBlock`` (opset 17, NCHW, batch 1): Conv 3x3 (no bias) ->
    BatchNormalization -> Relu -> Conv 3x3 -> BatchNormalization -> Add of the identity -> Relu;
    the BatchNormalizations with random inference statistics."""
    b = Builder(17, seed)
    x = "input"
    h = x
    for i in (1, 2):
        fan_in = channels * 9
        h = b.node("Conv", [h, b.weight(f"conv{i}.weight", (channels, channels, 3, 3), std=1 / math.sqrt(fan_in))],
                   f"/conv{i}", kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1])
        params = [b.weight(f"bn{i}.weight", (channels,), std=0.1, mean=1.0), b.weight(f"bn{i}.bias", (channels,),
                  std=0.1), b.weight(f"bn{i}.running_mean", (channels,), std=0.1),
                  b.init(f"bn{i}.running_var", b.rng.uniform(0.5, 1.5, channels).astype(np.float32))]
        h = b.node("BatchNormalization", [h, *params], f"/bn{i}", epsilon=1e-5, momentum=0.9)
        if i == 1:
            h = b.node("Relu", [h], "/relu")
    s = b.node("Add", [h, x], "")
    b.nodes.append(helper.make_node("Relu", [s], ["output"], name="/relu_1/Relu"))
    shape = [1, channels, size, size]
    return b.model([(x, shape)], [("output", shape)], "resnet_block")


def mlp(sizes: tuple = (16, 64, 32, 32, 5), batch: int = 8, seed: int = 0) -> onnx.ModelProto:
    """hls4ml's jet-tagging MLP (opset 13): Gemm layers (``transB=1``, as torch exports ``nn.Linear``
    on 2-D input) 16 -> 64 -> 32 -> 32 -> 5 with Relu between and a Softmax at the end."""
    b = Builder(13, seed)
    h = "input"
    for i, (n_in, n_out) in enumerate(zip(sizes, sizes[1:])):
        w = b.weight(f"fc{i + 1}.weight", (n_out, n_in), std=1 / math.sqrt(n_in))
        h = b.node("Gemm", [h, w, b.weight(f"fc{i + 1}.bias", (n_out,), std=0.1)], f"/fc{i + 1}", transB=1)
        if i < len(sizes) - 2:
            h = b.node("Relu", [h], f"/relu{i + 1}")
    b.nodes.append(helper.make_node("Softmax", [h], ["output"], name="/softmax/Softmax", axis=-1))
    return b.model([("input", [batch, sizes[0]])], [("output", [batch, sizes[-1]])], "mlp")


MODELS = {"gpt2-block": gpt2_block, "llama-block": llama_block, "resnet-block": resnet_block, "mlp": mlp}


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
