"""``--emit-dir`` for a sparse kernel: the result tensor, the binding table and the primitive graph.

- ``<result>.mtx`` (a sparse matrix; Matrix Market, 1-based), ``<result>.tns`` (a sparse tensor
  of another rank; FROSTT) or ``<result>.npy`` (a dense or scalar result), computed by the
  token-level run of the solved design;
- ``binding.md``: one row per array — tensor, kind, role, memory, depth, PMUs, DRAM words — and the
  co-iteration and parallelisation, beside Stardust's rules;
- ``graph.dot``: the SAM-style primitive graph with the solved co-iteration methods;
- ``<name>.scala`` (targets ``spatial`` and ``all``): the Spatial program Stardust would produce
  for the solved design (:mod:`dfopt.codegen.spatial`), checked against the design before it is
  written (a fault is a :class:`~dfopt.errors.CodegenError`);
- ``hls/`` (targets ``hls`` and ``all``): the HLS C++ project of the solved design, one streaming
  process per primitive (:mod:`dfopt.codegen.sam_hls`), with its data, test bench and ``Makefile``
  (``make csim``, ``make csim-vitis``).

The folder is written atomically (:func:`dfopt.io.write_folder_atomic`).
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import scipy.io

from dfopt.io import write_folder_atomic
from dfopt.models.sparse.cost import array_dram_words


def tensor_file(name: str, coo: Any, dense: bool) -> tuple[str, bytes]:
    """The file name and bytes of a result tensor (see the module docstring)."""
    if dense or len(coo.shape) == 0:
        buf = io.BytesIO()
        np.save(buf, coo.to_dense())
        return f"{name}.npy", buf.getvalue()
    if len(coo.shape) == 2:
        buf = io.BytesIO()
        scipy.io.mmwrite(buf, coo.to_scipy(), comment=f"{name}: written by dfopt")
        return f"{name}.mtx", buf.getvalue()
    lines = [f"# {name}: written by dfopt, shape {' '.join(map(str, coo.shape))}"]
    for crd, v in zip(coo.coords.tolist(), coo.values.tolist()):
        lines.append(" ".join(str(c + 1) for c in crd) + f" {v!r}")
    return f"{name}.tns", ("\n".join(lines) + "\n").encode()


def binding_table(data: Any, design: Any) -> str:
    base = data.baseline
    rows = ["| array | tensor | kind | role | memory | depth | PMUs | DRAM words | stardust |",
            "|---|---|---|---|---|---|---|---|---|"]
    for name, f in data.sim.arrays.items():
        b, s = design.binding[name], base.binding[name]
        words = array_dram_words(f, b, data.regions[name], data.machine.dram_burst_words)
        rows.append(f"| {name} | {f.tensor} | {f.kind} | {f.role} | {b.memory} | {b.depth} | {b.pmus} | {words} | "
                    f"{s.memory} (depth {s.depth}, {s.pmus} PMUs) |")
    rows += ["", "| join | method | stardust |", "|---|---|---|"]
    rows += [f"| {j} | {design.coiteration.get(j)} | {base.coiteration.get(j)} |" for j in data.sim.joiners]
    rows += ["", f"parallelisation: inner {design.inner_par}, outer {design.outer_par} "
                 f"(stardust: {base.inner_par}, {base.outer_par})"]
    return "\n".join(rows) + "\n"


def emit(instance: Any, solution: Any, out_dir: Any, options: Any = None) -> dict:
    from dfopt.codegen.sam_hls.emit import design_streams
    from dfopt.models.sparse import prepare_for_check

    design = solution.decision
    data = prepare_for_check(instance, options, dict(design.coiteration))
    st = data.statement
    result = st.tensors[st.result]
    fname, blob = tensor_file(st.result, data.sim.result, all(k == "dense" for k in result.format.levels))
    graph, _ = design_streams(data, design)
    files: dict = {fname: blob, "binding.md": binding_table(data, design), "graph.dot": graph.to_dot()}
    target = getattr(options, "target", "all")
    out: dict = {"out_dir": str(out_dir), "result": fname}
    if target in ("spatial", "all"):
        from dfopt.codegen.spatial import check_program, spatial_program
        from dfopt.errors import CodegenError

        text = spatial_program(data, design, instance.name)
        faults = check_program(text, data, design)
        if faults:
            raise CodegenError(f"the Spatial program of {instance.name!r} does not follow its design: "
                               + "; ".join(faults[:5]))
        files[f"{instance.name}.scala"] = text
        out["spatial"] = f"{instance.name}.scala"
    if target in ("hls", "all"):
        from dfopt.codegen.sam_hls.emit import hls_files

        hls = hls_files(data, design, instance.name, getattr(options, "hls_depths", "iteration"))
        files.update({f"hls/{k}": v for k, v in hls.pop("files").items()})
        out["hls"] = {"dir": "hls", **{k: hls[k] for k in ("top", "processes")},
                      "fifos": len(hls["streams"]), "depths": sum(hls["streams"].values())}
    out["files"] = write_folder_atomic(out_dir, files)
    return out
