"""Per-token schedules from a trace: the cycle of every write and read a cosim or LightningSim run
recorded, attached to an instance's streams as ``src_schedule`` / ``dst_schedule`` blocks.

A trace has one row per event: ``kernel, stream, token, cycle``. The row's kernel says which end
of the stream it is: the stream's ``src`` (a write) or its ``dst`` (a read). :func:`read_trace`
reads a CSV with that header or an NPZ with those four arrays; :func:`apply_trace` checks the rows
against a graph and returns a new graph whose traced ends carry their cycles, compressed into
blocks (:meth:`~dfopt.ir.tokens.TokenSchedule.from_offsets`).

**Cycles are made relative to the design's first event** (the least cycle of the whole trace),
not to each kernel's own first event: the processes of an HLS dataflow region start together
(docs/design.md, the token timing model: every kernel starts at cycle 0), so a kernel that waits
13,000 cycles before its first read (an accumulator being zero-filled) must keep those cycles.
Shifting every kernel by one constant changes no depth. An end the trace does not mention keeps
its own schedule, or its steady ``delay`` / ``ii`` timing, counted from the same start.

Every fault is an :class:`~dfopt.errors.InstanceError` pointing at ``/trace/row/<i>`` (the i-th
data row, 0-based: the header and empty lines are not counted) or at ``/trace`` with the stream
named; a file of more than ``max_rows`` rows is refused before it is parsed.

>>> from dfopt.ir.graph import DataflowGraph, Kernel, Stream
>>> g = DataflowGraph([Kernel("mm"), Kernel("out", ii=2)], [Stream("c", "mm", "out", tokens=4)])
>>> t = Trace.from_rows(["mm"] * 4 + ["out"] * 4, ["c"] * 8, [0, 1, 2, 3] * 2,
...                     [1027, 1028, 1029, 1030, 1028, 1030, 1032, 1034])
>>> c = apply_trace(g, t).streams["c"]
>>> c.src_schedule.to_json(), c.dst_schedule.offsets().tolist()
([{'offset': 0, 'loops': [[4, 1]]}], [1, 3, 5, 7])
"""

from __future__ import annotations

import dataclasses

import numpy as np

from dfopt.errors import InstanceError, Problem
from dfopt.instance.semantics import OFFSET_LIMIT, power_text
from dfopt.instance.trace_files import COLUMNS, MAX_ROWS, Trace, read_trace
from dfopt.ir.graph import DataflowGraph
from dfopt.ir.tokens import TokenSchedule
from dfopt.schema import did_you_mean

__all__ = ["Trace", "read_trace", "apply_trace", "COLUMNS", "MAX_ROWS", "MAX_BLOCKS", "MAX_FAULTS"]

#: Blocks of one schedule at most: the instance schema's ``token_schedule`` list length.
MAX_BLOCKS = 2**20
#: Faults worded in one error (the others are counted).
MAX_FAULTS = 20


def apply_trace(graph: DataflowGraph, trace: Trace) -> DataflowGraph:
    """A copy of ``graph`` whose stream ends in ``trace`` carry its cycles as schedules, made
    relative to the trace's first event (module docstring); ``graph`` is left as it was. Every
    traced end must list each of its stream's tokens once, at cycles that do not decrease with
    the token index. Raises :class:`~dfopt.errors.InstanceError` with every fault found (the first
    :data:`MAX_FAULTS` worded, the rest counted).

    >>> from dfopt.ir.graph import Kernel, Stream
    >>> g = DataflowGraph([Kernel("a"), Kernel("b")], [Stream("e", "a", "b", tokens=2)])
    >>> try:
    ...     apply_trace(g, Trace.from_rows(["a", "a"], ["e", "e"], [0, 0], [1, 2]))
    ... except InstanceError as err:
    ...     print(err)
    /trace/row/1: stream 'e': token 0 written twice (rows 0 and 1); expected each token once per end
    /trace: stream 'e': the trace has 1 of its 2 writes (by kernel 'a'); token 1 is missing
    """
    streams = list(graph.streams.values())
    end = _row_ends(graph, streams, trace)
    if not len(end):
        return graph.copy()
    rows = np.lexsort((trace.token, end))                  # by end, then token
    end, token, cycle = end[rows], trace.token[rows], trace.cycle[rows]
    starts = np.flatnonzero(np.concatenate([[True], end[1:] != end[:-1]]))
    faults = _Faults()
    _token_faults(faults, streams, starts, end, token, rows)
    _order_faults(faults, streams, end, token, cycle, rows)
    faults.raise_any()
    relative = cycle - trace.first
    span = int(relative.max())
    if span > OFFSET_LIMIT:
        raise InstanceError(f"the trace spans {span} cycles from its first event (cycle {trace.first}), above the "
                            f"limit {power_text(OFFSET_LIMIT)} that keeps event times exact", pointer="/trace")
    bounds = np.append(starts, len(end)).tolist()
    schedules = {int(e): TokenSchedule.from_offsets(relative[lo:hi])
                 for e, lo, hi in zip(end[starts].tolist(), bounds[:-1], bounds[1:])}
    _check_blocks(streams, schedules)
    out = [dataclasses.replace(s, src_schedule=schedules.get(2 * j + 1, s.src_schedule),
                               dst_schedule=schedules.get(2 * j, s.dst_schedule)) for j, s in enumerate(streams)]
    return DataflowGraph([dataclasses.replace(k) for k in graph.kernels.values()], out)


