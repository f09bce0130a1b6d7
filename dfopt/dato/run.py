"""Run a recorded Dato program on data: what its tasks compute, in NumPy (the program's reference).

Recording (:mod:`dfopt.dato.frontend`) keeps, per task instance, its ops in program order with the
values each reads and makes (:attr:`~dfopt.dato.record.Op.reads`, :attr:`~dfopt.dato.record.Op.out`).
:func:`run` executes those op lists as a process network: every instance runs its ops in order;
a ``get`` waits for a token on its stream (streams are unbounded queues here: the program's
numbers do not depend on the depths, which the static checks and the mapping size), a ``load``
reads its tensor block, a ``store`` writes it, and an ``allreduce`` over grid axis ``k`` runs as a
chain of partial sums along ``k``, as the mapping lowers it: the member at coordinate ``c`` holds
the sum of the members ``0..c`` (the last holds the whole sum; the static checks refuse a use of
the result on any other member), waiting for the member before it. When nothing can move before
every instance has finished, :class:`RunError` names every blocked instance and what it waits
for.

What a compute op computes is named by its :attr:`~dfopt.dato.record.Op.fn` (:data:`FUNCTIONS`):
``matmul`` (``matmul()``, float sums), ``reduce_sum``, the ``allreduce`` steps, and the computes
``gelu`` (tanh form), ``exp``, ``relu``, ``add``, ``mul``, ``scale`` (``reads[0] * reads[1]``
with the second a scalar or row vector), and the ops of the attention kernels
(:mod:`dfopt.codegen.aie.kernels`): ``matmul_bt`` (``a @ b.T``), ``matmul_acc`` (``c + a @ b``),
``softmax_block`` (one block of an online softmax: reads ``s`` and optionally the running max and
sum ``m, l``; makes ``m, l, p, alpha``), ``rescale`` (``acc * alpha`` per row) and ``normalize``
(``acc / l`` per row); a compute named otherwise has no numbers here
(:class:`RunError` naming it and the line). Values of type ``bf16`` are rounded to bf16 (nearest
even) after every op, as the AIE kernels store them (:mod:`dfopt.codegen.aie.kernels`); ``f32``
values are float32; sums are float32.

A tensor stored from a sum also gets its *scale* (:attr:`RunResult.scale`): per element, the sum
of the magnitudes of the terms it was computed from, carried through the linear steps (``matmul``
and its forms: ``|a| @ |b|``; ``add``, ``reduce_sum`` and the allreduce chain: the terms' scales
summed; ``mul``, ``scale``, ``rescale``, ``normalize``: the scale times (or over) the factor's
magnitude); a nonlinear compute starts afresh at its result's magnitude. That is the forward-error
scale of a float sum: a result whose terms cancel (30.2 + -38.6, rounded to bf16 along the chain)
is only as exact as the ulps of its terms, and a checker that compares another evaluation of the
program with this one (another summation order, other roundings on the way) measures its error
against that scale.

>>> import numpy as np
>>> from dfopt.dato.examples import gemm_program
>>> rng = np.random.default_rng(0)
>>> A, B = rng.standard_normal((64, 64)), rng.standard_normal((64, 64))
>>> out = run(gemm_program(64, 2), {"A": A, "B": B})
>>> from dfopt.reference import to_bf16
>>> ref = to_bf16(A).astype(np.float32) @ to_bf16(B).astype(np.float32)
>>> float(np.abs(out.tensors["C"] - ref).max()) < 1e-4, out.ops
(True, 60)
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from dfopt.dato.frontend import Program, recording
from dfopt.dato.record import Op, Recording, TaskInstance, view_text
from dfopt.errors import DfoptError
from dfopt.reference import to_bf16

__all__ = ["run", "RunResult", "RunError", "FUNCTIONS", "Function", "Channels", "Runner", "WAIT", "run_instances",
           "tensor_data"]


class RunError(DfoptError):
    """A program :func:`run` cannot run: missing data, a compute with no numbers, a deadlock."""


def _gelu(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float32)
    c = np.float32(np.sqrt(2.0 / np.pi))
    return np.float32(0.5) * x * (np.float32(1.0) + np.tanh(c * (x + np.float32(0.044715) * x * x * x)))


def _scale(x: np.ndarray, s: np.ndarray) -> np.ndarray:
    s = np.asarray(s, dtype=np.float32)
    return x.astype(np.float32) * (s.reshape(s.shape + (1,) * (x.ndim - s.ndim)) if s.ndim else s)


def _f32(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.float32)


def _rows(x: np.ndarray, r: np.ndarray) -> np.ndarray:
    """``r`` (one value per row of ``x``) broadcast along ``x``'s last axis."""
    return _f32(r).reshape(np.shape(r) + (1,) * (np.ndim(x) - np.ndim(r)))


