"""Traces (dfopt.instance.traces, ``dfopt trace``): a simulated run written as a CSV or NPZ trace and
imported back gives schedules that reproduce it; every kind of bad trace is refused with its row or
stream; the command's output loads and its exit codes."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from tests.test_sim_property import SETTINGS, depth_maps
from tests.test_token_schedules import scheduled_graphs

import dfopt.instance.trace_files as trace_files
import dfopt.instance.traces as traces
from dfopt.cli import main
from dfopt.errors import InstanceError
from dfopt.instance import load, to_dict
from dfopt.instance.semantics import OFFSET_LIMIT
from dfopt.instance.traces import MAX_BLOCKS, Trace, apply_trace, read_trace
from dfopt.instance.types import Instance
from dfopt.ir.graph import DataflowGraph, Kernel, Stream
from dfopt.ir.tokens import Block, TokenSchedule
from dfopt.schema import get_schema
from dfopt.sim import simulate

HEADER = "kernel,stream,token,cycle\n"


def recorded(graph: DataflowGraph, result) -> dict:
    """The columns of a simulated run's trace: every write and read with its cycle."""
    cols: dict[str, list] = {"kernel": [], "stream": [], "token": [], "cycle": []}
    for name, s in graph.streams.items():
        for kernel, times in zip((s.src, s.dst), result.times(name)):
            cols["kernel"] += [kernel] * len(times)
            cols["stream"] += [name] * len(times)
            cols["token"] += list(range(len(times)))
            cols["cycle"] += times.tolist()
    return cols


def write_csv(path: Path, cols: dict, order=None) -> Path:
    rows = list(zip(cols["kernel"], cols["stream"], cols["token"], cols["cycle"]))
    if order is not None:
        rows = [rows[i] for i in order]
    path.write_text(HEADER + "".join(f"{k},{s},{t},{c}\n" for k, s, t, c in rows))
    return path


def write_npz(path: Path, cols: dict) -> Path:
    np.savez(path, kernel=np.array(cols["kernel"], dtype=str), stream=np.array(cols["stream"], dtype=str),
             token=np.array(cols["token"], dtype=np.int64), cycle=np.array(cols["cycle"], dtype=np.int64))
    return path


def pair(tokens=4, **stream) -> DataflowGraph:
    return DataflowGraph([Kernel("mm", delay=3), Kernel("out", ii=2)], [Stream("c", "mm", "out", tokens, **stream)])


def rows(kernel, token, cycle, stream="c") -> Trace:
    return Trace.from_rows(list(kernel), [stream] * len(kernel), token, cycle)


def fault(fn, *args) -> InstanceError:
    with pytest.raises(InstanceError) as info:
        fn(*args)
    return info.value


# -- the round trip ---------------------------------------------------------------------------

@SETTINGS
@given(st.data(), scheduled_graphs(dag=True), st.booleans())
def test_a_simulated_run_imported_back_is_its_own_nominal_schedule(tmp_path_factory, data, g, npz):
    """Every traced end's schedule is its recorded cycles less the first event's, and the imported
    graph runs exactly so, unbounded and at the recorded run's depths."""
    depths = data.draw(depth_maps(g))
    run = simulate(g, depths, record=True)
    assume(not run.deadlock)
    cols = recorded(g, run)
    folder = tmp_path_factory.mktemp("trace")
    path = write_npz(folder / "t.npz", cols) if npz else \
        write_csv(folder / "t.csv", cols, data.draw(st.permutations(range(len(cols["token"])))))
    trace = read_trace(path)
    before = [dataclasses.replace(s) for s in g.streams.values()]
    t0 = min(cols["cycle"], default=0)
    assert len(trace) == len(cols["token"]) and trace.first == t0
    imported = apply_trace(g, trace)
    again = simulate(imported, unbounded=True, record=True)
    bounded = simulate(imported, depths, record=True)
    for name, s in g.streams.items():
        w, r = run.times(name)
        t = imported.streams[name]
        if s.tokens:
            assert t.src_schedule.offsets().tolist() == (w - t0).tolist()
            assert t.dst_schedule.offsets().tolist() == (r - t0).tolist()
        else:                                  # no rows: the end keeps what it had
            assert (t.src_schedule, t.dst_schedule) == (s.src_schedule, s.dst_schedule)
        for res in (again, bounded):
            assert [x.tolist() for x in res.times(name)] == [(w - t0).tolist(), (r - t0).tolist()]
    assert list(g.streams.values()) == before                          # the input graph is left as it was


