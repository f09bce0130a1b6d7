"""HLS C++ of a sparse kernel: its SAM primitive graph as streaming processes (Vitis style).

:func:`write_hls` lowers the statement with the design's co-iteration methods and writes one C++
process per primitive (:mod:`.scan`, :mod:`.join`, :mod:`.values`, :mod:`.accumulate`,
:mod:`.writers`), each implementing SAM's streaming semantics token by token over
``hls::stream<sam::token<T>>`` — a value (coordinate, reference, value or bit-vector word) and
its control bits, stop level and done (:mod:`.runtime`) — until it has read and forwarded the done
token. The arrays are arguments of a ``#pragma HLS dataflow`` top, read and written as the design
binds them (:mod:`.arrays`); the processes are called in canonical order (producers first) through
dfopt's dataflow macros, so that ``make csim`` (concurrent processes, bounded blocking FIFOs) and
Vitis csim (one after another, unbounded) both run it (:mod:`.project`), and the test bench
compares every result array with the reference evaluator's and prints the tokens of every stream,
counted by the processes (:mod:`.testbench`).

FIFO depths (``depths``): ``iteration`` (the default) makes each FIFO as deep as the most tokens
of its stream in ``P + 1`` consecutive iterations of the outermost loop (``P`` the processes), + 2,
as the token-level run counts them; ``stream`` as deep as the whole stream, so that no write ever
blocks and no depth can deadlock. The graph forks and joins again (repeaters, joiners, writers that
read the coordinates of outer loops), and a bounded FIFO of a fork-join deadlocks when one branch
must run far ahead of the other. An output port holds its last stop token back until it knows
whether the next closing merges into it, so each port on a path can keep its consumers up to one
outermost iteration behind (with empty rows that is one token an iteration: a window of one
iteration deadlocked SpGEMM on a matrix with empty rows). The window is that argument's bound, not
a proof: every shipped kernel and the random inputs of the tests PASS ``make csim`` with it, and
``stream`` is there when a design's data does not. Every process only blocks (no
``empty()`` or non-blocking read), so the network is a Kahn process network with bounded channels:
whether it deadlocks on given data does not depend on the schedule, and one ``make csim`` run
(which names the deadlocked streams, exit 3) decides it. A schedule-based sizing with the ``fifo``
problem's models needs the processes' read/write order, which the token-level run does not keep.

Not expressed: the inner and outer parallelisation (one lane, one replica); SRAM copies below the
root (every copy is the whole array, before every loop); result levels of a COO (non-unique
compressed, singleton) format; result levels whose coordinates do not stream in loop order. A
primitive the emitter cannot express raises :class:`~dfopt.errors.CodegenError` naming it.
"""

from dfopt.codegen.sam_hls.emit import write_hls

__all__ = ["write_hls"]
