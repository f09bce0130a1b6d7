"""A small set of placement constraints that cannot hold together, from CP-SAT assumptions.

Each constraint family that can be switched off — a slot's capacity for one resource, the
wires of one cut line, one kernel's pin, one same-slot group — is enforced by an assumption
literal; "every kernel in one slot" always holds. When CP-SAT proves the model infeasible it
returns a sufficient subset of the assumptions, which deletion then shrinks: each member is
dropped in turn and kept out when the rest is still infeasible (a minimal conflict when every
re-solve finishes within its time). The model (variables ``x[kernel,slot]``, ``z[stream,cut]``
and one literal per switch, named by its label) is solved through
:func:`dfopt.ilp.solve_cp_model`.

>>> from dfopt.ir.graph import DataflowGraph, Kernel
>>> from dfopt.ir.platform import load_preset
>>> from dfopt.models.placement.data import placement_data
>>> ks = [Kernel(f"k{i}", resources={"dsp": 1000}) for i in range(4)]
>>> d = placement_data(DataflowGraph(ks), load_preset("u55c"), 0.8, pins={"k0": "SLR0", "k1": "SLR0", "k2": "SLR0"})
>>> for line in explain_infeasible(d, time_limit=5): print(line)
pin of k0 to SLR0
pin of k1 to SLR0
pin of k2 to SLR0
capacity of SLR0 for dsp (2406.4 = 0.8 x 3008)
"""

from __future__ import annotations

import time

import numpy as np

from dfopt import progress
from dfopt.ilp import new_cp_model, solve_cp_model
from dfopt.models.placement.data import PlacementData
from dfopt.models.placement.exact import model_units
from dfopt.results import Termination


def _model(d: PlacementData):
    m = new_cp_model("placement-conflict")
    x = [[m.new_bool_var(f"x[{d.names[k]},{d.slots[s]}]") for s in range(d.num_slots)] for k in range(d.n)]
    for k in range(d.n):
        m.add_exactly_one(x[k])
    named = []

    def switch(label: str):
        lit = m.new_bool_var(label)
        named.append((lit, label))
        return lit

    for k in np.flatnonzero(~d.allowed.all(axis=1)).tolist():
        lit = switch(f"pin of {d.names[k]} to " + ", ".join(d.slots[s] for s in np.flatnonzero(d.allowed[k]).tolist()))
        m.add(sum(x[k][s] for s in np.flatnonzero(d.allowed[k]).tolist()) == 1).only_enforce_if(lit)
    demand = np.round(model_units(d.demand) * 2).astype(np.int64)
    limit = np.floor(d.limit * 2 + 1e-9).astype(np.int64)
    for s in range(d.num_slots):
        for r in range(len(d.kinds)):
            if demand[:, r].sum() > limit[s, r]:
                lit = switch(f"capacity of {d.slots[s]} for {d.kinds[r]} ({d.limit[s, r]:.6g} = "
                             f"{d.max_utilization:g} x {d.capacity[s, r]:.6g})")
                used = sum(int(demand[k, r]) * x[k][s] for k in range(d.n) if demand[k, r])
                m.add(used <= int(limit[s, r])).only_enforce_if(lit)
    for members in d.same_slot:
        lit = switch("same-slot group [" + ", ".join(d.names[k] for k in members) + "]")
        for a, b in zip(members[:-1].tolist(), members[1:].tolist()):
            for s in range(d.num_slots):
                m.add(x[a][s] == x[b][s]).only_enforce_if(lit)
    for cut in d.cuts:
        if cut.wires is None or d.width.sum() <= cut.wires:
            continue
        low = np.flatnonzero(cut.low_side).tolist()
        zs = []
        for e, (a, b) in enumerate(zip(d.src.tolist(), d.dst.tolist())):
            z = m.new_bool_var(f"z[{d.stream_names[e]},{cut.label}]")
            la, lb = sum(x[a][s] for s in low), sum(x[b][s] for s in low)
            m.add(z >= la - lb)
            m.add(z >= lb - la)
            zs.append(z)
        lit = switch(f"wires across {cut.label} ({cut.wires})")
        m.add(sum(int(w) * z for w, z in zip(d.width.tolist(), zs)) <= cut.wires).only_enforce_if(lit)
    return m, named


def _infeasible(m, lits, time_limit: float, seed: int):
    """(True, core) when the switches ``lits`` cannot hold together, (False, lits) when they
    can, (None, lits) when the solve did not tell in time."""
    m.clear_assumptions()
    m.add_assumptions(lits)
    result, solver = solve_cp_model(m, time_limit=max(time_limit, 0.05), seed=seed, workers=1,
                                    named_values=False, label="CP-SAT placement conflict")
    if result.termination is Termination.INFEASIBLE:
        core = set(solver.sufficient_assumptions_for_infeasibility())
        return True, [lit for lit in lits if lit.index in core]
    return (False if result.has_solution else None), lits


def explain_infeasible(d: PlacementData, time_limit: float = 10.0, seed: int = 0) -> list[str] | None:
    """Labels of a small conflicting set, or None when infeasibility is not proven in time (or the
    model is feasible). Progress: one phase for the whole search (the core's size so far)."""
    with progress.phase("placement: explaining the infeasibility", time_limit, numbers=False) as ph:
        return _explain(d, time_limit, seed, ph)


def _explain(d: PlacementData, time_limit: float, seed: int, ph: progress.Phase) -> list[str] | None:
    deadline = time.perf_counter() + time_limit
    m, named = _model(d)
    label = {lit.index: text for lit, text in named}
    verdict, core = _infeasible(m, [lit for lit, _ in named], time_limit, seed)
    if not verdict:
        return None
    i = 0
    while i < len(core) and time.perf_counter() < deadline:
        ph.update(detail=f"{len(core)} constraints in the conflict, trying to drop #{i + 1}")
        trial = core[:i] + core[i + 1:]
        left = deadline - time.perf_counter()
        verdict, sub = _infeasible(m, trial, min(left, max(1.0, left / max(len(core), 1))), seed)
        if verdict:
            core = sub
        else:
            i += 1
    return [label[lit.index] for lit in core]
