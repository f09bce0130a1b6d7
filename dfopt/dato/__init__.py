"""Dato on dfopt: tasks on a virtual grid, typed streams and layouts (docs/dato.md).

- :mod:`dfopt.dato.frontend` — the embedded DSL that records a program (it runs no kernel):
  ``Program``, ``task(mapping=...)``, ``Stream[T, N, P]``, ``StreamArray``, ``Tensor`` with
  layouts ``S(k)`` / ``R``, ``compute``, ``matmul``, ``reduce_sum``, ``allreduce``;
- :mod:`dfopt.dato.checks` — static checks with diagnostics that name task, instance, stream and
  source line: one producer and one consumer per stream, put/get balance, Free/Used token
  simulation (underflow, overflow, deadlock cycles), pending partial sums that need an
  ``allreduce``, layouts that differ on the two ends of a stream;
- :mod:`dfopt.dato.graph` — the virtual mapping graph (one node per task instance, an edge per
  stream, reduction edges for collectives), the legality of ``bundle`` and ``chain``, and the
  export to the shared :class:`~dfopt.ir.graph.DataflowGraph`;
- :mod:`dfopt.dato.examples` — a tiled GEMM with allreduce, an FFN on two halves, a
  FlashAttention-style pipeline, and one rejected program per check.

The mapping onto NPU tiles (``problem: mapping``) and MLIR-AIE generation from it are not built
yet.
"""

from dfopt.dato.checks import check, check_or_raise, simulate
from dfopt.dato.frontend import (
                                 DatoError,
                                 Diagnostic,
                                 Program,
                                 R,
                                 S,
                                 Stream,
                                 StreamArray,
                                 Tensor,
                                 allreduce,
                                 compute,
                                 instance,
                                 matmul,
                                 reduce_sum,
)
from dfopt.dato.graph import can_bundle, can_chain, mapping_graph, to_dataflow_graph, to_dict

__all__ = ["Program", "Stream", "StreamArray", "Tensor", "S", "R", "compute", "matmul", "reduce_sum", "allreduce",
           "instance", "check", "check_or_raise", "simulate", "Diagnostic", "DatoError", "mapping_graph",
           "to_dataflow_graph", "to_dict", "can_bundle", "can_chain"]
