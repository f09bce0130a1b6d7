"""Token streams as whole arrays: the leaves of a nested fibre structure and its fibre offsets.

A stream at depth ``d`` (the loops above its tokens) holds ``data`` (one leaf per token: a
coordinate, a reference — ``-1`` is SAM's empty reference ``N`` —, a value or a bit-vector word)
and ``segs``: ``segs[l]`` are the offsets of the fibres at nesting ``l`` into the level below
(``segs[0]`` splits the root's one fibre; ``segs[-1]`` indexes ``data``). SAM encodes it as tokens
``1 2 S0 3 S1 D``: the leaves, a stop token closing each innermost fibre (``S<n>`` when ``n`` outer
fibres close with it) and the done token. An empty fibre above the innermost level (a row without
entries at a loop that is not the innermost) has no innermost fibre whose stop could close it, so
it gets a stop token of its own, written ``S<n>E<m>`` (it opens and closes an empty fibre at level
``m``, 1 just above the innermost, and closes ``n - m`` more). A stream carries leaves + innermost
fibres + empty fibres above the innermost + 1 tokens: the tokens the emitted HLS processes write
(:mod:`dfopt.codegen.sam_hls.runtime`), whose output port :func:`encode` follows.

>>> s = Stream("crd", np.array([1, 2, 3]), (np.array([0, 2]), np.array([0, 2, 3])))
>>> s.tokens, encode(s)
(6, [1, 2, 'S0', 3, 'S1', 'D'])
>>> decode(encode(s), 2)[0].tolist(), decode(encode(s), 2)[1].tolist()
([1, 2, 3], [0, 2, 3])
"""

from __future__ import annotations

import numpy as np

EMPTY = -1          # SAM's empty reference N: a union input absent at a coordinate


class Stream:
    """One stream (see the module docstring); ``kind`` is ``crd``, ``ref``, ``val`` or ``bv``."""

    __slots__ = ("kind", "data", "segs", "_empty_above")

    def __init__(self, kind: str, data: np.ndarray, segs: tuple[np.ndarray, ...] = ()):
        self.kind, self.data, self.segs = kind, data, tuple(segs)
        self._empty_above: int | None = None

    @property
    def depth(self) -> int:
        return len(self.segs)

    @property
    def fibers(self) -> int:
        """Innermost fibres (one per token of the stream one level up)."""
        return len(self.segs[-1]) - 1 if self.segs else 0

    @property
    def leaves(self) -> int:
        return len(self.data)

    @property
    def empty_above(self) -> int:
        """Empty fibres above the innermost level (below the root), each a stop token of its own
        (counted once: a stream's structure does not change)."""
        if self._empty_above is None:
            self._empty_above = int(sum(np.count_nonzero(self.segs[level][1:] == self.segs[level][:-1])
                                        for level in range(1, len(self.segs) - 1)))
        return self._empty_above

    @property
    def tokens(self) -> int:
        return self.leaves + self.fibers + self.empty_above + 1

    def lengths(self) -> np.ndarray:
        """Leaves per innermost fibre."""
        return np.diff(self.segs[-1]) if self.segs else np.array([len(self.data)], dtype=np.int64)

    def like(self, kind: str, data: np.ndarray) -> Stream:
        """A stream of the same structure with other leaves."""
        return Stream(kind, data, self.segs)


class BitStream(Stream):
    """A bit-vector stream: each innermost fibre is ``width`` words over the dimension; only the
    nonzero words are held (``data`` the words, ``word`` their index in the fibre) and counted
    as every word of every fibre."""

    __slots__ = ("word", "width")

    def __init__(self, data: np.ndarray, word: np.ndarray, segs: tuple[np.ndarray, ...], width: int):
        super().__init__("bv", data, segs)
        self.word, self.width = word, width

    @property
    def leaves(self) -> int:
        return self.fibers * self.width

    def dense_words(self) -> np.ndarray:
        """Every word of every fibre, zeros included."""
        out = np.zeros(self.fibers * self.width, dtype=np.uint64)
        out[fibre_of(self.segs[-1]) * self.width + self.word] = self.data
        return out


def fibre_of(offsets: np.ndarray) -> np.ndarray:
    """The fibre of each leaf, from the fibres' offsets.

    >>> fibre_of(np.array([0, 2, 2, 3])).tolist()
    [0, 0, 2]
    """
    return np.repeat(np.arange(len(offsets) - 1, dtype=np.int64), np.diff(offsets))


