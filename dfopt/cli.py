"""The ``dfopt`` command: parse arguments, call the library, format, map errors to exit codes.

Exit codes (docs/design.md, errors and exit codes): 0 solved, 2 bad input or usage, 3 infeasible
or a failed check, 4 no solution within the limit, 5 solver unavailable, 1 internal error.

``dfopt solve`` and ``dfopt check`` take the options of the instance's problem as flags, made
from the fields of the problem's Options (:mod:`dfopt.models.options`): ``dfopt solve INSTANCE
--help`` lists them with their values and defaults.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from dfopt import __version__
from dfopt.errors import DfoptError, InfeasibleError, InstanceError, NoSolutionError

if TYPE_CHECKING:
    from dfopt.models.base import Problem

EXIT_OK, EXIT_INTERNAL, EXIT_USAGE, EXIT_FAILED = 0, 1, 2, 3


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # usage errors exit 2 with one clear line, like bad input
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"dfopt: error: {message}\n")


def _json_arg(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise argparse.ArgumentTypeError(f"expected JSON, got {text!r} ({err.msg})") from None


def _number(kind):
    def parse(text: str):
        try:
            return kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {'an integer' if kind is int else 'a number'}, "
                                             f"got {text!r}") from None
    parse.__name__ = kind.__name__
    return parse


def add_option_flags(p: argparse.ArgumentParser, problem: Problem) -> list[str]:
    """One flag per field of ``problem``'s Options (with its help, choices and default); returns
    the field names."""
    from dfopt.models.options import fields_of

    group = p.add_argument_group(f"{problem.name} options ({problem.title}; also options.{problem.name} "
                                 "of the instance)")
    names = []
    for f in fields_of(problem.options):
        if not f.flag:
            continue
        names.append(f.name)
        choices = f.choices or (problem.formulation_names() if f.name == "formulation" else None)
        default = problem.default if f.name == "formulation" else f.default_text()
        text = f"{f.help} (default: {default})" if f.help else f"default: {default}"
        if f.base == "bool":
            group.add_argument(f.flag_name, dest=f.name, action=argparse.BooleanOptionalAction, default=None,
                               help=text)
        elif f.base == "json":
            group.add_argument(f.flag_name, dest=f.name, type=_json_arg, default=None, metavar=f.metavar or "JSON",
                               help=text + " (JSON)")
        else:
            conv = {"int": _number(int), "float": _number(float)}.get(f.base, str)
            metavar = f.metavar or {"int": "N", "float": "X"}.get(f.base, "TEXT")
            group.add_argument(f.flag_name, dest=f.name, type=conv, default=None, choices=choices,
                               metavar=None if choices else metavar, help=text)
    return names


def _peek_problem(argv: list, command: str):
    """The problem record of the instance named in ``argv`` (for its flags), or None."""
    from dfopt.models.registry import REGISTRY, get_problem

    try:
        i = argv.index(command)
    except ValueError:
        return None
    for arg in argv[i + 1:]:
        if arg.startswith("-"):
            continue
        if arg.endswith(".onnx"):                   # an ONNX model is imported as a pipeline instance
            return get_problem("pipeline")
        try:
            with open(arg, encoding="utf-8") as fh:
                name = json.load(fh).get("problem")
        except (OSError, ValueError, AttributeError):
            return None
        return get_problem(name) if isinstance(name, str) and name in REGISTRY else None
    return None


def build_parser(problems: dict | None = None) -> argparse.ArgumentParser:
    """The parser; ``problems`` maps a command (``solve``, ``check``) to the problem whose flags it takes."""
    from dfopt.models.registry import names

    problems = problems or {}
    parser = _Parser(prog="dfopt", description="Solver models for dataflow-accelerator compilers.")
    parser.add_argument("--version", action="version", version=f"dfopt {__version__}")
    parser.add_argument("--debug", action="store_true", help="log progress and show tracebacks")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    later = (f"the problem's options ({', '.join(names())}) come with the instance: "
             "run 'dfopt solve INSTANCE --help' to list them")

    p = sub.add_parser("solve", help="solve an instance, check it, write the solution",
                       epilog=None if problems.get("solve") else later)
    p.add_argument("instance")
    p.add_argument("-o", "--output", help="solution file (written atomically, only when every check passes)")
    p.add_argument("--json", action="store_true", help="print the solution JSON instead of a summary")
    p.add_argument("--keep-failed", action="store_true",
                   help="write the solution even when a check fails (marked \"rejected\"); the exit code stays 3")
    p.add_argument("--quiet", action="store_true", help="no progress display on stderr")
    p.add_argument("--plot", metavar="PNG", help="draw the solution (problems with a drawing: fifo, placement)")
    p.add_argument("--plot-streams", metavar="S1,S2", help="fifo: streams to draw (default: the deepest)")
    p.add_argument("--emit-dir", metavar="DIR", help="write the design's code (pipeline: HLS C++; mapping: "
                                                     "MLIR-AIE; sparse: the result, binding table and graph)")
    p.add_argument("--force", action="store_true", help="--emit-dir: replace an existing non-empty folder")
    _add_import_flags(p.add_argument_group("ONNX import (INSTANCE is a MODEL.onnx; docs/onnx.md)"))
    p.set_defaults(option_names=add_option_flags(p, problems["solve"]) if problems.get("solve") else [])

    p = sub.add_parser("import", help="import an ONNX model as a pipeline instance (docs/onnx.md)")
    p.add_argument("model", metavar="MODEL.onnx")
    p.add_argument("-o", "--output", required=True, metavar="INSTANCE.json", help="the instance (written atomically)")
    _add_import_flags(p)

    p = sub.add_parser("check", help="re-run every checker on a solution file, with the instance's options "
                                     "and those given here", epilog=None if problems.get("check") else later)
    p.add_argument("instance")
    p.add_argument("solution")
    p.set_defaults(option_names=add_option_flags(p, problems["check"]) if problems.get("check") else [])

    p = sub.add_parser("validate", help="load an instance and report every problem in it")
    p.add_argument("instance")

    p = sub.add_parser("bench", help="run a benchmark suite")
    p.add_argument("suite")
    p.add_argument("-o", "--output", default=None, help="output folder (default bench-out/<suite>)")
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--only", default=None, help="run only the runs whose id contains this text")

    p = sub.add_parser("explore", help="search a design space with Optuna (pipeline knobs, schedule "
                                       "configurations; docs/explore.md)")
    p.add_argument("instance", nargs="?", help="the instance (not with --join)")
    p.add_argument("-o", "--output", metavar="DIR", help="output folder: study journal, trials.csv, best.sol.json, "
                                                          "plots (default explore-out/<instance name>)")
    p.add_argument("--trials", type=_number(int), default=50, metavar="N",
                   help="trials the study holds when done (a resumed study runs the missing ones; default 50)")
    p.add_argument("--timeout", type=_number(float), default=None, metavar="S", help="stop after S seconds")
    p.add_argument("--seed", type=_number(int), default=0, metavar="N",
                   help="sampler seed (one worker: the same trials again)")
    p.add_argument("--storage", metavar="URL", help="a journal file, or an SQLAlchemy URL such as "
                                                    "postgresql+psycopg2://user@host/db (default DIR/study.journal)")
    p.add_argument("--workers", type=_number(int), default=1, metavar="N", help="worker processes on this machine")
    p.add_argument("--study", metavar="NAME", help="the study's name (default: the instance's name and a hash)")
    p.add_argument("--join", metavar="STUDY", help="join an existing study of --storage as one more worker")
    p.add_argument("--heartbeat", type=_number(int), default=10, metavar="S",
                   help="relational storages: seconds between a worker's signs of life (a trial silent for 3 is "
                        "failed and run again)")
    p.add_argument("--space", type=_json_arg, metavar="JSON", help="the search space, over options.explore.space")
    p.add_argument("--objectives", metavar="A,B", help="objectives to minimise (pipeline: latency, utilization, "
                                                       "lut, dsp, bram, fifo_bits, ...; schedule: runtime)")
    p.add_argument("--sampler", choices=("auto", "tpe", "nsga2", "random"), default=None,
                   help="auto (default): TPE for one objective, NSGA-II for several")
    p.add_argument("--trial-time-limit", type=_number(float), default=None, metavar="S",
                   help="seconds each trial's solve may spend (default 60)")
    p.add_argument("--no-prune", action="store_true", help="run every trial to the end")
    p.add_argument("--dataset", choices=("mini", "small", "medium", "large", "extralarge"), default=None,
                   help="schedule: the dataset the generated C is timed at (default medium)")
    p.add_argument("--repeats", type=_number(int), default=None, metavar="N", help="schedule: timed runs per trial")
    p.add_argument("--emit-dir", metavar="DIR", help="write the best design's code")
    p.add_argument("--force", action="store_true", help="--emit-dir: replace an existing non-empty folder")
    p.add_argument("--quiet", action="store_true", help="no progress display on stderr")

    p = sub.add_parser("trace", help="attach the per-token schedules of a recorded run (cosim, LightningSim) to "
                                     "an instance's streams")
    p.add_argument("instance")
    p.add_argument("trace", help="CSV with the header kernel,stream,token,cycle (one row per write or read), or "
                                 "an NPZ with those four arrays")
    p.add_argument("-o", "--output", required=True, metavar="OUT.json",
                   help="the instance with the schedules (written atomically)")

    p = sub.add_parser("schema", help="print a JSON Schema (instance or solution)")
    p.add_argument("kind", nargs="?", default="instance")

    p = sub.add_parser("plot", help="draw a fifo solution (token curves, Gantt chart) or a placement (slots, "
                                    "crossing streams)")
    p.add_argument("instance")
    p.add_argument("solution")
    p.add_argument("-o", "--output", required=True, metavar="PNG")
    p.add_argument("--streams", metavar="S1,S2", default=None)
    return parser


def _add_import_flags(p) -> None:
    """The flags of an ONNX import (``dfopt import``, ``dfopt solve MODEL.onnx``)."""
    p.add_argument("--platform", default=None, help="the FPGA platform preset of the instance (default u280)")
    p.add_argument("--batch", type=_number(int), default=None, metavar="N",
                   help="the leading dimension of every input whose leading dimension is symbolic")
    p.add_argument("--dtype", default=None, choices=("f32", "f16", "bf16", "f64"),
                   help="import every float tensor as this dtype (float-to-float Casts dropped)")
    p.add_argument("--input-shape", action="append", default=None, metavar="NAME=1x32",
                   help="the shape of a graph input (repeat for several inputs)")
    p.add_argument("--name", default=None, help="the instance's name (default: the model file's name)")
    p.add_argument("--inputs", default=None, metavar="FILE.npz",
                   help="the model's inputs (arrays keyed by the ONNX graph's input names) for the import's check "
                        "against onnx.reference and the emitted test bench (default: random)")


_IMPORT_FLAGS = ("platform", "batch", "dtype", "input_shape", "name", "inputs")


def _onnx_instance(path: str, args) -> tuple[dict, tuple, Any]:
    """The instance of the model at ``path``, the import's notes and its
    :class:`~dfopt.frontend.data.ModelData` (the weights, the inputs and the ONNX reference's
    outputs); a translation that disagrees with ``onnx.reference`` is a front-end fault."""
    from dfopt.frontend import import_onnx, input_shapes
    from dfopt.frontend.data import model_data, onnx_inputs, read_inputs
    from dfopt.frontend.onnx_import import instance_dict, load_model

    imported = import_onnx(path, input_shapes=input_shapes(args.input_shape), batch=args.batch, dtype=args.dtype)
    model = load_model(path)
    given = None if args.inputs is None else read_inputs(args.inputs, onnx_inputs(model, imported))
    data = model_data(model, imported, given)
    check = data.check()
    checked = (f"checked against onnx.reference on {data.inputs} inputs: "
               f"{'max abs error ' + format(data.max_error(), '.3g') if check.ok else 'MISMATCH'}")
    return instance_dict(imported, path, platform=args.platform, name=args.name, checked=checked), \
        imported.notes, data


def _load_instance(args):
    """``args.instance``: an instance file, or an ONNX model imported with the import flags."""
    from dfopt.instance import from_dict, load

    if not args.instance.endswith(".onnx"):
        given = [f for f in _IMPORT_FLAGS if getattr(args, f, None) is not None]
        if given:
            raise InstanceError(f"applies to an ONNX model (MODEL.onnx), not to {args.instance}",
                                pointer="--" + given[0].replace("_", "-"))
        return load(args.instance)
    data, notes, args.model_data = _onnx_instance(args.instance, args)
    for note in notes:
        sys.stderr.write(f"dfopt: note: {note}\n")
    return from_dict(data, source=args.instance)


def _out(text: str) -> None:
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


def _flag_options(args) -> dict:
    return {n: getattr(args, n) for n in getattr(args, "option_names", []) if getattr(args, n, None) is not None}


@contextlib.contextmanager
def _writing(flag: str):
    """An OSError while writing an output is bad input naming the flag (exit 2), not a fault."""
    try:
        yield
    except OSError as err:
        where = f"{err.filename}: " if getattr(err, "filename", None) else ""
        raise InstanceError(f"cannot write: {where}{err.strerror or err}", pointer=flag) from err


def _check_outputs(args) -> None:
    """The output paths, before anything is solved: exit 2 naming the flag when one cannot be
    written."""
    from dfopt.io import check_output_dir, check_output_file

    if getattr(args, "output", None):
        check_output_file(args.output, "--output")
    if getattr(args, "plot", None):
        check_output_file(args.plot, "--plot")
    if getattr(args, "emit_dir", None):
        check_output_dir(args.emit_dir, "--emit-dir", force=args.force)


def _hooks(problem, args) -> None:
    """``--emit-dir`` and ``--plot`` need the problem's hooks; the error names the flag."""
    if args.emit_dir and problem.emit is None:
        raise InstanceError(f"writes the code of a {_having('emit')} design; {args.instance} is a "
                            f"{problem.name!r} instance", pointer="--emit-dir")
    if args.plot and problem.plot is None:
        raise InstanceError(f"draws {_having('plot')} solutions; {args.instance} is a {problem.name!r} instance",
                            pointer="--plot")


