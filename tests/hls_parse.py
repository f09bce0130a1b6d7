"""Reading an emitted HLS design back from its text, without the emitter: the stream declarations
and process calls of top.cpp, the parameter lists of kernels.h, the beat structs, and the cycles of
the loops marked ``// dfopt: compute`` in kernels.cpp. The tests compare what these parsers find
with the manifest (design.json) and with the tiling stage's cost model."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

STREAM = re.compile(r'^\s*hls::stream<(\w+)> (\w+)\("([^"]+)"\);')
DEPTH = re.compile(r"^#pragma HLS stream variable=(\w+) depth=(\d+)")
STORAGE = re.compile(r"^#pragma HLS bind_storage variable=(\w+) type=fifo impl=(\w+)")
PROCESS = re.compile(r"^\s*DFOPT_PROCESS\((\w+)\((.*)\)\);")
REGION = re.compile(r'^\s*DFOPT_DATAFLOW_BEGIN\("(\w+)"\);')
BEAT = re.compile(r"^struct (\w+) \{ (\w+) data\[(\d+)\]; \};")
DECL = re.compile(r"^void (\w+)\((.*)\);")
FOR = re.compile(r"^\s*for \(int (\w+) = 0; \1 < (\d+); \+\+\1\) \{")
PIPELINE = re.compile(r"^\s*#pragma HLS pipeline II=(\d+)")
MAXI = re.compile(r"^#pragma HLS interface m_axi port=(\w+) offset=slave bundle=(\w+)")
CBITS = {"float": 32, "double": 64, "int": 32}


@dataclass
class Stream:
    var: str
    name: str
    beat: str
    region: str
    depth: int = 0
    impl: str | None = None


def streams_and_calls(top_cpp: str) -> tuple[dict[str, Stream], dict[str, list[tuple[str, list[str]]]]]:
    """top.cpp's streams (var -> Stream) and, per region, its process calls in order."""
    streams: dict[str, Stream] = {}
    calls: dict[str, list[tuple[str, list[str]]]] = {}
    region = None
    for line in top_cpp.splitlines():
        if m := REGION.match(line):
            region = m.group(1)
            calls[region] = []
        elif m := STREAM.match(line):
            assert region is not None, line
            streams[m.group(2)] = Stream(m.group(2), m.group(3), m.group(1), region)
        elif m := DEPTH.match(line):
            streams[m.group(1)].depth = int(m.group(2))
        elif m := STORAGE.match(line):
            streams[m.group(1)].impl = m.group(2)
        elif m := PROCESS.match(line):
            assert region is not None, line
            calls[region].append((m.group(1), [a.strip() for a in m.group(2).split(",")]))
    return streams, calls


def beat_structs(kernels_h: str) -> dict[str, int]:
    """Beat struct -> its bits."""
    return {m.group(1): CBITS[m.group(2)] * int(m.group(3))
            for m in map(BEAT.match, kernels_h.splitlines()) if m}


def parameters(kernels_h: str) -> dict[str, list[tuple[str, str]]]:
    """Function -> [(parameter name, type)] from the declarations of kernels.h."""
    out = {}
    for line in kernels_h.splitlines():
        if m := DECL.match(line):
            params = []
            for p in re.split(r",\s*(?=hls::|const |float|double|int)", m.group(2)):
                typ, _, name = p.strip().rpartition(" ")
                params.append((name.lstrip("&*"), typ))
            out[m.group(1)] = params
    return out


def reads_writes(kernels_h: str, fn: str, args: list[str]) -> tuple[set[str], set[str]]:
    """The stream arguments a call reads (parameters ``in<k>``) and writes (``out<k>``)."""
    reads, writes = set(), set()
    for (name, _), arg in zip(parameters(kernels_h)[fn], args):
        if name.startswith("in"):
            reads.add(arg)
        elif name.startswith("out"):
            writes.add(arg)
    return reads, writes


def functions(kernels_cpp: str) -> dict[str, list[str]]:
    """Function name -> its lines (definition to closing brace) in kernels.cpp."""
    out, name, body = {}, None, []
    for line in kernels_cpp.splitlines():
        if name is None:
            m = re.match(r"^void (\w+)\(.*\) \{$", line)
            if m:
                name, body = m.group(1), []
        elif line == "}":
            out[name] = body
            name = None
        else:
            body.append(line)
    return out


def compute_cycles(body: list[str]) -> int:
    """Cycles of one call spent in the pipelined loop nests that follow a ``// dfopt: compute``
    mark: per nest, the trip counts of its loops down to the ``pipeline`` pragma times the II,
    times the trip counts of every loop around the nest."""
    total = 0
    stack: list[int] = []          # trip counts of the open loops (1 for other blocks)
    marked_at: int | None = None   # stack depth where the marked nest starts
    in_pipeline_at: int | None = None
    for line in body:
        s = line.strip()
        if s == "// dfopt: compute":
            marked_at = len(stack)
            continue
        if m := FOR.match(line):
            stack.append(int(m.group(2)))
            continue
        if (m := PIPELINE.match(line)) and marked_at is not None and in_pipeline_at is None:
            total += math.prod(stack) * int(m.group(1))
            in_pipeline_at = marked_at
            continue
        if s.endswith("{"):
            stack.append(1)
        if s.startswith("}"):
            stack.pop()
            if in_pipeline_at is not None and len(stack) == in_pipeline_at:
                in_pipeline_at = marked_at = None
    return total


def top_ports(top_cpp: str) -> dict[str, str]:
    """m_axi port -> bundle from top.cpp's interface pragmas."""
    return {m.group(1): m.group(2) for m in map(MAXI.match, top_cpp.splitlines()) if m}


def design_files(path: Path) -> dict[str, str]:
    return {n: (path / n).read_text() for n in ("top.cpp", "kernels.h", "kernels.cpp")}
