"""Per-token schedules of a stream end: the nominal cycle of every write (or read), in blocks.

A :class:`TokenSchedule` is a list of :class:`Block` s. A block is an ``offset`` and a loop nest
``loops = ((trip, stride), ...)``, outermost first; its tokens are the lexicographic enumeration
of the nest (outer loop slowest), token ``(i_1, ..., i_m)`` at ``offset + sum_l i_l * stride_l``.
The blocks follow one another, so the schedule's tokens are block 0's, then block 1's, ... The
nominal cycles are relative to the kernel's start (docs/design.md, the token timing model) and
must not decrease from one token to the next.

A tiled matmul that writes its 4-token output tile only in the last of 3 reduction steps of 10
cycles, twice:

>>> s = TokenSchedule((Block(27, ((2, 30), (4, 1))),))
>>> s.count, s.first, s.last, s.offsets().tolist()
(8, 27, 60, [27, 28, 29, 30, 57, 58, 59, 60])
>>> TokenSchedule.from_offsets([27, 28, 29, 30, 57, 58, 59, 60]) == s
True
>>> TokenSchedule.steady(3, 2, 4).offsets().tolist(), TokenSchedule.steady(3, 2, 4).is_steady
([3, 5, 7, 9], True)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

__all__ = ["Block", "TokenSchedule", "monotone_fault", "expand"]


class Block(NamedTuple):
    """``offset`` and ``loops`` ((trip, stride) pairs, outermost first); trips >= 1, strides >= 0.
    A named tuple: traces compress into hundreds of thousands of blocks."""

    offset: int
    loops: tuple[tuple[int, int], ...] = ((1, 0),)

    @property
    def tokens(self) -> int:
        """Tokens of the block: the product of its trips."""
        n = 1
        for trip, _ in self.loops:
            n *= trip
        return n

    @property
    def last(self) -> int:
        """Nominal cycle of the block's last token."""
        return self.offset + sum((trip - 1) * stride for trip, stride in self.loops)

    def offsets(self) -> np.ndarray:
        """Every token's nominal cycle, in order (int64)."""
        return expand([TokenSchedule((self,))])

    def to_json(self) -> dict:
        return {"offset": self.offset, "loops": [[t, s] for t, s in self.loops]}


@dataclass(frozen=True)
class TokenSchedule:
    """The blocks of one stream end, in token order."""

    blocks: tuple[Block, ...]

    @classmethod
    def steady(cls, first: int, ii: int, tokens: int) -> TokenSchedule:
        """``first + k * ii`` for k < tokens: the steady schedule of ``delay`` / ``ii``."""
        return cls((Block(int(first), ((int(tokens), int(ii)),)),) if tokens > 0 else ())

    @classmethod
    def from_offsets(cls, offsets: npt.ArrayLike) -> TokenSchedule:
        """The blocks of an explicit list of cycles: runs of one stride, then runs of equal runs
        at one distance folded into a two-loop block (a burst repeated). Exact: ``offsets()``
        gives the list back."""
        n = np.asarray(offsets, dtype=np.int64).ravel()
        if len(n) == 0:
            return cls(())
        runs = _stride_runs(n)
        return cls(tuple(_fold(runs)))

    @property
    def count(self) -> int:
        return sum(b.tokens for b in self.blocks)

    @property
    def first(self) -> int:
        return self.blocks[0].offset if self.blocks else 0

    @property
    def last(self) -> int:
        return self.blocks[-1].last if self.blocks else 0

    @property
    def is_steady(self) -> bool:
        """One block of one loop (or none): what ``delay`` and ``ii`` express."""
        return len(self.blocks) == 0 or (len(self.blocks) == 1 and len(self.blocks[0].loops) == 1)

    def offsets(self) -> np.ndarray:
        """Every token's nominal cycle, in order (int64), by :func:`expand`."""
        return expand([self])

    def shifted(self, cycles: int) -> TokenSchedule:
        return TokenSchedule(tuple(Block(b.offset + cycles, b.loops) for b in self.blocks))

    def to_json(self) -> list:
        return [b.to_json() for b in self.blocks]

    @classmethod
    def from_json(cls, value: Sequence) -> TokenSchedule:
        """A plain list of integers, or a list of ``{"offset", "loops"}`` blocks (already valid)."""
        if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in value):
            return cls.from_offsets(list(value))
        return cls(tuple(Block(int(b["offset"]), tuple((int(t), int(s)) for t, s in b.get("loops", [[1, 0]])))
                         for b in value))


