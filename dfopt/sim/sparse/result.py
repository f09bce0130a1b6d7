"""What a run of a primitive graph reports: :class:`SimResult` with :class:`UnitCount` per primitive
(the join statistics and access facts are :class:`~dfopt.sim.sparse.joins.JoinStats` and
:class:`~dfopt.sim.sparse.facts.AccessFacts`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from dfopt.ir.sparse.tensor import Coo, SparseTensor
from dfopt.sim.sparse.facts import AccessFacts
from dfopt.sim.sparse.joins import JoinStats


@dataclass(frozen=True)
class UnitCount:
    """One primitive's counts: ``kind``, ``loop`` (its index, None at the root), the tokens of its
    input and output streams, and ``work`` (cycles of a one-lane unit, see
    :mod:`dfopt.sim.sparse.primitives`)."""

    kind: str
    loop: str | None
    tokens_in: int
    tokens_out: int
    work: int


@dataclass(frozen=True, eq=False)
class SimResult:
    """A run: ``result`` (the left-hand side, assembled from the writers), ``streams`` (tokens per
    stream, stop and done tokens included), ``units`` (per primitive), ``joiners`` (per binary join),
    ``arrays`` (access facts per array), ``output`` (the result as the writers stored it) and
    ``runs`` (every stream's tokens as a :class:`~dfopt.sim.sparse.streams.Stream`, for the
    emitters that size FIFOs from them)."""

    result: Coo
    streams: dict[str, int]
    units: dict[str, UnitCount]
    joiners: dict[str, JoinStats]
    arrays: dict[str, AccessFacts]
    output: SparseTensor
    runs: dict = field(default_factory=dict, repr=False)

    @property
    def tokens(self) -> int:
        """Tokens over every stream."""
        return sum(self.streams.values())
