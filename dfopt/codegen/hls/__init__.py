"""Vitis-style HLS C++ target: the headers that let generated code run as a software simulation.

Generated code is Vitis HLS C++ (one function per kernel over ``hls::stream<T>&`` arguments, a
``#pragma HLS dataflow`` top per fused group). Built with g++ against :func:`include_dir`, the
top's processes run concurrently over bounded, blocking FIFOs of the declared depths, so a depth
that is too small ends the program with a deadlock report instead of passing unnoticed as in
Vitis csim. ``include/README.md`` lists the header API the generator emits and the exit codes.

>>> (include_dir() / "hls_stream.h").is_file()
True
>>> EXIT_DEADLOCK, EXIT_LEFTOVER, EXIT_MISUSE
(3, 4, 5)
"""

from __future__ import annotations

from pathlib import Path

#: g++ flags for a software-simulation build (add ``-I`` :func:`include_dir`).
SIM_CXXFLAGS: tuple[str, ...] = ("-std=c++17", "-O1", "-pthread", "-Wall", "-Wno-unknown-pragmas")

#: Exit codes of a simulation binary, set by the runtime (the testbench owns 0, 1 and 2).
EXIT_DEADLOCK = 3
EXIT_LEFTOVER = 4
EXIT_MISUSE = 5


def include_dir() -> Path:
    """The folder holding ``hls_stream.h`` and ``dfopt_dataflow.h`` (pass it to g++ as ``-I``).

    >>> include_dir().name
    'include'
    """
    return Path(__file__).resolve().parent / "include"
