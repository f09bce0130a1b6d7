"""Transformer-block dataflow graphs (one decoder layer) at real model shapes, as fusion instances.

:func:`transformer_block` builds one pre-norm decoder layer of a preset model (:data:`MODELS`) as a
``dfopt-instance/1`` dict: tiled kernels with loop nests, analytical timing and resources, and one
stream per producer -> consumer tensor edge, whose ``src_type`` / ``dst_type`` come from the two
kernels' loop nests (:func:`dfopt.ir.itensor.loop_nest_type`). Layout converters arise where the
two nests walk the tensor in different orders (Algorithm 1, docs/fusion.md).

Graph (``gate`` only for the gated FFNs of Llama and Qwen)::

    x_in -> ln1 -> q_proj, k_proj, v_proj -> qk -> softmax -> av -> o_proj -> res1 <- x_in
    res1 -> ln2 -> up (, gate) -> act -> down -> res2 <- res1;  res2 -> y_out

Modelling choices:

- Tiles: each dimension is tiled by the largest divisor of it that is at most ``tile`` (sequence
  ``ts``, hidden ``td``, head ``th``, FFN ``tf``); the attention key dimension uses ``ts``.
- Matmuls are ``(i, j, k)`` nests, tokens outermost, the reduction innermost; they read their
  weights themselves (no stream). Their A operand ``[i, k]`` is re-read for every output column
  tile ``j`` (a reuse loop), so the stream from a row-wise producer needs a row-block converter.
- Attention: heads are outer parallel loops of ``qk``, ``softmax`` and ``av``. With grouped-query
  attention the query heads are split as ``(kv_head, group)``: Q, scores, probabilities and the
  attention output are ``[kv_heads, group, seq, .]`` tensors and K / V are ``[kv_heads, seq,
  head_dim]``, so the ``group`` loop re-reads K and V. ``qk`` reads K indexed ``(key, d)``, i.e.
  transposed against ``k_proj``'s token-major output. No causal mask: scores are full S x S.
- Norms read a row block tile by tile under a row-reduction loop that also indexes the output
  (they buffer the row block, then write it normalised); softmax streams whole rows (its row loop
  has one trip of step ``seq_len``); residual adds read both operands in the order they were
  written, so they need no converter.

Cost model (constants below, each with its assumption; rough, not calibrated against synthesis):

- ``bytes``: a matmul keeps its accumulator tile, one weight (B) tile and one input (A) tile; a
  norm or softmax keeps its row block (``ts`` x hidden, ``ts`` x ``seq_len``); an elementwise
  kernel one tile per input; a DMA kernel one burst tile. ``bram = ceil(bytes / 4608)``.
- ``dsp`` = lanes x multiply-adds per element x DSP per multiply-add of the dtype; ``lut`` and
  ``ff`` grow with lanes x dtype bits on top of a per-kernel base.
- Timing: ``ii`` = cycles between two output tiles in steady state, ``delay`` = cycles to the first
  output tile. A matmul tile step is ``tm*tn*tk / MAC_LANES`` cycles and an output tile needs the
  whole reduction; a norm or softmax reads its row block before its first output.

>>> inst = transformer_block("gpt2")
>>> len(inst["graph"]["kernels"]), len(inst["graph"]["streams"])
(16, 19)
>>> sorted(MODELS)
['gpt2', 'llama', 'qwen']
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from dfopt.errors import InstanceError, unknown_name_error
from dfopt.instance.types import NEEDS_GRAPH
from dfopt.ir.converter import converter_buffer
from dfopt.ir.itensor import DTYPE_BITS, ITensorType, loop_nest_type
from dfopt.ir.platform import load_preset
from dfopt.models.tiling.costs import (
    DSP_PER_MAC,
    dma_cost,
    elementwise_cost,
    matmul_cost,
    row_cost,
)

INSTANCE_FORMAT = "dfopt-instance/1"
PLATFORM = "u55c"

# == cost model (rough analytical estimates, not calibrated against synthesis) ==================

MAC_LANES = 128            # multiply-add lanes of a matmul kernel (its unroll), one MAC per cycle each
VECTOR_LANES = 16          # elements per cycle of a norm, softmax or elementwise kernel
# the per-kernel cost model is the tiling stage's (dfopt/models/tiling/costs.py)


# == model shapes ================================================================================

@dataclass(frozen=True)
class ModelShape:
    """The layer shape of a model preset; ``source`` is the config file its numbers come from."""

    label: str
    source: str
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    norm: str       # layernorm | rmsnorm
    act: str        # gelu (plain up/down FFN) | silu_mul (gated FFN: gate, up, down)

    @property
    def gated(self) -> bool:
        return self.act == "silu_mul"


MODELS = {
    # https://huggingface.co/openai-community/gpt2/blob/main/config.json: n_embd 768, n_head 12
    # (head dim 768 / 12 = 64, no KV sharing), n_inner absent -> 4 * n_embd = 3072 (GPT2MLP
    # c_fc / c_proj, not gated), activation_function "gelu_new", LayerNorm (layer_norm_epsilon).
    "gpt2": ModelShape("GPT-2 small", "openai-community/gpt2 config.json",
                       hidden=768, heads=12, kv_heads=12, head_dim=64, ffn=3072,
                       norm="layernorm", act="gelu"),
    # https://huggingface.co/meta-llama/Meta-Llama-3-8B/blob/main/config.json: hidden_size 4096,
    # num_attention_heads 32, num_key_value_heads 8, head_dim 128 (= 4096 / 32), intermediate_size
    # 14336, hidden_act "silu" (gated LlamaMLP: gate_proj, up_proj, down_proj), rms_norm_eps (RMSNorm).
    "llama": ModelShape("Llama-3-8B", "meta-llama/Meta-Llama-3-8B config.json",
                        hidden=4096, heads=32, kv_heads=8, head_dim=128, ffn=14336,
                        norm="rmsnorm", act="silu_mul"),
    # https://huggingface.co/Qwen/Qwen2-7B/blob/main/config.json: hidden_size 3584,
    # num_attention_heads 28, num_key_value_heads 4, head dim 3584 / 28 = 128, intermediate_size
    # 18944, hidden_act "silu" (gated Qwen2MLP), rms_norm_eps (RMSNorm).
    "qwen": ModelShape("Qwen2-7B", "Qwen/Qwen2-7B config.json",
                       hidden=3584, heads=28, kv_heads=4, head_dim=128, ffn=18944,
                       norm="rmsnorm", act="silu_mul"),
}


# == sizes and tiles ==============================================================================

@dataclass(frozen=True)
class _Dims:
    """Sizes (S, D, H, Hkv, G = H / Hkv, dh, F), tiles (ts, td, th, tf) and the dtype."""

    S: int
    D: int
    Hkv: int
    G: int
    dh: int
    F: int
    ts: int
    td: int
    th: int
    tf: int
    dtype: str

    @property
    def nbytes(self) -> float:
        return DTYPE_BITS[self.dtype] / 8


def tile_for(dim: int, tile: int) -> int:
    """The largest divisor of ``dim`` that is at most ``tile``.

    >>> tile_for(768, 64), tile_for(100, 64), tile_for(48, 64)
    (64, 50, 48)
    """
    return max(t for t in range(1, min(dim, tile) + 1) if dim % t == 0)


def _dims(shape: ModelShape, seq_len: int, tile: int, dtype: str) -> _Dims:
    return _Dims(S=seq_len, D=shape.hidden, Hkv=shape.kv_heads, G=shape.heads // shape.kv_heads,
                 dh=shape.head_dim, F=shape.ffn, ts=tile_for(seq_len, tile),
                 td=tile_for(shape.hidden, tile), th=tile_for(shape.head_dim, tile),
                 tf=tile_for(shape.ffn, tile), dtype=dtype)


def _shapes(d: _Dims) -> dict:
    """The shape of every tensor of the block, by tensor name."""
    row, attn = (d.S, d.D), (d.Hkv, d.G, d.S, d.dh)
    return {"x": row, "n1": row, "q": attn, "k": (d.Hkv, d.S, d.dh), "v": (d.Hkv, d.S, d.dh),
            "s": (d.Hkv, d.G, d.S, d.S), "p": (d.Hkv, d.G, d.S, d.S), "attn": attn, "o": row,
            "h1": row, "n2": row, "u": (d.S, d.F), "z": (d.S, d.F), "a": (d.S, d.F), "dn": row,
            "y": row}


# == kernels ======================================================================================

@dataclass
class _Kernel:
    """A kernel under construction: its ports map tensor names to per-dimension loop names."""

    name: str
    op: str
    loops: list
    ins: dict
    outs: dict
    delay: int = 0
    ii: int = 1
    resources: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"name": self.name, "op": self.op, "loops": self.loops, "delay": self.delay,
                "ii": self.ii, "resources": self.resources}


def _loop(name: str, tripcount: int, step: int, kind: str = "parallel") -> dict:
    return {"name": name, "tripcount": int(tripcount), "step": int(step), "kind": kind}


def _kernel(name, op, loops, ins, outs, cost) -> _Kernel:
    return _Kernel(name, op, loops, ins, outs, delay=cost.delay, ii=cost.ii, resources=cost.resources)


def _matmul(name, d: _Dims, loops, ins, outs, tm: int, tn: int, tk: int, k_steps: int) -> _Kernel:
    """A tiled matmul (:func:`~dfopt.models.tiling.costs.matmul_cost`, MAC_LANES lanes)."""
    return _kernel(name, "matmul", loops, ins, outs, matmul_cost(d.dtype, tm, tn, tk, k_steps, MAC_LANES))


def _row_kernel(name, op, d: _Dims, loops, ins, outs, row_elems: int, tile_elems: int) -> _Kernel:
    """A norm or softmax over a buffered row block (:func:`~dfopt.models.tiling.costs.row_cost`)."""
    return _kernel(name, op, loops, ins, outs, row_cost(op, d.dtype, row_elems, tile_elems, VECTOR_LANES))


def _elementwise(name, op, d: _Dims, loops, ins, outs, tile_elems: int) -> _Kernel:
    """An elementwise kernel holding one tile per input operand."""
    return _kernel(name, op, loops, ins, outs, elementwise_cost(op, d.dtype, tile_elems, len(ins), VECTOR_LANES))


def _dma(name, op, d: _Dims, loops, ins, outs, tile_elems: int) -> _Kernel:
    """A DMA kernel (HBM <-> stream)."""
    return _kernel(name, op, loops, ins, outs, dma_cost(d.dtype, tile_elems))


def _row_loops(d: _Dims, cols: str = "c", kind: str = "parallel") -> list:
    """(i over tokens, ``cols`` over hidden) at tiles (ts, td)."""
    return [_loop("i", d.S // d.ts, d.ts), _loop(cols, d.D // d.td, d.td, kind)]


def _io_kernels(d: _Dims) -> list:
    tile = d.ts * d.td
    return [_dma("x_in", "dma_in", d, _row_loops(d), {}, {"x": ("i", "c")}, tile),
            _dma("y_out", "dma_out", d, _row_loops(d), {"y": ("i", "c")}, {}, tile)]


def _norm_kernels(shape: ModelShape, d: _Dims) -> list:
    loops = _row_loops(d, kind="reduction")
    row, tile = d.ts * d.D, d.ts * d.td
    return [_row_kernel("ln1", shape.norm, d, loops, {"x": ("i", "c")}, {"n1": ("i", "c")}, row, tile),
            _row_kernel("ln2", shape.norm, d, loops, {"h1": ("i", "c")}, {"n2": ("i", "c")}, row, tile)]


def _projection_kernels(d: _Dims) -> list:
    """q_proj, k_proj, v_proj: (i, heads, n, k) nests writing head-major tensors."""
    i, k = _loop("i", d.S // d.ts, d.ts), _loop("k", d.D // d.td, d.td, "reduction")
    kh, g, n = _loop("kh", d.Hkv, 1), _loop("g", d.G, 1), _loop("n", d.dh // d.th, d.th)
    steps = d.D // d.td
    return [
        _matmul("q_proj", d, [i, kh, g, n, k], {"n1": ("i", "k")}, {"q": ("kh", "g", "i", "n")},
                d.ts, d.th, d.td, steps),
        _matmul("k_proj", d, [i, kh, n, k], {"n1": ("i", "k")}, {"k": ("kh", "i", "n")},
                d.ts, d.th, d.td, steps),
        _matmul("v_proj", d, [i, kh, n, k], {"n1": ("i", "k")}, {"v": ("kh", "i", "n")},
                d.ts, d.th, d.td, steps),
    ]


def _attention_kernels(d: _Dims) -> list:
    """qk, softmax, av (heads outermost) and o_proj (reducing over heads and head dims)."""
    kh, g, i = _loop("kh", d.Hkv, 1), _loop("g", d.G, 1), _loop("i", d.S // d.ts, d.ts)
    heads = [kh, g, i]
    qk = _matmul("qk", d, heads + [_loop("j", d.S // d.ts, d.ts), _loop("e", d.dh // d.th, d.th, "reduction")],
                 {"q": ("kh", "g", "i", "e"), "k": ("kh", "j", "e")}, {"s": ("kh", "g", "i", "j")},
                 d.ts, d.ts, d.th, d.dh // d.th)
    softmax = _row_kernel("softmax", "softmax", d, heads + [_loop("j", 1, d.S, "reduction")],
                          {"s": ("kh", "g", "i", "j")}, {"p": ("kh", "g", "i", "j")},
                          d.ts * d.S, d.ts * d.S)
    av = _matmul("av", d, heads + [_loop("n", d.dh // d.th, d.th), _loop("j", d.S // d.ts, d.ts, "reduction")],
                 {"p": ("kh", "g", "i", "j"), "v": ("kh", "j", "n")}, {"attn": ("kh", "g", "i", "n")},
                 d.ts, d.th, d.ts, d.S // d.ts)
    o_loops = [i, _loop("n", d.D // d.td, d.td), _loop("kh", d.Hkv, 1, "reduction"),
               _loop("g", d.G, 1, "reduction"), _loop("e", d.dh // d.th, d.th, "reduction")]
    o_proj = _matmul("o_proj", d, o_loops, {"attn": ("kh", "g", "i", "e")}, {"o": ("i", "n")},
                     d.ts, d.td, d.th, d.Hkv * d.G * (d.dh // d.th))
    return [qk, softmax, av, o_proj]


def _ffn_kernels(shape: ModelShape, d: _Dims) -> list:
    """up (and gate), act, down: (i, n, k) matmul nests around an elementwise activation."""
    i = _loop("i", d.S // d.ts, d.ts)
    wide = [i, _loop("n", d.F // d.tf, d.tf), _loop("k", d.D // d.td, d.td, "reduction")]
    up = _matmul("up", d, wide, {"n2": ("i", "k")}, {"u": ("i", "n")}, d.ts, d.tf, d.td, d.D // d.td)
    act_ins = {"u": ("i", "n")}
    out = [up]
    if shape.gated:
        out.append(_matmul("gate", d, wide, {"n2": ("i", "k")}, {"z": ("i", "n")},
                           d.ts, d.tf, d.td, d.D // d.td))
        act_ins = {"z": ("i", "n"), "u": ("i", "n")}
    out.append(_elementwise("act", shape.act, d, [i, _loop("n", d.F // d.tf, d.tf)], act_ins,
                            {"a": ("i", "n")}, d.ts * d.tf))
    narrow = [i, _loop("n", d.D // d.td, d.td), _loop("k", d.F // d.tf, d.tf, "reduction")]
    out.append(_matmul("down", d, narrow, {"a": ("i", "k")}, {"dn": ("i", "n")},
                       d.ts, d.td, d.tf, d.F // d.tf))
    return out


def _residual_kernels(d: _Dims) -> list:
    ports = ("i", "c")
    return [_elementwise("res1", "add", d, _row_loops(d), {"x": ports, "o": ports}, {"h1": ports},
                         d.ts * d.td),
            _elementwise("res2", "add", d, _row_loops(d), {"h1": ports, "dn": ports}, {"y": ports},
                         d.ts * d.td)]


def _kernels(shape: ModelShape, d: _Dims) -> list:
    """Every kernel, in topological order."""
    x_in, y_out = _io_kernels(d)
    ln1, ln2 = _norm_kernels(shape, d)
    res1, res2 = _residual_kernels(d)
    return ([x_in, ln1] + _projection_kernels(d) + _attention_kernels(d) + [res1, ln2]
            + _ffn_kernels(shape, d) + [res2, y_out])


# == streams ======================================================================================

# (stream name, tensor, producer, consumer); gated-FFN streams are dropped for plain FFNs
_EDGES = [
    ("x", "x", "x_in", "ln1"), ("x_res", "x", "x_in", "res1"),
    ("ln1_q", "n1", "ln1", "q_proj"), ("ln1_k", "n1", "ln1", "k_proj"), ("ln1_v", "n1", "ln1", "v_proj"),
    ("q", "q", "q_proj", "qk"), ("k", "k", "k_proj", "qk"), ("scores", "s", "qk", "softmax"),
    ("probs", "p", "softmax", "av"), ("v", "v", "v_proj", "av"), ("attn", "attn", "av", "o_proj"),
    ("o", "o", "o_proj", "res1"), ("h1", "h1", "res1", "ln2"), ("h1_res", "h1", "res1", "res2"),
    ("ln2_up", "n2", "ln2", "up"), ("ln2_gate", "n2", "ln2", "gate"),
    ("up_out", "u", "up", "act"), ("gate_out", "z", "gate", "act"), ("act_out", "a", "act", "down"),
    ("down_out", "dn", "down", "res2"), ("y", "y", "res2", "y_out"),
]


def _stream_types(d: _Dims, shapes: dict, tensor: str, src: _Kernel, dst: _Kernel):
    """(src_type, dst_type) of one tensor edge, from the producer's and consumer's nests."""
    src_type = loop_nest_type(d.dtype, shapes[tensor], src.loops, src.outs[tensor], output=True)
    dst_type = loop_nest_type(d.dtype, shapes[tensor], dst.loops, dst.ins[tensor])
    return src_type, dst_type


def _streams(d: _Dims, kernels: list) -> list[tuple[str, str, str, ITensorType, ITensorType]]:
    """(name, src, dst, src_type, dst_type) of every edge whose two kernels exist."""
    by_name, shapes = {k.name: k for k in kernels}, _shapes(d)
    out = []
    for name, tensor, src, dst in _EDGES:
        if src in by_name and dst in by_name:
            out.append((name, src, dst) + _stream_types(d, shapes, tensor, by_name[src], by_name[dst]))
    return out


# == the instance =================================================================================

def _check_args(model: str, seq_len, tile, dtype: str, c_max_fraction, problem: str) -> ModelShape:
    """The model's shape; :class:`InstanceError` naming the first bad argument."""
    if model not in MODELS:
        raise unknown_name_error("model", model, MODELS)
    for arg, value in (("seq_len", seq_len), ("tile", tile)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InstanceError(f"transformer_block argument {arg}: expected a positive integer, "
                                f"got {value!r}")
    if dtype not in DSP_PER_MAC:
        raise unknown_name_error("dtype", dtype, DSP_PER_MAC)
    if problem not in NEEDS_GRAPH:
        raise unknown_name_error("problem", problem, NEEDS_GRAPH)
    if c_max_fraction is not None:
        if isinstance(c_max_fraction, bool) or not isinstance(c_max_fraction, (int, float)) \
                or not 0 < c_max_fraction < math.inf:
            raise InstanceError(f"transformer_block argument c_max_fraction: expected a positive "
                                f"number or None, got {c_max_fraction!r}")
        if problem not in ("fusion", "pipeline"):
            raise InstanceError(f"transformer_block argument c_max_fraction sets options.fusion.c_max, "
                                f"which problem {problem!r} does not use; pass None")
    shape = MODELS[model]
    if shape.heads % shape.kv_heads:
        raise InstanceError(f"model {model!r}: {shape.heads} heads are not a multiple of "
                            f"{shape.kv_heads} KV heads")
    return shape


def _c_max(kernel_bytes: int, conv_bytes: int, c_max_fraction, kernels: list) -> int | None:
    """The fusion capacity (None: the platform's on-chip bytes); raises when a kernel alone
    exceeds it, since no fusion could then be feasible."""
    if c_max_fraction is None:
        cap, what = load_preset(PLATFORM).onchip_bytes, f"the {PLATFORM} on-chip bytes"
        c_max = None
    else:
        cap = c_max = max(1, round(c_max_fraction * (kernel_bytes + conv_bytes)))
        what = f"c_max = {c_max_fraction} x {kernel_bytes + conv_bytes} bytes"
    big = max(kernels, key=lambda k: k.resources["bytes"])
    if big.resources["bytes"] > cap:
        raise InstanceError(f"kernel {big.name!r} alone needs {big.resources['bytes']} bytes, more than "
                            f"{what} ({cap}); use a larger c_max_fraction or a smaller tile or seq_len")
    return c_max


def _description(model: str, shape: ModelShape, d: _Dims, c_max_fraction) -> str:
    heads = (f"{shape.heads} heads" if shape.kv_heads == shape.heads
             else f"{shape.heads} heads / {shape.kv_heads} KV heads (GQA)")
    ffn = "gated SiLU FFN (gate, up, down)" if shape.gated else "GELU FFN (up, down)"
    cap = ("c_max = platform on-chip bytes" if c_max_fraction is None
           else f"c_max = {c_max_fraction} x (kernel + converter bytes)")
    return (f"One {shape.label} decoder layer (dfopt.bench.transformer {model!r}): hidden {d.D}, "
            f"{heads} of dim {d.dh}, FFN {d.F}, {shape.norm}, {ffn}; shapes from {shape.source} "
            f"on Hugging Face. seq_len {d.S}, tiles tokens {d.ts} x hidden {d.td} x head {d.th} "
            f"x FFN {d.tf}, {d.dtype}; {cap}.")


def block_costs(inst: dict) -> tuple[int, int]:
    """(sum of kernel bytes, sum of converter bytes) of a generated instance dict."""
    graph = inst["graph"]
    kernel_bytes = sum(k["resources"]["bytes"] for k in graph["kernels"])
    conv = sum(converter_buffer(ITensorType.from_dict(s["src_type"]),
                                ITensorType.from_dict(s["dst_type"])).bytes for s in graph["streams"])
    return kernel_bytes, conv


def transformer_block(model: str, seq_len: int = 128, tile: int = 64, dtype: str = "f32",
                      c_max_fraction: float | None = None, problem: str = "fusion") -> dict:
    """The instance dict of one decoder layer of ``model`` (a key of :data:`MODELS`).

    Each dimension is tiled by its largest divisor that is at most ``tile``. With
    ``c_max_fraction`` the fusion capacity ``options.fusion.c_max`` is that fraction of the sum of
    all kernel bytes and all converter bytes (rounded); without it the platform's on-chip bytes
    apply. Raises :class:`InstanceError` for a bad argument, or when one kernel alone exceeds the
    capacity. Deterministic: the same arguments give the same dict.

    >>> inst = transformer_block("llama", c_max_fraction=0.3)
    >>> [k["name"] for k in inst["graph"]["kernels"]][9:]
    ['res1', 'ln2', 'up', 'gate', 'act', 'down', 'res2', 'y_out']
    >>> inst["options"]["fusion"]["c_max"] == round(0.3 * sum(block_costs(inst)))
    True
    """
    shape = _check_args(model, seq_len, tile, dtype, c_max_fraction, problem)
    d = _dims(shape, seq_len, tile, dtype)
    kernels = _kernels(shape, d)
    streams = _streams(d, kernels)
    kernel_bytes = sum(k.resources["bytes"] for k in kernels)
    conv_bytes = sum(converter_buffer(s, t).bytes for _, _, _, s, t in streams)
    c_max = _c_max(kernel_bytes, conv_bytes, c_max_fraction, kernels)
    suffix = "" if c_max_fraction is None else f"-c{c_max_fraction:g}"
    inst = {"format": INSTANCE_FORMAT, "name": f"{model}-block-s{seq_len}-t{tile}-{dtype}{suffix}",
            "problem": problem, "description": _description(model, shape, d, c_max_fraction),
            "platform": PLATFORM,
            "graph": {"kernels": [k.to_dict() for k in kernels],
                      "streams": [{"name": n, "src": a, "dst": b, "src_type": s.to_dict(),
                                   "dst_type": t.to_dict()} for n, a, b, s, t in streams]}}
    if c_max is not None:
        inst["options"] = {"fusion": {"c_max": c_max}}
    return inst