def ragged_arange(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``concatenate([arange(s, s + n) for s, n in zip(starts, lengths)])`` without the loop.

    >>> ragged_arange(np.array([5, 0]), np.array([2, 3])).tolist()
    [5, 6, 0, 1, 2]
    """
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return np.repeat(np.asarray(starts, dtype=np.int64) - offsets[:-1], lengths) + np.arange(offsets[-1],
                                                                                          dtype=np.int64)


def offsets_of(counts: np.ndarray) -> np.ndarray:
    """Fibre offsets from the fibres' lengths.

    >>> offsets_of(np.array([2, 0, 1])).tolist()
    [0, 2, 2, 3]
    """
    out = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=out[1:])
    return out


def ancestors(segs: tuple[np.ndarray, ...], ids: np.ndarray, depth: int) -> np.ndarray:
    """The points at ``depth`` that hold the leaves ``ids`` of a stream with fibres ``segs``.

    >>> segs = (np.array([0, 2]), np.array([0, 1, 3]))       # two rows: one leaf, then two
    >>> ancestors(segs, np.array([0, 1, 2]), 1).tolist(), ancestors(segs, np.array([2]), 0).tolist()
    ([0, 1, 1], [0])
    """
    out = np.asarray(ids, dtype=np.int64)
    for level in range(len(segs) - 1, depth - 1, -1):
        out = np.searchsorted(segs[level], out, side="right") - 1
    return out


class _Port:
    """The token writer of an output port (the emitted C++'s ``sam::Port``): fibre closings that
    follow each other merge into one stop token."""

    def __init__(self, depth: int):
        self.depth, self.open, self.any = depth, depth - 1, False
        self.pending: tuple[int, int] | None = None     # (stop, empty) of the stop token not written yet
        self.out: list = []

    def _flush(self) -> None:
        if self.pending is not None:
            stop, empty = self.pending
            self.out.append(f"S{stop}" + (f"E{empty}" if empty else ""))
            self.pending = None

    def leaf(self, value: object) -> None:
        self._flush()
        self.out.append(value)
        self.open, self.any = 0, True

    def close(self, m: int) -> None:
        if m >= self.open:
            if self.pending is not None:
                self.pending = (m, self.pending[1])
            elif not (self.open == self.depth - 1 and not self.any and self.depth >= 2):
                self.pending, self.any = (m, 0), True          # else the empty root fibre: no token
        else:                                                   # an empty fibre at level m
            self._flush()
            self.pending, self.any = (m, m), True
        self.open = m + 1

    def finish(self) -> list:
        if self.depth >= 1 and self.open < self.depth:
            self.close(self.depth - 1)
        self._flush()
        self.out.append("D")
        return self.out


def encode(stream: Stream) -> list:
    """SAM's token list of a stream, as the emitted HLS processes write it (slow: for checks and
    small examples).

    >>> s = Stream("crd", np.array([1, 2]), (np.array([0, 3]), np.array([0, 1, 1, 2]), np.array([0, 1, 2])))
    >>> encode(s), s.tokens      # the second point of depth 1 has an empty fibre below it
    ([1, 'S1', 'S1E1', 2, 'S2', 'D'], 6)
    """
    if isinstance(stream, BitStream):
        data = [int(w) for w in stream.dense_words()]
        segs = stream.segs[:-1] + (np.arange(stream.fibers + 1) * stream.width,)
    else:
        data, segs = stream.data.tolist(), stream.segs
    depth = len(segs)
    port = _Port(depth)
    if not segs:
        for v in data:
            port.leaf(v)
        return port.finish()
    # the fibres' children, outermost first: (nesting, fibre) in depth-first order without recursion
    todo: list[tuple[int, int, bool]] = [(0, 0, False)]
    while todo:
        level, f, closing = todo.pop()
        if closing:
            port.close(depth - 1 - level)
        elif level == depth - 1:
            for v in data[segs[level][f]:segs[level][f + 1]]:
                port.leaf(v)
            port.close(0)
        else:
            todo.append((level, f, True))
            todo.extend((level + 1, c, False) for c in range(int(segs[level][f + 1]) - 1, int(segs[level][f]) - 1, -1))
    return port.finish()


def decode(tokens: list, depth: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(leaves, innermost fibre offsets, stop level of each fibre) of a token list of ``depth``; the
    stop tokens of empty fibres above the innermost (``S<n>E<m>``) close no innermost fibre."""
    leaves: list[int | float] = []
    offsets: list[int] = [0]
    stops: list[int] = []
    if not tokens or tokens[-1] != "D":
        raise ValueError("a stream ends with the done token D")
    for tok in tokens[:-1]:
        if isinstance(tok, str):
            stop, _, empty = tok[1:].partition("E")
            if not tok.startswith("S") or not stop.isdigit() or not 0 <= int(stop) < max(depth, 1) or \
                    (empty and not (empty.isdigit() and 0 < int(empty) <= int(stop))):
                raise ValueError(f"bad stop token {tok!r} in a stream of depth {depth}")
            if not empty:
                offsets.append(len(leaves))
                stops.append(int(stop))
        else:
            leaves.append(tok)
    if depth == 0:
        offsets = [0, len(leaves)]
    return np.array(leaves), np.array(offsets, dtype=np.int64), np.array(stops, dtype=np.int64)
