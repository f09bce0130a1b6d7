"""PNG drawings of a FIFO solution: token curves and occupancy of chosen streams, and a Gantt
chart of kernel activity, from one simulation with the solution's depths (matplotlib, optional).
"""

from __future__ import annotations

import io

import numpy as np

from dfopt.errors import InstanceError, SolverUnavailableError
from dfopt.io import write_bytes_atomic


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as err:
        raise SolverUnavailableError("matplotlib", (), kind="plotting library (pip install 'dfopt[plot]')") from err
    return plt


def plot_fifo(instance, solution, path, streams=None, max_kernels: int = 60) -> None:
    """Draw token curves of ``streams`` (default: the three deepest) and a Gantt chart to ``path``."""
    from dfopt.sim import simulate

    sec = solution.sections.get("fifo")
    if sec is None:
        raise InstanceError("the solution has no fifo section to draw", pointer="/fifo")
    graph = instance.graph
    depths = sec["depths"]
    streams = streams or [n for n, _ in sorted(depths.items(), key=lambda kv: -kv[1])[:3]]
    for s in streams:
        if s not in graph.streams:
            raise InstanceError(f"unknown stream {s!r} to plot", pointer="/graph/streams")
    res = simulate(graph, depths, record=True)
    plt = _pyplot()
    fig, (ax_tok, ax_gantt) = plt.subplots(2, 1, figsize=(10, 8), gridspec_kw={"height_ratios": [1, 1.2]})
    for name in streams:
        w, r = res.times(name)
        line, = ax_tok.step(w, np.arange(1, len(w) + 1), where="post", label=f"{name} written")
        ax_tok.step(r, np.arange(1, len(r) + 1), where="post", linestyle="--", color=line.get_color(),
                    label=f"{name} read (depth {depths[name]})")
    ax_tok.set_xlabel("cycle")
    ax_tok.set_ylabel("tokens")
    ax_tok.set_title(f"{instance.name}: token curves (makespan {res.makespan})")
    ax_tok.legend(fontsize=7)
    kernels = [k for k in graph.kernels if k in res.start][:max_kernels]
    for i, k in enumerate(kernels):
        ax_gantt.barh(i, res.end[k] - res.start[k], left=res.start[k], height=0.6)
    ax_gantt.set_yticks(range(len(kernels)))
    ax_gantt.set_yticklabels(kernels, fontsize=7)
    ax_gantt.invert_yaxis()
    ax_gantt.set_xlabel("cycle")
    ax_gantt.set_title("kernel activity (first to last event)")
    fig.tight_layout()
    buf = io.BytesIO()
    try:
        fig.savefig(buf, format="png", dpi=100)
    finally:
        plt.close(fig)
    write_bytes_atomic(path, buf.getvalue())
