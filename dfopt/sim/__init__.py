"""Token-level simulator of dataflow graphs: the FIFO oracle (docs/design.md, the token timing model).

``simulate`` runs the exact event model (bounded or unbounded FIFOs, any graph, cycles
included) and returns a :class:`SimResult`; ``no_stall_depths`` is the max occupancy of the
unbounded run, the depth that simulation-based sizing (Vitis cosim, hls4ml, FINN) measures.

>>> from dfopt.ir.graph import DataflowGraph, Kernel, Stream
>>> g = DataflowGraph([Kernel("src", delay=2), Kernel("snk", ii=2)],
...                   [Stream("e", "src", "snk", tokens=4)])
>>> simulate(g, unbounded=True).makespan
10
>>> no_stall_depths(g)
{'e': 3}
"""

from dfopt.sim.engine import no_stall_depths, reference_run, simulate
from dfopt.sim.events import EventProgram, compile_events
from dfopt.sim.result import Blocked, SimResult, Step

__all__ = ["simulate", "reference_run", "no_stall_depths", "SimResult", "Blocked", "Step", "EventProgram",
           "compile_events"]