def _having(hook: str) -> str:
    """The problems with a hook, as text: ``fifo or placement``."""
    names = [n for n in _registry_names() if getattr(_problem(n), hook) is not None]
    return " or ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)


def _registry_names():
    from dfopt.models.registry import names

    return names()


def _problem(name):
    from dfopt.models.registry import get_problem

    return get_problem(name)


def cmd_solve(args: argparse.Namespace) -> int:
    from dfopt import limits
    from dfopt.io import write_json_atomic
    from dfopt.models import driver
    from dfopt.progress import make_reporter, phase, reporting
    from dfopt.summary import solution_summary

    limits.start_command(getattr(args, "started", None))
    with reporting(make_reporter(sys.stderr, quiet=args.quiet or args.json)):
        with phase(f"loading {args.instance}"):
            instance = _load_instance(args)
        problem = _problem(instance.problem)
        _hooks(problem, args)
        _check_outputs(args)
        if args.emit_dir and instance.problem == "pipeline":    # a dtype HLS cannot emit: say so before solving
            from dfopt.codegen.hls.emit import check_dtypes

            check_dtypes(instance.operators)
        options = driver.make_options(instance, _flag_options(args), origin="flag")
        solution = driver.solve(instance, options)
    model = getattr(args, "model_data", None)
    if model is not None:                       # an imported model: the import's own check counts too
        solution.checks.append(model.check())
    written = None
    with _writing("--emit-dir"):
        if solution.ok and args.emit_dir:
            extra = {} if model is None else {"data": model}
            written = problem.emit(instance, solution, args.emit_dir, options=options, **extra)
    with _writing("--output"):
        if args.output and (solution.ok or args.keep_failed):
            solution.rejected = not solution.ok
            write_json_atomic(args.output, solution.to_dict())
    with _writing("--plot"):
        if args.plot and solution.ok:
            problem.plot(instance, solution, args.plot, streams=_split(args.plot_streams))
    shown = args.output if args.output and (solution.ok or args.keep_failed) else None
    _out(json.dumps(solution.to_dict(), indent=1) if args.json else solution_summary(instance, solution, shown))
    if not args.json and written is not None:
        _out(_emit_line(problem.name, args.emit_dir, written))
    _overrun_note(args, options.time_limit, solution.stats)
    if not solution.ok:
        failed = ", ".join(c.name for c in solution.failed_checks)
        kept = f"; written to {args.output} marked rejected" if args.output and args.keep_failed else \
            ("; no solution file written (--keep-failed writes it)" if args.output else "")
        sys.stderr.write(f"dfopt: the answer failed its checks ({failed}){kept}\n")
        return EXIT_FAILED
    return EXIT_OK