def expand(schedules: Sequence[TokenSchedule]) -> np.ndarray:
    """Every token's cycle of several schedules, concatenated, in a few vector passes (one per
    loop depth) over all their blocks at once, not one call per block.

    >>> expand([TokenSchedule((Block(27, ((2, 30), (4, 1))),)), TokenSchedule.steady(3, 2, 3)]).tolist()
    [27, 28, 29, 30, 57, 58, 59, 60, 3, 5, 7]
    """
    blocks = [b for sched in schedules for b in sched.blocks]
    if not blocks:
        return np.zeros(0, dtype=np.int64)
    depth = max(len(b.loops) for b in blocks)
    pad = ((1, 0),)
    # one row per block (outer loops padded with trips of 1), converted in one call
    table = np.array([pad * (depth - len(b.loops)) + tuple(b.loops) for b in blocks], dtype=np.int64)
    trips, strides = table[:, :, 0], table[:, :, 1]
    counts = trips.prod(axis=1)
    block_of = np.repeat(np.arange(len(blocks)), counts)
    local = np.arange(len(block_of), dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    out = np.array([b.offset for b in blocks], dtype=np.int64)[block_of]
    for d in range(depth - 1, -1, -1):       # innermost loop first: mixed-radix digits of the local index
        t = trips[block_of, d]
        out += (local % t) * strides[block_of, d]
        local //= t
    return out


def _stride_runs(n: np.ndarray) -> list[Block]:
    """Greedy maximal runs of one stride, each a one-loop block, found without a loop per run.

    A greedy pass would open a block at token 0, extend it over the run of equal differences
    ``d`` holding its first step, and open the next block at the token after the run's last one
    (the difference between them is the jump, in no block). With the runs of equal ``d`` numbered
    r = 0, 1, ...: run r holds a block unless run r-1 holds one and run r is a single difference
    (then that difference is the jump); a block of run r starts at the run's first token, or one
    later when run r-1 holds a block. So blocks alternate along each stretch of single-difference
    runs, and everything is computed at once.
    """
    if len(n) == 1:
        return [Block(int(n[0]))]
    d = np.diff(n)
    change = np.flatnonzero(d[1:] != d[:-1]) + 1
    a = np.concatenate([[0], change])                      # first d index of each run
    e = np.concatenate([change - 1, [len(d) - 1]])         # last d index of each run
    single = (e - a) == 0
    used = np.ones(len(a), dtype=bool)
    # stretches of single-difference runs: inside one, runs alternate; the first is free when the
    # stretch opens the list (run 0 always holds a block), taken as the jump otherwise
    opens = single & ~np.concatenate([[False], single[:-1]])          # first run of each stretch
    first = np.maximum.accumulate(np.where(opens, np.arange(len(a)), 0))
    k = np.arange(len(a)) - first                                    # place within its stretch
    alternate = np.where((first == 0) & single[0], k % 2 == 0, k % 2 == 1)
    used[single] = alternate[single]
    prev_used = np.concatenate([[False], used[:-1]])
    start = a + prev_used.astype(np.int64)
    start[0] = 0
    r = np.flatnonzero(used)
    blocks = [Block(int(n[s]), ((int(c), int(st)),)) for s, c, st in
              zip(start[r].tolist(), (e[r] + 2 - start[r]).tolist(), d[a[r]].tolist())]
    end = int(e[r[-1]]) + 2                                # first token after the last block
    if end < len(n):
        blocks.append(Block(int(n[end])))
    return blocks


def _fold(blocks: list[Block]) -> Iterable[Block]:
    """Consecutive one-loop blocks of one shape at one distance as one two-loop block."""
    i = 0
    while i < len(blocks):
        b = blocks[i]
        j = i + 1
        if len(b.loops) == 1 and j < len(blocks) and blocks[j].loops == b.loops:
            gap = blocks[j].offset - b.offset
            while (j + 1 < len(blocks) and blocks[j + 1].loops == b.loops
                   and blocks[j + 1].offset - blocks[j].offset == gap):
                j += 1
            j += 1
            yield Block(b.offset, ((j - i, gap),) + b.loops)
            i = j
        else:
            yield b
            i += 1


def monotone_fault(blocks: Sequence[Block]) -> tuple[int, str] | None:
    """(block, why) where the blocks' cycles decrease (None when they never do), without
    expanding them.

    Within a block the enumeration never decreases when every stride is >= 0 and each loop's
    stride covers the span of the loops inside it; between blocks, when each starts no earlier
    than the previous one's last token.

    >>> monotone_fault([Block(0, ((2, 2), (4, 1)))])
    (0, 'block 0: loop 0 steps 2 cycles, less than the 3 cycles its inner loops span')
    >>> monotone_fault([Block(10, ((2, 1),)), Block(5)])
    (1, 'block 1 starts at cycle 5, before block 0 ends (cycle 11)')
    """
    prev_last = None
    for i, b in enumerate(blocks):
        inner = 0
        for depth in range(len(b.loops) - 1, -1, -1):
            trip, stride = b.loops[depth]
            if stride < 0:
                return i, f"block {i}: loop {depth} has stride {stride}; cycles must not decrease"
            if trip > 1 and stride < inner:
                return i, (f"block {i}: loop {depth} steps {stride} cycles, less than the {inner} cycles its "
                           "inner loops span")
            inner += (trip - 1) * stride
        if prev_last is not None and b.offset < prev_last:
            return i, f"block {i} starts at cycle {b.offset}, before block {i - 1} ends (cycle {prev_last})"
        prev_last = b.last
    return None
