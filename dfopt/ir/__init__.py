"""The shared IR: dataflow graphs, itensor types, platforms and polyhedral programs.

Data and pure graph analyses only; nothing here imports a solver or islpy.
"""

from dfopt.ir.analyses import find_cycle, longest_path_lengths, topological_order
from dfopt.ir.graph import RESOURCE_KINDS, Buffer, DataflowGraph, Kernel, Loop, Stream
from dfopt.ir.itensor import DTYPE_BITS, ITensorType
from dfopt.ir.platform import PRESET_NAMES, Link, Platform, Slot, load_preset
from dfopt.ir.program import Program, Statement

__all__ = [
    "DataflowGraph", "Kernel", "Loop", "Stream", "Buffer", "ITensorType", "DTYPE_BITS", "RESOURCE_KINDS",
    "Platform", "Slot", "Link", "PRESET_NAMES", "load_preset", "Program", "Statement",
    "topological_order", "find_cycle", "longest_path_lengths",
]
