"""The functional token simulator of SAM primitive graphs (docs/sparse.md): :func:`simulate` runs a
graph from :func:`dfopt.ir.sparse.sam.lower` on the operands' data and returns a :class:`SimResult`
— the result, tokens per stream and primitive, fibre statistics per join, access facts per array.

>>> from dfopt.ir.sparse.concrete import concretize
>>> from dfopt.ir.sparse.formats import named
>>> from dfopt.ir.sparse.notation import parse
>>> from dfopt.ir.sparse.sam import lower
>>> from dfopt.ir.sparse.tensor import Coo, SparseTensor
>>> c = concretize(parse("C(i,j) = A(i,j) + B(i,j)"), {t: named("csr", 2) for t in "ABC"}, {"i": 2, "j": 2})
>>> A = SparseTensor.from_coo("A", Coo((2, 2), [[0, 0], [1, 1]], [1, 2]), "csr")
>>> B = SparseTensor.from_coo("B", Coo((2, 2), [[0, 1], [1, 1]], [3, 4]), "csr")
>>> res = simulate(lower(c, {"join_j_0": "merge"}), {"A": A, "B": B})
>>> res.result.to_dense().tolist(), res.joiners["join_j_0"].merge_steps
([[1, 3], [0, 6]], 3)
"""

from dfopt.sim.sparse.facts import AccessFacts
from dfopt.sim.sparse.joins import JoinStats
from dfopt.sim.sparse.result import SimResult, UnitCount
from dfopt.sim.sparse.run import run_streams, simulate

__all__ = ["simulate", "run_streams", "SimResult", "UnitCount", "JoinStats", "AccessFacts"]
