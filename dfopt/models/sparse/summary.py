"""The lines ``dfopt solve`` prints for a sparse kernel: the solved design beside Stardust's rules."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dfopt.instance.types import Instance
    from dfopt.solution import Solution


def _memories(binding) -> str:
    counts = Counter(b["memory"] if isinstance(b, dict) else b.memory for b in binding.values())
    return ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))


def summary(instance: Instance, solution: Solution) -> list[str]:
    sec = solution.sections["sparse"]
    base = sec["baseline"]
    d = solution.decision
    assert instance.sparse is not None  # the driver checks the parts a problem needs
    speed = f", {sec['speedup']:.2f}x faster" if sec.get("speedup") else ""
    lines = [f"  {instance.sparse.expression}: loops {', '.join(sec['loops'])}; {sec['primitives']} primitives, "
             f"{sec['streams']} streams, {sec['tokens']:,} tokens; result {sec['result']['tensor']} "
             f"{sec['result']['shape']} with {sec['result']['nnz']:,} nonzeros",
             f"  {'':12} {'cycles':>12} {'DRAM words':>12} {'PMUs':>6}  par   co-iteration",
             f"  {'solved':12} {sec['cycles']:>12,} {sec['dram_words']:>12,} {sec['pmus']:>6}  "
             f"{d.inner_par}x{d.outer_par}  {', '.join(f'{j} {k}' for j, k in d.coiteration.items()) or '-'}",
             f"  {'stardust':12} {base['cycles']:>12,} {base['dram_words']:>12,} {base['pmus']:>6}  "
             f"{base['par']['inner']}x{base['par']['outer']}  "
             f"{', '.join(f'{j} {k}' for j, k in base['coiteration'].items()) or '-'}",
             f"  memories: {_memories(d.binding)} (stardust: {_memories(base['binding'])}); bottleneck "
             f"{sec['bottleneck']}{speed}"]
    return lines