def _overrun_note(args: argparse.Namespace, limit: float, stats: dict) -> None:
    """Say so when the command ran past ``--time-limit`` by more than the stated overhead, with the
    time of each phase (dfopt.limits)."""
    from dfopt import limits

    took = time.perf_counter() - getattr(args, "started", time.perf_counter())
    if took <= limit + limits.STATED_OVERHEAD_S:
        return
    phases = [(k, stats.get(f"time_{k}_s")) for k in ("load", "prepare", "solve", "check")]
    text = ", ".join(f"{name} {value:.1f} s" for name, value in phases if isinstance(value, (int, float)))
    sys.stdout.flush()
    sys.stderr.write(f"dfopt: note: the command took {took:.1f} s, past --time-limit {limit:g} s ({text}; the "
                     "rest writing the output): solving is cut to fit the limit, loading, the problem data "
                     "and the checks are not\n")


def _emit_line(problem: str, out_dir: str, written) -> str:
    if problem == "sparse":
        targets = f", the Spatial program to {out_dir}/{written['spatial']}" if written.get("spatial") else ""
        if written.get("hls"):
            hls = written["hls"]
            targets += (f", the HLS C++ project to {out_dir}/hls ({len(hls['processes'])} processes, "
                        f"{hls['fifos']} FIFOs; make -C {out_dir}/hls csim)")
        return (f"  result written to {out_dir}/{written['result']}, the binding table to {out_dir}/binding.md, "
                f"the primitive graph to {out_dir}/graph.dot{targets} (docs/sparse.md)")
    if problem == "mapping":
        kernels = (f"{sum(1 for k in written if k.startswith('core_'))} core kernels, the XRT host program"
                   if "host" in written else "no core kernels (see design.json)")
        line = (f"  MLIR-AIE written to {written['custom']} and {written['generic']}, {kernels}; run: make -C "
                f"{out_dir} sim (on the host), xclbin, run (AMD's toolchain, an NPU; docs/aie.md)")
        reason = _kernels_reason(written.get("design"))
        return line + (f"\n  warning: {reason}" if reason else "")
    return (f"  HLS C++ written to {out_dir}; run: make -C {out_dir} csim (threaded), csim-vitis "
            "(Vitis's hls_stream.h), hls, xclbin (docs/hls.md)")


