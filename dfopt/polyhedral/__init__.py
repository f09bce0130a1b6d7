"""Polyhedral analyses of :class:`~dfopt.ir.program.Program` with islpy (docs/schedule.md).

The IR keeps isl text only; this package parses and analyses it with islpy.

- :mod:`dfopt.polyhedral.dependences`: access relations, the original schedule, memory-based
  dependences (RAW, WAR, WAW) and the dependences a candidate schedule violates.
- :mod:`dfopt.polyhedral.farkas`: the affine Farkas lemma through isl's coefficient sets (the
  dual cone of a dependence polyhedron).
- :mod:`dfopt.polyhedral.analysis`: parallel dimensions, permutable bands, scalar dimensions,
  tiling and wavefront of a schedule.

islpy is also used by :mod:`dfopt.codegen.poly` (C through isl's AST builder), the schedule
model (:mod:`dfopt.models.schedule`) and the instance checks of isl strings
(:mod:`dfopt.instance.isl`).

Nothing is re-exported here, so that ``dfopt.polyhedral.dependences`` stays the module (its main
function has the same name): ``from dfopt.polyhedral.dependences import dependences``.
"""
