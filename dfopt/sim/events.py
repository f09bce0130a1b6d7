"""Each kernel's nominal event sequence (docs/design.md, the token timing model), compiled into
flat numpy arrays.

A kernel performs the reads and writes of all its streams in nominal order: sorted by
``(offset, reads before writes, stream order in the graph, token index)``, where the read of
token k of input stream e sits at offset ``k * consume_ii(e)`` and the write of token k of output
stream e at ``delay + k * produce_ii(e)``. That order never depends on times, so it is computed
once per graph structure (:func:`compile_events`) and reused by every simulation.

Layout (E events, NT tokens over all streams, S streams, K kernels); E = 2 NT:

- tokens: stream ``j`` owns the flat token indices ``base[j] .. base[j+1]-1``;
- an event is named by its *code* ``2 * token + is_write`` (0 .. E-1);
- kernel ``i`` owns the flat event indices ``ev_lo[i] .. ev_lo[i+1]-1`` in nominal order, with
  ``ev_code`` and nominal offset ``ev_n`` per flat index; ``ev_pos`` maps a code back to its
  flat index and ``ev_next`` gives the flat index of the next event on the same side (same
  stream and kind, next token; E after the last token);
- sides: one per (stream, end) with tokens, grouped by kernel (CSR ``side_ptr``).

>>> from dfopt.ir.graph import DataflowGraph, Kernel, Stream
>>> g = DataflowGraph([Kernel("a", delay=2), Kernel("b", ii=2)], [Stream("e", "a", "b", tokens=2)])
>>> p = compile_events(g)
>>> p.kernel_events("a")
[('write', 'e', 0, 2), ('write', 'e', 1, 3)]
>>> p.kernel_events("b")
[('read', 'e', 0, 0), ('read', 'e', 1, 2)]
"""

from __future__ import annotations

import dataclasses
import logging
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from dfopt.errors import InstanceError
from dfopt.ir.tokens import expand

if TYPE_CHECKING:
    from dfopt.ir.graph import DataflowGraph

logger = logging.getLogger(__name__)

__all__ = ["EventProgram", "compile_events", "ranges", "chunks"]

CHUNK_EVENTS = 1 << 20  # events per vector step: big enough to amortise calls, small enough for caches


@dataclass(eq=False)
class EventProgram:
    """The time-independent part of a simulation: every kernel's events in nominal order.

    Build it with :func:`compile_events`; :func:`dfopt.sim.simulate` accepts it in place of the
    graph, which saves the sort when the same graph is simulated with many depth assignments.
    """

    kernel_names: list
    stream_names: list
    graph_depths: list          # the graph's own depth per stream (None = unbounded)
    src: np.ndarray             # (S,) producer kernel index
    dst: np.ndarray             # (S,) consumer kernel index
    tokens: np.ndarray          # (S,) T
    base: np.ndarray            # (S+1,) first flat token index of each stream
    ev_lo: np.ndarray           # (K+1,) first flat event index of each kernel
    ev_code: np.ndarray         # (E,) 2 * token + is_write, in kernel then nominal order
    ev_n: np.ndarray            # (E,) nominal offset
    ev_pos: np.ndarray          # (E,) flat event index of each code
    ev_next: np.ndarray         # (E,) flat index of the same side's next event (E: none)
    tok_stream: np.ndarray      # (NT,) stream index of each token
    side_ptr: np.ndarray        # (K+1,) CSR over sides grouped by kernel
    side_stream: np.ndarray     # (sides,) stream index
    side_write: np.ndarray      # (sides,) bool: the producer's end

    @property
    def n_kernels(self) -> int:
        return len(self.kernel_names)

    @property
    def n_streams(self) -> int:
        return len(self.stream_names)

    @property
    def n_events(self) -> int:
        return int(self.ev_lo[-1])

    def stream_index(self, name: str) -> int:
        """Index of a stream by name (raises ``KeyError`` for an unknown name)."""
        index = self.__dict__.get("_stream_index")
        if index is None:
            index = {s: j for j, s in enumerate(self.stream_names)}
            self.__dict__["_stream_index"] = index
        return index[name]

    def kernel_index(self, name: str) -> int:
        """Index of a kernel by name (raises ``KeyError`` for an unknown name)."""
        index = self.__dict__.get("_kernel_index")
        if index is None:
            index = {k: i for i, k in enumerate(self.kernel_names)}
            self.__dict__["_kernel_index"] = index
        return index[name]

    def kernel_of(self, event: int) -> int:
        """Index of the kernel that owns a flat event index."""
        return int(np.searchsorted(self.ev_lo, event, side="right")) - 1

    def decode(self, event: int) -> tuple[str, int, int, bool]:
        """``(stream name, stream index, token within the stream, is_write)`` of a flat event."""
        code = int(self.ev_code[event])
        token, is_write = code >> 1, bool(code & 1)
        j = int(self.tok_stream[token])
        return self.stream_names[j], j, token - int(self.base[j]), is_write

    def kernel_events(self, kernel: str) -> list[tuple[str, str, int, int]]:
        """A kernel's events in nominal order as ``(kind, stream, token, offset)`` (for reading)."""
        i = self.kernel_index(kernel)
        out = []
        for e in range(int(self.ev_lo[i]), int(self.ev_lo[i + 1])):
            stream, _, token, is_write = self.decode(e)
            out.append(("write" if is_write else "read", stream, token, int(self.ev_n[e])))
        return out


