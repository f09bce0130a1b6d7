"""Sparse tensor algebra (the ``sparse`` problem's IR; docs/sparse.md).

- :mod:`.notation` — TACO's index notation: the expression AST, its parser, implied reductions;
- :mod:`.formats` — level formats (dense, compressed, singleton) and mode orders, named formats;
- :mod:`.tensor` — COO data and fibertree storage (per level ``pos`` / ``crd``, then ``vals``);
- :mod:`.reference` — the independent COO evaluation every result is checked against;
- :mod:`.data` — tensor data from Matrix Market, FROSTT, ``.npz``, a seeded generator, networkx;
- :mod:`.statement` — the instance's ``sparse`` object with its scheduling commands;
- :mod:`.concrete` — the concrete index notation: loop order, merge points, accumulators;
- :mod:`.sam` — the graph of SAM-style primitives a statement lowers to (run by
  :mod:`dfopt.sim.sparse`).

No solver is imported here.
"""
