"""Polyhedral analyses of :class:`~dfopt.ir.program.Program` with islpy (DESIGN section 5.4).

The IR keeps isl text only; this package is the one place that parses it with islpy.

- :mod:`dfopt.polyhedral.dependences`: access relations, the original schedule, memory-based
  dependences (RAW, WAR, WAW) and the dependences a candidate schedule violates.

Nothing is re-exported here, so that ``dfopt.polyhedral.dependences`` stays the module (its main
function has the same name): ``from dfopt.polyhedral.dependences import dependences``.
"""
