"""C++ bodies of the data movers: transpose, reshape, concat, slice, expand and embedding.

A mover has no arithmetic, only an order to change, so every one is the same process: it reads
each of its inputs whole, one after another in the op's input order (each token in its stream's
own tiled order), into an on-chip buffer of that input (``buf<j>``, static: a whole tensor is too
large for the stack of a C-simulation thread), and then writes the output tiles in the output
type's order, one beat per cycle: the loop marked ``// dfopt: compute`` that the tiling stage's
cost model counts (:func:`dfopt.models.tiling.costs.mover_cost`) and whose reads and writes its
port schedules time (:func:`dfopt.models.tiling.schedules.phase_schedules`). What differs per op
is only where an output element comes from, :data:`SOURCES`: an expression over the buffers at
the element's tensor coordinates.

The ``embedding`` kernel buffers its whole table on chip (rather than reading rows from DRAM
through an ``m_axi`` port of its own): it is then a mover like the others, its cost and port
schedules are the movers', and a vocabulary of a few thousand rows fits; the table's bytes count
as the kernel's on-chip memory, so fusion and memory binding see them. An id outside ``[0, V)``
is clamped into range (hardware has no error path; the NumPy reference refuses such ids).

>>> from dfopt.ir.itensor import ITensorType
>>> from dfopt.ir.opgraph import Op
>>> a = Port(ITensorType("f32", (2, 2), (2, 2), (1, 1), (2, 2), (0, 1)), 4)
>>> y = Port(ITensorType("f32", (2, 4), (2, 4), (1, 1), (2, 4), (0, 1)), 8)
>>> body = mover("k", Op("c", "concat", ("a", "b"), "y", {"axis": 1}), [a, a], [y], "float")
>>> [line.strip() for line in body if "v.data[l] = " in line]
['v.data[l] = (o1 + f % 4) < 2 ? buf0[o0 + f / 4][o1 + f % 4] : buf1[o0 + f / 4][(o1 + f % 4) - 2];']
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from dfopt.codegen.hls.kernels import (
    CTYPES,
    Port,
    _outs,
    _tensor_at,
    declare,
    footprint,
    merge,
    read_beats,
    signature,
    subscript,
    write_beats,
)
from dfopt.codegen.hls.order import flat_index, loop_nest
from dfopt.errors import CodegenError

if TYPE_CHECKING:
    from dfopt.ir.opgraph import Op

#: tensor coordinates of tile coordinates ``c`` (the loop nest's offsets ``o<d>`` added)
_at = _tensor_at()
#: (the buffer shapes, the partition factors of each buffer, the load of an output element at
#: tensor coordinates ``tc``) of a mover, from its op, input ports and output port
Layout = tuple[list[tuple[int, ...]], list[list[int]], Callable[[list[str]], str]]


def mover(fn: str, op: Op, ins: list[Port], outs: list[Port], ctype: str) -> list[str]:
    """The process of mover ``op``: buffer every input (its ports ``ins``, one per distinct input
    tensor in the op's order), then write the output tiles of ``outs[0]`` to every output stream."""
    if op.op not in SOURCES:
        raise CodegenError(f"op {op.name}: {op.op} is not a data mover ({', '.join(SOURCES)})")
    shapes, factors, load = SOURCES[op.op](op, ins, outs[0])
    decls, scatter = [], []
    for j, (port, shape, fs) in enumerate(zip(ins, shapes, factors)):
        decls += declare(CTYPES[port.itype.dtype], f"buf{j}", shape, fs, static=True)
        scatter += loop_nest(port.itype, "i", read_beats(f"in{j}", port, _store(j, port, shape)))
    gather = loop_nest(outs[0].itype, "j", write_beats(_outs(outs), outs[0], lambda c: load(_at(c)), ctype,
                                                       mark=True))
    return [signature(fn, ins, outs) + " {", *["  " + ln for ln in decls + scatter + gather], "}"]


def _shape(port: Port) -> tuple[int, ...]:
    return tuple(int(n) for n in port.itype.shape)


def _store(j: int, port: Port, shape: tuple) -> Callable[[list[str]], str]:
    """The element of buffer ``j`` (of ``shape``: the tensor's, or flat) at tile coordinates."""
    tensor = _shape(port)
    if len(shape) == 1 and len(tensor) > 1:
        return lambda c: f"buf{j}[{flat_index(_at(c), tensor)}]"
    return lambda c: f"buf{j}{subscript(_at(c))}"


def _beat_fp(port: Port) -> list[int]:
    """Per tensor dimension, the indices one beat of ``port`` spans."""
    return footprint(port.shape, port.lanes)


def _transpose(op: Op, ins: list[Port], out: Port) -> Layout:
    perm = list(op.attrs["perm"])
    factors = list(_beat_fp(ins[0]))
    for i, d in enumerate(perm):          # output dim i is input dim perm[i]
        factors[d] = max(factors[d], _beat_fp(out)[i])
    return ([_shape(ins[0])], [factors],
            lambda tc: f"buf0{subscript([tc[perm.index(d)] for d in range(len(perm))])}")


def _reshape(op: Op, ins: list[Port], out: Port) -> Layout:
    """A flat buffer: a reshape keeps the row-major flat index."""
    total = math.prod(_shape(ins[0]))
    return ([(total,)], [[max(_beat_fp(ins[0])[-1], _beat_fp(out)[-1])]],
            lambda tc: f"buf0[{flat_index(tc, _shape(out))}]")


def _concat(op: Op, ins: list[Port], out: Port) -> Layout:
    """Input ``j`` holds output indices ``[off_j, off_j + size_j)`` along the axis; a repeated
    input is one buffer (one stream) read at each of its places."""
    axis, tensors = op.attrs["axis"], list(dict.fromkeys(op.inputs))
    sizes = {t: _shape(ins[tensors.index(t)])[axis] for t in tensors}
    offsets = [sum(sizes[t] for t in op.inputs[:i]) for i in range(len(op.inputs))]

    def load(tc: list[str]) -> str:
        def part(i: int) -> str:
            at = list(tc)
            at[axis] = f"({tc[axis]}) - {offsets[i]}" if offsets[i] else tc[axis]
            return f"buf{tensors.index(op.inputs[i])}{subscript(at)}"
        expr = part(len(op.inputs) - 1)
        for i in range(len(op.inputs) - 2, -1, -1):
            expr = f"({tc[axis]}) < {offsets[i + 1]} ? {part(i)} : {expr}"
        return expr
    return ([_shape(p) for p in ins], [merge(_beat_fp(p), _beat_fp(out)) for p in ins], load)


def _slice(op: Op, ins: list[Port], out: Port) -> Layout:
    starts, steps = op.attrs["starts"], op.attrs["steps"]
    strided = [f * s for f, s in zip(_beat_fp(out), steps)]     # a beat of the output, in input indices

    def load(tc: list[str]) -> str:
        return "buf0" + subscript([_affine(c, int(s), int(k)) for c, s, k in zip(tc, steps, starts)])
    return [_shape(ins[0])], [merge(_beat_fp(ins[0]), strided)], load


def _affine(c: str, step: int, start: int) -> str:
    """``start + step * c`` with the identity parts left out."""
    scaled = c if step == 1 else f"({c}) * {step}"
    return scaled if start == 0 else f"{start} + {scaled}"


def _expand(op: Op, ins: list[Port], out: Port) -> Layout:
    """Input axis ``d`` is output axis ``d + lead``; an axis of size 1 is read at index 0."""
    src = _shape(ins[0])
    lead = len(_shape(out)) - len(src)
    fp_out = _beat_fp(out)[lead:]
    factors = merge(_beat_fp(ins[0]), [f if n > 1 else 1 for f, n in zip(fp_out, src)])

    def load(tc: list[str]) -> str:
        return "buf0" + subscript([tc[d + lead] if n > 1 else "0" for d, n in enumerate(src)])
    return [src], [factors], load


def _embedding(op: Op, ins: list[Port], out: Port) -> Layout:
    """Output element ``[i..., c]`` is ``table[clamp(ids[i...])][c]``; an id outside ``[0, V)``
    reads row 0 or row ``V - 1`` (the kernel cannot fail)."""
    ids, table = _shape(ins[0]), _shape(ins[1])
    rows = table[0]

    def load(tc: list[str]) -> str:
        i = f"buf0{subscript(tc[:-1])}"
        return f"buf1[{i} < 0 ? 0 : {i} > {rows - 1} ? {rows - 1} : {i}][{tc[-1]}]"
    return ([ids, table], [_beat_fp(ins[0]), merge(_beat_fp(ins[1]), [1, _beat_fp(out)[-1]])], load)


#: per mover kind, its :data:`Layout`
SOURCES: dict[str, Callable[[Op, list[Port], Port], Layout]] = {
    "transpose": _transpose, "reshape": _reshape, "concat": _concat, "slice": _slice, "expand": _expand,
    "embedding": _embedding}
