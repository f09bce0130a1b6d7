"""C code from a schedule of a polyhedral program (isl's AST builder through islpy).

Given a :class:`~dfopt.ir.program.Program` (isl domains, C statement bodies, arrays, scalars,
prelude, dataset sizes) and a schedule (an isl union map ``instance -> time vector``, e.g. the
program's original 2d+1 schedule, one computed by isl's scheduler, or a tiled one), this package
writes C that executes every statement instance in the schedule's order, optionally with OpenMP
pragmas on the loops of parallel dimensions, compiles it and runs it. Comparing the bytes that two
schedules' programs write (``mode="check"``) is a differential test of a transformation.

- :mod:`dfopt.codegen.poly.emit`: :func:`kernel_c` (the loop nest as a C function, one macro per
  statement), :func:`program_c` (a whole C file: sizes, arrays, deterministic initialisation,
  ``main`` in ``check`` or ``time`` mode), :func:`parallel_dims` (which schedule dimensions carry
  no dependence), :func:`loop_dims` (which schedule dimension each AST loop scans);
- :mod:`dfopt.codegen.poly.run`: :func:`find_compiler`, :func:`compile_c`, :func:`run`.

islpy is imported here (``emit``), in :mod:`dfopt.polyhedral`, in the schedule model and by the
instance checks of isl strings; never by the IR. The package attribute ``run`` is the function
:func:`~dfopt.codegen.poly.run.run`, not the module (import from the module with
``from dfopt.codegen.poly.run import ...``).

Which loop scans which schedule dimension (constant dimensions make no loop):

>>> from dfopt.ir.program import Program, Statement
>>> p = Program(params=("N",), statements=(
...     Statement("S0", "[N] -> { S0[i, j] : 0 <= i < N and 0 <= j < N }", body="A[i][j] = 0;"),))
>>> loop_dims(p, "[N] -> { S0[i, j] -> [0, j, 1, i, 0] }")  # (iterator, dimension, depth)
[('c1', 1, 0), ('c3', 3, 1)]
"""

from dfopt.codegen.poly.emit import CTYPES, ISL_MACROS, kernel_c, loop_dims, parallel_dims, program_c, statement_macros
from dfopt.codegen.poly.run import CompileError, CompilerNotFoundError, RunError, compile_c, find_compiler, run

__all__ = ["kernel_c", "program_c", "parallel_dims", "loop_dims", "statement_macros", "ISL_MACROS", "CTYPES",
           "compile_c", "run", "find_compiler", "CompileError", "CompilerNotFoundError", "RunError"]
