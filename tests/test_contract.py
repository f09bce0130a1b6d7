"""The problem contract: one registry, typed decisions, options as the single source, one driver."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

import dfopt
from dfopt.cli import main
from dfopt.errors import InstanceError
from dfopt.models.base import Formulation
from dfopt.models.options import fields_of
from dfopt.models.registry import REGISTRY, get_problem, names
from dfopt.results import Termination
from dfopt.schema import get_schema
from dfopt.solution import Solution

ROOT = Path(__file__).resolve().parent.parent
PROBLEMS = [get_problem(n) for n in names()]
SHIPPED = {"fifo": "fifo/fig8f.json", "converter": "converter/fig5.json", "fusion": "fusion/diamond.json",
           "placement": "placement/chain-u55c.json", "memory": "memory/tight.json",
           "schedule": "schedule/jacobi-1d.json", "mapping": "mapping/ffn-2x4.json", "pipeline": "pipeline/ffn.json",
           "sparse": "sparse/spmv-karate.json"}


@pytest.fixture(scope="module")
def solved():
    out = {}
    for name, path in SHIPPED.items():
        inst = dfopt.load(ROOT / "instances" / path)
        out[name] = inst, dfopt.solve(inst, time_limit=20)
    return out


@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda p: p.name)
def test_every_problem_has_a_complete_record(problem):
    assert problem.info is REGISTRY[problem.name]
    assert problem.default in problem.formulation_names()
    assert len(set(problem.formulation_names())) == len(problem.formulations)
    for f in problem.formulations:
        assert isinstance(f, Formulation), f"{problem.name}: {f!r} is not a formulation"
        assert isinstance(f.solvers, tuple) and isinstance(f.exact, bool) and isinstance(f.bound, bool)
    assert dataclasses.is_dataclass(problem.decision) and problem.decision.__dataclass_params__.frozen
    assert dataclasses.is_dataclass(problem.options) and problem.options.__dataclass_params__.frozen


@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda p: p.name)
def test_options_are_described_and_every_number_is_bounded(problem):
    for f in fields_of(problem.options):
        assert f.help, f"{problem.name}.{f.name} has no help"
        if f.base in ("int", "float"):
            assert f.maximum is not None, f"{problem.name}.{f.name} has no maximum"
            assert f.minimum is not None or f.exclusive_minimum is not None, f"{problem.name}.{f.name} has no minimum"


@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda p: p.name)
def test_schema_options_are_generated_from_the_options_fields(problem):
    schema = get_schema("instance")["$defs"]["options"]["properties"][problem.name]
    assert set(schema["properties"]) == {f.name for f in fields_of(problem.options)}
    assert schema["additionalProperties"] is False
    assert schema["properties"]["formulation"]["enum"] == list(problem.formulation_names())


def test_registry_is_what_the_loader_the_schemas_and_the_solution_read():
    assert tuple(get_schema("instance")["$defs"]["problem"]["enum"]) == names()
    assert tuple(get_schema("solution")["properties"]["problem"]["enum"]) == names()
    from dfopt.instance import PROBLEMS as loader_problems

    assert loader_problems == names()
    with pytest.raises(InstanceError, match="unknown problem 'routing'"):
        dfopt.instance.from_dict({"format": "dfopt-instance/1", "name": "x", "problem": "routing"})


@pytest.mark.parametrize("name", list(SHIPPED))
def test_decision_round_trips_through_the_solution_file(solved, name):
    inst, sol = solved[name]
    assert sol.ok, [c for c in sol.checks if not c.ok]
    again = Solution.from_dict(json.loads(json.dumps(sol.to_dict())))
    assert again.decision == sol.decision
    assert isinstance(sol.status, Termination)
    assert all(c.ok for c in dfopt.check(inst, again))


@pytest.mark.parametrize("name", list(SHIPPED))
def test_objective_is_recomputed_from_the_decision(solved, name):
    inst, sol = solved[name]
    problem = get_problem(name)
    if name == "pipeline":
        assert sol.objective == sol.sections["fifo"]["makespan"]
        return
    data = problem.prepare(inst, dfopt.api.make_options(inst))
    assert problem.objective(data, sol.decision) == sol.objective


def test_pipeline_passes_typed_decisions_between_stages(solved):
    from dfopt.models.fusion import Partition

    _, sol = solved["pipeline"]
    assert isinstance(sol.decision.fusion, Partition)
    assert set(sol.decision.sections()) == {"fusion", "fifo", "memory", "placement"}


def test_dfopt_check_takes_parameters_from_the_options_not_the_solution(solved, tmp_path, capsys):
    inst, sol = solved["fusion"]
    path = tmp_path / "s.json"
    path.write_text(json.dumps(sol.to_dict()))
    instance = str(ROOT / "instances" / SHIPPED["fusion"])
    assert main(["check", instance, str(path)]) == 0
    assert main(["check", instance, str(path), "--c-max", "1"]) == 3       # the instance checked under c_max 1
    assert "FAIL fusion-capacity" in capsys.readouterr().out


@pytest.mark.parametrize("argv, text", [
    (["--formulation", "nosuch"], "argument --formulation: invalid choice: 'nosuch'"),
    (["--time-limit", "0"], "--time-limit: expected a value > 0, got 0"),
    (["--seed", "-1"], "--seed: expected a value >= 0, got -1"),
    (["--strategy", "slow"], "argument --strategy: invalid choice: 'slow'"),
    (["--emit-dir", "x"], "--emit-dir: writes the code of a mapping, pipeline or sparse design"),
])
def test_a_flags_error_names_the_flag(argv, text, capsys):
    assert main(["solve", str(ROOT / "instances" / SHIPPED["fifo"]), *argv]) == 2
    assert text in capsys.readouterr().err


def test_solve_help_lists_the_problems_options_with_defaults(capsys):
    assert main(["solve", str(ROOT / "instances" / SHIPPED["schedule"]), "--help"]) == 0
    out = capsys.readouterr().out
    assert "schedule options" in out and "--strategy {pluto,isl,feautrier,tensor}" in out
    assert "--objective" not in out                           # fifo's flag is not offered on a schedule
    assert main(["solve", str(ROOT / "instances" / SHIPPED["fifo"]), "--help"]) == 0
    out = capsys.readouterr().out
    assert "--strategy {normal,conservative}" in out and "(default: normal)" in out


def test_the_python_entry_points_take_the_ir():
    from dfopt.ir import DataflowGraph, Kernel, Stream

    g = DataflowGraph([Kernel("a", resources={"bytes": 10, "lut": 1000}), Kernel("b", resources={"bytes": 5})],
                      [Stream("e", "a", "b", tokens=4)])
    assert dfopt.fifo.size(g).ok
    assert dfopt.fusion.partition(g, c_max=16).decision.groups == (("a", "b"),)
    assert dfopt.placement.place(g, "u55c").objective == 0.0
    with pytest.raises(InstanceError, match="/graph/streams/0/tokens"):
        dfopt.fifo.size(DataflowGraph([Kernel("a"), Kernel("b")], [Stream("e", "a", "b", tokens=2**62)]))


def test_a_limit_that_stops_the_search_is_said_beside_the_status(capsys):
    from dfopt.bench.generators import random_fifo_dag
    from dfopt.instance import from_dict
    from dfopt.summary import solution_summary

    inst = from_dict(random_fifo_dag(60, seed=1))
    sol = dfopt.solve(inst, formulation="search", time_limit=0.2)
    assert sol.limit_reached and sol.to_dict()["limit_reached"] is True
    assert "stopped by its limit of 0.2 s" in solution_summary(inst, sol).splitlines()[0]
