"""The arrays of an emitted sparse kernel and how each memory binding reads or writes them.

Every operand array a process reads (a level's ``pos`` and ``crd``, the ``vals``) and every result
array a writer stores is a pointer argument of the top function, with an ``m_axi`` interface (the
host's memory); the binding (:class:`~dfopt.models.sparse.decision.ArrayBinding`) decides what its
process does with it:

- ``dram``: reads (writes) it in place, element by element;
- ``sram`` / ``sparse_sram``: copies it into an on-chip RAM at the process's start (``bind_storage
  type=ram_2p``, ``impl=bram``, or ``uram`` above :data:`URAM_ABOVE_BRAM18` BRAM18 blocks) and
  reads that (a result: fills the RAM and copies it out at the end) — every copy is the whole
  array, allocated before every loop, whatever depth the binding gives;
- ``fifo``: reads it once in order (``sam::InOrder``: a sequential stream of words), or writes it
  in order;
- ``reg``: a scalar, copied into a fully partitioned (register) array.

A workspace's arrays (``<w>.vals``, ``<w>.crd``) live inside the accumulator
(:mod:`.accumulate`).

>>> a = ArraySpec("A.1.pos", "idx", 5, "fifo", "operand")
>>> a.param(), a.read("r")
('const sam::idx_t* A_1_pos', 'A_1_pos_rd.at(r)')
>>> ArraySpec("x.vals", "val", 70000, "sram", "operand").impl
'uram'
"""

from __future__ import annotations

from dataclasses import dataclass

from dfopt.codegen.hls.emit import ident
from dfopt.ir.memory import bram18_count

#: an on-chip copy that takes more BRAM18 blocks than this goes to URAM
URAM_ABOVE_BRAM18 = 8
CTYPES = {"idx": "sam::idx_t", "val": "val_t"}


@dataclass(frozen=True)
class ArraySpec:
    """One array: its binding name (``A.1.crd``), element kind (``idx`` or ``val``), length (a
    result's: the capacity the host allocates), memory and role (``operand`` or ``result``)."""

    name: str
    elem: str
    length: int
    memory: str
    role: str

    @property
    def var(self) -> str:
        return ident(self.name)

    @property
    def ctype(self) -> str:
        return CTYPES[self.elem]

    @property
    def bits(self) -> int:
        return 32 if self.elem == "idx" else 64

    @property
    def impl(self) -> str:
        return "uram" if bram18_count(self.bits, self.length) > URAM_ABOVE_BRAM18 else "bram"

    def param(self) -> str:
        const = "const " if self.role == "operand" else ""
        return f"{const}{self.ctype}* {self.var}"

    def top_pragmas(self) -> list[str]:
        why = {"dram": "read in place" if self.role == "operand" else "written in place",
               "sram": "copied into on-chip RAM by its process", "sparse_sram": "copied into on-chip RAM",
               "fifo": "streamed in order by its process", "reg": "held in registers"}[self.memory]
        return [f"#pragma HLS INTERFACE m_axi port={self.var} offset=slave bundle=gmem_{self.var} "
                f"depth={max(1, self.length)}  // {self.name}: {self.memory}, {why}"]

    def _local(self) -> str:
        return f"{self.var}_{'reg' if self.memory == 'reg' else 'ram'}"

    def _local_decl(self) -> list[str]:
        local, n = self._local(), max(1, self.length)
        lines = [f"static {self.ctype} {local}[{n}];"]
        if self.memory == "reg":
            lines.append(f"#pragma HLS array_partition variable={local} complete")
        else:
            lines.append(f"#pragma HLS bind_storage variable={local} type=ram_2p impl={self.impl}")
        return lines

    # -- an operand: read by one process
    def setup(self) -> list[str]:
        """Lines at the start of the reading process."""
        if self.memory in ("sram", "sparse_sram", "reg"):
            return [*self._local_decl(),
                    f"for (long q = 0; q < {self.length}; ++q) {self._local()}[q] = {self.var}[q];"
                    f"  // {self.name}: bulk copy on chip"]
        if self.memory == "fifo":
            return [f"sam::InOrder<{self.ctype}> {self.var}_rd({self.var});  // {self.name}: read in order"]
        return []

    def read(self, index: str) -> str:
        """The C expression of element ``index``."""
        if self.memory in ("sram", "sparse_sram", "reg"):
            return f"{self._local()}[{index}]"
        if self.memory == "fifo":
            return f"{self.var}_rd.at({index})"
        return f"{self.var}[{index}]"

    # -- a result: written by one writer, with its length in `<var>_n`
    def writer(self, kind: str) -> list[str]:
        """Lines that declare ``<var>_w``, a ``sam::SeqOut`` or ``sam::PosOut`` (``kind``)."""
        target = self.var
        lines = []
        if self.memory in ("sram", "sparse_sram", "reg"):
            lines += self._local_decl()
            target = self._local()
        lines.append(f"sam::{kind}<{self.ctype}> {self.var}_w({target}, {self.length});  // {self.name}: "
                     f"{self.memory}")
        return lines

    def store(self, length: str) -> list[str]:
        """Lines at the writer's end: the on-chip copy out to the host, and the length."""
        lines = []
        if self.memory in ("sram", "sparse_sram", "reg"):
            lines.append(f"for (long q = 0; q < {length} && q < {self.length}; ++q) {self.var}[q] = "
                         f"{self._local()}[q];  // bulk copy out")
        return lines + [f"*{self.var}_n = {length};"]
