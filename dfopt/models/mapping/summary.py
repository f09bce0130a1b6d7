"""The lines ``dfopt solve`` prints for a mapping."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dfopt.units import format_bytes

if TYPE_CHECKING:
    from dfopt.instance.types import Instance
    from dfopt.solution import Solution


def summary(instance: Instance, solution: Solution) -> list[str]:
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
                     f"{len(node['channels']['out'])} out, {format_bytes(node['memory_bytes'])}")
    if len(sec["nodes"]) > 24:
        lines.append(f"    ... {len(sec['nodes']) - 24} more tiles")
    return lines
