"""The reconfigurable dataflow array a sparse kernel runs on, as the cost model reads it.

Every figure comes from the platform's ``rda`` object (the ``capstan`` preset cites its sources);
an inline platform may state its own.

>>> from dfopt.ir.platform import load_preset
>>> m = machine(load_preset("capstan"))
>>> m.lanes > 1 and m.pmu_words > 0 and m.dram_words_per_cycle > 0
True
"""

from __future__ import annotations

from dataclasses import dataclass

from dfopt.errors import InstanceError

#: the ``rda`` fields the model reads
FIELDS = ("pcus", "pmus", "lanes", "pmu_words", "banks", "word_bits", "dram_words_per_cycle",
          "dram_latency", "dram_burst_words", "sparse_sram")


@dataclass(frozen=True)
class Machine:
    """Compute units (PCUs, each ``lanes`` wide), memory units (PMUs of ``pmu_words`` words in
    ``banks`` banks; ``sparse_sram`` of them take atomic sparse updates), the word (also a
    bit-vector word) in bits, DRAM bandwidth in words per cycle, its latency and burst size."""

    pcus: int
    pmus: int
    lanes: int
    pmu_words: int
    banks: int
    word_bits: int
    dram_words_per_cycle: float
    dram_latency: int
    dram_burst_words: int
    sparse_sram: int

    def par_choices(self, cap: int | None) -> tuple:
        """The powers of two up to ``cap`` (default: the lanes of one PCU)."""
        top = cap if cap is not None else self.lanes
        out, p = [], 1
        while p <= top:
            out.append(p)
            p *= 2
        return tuple(out)


def machine(platform) -> Machine:
    """The :class:`Machine` of an ``rda`` platform; another kind is bad input at ``/platform``."""
    if platform is None or platform.kind != "rda":
        kind = "none" if platform is None else platform.kind
        raise InstanceError(f"a sparse kernel needs a reconfigurable dataflow array platform (kind 'rda', e.g. the "
                            f"preset 'capstan'), got {kind!r}", pointer="/platform")
    rda = platform.rda
    missing = [f for f in FIELDS if f not in rda]
    if missing:
        raise InstanceError(f"the rda platform lacks {', '.join(missing)}", pointer="/platform/rda")
    values = {f: rda[f] for f in FIELDS}
    if isinstance(values["sparse_sram"], bool):
        values["sparse_sram"] = values["pmus"] if values["sparse_sram"] else 0
    return Machine(**values)