def _kernels_reason(design_json) -> str:
    """What design.json says about a folder whose kernels were written but will not build (a core
    over its data memory); empty otherwise."""
    if design_json is None:
        return ""
    try:
        kernels = json.loads(Path(design_json).read_text()).get("kernels", {})
    except (OSError, ValueError):
        return ""
    return str(kernels.get("reason") or "") if kernels.get("status") == "written" else ""


def _split(text):
    return [s.strip() for s in text.split(",") if s.strip()] if text else None


def cmd_import(args: argparse.Namespace) -> int:
    from dfopt.instance import from_dict
    from dfopt.io import check_output_file, write_json_atomic

    check_output_file(args.output, "--output")
    data, notes, model = _onnx_instance(args.model, args)
    check = model.check()
    if not check.ok:
        raise InstanceError("the imported operator graph disagrees with onnx.reference (a front-end fault; please "
                            "report it with the model): " + "; ".join(check.details), pointer="/graph")
    from_dict(data, source=args.model)           # what dfopt solve will load: the platform, the graph
    with _writing("--output"):
        write_json_atomic(args.output, data)
    ops = data["operators"]["ops"]
    _out(f"wrote {args.output}: pipeline instance {data['name']!r}, {len(ops)} ops on platform {data['platform']}")
    for note in notes:
        _out(f"  note: {note}")
    return EXIT_OK


