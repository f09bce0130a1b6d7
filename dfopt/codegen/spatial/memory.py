"""The memory of every array in the Spatial program: its declaration, its bulk transfer and how it is
read, written and accumulated, by the design's binding.

Spelling, as Spatial and TACO's Spatial back end (``codegen_spatial``, Stardust's) write them:

- ``sram`` — ``SRAM[T](words)``, filled by ``x load x_dram(lo :: lo + words par P)`` and written
  back by ``x_dram(lo :: hi par P) store x``; read ``x(a)``, written ``x(a) = v``, accumulated
  ``x(a) = x(a) + v`` (a read-modify-write at a computed address);
- ``sparse_sram`` — ``SparseSRAM[T](words)`` with the same transfers; accumulated atomically
  ``x.RMW(a, v, "add", "TSO")`` (Spatial's sparse-memory read-modify-write);
- ``fifo`` — ``FIFO[T](16)``, filled by ``x_dram stream_load_vec(lo, n, x)`` or drained by
  ``x_dram stream_store_vec(lo, x, n)``; ``x.deq`` / ``x.deq(en)`` / ``x.peek``, ``x.enq(v)``;
- ``reg`` — ``Reg[T](0)``; ``x.value``, ``x := v``;
- ``dram`` — no on-chip memory: ``x_dram(a)`` and ``x_dram(a) = v`` in place.

An on-chip copy allocated inside loops holds a *window* of its array, ``[x_win, x_win + words)``;
its addresses are relative to ``x_win``.

>>> p = ArrayPlan("A.1.crd", "crd", "read", "fifo", "Int", True, None)
>>> p.declare(), p.read("q"), p.read("q", en="h"), p.stream_in("A_1_lo", "A_1_hi - A_1_lo")
('val A_1_crd = FIFO[Int](16)', 'A_1_crd.deq', 'A_1_crd.deq(h)', 'A_1_crd_dram stream_load_vec(A_1_lo, A_1_hi - \
A_1_lo, A_1_crd)')
>>> s = ArrayPlan("x.vals", "vals", "read", "sram", "T", True, 34, window="x_vals_win")
>>> s.declare(), s.read("j"), s.load("8")
('val x_vals = SRAM[T](34)', 'x_vals(j - x_vals_win)', 'x_vals load x_vals_dram(x_vals_win :: x_vals_win + 34 par 8)')
"""

from __future__ import annotations

from dataclasses import dataclass

from dfopt.codegen.spatial.layout import FIFO_DEPTH
from dfopt.codegen.spatial.text import dram, ident

#: the Spatial memory of each binding's memory
SPATIAL = {"sram": "SRAM", "sparse_sram": "SparseSRAM", "fifo": "FIFO", "reg": "Reg", "dram": "DRAM"}


@dataclass
class ArrayPlan:
    """One array (``A.1.crd``): its ``kind`` (pos, crd, vals), ``role`` (read, write, accumulate),
    ``memory``, element type ``elem`` (``Int`` for positions and coordinates, ``T`` for values),
    ``off_chip`` (it has a DRAM), ``size`` (words of the on-chip memory) and ``window`` (the
    identifier of a copy's first position, None when it starts at 0)."""

    name: str
    kind: str
    role: str
    memory: str
    elem: str
    off_chip: bool
    size: int | None
    window: str | None = None

    @property
    def id(self) -> str:
        return ident(self.name)

    @property
    def dram(self) -> str:
        return dram(self.name)

    def _at(self, addr: str) -> str:
        return f"{addr} - {self.window}" if self.window else addr

    def declare(self) -> str:
        """The on-chip declaration (none for ``dram``)."""
        if self.memory == "fifo":
            return f"val {self.id} = FIFO[{self.elem}]({FIFO_DEPTH})"
        if self.memory == "reg":
            return f"val {self.id} = Reg[{self.elem}](0)"
        return f"val {self.id} = {SPATIAL[self.memory]}[{self.elem}]({self.size})"

    # -- element accesses
    def read(self, addr: str, en: str | None = None) -> str:
        if self.memory == "fifo":
            return f"{self.id}.deq" if en is None else f"{self.id}.deq({en})"
        if self.memory == "reg":
            return f"{self.id}.value"
        if self.memory == "dram":
            return f"{self.dram}({addr})"
        return f"{self.id}({self._at(addr)})"

    def peek(self, addr: str) -> str:
        """The element at ``addr`` without consuming it (a FIFO's head)."""
        return f"{self.id}.peek" if self.memory == "fifo" else self.read(addr)

    def write(self, addr: str, value: str, en: str | None = None) -> list[str]:
        if self.memory == "fifo":
            return [f"{self.id}.enq({value})" if en is None else f"{self.id}.enq({value}, {en})"]
        if self.memory == "reg":
            line = f"{self.id} := {value}"
        elif self.memory == "dram":
            line = f"{self.dram}({addr}) = {value}"
        else:
            line = f"{self.id}({self._at(addr)}) = {value}"
        return [line] if en is None else [f"if ({en}) {{", f"  {line}", "}"]

    def accumulate(self, addr: str, value: str) -> str:
        if self.memory == "reg":
            return f"{self.id} := {self.id}.value + {value}"
        if self.memory == "sparse_sram":
            return f'{self.id}.RMW({self._at(addr)}, {value}, "add", "TSO")'
        if self.memory == "dram":
            return f"{self.dram}({addr}) = {self.dram}({addr}) + {value}"
        at = self._at(addr)
        return f"{self.id}({at}) = {self.id}({at}) + {value}"

    # -- transfers between DRAM and the on-chip memory
    def _range(self, count: str) -> str:
        return f"0 :: {count}" if self.window is None else f"{self.window} :: {self.window} + {count}"

    def load(self, par: str) -> str:
        return f"{self.id} load {self.dram}({self._range(str(self.size))} par {par})"

    def store(self, count: str, par: str) -> str:
        return f"{self.dram}({self._range(count)} par {par}) store {self.id}"

    def stream_in(self, lo: str, count: str) -> str:
        return f"{self.dram} stream_load_vec({lo}, {count}, {self.id})"

    def stream_out(self, lo: str, count: str) -> str:
        return f"{self.dram} stream_store_vec({lo}, {self.id}, {count})"

    def reg_in(self) -> str:
        return f"{self.id} := {self.dram}(0)"

    def reg_out(self) -> str:
        return f"{self.dram}(0) = {self.id}.value"
