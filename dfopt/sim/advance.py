"""The exact dependency-driven advance, vectorised over kernels (the core of :mod:`dfopt.sim`).

The simulation runs in rounds. In each round every active kernel advances through its
remaining events as far as all their cross dependencies are already resolved: a read of token k
needs the write of token k, a write of token k into a FIFO of depth N needs the read of token
k-N. The times of the whole advanced stretch follow from the recurrence
``a_i = max(a_{i-1} + n_i - n_{i-1}, ready_i)`` in one vector step: with the slack
``s_i = a_i - n_i``, ``s_i = max(s_{i-1}, ready_i - n_i, 0)`` is a running maximum, computed for
all advancing kernels at once as one segmented ``np.maximum.accumulate``. A kernel that advanced
wakes the kernels at the other end of the streams it touched. When no kernel can advance, every
unfinished kernel waits on an event that can never happen: a deadlock.

Times live in one array indexed by event code (``2 * token + is_write``): ``tt[2t]`` is the read
time of token t, ``tt[2t+1]`` its write time, -1 until it happens.

>>> from dfopt.ir.graph import DataflowGraph, Kernel, Stream
>>> from dfopt.sim.events import compile_events
>>> prog = compile_events(DataflowGraph([Kernel("a"), Kernel("b", ii=2)], [Stream("e", "a", "b", 3)]))
>>> state = run(prog, prog.tokens.copy())          # room = T everywhere: unbounded
>>> state.tt[:-1].tolist(), state.rounds
([1, 0, 3, 1, 5, 2], 2)
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from dfopt.sim import events
from dfopt.sim.events import EventProgram, chunks, ranges

logger = logging.getLogger(__name__)

__all__ = ["State", "run", "time_dtype"]


@dataclass
class State:
    """Progress of one advance: per kernel, per side (``2 * stream + is_write``) and per event."""

    done: np.ndarray    # (K,) flat index of each kernel's next event
    slack: np.ndarray   # (K,) a - n of each kernel's last event (0 before its first)
    count: np.ndarray   # (2S,) count[2j] tokens of stream j read, count[2j+1] written
    tt: np.ndarray      # (E+1,) time of each event code; -1: not yet; tt[E] stays -1
    stall: np.ndarray   # (S,) cycles the writes of each stream waited for a free slot
    rounds: int = 0

    def finished(self, prog: EventProgram) -> np.ndarray:
        """Per kernel: all its events happened."""
        return self.done == prog.ev_lo[1:]


@dataclass
class _Plan:
    """What one run needs besides the program: effective depths and the sides that can block."""

    room: np.ndarray        # (S,) depth, T when the stream cannot fill
    bounded: bool
    ptr: np.ndarray         # (K+1,) CSR of blocking sides per kernel; per blocking side:
    other: np.ndarray       #   the side whose count it waits on (2j + 1 - is_write)
    extra: np.ndarray       #   room for a write side, 0 for a read side
    code0: np.ndarray       #   code of its token 0
    size: np.ndarray        #   tokens
    wake_of: np.ndarray     # (2S,) kernel woken when the count of a side grows (K: nobody)


def _plan(prog: EventProgram, room: np.ndarray) -> _Plan:
    """Reads can always block; writes only into streams that can fill (room < T)."""
    fills = room < prog.tokens
    keep = ~prog.side_write | fills[prog.side_stream]
    j, w = prog.side_stream[keep], prog.side_write[keep].astype(np.int64)
    kernel_of_side = np.repeat(np.arange(prog.n_kernels), np.diff(prog.side_ptr))
    ptr = np.zeros(prog.n_kernels + 1, dtype=np.int64)
    np.cumsum(np.bincount(kernel_of_side[keep], minlength=prog.n_kernels), out=ptr[1:])
    wake_of = np.full(2 * prog.n_streams, prog.n_kernels, dtype=np.int64)
    wake_of[1::2] = prog.dst                         # new tokens wake the consumer
    wake_of[0::2] = np.where(fills, prog.src, prog.n_kernels)   # freed slots wake the producer
    return _Plan(room, bool(fills.any()), ptr, 2 * j + 1 - w, np.where(w, room[j], 0),
                 2 * prog.base[j] + w, prog.tokens[j], wake_of)


def time_dtype(prog: EventProgram) -> type[np.signedinteger]:
    """int32 when no event of any run can be later than 2**31 - 2, else int64.

    An event's time is its longest path in the event graph: a start offset, then the kernels'
    own offset steps -- a path visits each kernel's events in order, so at most its largest
    offset per kernel -- and 1 per cross dependency, at most one per event.
    """
    span = int(prog.ev_n.max(initial=0)) if prog.n_events else 0
    bound = (prog.n_kernels + 1) * (span + 1) + prog.n_events
    return np.int32 if bound < 2 ** 31 - 2 else np.int64


def _new_state(prog: EventProgram) -> State:
    tt = np.full(prog.n_events + 1, -1, dtype=time_dtype(prog))
    return State(prog.ev_lo[:-1].copy(), np.zeros(prog.n_kernels, np.int64),
                 np.zeros(2 * prog.n_streams, np.int64), tt, np.zeros(prog.n_streams, np.int64))


def _limits(prog: EventProgram, st: State, plan: _Plan, active: np.ndarray) -> np.ndarray:
    """For each active kernel: flat index of its first event whose dependency is unresolved."""
    limit = prog.ev_lo[active + 1].copy()
    lo, hi = plan.ptr[active], plan.ptr[active + 1]
    has = np.flatnonzero(hi > lo)
    lo, hi = lo[has], hi[has]
    sel = ranges(lo, hi)
    if len(sel) == 0:
        return limit
    first = st.count[plan.other[sel]] + plan.extra[sel]   # reads wait for writes, writes for reads
    open_ = first < plan.size[sel]
    first *= open_
    pos = np.where(open_, prog.ev_pos[plan.code0[sel] + 2 * first], prog.n_events)
    lens = hi - lo
    limit[has] = np.minimum(limit[has], np.minimum.reduceat(pos, np.cumsum(lens) - lens))
    return limit


def _running_slack(excess: np.ndarray, lens: np.ndarray, carry: np.ndarray) -> np.ndarray:
    """Segmented running maximum of ``excess`` (>= 0, in place), each segment seeded by ``carry``."""
    if len(lens) == 1:
        excess[0] = max(int(excess[0]), int(carry[0]))
        return np.maximum.accumulate(excess, out=excess)
    first = np.cumsum(lens) - lens
    excess[first] = np.maximum(excess[first], carry)
    big = int(excess.max()) + 1
    if big * len(lens) < 2 ** 62:
        lift = np.repeat(np.arange(0, big * len(lens), big, dtype=np.int64), lens)
        excess += lift
        np.maximum.accumulate(excess, out=excess)
        excess -= lift
        return excess
    for a, b in zip(first.tolist(), (first + lens).tolist()):  # astronomically late times: exact
        np.maximum.accumulate(excess[a:b], out=excess[a:b])
    return excess


def _dependency(prog: EventProgram, code: np.ndarray, j: np.ndarray, room: np.ndarray) -> np.ndarray:
    """Code of the event each event waits for (its own code when none: its time is still -1).

    A read of token t waits for the write of t; a write of token k of stream j into a FIFO of
    depth N waits for the read of token k - N when k >= N.
    """
    dep = code | 1
    wr = np.flatnonzero(code & 1)
    jw = j[wr]
    back = (code[wr] >> 1) - room[jw]
    dep[wr] = np.where(back >= prog.base[jw], 2 * back, code[wr])
    return dep


def _advance_chunk(prog: EventProgram, st: State, plan: _Plan, kernels: np.ndarray,
                   limit: np.ndarray) -> np.ndarray:
    """Perform the events ``done[k] .. limit[k]-1`` of the given kernels; return grown sides."""
    start = st.done[kernels]
    lens = limit - start
    ev = ranges(start, limit)
    code = prog.ev_code[ev]
    n = prog.ev_n[ev]
    fin = limit == prog.ev_lo[kernels + 1]
    j: np.ndarray | None = None
    if plan.bounded:
        j = prog.tok_stream[code >> 1]
        dep = _dependency(prog, code, j, plan.room)
    else:
        dep = code | 1
    excess = np.add(st.tt[dep], 1, dtype=np.int64)
    del dep
    excess -= n
    np.maximum(excess, 0, out=excess)
    carry = st.slack[kernels]
    slack = _running_slack(excess, lens, carry)
    if plan.bounded:
        _add_write_stalls(st, code, j, slack, lens, carry)
    st.slack[kernels] = slack[np.cumsum(lens) - 1]
    slack += n
    st.tt[code] = slack
    st.done[kernels] = limit
    return _recount(prog, st, kernels[fin], _Partial(ev, code, lens, limit, ~fin))


def _add_write_stalls(st: State, code, j, slack, lens, carry) -> None:
    """A write's stall is how much it raised its kernel's slack (its space wait was binding)."""
    rise = np.empty_like(slack)
    rise[1:] = slack[1:] - slack[:-1]
    first = np.cumsum(lens) - lens
    rise[first] = slack[first] - carry
    hit = np.flatnonzero(rise * (code & 1))
    np.add.at(st.stall, j[hit], rise[hit])


@dataclass
class _Partial:
    """The events just performed (flat index ``ev``, ``code``), per kernel ``lens`` and ``limit``."""

    ev: np.ndarray
    code: np.ndarray
    lens: np.ndarray
    limit: np.ndarray
    stopped: np.ndarray     # per kernel: it did not finish


def _recount(prog: EventProgram, st: State, finished: np.ndarray, p: _Partial) -> np.ndarray:
    """Update the token counts of the sides of kernels that just moved; return the sides that grew.

    A kernel that finished has every side complete. In a kernel that stopped part way, a
    side's count is one past the token of its last event performed: the event whose next
    event on the same side is not performed yet (it lies at or past the kernel's new ``done``).
    """
    touched = []
    if len(finished):
        sel = ranges(prog.side_ptr[finished], prog.side_ptr[finished + 1])
        side = 2 * prog.side_stream[sel] + prog.side_write[sel]
        full = prog.tokens[side >> 1]
        touched.append(side[st.count[side] < full])
        st.count[side] = full
    if p.stopped.any():
        limit = np.repeat(p.limit, p.lens)
        if len(finished):
            part = np.flatnonzero(np.repeat(p.stopped, p.lens))
            last = part[np.flatnonzero(prog.ev_next[p.ev[part]] >= limit[part])]
        else:
            last = np.flatnonzero(prog.ev_next[p.ev] >= limit)
        c = p.code[last]
        tok = c >> 1
        j = prog.tok_stream[tok].astype(np.int64)
        side = 2 * j + (c & 1)
        st.count[side] = tok + 1 - prog.base[j]
        touched.append(side)
    return np.concatenate(touched) if touched else np.zeros(0, dtype=np.int64)


def run(prog: EventProgram, room: np.ndarray) -> State:
    """Advance every kernel as far as it can, round after round, until nothing moves.

    ``room[j]`` is the depth of stream j (``tokens[j]`` or more: it never fills).
    """
    plan = _plan(prog, np.minimum(room, prog.tokens))
    st = _new_state(prog)
    wake = np.zeros(prog.n_kernels + 1, dtype=bool)
    active = np.flatnonzero(np.diff(prog.ev_lo) > 0)
    while len(active):
        st.rounds += 1
        limit = _limits(prog, st, plan, active)
        moving = np.flatnonzero(limit > st.done[active])
        if len(moving) == 0:
            break
        kernels, limit = active[moving], limit[moving]
        moved = limit - st.done[kernels]
        parts = [(0, len(kernels))] if int(moved.sum()) <= events.CHUNK_EVENTS else chunks(moved)
        for a, b in parts:
            wake[plan.wake_of[_advance_chunk(prog, st, plan, kernels[a:b], limit[a:b])]] = True
        wake[-1] = False
        active = np.flatnonzero(wake)
        wake[active] = False
    logger.debug("advance: %d rounds, %d of %d kernels finished", st.rounds,
                 int(st.finished(prog).sum()), prog.n_kernels)
    return st