class _Faults(list):
    """``(row or None, message)`` faults, and how many more were found than are worded."""

    def __init__(self) -> None:
        super().__init__()
        self.unworded = 0

    def each(self, indices, word) -> None:
        """``word(i)`` for the first :data:`MAX_FAULTS` of ``indices``; the others counted."""
        indices = list(indices)
        room = max(0, MAX_FAULTS - len(self))
        self.extend(word(int(i)) for i in indices[:room])
        self.unworded += len(indices) - min(room, len(indices))

    def raise_any(self) -> None:
        if not self:
            return
        problems = [Problem("/trace" if row is None else f"/trace/row/{row}", text) for row, text in self]
        if self.unworded:
            problems.append(Problem("/trace", f"... and {self.unworded} more faults"))
        raise InstanceError(problems=problems)


def _row_ends(graph: DataflowGraph, streams: list, trace: Trace) -> np.ndarray:
    """Per row its stream end: ``2 * stream + 1`` for a write, ``2 * stream`` for a read (streams
    in graph order). Raises on names the graph does not have, kernels that are neither end and
    tokens the stream does not carry."""
    stream_at = {name: j for j, name in enumerate(graph.streams)}
    kernel_at = {name: i for i, name in enumerate(graph.kernels)}
    s_map = np.array([stream_at.get(n, -1) for n in trace.stream_names], dtype=np.int64)
    k_map = np.array([kernel_at.get(n, -1) for n in trace.kernel_names], dtype=np.int64)
    faults = _Faults()
    _unknown_names(faults, trace.stream_names, s_map, trace.stream, "stream", list(graph.streams))
    _unknown_names(faults, trace.kernel_names, k_map, trace.kernel, "kernel", list(graph.kernels))
    faults.raise_any()
    src = np.array([kernel_at[s.src] for s in streams], dtype=np.int64).reshape(-1)
    dst = np.array([kernel_at[s.dst] for s in streams], dtype=np.int64).reshape(-1)
    tokens = np.array([s.tokens for s in streams], dtype=np.int64).reshape(-1)
    j, k = s_map[trace.stream], k_map[trace.kernel]
    write = k == src[j]
    _end_faults(faults, list(graph.kernels), streams, j, k, write | (k == dst[j]), src == dst)

    def over(i):
        s = streams[int(j[i])]
        return i, (f"stream {s.name!r}: token {int(trace.token[i])}, but the stream carries {s.tokens} tokens "
                   f"(0 to {s.tokens - 1}); the trace and the instance disagree on its size")

    faults.each(np.flatnonzero(trace.token >= tokens[j]), over)
    faults.raise_any()
    return 2 * j + write


def _unknown_names(faults: _Faults, names: tuple, mapped: np.ndarray, codes: np.ndarray, kind: str,
                   valid: list) -> None:
    def word(c):
        return int(np.argmax(codes == c)), (f"{kind} {names[c]!r} is not in the instance"
                                             f"{did_you_mean(names[c], valid)}; a trace row names one of its "
                                             f"{len(valid)} {kind}s")

    faults.each(np.flatnonzero(mapped < 0), word)


