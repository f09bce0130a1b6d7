"""PNG drawings of solutions (matplotlib, drawn off screen): for FIFO sizing the token curves of
chosen streams and a Gantt chart of kernel activity, from one simulation with the solution's
depths; for placement the slots with their utilisation and the streams between them. The
problems' ``plot`` hooks call these.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from dfopt.errors import SolverUnavailableError, unknown_name_error
from dfopt.io import write_bytes_atomic

if TYPE_CHECKING:
    from dfopt.instance.types import Instance
    from dfopt.io import StrPath
    from dfopt.solution import Solution


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as err:   # a dependency of dfopt; only a broken install lacks it
        raise SolverUnavailableError("matplotlib", (), kind="plotting library (pip install matplotlib)") from err
    return plt


def plot_fifo(instance: Instance, solution: Solution, path: StrPath, streams: Sequence[str] | None = None,
              max_kernels: int = 60) -> None:
    """Draw token curves of ``streams`` (default: the three deepest) and a Gantt chart to ``path``;
    with a frontier in the solution (``--frontier N``), also its points (makespan vs objective)."""
    from dfopt.sim import simulate

    graph = instance.graph
    assert graph is not None  # a fifo instance has a graph
    depths = dict(solution.decision.depths)
    streams = streams or [n for n, _ in sorted(depths.items(), key=lambda kv: -kv[1])[:3]]
    for s in streams:
        if s not in graph.streams:
            raise unknown_name_error("stream to draw", s, graph.streams)
    res = simulate(graph, depths, record=True)
    plt = _pyplot()
    sec = solution.sections.get("fifo") or {}
    points = sec.get("frontier") or []
    rows = 3 if points else 2
    fig, axes = plt.subplots(rows, 1, figsize=(10, 4 * rows), gridspec_kw={"height_ratios": [1, 1.2, 1][:rows]})
    ax_tok, ax_gantt = axes[0], axes[1]
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
    if points:
        _frontier_panel(axes[2], points, sec)
    fig.tight_layout()
    _save(plt, fig, path)


def _frontier_panel(ax, points: list, sec: dict) -> None:
    """The frontier's points (each simulated) as a staircase, the answer marked."""
    key = {"depth": "total_depth", "bits": "total_bits", "bram18": "bram18"}[sec.get("objective", "depth")]
    x = [p["makespan"] for p in points]
    y = [p[key] for p in points]
    ax.step(x, y, where="post", color="0.6")
    ax.plot(x, y, "o", label="Pareto points (simulated)")
    ax.plot([sec["makespan"]], [sec[key]], "*", markersize=14, label="answer")
    for p in points:
        ax.annotate(f"+{p['latency_slack']:.0%}", (p["makespan"], p[key]), fontsize=7,
                    textcoords="offset points", xytext=(4, 4))
    ax.set_xlabel("makespan (cycles)")
    ax.set_ylabel(key.replace("_", " "))
    ax.set_title(f"latency-memory frontier ({len(points)} points; labels: latency slack)")
    ax.legend(fontsize=7)


def _save(plt, fig, path) -> None:
    buf = io.BytesIO()
    try:
        fig.savefig(buf, format="png", dpi=100)
    finally:
        plt.close(fig)
    write_bytes_atomic(path, buf.getvalue())


def plot_placement(instance: Instance, solution: Solution, path: StrPath) -> None:
    """Draw the slots as boxes at their grid positions with one utilisation bar per resource
    (the dashed line is ``max_utilization``), and the streams between slots as lines whose
    thickness grows with their summed width in bits."""
    sec, slot_of = solution.sections["placement"], solution.decision.slot
    platform, graph = instance.platform, instance.graph
    assert platform is not None and graph is not None  # a placement instance has both
    pos = {s.name: (s.x, s.y) for s in platform.slots}
    traffic: dict[tuple, float] = {}
    for st in graph.streams.values():
        a, b = slot_of.get(st.src), slot_of.get(st.dst)
        if a and b and a != b:
            key = tuple(sorted((a, b)))
            traffic[key] = traffic.get(key, 0) + st.width
    plt = _pyplot()
    xs = [p[0] for p in pos.values()]
    ys = [p[1] for p in pos.values()]
    fig, ax = plt.subplots(figsize=(3.2 * (max(xs) - min(xs) + 1) + 1, 2.6 * (max(ys) - min(ys) + 1) + 1))
    box_w, box_h = 0.8, 0.8
    top = max(traffic.values()) if traffic else 1
    detour = 0
    for (a, b), bits in sorted(traffic.items(), key=lambda kv: kv[1]):
        (xa, ya), (xb, yb) = pos[a], pos[b]
        style = {"color": "tab:red", "alpha": 0.55, "linewidth": 1 + 9 * bits / top, "solid_capstyle": "butt"}
        if abs(xa - xb) + abs(ya - yb) <= 1:
            offset = 0.12 if xa == xb else 0.0
            ax.plot([xa + offset, xb + offset], [ya, yb], zorder=1, **style)
            ax.text((xa + xb) / 2 + offset + 0.03, (ya + yb) / 2, f"{bits:g} b", fontsize=7, color="tab:red", zorder=4)
        else:   # around the slots in between, on the right
            detour += 1
            side = max(xa, xb) + box_w / 2 + 0.05 * detour
            ax.plot([xa + box_w / 2, side, side, xb + box_w / 2], [ya, ya, yb, yb], zorder=1, **style)
            ax.text(side + 0.02, (ya + yb) / 2, f"{bits:g} b", fontsize=7, color="tab:red", zorder=4)
    limit = float(sec.get("max_utilization", 0.8))
    for name, slot in sec["slots"].items():
        x, y = pos[name]
        ax.add_patch(plt.Rectangle((x - box_w / 2, y - box_h / 2), box_w, box_h, fill=True, facecolor="white",
                                   edgecolor="black", zorder=2))
        ax.text(x - box_w / 2 + 0.03, y + box_h / 2 - 0.1, f"{name} ({slot['kernels']} kernels)", fontsize=8, zorder=3)
        kinds = [r for r in slot["utilization"] if slot["capacity"].get(r)]
        bar_h = (box_h - 0.2) / max(len(kinds), 1)
        for i, r in enumerate(kinds):
            by = y + box_h / 2 - 0.2 - (i + 1) * bar_h
            u = slot["utilization"][r]
            span = box_w - 0.25
            ax.add_patch(plt.Rectangle((x - box_w / 2 + 0.2, by + 0.1 * bar_h), span * min(u, 1.0), 0.8 * bar_h,
                                       color="tab:green" if u <= limit else "tab:orange", zorder=3))
            ax.plot([x - box_w / 2 + 0.2 + span * limit] * 2, [by, by + bar_h], "k--", linewidth=0.6, zorder=3)
            ax.text(x - box_w / 2 + 0.03, by + 0.2 * bar_h, r, fontsize=6, zorder=3)
            ax.text(x - box_w / 2 + 0.22, by + 0.2 * bar_h, f"{u:.0%}", fontsize=6, zorder=4)
    ax.set_xlim(min(xs) - 0.6, max(xs) + 0.6 + 0.1 * detour + (0.3 if detour else 0))
    ax.set_ylim(min(ys) - 0.6, max(ys) + 0.6)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(f"{instance.name}: {solution.formulation} placement, width x distance {sec['distance']:g}", fontsize=9)
    fig.tight_layout()
    _save(plt, fig, path)