def cmd_check(args: argparse.Namespace) -> int:
    from dfopt.instance import load, load_solution
    from dfopt.models import driver

    instance = load(args.instance)
    try:
        solution = load_solution(args.solution)
    except InstanceError as err:
        err.source = args.solution
        raise
    if solution.problem != instance.problem or solution.instance != instance.name:
        raise InstanceError(f"the solution is for {solution.problem} instance {solution.instance!r}, "
                            f"not {instance.problem} instance {instance.name!r}", pointer="/instance",
                            source=args.solution)
    options = driver.make_options(instance, _flag_options(args), origin="flag")
    results = driver.check(instance, solution, options)
    for c in results:
        _out(f"{'ok  ' if c.ok else 'FAIL'} {c.name}")
        for d in c.details[:20]:
            _out(f"     {d}")
    return EXIT_OK if all(c.ok for c in results) else EXIT_FAILED


def cmd_validate(args: argparse.Namespace) -> int:
    from dfopt.instance import load
    from dfopt.instance.budget import check_budget
    from dfopt.models import driver

    inst = load(args.instance)
    options = driver.make_options(inst)
    check_budget(inst, options.max_memory, options=options)     # what the solve would allocate
    note = ""
    try:
        driver.prepare(inst, options)                           # the problem's own refusals, as solve meets them
    except InfeasibleError as err:                              # well-formed, but no answer exists: say why
        note = f"; infeasible: {err}"
    g = inst.graph
    size = f", {len(g.kernels)} kernels, {len(g.streams)} streams" if g is not None else ""
    _out(f"{args.instance}: valid {inst.problem} instance {inst.name!r}{size}{note}")
    return EXIT_OK


