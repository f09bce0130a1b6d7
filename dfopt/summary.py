"""Readable text summaries of solutions (returned as strings; the CLI prints them)."""

from __future__ import annotations


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def solution_summary(instance, solution, output_path=None) -> str:
    lines = [f"{solution.problem} instance {solution.instance!r}: {solution.status}",
             f"  formulation {solution.formulation}, solver {solution.solver}, seed {solution.seed}, "
             f"{solution.wall_time_s:.3f} s",
             f"  objective {_fmt(solution.objective)}" + (f", bound {_fmt(solution.bound)}" if solution.bound is not None else "")]
    body = SECTION_SUMMARIES.get(solution.problem)
    if body:
        lines += body(instance, solution)
    lines.append("  checks: " + ", ".join(f"{c.name} {'ok' if c.ok else 'FAILED'}" for c in solution.checks))
    for c in solution.checks:
        lines += [f"    {c.name}: {d}" for d in c.details[:10]]
    if output_path:
        lines.append(f"  solution written to {output_path}")
    return "\n".join(lines)


def _fifo_summary(instance, solution) -> list[str]:
    sec = solution.sections["fifo"]
    base = sec.get("occupancy_baseline", {})
    key = {"depth": "total_depth", "bits": "total_bits", "bram18": "bram18"}[sec["objective"]]
    ratio = ""
    if base.get(key):
        ratio = f" ({sec[key] / base[key]:.3f} x the occupancy baseline {base[key]})"
    lines = [f"  {len(sec['depths'])} streams, strategy {sec['strategy']}, objective {sec['objective']}: "
             f"{sec[key]}{ratio}",
             f"  total depth {sec['total_depth']}, total bits {sec['total_bits']}, BRAM18 {sec['bram18']}",
             f"  makespan {sec['makespan']} cycles (unbounded reference {sec['reference_makespan']}); "
             f"answer from {sec['chosen']}" + (f", LP depths repaired in {sec['repair_steps']} rounds" if sec.get("repaired") else "")]
    deepest = sorted(sec["depths"].items(), key=lambda kv: -kv[1])[:8]
    lines.append("  deepest: " + ", ".join(f"{n}={d}" for n, d in deepest))
    return lines


def _bytes(b) -> str:
    b = float(b)
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if b >= size:
            return f"{b / size:.2f} {unit}"
    return f"{b:g} B"


def _fusion_summary(instance, solution) -> list[str]:
    sec = solution.sections["fusion"]
    greedy, onchip = sec["greedy"], sec["onchip"]
    lines = [f"  {sum(len(g) for g in sec['groups'])} kernels in {len(sec['groups'])} groups, "
             f"C_max {_bytes(sec['c_max'])}, largest group {_bytes(max(sec['group_costs']))}",
             f"  DRAM traffic {_bytes(sec['dram_bytes'])} ({sec['dram_ratio']:.3f} of no fusion, "
             f"{_bytes(sec['unfused_dram_bytes'])}); Algorithm 2 greedy {_bytes(greedy['dram_bytes'])} "
             f"in {greedy['groups']} groups",
             f"  on-chip {_bytes(onchip['fused_bytes'])} = {onchip['ratio']:.3f} x buffering every "
             f"fused intermediate whole ({_bytes(onchip['buffered_bytes'])}); converters "
             f"{_bytes(onchip['converter_bytes'])} on {len(sec['converters'])} streams"]
    for i, members in enumerate(sec["groups"][:8]):
        shown = ", ".join(members[:10]) + (f", ... ({len(members)})" if len(members) > 10 else "")
        lines.append(f"    group {i} ({_bytes(sec['group_costs'][i])}): {shown}")
    if len(sec["groups"]) > 8:
        lines.append(f"    ... {len(sec['groups']) - 8} more groups")
    return lines


def _converter_summary(instance, solution) -> list[str]:
    sec = solution.sections["converter"]
    lines = [f"  {sec['needed']} of {sec['streams']} streams need a converter, {_bytes(sec['total_bytes'])} in all"]
    for name, c in list(sec["converters"].items())[:10]:
        shape = "x".join(map(str, c["shape"])) if "shape" in c else "explicit"
        lines.append(f"    {name}: buffer {shape} (ping-pong {_bytes(c['bytes'])}), "
                     f"reused {c.get('reuse', 1)} times over {c.get('shared_loops', 0)} shared loops")
    return lines


def _placement_summary(instance, solution) -> list[str]:
    sec = solution.sections["placement"]
    lines = [f"  {len(sec['slot'])} kernels on {len(sec['slots'])} slots; width x distance {sec['distance']:g}, "
             f"{sec['crossing_streams']} streams cross slots"
             + (f"; greedy {sec['greedy']['objective']:g}" if sec.get("greedy") else "")]
    for name, slot in sec["slots"].items():
        util = ", ".join(f"{r} {u:.0%}" for r, u in slot["utilization"].items() if slot["capacity"].get(r))
        lines.append(f"    {name}: {slot['kernels']} kernels; {util}")
    for cut in sec["cuts"]:
        limit = f" of {cut['wires']}" if cut["wires"] is not None else " (no limit)"
        lines.append(f"    line {cut['line']}: {cut['wires_used']:g} wires{limit}")
    return lines


