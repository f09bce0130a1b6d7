"""Code generators (HLS C++ for FPGA, MLIR-AIE for NPU, C from schedules; DESIGN 5.7).

No target exists in dfopt 0.1: they arrive with the end-to-end pipeline, which needs the fusion,
placement and mapping models first. ``TARGETS`` lists the registered ones.

>>> TARGETS
{}
"""

TARGETS: dict = {}