def _softmax_block(s: np.ndarray, m: np.ndarray | None = None, l_: np.ndarray | None = None, *,
                   dtypes: tuple = ("f32", "f32", "f32", "f32")) -> tuple:
    """One block of an online softmax over the rows of ``s``: ``(m, l, p, alpha)`` with the running
    max ``m`` and sum ``l`` (a fresh state without them: ``m = -inf``, ``l = 0``), ``p = exp(s - m)``
    at the element type of the third output, and ``l`` summing the stored ``p``."""
    s = _f32(s)
    if m is None or l_ is None:
        m = np.full(s.shape[:-1], -np.inf, dtype=np.float32)
        l_ = np.zeros(s.shape[:-1], dtype=np.float32)
    m, l_ = _f32(m), _f32(l_)
    hi = np.maximum(m, s.max(axis=-1))
    with np.errstate(invalid="ignore"):
        alpha = np.where(np.isneginf(m), np.float32(0), np.exp(m - hi)).astype(np.float32)
    p = _round(np.exp(s - hi[..., None]), dtypes[2])
    return hi, (alpha * l_ + np.sum(_f32(p), axis=-1, dtype=np.float32)).astype(np.float32), p, alpha


class Function(NamedTuple):
    """What a compute op computes: ``fn`` of its reads. ``reads``: the numbers of reads it takes
    (``None``: any number); ``several``: it makes several results (``compute(..., out=[...])``)
    and takes their element types as ``dtypes=``."""

    reads: tuple[int, ...] | None
    fn: Callable[..., Any]
    several: bool = False


#: compute name -> :class:`Function`
FUNCTIONS: dict[str, Function] = {
    "gelu": Function((1,), _gelu),
    "exp": Function((1,), lambda x: np.exp(x.astype(np.float32))),
    "relu": Function((1,), lambda x: np.maximum(x.astype(np.float32), np.float32(0))),
    "add": Function(None, lambda *xs: np.sum([x.astype(np.float32) for x in xs], axis=0, dtype=np.float32)),
    "mul": Function((2,), lambda a, b: a.astype(np.float32) * b.astype(np.float32)),
    "scale": Function((2,), _scale),
    "matmul_bt": Function((2,), lambda a, b: _f32(a) @ _f32(b).T),
    "matmul_acc": Function((3,), lambda a, b, c: _f32(c) + _f32(a) @ _f32(b)),
    "rescale": Function((2,), lambda acc, alpha: _f32(acc) * _rows(acc, alpha)),
    "normalize": Function((2,), lambda acc, l_: _f32(acc) / _rows(acc, l_)),
    # a fresh online-softmax state (one read) or one carried on (the running max and sum: three)
    "softmax_block": Function((1, 3), _softmax_block, several=True),
}

#: The linear computes' terms' magnitudes (the module docstring) from their reads' (the factors are
#: taken at their magnitudes, the same for values and scales)
_LINEAR: dict[str, Callable[..., Any]] = {
    "matmul": lambda a, b: a @ b,
    "matmul_bt": lambda a, b: a @ b.T,
    "matmul_acc": lambda a, b, c: c + a @ b,
    "add": lambda *xs: np.sum(xs, axis=0, dtype=np.float32),
    "mul": lambda a, b: a * b,
    "scale": _scale,
    "rescale": lambda acc, alpha: acc * _rows(acc, alpha),
    "normalize": lambda acc, l_: acc / _rows(acc, l_),
}


@dataclass
class RunResult:
    """What :func:`run` gives: every stored tensor (zeros where nothing was stored, with
    ``written`` saying where), the ops run and the tokens each stream carried."""

    tensors: dict
    written: dict
    ops: int
    tokens: dict = field(default_factory=dict)
    scale: dict = field(default_factory=dict)   # tensor -> per element: the terms' magnitudes (docstring)