def _memory_summary(instance, solution) -> list[str]:
    sec = solution.sections["memory"]
    heur = sec["heuristic"]
    counts = ", ".join(f"{n} {k}" for k, n in sec["counts"].items() if n)
    where = " in {} {}".format(*sec["peak_at"]) if sec.get("peak_at") else ""
    lines = [f"  {len(sec['binding'])} memories: {counts or 'none'}",
             f"  peak weighted utilisation {sec['peak']:.4g}{where}, sum {sec['sum']:.4g}; size-ordered heuristic "
             + (f"{heur['peak']:.4g} (sum {heur['sum']:.4g})" if heur.get("fits") else "overfills a slot")]
    for name, res in sec["slots"].items():
        lines.append(f"    {name}: " + ", ".join(f"{r} {u['used']:g}/{u['capacity']:g} ({u['utilization']:.0%})"
                                                 for r, u in res.items()))
    return lines


def _pipeline_summary(instance, solution) -> list[str]:
    sec = solution.sections["pipeline"]
    lines = [f"  {'stage':<10} {'time (s)':>9} {'objective':>12}  status    checks"]
    for st in sec["stages"]:
        obj = "-" if st.get("objective") is None else _fmt(st["objective"])
        lines.append(f"  {st['name']:<10} {st['time_s']:>9.3f} {obj:>12}  {st['status']:<9} {'ok' if st['checks_ok'] else 'FAILED'}")
    util = ", ".join(f"{s} {u:.0%}" for s, u in sec["slot_utilization"].items())
    lines += [f"  total {sec['total_time_s']:.2f} s; estimated latency {sec['latency_cycles']} cycles",
              f"  DRAM traffic {_bytes(sec['dram_bytes'])} (unfused {_bytes(sec['unfused_dram_bytes'])}); on-chip "
              f"{_bytes(sec['onchip_bytes'])} (buffering every intermediate whole: {_bytes(sec['buffered_bytes'])})",
              f"  FIFOs {sec['fifo_bits']} bits; peak slot utilisation {util}"]
    return lines


def _schedule_summary(instance, solution) -> list[str]:
    sec = solution.sections["schedule"]
    flags = " ".join("s" if sc else ("P" if p else "-") for p, sc in zip(sec["parallel"], sec["scalar"]))
    lines = [f"  schedule ({sec['dims']} dimensions; P parallel loop, - sequential loop, s scalar: {flags})",
             f"    {sec['map']}"]
    bands = ", ".join(f"{b['dims']}" for b in sec["bands"] if len(b["dims"]) > 1)
    if bands:
        lines.append(f"  permutable bands {bands}")
    if sec.get("tiled_map"):
        lines.append(f"  tiled: {sec['tiled_map']}")
    if sec.get("vector"):
        lines.append(f"  vectorised dimensions {sec['vector']}")
    lines += [f"  warning: {w}" for w in sec.get("warnings", [])]
    lines.append(f"  C code: {len(sec['code'].splitlines())} lines (in the solution's schedule.code)")
    return lines


def _mapping_summary(instance, solution) -> list[str]:
    sec = solution.sections["mapping"]
    cols, rows, use, streams = sec["region"]["columns"], sec["region"]["rows"], sec["channel_use"], sec["streams"]
    lines = [f"  {sec['virtual_nodes']} virtual nodes on {sec['tiles_used']} of {sec['tiles']} compute tiles of "
             f"{sec['platform']} (columns {cols[0]}-{cols[1]}, rows {rows[0]}-{rows[1]}); "
             f"estimated makespan {sec['makespan']} cycles",
             f"  streams: {streams['internal']} inside a tile, {streams['shared']} through shared memory, "
             f"{streams['dma']} over DMA; compute DMA channels {use['compute_in']}/{use['compute_in_capacity']} in, "
             f"{use['compute_out']}/{use['compute_out_capacity']} out; {len(sec['routes'])} host routes"]
    for node in sec["nodes"][:24]:
        members = node["members"]
        shown = ", ".join(members[:6]) + (f", ... ({len(members)})" if len(members) > 6 else "")
        lines.append(f"    tile({node['tile'][0]},{node['tile'][1]}) {node['kind']}: {shown}; "
                     f"{node['estimate']} cycles, {len(node['channels']['in'])} in / "
                     f"{len(node['channels']['out'])} out, {_bytes(node['memory_bytes'])}")
    if len(sec["nodes"]) > 24:
        lines.append(f"    ... {len(sec['nodes']) - 24} more tiles")
    return lines


SECTION_SUMMARIES = {"mapping": _mapping_summary, "schedule": _schedule_summary, "fifo": _fifo_summary, "fusion": _fusion_summary, "converter": _converter_summary,
                     "placement": _placement_summary, "pipeline": _pipeline_summary, "memory": _memory_summary}
