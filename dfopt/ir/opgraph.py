"""Operator graphs: tensor ops with shapes and dtypes (a tiny ONNX), the input of ``pipeline``.

An instance's ``operators`` object declares the graph inputs in ``tensors`` (``kind``: ``input``,
the default, or ``weight``), lists ``ops`` (each with ``name``, ``op``, ``inputs``, ``output`` and
its attributes as further fields) and names the ``outputs``. Intermediate and output tensors are
inferred: every op's output shape follows from its inputs and attributes, and its dtype is the one
dtype all its inputs share. A tensor that an op produces may still be declared in ``tensors``
(without a ``kind``); its shape and dtype are then checked against the inferred ones.

Op kinds (:data:`SIGNATURES` lists the inputs and attributes with their defaults):

- ``matmul`` [A, B]: A is [..., M, K] ([..., K, M] with ``transpose_a``), B is [..., K, N]
  ([..., N, K] with ``transpose_b``), with A's leading (batch) dimensions or 2-D (shared);
  the output is ``scale`` * A @ B, [..., M, N].
- ``add``, ``mul`` [x, y]: y has x's shape, or is a vector of x's last dimension (a broadcast
  bias or scale); the output has x's shape.
- ``gelu`` [x] with ``approximate``: ``tanh`` (the default, ``0.5 x (1 + tanh(sqrt(2/pi) (x +
  0.044715 x^3)))``) or ``none`` (the exact ``0.5 x (1 + erf(x / sqrt 2))``, PyTorch's default);
  ``silu``, ``relu``, ``softmax`` (last axis) [x].
- ``layernorm`` [x, gamma, beta] and ``rmsnorm`` [x, gamma] over the last axis, with ``eps``.
- ``transpose`` [x] with ``perm``; ``reshape`` [x] with ``shape`` (same element count, no -1).
- ``mask`` [x] with ``causal`` (required, and ``true``: the only form so far), ``offset`` (a
  non-negative integer, default 0) and ``value`` (a finite number, default -1e9): the causal
  attention mask. x has rank >= 2, its last two axes are [query, key]; an element whose key index
  exceeds its query index + ``offset`` (a KV cache of ``offset`` past keys) becomes ``value``,
  the others pass unchanged. -1e9 is finite (a row softmax never sees ``-inf - -inf``) and
  representable in f32 and bf16; f16 rounds it to -inf. Exporters write the dtype's lowest value
  (Hugging Face) or -inf (``torch`` SDPA); after the softmax that follows, each gives 0.
- Data movement (no arithmetic): ``concat`` [x1, ..., xn] with ``axis`` (a non-negative axis
  number; the inputs agree in every other dimension); ``slice`` [x] with ``starts``, ``ends``,
  ``steps``, one entry per axis, resolved (``0 <= start < end <= dim``, end exclusive, step >= 1;
  the output has ``ceil((end - start) / step)`` along each axis); ``expand`` [x] with ``shape``
  (NumPy broadcasting: x's axes, aligned at the last, are 1 or equal; leading axes may be added);
  ``embedding`` [ids, table]: ``ids`` an i32 tensor of any shape, ``table`` [V, D] of any dtype
  (the result's), the output ``[*ids.shape, D]`` holds row ``ids[...]`` of the table. Ids must lie
  in ``[0, V)``: the reference refuses others, the HLS kernel clamps them into range.
- Windows over NCHW feature maps (dilation 1): ``conv2d`` [X, W] or [X, W, B]: X [N, C, H, W],
  W [O, C / groups, kh, kw], the optional bias B [O] (a third input, as ONNX's Conv has it), with
  ``strides`` [sh, sw] (default [1, 1]), ``pads`` [top, left, bottom, right] (zeros, default 0)
  and ``groups`` (default 1; C for a depthwise conv; it divides C and O); ``pool`` [x] with
  ``mode`` (``max`` or ``avg``), ``kernel`` [kh, kw], ``strides``, ``pads`` (each below the
  kernel's extent: a window is never all padding) and ``count_include_pad`` (avg: divide by kh kw,
  padding included, rather than by the window's elements inside x; default false, as ONNX). A
  global average pool is ``kernel`` [H, W]. The output is [N, O (or C), Ho, Wo] with ``Ho = (H +
  top + bottom - kh) // sh + 1`` (floor), likewise ``Wo``.

``gelu``, ``silu``, ``softmax``, ``mask``, the windows and the norms need a float dtype; integer ``matmul`` takes
integer scales only. An op whose result nobody uses and that is not an output is allowed
(:meth:`OpGraph.unused` lists such tensors). ``ops`` may come in any order; the graph keeps a
topological order that follows the file order where it can.

>>> g = OpGraph.from_dict({
...     "tensors": {"x": {"shape": [512, 128], "dtype": "f32"},
...                 "w1": {"shape": [128, 256], "dtype": "f32", "kind": "weight"},
...                 "w2": {"shape": [256, 128], "dtype": "f32", "kind": "weight"}},
...     "ops": [{"name": "fc1", "op": "matmul", "inputs": ["x", "w1"], "output": "h"},
...             {"name": "act", "op": "gelu", "inputs": ["h"], "output": "g"},
...             {"name": "fc2", "op": "matmul", "inputs": ["g", "w2"], "output": "y"}],
...     "outputs": ["y"]})
>>> g.tensors["h"]
TensorSpec(name='h', shape=(512, 256), dtype='f32', kind='intermediate')
>>> [op.name for op in g.consumers("h")], g.producer("y").name, g.flops("fc1")
(['act'], 'fc2', 33554432)
>>> bad = g.to_dict()
>>> bad["tensors"]["w2"]["shape"] = [128, 128]
>>> OpGraph.from_dict(bad)  # doctest: +NORMALIZE_WHITESPACE
Traceback (most recent call last):
...
dfopt.errors.InstanceError: /operators/ops/2/inputs/1: op fc2 (matmul): A is [512, 256] but B is [128, 128]:
inner dimensions 256 and 128 differ (A = 'g', B = 'w2')
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from dfopt.errors import InstanceError
from dfopt.schema import did_you_mean, found, pointer, sorted_issues, to_problems

OP_KINDS = ("matmul", "add", "mul", "gelu", "silu", "relu", "softmax", "layernorm", "rmsnorm",
            "transpose", "reshape", "mask", "sub", "div", "unary", "reduce", "rope",
            "concat", "slice", "expand", "embedding", "conv2d", "pool")
DTYPES = ("f32", "f64", "f16", "bf16", "i32", "i16", "i8")  # names as in itensor.DTYPE_BITS
FLOAT_DTYPES = ("f32", "f64", "f16", "bf16")
TENSOR_KINDS = ("input", "weight", "intermediate", "output")
DECLARED_KINDS = ("input", "weight")  # the kinds a ``tensors`` entry may give


#: ``mask``'s default fill: finite, so that a softmax after it never computes ``-inf - -inf``.
MASK_VALUE = -1e9


@dataclass(frozen=True)
class Signature:
    """What an op kind takes: input roles, attributes (name -> default; None: required), whether
    it needs a float dtype, its flops per output element (:meth:`OpGraph.flops`), and whether its
    one input role repeats (``variadic``: concat's x1..xn, at least one), and how many of its last
    input roles may be left out (``optional``: conv2d's bias B)."""

    inputs: tuple
    attrs: dict
    float_only: bool = False
    flops_per_element: int = 1
    variadic: bool = False
    optional: int = 0


SIGNATURES = {
    "matmul": Signature(("A", "B"), {"transpose_a": False, "transpose_b": False, "scale": 1}),
    "add": Signature(("x", "y"), {}),
    "mul": Signature(("x", "y"), {}),
    "gelu": Signature(("x",), {"approximate": "tanh"}, True, 8),   # cube, 3 mul-adds, tanh (or erf), scale
    "silu": Signature(("x",), {}, True, 4),       # exp, add, divide, multiply
    "relu": Signature(("x",), {}),
    "softmax": Signature(("x",), {}, True, 5),    # max, subtract, exp, sum, divide
    "layernorm": Signature(("x", "gamma", "beta"), {"eps": 1e-5}, True, 8),
    "rmsnorm": Signature(("x", "gamma"), {"eps": 1e-6}, True, 5),
    "transpose": Signature(("x",), {"perm": None}, False, 0),   # data movement only
    "reshape": Signature(("x",), {"shape": None}, False, 0),
    "mask": Signature(("x",), {"causal": None, "offset": 0, "value": MASK_VALUE}, True, 1),  # compare, select
    "sub": Signature(("x", "y"), {}),
    "div": Signature(("x", "y"), {}, True),
    "unary": Signature(("x",), {"fn": None, "exponent": 1}, True, 1),   # UNARY_FLOPS per fn
    "reduce": Signature(("x",), {"reduction": None, "keepdims": False}, False, 1),  # per input element
    "rope": Signature(("x", "cos", "sin"), {}, True, 3),    # x cos + rotate_half(x) sin
    "concat": Signature(("x",), {"axis": None}, False, 0, variadic=True),   # data movement only
    "slice": Signature(("x",), {"starts": None, "ends": None, "steps": None}, False, 0),
    "expand": Signature(("x",), {"shape": None}, False, 0),
    "embedding": Signature(("ids", "table"), {}, False, 0),    # a row copy per id
    "conv2d": Signature(("X", "W", "B"), {"strides": (1, 1), "pads": (0, 0, 0, 0), "groups": 1}, True, 2,
                        optional=1),    # a multiply-add per window element (window_flops)
    "pool": Signature(("x",), {"mode": None, "kernel": None, "strides": (1, 1), "pads": (0, 0, 0, 0),
                               "count_include_pad": False}, True, 1),   # a max or add per window element
}


@dataclass(frozen=True)
class TensorSpec:
    """A tensor: ``kind`` is input | weight (declared) or intermediate | output (inferred)."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    kind: str = "input"

    @property
    def size(self) -> int:
        """Elements."""
        return math.prod(self.shape)


@dataclass(frozen=True)
class Op:
    """One op; ``attrs`` holds every attribute of its kind, defaults filled (lists as tuples).
    Hashing leaves ``attrs`` out (ops are unique by name within a graph)."""

    name: str
    op: str
    inputs: tuple[str, ...]
    output: str
    attrs: dict = field(hash=False)


class OpGraph:
    """Tensors in definition order (graph inputs as declared, then op outputs in op order), ops in
    a topological order, and the output names. Build it with :meth:`from_dict`, which validates;
    the constructor trusts its arguments."""

    def __init__(self, tensors: Mapping[str, TensorSpec], ops: Iterable[Op], outputs: Iterable[str]) -> None:
        self.tensors: dict[str, TensorSpec] = dict(tensors)
        self.ops: list[Op] = list(ops)
        self.outputs: tuple[str, ...] = tuple(outputs)
        self._producer = {op.output: op for op in self.ops}
        self._by_name = {op.name: op for op in self.ops}
        self._consumers: dict[str, list[Op]] = {name: [] for name in self.tensors}
        for op in self.ops:
            for name in dict.fromkeys(op.inputs):
                self._consumers.setdefault(name, []).append(op)

    @classmethod
    def from_dict(cls, d: Any, base: Iterable[str | int] = ("operators",)) -> OpGraph:
        """The graph of an ``operators`` object; :class:`InstanceError` listing every fault
        (with JSON pointers under ``base``) when it is not a valid graph."""
        reader = _Reader(d, tuple(base))
        if reader.issues:
            raise InstanceError(problems=to_problems(reader.issues))
        return cls({name: spec for name, spec in reader.specs.items() if spec is not None}, reader.ops,
                   reader.outputs)

    def to_dict(self) -> dict:
        """The canonical ``operators`` object: graph inputs only in ``tensors``, attributes that
        differ from their defaults only. ``from_dict(g.to_dict()) == g``."""
        tensors = {}
        for t in self.tensors.values():
            if t.kind in DECLARED_KINDS:
                tensors[t.name] = {"shape": list(t.shape), "dtype": t.dtype}
                if t.kind != "input":
                    tensors[t.name]["kind"] = t.kind
        return {"tensors": tensors, "ops": [_op_to_dict(op) for op in self.ops],
                "outputs": list(self.outputs)}

    # -- queries ------------------------------------------------------------------------------
    def producer(self, tensor: str) -> Op | None:
        """The op that produces ``tensor`` (None for graph inputs and weights)."""
        return self._producer.get(tensor)

    def consumers(self, tensor: str) -> list[Op]:
        """The ops that read ``tensor``, in op order (an op reading it twice appears once)."""
        return list(self._consumers.get(tensor, []))

    def op(self, name: str) -> Op:
        """The op called ``name`` (``KeyError`` listing the op names when there is none)."""
        if name not in self._by_name:
            raise KeyError(f"no op {name!r} in the graph; ops: {', '.join(self._by_name)}")
        return self._by_name[name]

    @property
    def inputs(self) -> tuple[str, ...]:
        """Names of the graph inputs and weights (the tensors no op produces)."""
        return tuple(n for n, t in self.tensors.items() if t.kind in DECLARED_KINDS)

    def unused(self) -> list[str]:
        """Tensors that no op reads and that are not outputs (dead results, idle inputs)."""
        return [n for n in self.tensors if not self._consumers.get(n) and n not in self.outputs]

    def flops(self, op: Op | str) -> int:
        """Arithmetic operations of ``op`` (an :class:`Op` or its name).

        ``matmul``: 2*M*N*K per batch entry (a multiply and an add per product term; the
        ``scale`` is not counted). Other ops: output elements x :attr:`Signature.flops_per_element`
        (1 for add, sub, div, mul, relu and mask, per fn for unary (:data:`UNARY_FNS`), 1 per input
        element for reduce, rope 3; gelu 8, silu 4, softmax 5, layernorm 8, rmsnorm 5, counting exp,
        tanh, sqrt and divide as one each; 0 for the movers: transpose, reshape, concat, slice, expand,
        embedding, which only move data).
        """
        op = self.op(op) if isinstance(op, str) else op
        out = self.tensors[op.output]
        if op.op == "matmul":
            a = self.tensors[op.inputs[0]].shape
            k = a[-2] if op.attrs["transpose_a"] else a[-1]
            return 2 * out.size * k
        if op.op == "unary":
            return out.size * UNARY_FNS[op.attrs["fn"]]
        if op.op == "reduce":
            return self.tensors[op.inputs[0]].size
        if op.op in ("conv2d", "pool"):
            return out.size * window_size(op, self.tensors) * SIGNATURES[op.op].flops_per_element
        return out.size * SIGNATURES[op.op].flops_per_element

    def total_flops(self) -> int:
        return sum(self.flops(op) for op in self.ops)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, OpGraph):
            return NotImplemented
        return (list(self.tensors.items()), self.ops, self.outputs) == \
            (list(other.tensors.items()), other.ops, other.outputs)

    def __repr__(self) -> str:
        return f"OpGraph({len(self.ops)} ops, {len(self.tensors)} tensors, outputs {list(self.outputs)})"


def operator_issues(d: Any, base: tuple = ("operators",)) -> list[tuple[tuple, str]]:
    """Every fault of an ``operators`` object as ``(path, message)``, in path order; empty when
    :meth:`OpGraph.from_dict` accepts it. Checks the structure itself too, so it also works
    without the schema (``dfopt validate`` runs both; drop the issues under schema-faulty paths).

    >>> operator_issues({"tensors": {"x": {"shape": [4], "dtype": "f32"}},
    ...                  "ops": [{"name": "a", "op": "relu", "inputs": ["xx"], "output": "y"}],
    ...                  "outputs": ["y"]}, ("operators",))
    [(('operators', 'ops', 0, 'inputs', 0), "op a (relu): input 0 names unknown tensor 'xx', did you mean 'x'?")]
    """
    return _Reader(d, tuple(base)).issues


def _op_to_dict(op: Op) -> dict:
    out = {"name": op.name, "op": op.op, "inputs": list(op.inputs), "output": op.output}
    for key, value in op.attrs.items():
        if value != SIGNATURES[op.op].attrs[key]:
            out[key] = list(value) if isinstance(value, tuple) else value
    return out


# == reading and checking ========================================================================

class _Fault(Exception):
    """A shape or dtype rule broken by one op: the message and the field (below the op) at fault."""

    def __init__(self, message: str, field: tuple):
        super().__init__(message)
        self.message, self.field = message, field


@dataclass
class _Decl:
    """One ``tensors`` entry as given (None: absent or faulty)."""

    shape: tuple | None
    dtype: str | None
    kind: str | None
    ok: bool


@dataclass
class _OpRec:
    """One ``ops`` entry as read; ``ok`` when its kind, inputs and attributes are all sound."""

    index: int
    name: str | None
    kind: str | None
    inputs: list
    output: str | None
    attrs: dict
    ok: bool

    @property
    def who(self) -> str:
        name = self.name if self.name is not None else f"#{self.index}"
        return f"op {name} ({self.kind})" if self.kind else f"op {name}"

    def op(self) -> Op:
        """The checked op (only for a record read without faults)."""
        assert self.name is not None and self.kind is not None and self.output is not None
        return Op(self.name, self.kind, tuple(self.inputs), self.output, dict(self.attrs))


class _Reader:
    """Reads and checks an ``operators`` object in phases: structure, names, cycles, shapes.
    Leaves ``issues`` and, when there are none, the parts of the graph."""

    def __init__(self, d: Any, base: tuple) -> None:
        self.base = base
        self.issues: list[tuple[tuple, str]] = []
        self.decls: dict[str, _Decl] = {}
        self.recs: list[_OpRec] = []
        self.outputs: tuple = ()
        self.specs: dict[str, TensorSpec | None] = {}
        self.ops: list[Op] = []
        if not isinstance(d, dict):
            self._add((), f"expected an object with tensors, ops and outputs, got {found(d)}")
            return
        self._read_top(d)
        self._resolve()
        self._infer(self._order())
        self.issues = sorted_issues(self.issues)

    def _add(self, path: tuple, message: str) -> None:
        self.issues.append((self.base + path, message))

    def _ptr(self, path: tuple) -> str:
        return pointer(self.base + path)

    # -- structure ----------------------------------------------------------------------------
    def _read_top(self, d: dict) -> None:
        for key in d:
            if key not in ("tensors", "ops", "outputs"):
                self._add((key,), f"unknown field {key!r}{did_you_mean(str(key), ['tensors', 'ops', 'outputs'])} "
                                  "(expected one of: tensors, ops, outputs)")
        for key, kind in (("tensors", dict), ("ops", list), ("outputs", list)):
            value = d.get(key)
            if not isinstance(value, kind) or not value:
                what = "a non-empty object of tensor declarations" if kind is dict else "a non-empty array"
                got = "nothing" if key not in d else found(value)
                self._add((key,), f"expected {what}, got {got}")
        tensors = d.get("tensors")
        if not isinstance(tensors, dict):
            tensors = {}
        for name, entry in tensors.items():
            self._read_tensor(name, entry)
        ops = d.get("ops")
        if not isinstance(ops, list):
            ops = []
        for i, entry in enumerate(ops):
            self._read_op(i, entry)
        outputs = d.get("outputs")
        if not isinstance(outputs, list):
            outputs = []
        self.outputs = tuple(outputs)
        for i, name in enumerate(outputs):
            if not isinstance(name, str) or not name:
                self._add(("outputs", i), f"expected a tensor name, got {found(name)}")
            elif name in outputs[:i]:
                self._add(("outputs", i), f"output {name!r} is listed twice")

    def _read_tensor(self, name: str, entry) -> None:
        path = ("tensors", name)
        if not name:
            self._add(path, "a tensor name must not be empty")
        if not isinstance(entry, dict):
            self._add(path, f"tensor {name!r}: expected an object with shape and dtype, got {found(entry)}")
            self.decls[name] = _Decl(None, None, None, False)
            return
        for key in entry:
            if key not in ("shape", "dtype", "kind"):
                self._add(path + (key,), f"tensor {name!r}: unknown field {key!r}"
                                         f"{did_you_mean(str(key), ['shape', 'dtype', 'kind'])} "
                                         "(expected one of: shape, dtype, kind)")
        who = f"tensor {name!r}"
        shape = _positive_ints(entry.get("shape"))
        if "shape" in entry and shape is None:
            self._add(path + ("shape",), f"{who}: expected a shape (a non-empty array of positive integers), "
                                         f"got {found(entry['shape'])}")
        dtype = self._choice(entry, "dtype", DTYPES, path, who)
        kind = self._choice(entry, "kind", DECLARED_KINDS, path, who)
        ok = all(key not in entry or value is not None
                 for key, value in (("shape", shape), ("dtype", dtype), ("kind", kind)))
        self.decls[name] = _Decl(shape, dtype, kind, ok)

    def _choice(self, entry: dict, key: str, choices, path: tuple, who: str) -> str | None:
        """``entry[key]`` when it is one of ``choices``; None (and an issue, if given) otherwise."""
        value = entry.get(key)
        if key not in entry or value in choices:
            return value
        listing = ", ".join(choices)
        if isinstance(value, str):
            message = f"unknown {key} {value!r}{did_you_mean(value, choices)} (expected one of: {listing})"
        else:
            message = f"expected a {key} (one of: {listing}), got {found(value)}"
        self._add(path + (key,), f"{who}: {message}")
        return None

    def _read_op(self, i: int, entry) -> None:
        path = ("ops", i)
        if not isinstance(entry, dict):
            self._add(path, f"op #{i}: expected an object with name, op, inputs and output, got {found(entry)}")
            return
        name = entry.get("name")
        rec = _OpRec(i, name if isinstance(name, str) and name else None, None, [], None, {}, True)
        self.recs.append(rec)
        if rec.name is None:
            got = found(name) if "name" in entry else "nothing"
            self._add(path + ("name",), f"op #{i}: expected a non-empty name, got {got}")
        elif any(r.name == name for r in self.recs[:-1]):
            first = next(r.index for r in self.recs if r.name == name)
            self._add(path + ("name",),
                      f"duplicate op name {name!r} (first at {self._ptr(('ops', first))}); op names must be unique")
        kind = entry.get("op")
        if kind in OP_KINDS:
            rec.kind = kind
        else:
            rec.ok = False
            got = f"unknown op {kind!r}{did_you_mean(kind, OP_KINDS)}" if isinstance(kind, str) else \
                f"expected an op kind, got {found(kind) if 'op' in entry else 'nothing'}"
            self._add(path + ("op",), f"{rec.who}: {got} (expected one of: {', '.join(OP_KINDS)})")
        self._read_op_inputs(rec, entry.get("inputs"), "inputs" in entry)
        output = entry.get("output")
        if isinstance(output, str) and output:
            rec.output = output
        else:
            rec.ok = False
            self._add(path + ("output",), f"{rec.who}: expected an output tensor name, got "
                                          f"{found(output) if 'output' in entry else 'nothing'}")
        if rec.kind is not None:
            self._read_attrs(rec, entry)

    def _read_op_inputs(self, rec: _OpRec, inputs, given: bool) -> None:
        path = ("ops", rec.index, "inputs")
        if not isinstance(inputs, list):
            rec.ok = False
            self._add(path,
                      f"{rec.who}: expected an array of tensor names, got {found(inputs) if given else 'nothing'}")
            return
        for j, name in enumerate(inputs):
            if isinstance(name, str) and name:
                rec.inputs.append(name)
            else:
                rec.ok = False
                rec.inputs.append(None)
                self._add(path + (j,), f"{rec.who}: input {j}: expected a tensor name, got {found(name)}")
        if rec.kind is None:
            return
        roles = SIGNATURES[rec.kind].inputs
        if SIGNATURES[rec.kind].variadic:
            if not inputs:
                rec.ok = False
                self._add(path, f"{rec.who}: expected at least one input ({roles[0]}1, {roles[0]}2, ...), got none")
            return
        least = len(roles) - SIGNATURES[rec.kind].optional
        if not least <= len(inputs) <= len(roles):
            rec.ok = False
            where = path + (len(roles),) if len(inputs) > len(roles) else path
            count = f"{least} or {len(roles)}" if least < len(roles) else str(len(roles))
            shown = ", ".join(roles[:least] + tuple(f"optional {r}" for r in roles[least:]))
            self._add(where, f"{rec.who}: expected {count} input{'s' if len(roles) > 1 else ''} "
                             f"({shown}), got {len(inputs)}: {found(inputs)}")

    def _read_attrs(self, rec: _OpRec, entry: dict) -> None:
        assert rec.kind is not None
        sig = SIGNATURES[rec.kind]
        path = ("ops", rec.index)
        for key, value in entry.items():
            if key in ("name", "op", "inputs", "output"):
                continue
            if key not in sig.attrs:
                rec.ok = False
                takes = ", ".join(sig.attrs) or "no attributes"
                self._add(path + (key,), f"{rec.who}: unknown attribute {key!r}{did_you_mean(str(key), sig.attrs)} "
                                         f"({rec.kind} takes: {takes})")
                continue
            problem = _ATTR_CHECKS[key](value)
            if problem:
                rec.ok = False
                self._add(path + (key,), f"{rec.who}: {key}: {problem}")
            else:
                rec.attrs[key] = tuple(value) if isinstance(value, list) else value
        for key, default in sig.attrs.items():
            if key in rec.attrs or key in entry:
                continue
            if default is None:
                rec.ok = False
                self._add(path, f"{rec.who}: missing attribute {key!r} ({_ATTR_HELP[key]})")
            else:
                rec.attrs[key] = default
        rec.attrs = {key: rec.attrs[key] for key in sig.attrs if key in rec.attrs}

    # -- names --------------------------------------------------------------------------------
    def _resolve(self) -> None:
        """Producers (each tensor at most one, never a declared input), input and output names."""
        self.producer: dict[str, _OpRec] = {}
        for rec in self.recs:
            out = rec.output
            if out is None:
                continue
            decl = self.decls.get(out)
            if out in self.producer:
                first = self.producer[out]
                self._add(("ops", rec.index, "output"), f"{rec.who}: tensor {out!r} is already produced by "
                          f"op {first.name} ({self._ptr(('ops', first.index))}); each tensor has one producer")
                rec.ok = False
            elif decl is not None and decl.kind is not None:
                self._add(("ops", rec.index, "output"), f"{rec.who}: tensor {out!r} is declared as a graph "
                          f"{decl.kind} ({self._ptr(('tensors', out, 'kind'))}) but this op produces it; "
                          "rename the output, or drop the declaration's kind to declare the result's shape")
                rec.ok = False
            else:
                self.producer[out] = rec
        known = list(self.decls) + [n for n in self.producer if n not in self.decls]
        for rec in self.recs:
            for j, name in enumerate(rec.inputs):
                if name is not None and name not in self.decls and name not in self.producer:
                    rec.ok = False
                    self._add(("ops", rec.index, "inputs", j),
                              f"{rec.who}: input {j} names {_unknown_tensor(name, known)}")
        for i, name in enumerate(self.outputs):
            if not isinstance(name, str) or name in self.producer:
                continue
            if name in self.decls:
                self._add(("outputs", i), f"output {name!r} is a graph input: no op produces it; "
                                          "outputs name tensors that ops produce")
            else:
                self._add(("outputs", i), f"output names {_unknown_tensor(name, known)}; no op produces it")
        for name, decl in self.decls.items():
            if name not in self.producer and decl.ok and (decl.shape is None or decl.dtype is None):
                missing = " and ".join(k for k, v in (("shape", decl.shape), ("dtype", decl.dtype)) if v is None)
                self._add(("tensors", name), f"tensor {name!r} is a graph {decl.kind or 'input'} (no op "
                                             f"produces it), so it needs a {missing}")

    # -- order --------------------------------------------------------------------------------
    def _order(self) -> list[_OpRec]:
        """The ops outside cycles in a topological order that keeps file order where it can;
        one issue per cycle (the ops on a cycle, and those after it, get no shapes)."""
        at = {rec.index: rec for rec in self.recs}  # nodes are the ops' indices in the file
        g = nx.MultiDiGraph()
        g.add_nodes_from(at)
        for rec in self.recs:
            for j, name in enumerate(rec.inputs):
                if name in self.producer:
                    g.add_edge(self.producer[name].index, rec.index, key=j)
        cyclic = set()
        for component in sorted(nx.strongly_connected_components(g), key=min):
            first = min(component)
            if len(component) > 1 or g.has_edge(first, first):
                cyclic |= component
                self._add_cycle(nx.find_cycle(g.subgraph(component)), at)
        return [at[i] for i in nx.lexicographical_topological_sort(g.subgraph(set(at) - cyclic))]

    def _add_cycle(self, cycle: list, at: dict) -> None:
        start = min(range(len(cycle)), key=lambda c: cycle[c][0])
        cycle = cycle[start:] + cycle[:start]
        names = " -> ".join(at[u].name or f"#{u}" for u, _, _ in cycle + cycle[:1])
        via = ", ".join(repr(at[u].output) for u, _, _ in cycle)
        _, last, j = cycle[-1]
        rec = at[last]
        self._add(("ops", rec.index, "inputs", j), f"{rec.who}: the ops form a cycle {names} (through "
                  f"tensor{'s' if len(cycle) > 1 else ''} {via}); a tensor cannot depend on itself, so break the cycle")

    # -- shapes and dtypes --------------------------------------------------------------------
    def _infer(self, order: list[_OpRec]) -> None:
        for name, decl in self.decls.items():
            if name not in self.producer:
                self.specs[name] = (TensorSpec(name, decl.shape, decl.dtype, decl.kind or "input")
                                    if decl.ok and decl.shape is not None and decl.dtype is not None else None)
        for rec in order:
            if rec.output is None:  # a faulty op (it has an issue already)
                continue
            spec = self._infer_op(rec)
            self.specs[rec.output] = spec
            if spec is not None:
                self._check_declared(rec, spec)
        if not self.issues:
            self.ops = [r.op() for r in order]

    def _infer_op(self, rec: _OpRec) -> TensorSpec | None:
        ins = [self.specs.get(n) for n in rec.inputs]
        if not rec.ok or rec.kind is None or rec.output is None or any(s is None for s in ins):
            return None
        try:
            dtype = _op_dtype(rec, ins)
            shape = _SHAPE_RULES[rec.kind](ins, rec.attrs)
        except _Fault as fault:
            self._add(("ops", rec.index) + fault.field, f"{rec.who}: {fault.message}")
            return None
        kind = "output" if rec.output in self.outputs else "intermediate"
        return TensorSpec(rec.output, tuple(shape), dtype, kind)

    def _check_declared(self, rec: _OpRec, spec: TensorSpec) -> None:
        decl = self.decls.get(spec.name)
        if decl is None:
            return
        for key, given, inferred in (("shape", decl.shape, spec.shape), ("dtype", decl.dtype, spec.dtype)):
            if given is not None and given != inferred:
                show = (lambda v: str(list(v))) if key == "shape" else str
                self._add(("tensors", spec.name, key), f"tensor {spec.name!r} is declared with {key} {show(given)} "
                          f"but {rec.who} produces {show(inferred)}")


def _unknown_tensor(name: str, known: list) -> str:
    hint = did_you_mean(name, known)
    if hint:
        return f"unknown tensor {name!r}{hint}"
    shown = ", ".join(known[:8]) + (", ..." if len(known) > 8 else "")
    return f"unknown tensor {name!r} (known tensors: {shown or 'none'})"


def _positive_ints(value) -> tuple | None:
    if not isinstance(value, list) or not value:
        return None
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in value):
        return None
    return tuple(value)


# -- attributes -----------------------------------------------------------------------------------

def _check_bool(value) -> str | None:
    return None if isinstance(value, bool) else f"expected true or false, got {found(value)}"


def _check_number(value, positive: bool = False) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return f"expected a{' positive' if positive else ''} number, got {found(value)}"
    return f"expected a positive number, got {found(value)}" if positive and value <= 0 else None


def _check_perm(value) -> str | None:
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return f"expected an array of axis numbers, got {found(value)}"
    return None


def _check_shape(value) -> str | None:
    if isinstance(value, list) and -1 in value:
        return (f"got {found(value)}: reshape infers no dimension from -1; write every dimension out "
                "(their product must equal the input's element count)")
    if _positive_ints(value) is None:
        return f"expected a non-empty array of positive integers, got {found(value)}"
    return None


def _check_causal(value) -> str | None:
    if value is True:
        return None
    if value is False:
        return ("false is not supported: only the causal mask (true: key index > query index + offset "
                "masked) is an op kind so far; a padding or arbitrary mask stays an add of a tensor")
    return f"expected true, got {found(value)}"


def _check_offset(value) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return f"expected a non-negative integer (past keys before the first query), got {found(value)}"
    return None


FLOAT32_MAX = 3.4028234663852886e38


def _check_mask_value(value) -> str | None:
    bad = _check_number(value)
    if bad is None and abs(value) > FLOAT32_MAX:
        return f"expected a number within float32's range (|value| <= {FLOAT32_MAX:.8g}), got {found(value)}"
    return bad


def _check_approximate(value) -> str | None:
    return None if value in GELU_FORMS else f"expected one of {', '.join(GELU_FORMS)}, got {found(value)}"


#: gelu's forms: ``tanh`` (the approximation) and ``none`` (exact, with erf).
GELU_FORMS = ("tanh", "none")
#: ``unary``'s functions and their flops per element (exp, tanh, erf, sqrt and a divide count one each).
UNARY_FNS = {"exp": 1, "tanh": 1, "erf": 1, "sigmoid": 3, "sqrt": 1, "rsqrt": 2, "reciprocal": 1, "neg": 1,
             "abs": 1, "square": 1, "pow": 1}
#: ``reduce``'s reductions (over the last axis).
REDUCTIONS = ("sum", "mean", "max", "min")


def _check_fn(value) -> str | None:
    return None if value in UNARY_FNS else f"expected one of {', '.join(UNARY_FNS)}, got {found(value)}"


def _check_reduction(value) -> str | None:
    return None if value in REDUCTIONS else f"expected one of {', '.join(REDUCTIONS)}, got {found(value)}"

def _check_axis(value) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return f"expected a non-negative axis number (0 for the first axis), got {found(value)}"
    return None


def _check_ints(value, least: int) -> str | None:
    """A non-empty array of integers, each at least ``least`` (slice's starts, ends and steps)."""
    if not isinstance(value, list) or not value or \
            not all(isinstance(v, int) and not isinstance(v, bool) and v >= least for v in value):
        return f"expected a non-empty array of integers >= {least}, one per axis of the input, got {found(value)}"
    return None


_ATTR_CHECKS = {"transpose_a": _check_bool, "transpose_b": _check_bool, "scale": _check_number,
                "eps": lambda v: _check_number(v, positive=True), "perm": _check_perm, "shape": _check_shape,
                "approximate": _check_approximate, "causal": _check_causal, "offset": _check_offset,
                "value": _check_mask_value, "fn": _check_fn, "exponent": _check_number,
                "reduction": _check_reduction, "keepdims": _check_bool, "axis": _check_axis,
                "starts": lambda v: _check_ints(v, 0), "ends": lambda v: _check_ints(v, 1),
                "steps": lambda v: _check_ints(v, 1)}
_ATTR_HELP = {"perm": "the permutation of the input's axes, e.g. [1, 0, 2]",
              "causal": "true: mask the keys after each query (the only form so far)",
              "shape": "the output shape, with the input's element count",
              "fn": f"the function: {', '.join(UNARY_FNS)}",
              "reduction": f"the reduction over the last axis: {', '.join(REDUCTIONS)}",
              "axis": "the axis the inputs are joined along (0 .. rank - 1)",
              "starts": "per axis of the input, the first index taken", "ends": "per axis, one past the last index",
              "steps": "per axis, the stride (1: every index)"}


# -- dtype and shape rules ------------------------------------------------------------------------

def _op_dtype(rec: _OpRec, ins: list) -> str:
    assert rec.kind is not None
    if rec.kind == "embedding":
        return _embedding_dtype(ins)
    first = ins[0]
    for j, spec in enumerate(ins[1:], start=1):
        if spec.dtype != first.dtype:
            raise _Fault(f"inputs differ in dtype: {first.name!r} is {first.dtype} but {spec.name!r} is "
                         f"{spec.dtype}; all inputs of an op share one dtype", ("inputs", j))
    if SIGNATURES[rec.kind].float_only and first.dtype not in FLOAT_DTYPES:
        raise _Fault(f"needs a float dtype ({', '.join(FLOAT_DTYPES)}), but input {first.name!r} is "
                     f"{first.dtype}", ("inputs", 0))
    scale = rec.attrs.get("scale", 1)
    if first.dtype not in FLOAT_DTYPES and scale != int(scale):
        raise _Fault(f"scale {scale} needs a float dtype, but the inputs are {first.dtype} "
                     "(an integer matmul takes integer scales only)", ("scale",))
    return first.dtype


def _show(spec: TensorSpec) -> str:
    return str(list(spec.shape))


def _matmul_shape(ins: list, attrs: dict) -> tuple:
    a, b = ins
    for j, spec in enumerate(ins):
        if len(spec.shape) < 2:
            raise _Fault(f"{'AB'[j]} ({spec.name!r}) is {_show(spec)}: a matmul operand needs rank >= 2",
                         ("inputs", j))
    names = f"(A = {a.name!r}, B = {b.name!r})"
    ta, tb = attrs["transpose_a"], attrs["transpose_b"]
    (m, ka), (kb, n) = (a.shape[-2:][::-1] if ta else a.shape[-2:]), (b.shape[-2:][::-1] if tb else b.shape[-2:])
    shown = f"A is {_show(a)}{' (transposed)' if ta else ''} but B is {_show(b)}{' (transposed)' if tb else ''}"
    if ka != kb:
        raise _Fault(f"{shown}: inner dimensions {ka} and {kb} differ {names}", ("inputs", 1))
    if len(b.shape) > 2 and b.shape[:-2] != a.shape[:-2]:
        raise _Fault(f"{shown}: batch dimensions {list(a.shape[:-2])} and {list(b.shape[:-2])} differ; B needs "
                     f"A's leading dimensions, or rank 2 to be shared across the batch {names}", ("inputs", 1))
    return a.shape[:-2] + (m, n)


def _binary_shape(ins: list, attrs: dict) -> tuple:
    x, y = ins
    if broadcast_kind(y.shape, x.shape) is not None:
        return x.shape
    raise _Fault(f"input {x.name!r} is {_show(x)} but input {y.name!r} is {_show(y)}: expected the second "
                 f"to broadcast to the first (NumPy's rule, right-aligned: each of its dimensions equal to the "
                 f"first's or 1), such as a vector [{x.shape[-1]}] of its last dimension or a column "
                 f"{list(x.shape[:-1] + (1,))}", ("inputs", 1))


def broadcast_kind(y: tuple, x: tuple) -> str | None:
    """How a binary op's second operand of shape ``y`` broadcasts to ``x``: ``same``, ``vector``
    (``x``'s trailing dimensions: a bias along the last axes), ``general`` (right-aligned, each
    dimension equal or 1: a column ``[..., 1]``, a per-channel ``[C, 1, 1]``), or None.

    >>> broadcast_kind((4, 8), (4, 8)), broadcast_kind((8,), (4, 8)), broadcast_kind((4, 1), (4, 8))
    ('same', 'vector', 'general')
    >>> broadcast_kind((3, 1, 1), (2, 3, 5, 5)), broadcast_kind((4,), (4, 8)), broadcast_kind((1, 2, 8), (2, 8))
    ('general', None, None)
    """
    y, x = tuple(y), tuple(x)
    if y == x:
        return "same"
    if len(y) > len(x) or not y:
        return None
    if y == x[len(x) - len(y):]:
        return "vector"
    if all(a in (b, 1) for a, b in zip(y, x[len(x) - len(y):])):
        return "general"
    return None


def _unary_shape(ins: list, attrs: dict) -> tuple:
    return ins[0].shape


def _norm_shape(ins: list, attrs: dict) -> tuple:
    x = ins[0]
    for j, spec in enumerate(ins[1:], start=1):
        if spec.shape != x.shape[-1:]:
            role = ("gamma", "beta")[j - 1]
            raise _Fault(f"{role} {spec.name!r} is {_show(spec)} but input {x.name!r} is {_show(x)}: expected "
                         f"{role} of shape [{x.shape[-1]}] (the normalised last dimension)", ("inputs", j))
    return x.shape


def _transpose_shape(ins: list, attrs: dict) -> tuple:
    x, perm = ins[0], attrs["perm"]
    rank = len(x.shape)
    if len(perm) != rank:
        raise _Fault(f"perm {list(perm)} has {len(perm)} entries but input {x.name!r} is {_show(x)} (rank {rank}); "
                     f"expected a permutation of 0..{rank - 1}", ("perm",))
    if sorted(perm) != list(range(rank)):
        raise _Fault(f"perm {list(perm)} is not a permutation of 0..{rank - 1} (each axis of input {x.name!r} "
                     "exactly once)", ("perm",))
    return tuple(x.shape[p] for p in perm)


def _reshape_shape(ins: list, attrs: dict) -> tuple:
    x, shape = ins[0], attrs["shape"]
    if math.prod(shape) != x.size:
        raise _Fault(f"shape {list(shape)} has {math.prod(shape)} elements but input {x.name!r} is {_show(x)} "
                     f"with {x.size}; a reshape keeps the element count", ("shape",))
    return tuple(shape)


def _mask_shape(ins: list, attrs: dict) -> tuple:
    x = ins[0]
    if len(x.shape) < 2:
        raise _Fault(f"input {x.name!r} is {_show(x)}: a mask needs rank >= 2 (its last two axes are "
                     "[query, key])", ("inputs", 0))
    return x.shape


def _unary_fn_shape(ins: list, attrs: dict) -> tuple:
    if attrs["fn"] != "pow" and attrs["exponent"] != 1:
        raise _Fault(f"exponent {attrs['exponent']} applies to fn pow only (fn is {attrs['fn']})", ("exponent",))
    return ins[0].shape


def _reduce_shape(ins: list, attrs: dict) -> tuple:
    x = ins[0]
    if len(x.shape) < 2 and not attrs["keepdims"]:
        raise _Fault(f"input {x.name!r} is {_show(x)}: reducing its only axis leaves a scalar, which the "
                     "operator graph has not; give keepdims: true (a [1] result)", ("keepdims",))
    if attrs["reduction"] == "mean" and x.dtype not in FLOAT_DTYPES:
        raise _Fault(f"a mean needs a float dtype ({', '.join(FLOAT_DTYPES)}), but input {x.name!r} is "
                     f"{x.dtype}", ("reduction",))
    return x.shape[:-1] + ((1,) if attrs["keepdims"] else ())


def _rope_shape(ins: list, attrs: dict) -> tuple:
    x = ins[0]
    if len(x.shape) < 2 or x.shape[-1] % 2:
        raise _Fault(f"input {x.name!r} is {_show(x)}: rope needs rank >= 2 ([..., positions, dim]) and an even "
                     "last dimension (its two halves rotate together)", ("inputs", 0))
    for j, spec in enumerate(ins[1:], start=1):
        if spec.shape != x.shape[-2:]:
            role = ("cos", "sin")[j - 1]
            raise _Fault(f"{role} {spec.name!r} is {_show(spec)} but input {x.name!r} is {_show(x)}: expected "
                         f"{role} of shape {list(x.shape[-2:])} (one row per position)", ("inputs", j))
    return x.shape


# -- data movement: concat, slice, expand, embedding

def _concat_shape(ins: list, attrs: dict) -> tuple:
    first, axis = ins[0], attrs["axis"]
    rank = len(first.shape)
    if axis >= rank:
        raise _Fault(f"axis {axis} is outside input {first.name!r} {_show(first)} (rank {rank}; axes 0..{rank - 1})",
                     ("axis",))
    for j, spec in enumerate(ins[1:], start=1):
        others = [d for i, d in enumerate(spec.shape) if i != axis]
        if len(spec.shape) != rank or others != [d for i, d in enumerate(first.shape) if i != axis]:
            raise _Fault(f"input {spec.name!r} is {_show(spec)} but input {first.name!r} is {_show(first)}: the "
                         f"inputs of a concat along axis {axis} agree in every other dimension", ("inputs", j))
    return first.shape[:axis] + (sum(s.shape[axis] for s in ins),) + first.shape[axis + 1:]


def _slice_shape(ins: list, attrs: dict) -> tuple:
    x = ins[0]
    rank = len(x.shape)
    for key in ("starts", "ends", "steps"):
        if len(attrs[key]) != rank:
            raise _Fault(f"{key} {list(attrs[key])} has {len(attrs[key])} entries but input {x.name!r} is {_show(x)} "
                         f"(rank {rank}); give one per axis", (key,))
    out = []
    for d, (size, start, end) in enumerate(zip(x.shape, attrs["starts"], attrs["ends"])):
        if not start < end <= size:
            raise _Fault(f"axis {d} of input {x.name!r} {_show(x)}: starts[{d}] = {start} and ends[{d}] = {end}: "
                         f"expected 0 <= start < end <= {size} (resolved indices, end exclusive)",
                         ("ends" if start < end else "starts",))
        out.append(-(-(end - start) // attrs["steps"][d]))
    return tuple(out)


def _expand_shape(ins: list, attrs: dict) -> tuple:
    x, shape = ins[0], tuple(attrs["shape"])
    lead = len(shape) - len(x.shape)
    if lead < 0 or any(d not in (1, s) for d, s in zip(x.shape, shape[lead:])):
        raise _Fault(f"input {x.name!r} {_show(x)} does not broadcast to shape {list(shape)}: expected rank <= "
                     f"{len(shape)} and, aligned at the last axis, each dimension 1 or equal", ("shape",))
    return shape


def _embedding_dtype(ins: list) -> str:
    ids, table = ins
    if ids.dtype != "i32":
        raise _Fault(f"ids {ids.name!r} are {ids.dtype}: an embedding's ids are i32 (token ids; an ONNX int64 "
                     "input imports as i32)", ("inputs", 0))
    return table.dtype


def _embedding_shape(ins: list, attrs: dict) -> tuple:
    ids, table = ins
    if len(table.shape) != 2:
        raise _Fault(f"table {table.name!r} is {_show(table)}: expected [rows, width] (one row per id)",
                     ("inputs", 1))
    return ids.shape + table.shape[1:]


_SHAPE_RULES = {"matmul": _matmul_shape, "add": _binary_shape, "mul": _binary_shape, "gelu": _unary_shape,
                "silu": _unary_shape, "relu": _unary_shape, "softmax": _unary_shape, "layernorm": _norm_shape,
                "rmsnorm": _norm_shape, "transpose": _transpose_shape, "reshape": _reshape_shape,
                "mask": _mask_shape, "sub": _binary_shape, "div": _binary_shape, "unary": _unary_fn_shape,
                "reduce": _reduce_shape, "rope": _rope_shape, "concat": _concat_shape, "slice": _slice_shape,
                "expand": _expand_shape, "embedding": _embedding_shape}


# -- windows over feature maps: conv2d and pool ---------------------------------------------------

#: ``pool``'s modes.
POOL_MODES = ("max", "avg")


def window_size(op: Op, tensors: Mapping[str, TensorSpec]) -> int:
    """Input elements under one output element's window: ``C / groups x kh x kw`` for a conv2d
    (its multiply-adds), ``kh x kw`` for a pool."""
    if op.op == "conv2d":
        return math.prod(tensors[op.inputs[1]].shape[1:])
    return math.prod(op.attrs["kernel"])


def _check_pair(value, least: int, what: str) -> str | None:
    if not isinstance(value, list) or len(value) != 2 or \
            not all(isinstance(v, int) and not isinstance(v, bool) and v >= least for v in value):
        return f"expected two integers >= {least} ({what}), got {found(value)}"
    return None


def _check_pads(value) -> str | None:
    if not isinstance(value, list) or len(value) != 4 or \
            not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value):
        return f"expected four non-negative integers [top, left, bottom, right], got {found(value)}"
    return None


def _check_groups(value) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        return f"expected a positive integer (1; the input channels for a depthwise conv), got {found(value)}"
    return None


def _check_mode(value) -> str | None:
    return None if value in POOL_MODES else f"expected one of {', '.join(POOL_MODES)}, got {found(value)}"


def _window_out(x: TensorSpec, kernel: tuple, attrs: dict) -> tuple[int, int]:
    """``(Ho, Wo)`` of a window of ``kernel`` over x's last two axes, padded, strided (floor)."""
    top, left, bottom, right = attrs["pads"]
    h, w = x.shape[2] + top + bottom, x.shape[3] + left + right
    if kernel[0] > h or kernel[1] > w:
        raise _Fault(f"the window {list(kernel)} exceeds input {x.name!r} {_show(x)} padded to [{h}, {w}]",
                     ("pads",))
    sh, sw = attrs["strides"]
    return (h - kernel[0]) // sh + 1, (w - kernel[1]) // sw + 1


def _nchw(x: TensorSpec, role: str, j: int) -> None:
    if len(x.shape) != 4:
        raise _Fault(f"{role} {x.name!r} is {_show(x)}: expected an NCHW feature map [N, C, H, W]", ("inputs", j))


def _conv2d_shape(ins: list, attrs: dict) -> tuple:
    x, w = ins[:2]
    _nchw(x, "X", 0)
    if w.name == x.name:
        raise _Fault(f"X and W are one tensor {x.name!r}: a conv2d takes a feature map and a distinct weight",
                     ("inputs", 1))
    if len(w.shape) != 4:
        raise _Fault(f"W {w.name!r} is {_show(w)}: expected [O, C / groups, kh, kw]", ("inputs", 1))
    g, (o, cg) = attrs["groups"], w.shape[:2]
    if x.shape[1] % g or o % g:
        raise _Fault(f"groups {g} divides neither input {x.name!r}'s {x.shape[1]} channels nor W's {o} output "
                     "channels evenly; expected a common divisor (C for a depthwise conv)", ("groups",))
    if cg * g != x.shape[1]:
        raise _Fault(f"W {w.name!r} is {_show(w)} but X {x.name!r} is {_show(x)}: with groups {g}, W's second "
                     f"dimension must be C / groups = {x.shape[1] // g}", ("inputs", 1))
    if len(ins) == 3 and ins[2].shape != (o,):
        raise _Fault(f"B {ins[2].name!r} is {_show(ins[2])}: expected the bias vector [{o}] (one per output "
                     "channel)", ("inputs", 2))
    return (x.shape[0], o, *_window_out(x, w.shape[2:], attrs))


def _pool_shape(ins: list, attrs: dict) -> tuple:
    x, kernel = ins[0], attrs["kernel"]
    _nchw(x, "input", 0)
    top, left, bottom, right = attrs["pads"]
    if max(top, bottom) >= kernel[0] or max(left, right) >= kernel[1]:
        raise _Fault(f"pads {list(attrs['pads'])} reach the kernel {list(kernel)}: each pad must be below the "
                     "kernel's extent along its axis, so that no window is all padding", ("pads",))
    return (*x.shape[:2], *_window_out(x, kernel, attrs))


_ATTR_CHECKS.update({"strides": lambda v: _check_pair(v, 1, "[sh, sw]"), "pads": _check_pads,
                     "groups": _check_groups, "mode": _check_mode,
                     "kernel": lambda v: _check_pair(v, 1, "[kh, kw]"), "count_include_pad": _check_bool})
_ATTR_HELP.update({"mode": f"the pooling: {', '.join(POOL_MODES)}",
                   "kernel": "the window [kh, kw] ([H, W] for a global pool)"})
_SHAPE_RULES.update({"conv2d": _conv2d_shape, "pool": _pool_shape})
