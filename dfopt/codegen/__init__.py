"""Code generators.

- :mod:`dfopt.codegen.hls` — HLS C++ of a solved dataflow design (one function per kernel,
  ``hls::stream`` FIFOs with the solved depths, a ``#pragma HLS dataflow`` top), built with g++
  for software simulation against a NumPy reference;
- :mod:`dfopt.codegen.poly` — C of a polyhedral program in a schedule's order through isl's AST
  builder, with OpenMP pragmas on parallel loops, and a harness to compile, run and time it;
- :mod:`dfopt.codegen.aie` — MLIR-AIE (custom syntax and the generic form) of a physical NPU
  design: tiles, object FIFOs, links through mem tiles, cores, the runtime sequence;
  :mod:`dfopt.codegen.aie.mapping` builds that design from a solved ``problem: mapping``.
"""
