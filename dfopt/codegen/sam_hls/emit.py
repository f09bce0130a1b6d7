"""``write_hls``: a solved sparse kernel as an HLS C++ project (see the package docstring)."""

from __future__ import annotations

import json
from typing import Any

from dfopt.codegen.hls import include_dir
from dfopt.codegen.hls.emit import HEADERS, ident
from dfopt.codegen.sam_hls import project
from dfopt.codegen.sam_hls.context import DEPTHS
from dfopt.codegen.sam_hls.layout import layout
from dfopt.codegen.sam_hls.runtime import SAM_STREAM_H
from dfopt.codegen.sam_hls.testbench import data_files, expected_arrays, tb_cpp
from dfopt.io import write_folder_atomic


def write_hls(data: Any, design: Any, out_dir: Any, name: str, depths: str = "iteration") -> dict:
    """Write the HLS C++ project of the sparse kernel ``data`` (:func:`dfopt.models.sparse.prepare`)
    under ``design`` (a :class:`~dfopt.models.sparse.decision.SparseDesign`) into ``out_dir``,
    atomically; ``name`` is the top function's (as a C identifier). The graph is lowered with the
    design's co-iteration methods (bit vectors where it names none) and run token by token on the
    data for the FIFO depths (``depths``: ``iteration``, the most tokens of a stream in ``P + 1``
    consecutive iterations of the outermost loop, ``P`` the processes, + 2; ``stream``, every token
    of the stream). Raises
    :class:`~dfopt.errors.CodegenError` naming the primitive it cannot express.

    Returns ``out_dir``, ``files``, ``top``, ``processes`` (functions in call order), ``streams``
    (FIFO -> depth), ``tokens`` (graph stream -> tokens the run counted), ``arrays`` (array -> memory) and ``methods``.

    >>> import dfopt, tempfile, pathlib
    >>> from dfopt.api import make_options
    >>> from dfopt.models.sparse import prepare
    >>> inst = dfopt.load("instances/sparse/spmv-karate.json")
    >>> sol = dfopt.solve(inst, time_limit=20)
    >>> out = write_hls(prepare(inst, make_options(inst)), sol.decision, pathlib.Path(tempfile.mkdtemp()) / "k",
    ...                 "spmv")
    >>> out["processes"][:3], out["streams"]["scan_A.1.crd->locate_x.0.crd"]
    (['p_scan_A_0', 'p_scan_A_1', 'p_repeat_x_i'], 79)
    """
    out = hls_files(data, design, name, depths)
    out["files"] = write_folder_atomic(out_dir, out["files"])
    return {"out_dir": str(out_dir), **out}


def hls_files(data: Any, design: Any, name: str, depths: str = "iteration") -> dict:
    """What :func:`write_hls` writes, not written: ``files`` (relative path -> text or bytes) and the
    same summary fields."""
    top = ident(name)
    graph, streams = design_streams(data, design)
    output = data.sim.output
    if depths not in DEPTHS:
        raise ValueError(f"depths must be one of {', '.join(DEPTHS)}, not {depths!r}")
    lay = layout(graph, data, design, streams, output, depths)
    expected = expected_arrays(data, output, lay.val_t)
    header = project.HEADER.format(
        name=top, expression=data.statement.expression, procs=len(lay.procs), fifos=len(lay.fifos),
        methods=", ".join(f"{j}: {m}" for j, m in graph.methods.items()) or "none (no joins)",
        inner=design.inner_par, outer=design.outer_par, depths=project.DEPTH_NOTE[depths])
    files: dict[str, str | bytes] = {
        "kernels.h": project.kernels_h(lay, top, header, data.machine.word_bits),
        "kernels.cpp": project.kernels_cpp(lay, header),
        "top.h": project.top_h(lay, top), "top.cpp": project.top_cpp(lay, top, header),
        "tb.cpp": tb_cpp(lay, top), "csim.cpp": project.CSIM_CPP, "Makefile": project.makefile(top),
        "run_hls.tcl": project.run_hls_tcl(top), "include/sam_stream.h": SAM_STREAM_H,
        "design.json": json.dumps(_manifest(lay, top, graph), indent=1) + "\n",
        **data_files(lay, data, expected)}
    for h in HEADERS:
        files[f"include/{h}"] = (include_dir() / h).read_bytes()
    return {"files": files, "top": top, "processes": [p.fn for p in lay.procs],
            "streams": {f.name: f.depth for f in lay.fifos},
            "tokens": {s.name: int(streams[s.name].tokens) for s in graph.streams},
            "arrays": {s.name: s.memory for s in lay.operands + lay.results},
            "methods": dict(graph.methods)}


def design_streams(data: Any, design: Any) -> tuple[Any, dict]:
    """The primitive graph of ``design`` (its co-iteration methods, bit vectors where it names none)
    and its streams run on the data: those of ``data``'s own run when it ran that graph
    (:func:`dfopt.models.sparse.prepare_for_check`), else lowered and run here."""
    from dfopt.ir.sparse.sam import lower
    from dfopt.sim.sparse import run_streams

    methods = dict(design.coiteration) or {j: "bitvector" for j in data.sim.joiners}
    if data.graph is not None and dict(data.graph.methods) == methods and data.sim.runs:
        return data.graph, data.sim.runs
    graph = lower(data.concrete, methods, word_bits=data.machine.word_bits)
    return graph, run_streams(graph, data.tensors)


def _manifest(lay: Any, top: str, graph: Any) -> dict:
    return {"format": "dfopt-sam-hls/1", "top": top, "value_type": lay.val_t,
            "processes": [{"name": p.fn, "primitive": p.node, "kind": p.kind, "order": i}
                          for i, p in enumerate(lay.procs)],
            "streams": [{"name": f.name, "var": f.var, "token": f.ctype, "depth": f.depth, "tokens": f.tokens,
                         "counter": f.port} for f in lay.fifos],
            "arrays": [{"name": s.name, "var": s.var, "role": s.role, "memory": s.memory, "length": s.length}
                       for s in lay.operands + lay.results],
            "methods": dict(graph.methods)}