def _round(values: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "bf16":
        return to_bf16(values)
    if dtype in ("f32", "float32"):
        return np.asarray(values, dtype=np.float32)
    if dtype.startswith("i") or dtype.startswith("u"):
        return np.asarray(values).astype(np.int64)
    return np.asarray(values, dtype=np.float64)


def _block(shape: tuple, block: tuple) -> tuple:
    """The slices of a tensor of ``shape`` that the block ``(count, index)`` per axis names."""
    return tuple(slice(i * (n // c), (i + 1) * (n // c)) for n, (c, i) in zip(shape, block))


class _Instance:
    def __init__(self, inst: TaskInstance):
        self.inst, self.pc = inst, 0
        self.env: dict[int, np.ndarray | None] = {}
        self.allreduces = 0                  # allreduce calls done


#: what a :class:`Channels` method returns when the op must wait
WAIT = object()


class Channels:
    """Where the ops of an instance get their data and put their results: :func:`run`'s default is
    one queue per stream, the tensors in memory and one table of allreduce partial sums. A model of
    a mapped design (:mod:`dfopt.codegen.aie.mapping.numeric`) gives each instance the data its
    tile received instead, and computes with the compiled kernels. A method returns :data:`WAIT`
    when the op cannot run yet."""

    #: id(value) -> (value, its terms' magnitudes); None: not noted (a subclass that does not need it)
    shadow: dict[int, tuple] | None = None

    def __init__(self, rec: Recording, data: dict, written: dict):
        self.rec, self.data, self.written = rec, data, written
        self.queues: dict[str, deque] = {name: deque() for name in rec.streams}
        self.tokens = dict.fromkeys(rec.streams, 0)
        self.chains: dict[tuple[str, int], np.ndarray] = {}   # (instance, k-th allreduce) -> its prefix sum
        self.shadow = {}
        self.scale: dict[str, np.ndarray] = {}                # tensor -> the terms' magnitudes of what was stored

    def get(self, inst: TaskInstance, op: Op) -> Any:
        q = self.queues[str(op.stream)]
        return q.popleft() if q else WAIT

    def put(self, inst: TaskInstance, op: Op, value) -> None:
        self.queues[str(op.stream)].append(value)
        self.tokens[str(op.stream)] += 1

    def load(self, inst: TaskInstance, op: Op) -> Any:
        tensor = self.data[op.name]
        return tensor[_block(tensor.shape, op.block)].copy()

    def store(self, inst: TaskInstance, op: Op, value: np.ndarray) -> None:
        tensor = self.data[op.name]
        idx = _block(tensor.shape, op.block)
        if value is None or np.shape(value) != tensor[idx].shape:
            raise RunError(f"instance {inst.name} line {op.line}: stores {np.shape(value)} into a "
                           f"{tensor[idx].shape} block of {op.name!r}")
        tensor[idx] = _round(value, self.rec.tensors[op.name].type.dtype)
        self.written[op.name][idx] = True
        noted = self._noted(value)
        if noted is not None:
            scale = self.scale.setdefault(op.name, np.zeros(tensor.shape, np.float32))
            scale[idx] = np.maximum(scale[idx], noted)

    def _noted(self, value) -> np.ndarray | None:
        """The terms' magnitudes noted for ``value`` (None: not a sum, or nothing noted)."""
        entry = self.shadow.get(id(value)) if self.shadow is not None else None
        return entry[1] if entry is not None and entry[0] is value else None

    def terms(self, value) -> np.ndarray:
        """The magnitudes of the terms ``value`` was summed from, per element (the module docstring):
        its own magnitude when it is not a sum."""
        noted = self._noted(value)
        return noted if noted is not None else np.abs(_f32(value))

    def summed(self, value, terms: Callable[[], Any]) -> None:
        """Note ``value``'s terms' magnitudes (at least its own), ``terms()`` computing them; nothing
        when these channels do not note them."""
        if self.shadow is not None and isinstance(value, np.ndarray):
            self.shadow[id(value)] = (value, np.maximum(np.asarray(terms(), np.float32), np.abs(_f32(value))))

    def partial(self, inst: TaskInstance, op: Op, before: str, k: int) -> Any:
        """The prefix sum of the ``k``-th allreduce of ``before``, the chain member before ``inst``."""
        value = self.chains.get((before, k))
        return WAIT if value is None else value

    def publish(self, inst: TaskInstance, op: Op, k: int, prefix: np.ndarray) -> None:
        """``inst``'s prefix sum of its ``k``-th allreduce, for the next member of the chain."""
        self.chains[(inst.name, k)] = prefix

    def combine(self, inst: TaskInstance, op: Op, before: np.ndarray | None, x: np.ndarray) -> np.ndarray:
        """One allreduce step: the partial sum ``before`` (None for the chain's first member) plus
        ``inst``'s ``x``, at the result's type."""
        total = x.astype(np.float32) if before is None else before.astype(np.float32) + x.astype(np.float32)
        prefix = _round(total, _out_dtype(self.rec, op))
        self.summed(prefix, lambda: self.terms(x) if before is None else self.terms(before) + self.terms(x))
        return prefix

    def compute(self, inst: TaskInstance, op: Op, args: list):
        """The value (a tuple for a compute with several results) of the compute ``op`` on ``args``."""
        out = _compute(self.rec, op, args, f"instance {inst.name} line {op.line}")
        if not isinstance(out, tuple) and op.fn in _LINEAR:
            self.summed(out, lambda: _LINEAR[op.fn](*[self.terms(a) for a in args]))
        return out


def run(program: Program | Recording, tensors: Mapping[str, np.ndarray]) -> RunResult:
    """Run ``program`` (recorded now, or a recording) on ``tensors`` (every tensor it loads, by
    name, at its declared shape; rounded to its element type). See the module docstring."""
    rec = recording(program)
    data, written = tensor_data(rec, tensors)
    channels = Channels(rec, data, written)
    done = run_instances(rec, list(rec.instances.values()), channels)
    return RunResult(data, written, done, channels.tokens, channels.scale)


def tensor_data(rec: Recording, tensors: Mapping[str, np.ndarray]) -> tuple[dict, dict]:
    """Every tensor of ``rec`` (the given ones checked and rounded to their element type, the others
    zeros) and a written mask of each; RunError when a loaded tensor is missing or misshapen."""
    shapes, dtypes = _tensor_types(rec)
    data = {}
    for name in sorted(shapes):
        if name in tensors:
            arr = np.asarray(tensors[name])
            if arr.shape != shapes[name]:
                raise RunError(f"tensor {name!r}: expected shape {shapes[name]}, got {arr.shape}")
            data[name] = _round(arr, dtypes[name])
    loaded = {op.name for i in rec.instances.values() for op in i.ops if op.kind == "load"}
    missing = sorted(loaded - set(data))
    if missing:
        raise RunError(f"no data for tensor(s) {', '.join(missing)} (given: {', '.join(sorted(tensors)) or 'none'})")
    for name in shapes:
        data.setdefault(name, np.zeros(shapes[name], dtype=np.float32))
    return data, {name: np.zeros(shapes[name], dtype=bool) for name in shapes}


class Runner:
    """The instances' op lists run step by step over ``channels``: :meth:`advance` runs every
    instance as far as it can go and says whether anything moved."""

    def __init__(self, rec: Recording, instances: list[TaskInstance], channels: Channels):
        self.rec, self.channels = rec, channels
        self.states = [_Instance(i) for i in instances]
        self.done = 0

    def advance(self) -> bool:
        moved = False
        for st in self.states:
            while st.pc < len(st.inst.ops):
                if not _step(self.rec, st, st.inst.ops[st.pc], self.channels):
                    break
                st.pc += 1
                self.done += 1
                moved = True
        return moved

    def settle(self) -> bool:
        """Advance until nothing moves; whether anything did."""
        moved = False
        while self.advance():
            moved = True
        return moved

    def finished(self) -> bool:
        return all(st.pc == len(st.inst.ops) for st in self.states)

    def waiting(self) -> list[str]:
        """What each unfinished instance waits for."""
        return [_waiting(self.rec, st) for st in self.states if st.pc < len(st.inst.ops)]


def run_instances(rec: Recording, instances: list[TaskInstance], channels: Channels) -> int:
    """Run ``instances`` to the end over ``channels`` (the ops run); RunError on a deadlock."""
    runner = Runner(rec, instances, channels)
    runner.settle()
    if not runner.finished():
        raise RunError("the program deadlocks: " + "; ".join(runner.waiting()))
    return runner.done


def _tensor_types(rec: Recording) -> tuple[dict, dict]:
    """Each tensor's shape and element type, from the blocks its loads and stores name."""
    shapes = {name: tuple(t.type.shape) for name, t in rec.tensors.items()}
    return shapes, {name: t.type.dtype for name, t in rec.tensors.items()}


def _value(rec: Recording, st: _Instance, vid: int | None):
    if vid is None:
        return None
    if vid in st.env:
        return st.env[vid]
    if vid in rec.views:                      # a chunk of a split value
        parent, axis, i, parts = rec.views[vid]
        whole = _value(rec, st, parent)
        n = whole.shape[axis] // parts
        return whole[(slice(None),) * axis + (slice(i * n, (i + 1) * n),)]
    raise RunError(f"instance {st.inst.name}: value {vid} is read before it is made")


def _step(rec, st: _Instance, op: Op, ch: Channels) -> bool:
    """Run ``op`` of ``st``; False when it must wait."""
    where = f"instance {st.inst.name} line {op.line}"
    if op.kind in ("get", "load"):
        value = ch.get(st.inst, op) if op.kind == "get" else ch.load(st.inst, op)
        if value is WAIT:
            return False
        st.env[op.out] = value
    elif op.kind == "put":
        ch.put(st.inst, op, _value(rec, st, op.reads[0]))
    elif op.kind == "store":
        ch.store(st.inst, op, _value(rec, st, op.reads[0]))
    elif op.kind == "allreduce":
        return _allreduce(rec, st, op, ch)
    elif op.kind == "reduce":
        x = _value(rec, st, op.reads[0])
        total = np.asarray(np.sum(x.astype(np.float32), axis=op.axis, dtype=np.float32))
        st.env[op.out] = _round(total, _out_dtype(rec, op))
        ch.summed(st.env[op.out], lambda: np.sum(ch.terms(x), axis=op.axis, dtype=np.float32))
    elif op.kind == "compute":
        out = ch.compute(st.inst, op, [_value(rec, st, v) for v in op.reads])
        if isinstance(out, tuple):
            st.env.update(zip(op.outs, out))
        elif op.outs:
            raise RunError(f"{where}: compute {op.fn!r} makes one value, the program takes {len(op.outs)}")
        else:
            st.env[op.out] = out
    return True


def _out_dtype(rec: Recording, op: Op) -> str:
    return rec.out_types.get(op.out, "f32")


def _compute(rec, op: Op, args: list, where: str):
    if op.fn == "matmul":
        a, b = args
        out = a.astype(np.float32) @ b.astype(np.float32)
    else:
        spec = FUNCTIONS.get(op.fn)
        if spec is None:
            raise RunError(f"{where}: compute {op.fn!r} has no numbers here; the computes with numbers: "
                           f"matmul, reduce_sum, allreduce, {', '.join(sorted(FUNCTIONS))}")
        fn = spec.fn
        if spec.reads is not None and len(args) not in spec.reads:
            raise RunError(f"{where}: compute {op.fn!r} reads {' or '.join(map(str, spec.reads))} value(s), "
                           f"got {len(args)}")
        if any(a is None for a in args):
            raise RunError(f"{where}: compute {op.fn!r} reads a constant; pass traced values")
        if spec.several:
            dtypes = tuple(rec.out_types.get(v, "f32") for v in op.outs)
            results = fn(*args, dtypes=dtypes)
            if len(op.outs) != len(results):
                raise RunError(f"{where}: compute {op.fn!r} makes {len(results)} values, the program takes "
                               f"{len(op.outs) or 1}")
            return tuple(_round(r, t) for r, t in zip(results, dtypes))
        out = fn(*args)
    return _round(out, _out_dtype(rec, op))


def _allreduce(rec, st: _Instance, op: Op, ch: Channels) -> bool:
    group = rec.groups[op.group]
    k = st.allreduces
    me = group.members.index(st.inst.name)
    x = _value(rec, st, op.reads[0])
    before = None
    if me > 0:
        before = ch.partial(st.inst, op, group.members[me - 1], k)
        if before is WAIT:
            return False
    prefix = ch.combine(st.inst, op, before, x)
    ch.publish(st.inst, op, k, prefix)
    st.env[op.out] = prefix
    st.allreduces += 1
    return True


def _waiting(rec: Recording, st: _Instance) -> str:
    op = st.inst.ops[st.pc]
    if op.kind == "get":
        return f"{st.inst.name} (line {op.line}) waits for a token on stream {op.stream!r}"
    if op.kind == "load":
        return f"{st.inst.name} (line {op.line}) waits for block {view_text(op.block)} of tensor {op.name!r}"
    group = rec.groups[op.group]
    me = group.members.index(st.inst.name)
    return (f"{st.inst.name} (line {op.line}) waits in allreduce {op.group!r} for "
            f"{group.members[me - 1]}'s partial sum")
