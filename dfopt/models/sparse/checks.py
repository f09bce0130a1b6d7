"""The sparse kernel's checker: the kernel run again on its data and every decision re-derived,
no solver.

- ``sparse-result``: the primitive graph lowered with the solution's co-iteration methods and run
  token by token (:func:`dfopt.sim.sparse.simulate`) gives the result that an independent
  evaluation (:func:`dfopt.ir.sparse.reference.evaluate`, a COO join) gives — exactly for integer
  data, within 1e-9 relative for floats;
- ``sparse-binding``: every array of the run bound once, each within Stardust's rules
  (:mod:`.rules`, from the run's access facts), PMUs, sparse PMUs and PCUs within the machine,
  parallelisation factors among the allowed ones;
- ``sparse-coiteration``: every join of the run has a known method, and nothing else is named;
- ``sparse-estimate``: cycles, DRAM words and PMUs recounted by the cost model from this run,
  and the Stardust baseline's figures recounted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dfopt.ir.sparse.reference import evaluate
from dfopt.models.sparse.cost import estimate
from dfopt.models.sparse.decision import METHODS
from dfopt.models.sparse.rules import binding_issues
from dfopt.solution import Check

if TYPE_CHECKING:
    from dfopt.instance.types import Instance
    from dfopt.solution import Solution


def _result_check(data: Any) -> Check:
    st = data.statement
    want = evaluate(st.assignment, data.operands, data.dims)
    got = data.sim.result
    ok = got.shape == want.shape and got.equals(want, rtol=1e-9, atol=1e-9)
    details = f"{got.nnz} nonzeros of shape {list(got.shape)}"
    if not ok:
        details += f"; the reference has {want.nnz} of shape {list(want.shape)}"
    return Check("sparse-result", ok, [details + " (token-level run vs the COO reference)"])


def _binding_check(data: Any, design: Any) -> Check:
    m, loops = data.machine, data.concrete.loops
    faults = [f"array {a!r} is not bound" for a in data.sim.arrays if a not in design.binding]
    faults += [f"array {a!r} is not an array of the kernel" for a in design.binding if a not in data.sim.arrays]
    for a, f in data.sim.arrays.items():
        if a in design.binding:
            faults += binding_issues(a, design.binding[a], f, loops, data.regions[a], data.ws_formats.get(a),
                                     design.inner_par, m.pmu_words, m.banks, data.vloop, a in data.bulk)
    if design.inner_par not in data.inner_choices:
        faults.append(f"inner parallelisation {design.inner_par} is not one of {list(data.inner_choices)}")
    if design.outer_par not in data.outer_choices:
        faults.append(f"outer parallelisation {design.outer_par} is not one of {list(data.outer_choices)}")
    est = estimate(data.sim, data.vloop, design, m, data.regions) if not faults else None
    if est is not None:
        sparse = sum(b.pmus for b in design.binding.values() if b.memory == "sparse_sram") * design.outer_par
        if est.pmus > m.pmus:
            faults.append(f"{est.pmus} PMUs used, the machine has {m.pmus}")
        if sparse > m.sparse_sram:
            faults.append(f"{sparse} sparse PMUs used, the machine has {m.sparse_sram}")
        if est.pcus > m.pcus:
            faults.append(f"{est.pcus} PCUs used, the machine has {m.pcus}")
    return Check("sparse-binding", not faults, faults or [f"{len(design.binding)} arrays within Stardust's rules"])


def _coiteration_check(data: Any, design: Any) -> Check:
    faults = [f"join {j!r} has no method" for j in data.sim.joiners if j not in design.coiteration]
    faults += [f"{j!r} is not a join of the kernel" for j in design.coiteration if j not in data.sim.joiners]
    faults += [f"join {j!r}: unknown method {k!r}" for j, k in design.coiteration.items() if k not in METHODS]
    return Check("sparse-coiteration", not faults, faults or [f"{len(design.coiteration)} joins"])


def _estimate_check(data: Any, design: Any, section: dict) -> Check:
    est = estimate(data.sim, data.vloop, design, data.machine, data.regions)
    faults = [f"{key} is {section.get(key)}, recounted {value}"
              for key, value in (("cycles", est.cycles), ("dram_words", est.dram_words), ("pmus", est.pmus))
              if section.get(key) != value]
    base = estimate(data.sim, data.vloop, data.baseline, data.machine, data.regions)
    recorded = section.get("baseline") or {}
    faults += [f"baseline {key} is {recorded.get(key)}, recounted {value}"
               for key, value in (("cycles", base.cycles), ("dram_words", base.dram_words))
               if recorded.get(key) != value]
    return Check("sparse-estimate", not faults, faults or
                 [f"{est.cycles} cycles, {est.dram_words} DRAM words (baseline {base.cycles}, {base.dram_words})"])


def checks(instance: Instance, options: Any, solution: Solution) -> list[Check]:
    from dfopt.models.sparse import prepare_for_check

    design = solution.decision
    methods = {j: k for j, k in design.coiteration.items() if k in METHODS}
    data = prepare_for_check(instance, options, methods)
    section = solution.sections.get("sparse", {})
    out = [_result_check(data), _coiteration_check(data, design)]
    binding = _binding_check(data, design)
    out.append(binding)
    if binding.ok and out[1].ok:
        out.append(_estimate_check(data, design, section))
    return out
