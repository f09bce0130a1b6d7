"""Polyhedral programs for scheduling: statements with isl domains and accesses (strings).

The IR stores isl text only; islpy parses it elsewhere: ``dfopt.instance`` checks it,
``dfopt.polyhedral``, the schedule model and ``dfopt.codegen.poly`` analyse it.

>>> p = Program(params=("N",), statements=(Statement("S0", "[N] -> { S0[i] : 0 <= i < N }"),))
>>> p.statement("S0").domain
'[N] -> { S0[i] : 0 <= i < N }'
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Statement:
    name: str
    domain: str
    reads: tuple = ()
    writes: tuple = ()
    body: str = ""
    schedule: str | None = None


@dataclass(frozen=True)
class Program:
    params: tuple = ()
    context: str = ""
    statements: tuple[Statement, ...] = ()
    arrays: dict = field(default_factory=dict)
    schedule: str | None = None
    scalars: dict = field(default_factory=dict)
    prelude: str = ""
    sizes: dict = field(default_factory=dict)

    def statement(self, name: str) -> Statement:
        for s in self.statements:
            if s.name == name:
                return s
        raise KeyError(name)
