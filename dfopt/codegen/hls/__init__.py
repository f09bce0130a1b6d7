"""Vitis-style HLS C++ target: the headers that let generated code run as a software simulation.

Generated code is Vitis HLS C++ (one function per kernel over ``hls::stream<beat>&`` arguments, a
``#pragma HLS dataflow`` region per fused group, processes in canonical order). Built with g++,
``-DDFOPT_THREADED_CSIM`` and :func:`include_dir` (:data:`SIM_CXXFLAGS`), the processes run
concurrently over bounded, blocking FIFOs of the declared depths, so a depth that is too small
ends the program with a deadlock report instead of passing unnoticed as in Vitis csim; built
with :data:`VITIS_CXXFLAGS` against Vitis's own ``hls_stream.h`` (or AMD's open csim model of
it) they run one after the other in call order, as Vitis csim runs them. ``include/README.md``
lists the header API the generator emits and the exit codes.

>>> (include_dir() / "dfopt_stream.h").is_file(), (include_dir() / "hls_stream.h").exists()
(True, False)
>>> EXIT_DEADLOCK, EXIT_LEFTOVER, EXIT_MISUSE
(3, 4, 5)
"""

from __future__ import annotations

from pathlib import Path

#: g++ flags of the threaded software simulation (add ``-I`` :func:`include_dir`); C++14, as
#: Vitis csim compiles.
SIM_CXXFLAGS: tuple[str, ...] = ("-std=c++14", "-O1", "-pthread", "-Wall", "-Wno-unknown-pragmas",
                                 "-DDFOPT_THREADED_CSIM")

#: g++ flags of the Vitis-csim build (add ``-I`` Vitis's include folder first, then
#: :func:`include_dir`): sequential processes, unbounded streams; an empty read warns and returns
#: a default value, as Vitis csim does.
VITIS_CXXFLAGS: tuple[str, ...] = ("-std=c++14", "-O1", "-pthread", "-Wall", "-Wno-unknown-pragmas",
                                   "-DALLOW_EMPTY_HLS_STREAM_READS")

#: Exit codes of a simulation binary, set by the runtime (the testbench owns 0, 1 and 2).
EXIT_DEADLOCK = 3
EXIT_LEFTOVER = 4
EXIT_MISUSE = 5


def include_dir() -> Path:
    """The folder holding ``dfopt_dataflow.h`` and ``dfopt_stream.h`` (pass it to g++ as ``-I``).

    >>> include_dir().name
    'include'
    """
    return Path(__file__).resolve().parent / "include"
