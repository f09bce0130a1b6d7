"""The per-core kernels of a mapped design in C++: what each ``aie.core`` calls, generated from the
numeric model's trace of that core (:class:`dfopt.codegen.aie.mapping.numeric.Trace`), and their
run on the host inside the design's data movement.

A core's kernel (``cores/<kernel>_<col>_<row>.cc``) is the symbol the MLIR declares
(``func.func private @ffn2(memref<256xi32>, ...)``), one pointer per acquired object in the order
the core passes them, called once per loop iteration; a core with a program of steps
(:mod:`dfopt.codegen.aie.mapping.order`) has one symbol per step signature in the same file,
sharing one call counter. The design's data movement is static, so
each call does the same thing on every run: copy the bytes of the acquired objects into the
core's local buffers (the host blocks and tokens its members take), call the op kernels of
``dfopt_aie_kernels.h`` on those buffers in the members' program order, and copy what the
members send into the objects the core produces. A ``switch`` on the call count selects the call.
Values live in place in the acquired objects or in one static arena, buffers whose lifetimes do
not overlap sharing bytes (:class:`Memory`); the sizes are in each file's header.

:func:`host_check` compiles the emitted sources on the host (``g++``; the C++ compiler ``CXX``
names) into one shared library -- each core's file in its own namespace, its symbol renamed
``core_<col>_<row>_<kernel>`` -- and runs the design's data movement
(:func:`dfopt.codegen.aie.sim.run`) with each core calling its compiled kernel on the objects it
acquired: the outputs must equal the program's numbers, as in the numeric model. This is what
``make sim`` runs in an emitted design folder.
"""

from __future__ import annotations

import ctypes
import hashlib
import math
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np

from dfopt.codegen.aie.design import AieDesign, Core
from dfopt.codegen.aie.kernels import CTYPES, HEADER, OPS, call_text
from dfopt.codegen.aie.mapping.numeric import _width
from dfopt.errors import CodegenError

__all__ = ["core_source", "source_name", "write_cores", "HostCores", "OBJECT_CTYPES"]

#: the C type of an object pointer, per FIFO element type
OBJECT_CTYPES = {"i32": "int32_t", "i8": "int8_t"}


def source_name(trace) -> str:
    col, row = trace.tile
    return f"{trace.kernel}_{col}_{row}.cc"


# -- where each buffer lives --------------------------------------------------------------------------

def _touches(action) -> list[tuple[int, str, int, int]]:
    """``(buffer, "r" | "w" | "rw", byte start, bytes)`` of an action (op arguments: whole range unknown,
    byte start and length -1)."""
    kind = action[0]
    if kind == "in":
        return [(action[3], "w", action[4], action[5])]
    if kind == "out":
        return [(action[1], "r", action[2], action[5])]
    if kind == "fill":
        return [(action[1], "w", -1, -1)]
    if kind in ("convert", "copy"):
        return [(action[1][0], "r", -1, -1), (action[2][0], "w", -1, -1)]
    _, op, ptrs = action
    written = OPS[op.op][2]
    return [(at[0], "rw" if name in written else "r", -1, -1) for at, name in zip(ptrs, OPS[op.op][1])]


