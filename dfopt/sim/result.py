"""What a simulation returns: :class:`SimResult`, with :class:`Blocked` and :class:`Step`.

>>> from dfopt.ir.graph import DataflowGraph, Kernel, Stream
>>> from dfopt.sim import simulate
>>> g = DataflowGraph([Kernel("a"), Kernel("b", ii=2)], [Stream("e", "a", "b", tokens=3)])
>>> res = simulate(g, {"e": 1}, record=True)
>>> res.makespan, res.write_stall_cycles["e"]
(6, 2)
>>> res.critical_path()[0]
Step(kind='chain', name='b', index=2)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

if TYPE_CHECKING:
    from dfopt.sim.events import EventProgram

__all__ = ["SimResult", "Blocked", "Step"]


class Blocked(NamedTuple):
    """A kernel that cannot finish: its next event waits on ``stream`` token ``token``.

    ``kind`` is ``'empty'`` (a read of a token never written) or ``'full'`` (a write whose slot,
    freed by the read of token ``token - depth``, never frees).
    """

    kernel: str
    stream: str
    kind: str
    token: int


class Step(NamedTuple):
    """One step of a critical path, walked back from the last event.

    - ``('raw', stream, k)``: the read of token k waited for its write;
    - ``('space', stream, k)``: the write of token k waited for the read of token k - depth;
    - ``('chain', kernel, m)``: m earlier events of the same kernel set the pace;
    - ``('start', kernel, t)``: the path begins at a kernel event at its nominal offset t.
    """

    kind: str
    name: str
    index: int  # type: ignore[assignment]  # a field that shadows tuple.index, as the API names it


@dataclass
class SimResult:
    """The outcome of :func:`dfopt.sim.simulate`.

    ``start`` / ``end``: first event time and last event time + 1 per kernel with events (on a
    deadlock, ``start`` holds kernels that began and ``end`` kernels that finished).
    ``max_occupancy``: per stream, max over written tokens k of ``k + 1 - #{reads before
    write k}`` -- the smallest depth that avoids every full-FIFO stall of this run.
    ``write_stall_cycles``: per stream, cycles its writes lost waiting for a free slot.
    ``depths``: the depth used per stream (``None`` = unbounded). ``stats``: how it was computed.
    """

    deadlock: bool
    makespan: int | None
    start: dict
    end: dict
    max_occupancy: dict
    write_stall_cycles: dict
    blocked: list = field(default_factory=list)
    events: int = 0
    depths: dict = field(default_factory=dict)
    stats: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._prog: EventProgram | None = None
        self._tt: np.ndarray | None = None
        self._room: np.ndarray | None = None
        self._binding: dict = {}

    def _attach(self, prog: EventProgram, tt: np.ndarray, room: np.ndarray) -> None:
        """Keep every event's time (``record=True``) for :meth:`times` and :meth:`critical_path`.

        ``tt[2t]`` is the read time of flat token t, ``tt[2t+1]`` its write time (-1: never).
        """
        self._prog, self._tt, self._room = prog, tt, room

    def _recorded(self) -> tuple[EventProgram, np.ndarray, np.ndarray]:
        """The kept program, event times and room (depths); a ValueError without ``record=True``."""
        if self._prog is None or self._tt is None or self._room is None:
            raise ValueError("token times were not kept; simulate(..., record=True)")
        return self._prog, self._tt, self._room

    def event_times(self) -> tuple[EventProgram, np.ndarray]:
        """``(program, times)``: the compiled events and every event's time by event code
        (``times[2t]`` read, ``times[2t+1]`` write of flat token t; -1: never). Needs ``record=True``."""
        prog, tt, _ = self._recorded()
        return prog, tt

    def times(self, stream: str) -> tuple[np.ndarray, np.ndarray]:
        """``(write_times, read_times)`` of every token of ``stream`` (-1: never happened)."""
        prog, tt, _ = self._recorded()
        j = prog.stream_index(stream)
        lo, hi = 2 * int(prog.base[j]), 2 * int(prog.base[j + 1])
        return tt[lo + 1:hi:2].astype(np.int64), tt[lo:hi:2].astype(np.int64)

    # -- critical path ------------------------------------------------------------------
    def _time(self, event: int) -> int:
        prog, tt, _ = self._recorded()
        return int(tt[int(prog.ev_code[event])])

    def _kernel_binding(self, i: int) -> np.ndarray:
        """Flat indices of kernel i's events whose own dependency (not the chain) set the time."""
        if i not in self._binding:
            p, tt, _ = self._recorded()
            lo, hi = int(p.ev_lo[i]), int(p.ev_lo[i + 1])
            t = tt[p.ev_code[lo:hi]].astype(np.int64)
            n = p.ev_n[lo:hi].astype(np.int64)
            chain = np.empty_like(t)
            chain[0] = n[0]
            chain[1:] = t[:-1] + np.diff(n)
            self._binding[i] = lo + np.flatnonzero(t > chain)
        return self._binding[i]

    def critical_path(self) -> list[Step]:
        """The chain of binding constraints behind the makespan, from the last event backwards.

        At each event the binding constraint is followed: its own dependency (RAW or space)
        when that made it later than the kernel's pace, else the previous event of the kernel
        (ties go to the kernel's own pace). Needs ``record=True`` and no deadlock.
        """
        p, _, _ = self._recorded()
        if self.deadlock or not self.end:
            return []
        last_kernel = max(self.end, key=self.end.__getitem__)
        event = int(p.ev_lo[p.kernel_index(last_kernel) + 1]) - 1
        path: list[Step] = []
        while True:
            i = p.kernel_of(event)
            binding = self._kernel_binding(i)
            k = int(np.searchsorted(binding, event, side="right")) - 1
            if k < 0 or int(binding[k]) != event:
                lo = int(p.ev_lo[i])
                prev = int(binding[k]) if k >= 0 else lo
                if event > prev:
                    path.append(Step("chain", p.kernel_names[i], event - prev))
                event = prev
                if k < 0:
                    path.append(Step("start", p.kernel_names[i], self._time(event)))
                    return path
            event = self._follow(event, path)

    def _follow(self, event: int, path: list) -> int:
        """Step over the dependency of a binding event; return the event it waited for."""
        p, _, room = self._recorded()
        stream, j, token, is_write = p.decode(event)
        code = int(p.ev_code[event])
        if is_write:
            path.append(Step("space", stream, token))
            return int(p.ev_pos[code - 1 - 2 * int(room[j])])
        path.append(Step("raw", stream, token))
        return int(p.ev_pos[code + 1])

    # -- reporting ----------------------------------------------------------------------
    def summary(self, top: int = 5) -> str:
        """A few lines for logs: status, makespan, events, worst stalls or what blocks."""
        lines = [f"{'DEADLOCK' if self.deadlock else 'ok'}: makespan={self.makespan} "
                 f"events={self.events} kernels={len(self.start)} streams={len(self.max_occupancy)} "
                 f"({self.stats.get('method', '?')}, {self.stats.get('rounds', '?')} rounds)"]
        if self.deadlock:
            for b in self.blocked[:top]:
                lines.append(f"  {b.kernel} blocked: {b.stream}[{b.token}] {b.kind}")
            if len(self.blocked) > top:
                lines.append(f"  ... {len(self.blocked) - top} more blocked kernels")
        stalls = sorted(((c, s) for s, c in self.write_stall_cycles.items() if c), reverse=True)
        for cycles, stream in stalls[:top]:
            lines.append(f"  {stream}: writes stalled {cycles} cycles (depth {self.depths.get(stream)}, "
                         f"occupancy {self.max_occupancy[stream]})")
        return "\n".join(lines)
