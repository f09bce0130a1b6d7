"""Token streams as whole arrays: the leaves of a nested fibre structure and its fibre offsets.

A stream at depth ``d`` (the loops above its tokens) holds ``data`` (one leaf per token: a
coordinate, a reference — ``-1`` is SAM's empty reference ``N`` —, a value or a bit-vector word)
and ``segs``: ``segs[l]`` are the offsets of the fibres at nesting ``l`` into the level below
(``segs[0]`` splits the root's one fibre; ``segs[-1]`` indexes ``data``). SAM encodes it as tokens
``1 2 S0 3 S1 D``: the leaves, a stop token closing each innermost fibre (``S<n>`` when ``n`` outer
fibres close with it) and the done token, so it carries leaves + innermost fibres + 1 tokens.

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

    __slots__ = ("kind", "data", "segs")

    def __init__(self, kind: str, data: np.ndarray, segs: tuple[np.ndarray, ...] = ()):
        self.kind, self.data, self.segs = kind, data, tuple(segs)

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
    def tokens(self) -> int:
        return self.leaves + self.fibers + 1

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


def encode(stream: Stream) -> list:
    """SAM's token list of a stream (slow: for checks and small examples)."""
    if isinstance(stream, BitStream):
        data = [int(w) for w in stream.dense_words()]
        offsets = np.arange(stream.fibers + 1) * stream.width
        segs = stream.segs[:-1] + (offsets,)
    else:
        data, segs = stream.data.tolist(), stream.segs
    if not segs:
        return [*data, "D"]
    out: list = []
    inner = segs[-1]
    closing = np.zeros(len(inner) - 1, dtype=np.int64)     # enclosing fibres each innermost fibre ends
    active = np.ones(len(inner) - 1, dtype=bool)
    cur = np.arange(len(inner) - 1)
    for level in range(len(segs) - 2, -1, -1):
        parent = np.searchsorted(segs[level], cur, side="right") - 1
        active &= segs[level][parent + 1] == cur + 1
        closing += active
        cur = parent
    for f in range(len(inner) - 1):
        out.extend(data[inner[f]:inner[f + 1]])
        out.append(f"S{int(closing[f])}")
    out.append("D")
    return out


def decode(tokens: list, depth: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(leaves, innermost fibre offsets, stop level of each fibre) of a token list of ``depth``."""
    leaves: list[int | float] = []
    offsets: list[int] = [0]
    stops: list[int] = []
    if not tokens or tokens[-1] != "D":
        raise ValueError("a stream ends with the done token D")
    for tok in tokens[:-1]:
        if isinstance(tok, str):
            if not tok.startswith("S") or not 0 <= int(tok[1:]) < max(depth, 1):
                raise ValueError(f"bad stop token {tok!r} in a stream of depth {depth}")
            offsets.append(len(leaves))
            stops.append(int(tok[1:]))
        else:
            leaves.append(tok)
    if depth == 0:
        offsets = [0, len(leaves)]
    return np.array(leaves), np.array(offsets, dtype=np.int64), np.array(stops, dtype=np.int64)
