"""Dataflow regions in canonical form: every stream written by one process and read by one, and
the processes called in a topological order of the stream graph (producers before consumers).

Vitis csim runs the processes of a ``#pragma HLS dataflow`` region one after the other in call
order, so a consumer called before its producer reads an empty stream; synthesis also expects
this order (UG1399, "canonical form" of a dataflow region). The emitter orders every region with
:func:`canonical_order` and refuses, with :func:`check_canonical`, any region it could not put in
that form.

>>> a = Process("load", "load(x, s0)", writes=("s0",))
>>> b = Process("square", "square(s0, s1)", reads=("s0",), writes=("s1",))
>>> c = Process("store", "store(s1, y)", reads=("s1",))
>>> [p.name for p in canonical_order([c, b, a])]
['load', 'square', 'store']
>>> try:
...     check_canonical("top", [b, a, c])
... except CodegenError as err:
...     print(err)
dataflow region top is not canonical: stream s0 is read by square (call 1) before load writes it (call 2)
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass

from dfopt.errors import CodegenError


@dataclass(frozen=True)
class Process:
    """One call of a region: the function, the call text, the streams it reads and writes, and
    the kernel of the dataflow graph whose slot it takes."""

    name: str
    call: str
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    kernel: str = ""
    group: int = 0


def canonical_order(procs: Sequence[Process]) -> list[Process]:
    """``procs`` in a topological order of their streams (ties in the given order);
    :class:`CodegenError` when the streams form a cycle."""
    writer: dict[str, int] = {}
    for i, p in enumerate(procs):
        for s in p.writes:
            writer.setdefault(s, i)
    preds: list[set[int]] = [set() for _ in procs]
    succs: list[set[int]] = [set() for _ in procs]
    for i, p in enumerate(procs):
        for s in p.reads:
            if s in writer and writer[s] != i:
                preds[i].add(writer[s])
                succs[writer[s]].add(i)
    ready = [i for i in range(len(procs)) if not preds[i]]
    heapq.heapify(ready)
    left = [len(x) for x in preds]
    out = []
    while ready:
        i = heapq.heappop(ready)
        out.append(procs[i])
        for j in sorted(succs[i]):
            left[j] -= 1
            if left[j] == 0:
                heapq.heappush(ready, j)
    if len(out) != len(procs):
        stuck = [procs[i].name for i in range(len(procs)) if left[i] > 0]
        raise CodegenError(f"the streams between processes {', '.join(stuck[:4])} form a cycle: a "
                           "dataflow region needs an acyclic stream graph")
    return out


def check_canonical(region: str, procs: Sequence[Process], streams: Sequence[str] = ()) -> None:
    """:class:`CodegenError` naming the processes unless every stream of the region (those the
    processes touch and those in ``streams``, the ones declared in it) has exactly one writer and
    one reader among ``procs`` and the writer is called first."""
    writers: dict[str, list[int]] = {}
    readers: dict[str, list[int]] = {}
    for i, p in enumerate(procs):
        for s in p.writes:
            writers.setdefault(s, []).append(i)
        for s in p.reads:
            readers.setdefault(s, []).append(i)
    for s in streams:
        if s not in writers or s not in readers:
            missing = "writer" if s not in writers else "reader"
            raise CodegenError(f"dataflow region {region} is not canonical: stream {s} has no {missing}")
    for s in sorted(set(writers) | set(readers)):
        w, r = writers.get(s, []), readers.get(s, [])
        if len(w) > 1 or len(r) > 1:
            names = ", ".join(procs[i].name for i in (w if len(w) > 1 else r))
            role = "written" if len(w) > 1 else "read"
            raise CodegenError(f"dataflow region {region} is not canonical: stream {s} is {role} by "
                               f"more than one process ({names})")
        if w and r and r[0] < w[0]:
            raise CodegenError(f"dataflow region {region} is not canonical: stream {s} is read by "
                               f"{procs[r[0]].name} (call {r[0] + 1}) before {procs[w[0]].name} "
                               f"writes it (call {w[0] + 1})")
