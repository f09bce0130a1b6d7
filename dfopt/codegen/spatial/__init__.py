"""Spatial target for sparse tensor algebra: the program Stardust (CGO 2025) would produce from a
bound, scheduled sparse statement (``problem: sparse``, docs/sparse.md), under a design's memory
binding, co-iteration and parallelisation.

- :mod:`.layout` — where the loops, every array's accesses and every memory's declaration sit
  (shared by the emitter and the checker);
- :mod:`.memory` — each binding's Spatial memory: declaration, bulk transfer, reads and writes;
- :mod:`.coiteration` — a merge point's loop: a walk, or a join by bit vectors, merge or dense
  iteration;
- :mod:`.kernel` — the ``Accel`` body: scopes, the result's level writers, the accumulator;
- :mod:`.program` — the whole app (host DRAMs, ``setMem`` / ``getMem``), :func:`spatial_program`,
  :func:`write_spatial`;
- :mod:`.check` — :func:`check_program`, the program read back against the design.

>>> import dfopt
>>> from dfopt.api import make_options
>>> from dfopt.models.sparse import prepare
>>> inst = dfopt.load("instances/sparse/plus2-bar.json")
>>> data = prepare(inst, make_options(inst))
>>> text = spatial_program(data, data.baseline, "plus2-bar")
>>> check_program(text, data, data.baseline), "Foreach(Scan(16, 19, \\"or\\"" in text
([], True)
"""

from dfopt.codegen.spatial.check import check_program
from dfopt.codegen.spatial.program import spatial_program, summary, write_spatial

__all__ = ["check_program", "spatial_program", "summary", "write_spatial"]