def _end_faults(faults: _Faults, kernels: list, streams: list, j: np.ndarray, k: np.ndarray, either: np.ndarray,
                loop: np.ndarray) -> None:
    """Rows whose kernel is neither end of the stream (one fault per stream and kernel), and
    streams whose two ends are one kernel."""
    neither = np.flatnonzero(~either)
    pairs, first = np.unique(j[neither] * len(kernels) + k[neither], return_index=True)

    def word(i):
        row = int(neither[i])
        s, kernel = streams[int(j[row])], kernels[int(k[row])]
        return row, (f"kernel {kernel!r} is neither end of stream {s.name!r} ({s.src} -> {s.dst}); a write's row "
                     "names the stream's src, a read's its dst")

    faults.each(np.sort(first), word)
    looped = np.flatnonzero(loop[j])
    _, first = np.unique(j[looped], return_index=True)

    def word_loop(i):
        row = int(looped[i])
        s = streams[int(j[row])]
        return row, (f"stream {s.name!r} joins kernel {s.src!r} to itself, so a row cannot say whether it is the "
                     "write or the read; leave the stream out of the trace")

    faults.each(np.sort(first), word_loop)


def _token_faults(faults: _Faults, streams: list, starts: np.ndarray, end: np.ndarray, token: np.ndarray,
                  rows: np.ndarray) -> None:
    """Tokens listed twice, and ends that miss some (the rows sorted by end, then token)."""
    repeat = np.concatenate([[False], (end[1:] == end[:-1]) & (token[1:] == token[:-1])])

    def twice(i):
        s, verb = _end_text(streams, int(end[i]))
        a, b = sorted((int(rows[i - 1]), int(rows[i])))
        return b, (f"stream {s.name!r}: token {int(token[i])} {verb} twice (rows {a} and {b}); expected each token "
                   "once per end")

    faults.each(np.flatnonzero(repeat), twice)
    first = np.zeros(len(end), dtype=bool)
    first[starts] = True
    distinct = np.bincount((np.cumsum(first) - 1)[~repeat], minlength=len(starts))
    tokens = np.array([s.tokens for s in streams], dtype=np.int64).reshape(-1)
    bounds = np.append(starts, len(end))

    def missing(g):
        lo, hi = int(bounds[g]), int(bounds[g + 1])
        held = token[lo:hi][~repeat[lo:hi]]
        gaps = np.flatnonzero(held != np.arange(len(held)))
        s, verb = _end_text(streams, int(end[lo]))
        kind, who = ("writes", s.src) if verb == "written" else ("reads", s.dst)
        return None, (f"stream {s.name!r}: the trace has {len(held)} of its {s.tokens} {kind} (by kernel {who!r}); "
                      f"token {int(gaps[0]) if len(gaps) else len(held)} is missing")

    faults.each(np.flatnonzero(distinct != tokens[end[starts] // 2]), missing)


def _order_faults(faults: _Faults, streams: list, end: np.ndarray, token: np.ndarray, cycle: np.ndarray,
                  rows: np.ndarray) -> None:
    """Cycles that decrease from one token of an end to the next."""
    def word(i):
        s, verb = _end_text(streams, int(end[i]))
        kind = "write" if verb == "written" else "read"
        return int(rows[i]), (f"stream {s.name!r}: the {kind} of token {int(token[i])} at cycle {int(cycle[i])} "
                              f"comes before token {int(token[i - 1])}'s at cycle {int(cycle[i - 1])} (row "
                              f"{int(rows[i - 1])}); the {kind}s of a stream end happen in token order")

    back = (end[1:] == end[:-1]) & (token[1:] != token[:-1]) & (cycle[1:] < cycle[:-1])
    faults.each(np.flatnonzero(back) + 1, word)


def _end_text(streams: list, end: int) -> tuple:
    return streams[end // 2], ("written" if end % 2 else "read")


def _check_blocks(streams: list, schedules: dict) -> None:
    """Each schedule within the instance schema's block count, so that the written file loads."""
    def word(e):
        s, verb = _end_text(streams, e)
        return None, (f"stream {s.name!r}: its {'writes' if verb == 'written' else 'reads'} compress into "
                      f"{len(schedules[e].blocks)} blocks, above the {MAX_BLOCKS} an instance holds; the cycles are "
                      "too irregular to keep (trace a shorter run)")

    faults = _Faults()
    faults.each([e for e, sched in schedules.items() if len(sched.blocks) > MAX_BLOCKS], word)
    faults.raise_any()
