"""Static checks of a recorded Dato program (docs/dato.md); each fault is one :class:`Diagnostic`.

Every diagnostic names its task, instance, stream (when there is one) and source line:

* ``producer`` / ``consumer`` — a stream needs exactly one producer and one consumer instance;
  none, or two and more, is an error that lists every end with its lines.
* ``balance`` — over all iterations of the static loops the producer puts as many tokens as the
  consumer gets (Dato's linear Free/Used tokens: every put turns a Free token into a Used one that
  exactly one get turns back).
* ``collective`` — every member of a collective group calls ``allreduce`` equally often, with the
  same op.
* ``deadlock`` / ``underflow`` / ``overflow`` — Free/Used accounting over time: all instances'
  op sequences run together with FIFOs of the declared depth N (a put needs a Free slot, a get a
  Used token, an allreduce waits for its whole group). A producer may run up to N tokens ahead;
  more is fine while the consumer makes progress, so only states where nothing can move are
  reported: as the cycle of instances each waiting on the next one's stream (with the blocking
  lines), as an ``underflow`` when an instance gets from a stream that only it fills later, or an
  ``overflow`` when it puts into a full stream that only it drains later. This runs only when
  the checks above pass (they would show up here again otherwise).
* ``partial`` — a reduction over an axis sharded on grid axis k (``reduce_sum``, a ``matmul``
  contraction) leaves a pending partial sum; putting, storing or computing with the value before
  ``allreduce(x, axis=k)`` is an error naming the line of the use and of the reduction.
* ``chain`` — dfopt runs an ``allreduce`` over grid axis k as a chain of partial sums along k
  (the mapping graph's reduction edges), so only the member at the last coordinate of k holds the
  sum: putting, storing or computing with the result on another member is an error naming the
  line of the use and of the allreduce.
* ``layout`` / ``type`` — the producer's view of each stream token (layout and concrete block)
  must equal the consumer's declared view; a stored tile must be the tensor's block for that
  instance; a put value must have the stream's element type.

Uses and stores repeated by every instance of a task are reported once, with the instance count.

>>> from dfopt.dato.examples import deadlock_program
>>> [d.kind for d in check(deadlock_program())]
['deadlock']
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from dfopt.dato.frontend import DatoError, Diagnostic, Op, Program, Recording, layout_text, recording, view_text

SYNC_KINDS = ("put", "get", "allreduce")

__all__ = ["Diagnostic", "DatoError", "check", "check_or_raise", "simulate", "Simulation", "Wait"]


def check(program: Program | Recording) -> list[Diagnostic]:
    """Every diagnostic of a :class:`~dfopt.dato.frontend.Program` (or its recording); empty: clean."""
    rec = recording(program)
    out = end_diagnostics(rec)
    bad = {d.stream for d in out}
    out += balance_diagnostics(rec, skip=bad)
    out += collective_diagnostics(rec)
    structural = bool(out)
    out += view_diagnostics(rec, skip=bad)
    out += mismatch_diagnostics(rec)
    out += partial_diagnostics(rec)
    out += chain_diagnostics(rec)
    if not structural:
        out += deadlock_diagnostics(rec, simulate(rec))
    return out


def check_or_raise(program: Program | Recording) -> Recording:
    """The recording when every check passes; otherwise :class:`DatoError` with all diagnostics."""
    rec = recording(program)
    found = check(rec)
    if found:
        raise DatoError(found)
    return rec


# == ends and balance =========================================================================

def _lines(lines) -> str:
    distinct = sorted(set(lines))
    return ("line " if len(distinct) == 1 else "lines ") + ", ".join(map(str, distinct))


def _task(rec: Recording, inst: str | None) -> str | None:
    return rec.instances[inst].task if inst in rec.instances else None


def end_diagnostics(rec: Recording) -> list[Diagnostic]:
    """Streams without exactly one producer and one consumer instance."""
    out = []
    for sr in rec.streams.values():
        for role, ends, others, verb, other_verb in (("producer", sr.producers, sr.consumers, "puts", "gets"),
                                                     ("consumer", sr.consumers, sr.producers, "gets", "puts")):
            if len(ends) == 1:
                continue
            if not ends:
                inst, lines = next(iter(others.items()))
                who = ", ".join(f"{i} {other_verb} at {_lines(ls)}" for i, ls in others.items())
                msg = (f"stream '{sr.name}' has no {role}: {who}, but no task instance {verb}; "
                       f"expected exactly one {role}")
            else:
                inst, lines = list(ends.items())[1]
                who = ", ".join(f"{i} {verb} at {_lines(ls)}" for i, ls in ends.items())
                msg = f"stream '{sr.name}' has {len(ends)} {role}s, expected exactly one: {who}"
            every = tuple(sorted({ls[0] for ls in ends.values()} | {ls[0] for ls in others.values()}))
            out.append(Diagnostic(role, msg, _task(rec, inst), sr.name, lines[0], inst, every,
                                  _file(rec, inst)))
    return out


def balance_diagnostics(rec: Recording, skip: Collection[str | None] = ()) -> list[Diagnostic]:
    """Streams whose producer puts a different number of tokens than the consumer gets."""
    out = []
    for sr in rec.streams.values():
        if sr.name in skip or sr.producer is None or sr.consumer is None or sr.puts == sr.gets:
            continue
        put_lines, get_lines = sr.producers[sr.producer], sr.consumers[sr.consumer]
        msg = (f"stream '{sr.name}': {sr.producer} puts {sr.puts} token(s) at {_lines(put_lines)} but "
               f"{sr.consumer} gets {sr.gets} at {_lines(get_lines)}; over all iterations of the static "
               "loops every put needs exactly one get")
        out.append(Diagnostic("balance", msg, _task(rec, sr.producer), sr.name, put_lines[0], sr.producer,
                              (put_lines[0], get_lines[0]), _file(rec, sr.producer)))
    return out


def _file(rec: Recording, inst: str | None) -> str | None:
    return rec.instances[inst].file if inst in rec.instances else None


def collective_diagnostics(rec: Recording) -> list[Diagnostic]:
    """Collective groups whose members call allreduce unequally often or with different ops."""
    out = []
    for g in rec.groups.values():
        calls = {m: g.calls.get(m, []) for m in g.members}
        ops = {m: [op for _, op in c] for m, c in calls.items()}
        ref = max(g.members, key=lambda m: len(calls[m]))
        odd = next((m for m in g.members if ops[m] != ops[ref]), None)
        if odd is None:
            continue
        line = (calls[odd] or calls[ref])[0][0]
        msg = (f"collective group '{g.name}' (allreduce over grid axis {g.axis}): {ref} calls allreduce "
               f"{len(calls[ref])} time(s) ({', '.join(ops[ref])}) but {odd} {len(calls[odd])} time(s)"
               f"{' (' + ', '.join(ops[odd]) + ')' if ops[odd] else ''}; every member must make the same calls")
        out.append(Diagnostic("collective", msg, g.task, None, line, odd, (line,), _file(rec, odd)))
    return out


# == layouts, types and pending partial sums ==================================================

def view_diagnostics(rec: Recording, skip: Collection[str | None] = ()) -> list[Diagnostic]:
    """Streams whose producer's view of a token differs from the consumer's declared view.

    Streams of one array that disagree at the same two lines in the same way are reported once.
    """
    groups = defaultdict(list)
    for sr in rec.streams.values():
        if sr.name in skip:
            continue
        for k, (pv, gv) in enumerate(zip(sr.put_views, sr.get_views)):
            if pv is not None and gv is not None and pv.view != gv.view:
                groups[(sr.array or sr.name, pv.line, gv.line, pv.layout, gv.layout)].append((sr, k, pv, gv))
                break
    out = []
    for (array, _, _, _, _), found in groups.items():
        sr, k, pv, gv = found[0]
        token = f" (token {k})" if k else ""
        more = f" (and {len(found) - 1} more stream(s) of '{array}')" if len(found) > 1 else ""
        msg = (f"stream '{sr.name}'{more}: producer {pv.instance} puts a tile with layout "
               f"{layout_text(pv.layout)} ({view_text(pv.view)}) at line {pv.line}, but consumer {gv.instance} "
               f"reads it as {layout_text(gv.layout)} ({view_text(gv.view)}) at line {gv.line}{token}")
        out.append(Diagnostic("layout", msg, _task(rec, gv.instance), sr.name, gv.line, gv.instance,
                              (pv.line, gv.line), _file(rec, gv.instance)))
    return out


def _instances_text(instances: list) -> str:
    if len(instances) == 1:
        return f"in {instances[0]}"
    shown = ", ".join(instances[:3]) + (", ..." if len(instances) > 3 else "")
    return f"in {len(instances)} instances: {shown}"


def mismatch_diagnostics(rec: Recording) -> list[Diagnostic]:
    """Type and layout faults found while recording, once per (kind, task, line)."""
    groups = defaultdict(list)
    for m in rec.mismatches:
        groups[(m.kind, m.task, m.line, m.file)].append(m)
    out = []
    for (kind, task, line, file), ms in groups.items():
        more = f" ({_instances_text([m.instance for m in ms])})" if len(ms) > 1 else ""
        first = ms[0]
        out.append(Diagnostic(kind, first.message + more, task, first.stream, line, first.instance, (line,), file))
    return out


_USE_TEXT = {"put": "put on stream '{}'", "store": "stored into tensor '{}'", "compute": "read by compute '{}'"}


def _use_diagnostics(uses: list, kind: str, message) -> list[Diagnostic]:
    """One diagnostic per (task, line, use, axis, reduce line) of ``uses`` (PendingUse records),
    its text ``message(first use, instances text)``."""
    groups = defaultdict(list)
    for u in uses:
        groups[(u.task, u.line, u.use, u.axis, u.reduce_line, u.file)].append(u)
    out = []
    for (task, line, use, _, reduce_line, file), us in groups.items():
        first = us[0]
        where = _instances_text(list(dict.fromkeys(u.instance for u in us)))
        out.append(Diagnostic(kind, message(first, where), task, first.target if use == "put" else None, line,
                              first.instance, (reduce_line, line), file))
    return out


def partial_diagnostics(rec: Recording) -> list[Diagnostic]:
    """Values with a pending partial sum that are used before the allreduce that discharges it."""
    return _use_diagnostics(rec.pending_uses, "partial", lambda u, where: (
        f"task '{u.task}' line {u.line}: a value reduced at line {u.reduce_line} over an axis sharded on grid "
        f"axis {u.axis} holds only a partial sum, but it is {_USE_TEXT[u.use].format(u.target)} before an "
        f"allreduce over grid axis {u.axis}; add allreduce(x, op=\"sum\", axis={u.axis}) between line "
        f"{u.reduce_line} and line {u.line} ({where})"))


def chain_diagnostics(rec: Recording) -> list[Diagnostic]:
    """Uses of an allreduce's result on a member that is not the last of its chain: dfopt lowers an
    allreduce over grid axis k as a chain of partial sums along k (the mapping graph's reduction
    edges), so only the member at the last coordinate of k holds the sum."""
    return _use_diagnostics(rec.chain_uses, "chain", lambda u, where: (
        f"task '{u.task}' line {u.line}: the allreduce at line {u.reduce_line} over grid axis {u.axis} runs as a "
        f"chain of partial sums along that axis, so only its last member holds the sum, but the value is "
        f"{_USE_TEXT[u.use].format(u.target)} on other members too ({where}); use it on the last member "
        f"only (an `if` on the grid coordinate of axis {u.axis})"))


# == Free/Used token simulation ===============================================================

@dataclass(frozen=True)
class Wait:
    """Where a blocked instance stopped: its op (kind, stream or group, line) and whom it waits for."""

    instance: str
    kind: str
    target: str
    line: int
    on: tuple


@dataclass
class Simulation:
    """All instances run together with bounded FIFOs until nothing can move."""

    finished: list
    blocked: dict  # instance -> Wait
    max_occupancy: dict  # stream -> most tokens it held at once

    @property
    def deadlock(self) -> bool:
        return bool(self.blocked)


class _Run:
    """The state of the simulation; instances run as far as they can and wake their peers."""

    def __init__(self, rec: Recording) -> None:
        self.rec = rec
        self.seqs = {n: [op for op in inst.ops if op.kind in SYNC_KINDS] for n, inst in rec.instances.items()}
        self.pc = dict.fromkeys(rec.instances, 0)
        self.occ = dict.fromkeys(rec.streams, 0)
        self.peak = dict.fromkeys(rec.streams, 0)
        # (instance, group) -> completed allreduce calls
        self.calls: defaultdict[tuple[str, str], int] = defaultdict(int)
        # (group, call number) -> members arrived
        self.arrived: defaultdict[tuple[str, int], int] = defaultdict(int)
        self.at_barrier: set = set()
        self.queue, self.queued = deque(rec.instances), set(rec.instances)

    def wake(self, instances: Iterable[str]) -> None:
        for x in instances:
            if x not in self.queued:
                self.queue.append(x)
                self.queued.add(x)

    def step(self, x: str, op: Op) -> bool:
        if op.kind == "put":
            if self.occ[op.stream] >= self.rec.streams[op.stream].depth:
                return False
            self.occ[op.stream] += 1
            self.peak[op.stream] = max(self.peak[op.stream], self.occ[op.stream])
            self.wake(self.rec.streams[op.stream].consumers)
            return True
        if op.kind == "get":
            if self.occ[op.stream] == 0:
                return False
            self.occ[op.stream] -= 1
            self.wake(self.rec.streams[op.stream].producers)
            return True
        assert op.group is not None  # an allreduce names its group
        return self.barrier(x, op.group)

    def barrier(self, x: str, group: str) -> bool:
        members = self.rec.groups[group].members
        key = (group, self.calls[(x, group)])
        if x not in self.at_barrier:
            self.at_barrier.add(x)
            self.arrived[key] += 1
            if self.arrived[key] == len(members):
                self.wake(members)
        if self.arrived[key] < len(members):
            return False
        self.at_barrier.discard(x)
        self.calls[(x, group)] += 1
        return True

    def run(self) -> None:
        while self.queue:
            x = self.queue.popleft()
            self.queued.discard(x)
            ops = self.seqs[x]
            while self.pc[x] < len(ops) and self.step(x, ops[self.pc[x]]):
                self.pc[x] += 1

    def wait(self, x: str) -> Wait:
        op = self.seqs[x][self.pc[x]]
        if op.kind == "put":
            on = tuple(self.rec.streams[op.stream].consumers)
        elif op.kind == "get":
            on = tuple(self.rec.streams[op.stream].producers)
        else:
            n = self.calls[(x, op.group)]
            on = tuple(m for m in self.rec.groups[op.group].members if m != x and not (
                self.calls[(m, op.group)] > n or (self.calls[(m, op.group)] == n and m in self.at_barrier)))
        return Wait(x, op.kind, op.stream or op.group, op.line, on)


def simulate(program: Program | Recording) -> Simulation:
    """Run every instance's puts, gets and allreduces together with FIFOs of the declared depths.

    The outcome does not depend on the order instances run in (bounded Kahn networks with
    barriers are determinate), so one run decides whether the program can deadlock.
    """
    run = _Run(recording(program))
    run.run()
    blocked = {x: run.wait(x) for x in run.rec.instances if run.pc[x] < len(run.seqs[x])}
    finished = [x for x in run.rec.instances if x not in blocked]
    return Simulation(finished, blocked, run.peak)


def deadlock_diagnostics(rec: Recording, sim: Simulation) -> list[Diagnostic]:
    """One diagnostic per wait-for cycle among the blocked instances (or per starved chain)."""
    order = {n: i for i, n in enumerate(rec.instances)}
    seen, out = set(), []
    for start in sorted(sim.blocked, key=order.__getitem__):
        path: list[str] = []
        pos: dict[str, int] = {}
        x: str | None = start
        while x is not None and x not in seen and x not in pos:
            pos[x] = len(path)
            path.append(x)
            x = next((y for y in sorted(sim.blocked[x].on, key=order.__getitem__) if y in sim.blocked), None)
        seen.update(path)
        if x is None:
            out.append(_starved(rec, sim.blocked[path[-1]]))
        elif x in pos:
            cycle = path[pos[x]:]
            first = min(range(len(cycle)), key=lambda i: order[cycle[i]])
            out.append(_cycle(rec, sim, cycle[first:] + cycle[:first]))
    return out


def _wait_text(rec: Recording, w: Wait, nxt: str) -> str:
    if w.kind == "get":
        return f"{w.instance} waits at line {w.line} to get from '{w.target}' (empty; producer {nxt})"
    if w.kind == "put":
        depth = rec.streams[w.target].depth
        return f"{w.instance} waits at line {w.line} to put to '{w.target}' (full at depth {depth}; consumer {nxt})"
    return f"{w.instance} waits at line {w.line} in allreduce of group '{w.target}' for {nxt}"


def _cycle(rec: Recording, sim: Simulation, cycle: list) -> Diagnostic:
    waits = [sim.blocked[x] for x in cycle]
    w = waits[0]
    stream = w.target if w.kind != "allreduce" else None
    lines = tuple(v.line for v in waits)
    if len(cycle) == 1:
        kind, state = ("underflow", "no token can arrive") if w.kind == "get" else ("overflow", "no slot can free")
        verb = "gets from" if w.kind == "get" else "puts to"
        fills = "puts on" if w.kind == "get" else "gets from"
        msg = (f"stream '{w.target}': {w.instance} {verb} it at line {w.line}, where {state}: the stream's "
               f"only other end is {w.instance} itself, which {fills} it only later")
        return Diagnostic(kind, msg, _task(rec, w.instance), stream, w.line, w.instance, lines, _file(rec, w.instance))
    ring = " -> ".join(cycle + [cycle[0]])
    parts = "; ".join(_wait_text(rec, v, cycle[(i + 1) % len(cycle)]) for i, v in enumerate(waits))
    msg = f"deadlock: the instances {ring} each wait on the next: {parts}"
    return Diagnostic("deadlock", msg, _task(rec, w.instance), stream, w.line, w.instance, lines,
                      _file(rec, w.instance))


def _starved(rec: Recording, w: Wait) -> Diagnostic:
    kind = {"get": "underflow", "put": "overflow"}.get(w.kind, "collective")
    why = {"get": f"gets from '{w.target}' but no token will ever arrive",
           "put": f"puts to '{w.target}' but no slot will ever free",
           "allreduce": f"waits in allreduce of group '{w.target}' for members that never arrive"}[w.kind]
    ends = ", ".join(w.on) or "no instance"
    msg = f"{w.instance} {why} (line {w.line}); the other side ({ends}) has finished"
    stream = w.target if w.kind != "allreduce" else None
    return Diagnostic(kind, msg, _task(rec, w.instance), stream, w.line, w.instance, (w.line,), _file(rec, w.instance))