def cmd_bench(args: argparse.Namespace) -> int:
    import os

    from dfopt.bench import main_bench

    out = args.output or os.path.join("bench-out", os.path.splitext(os.path.basename(args.suite))[0])
    records, summary = main_bench(args.suite, out, jobs=args.jobs, only=args.only)
    _out(summary)
    _out(f"{len(records)} runs; records in {out}/records.jsonl")
    return EXIT_OK


def cmd_explore(args: argparse.Namespace) -> int:
    import os

    from dfopt.explore import explore
    from dfopt.explore.report import summary_text
    from dfopt.io import check_output_dir
    from dfopt.progress import make_reporter, reporting

    if args.join:
        return _join(args)
    if not args.instance:
        raise InstanceError("give an instance, or --join STUDY with --storage", pointer="--join")
    from dfopt.instance import load

    instance = load(args.instance)
    out = args.output or os.path.join("explore-out", instance.name)
    if args.emit_dir:
        check_output_dir(args.emit_dir, "--emit-dir", force=args.force)
    settings = {"space": args.space, "objectives": args.objectives, "sampler": args.sampler,
                "trial_time_limit": args.trial_time_limit, "dataset": args.dataset, "repeats": args.repeats}
    if args.no_prune:
        settings["prune"] = False
    with reporting(make_reporter(sys.stderr, quiet=args.quiet)), _writing("--output"):
        result = explore(instance, trials=args.trials, timeout=args.timeout, seed=args.seed, storage=args.storage,
                         workers=args.workers, out_dir=out, study=args.study, emit_dir=args.emit_dir,
                         heartbeat=args.heartbeat,
                         **{k: v for k, v in settings.items() if v is not None})
    _out(summary_text(result.summary, result.config, out))
    if args.emit_dir and result.best:
        _out(f"  the best design's code written to {args.emit_dir}")
    return EXIT_OK if result.best else EXIT_FAILED


def _join(args: argparse.Namespace) -> int:
    from dfopt.explore.worker import run

    if args.instance:
        raise InstanceError("--join takes the study from --storage; give no instance", pointer="--join")
    if not args.storage:
        raise InstanceError("--join needs the --storage the study lives in", pointer="--storage")
    deadline = None if args.timeout is None else time.time() + args.timeout
    study, config, stats = run(args.storage, args.join, args.trials, args.seed, 1, deadline, args.output,
                               heartbeat=args.heartbeat)
    _out(f"joined study {study.study_name}: ran {stats.trials} trials, stopped by the {stats.stopped}; the study "
         f"holds {len(study.trials)}")
    return EXIT_OK