def test_csv_and_npz_read_alike_and_bursts_compress_into_one_block(tmp_path):
    tile = TokenSchedule((Block(27, ((2, 30), (4, 1))),))
    g = pair(tokens=8, src_schedule=tile)
    run = simulate(g, unbounded=True, record=True)
    cols = recorded(g, run)
    a, b = read_trace(write_csv(tmp_path / "t.csv", cols)), read_trace(write_npz(tmp_path / "t.npz", cols))
    assert (a.kernel_names, a.stream_names) == (b.kernel_names, b.stream_names)
    assert all(np.array_equal(getattr(a, f), getattr(b, f)) for f in ("kernel", "stream", "token", "cycle"))
    c = apply_trace(g, a).streams["c"]
    assert c.src_schedule == tile.shifted(-27)         # the first event, the burst's first write, is cycle 0
    assert c.dst_schedule.to_json() == [{"offset": 1, "loops": [[2, 30], [4, 2]]}]   # the reader follows each burst


def test_ends_not_in_the_trace_keep_their_timing():
    g = DataflowGraph([Kernel("a", delay=5), Kernel("b"), Kernel("c")],
                      [Stream("x", "a", "b", 2), Stream("y", "b", "c", 2, dst_schedule=TokenSchedule.steady(9, 1, 2))])
    out = apply_trace(g, Trace.from_rows(["b", "b"], ["x", "x"], [1, 0], [40, 30]))
    assert out.streams["x"].dst_schedule.offsets().tolist() == [0, 10]
    assert out.streams["x"].src_schedule is None and out.streams["y"] == g.streams["y"]
    assert g.streams["x"].dst_schedule is None                  # a copy; the input is left as it was
    assert apply_trace(g, Trace.from_rows([], [], [], [])).streams == g.streams


def test_the_zero_fill_wait_before_a_first_read_is_kept():
    """Cycles are relative to the design's first event, not to each kernel's: a consumer that reads
    13,000 cycles after the producer's first write keeps the wait."""
    t = rows(["mm"] * 2 + ["out"] * 2, [0, 1, 0, 1], [500, 501, 13500, 13501])
    c = apply_trace(pair(tokens=2), t).streams["c"]
    assert c.src_schedule.offsets().tolist() == [0, 1] and c.dst_schedule.offsets().tolist() == [13000, 13001]


def test_the_block_limit_is_the_schemas():
    assert get_schema("instance")["$defs"]["token_schedule"]["anyOf"][1]["maxItems"] == MAX_BLOCKS


# -- faults of a trace against a graph ---------------------------------------------------------

@pytest.mark.parametrize("trace, pointer, needle", [
    (Trace.from_rows(["mm"], ["cc"], [0], [1]), "/trace/row/0", "stream 'cc' is not in the instance, did you mean 'c'?"),
    (rows(["mm", "outt"], [0, 1], [1, 2]), "/trace/row/1", "kernel 'outt' is not in the instance, did you mean 'out'?"),
    (rows(["mm", "ghost"], [0, 1], [1, 2]), "/trace/row/1", "kernel 'ghost' is not in the instance;"),
    (Trace.from_rows(["mm", "x"], ["d", "d"], [0, 1], [1, 1]), "/trace/row/0",
     "kernel 'mm' is neither end of stream 'd' (x -> y)"),
    (rows(["mm"] * 3, [0, 1, 1], [1, 2, 3]), "/trace/row/2", "stream 'c': token 1 written twice (rows 1 and 2)"),
    (rows(["mm"] * 3, [0, 1, 3], [1, 2, 3]), "/trace",
     "stream 'c': the trace has 3 of its 4 writes (by kernel 'mm'); token 2 is missing"),
    (rows(["out"] * 3, [0, 1, 2], [1, 2, 3]), "/trace",
     "stream 'c': the trace has 3 of its 4 reads (by kernel 'out'); token 3 is missing"),
    (rows(["mm"] * 5, [0, 1, 2, 3, 4], [1, 2, 3, 4, 5]), "/trace/row/4",
     "stream 'c': token 4, but the stream carries 4 tokens (0 to 3)"),
    (rows(["out"] * 4, [0, 1, 2, 3], [1, 5, 4, 6]), "/trace/row/2",
     "stream 'c': the read of token 2 at cycle 4 comes before token 1's at cycle 5 (row 1)"),
    (rows(["mm"] * 4, [0, 1, 2, 3], [0, 1, 2, OFFSET_LIMIT + 1]), "/trace",
     "the trace spans 1125899906842625 cycles from its first event (cycle 0), above the limit 2^50"),
])
def test_each_fault_is_refused_with_its_row_or_stream(trace, pointer, needle):
    g = DataflowGraph([Kernel("mm"), Kernel("out"), Kernel("x"), Kernel("y")],
                      [Stream("c", "mm", "out", 4), Stream("d", "x", "y", 4)])
    err = fault(apply_trace, g, trace)
    assert any(p.pointer == pointer and needle in p.message for p in err.problems), str(err)


