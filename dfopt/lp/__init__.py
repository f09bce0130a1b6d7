"""Linear programs: cvxpy problems with dfopt's options and statuses, and a fast path for
difference-constraint LPs (FIFO sizing). Importing this package imports no solver.

>>> from dfopt.lp import solve_difference_lp
>>> solve_difference_lp(2, [0], [1], [4], [1]).s.tolist()
[0.0, 4.0]
"""

from dfopt.lp.cvx import SOLVERS, available_lp_solvers, map_cvxpy_status, solve_problem
from dfopt.lp.difference import METHODS, DifferenceResult, DifferenceTimeLimit, solve_difference_lp

__all__ = ["solve_problem", "available_lp_solvers", "map_cvxpy_status", "SOLVERS",
           "solve_difference_lp", "DifferenceResult", "DifferenceTimeLimit", "METHODS"]