def cmd_trace(args: argparse.Namespace) -> int:
    import dataclasses

    from dfopt.instance import dump, load
    from dfopt.instance.traces import apply_trace, read_trace
    from dfopt.io import check_output_file

    check_output_file(args.output, "--output")
    instance = load(args.instance)
    if instance.graph is None:
        raise InstanceError(f"a trace gives the schedules of a graph's streams; this {instance.problem!r} instance "
                            "has none", pointer="/graph")
    try:
        trace = read_trace(args.trace)
        graph = apply_trace(instance.graph, trace)
    except InstanceError as err:
        err.source = args.trace
        raise
    with _writing("--output"):      # apply_trace checked what the loader checks of a schedule: the file loads
        dump(dataclasses.replace(instance, graph=graph, path=None), args.output)
    old = instance.graph.streams
    ends = [(s, key) for s in graph.streams.values() for key in ("src_schedule", "dst_schedule")
            if getattr(s, key) is not getattr(old[s.name], key)]
    blocks = sum(len(getattr(s, key).blocks) for s, key in ends)
    _out(f"wrote {args.output}: {len(ends)} stream ends of {len(graph.streams)} streams scheduled from {len(trace)} "
         f"events ({blocks} blocks; cycles from the trace's first event, cycle {trace.first})")
    return EXIT_OK


def cmd_schema(args: argparse.Namespace) -> int:
    from dfopt.schema import get_schema

    _out(json.dumps(get_schema(args.kind), indent=1))
    return EXIT_OK


def cmd_plot(args: argparse.Namespace) -> int:
    from dfopt.instance import load, load_solution
    from dfopt.io import check_output_file

    check_output_file(args.output, "--output")
    instance, solution = load(args.instance), load_solution(args.solution)
    problem = _problem(solution.problem)
    if problem.plot is None:
        raise InstanceError(f"no drawing for problem {solution.problem!r} (drawings exist for {_having('plot')})")
    problem.plot(instance, solution, args.output, streams=_split(args.streams))
    _out(f"wrote {args.output}")
    return EXIT_OK


COMMANDS = {"solve": cmd_solve, "import": cmd_import, "check": cmd_check, "validate": cmd_validate, "bench": cmd_bench,
            "explore": cmd_explore, "trace": cmd_trace, "schema": cmd_schema, "plot": cmd_plot}


def _bad_input(err: InstanceError, args) -> None:
    flags = all(p.pointer.startswith("--") for p in err.problems)
    source = getattr(err, "source", None) or getattr(args, "instance", None) or getattr(args, "model", None)
    if flags:
        sys.stderr.write("dfopt: bad command-line option:\n")
    else:
        sys.stderr.write(f"dfopt: bad input{f' in {source}' if source else ''}:\n")
    sys.stderr.write("".join(f"  {p}\n" for p in err.problems))


def _exit_on_sigterm() -> None:
    """A SIGTERM ends the command as an exception would (exit 143), so that a write in progress
    removes its temporary file or folder."""
    import signal
    import threading

    def stop(signum, frame):
        raise SystemExit(128 + signum)

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, stop)


def main(argv: Sequence[str] | None = None) -> int:
    started = time.perf_counter()         # dfopt solve's --time-limit counts from here (dfopt.limits)
    argv = list(sys.argv[1:] if argv is None else argv)
    problems = {}
    for command in ("solve", "check"):
        if command in argv:
            problem = _peek_problem(argv, command)
            if problem is not None:
                problems[command] = problem
    try:
        args = build_parser(problems).parse_args(argv)
    except SystemExit as done:            # --help, --version, or a usage error (already printed)
        return int(done.code or 0)
    logging.basicConfig(level=logging.INFO if args.debug else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    _exit_on_sigterm()
    args.started = started
    try:
        return COMMANDS[args.command](args)
    except NoSolutionError as err:
        sys.stderr.write(f"dfopt: no solution: {err}\n")
        return err.exit_code
    except InstanceError as err:
        _bad_input(err, args)
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