def test_a_stream_from_a_kernel_to_itself_cannot_be_traced():
    g = DataflowGraph([Kernel("k")], [Stream("loop", "k", "k", 1)])
    err = fault(apply_trace, g, Trace.from_rows(["k"], ["loop"], [0], [3]))
    assert "joins kernel 'k' to itself" in str(err)


def test_every_fault_is_listed_up_to_a_limit():
    n = traces.MAX_FAULTS + 5
    g = DataflowGraph([Kernel("a"), Kernel("b")], [Stream("e", "a", "b", 1)])
    err = fault(apply_trace, g, Trace.from_rows(["a"] * n, [f"s{i}" for i in range(n)], [0] * n, [0] * n))
    assert len(err.problems) == traces.MAX_FAULTS + 1 and "... and 5 more faults" in str(err)


def test_from_rows_refuses_negative_and_fractional_numbers():
    assert "/trace/row/1: cycle -4 is negative" in str(fault(Trace.from_rows, "ab", "ee", [0, 0], [3, -4]))
    assert "/trace/row/0: token 0.5 is not a whole number" in str(fault(Trace.from_rows, "a", "e", [0.5], [3]))
    assert Trace.from_rows("a", "e", [2.0], [3.0]).token.tolist() == [2]
    assert "/trace/token: expected integers" in str(fault(Trace.from_rows, "a", "e", [True], [3]))
    assert "four columns of one length" in str(fault(Trace.from_rows, "ab", "e", [0], [3]))


# -- faults of a trace file ------------------------------------------------------------------

@pytest.mark.parametrize("text, pointer, needle", [
    ("", "/trace", "the trace is empty; expected a CSV whose first line is the header kernel,stream,token,cycle"),
    ("kernel,stream,tokn,cycle\n", "/trace/header", "unknown column 'tokn', did you mean 'token'?"),
    ("kernel,stream,token\n", "/trace/header", "got the columns kernel,stream,token"),
    (HEADER + "a,e,0,1\na,e,1\n", "/trace/row/1", "expected 4 fields (kernel,stream,token,cycle), got 3"),
    (HEADER + "a,e,0,1\n\na,e,1.5,2\n", "/trace/row/1", "token '1.5' is not an integer"),
    (HEADER + "a,e,x,2\n", "/trace/row/0", "token 'x' is not an integer"),
    (HEADER + "a,e,0,-2\n", "/trace/row/0", "cycle -2 is negative"),
    (HEADER + "a,e,0,1\na,e,1,99999999999999999999\n", "/trace/row/1", "cycle '99999999999999999999' is too large"),
])
def test_bad_csv_files_name_the_row(tmp_path, text, pointer, needle):
    err = fault(read_trace, _file(tmp_path / "t.csv", text))
    assert err.pointer == pointer and needle in err.problems[0].message, str(err)


def test_csv_columns_in_any_order_quoted_names_and_empty_lines(tmp_path):
    t = read_trace(_file(tmp_path / "t.csv", 'cycle,token,stream,kernel\r\n7,0,"e,1",a\r\n\r\n9,1,"e,1",a\r\n'))
    assert (t.kernel_names, t.stream_names, t.token.tolist(), t.cycle.tolist()) == (("a",), ("e,1",), [0, 1], [7, 9])


def test_a_long_csv_is_refused_before_it_is_parsed(tmp_path, monkeypatch):
    path = _file(tmp_path / "t.csv", HEADER + "a,e,0,1\n" * 11)
    monkeypatch.setattr(trace_files, "_parse_chunk", _never)
    assert "the trace has 11 rows, above the limit of 10 (max_rows)" in str(fault(read_trace, path, 10))


def test_a_long_npz_is_refused_before_it_is_loaded(tmp_path, monkeypatch):
    cols = {"kernel": ["a"] * 11, "stream": ["e"] * 11, "token": list(range(11)), "cycle": list(range(11))}
    path = write_npz(tmp_path / "t.npz", cols)
    monkeypatch.setattr(trace_files.np, "load", _never)
    assert "the trace has 11 rows, above the limit of 10" in str(fault(read_trace, path, 10))


def test_chunked_csv_reading_numbers_rows_across_chunks(tmp_path, monkeypatch):
    monkeypatch.setattr(trace_files, "_CHUNK_ROWS", 3)
    body = "".join(f"{'ab'[i % 2]},e{i % 3},{i},{i}\n" for i in range(8)) + "a,e0,1,-1\n"
    err = fault(read_trace, _file(tmp_path / "t.csv", HEADER + body))
    assert err.pointer == "/trace/row/8"
    t = read_trace(_file(tmp_path / "u.csv", HEADER + body[:body.rindex("a,e0")]))
    assert t.kernel_names == ("a", "b") and [t.stream_names[c] for c in t.stream[:4]] == ["e0", "e1", "e2", "e0"]


