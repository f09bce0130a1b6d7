"""MLIR-AIE target for the AMD NPU: a physical design and its MLIR text.

- :mod:`dfopt.codegen.aie.design` — :class:`AieDesign` (tiles, object FIFOs, links through mem
  tiles, cores, the runtime sequence) and mlir-aie's DMA-channel and memory rules;
- :mod:`dfopt.codegen.aie.checks` — :func:`problems` / :func:`validate`, its checks against an NPU
  platform preset (re-exported by ``design``);
- :mod:`dfopt.codegen.aie.emit` — the design as mlir-aie custom syntax (for ``aiecc.py``) and as
  MLIR generic form (for any MLIR parser, e.g. xDSL with unregistered dialects);
- :mod:`dfopt.codegen.aie.mapping` — :func:`~dfopt.codegen.aie.mapping.design_from_mapping`, the
  design of a solved ``problem: mapping`` (recounted mapping, flows, host transfers, assembly,
  core programs in op order).
"""

from dfopt.codegen.aie.checks import problems, validate
from dfopt.codegen.aie.design import (
    AieDesign,
    Core,
    DmaTransfer,
    DmaWait,
    FifoAccess,
    HostBuffer,
    Link,
    ObjectFifo,
    Runtime,
    Step,
    Tile,
)
from dfopt.codegen.aie.emit import emit_generic_mlir, emit_mlir, write_mlir

__all__ = ["AieDesign", "Core", "DmaTransfer", "DmaWait", "FifoAccess", "HostBuffer", "Link",
           "ObjectFifo", "Runtime", "Step", "Tile", "problems", "validate", "emit_mlir", "emit_generic_mlir",
           "write_mlir"]
