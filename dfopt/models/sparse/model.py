"""The CP-SAT model of a sparse kernel's decisions (formulation ``cpsat``).

Per array a one-hot choice among its legal placements (memory, allocation depth, PMUs; the rules
of :mod:`.rules`), per join a one-hot method, one inner and one outer parallelisation factor
(their pairs one-hot). The costs of every choice are the cost model's (:mod:`.cost`) on the one
simulated run, so the model's objective is the estimate the checker recounts:

    cycles >= the work of every primitive / its parallelism under the chosen pair and method
    cycles >= DRAM words / bandwidth,        total = cycles + bank conflicts (+ one DRAM latency)

with PMUs (per replica of the outer factor, sparse ones counted apart) and PCUs within the
machine. Solved lexicographically: least cycles, then with those fixed the fewest DRAM words, then
PMUs (sparse ones counted twice: plain SRAM where it serves). Variables are named after the arrays and joins.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from dfopt.ilp import new_cp_model, solve_cp_model
from dfopt.models.sparse.cost import (
    JOIN_KINDS,
    array_conflicts,
    array_dram_words,
    join_lane_parallel,
    join_work,
    pcus_used,
    unit_cycles,
)
from dfopt.models.sparse.decision import MEMORIES, METHODS, ON_CHIP_COPIES, ArrayBinding, SparseDesign
from dfopt.models.sparse.rules import access_depth, lanes_reading, min_pmus, rule_reason
from dfopt.results import Termination


@dataclass
class Placements:
    """The legal placements of one array and the inner factors each allows (its PMUs give banks)."""

    options: list = field(default_factory=list)          # ArrayBinding
    allows: list = field(default_factory=list)           # per option: the inner factors it serves


def placements(data: Any, name: str) -> Placements:
    """Every legal :class:`ArrayBinding` of array ``name`` and the inner factors it serves."""
    f, loops, m = data.sim.arrays[name], data.concrete.loops, data.machine
    out = Placements()
    top = access_depth(f.loop, loops)
    for memory in MEMORIES:
        if rule_reason(memory, role=f.role, in_order=f.in_order, length=f.length, region=data.regions[name],
                       ws_format=data.ws_formats.get(name), bulk=name in data.bulk):
            continue
        if memory not in ON_CHIP_COPIES:
            out.options.append(ArrayBinding(memory, top, 0))
            out.allows.append(set(data.inner_choices))
            continue
        for depth in range(top + 1):
            seg = f.segments[depth][0]
            needs = {p: min_pmus(seg, f.gather, lanes_reading(f.loop, data.vloop, p), m.pmu_words, m.banks)
                     for p in data.inner_choices}
            counts = set(needs.values())
            if f.gather:            # more banks than the lanes need take fewer conflicts
                top_need = max(counts)
                counts |= {c for c in (2 * top_need, 4 * top_need) if c <= m.pmus}
            for pmus in sorted(counts):
                out.options.append(ArrayBinding(memory, depth, pmus))
                out.allows.append({p for p, need in needs.items() if need <= pmus})
    return out


class SparseModel:
    """The CP-SAT model over prepared data; :meth:`solve` returns a decision or None."""

    def __init__(self, data: Any):
        self.data = d = data
        self.m = m = new_cp_model("sparse")
        mach = d.machine
        self.place = {a: placements(d, a) for a in d.sim.arrays}
        self.x = {(a, o): m.new_bool_var(f"x[{a},{o}]") for a, p in self.place.items() for o in range(len(p.options))}
        for a, p in self.place.items():
            m.add_exactly_one([self.x[a, o] for o in range(len(p.options))])
        self.meth = {(j, k): m.new_bool_var(f"method[{j},{k}]") for j in d.sim.joiners for k in METHODS}
        for j in d.sim.joiners:
            m.add_exactly_one([self.meth[j, k] for k in METHODS])
        pairs = [(p, q) for p in d.inner_choices for q in d.outer_choices
                 if pcus_used(d.sim, p, q, mach.lanes) <= mach.pcus]
        self.pairs = pairs
        self.y = {pq: m.new_bool_var(f"par[{pq[0]},{pq[1]}]") for pq in pairs}
        m.add_exactly_one(list(self.y.values()))
        for a, p in self.place.items():       # a placement serves only the inner factors its banks allow
            for o, allowed in enumerate(p.allows):
                for (pi, _), lit in self.y.items():
                    if pi not in allowed:
                        m.add_implication(self.x[a, o], lit.Not())
        top = 1 + self._work_bound()
        self.compute = m.new_int_var(0, top, "compute")
        self._add_compute(d.vloop)
        self.words = self._linear_words()
        self.dram = m.new_int_var(0, top + self._words_top(), "dram_cycles")
        bw = mach.dram_words_per_cycle
        scale = 1 if float(bw).is_integer() else 1000
        m.add(int(round(bw * scale)) * self.dram >= scale * self.words)
        self.core = m.new_int_var(0, top + self._words_top(), "core")
        m.add(self.core >= self.compute)
        m.add(self.core >= self.dram)
        self.conflicts = self._linear_conflicts(d.vloop)
        self._add_pmus()
        self.cycles = self.core + self.conflicts

    # -- constraint families ------------------------------------------------------------------

    def _work_bound(self) -> int:
        d = self.data
        work = [u.work for u in d.sim.units.values() if u.kind not in JOIN_KINDS]
        work += [join_work(js, k, d.machine.word_bits) for js in d.sim.joiners.values() for k in METHODS]
        return int(max(work, default=0))

    def _words_top(self) -> int:
        return int(sum(max(array_dram_words(self.data.sim.arrays[a], b, self.data.regions[a],
                                            self.data.machine.dram_burst_words) for b in p.options)
                       for a, p in self.place.items()))

    def _add_compute(self, vloop: str | None) -> None:
        d, m = self.data, self.m
        for u in d.sim.units.values():
            if u.kind in JOIN_KINDS:
                continue
            m.add(self.compute >= sum(lit * unit_cycles(u.work, u.loop, vloop, p, q) for (p, q), lit in self.y.items()))
        for j, js in d.sim.joiners.items():
            terms = []
            for k in METHODS:
                w = join_work(js, k, d.machine.word_bits)
                for (p, q), lit in self.y.items():
                    c = unit_cycles(w, js.index, vloop, p, q, join_lane_parallel(k))
                    if c == 0:
                        continue
                    t = m.new_bool_var(f"t[{j},{k},{p},{q}]")
                    m.add_bool_or([self.meth[j, k].Not(), lit.Not(), t])
                    terms.append(t * c)
            if terms:
                m.add(self.compute >= sum(terms))

    def _linear_words(self):
        d = self.data
        return sum(self.x[a, o] * array_dram_words(d.sim.arrays[a], b, d.regions[a], d.machine.dram_burst_words)
                   for a, p in self.place.items() for o, b in enumerate(p.options))

    def _linear_conflicts(self, vloop: str | None):
        d, m = self.data, self.m
        terms = []
        for a, p in self.place.items():
            f = d.sim.arrays[a]
            if not f.gather:
                continue
            for o, b in enumerate(p.options):
                for (pi, q), lit in self.y.items():
                    c = array_conflicts(f, b, vloop, pi, q, d.machine.banks)
                    if c:
                        t = m.new_bool_var(f"conflict[{a},{o},{pi},{q}]")
                        m.add_bool_or([self.x[a, o].Not(), lit.Not(), t])
                        terms.append(t * c)
        return sum(terms) if terms else 0

    def _add_pmus(self) -> None:
        m, mach = self.m, self.data.machine
        self.pmus = sum(self.x[a, o] * b.pmus for a, p in self.place.items() for o, b in enumerate(p.options))
        self.sparse_pmus = sparse = sum(self.x[a, o] * b.pmus for a, p in self.place.items()
                                        for o, b in enumerate(p.options) if b.memory == "sparse_sram")
        for (_, q), lit in self.y.items():
            m.add(self.pmus <= mach.pmus // q).only_enforce_if(lit)
            m.add(sparse <= mach.sparse_sram // q).only_enforce_if(lit)

    # -- hints, solving, decoding -------------------------------------------------------------

    def hint(self, design: SparseDesign) -> None:
        for a, p in self.place.items():
            for o, b in enumerate(p.options):
                self.m.add_hint(self.x[a, o], b == design.binding.get(a))
        for (j, k), lit in self.meth.items():
            self.m.add_hint(lit, design.coiteration.get(j) == k)
        for pq, lit in self.y.items():
            self.m.add_hint(lit, pq == (design.inner_par, design.outer_par))

    def solve(self, time_limit: float, seed: int, deterministic: bool, workers: int | None = None):
        """``(termination, design or None, bound on cycles)``: least cycles, then least DRAM words
        and PMUs with the cycles fixed."""
        m = self.m
        m.minimize(self.cycles)
        res, solver = solve_cp_model(m, time_limit=time_limit * 0.7, seed=seed, deterministic=deterministic,
                                     workers=workers, named_values=False, label="CP-SAT sparse: cycles")
        if not res.has_solution:
            return res.termination, None, None
        best = int(round(solver.objective_value))
        bound = math.floor(solver.best_objective_bound + 1e-6)
        design = self._decode(solver)
        first = res.termination
        m.add(self.cycles <= best)
        m.clear_hints()
        self.hint(design)
        top = self.pmus_top()
        m.minimize(self.words * (2 * top + 1) + self.pmus + self.sparse_pmus)
        res2, solver2 = solve_cp_model(m, time_limit=max(time_limit * 0.3, 0.1), seed=seed,
                                       deterministic=deterministic, workers=workers, named_values=False,
                                       label="CP-SAT sparse: DRAM words")
        if res2.has_solution:
            design = self._decode(solver2)
        termination = first if first != Termination.OPTIMAL or res2.termination == Termination.OPTIMAL \
            else Termination.FEASIBLE
        return termination, design, bound

    def pmus_top(self) -> int:
        return int(sum(max(b.pmus for b in p.options) for p in self.place.values()))

    def _decode(self, solver) -> SparseDesign:
        binding = {}
        for a, p in self.place.items():
            for o, b in enumerate(p.options):
                if solver.boolean_value(self.x[a, o]):
                    binding[a] = b
        methods = {j: k for (j, k), lit in self.meth.items() if solver.boolean_value(lit)}
        (inner, outer), = [pq for pq, lit in self.y.items() if solver.boolean_value(lit)]
        return SparseDesign(binding, methods, inner, outer)
