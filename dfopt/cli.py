"""The ``dfopt`` command: parse arguments, call the library, format, map errors to exit codes.

Exit codes (DESIGN 8): 0 solved, 2 bad input or usage, 3 infeasible, 4 no solution within the
limit, 5 solver unavailable, 1 internal error.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys

from dfopt import __version__
from dfopt.errors import DfoptError, InstanceError, NoSolutionError

EXIT_OK, EXIT_INTERNAL, EXIT_USAGE = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # usage errors exit 2 with one clear line, like bad input
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"dfopt: error: {message}\n")


def _option_fields() -> dict:
    """Every model option field (name -> dataclass field), for the solve flags."""
    from dfopt.models import MODEL_NAMES, get_model

    fields = {}
    for problem in MODEL_NAMES:
        for f in dataclasses.fields(get_model(problem).Options):
            fields.setdefault(f.name, f)
    return fields


def _json_arg(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise argparse.ArgumentTypeError(f"expected JSON, got {text!r} ({err.msg})") from None


def _add_option_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--formulation", help="formulation name (default: the model's)")
    p.add_argument("--solver", help="solver backend name (default: the formulation's)")
    p.add_argument("--time-limit", type=float, dest="time_limit", help="seconds (default 60)")
    p.add_argument("--seed", type=int, help="random seed (default 0)")
    common = {"formulation", "solver", "time_limit", "seed"}
    for name, f in _option_fields().items():
        if name in common:
            continue
        flag = "--" + name.replace("_", "-")
        kind = f.type.replace(" | None", "") if isinstance(f.type, str) else f.type
        if kind in ("bool", bool):
            p.add_argument(flag, dest=name, action=argparse.BooleanOptionalAction, default=None)
        elif kind in ("dict", "tuple", dict, tuple):
            p.add_argument(flag, dest=name, type=_json_arg, default=None, help=f"model option {name} (JSON)")
        else:
            conv = {"int": int, "float": float}.get(str(kind), str)
            p.add_argument(flag, dest=name, type=conv, default=None, help=f"model option {name}")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="dfopt", description="Solver models for dataflow-accelerator compilers.")
    parser.add_argument("--version", action="version", version=f"dfopt {__version__}")
    parser.add_argument("--debug", action="store_true", help="log progress and show tracebacks")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("solve", help="solve an instance, check it, write the solution")
    p.add_argument("instance")
    p.add_argument("-o", "--output", help="solution file (written atomically)")
    p.add_argument("--json", action="store_true", help="print the solution JSON instead of a summary")
    p.add_argument("--plot", metavar="PNG", help="draw the solution: token curves and a Gantt chart (fifo), slots and crossing streams (placement)")
    p.add_argument("--plot-streams", metavar="S1,S2", help="streams to draw (default: the deepest)")
    p.add_argument("--emit-dir", metavar="DIR", help="pipeline: write the HLS C++ project, its data and a "
                                                     "Makefile whose 'make -C DIR csim' checks it against NumPy; "
                                                     "mapping: write the MLIR-AIE design as DIR/<name>.mlir and "
                                                     "DIR/<name>.generic.mlir")
    _add_option_flags(p)

    p = sub.add_parser("check", help="re-run every checker on a solution file")
    p.add_argument("instance")
    p.add_argument("solution")
    p.add_argument("--simulate", choices=("auto", "always", "never"), default="auto",
                   help="fifo: run the bounded simulation (auto: small graphs, or when no witness proves the depths)")

    p = sub.add_parser("validate", help="load an instance and report every problem in it")
    p.add_argument("instance")

    p = sub.add_parser("bench", help="run a benchmark suite")
    p.add_argument("suite")
    p.add_argument("-o", "--output", default=None, help="output folder (default bench-out/<suite>)")
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--only", default=None, help="run only the runs whose id contains this text")

    p = sub.add_parser("schema", help="print a JSON Schema (instance or solution)")
    p.add_argument("kind", nargs="?", default="instance")

    p = sub.add_parser("plot", help="draw a fifo solution (token curves, Gantt chart) or a placement (slots, crossing streams)")
    p.add_argument("instance")
    p.add_argument("solution")
    p.add_argument("-o", "--output", required=True, metavar="PNG")
    p.add_argument("--streams", metavar="S1,S2", default=None)
    return parser


def _out(text: str) -> None:
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


def cmd_solve(args) -> int:
    from dfopt.api import solve_instance
    from dfopt.instance import load
    from dfopt.io import write_json_atomic
    from dfopt.summary import solution_summary

    instance = load(args.instance)
    if args.emit_dir and instance.problem not in ("pipeline", "mapping"):
        raise InstanceError(f"--emit-dir writes the code of a pipeline design or a mapping; {args.instance} is a "
                            f"{instance.problem!r} instance")
    overrides = {name: getattr(args, name) for name in _option_fields() if getattr(args, name, None) is not None}
    solution = solve_instance(instance, **overrides)
    mlir = None
    if args.emit_dir and solution.ok and instance.problem == "pipeline":
        from dfopt.pipeline import emit

        emit(instance, solution, args.emit_dir)
    elif args.emit_dir and solution.ok:
        from dfopt.codegen.aie.emit import write_mlir
        from dfopt.codegen.aie.mapping import design_from_mapping

        mlir = write_mlir(design_from_mapping(instance, solution), args.emit_dir, name=instance.name)
    if args.output:
        write_json_atomic(args.output, solution.to_dict())
    if args.plot:
        _plot(instance, solution, args.plot, _split(args.plot_streams))
    _out(json.dumps(solution.to_dict(), indent=1) if args.json else solution_summary(instance, solution, args.output))
    if mlir and not args.json:
        _out(f"  MLIR-AIE written to {mlir['custom']} and {mlir['generic']}")
    elif args.emit_dir and solution.ok and not args.json:
        _out(f"  HLS C++ written to {args.emit_dir}; run: make -C {args.emit_dir} csim")
    if not solution.ok:
        return EXIT_INTERNAL
    return EXIT_OK


def _split(text):
    return [s.strip() for s in text.split(",") if s.strip()] if text else None


def cmd_check(args) -> int:
    from dfopt.api import check_solution
    from dfopt.instance import load, load_solution

    instance = load(args.instance)
    solution = load_solution(args.solution)
    if solution.problem != instance.problem or solution.instance != instance.name:
        raise InstanceError(f"the solution is for {solution.problem} instance {solution.instance!r}, "
                            f"not {instance.problem} instance {instance.name!r}", pointer="/instance")
    kwargs = {"simulate_mode": args.simulate} if solution.problem == "fifo" else {}
    results = check_solution(instance, solution, **kwargs)
    for c in results:
        _out(f"{'ok  ' if c.ok else 'FAIL'} {c.name}")
        for d in c.details[:20]:
            _out(f"     {d}")
    return EXIT_OK if all(c.ok for c in results) else 3


def cmd_validate(args) -> int:
    from dfopt.instance import load

    inst = load(args.instance)
    g = inst.graph
    size = f", {len(g.kernels)} kernels, {len(g.streams)} streams" if g is not None else ""
    _out(f"{args.instance}: valid {inst.problem} instance {inst.name!r}{size}")
    return EXIT_OK


def cmd_bench(args) -> int:
    import os

    from dfopt.bench import main_bench

    out = args.output or os.path.join("bench-out", os.path.splitext(os.path.basename(args.suite))[0])
    records, summary = main_bench(args.suite, out, jobs=args.jobs, only=args.only)
    _out(summary)
    _out(f"{len(records)} runs; records in {out}/records.jsonl")
    return EXIT_OK


def cmd_schema(args) -> int:
    from dfopt.schema import get_schema

    _out(json.dumps(get_schema(args.kind), indent=1))
    return EXIT_OK


def _plot(instance, solution, path, streams=None) -> None:
    from dfopt.plot import plot_fifo, plot_placement

    if solution.problem == "placement":
        plot_placement(instance, solution, path)
    elif solution.problem == "fifo":
        plot_fifo(instance, solution, path, streams=streams)
    else:
        raise InstanceError(f"no plot for problem {solution.problem!r} (plots exist for fifo and placement)")


def cmd_plot(args) -> int:
    from dfopt.instance import load, load_solution

    _plot(load(args.instance), load_solution(args.solution), args.output, _split(args.streams))
    _out(f"wrote {args.output}")
    return EXIT_OK


COMMANDS = {"solve": cmd_solve, "check": cmd_check, "validate": cmd_validate, "bench": cmd_bench,
            "schema": cmd_schema, "plot": cmd_plot}


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.debug else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        return COMMANDS[args.command](args)
    except NoSolutionError as err:
        sys.stderr.write(f"dfopt: no solution: {err}\n")
        return err.exit_code
    except InstanceError as err:
        where = getattr(args, "instance", None)
        sys.stderr.write(f"dfopt: bad input{f' in {where}' if where else ''}:\n")
        sys.stderr.write("".join(f"  {p}\n" for p in err.problems))
        return err.exit_code
    except DfoptError as err:
        kind = type(err).__name__.replace("Error", "").lower() or "error"
        sys.stderr.write(f"dfopt: {kind}: {err}\n")
        return err.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("dfopt: interrupted\n")
        return 130
    except Exception as err:  # an internal fault: one line, the traceback only with --debug
        if args.debug:
            raise
        sys.stderr.write(f"dfopt: internal error: {type(err).__name__}: {err} (run with --debug for details)\n")
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