@pytest.mark.parametrize("arrays, needle", [
    ({"kernel": ["a"], "stream": ["e"], "token": [0]}, "expected the arrays kernel, stream, token, cycle, got no array 'cycle'"),
    ({"kernel": ["a"], "stream": ["e"], "token": [0], "cycle": [1], "x": [1]}, "got an unknown array 'x'"),
    ({"kernel": ["a"], "stream": ["e"], "token": [0, 1], "cycle": [1]}, "four arrays of one length"),
    ({"kernel": [["a"]], "stream": ["e"], "token": [0], "cycle": [1]}, "/trace/kernel: expected a 1-D array"),
    ({"kernel": [1], "stream": ["e"], "token": [0], "cycle": [1]}, "/trace/kernel: expected kernel names as strings"),
    ({"kernel": ["a"], "stream": ["e"], "token": [0], "cycle": [1.5]}, "/trace/row/0: cycle 1.5 is not a whole number"),
    ({"kernel": ["a"], "stream": ["e"], "token": [-1], "cycle": [1]}, "/trace/row/0: token -1 is negative"),
])
def test_bad_npz_files(tmp_path, arrays, needle):
    path = tmp_path / "t.npz"
    np.savez(path, **{k: np.array(v) for k, v in arrays.items()})
    assert needle in str(fault(read_trace, path))


def test_an_npz_of_python_objects_needs_no_pickle(tmp_path):
    path = tmp_path / "t.npz"
    np.savez(path, kernel=np.array(["a"], dtype=object), stream=np.array(["e"]), token=[0], cycle=[1])
    assert "does not read without pickle" in str(fault(read_trace, path))


def test_unreadable_files(tmp_path):
    assert "no such file" in str(fault(read_trace, tmp_path / "none.csv"))
    (tmp_path / "bin.csv").write_bytes(b"\xff\xfe\x00kernel")
    assert "is not UTF-8 text" in str(fault(read_trace, tmp_path / "bin.csv"))
    (tmp_path / "bad.npz").write_bytes(b"PK\x03\x04 not a zip")
    assert "the NPZ does not read" in str(fault(read_trace, tmp_path / "bad.npz"))


def _file(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _never(*args, **kwargs):
    raise AssertionError("the rows were read before the limit was checked")


# -- dfopt trace -------------------------------------------------------------------------------

@pytest.fixture
def instance(tmp_path) -> Path:
    g = pair(tokens=8, src_schedule=TokenSchedule((Block(27, ((2, 30), (4, 1))),)))
    path = tmp_path / "i.json"
    path.write_text(json.dumps(to_dict(Instance("pair", "fifo", graph=g, description="a burst"))))
    return path


def test_the_command_writes_the_instance_with_the_schedules(tmp_path, instance, capsys):
    g = load(instance).graph
    trace = write_csv(tmp_path / "t.csv", recorded(g, simulate(g, unbounded=True, record=True)))
    out = tmp_path / "out.json"
    assert main(["trace", str(instance), str(trace), "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"wrote {out}: 2 stream ends of 1 streams scheduled from 16 events (2 blocks" in printed
    traced = load(out)
    assert traced.name == "pair" and traced.description == "a burst"
    assert traced.graph.streams == apply_trace(g, read_trace(trace)).streams
    assert sorted(p.name for p in tmp_path.iterdir()) == ["i.json", "out.json", "t.csv"]    # no temporary left
    assert main(["solve", str(out), "--quiet"]) == 0


def test_the_command_exit_codes(tmp_path, instance, capsys):
    bad = _file(tmp_path / "t.csv", HEADER + "mm,c,0,5\nmm,c,0,6\n")
    assert main(["trace", str(instance), str(bad), "-o", str(tmp_path / "o.json")]) == 2
    err = capsys.readouterr().err
    assert f"bad input in {bad}" in err and "/trace/row/1: stream 'c': token 0 written twice" in err
    assert "Traceback" not in err and not (tmp_path / "o.json").exists()
    assert main(["trace", str(instance), str(tmp_path / "none.csv"), "-o", str(tmp_path / "o.json")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["trace", str(instance), str(bad), "-o", str(tmp_path / "no" / "o.json")]) == 2
    assert "--output:" in capsys.readouterr().err
    assert main(["trace", str(instance), str(bad)]) == 2                         # -o is required
    assert "required: -o/--output" in capsys.readouterr().err
    root = Path(__file__).resolve().parents[1]
    schedule = sorted((root / "instances" / "schedule").glob("*.json"))[0]
    assert main(["trace", str(schedule), str(bad), "-o", str(tmp_path / "o.json")]) == 2
    assert "/graph: a trace gives the schedules of a graph's streams" in capsys.readouterr().err