class Memory:
    """Where a core kernel's buffers live, call by call: in an acquired object when a call fills
    the whole buffer from one object and the value dies with the call (*in place*), or when the
    value is made in one call and sent whole into one object of that call; else at an offset of
    one static arena, buffers whose lifetimes do not overlap sharing bytes (first fit, 16-byte
    aligned). ``arena_bytes``: the arena's size; ``local_bytes``: what separate buffers would take."""

    def __init__(self, trace) -> None:
        self.trace = trace
        events: dict[int, list] = {}            # buffer -> [(call, index in the run, action position, touch)]
        g = 0
        for k, actions in enumerate(trace.calls):
            for i, a in enumerate(actions):
                for buf, mode, start, n in _touches(a):
                    events.setdefault(buf, []).append((k, g, i, mode, start, n, a))
                g += 1
        self.alias: dict[tuple[int, int], tuple[int, int]] = {}    # (buffer, call) -> (object, byte)
        self.dropped: set[tuple[int, int]] = set()                  # (call, action index) copies not needed
        for buf, evs in events.items():
            size = trace.buffers[buf].nbytes
            calls = sorted({e[0] for e in evs})
            for k in calls:
                seg = [e for e in evs if e[0] == k]
                later = [e for e in evs if e[0] > k]
                first = seg[0]
                full_in = first[3] == "w" and first[6][0] == "in" and first[4] == 0 and first[5] == size
                dies = not later or (later[0][6][0] == "in" and later[0][4] == 0 and later[0][5] == size)
                if full_in and dies and not any(e[6][0] == "in" for e in seg[1:]):
                    self.alias[(buf, k)] = (first[6][1], first[6][2])
                    self.dropped.add((k, first[2]))
                    continue
                last = seg[-1]
                made_here = len(calls) == 1 and not any(e[6][0] == "in" for e in seg)
                outs = [e for e in seg if e[6][0] == "out"]
                if made_here and len(outs) == 1 and last is outs[0] and last[4] == 0 and last[5] == size:
                    self.alias[(buf, k)] = (last[6][3], last[6][4])
                    self.dropped.add((k, last[2]))
        self.offset: dict[int, int] = {}
        spans = []
        for buf, evs in events.items():
            rest = [e[1] for e in evs if (buf, e[0]) not in self.alias]
            if rest:
                spans.append((min(rest), max(rest), buf))
        active: list[tuple[int, int, int]] = []                      # (end, offset, size)
        self.arena_bytes = 0
        for begin, end, buf in sorted(spans):
            active = [a for a in active if a[0] >= begin]
            size = -(-max(trace.buffers[buf].nbytes, 1) // 16) * 16
            at = 0
            for _, off, n in sorted(active, key=lambda a: a[1]):
                if at + size <= off:
                    break
                at = max(at, off + n)
            self.offset[buf] = at
            active.append((end, at, size))
            self.arena_bytes = max(self.arena_bytes, at + size)
        self.local_bytes = sum(b.nbytes for b in trace.buffers)

    def base(self, buf: int, call: int) -> str:
        if (buf, call) in self.alias:
            obj, byte = self.alias[(buf, call)]
            return f"obj[{obj}] + {byte}" if byte else f"obj[{obj}]"
        return f"arena + {self.offset[buf]}" if self.offset.get(buf) else "arena"


def _ptr(mem: Memory, call: int, at, ctype: str, const: bool) -> str:
    buf, elem = at
    q = "const " if const else ""
    ptr = f"reinterpret_cast<{q}{ctype}*>({mem.base(buf, call)})"
    return f"{ptr} + {elem}" if elem else ptr


def _action(mem: Memory, call: int, action) -> str:
    trace = mem.trace
    kind = action[0]
    if kind == "in":
        _, arg, src, buf, dst, n = action
        return f"memcpy({mem.base(buf, call)} + {dst}, obj[{arg}] + {src}, {n});"
    if kind == "out":
        _, buf, src, arg, dst, n = action
        return f"memcpy(obj[{arg}] + {dst}, {mem.base(buf, call)} + {src}, {n});"
    if kind == "fill":
        _, buf, n, value = action
        ctype = CTYPES[trace.buffers[buf].dtype]
        text = "-INFINITY" if value == -math.inf else ("INFINITY" if value == math.inf else repr(float(value)) + "f")
        return f"dfopt::fill<{n}>({_ptr(mem, call, (buf, 0), ctype, False)}, {text});"
    if kind == "copy":
        _, src, dst, n = action
        esrc, edst = (_width_of(trace, at) for at in (src, dst))
        return f"memcpy({mem.base(dst[0], call)} + {edst}, {mem.base(src[0], call)} + {esrc}, {n});"
    if kind == "convert":
        _, src, dst, n = action
        return (f"dfopt::convert<{n}>({_ptr(mem, call, src, CTYPES[trace.buffers[src[0]].dtype], True)}, "
                f"{_ptr(mem, call, dst, CTYPES[trace.buffers[dst[0]].dtype], False)});")
    _, op, ptrs = action
    names, written = OPS[op.op][1], OPS[op.op][2]
    args = [_ptr(mem, call, at, CTYPES[t], name not in written)
            for at, t, name in zip(ptrs, op.arg_types(), names)]
    return call_text(op, args) + ";"


def _width_of(trace, at) -> int:
    """The byte offset of (buffer, element)."""
    buf, elem = at
    return elem * _width(trace.buffers[buf].dtype)


def core_source(trace, design_name: str = "", mem: Memory | None = None) -> str:
    """The C++ of one core's kernel (see the module docstring; ``mem``: its :class:`Memory`, when
    the caller has it); CodegenError when the trace has a step C cannot express (a strided view, an
    element type the op kernel does not take)."""
    if trace.faults:
        raise CodegenError(f"core {trace.tile}: no kernel source: " + "; ".join(trace.faults[:4]))
    mem = mem or Memory(trace)
    col, row = trace.tile
    lines = [f"// Generated by dfopt: the kernel of core ({col}, {row}){' of ' + design_name if design_name else ''}, "
             f"members {', '.join(trace.members)}."]
    if len(trace.entries) == 1:
        lines.append(f"// Called once per loop iteration ({len(trace.calls)} calls) with the acquired objects, "
                     "in order:")
    else:
        lines.append(f"// {len(trace.entries)} entry points, one per step signature of the core's program "
                     f"({len(trace.calls)} calls in all, one call counter), each with the acquired objects in order:")
    for symbol, args in trace.entries.items():
        if len(trace.entries) > 1:
            calls = _ranges([k for k, s in enumerate(trace.call_kernels) if s == symbol])
            lines.append(f"//   {symbol} (calls {calls}):")
        lines += [f"//   o{i}: {port} {fifo} ({t})" for i, (fifo, port, t) in enumerate(args)]
    lines += [f"// Values: {len(trace.buffers)} ({mem.local_bytes} bytes); in place in the objects where a call "
              f"fills or sends one whole, the rest in a {mem.arena_bytes}-byte arena.",
              '#include "dfopt_aie_kernels.h"', "", "#ifndef DFOPT_ENTRY", "#define DFOPT_ENTRY(name) name",
              "#endif", "", "namespace {"]
    if mem.arena_bytes:
        lines.append(f"alignas(16) unsigned char arena[{mem.arena_bytes}];")
        for buf in sorted(mem.offset, key=lambda b: (mem.offset[b], b)):
            b = trace.buffers[buf]
            lines.append(f"//   arena + {mem.offset[buf]}: {b.label} ({b.nbytes} bytes of {b.dtype})")
    lines += ["int calls = 0;", "}  // namespace"]
    for symbol, args in trace.entries.items():
        params = ", ".join(f"{OBJECT_CTYPES[t]}* o{i}" for i, (_, _, t) in enumerate(args))
        objs = ", ".join(f"reinterpret_cast<unsigned char*>(o{i})" for i in range(len(args)))
        lines += ["", f'extern "C" void DFOPT_ENTRY({symbol})({params}) {{']
        if args:
            lines += [f"  unsigned char* const obj[] = {{{objs}}};", "  (void)obj;"]
        lines.append("  switch (calls++) {")
        for k, actions in enumerate(trace.calls):
            if trace.call_kernels[k] != symbol:
                continue
            lines.append(f"    case {k}:")
            lines += [f"      {_action(mem, k, a)}" for i, a in enumerate(actions) if (k, i) not in mem.dropped]
            lines.append("      break;")
        lines += ["    default:", "      break;", "  }", "}"]
    return "\n".join(lines) + "\n"


def _ranges(values: list[int]) -> str:
    """``0-3, 7, 9-10`` of sorted integers."""
    out, start = [], None
    for i, v in enumerate(values):
        if start is None:
            start = v
        if i + 1 == len(values) or values[i + 1] != v + 1:
            out.append(f"{start}" if start == v else f"{start}-{v}")
            start = None
    return ", ".join(out)


def write_cores(traces: list, out_dir, design_name: str = "", memories: dict | None = None) -> dict:
    """``cores/<kernel>_<col>_<row>.cc`` per core and ``include/dfopt_aie_kernels.h``, written
    atomically into ``out_dir``; the paths."""
    from dfopt.io import write_text_atomic

    out = Path(out_dir)
    (out / "cores").mkdir(parents=True, exist_ok=True)
    (out / "include").mkdir(parents=True, exist_ok=True)
    paths = {}
    for t in traces:
        path = out / "cores" / source_name(t)
        write_text_atomic(path, core_source(t, design_name, (memories or {}).get(t.tile)))
        paths[f"core_{t.tile[0]}_{t.tile[1]}"] = path
    paths["kernels_header"] = out / "include" / HEADER.name
    write_text_atomic(paths["kernels_header"], HEADER.read_text())
    return paths


class HostCores:
    """The emitted core sources of a design folder compiled on the host into one library, each
    core's symbol ``core_<col>_<row>_<kernel>``; :meth:`kernels` gives the hooks of
    :func:`dfopt.codegen.aie.sim.run`."""

    def __init__(self, design: AieDesign, folder, workdir) -> None:
        folder = Path(folder)
        cxx = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")
        if cxx is None:
            raise CodegenError("no C++ compiler to build the core kernels on the host (install g++ or set CXX)")
        parts = ['#include "dfopt_aie_kernels.h"']
        self.design = design
        for c in design.cores:
            src = folder / "cores" / f"{c.kernel}_{c.tile[0]}_{c.tile[1]}.cc"
            if not src.exists():
                raise CodegenError(f"core {c.tile}: no kernel source {src} (the design folder has no kernels: "
                                   "the instance names no program, or the numeric model failed)")
            parts += [f"namespace core_{c.tile[0]}_{c.tile[1]} {{", "#undef DFOPT_ENTRY",
                      f"#define DFOPT_ENTRY(name) core_{c.tile[0]}_{c.tile[1]}_##name",
                      f'#include "{src.resolve()}"', "}"]
        text = "\n".join(parts) + "\n"
        tag = hashlib.sha256((text + "".join((folder / "cores" / f"{c.kernel}_{c.tile[0]}_{c.tile[1]}.cc")
                                             .read_text() for c in design.cores)).encode()).hexdigest()[:12]
        work = Path(workdir)
        src, so = work / f"dfopt_cores_{tag}.cc", work / f"libdfopt_cores_{tag}.so"
        src.write_text(text)
        include = folder / "include" if (folder / "include" / HEADER.name).exists() else HEADER.parent
        done = subprocess.run([cxx, "-std=c++14", "-O1", "-Wall", "-Werror", "-Wno-unused-variable", "-shared",
                               "-fPIC", f"-I{include}", str(src), "-o", str(so)], capture_output=True, text=True)
        if done.returncode:
            raise CodegenError(f"the core kernels do not compile on the host with {cxx}:\n{done.stderr[-3000:]}")
        self.lib = ctypes.CDLL(str(so))

    def kernels(self) -> dict:
        fifos = {f.name: f for f in self.design.fifos}
        return {c.tile: self._hook(c, fifos) for c in self.design.cores}

    def _hook(self, c: Core, fifos: dict):
        np_types = {"i32": np.uint32, "i8": np.uint8}

        def kernel(core: Core, iteration: int, consumed: list, produce_sizes: list) -> list:
            fn = getattr(self.lib, f"core_{c.tile[0]}_{c.tile[1]}_{core.kernel}")
            bufs, produced = [], []
            objs = iter(consumed)
            for a in core.accesses:
                t = np_types[fifos[a.fifo].dtype]
                if a.port == "consume":
                    bufs += [np.ascontiguousarray(o.astype(t)) for o in next(objs)]
                else:
                    new = [np.zeros(fifos[a.fifo].numel, t) for _ in range(a.count)]
                    bufs += new
                    produced += new
            fn(*[b.ctypes.data_as(ctypes.c_void_p) for b in bufs])
            return [p.astype(np.int64) for p in produced]

        return kernel


# -- make sim -------------------------------------------------------------------------------------

def host_check(folder, workdir=None):
    """Run a design folder's core kernels, compiled on the host, inside the design's data movement on
    ``data.npz``'s inputs, and compare the outputs with its expected ones: a
    :class:`~dfopt.codegen.aie.mapping.numeric.NumericReport` (``run`` None and the reason as a
    fault when the folder has no kernels)."""
    import json
    import tempfile
    import time

    from dfopt.codegen.aie.mapping import design_from_mapping
    from dfopt.codegen.aie.mapping.numeric import NumericReport, compare_outputs, pack
    from dfopt.codegen.aie.sim import run
    from dfopt.instance import from_dict, solution_from_dict

    folder = Path(folder)
    meta = json.loads((folder / "design.json").read_text())
    doc = json.loads((folder / "sim.json").read_text())
    design = design_from_mapping(from_dict(doc["instance"], source=str(folder / "sim.json")),
                                 solution_from_dict(doc["solution"]))
    report = NumericReport(design, None)
    if meta["kernels"]["status"] != "written":
        report.faults.append(f"no core kernels: {meta['kernels']['reason']}")
        return report
    t0 = time.perf_counter()
    data = np.load(folder / "data.npz")
    buffers = {b["name"]: b for b in meta["buffers"]}
    inputs = {name: pack(data[f"in_{name}"], b["counts"], b["dtype"], b["words"])
              for name, b in buffers.items() if b["dir"] == "in"}
    with tempfile.TemporaryDirectory(prefix="dfopt-cores-") as tmp:
        cores = HostCores(design, folder, workdir or tmp)
        result = run(design, inputs, cores.kernels())
    report.run = result
    report.reference = {name: data[f"out_{name}"] for name, b in buffers.items() if b["dir"] == "out"}
    report.scale = {name: data[f"scale_{name}"] for name in report.reference if f"scale_{name}" in data.files}
    report.faults += [f"deadlock: {w}" for w in result.blocked] + result.faults
    compare_outputs(report, {n: (b["dtype"], b["counts"], b["words"]) for n, b in buffers.items()}, result)
    report.summary = {"cores": len(design.cores), "fifos": len(design.fifos), "objects": sum(result.objects.values()),
                      "wall_s": round(time.perf_counter() - t0, 3)}
    return report


def main(argv: list[str] | None = None) -> int:
    """``python -m dfopt.codegen.aie.mapping.glue DIR``: PASS / FAIL (exit 0 / 1; 2 bad folder); a
    folder whose instance names no program is skipped (exit 0, said)."""
    import json
    import sys

    from dfopt.codegen.aie.mapping.numeric import report_text
    from dfopt.errors import DfoptError

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        sys.stderr.write("usage: python -m dfopt.codegen.aie.mapping.glue DESIGN_FOLDER\n")
        return 2
    try:
        kernels = json.loads((Path(args[0]) / "design.json").read_text())["kernels"]
        if kernels["status"] == "no program":
            sys.stdout.write(f"core kernels: skipped: {kernels['reason']}\n")
            return 0
        report = host_check(args[0])
    except (OSError, ValueError, KeyError, TypeError, DfoptError) as err:
        sys.stderr.write(f"core kernels: {args[0]}: {err}\n")
        return 2
    sys.stdout.write(report_text(report, "core kernels on the host"))
    return 0 if not report.faults else 1


if __name__ == "__main__":
    import sys

    sys.exit(main())