def ranges(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(s, e)`` for every pair, without a Python loop.

    >>> ranges(np.array([0, 10]), np.array([2, 13])).tolist()
    [0, 1, 10, 11, 12]
    """
    if len(starts) == 1:
        return np.arange(int(starts[0]), int(ends[0]), dtype=np.int64)
    lens = ends - starts
    total = int(lens.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    first = np.cumsum(lens) - lens
    return np.repeat(starts - first, lens) + np.arange(total, dtype=np.int64)


def chunks(weights: np.ndarray, size: int | None = None) -> list[tuple[int, int]]:
    """Split ``range(len(weights))`` into consecutive pieces of about ``size`` total weight
    (default :data:`CHUNK_EVENTS`); a single item heavier than ``size`` is a piece of its own.

    >>> chunks(np.array([3, 3, 3, 3]), size=6)
    [(0, 2), (2, 4)]
    """
    size = max(1, CHUNK_EVENTS if size is None else size)
    if len(weights) == 0:
        return []
    cum = np.cumsum(weights)
    cuts = np.searchsorted(cum, np.arange(size, int(cum[-1]), size), side="left") + 1
    edges = np.unique(np.concatenate([[0], np.minimum(cuts, len(weights)), [len(weights)]]))
    return list(zip(edges[:-1].tolist(), edges[1:].tolist()))


def _index_dtype(limit: int):
    return np.int32 if limit < 2 ** 31 - 1 else np.int64


def _bad(pointer: str, message: str) -> InstanceError:
    return InstanceError(message, pointer=pointer)


def _read_graph(graph):
    """Plain arrays from the IR, validated: delays, streams' ends, tokens and IIs."""
    kernels = list(graph.kernels.values())
    kidx = {k.name: i for i, k in enumerate(kernels)}
    delay = np.array([k.delay for k in kernels], dtype=np.int64)
    kii = np.array([k.ii for k in kernels], dtype=np.int64)
    bad = np.flatnonzero((delay < 0) | (kii < 0))
    if len(bad):
        k = kernels[bad[0]]
        raise _bad(f"/graph/kernels/{bad[0]}", f"kernel {k.name!r}: expected delay >= 0 and ii >= 0, "
                   f"got delay={k.delay}, ii={k.ii}")
    streams = list(graph.streams.values())
    src = np.array([kidx[s.src] for s in streams], dtype=np.int64)
    dst = np.array([kidx[s.dst] for s in streams], dtype=np.int64)
    tokens = np.array([s.tokens for s in streams], dtype=np.int64)
    pii = np.array([-1 if s.produce_ii is None else s.produce_ii for s in streams], dtype=np.int64)
    cii = np.array([-1 if s.consume_ii is None else s.consume_ii for s in streams], dtype=np.int64)
    pii = np.where([s.produce_ii is None for s in streams], kii[src], pii) if len(streams) else pii
    cii = np.where([s.consume_ii is None for s in streams], kii[dst], cii) if len(streams) else cii
    bad = np.flatnonzero((tokens < 0) | (pii < 0) | (cii < 0))
    if len(bad):
        s = streams[bad[0]]
        raise _bad(f"/graph/streams/{bad[0]}", f"stream {s.name!r}: expected tokens, produce_ii and "
                   f"consume_ii >= 0, got {s.tokens}, {pii[bad[0]]}, {cii[bad[0]]}")
    table = np.stack([src, dst, tokens, pii, cii], axis=1).reshape(-1, 5)
    scheduled = tuple((j, s.src_schedule, s.dst_schedule) for j, s in enumerate(streams)
                      if s.src_schedule is not None or s.dst_schedule is not None)
    return [k.name for k in kernels], list(graph.streams), [s.depth for s in streams], delay, table, scheduled


@dataclass
class _Sides:
    """One side per (stream, end) with tokens, sorted by (kernel, stream, is_write)."""

    kernel: np.ndarray
    stream: np.ndarray
    write: np.ndarray
    n0: np.ndarray      # offset of token 0
    step: np.ndarray    # offset between tokens
    count: np.ndarray   # tokens
    ptr: np.ndarray     # (K+1,) CSR by kernel
    last: np.ndarray    # offset of the last token
    explicit: dict      # sides with a per-token schedule: "flat" (every token's offset, concatenated),
                        # "sides" (their indices, increasing) and "at" (each one's first position in
                        # "flat"); empty when none


def _sides(n_kernels: int, table: np.ndarray, delay: np.ndarray, scheduled: tuple = ()) -> _Sides:
    src, dst, tokens, pii, cii = table.T
    n_streams = len(tokens)
    stream = np.concatenate([np.arange(n_streams), np.arange(n_streams)])
    write = np.concatenate([np.zeros(n_streams, bool), np.ones(n_streams, bool)])
    kernel = np.concatenate([dst, src])
    keep = np.concatenate([tokens, tokens]) > 0
    stream, write, kernel = stream[keep], write[keep], kernel[keep]
    order = np.lexsort((write, stream, kernel))
    stream, write, kernel = stream[order], write[order], kernel[order]
    ptr = np.zeros(n_kernels + 1, dtype=np.int64)
    np.cumsum(np.bincount(kernel, minlength=n_kernels), out=ptr[1:])
    n0 = np.where(write, delay[src[stream]], 0)
    step = np.where(write, pii[stream], cii[stream])
    count = tokens[stream]
    last = n0 + np.maximum(count - 1, 0) * step
    explicit: dict = {}
    if scheduled:
        pos = {(int(j), bool(w)): i for i, (j, w) in enumerate(zip(stream.tolist(), write.tolist()))}
        sides, scheds = [], []
        for j, src_s, dst_s in scheduled:
            for w, sched in ((True, src_s), (False, dst_s)):
                i = pos.get((j, w))
                if sched is not None and i is not None:
                    if sched.count != count[i]:
                        raise _bad(f"/graph/streams/{j}/{'src' if w else 'dst'}_schedule",
                                   f"stream {j}: the schedule has {sched.count} tokens, the stream {count[i]}")
                    sides.append(i)
                    scheds.append(sched)
                    n0[i], last[i] = sched.first, sched.last
        flat = expand(scheds)
        lens = count[sides]
        starts = np.cumsum(lens) - lens
        order = np.argsort(sides)
        explicit = {"flat": flat, "sides": np.asarray(sides, dtype=np.int64)[order], "at": starts[order]}
    return _Sides(kernel, stream, write, n0, step, count, ptr, last, explicit)


def _sort_chunk(sd: _Sides, lo: int, hi: int, base: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sides ``lo..hi-1`` (whole kernels): event codes and offsets in nominal order.

    The flat token index ``base[j] + k`` orders events of one kernel, offset and kind by
    (stream, token) -- exactly the tie-break of the model -- so one int64 key per event,
    ``kernel | offset | is_write | token``, sorted stably (a merge of the per-side runs, which
    are sorted already) gives the order; ``np.lexsort`` when the key would overflow.
    """
    count = sd.count[lo:hi]
    kernel = sd.kernel[lo:hi] - sd.kernel[lo]
    first = np.cumsum(count) - count
    n0, step, write = sd.n0[lo:hi], sd.step[lo:hi], sd.write[lo:hi].astype(np.int64)
    tok0 = base[sd.stream[lo:hi]]
    max_n = int(sd.last[lo:hi].max())
    b_k, b_n, b_t = (max(1, int(v).bit_length()) for v in (kernel[-1], max_n, base[-1]))
    if sd.explicit:
        a, b = np.searchsorted(sd.explicit["sides"], [lo, hi])
        if b > a:
            return _sort_spelled_out(sd, lo, hi, base, slice(int(a), int(b)), (b_k, b_n, b_t))
    if b_k + b_n + 1 + b_t <= 63:
        sh_n = b_t + 1
        sh_k = sh_n + b_n
        mult = (step << sh_n) + 1                       # key step from token k to k + 1
        head = (kernel << sh_k) | (n0 << sh_n) | (write << b_t) | tok0
        key = np.repeat(mult, count)
        key[first] = head - np.concatenate([[0], (head + (count - 1) * mult)[:-1]])
        np.cumsum(key, out=key)
        key.sort(kind="stable")
        code = ((key & ((1 << b_t) - 1)) << 1) | ((key >> b_t) & 1)
        return code, (key >> sh_n) & ((1 << b_n) - 1)
    logger.debug("event keys need more than 63 bits; using lexsort")
    return _sort_spelled_out(sd, lo, hi, base, None, (b_k, b_n, b_t))


def _sort_spelled_out(sd: _Sides, lo: int, hi: int, base: np.ndarray, explicit: slice | None,
                      bits: tuple) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_sort_chunk` with every event's offset spelled out: steady sides by one ``arange``
    each, the scheduled ones (``explicit``, a range of ``sd.explicit``) from their blocks; then
    one packed key per event as there, or ``np.lexsort`` when it would overflow."""
    count = sd.count[lo:hi]
    first = np.cumsum(count) - count
    side_of = np.repeat(np.arange(hi - lo), count)
    k = np.arange(len(side_of), dtype=np.int64) - first[side_of]
    n = sd.n0[lo:hi][side_of] + k * sd.step[lo:hi][side_of]
    if explicit is not None:
        flat, sides = sd.explicit["flat"], sd.explicit["sides"][explicit]
        src = sd.explicit["at"][explicit]
        dst = first[sides - lo]
        lens = count[sides - lo]
        n[ranges(dst, dst + lens)] = flat[ranges(src, src + lens)]
    kernel = (sd.kernel[lo:hi] - sd.kernel[lo])[side_of]
    write = sd.write[lo:hi].astype(np.int64)[side_of]
    tok = base[sd.stream[lo:hi]][side_of] + k
    b_k, b_n, b_t = bits
    if b_k + b_n + 1 + b_t <= 63:
        sh_n = b_t + 1
        key = (kernel << (sh_n + b_n)) | (n << sh_n) | (write << b_t) | tok
        key.sort(kind="stable")
        return ((key & ((1 << b_t) - 1)) << 1) | ((key >> b_t) & 1), (key >> sh_n) & ((1 << b_n) - 1)
    order = np.lexsort((tok, write, n, kernel))
    return 2 * tok[order] + write[order], n[order]


def _next_on_side(ev_pos: np.ndarray, base: np.ndarray, idx) -> np.ndarray:
    """Per flat event index, the flat index of the event of code + 2 (E after a stream's last token)."""
    n_events = len(ev_pos)
    ev_next = np.empty(n_events, dtype=idx)
    if n_events:
        ev_next[ev_pos[:-2]] = ev_pos[2:]
        last = 2 * (base[1:][np.diff(base) > 0] - 1)
        ev_next[ev_pos[last]] = n_events
        ev_next[ev_pos[last + 1]] = n_events
    return ev_next


def compile_events(graph: DataflowGraph, *, cache: bool = True) -> EventProgram:
    """Every kernel's nominal event sequence of ``graph`` as an :class:`EventProgram`.

    With ``cache`` (the default) the program is remembered for this graph object (weakly: it
    goes with the graph) and reused while the graph's kernels and streams are unchanged --
    the sort is the expensive part, the check re-reads the graph -- so a loop that simulates
    one graph with many depth assignments compiles once. Depths are always read afresh.
    Raises :class:`~dfopt.errors.InstanceError` for negative delays, IIs or token counts.

    >>> from dfopt.ir.graph import DataflowGraph, Kernel, Stream
    >>> g = DataflowGraph([Kernel("a"), Kernel("b")], [Stream("e", "a", "b", tokens=3)])
    >>> compile_events(g).n_events
    6
    >>> compile_events(g).ev_code is compile_events(g).ev_code
    True
    """
    kernel_names, stream_names, graph_depths, delay, table, scheduled = _read_graph(graph)
    shape = (kernel_names, stream_names, delay, table, scheduled)
    if cache:
        try:
            hit = _CACHE.get(graph)
        except TypeError:                # not weakly referenceable: no cache
            hit, cache = None, False
        if hit is not None and _same_shape(hit[0], shape):
            return dataclasses.replace(hit[1], graph_depths=graph_depths)
    prog = _compile(kernel_names, stream_names, graph_depths, delay, table, scheduled)
    if cache:
        _CACHE[graph] = (shape, prog)
    return prog


_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _same_shape(a: tuple, b: tuple) -> bool:
    return (a[0] == b[0] and a[1] == b[1] and np.array_equal(a[2], b[2]) and np.array_equal(a[3], b[3])
            and a[4] == b[4])


def _compile(kernel_names: list, stream_names: list, graph_depths: list, delay: np.ndarray,
             table: np.ndarray, scheduled: tuple = ()) -> EventProgram:
    """Sort every kernel's events, chunk by chunk of whole kernels."""
    n_kernels = len(kernel_names)
    tokens = table[:, 2].copy()
    base = np.zeros(len(tokens) + 1, dtype=np.int64)
    np.cumsum(tokens, out=base[1:])
    sd = _sides(n_kernels, table, delay, scheduled)
    n_events = 2 * int(base[-1])
    ev_lo = np.zeros(n_kernels + 1, dtype=np.int64)
    np.cumsum(np.bincount(sd.kernel, weights=sd.count, minlength=n_kernels).astype(np.int64), out=ev_lo[1:])
    max_n = int(sd.last.max(initial=0))
    idx = _index_dtype(n_events)
    ev_code = np.empty(n_events, dtype=idx)
    ev_n = np.empty(n_events, dtype=_index_dtype(max_n))
    ev_pos = np.empty(n_events, dtype=idx)
    for k0, k1 in chunks(np.diff(ev_lo)):
        e0, e1 = int(ev_lo[k0]), int(ev_lo[k1])
        if e1 > e0:
            code, n = _sort_chunk(sd, int(sd.ptr[k0]), int(sd.ptr[k1]), base)
            ev_code[e0:e1] = code
            ev_n[e0:e1] = n
            ev_pos[code] = np.arange(e0, e1, dtype=idx)
    tok_stream = np.repeat(np.arange(len(tokens), dtype=np.int32), tokens)
    ev_next = _next_on_side(ev_pos, base, idx)
    logger.debug("compiled %d kernels, %d streams, %d events", n_kernels, len(tokens), n_events)
    return EventProgram(kernel_names, stream_names, graph_depths, table[:, 0].copy(),
                        table[:, 1].copy(), tokens, base, ev_lo, ev_code, ev_n, ev_pos, ev_next, tok_stream,
                        sd.ptr, sd.stream, sd.write)
