"""The ``liftoff`` command line.

    liftoff solve CONFIG [--formulation lifted|nonlifted] [--barrier X] [--backend compiled|numpy]
                  [--init static|zero_torque] [--max-iterations N] [--tol X] [--out FILE] [--json] [--quiet]
    liftoff --version
    liftoff compare CONFIG... [--barrier 1e-1 1e-4] [--formulation ...] [--methods lifted ... sqp] [--init ...]
                    [--backend ...] [--max-iterations N] [--out DIR] [--json] [--quiet]
    liftoff report DIR
    liftoff mpc CONFIG [--duration S] [--push FRAME:FX,FY,FZ:T0:DT] [--mass-scale X] [--out DIR] [--json]
    liftoff sweep SPEC --out DIR [--workers N] [--scheduler ADDRESS|local] [--json] [--quiet]
    liftoff schema [--task gait|polishing|gait_mpc]
    liftoff view RESULT [--html FILE] [--speed X]
    liftoff info ROBOT [--fixed-base | --floating-base] [--lock JOINT=VALUE ...]
    liftoff bench dynamics [--robot anymal] [--batch 1 128] [--repeat N] [--json]
    liftoff bench constrained [--robot anymal talos] [--batch 1 128] [--algorithm ...] [--repeat N] [--json]
    liftoff bench constrained --scaling [--chain-sizes 8 16 32 64] [--tree-sizes 9 21 45 93] [--scaling-batch 32]
                              [--figure FILE]
    liftoff bench constrained --tables [--batch 1 128] [--repeat N]
    liftoff bench solve [--gait walk trot ...] [--repeat N] [--scaling] [--json]
    liftoff bench ddp [CONFIG...] [--json]

User errors (bad configuration file, unknown robot, joint or frame, malformed URDF, bad
arguments) print one line ``liftoff: error: ...`` on stderr and exit with status 2; a solve
that does not converge, or a benchmark that cannot run (Pinocchio missing, or disagreeing
with liftoff), exits with status 1.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

PROG = "liftoff"
USAGE_ERROR, RUN_ERROR = 2, 1


class UserError(ValueError):
    """A mistake in the command line, reported without a traceback."""


def _lock(text: str) -> tuple[str, float]:
    """``JOINT=VALUE`` -> ``(joint, value)``."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise UserError(f"--lock expects JOINT=VALUE, got {text!r}")
    try:
        number = float(value)
    except ValueError:
        raise UserError(f"--lock {text}: {value!r} is not a number") from None
    if not math.isfinite(number):
        raise UserError(f"--lock {text}: the value must be finite")
    return name.strip(), number


def _positive_int(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {n}")
    return n


def _range(start: int, size: int) -> str:
    return str(start) if size == 1 else f"{start}:{start + size}"


def _number(x: float) -> str:
    return "-" if not math.isfinite(x) else f"{x:g}"


def _limits(model, i: int) -> tuple[str, str, str]:
    """Position range, velocity and effort limits of joint ``i`` as table cells."""
    kind = model.joint_types[i]
    iq, iv = int(model.idx_q[i]), int(model.idx_v[i])
    if kind in ("revolute", "prismatic"):
        position = f"[{_number(model.lower_position_limit[iq])}, {_number(model.upper_position_limit[iq])}]"
    elif kind == "free_flyer":
        t = model.upper_position_limit[0]
        position = f"xyz in [{_number(-t)}, {_number(t)}]"
    else:  # continuous: (cos, sin) on the circle
        position = "unbounded"
    nv = int(model.nvs[i])
    if nv == 1:
        return position, _number(model.velocity_limit[iv]), _number(model.effort_limit[iv])
    velocity, effort = model.velocity_limit[iv : iv + nv], model.effort_limit[iv : iv + nv]
    return (
        position,
        _number(velocity[0]) if len(set(velocity)) == 1 else " ".join(map(_number, velocity)),
        _number(effort[0]) if len(set(effort)) == 1 else " ".join(map(_number, effort)),
    )


def info(args) -> int:
    from liftoff import dynamics

    locked = dict(_lock(item) for item in args.lock or ())
    model = dynamics.load(args.robot, floating_base=args.floating_base, locked_joints=locked or None)
    counts = {}
    for kind in model.frame_types:
        counts[kind] = counts.get(kind, 0) + 1
    print(f"robot    {model.name}" + (f"  ({args.robot})" if args.robot != model.name else ""))
    print(f"base     {'floating (free flyer)' if model.has_free_flyer else 'fixed'}")
    if locked:
        print("locked   " + ", ".join(f"{name}={value:g}" for name, value in locked.items()))
    print(f"nq, nv   {model.nq}, {model.nv}")
    print(f"njoints  {model.njoints}")
    print(f"nframes  {model.nframes}  (" + ", ".join(f"{n} {kind}" for kind, n in counts.items()) + ")")
    print(f"mass     {model.mass:.4f} kg")
    print()
    rows = [("#", "joint", "type", "q", "v", "position", "velocity", "effort")]
    for i, (name, kind) in enumerate(zip(model.joint_names, model.joint_types)):
        q, v = _range(int(model.idx_q[i]), int(model.nqs[i])), _range(int(model.idx_v[i]), int(model.nvs[i]))
        rows.append((str(i), name, kind, q, v, *_limits(model, i)))
    widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))]
    for row in rows:
        print(
            "  ".join(
                cell.rjust(w) if c in (0, 6, 7) else cell.ljust(w) for c, (cell, w) in enumerate(zip(row, widths))
            ).rstrip()
        )
    print()
    print("limits: position in rad or m, velocity in rad/s or m/s, effort in N m or N ('-': none)")
    return 0


def solve(args) -> int:
    from liftoff.problems.files import check_output
    from liftoff.problems.studies.runs import default_path, prepare, save_run, solve_prepared, summary
    from liftoff.solvers.ipm import LOG_HEADER, format_final, format_log

    config = _gait_configuration(args.config)  # user errors raise here
    overrides = {k: getattr(args, k) for k in ("formulation", "barrier", "backend", "init", "max_iterations", "tol")}
    with _source(args.config):
        config, problem = prepare(config, **overrides)
    out = check_output(args.out or default_path(config))  # before the solve, not after
    stream = sys.stderr if args.json else sys.stdout

    def log(line):
        if not args.quiet:
            print(line, file=stream, flush=True)

    n = problem.sizes()
    log(
        f"{config.name}: {config.solver.formulation}, barrier {config.solver.barrier:g}, {problem.backend} stages; "
        f"{n['stages']} stages ({n['impulses']} impulse{'' if n['impulses'] == 1 else 's'}), "
        f"{n['variables']} variables, {n['equalities']} equalities, "
        f"{n['inequalities']} inequalities"
    )
    log(LOG_HEADER)
    run = solve_prepared(config, problem, callback=lambda h: log(format_log(h)))
    log(format_final(run.result))
    path = save_run(run, out)
    r = run.result
    if args.json:
        print(json.dumps({**summary(run), "results_file": str(path)}))
    else:
        print(
            f"{r.status}: {r.message}; cost {r.cost:.6e}, max constraint violation {r.max_constraint_violation:.1e}, "
            f"{r.solve_time_s:.2f} s\nsaved {path}"
        )
    return 0 if r.converged else RUN_ERROR


@contextmanager
def _source(path):
    """Problem errors found while building from the file ``path`` name it."""
    from liftoff.problems.tasks.gaits import ProblemError

    try:
        yield
    except ProblemError as err:
        raise ProblemError(f"{path}: {err}") from None


def mpc(args) -> int:
    from tqdm import tqdm

    from liftoff.problems.files import check_output
    from liftoff.problems.mpc.controller import MPCError
    from liftoff.problems.mpc.results import load, save
    from liftoff.problems.tasks.config import load_config

    task = _mpc_task(args.config)
    config = load_config(args.config, task.schema)
    out_dir = Path(args.out or Path("results") / f"{config.name}_mpc")
    results = check_output(out_dir / "run.npz")  # before the run, not after
    duration = args.duration if args.duration is not None else config.mpc.duration
    pushes = [_push(text) for text in args.push or ()]
    bar = tqdm(
        total=round(duration, 6),
        unit="s",
        file=sys.stderr,
        disable=True if args.quiet or args.json else None,
        bar_format="{l_bar}{bar}| {n:.2f}/{total:.2f} s simulated [{elapsed}<{remaining}]",
    )
    try:
        with bar:
            outcome = task.run(
                config,
                duration,
                pushes,
                args.mass_scale,
                args.formulation,
                progress=lambda t: bar.update(t - bar.n),
                quiet=args.quiet or args.json,
            )
    except task.errors as e:
        raise UserError(f"{args.config}: {e}") from None
    except (MPCError, FloatingPointError) as e:
        return _error(str(e), RUN_ERROR)
    except ValueError as e:  # a push on a frame the robot does not have, a bad mass scale
        raise UserError(str(e)) from None
    m = task.measures(outcome)
    save(results, outcome.arrays, outcome.ticks, m, config)
    figures = task.figures(load(results), out_dir)
    if args.json:
        print(json.dumps({**m, "results_file": str(results)}))
    else:
        head = f"{config.name}: {m['formulation']} MPC, {m['backend']} stages, {m['duration_s']:g} s simulated"
        timing = (
            f"updates: median {m['tick_ms_median']:.2f} ms, p95 {m['tick_ms_p95']:.2f} ms, "
            f"real-time factor {m['real_time_factor']:.2f}"
        )
        print("\n".join((head, *task.lines(m), timing, f"saved {results} and {', '.join(p.name for p in figures)}")))
    return RUN_ERROR if task.failed(m) else 0


@dataclass(frozen=True)
class _MPCTask:
    """What ``liftoff mpc`` does with a task: its schema, run, measures, figures, report lines,
    failure test and the errors its problem builder raises."""

    schema: object
    run: object
    measures: object
    figures: object
    lines: object
    failed: object
    errors: tuple


def _task_key(path):
    """``(data, task)``: the YAML document of ``path`` (None if it does not read: loading it
    says why) and its ``task`` key (None without one: a gait configuration)."""
    import yaml

    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None, None
    return data, data.get("task") if isinstance(data, dict) else None


def _gait_configuration(path):
    """The gait configuration of ``path``; a task's configuration is refused with the command that runs it."""
    from liftoff.problems.tasks.config import load_config

    _, task = _task_key(path)
    if task is not None:
        raise UserError(f"{path}: a task: {task} configuration runs with liftoff mpc")
    return load_config(path)


def _mpc_task(path) -> _MPCTask:
    """The task of the configuration file ``path`` (its ``task`` key)."""
    from liftoff.problems.tasks.config import ConfigError

    data, task = _task_key(path)
    if task == "gait_mpc":
        from liftoff.problems.mpc import gait_run as gait_mpc_run
        from liftoff.problems.studies.figures import gait_mpc_figures
        from liftoff.problems.tasks.gait_mpc import GaitMPCConfig
        from liftoff.problems.tasks.gaits import ProblemError

        def lines(m):
            return (
                f"base: mean forward velocity {m['mean_forward_velocity_mps']:.3f} m/s "
                f"(command {m['command_velocity_mps']:.3f}){' (FELL)' if m['fell'] else ''}",
                f"feet: {m['touchdowns']} touchdowns, slip up to {1e3 * m['max_foot_slip_m']:.2f} mm, "
                f"cone violation up to {max(0.0, m['max_cone_violation']):.2f} N",
            )

        return _MPCTask(
            GaitMPCConfig,
            gait_mpc_run.run,
            gait_mpc_run.measures,
            gait_mpc_figures,
            lines,
            lambda m: m["fell"],
            (ProblemError,),
        )
    if task == "polishing" or data is None:  # data None: the loader says what is wrong with the file
        from liftoff.problems.mpc import polishing_run
        from liftoff.problems.studies.figures import mpc_figures
        from liftoff.problems.tasks.polishing import PolishingConfig, TaskError

        def lines(m):
            lost = " (CONTACT LOST)" if m["contact_lost"] else ""
            return (
                f"normal force: RMS error {m['force_rms_error_N']:.3f} N after the first second, "
                f"minimum {m['min_normal_force_N']:.2f} N{lost}",
                f"circle: RMS error {1e3 * m['circle_rms_error_m']:.2f} mm",
            )

        return _MPCTask(
            PolishingConfig,
            polishing_run.run,
            polishing_run.measures,
            mpc_figures,
            lines,
            lambda m: m["contact_lost"],
            (TaskError,),
        )
    raise ConfigError("expected an MPC task (task: polishing or task: gait_mpc)", source=str(path))


def _push(text):
    """A :class:`problems.plant.Push` from ``FRAME:FX,FY,FZ:T0:DT``."""
    from liftoff.problems.mpc.plant import Push

    parts = text.split(":")
    try:
        if len(parts) != 4:
            raise ValueError
        force = tuple(float(x) for x in parts[1].split(","))
        return Push(parts[0], force, float(parts[2]), float(parts[3]))
    except ValueError as e:
        why = f": {e}" if str(e) else ""
        raise UserError(
            f"--push {text}: expected FRAME:FX,FY,FZ:T0:DT (e.g. arm_right_7_link:0,0,-20:3:0.1){why}"
        ) from None


def view(args) -> int:
    from liftoff.problems import viewer
    from liftoff.problems.files import check_output

    run = viewer.load(args.result)
    if args.html:
        path = viewer.export_html(run, check_output(args.html), args.speed)
        print(f"wrote {path} (open it in a browser: the motion plays on a loop)")
        return 0
    visualizer = viewer.show(run, args.speed)
    print(f"the motion plays at {visualizer.url()}; Ctrl-C to stop", flush=True)
    while True:
        time.sleep(3600)


def schema(args) -> int:
    from liftoff.problems.tasks.schema import json_schema

    print(json.dumps(json_schema(args.task), indent=2))
    return 0


def compare(args) -> int:
    from tqdm import tqdm

    from liftoff.problems.files import check_output
    from liftoff.problems.studies.compare import compare as run_all
    from liftoff.problems.studies.compare import markdown, rows
    from liftoff.problems.tasks.config import with_solver
    from liftoff.problems.tasks.gaits import build_problem

    configs = [_gait_configuration(path) for path in args.configs]  # every file is checked before solving
    if args.max_iterations is not None:
        configs = [with_solver(c, max_iterations=args.max_iterations) for c in configs]
    for path, config in zip(args.configs, configs):
        with _source(path):
            build_problem(config)
    names = [c.name for c in configs]
    for path, name in zip(args.configs, names):
        if names.count(name) > 1:
            others = ", ".join(p for p, n in zip(args.configs, names) if n == name)
            raise UserError(f"two configurations named {name!r} ({others}) would overwrite each other's results")
    check_output(Path(args.out) / "summary.json")
    given = tuple(args.formulation or ()) + tuple(m for m in args.methods or () if m in ("lifted", "nonlifted"))
    formulations = tuple(dict.fromkeys(given or ("lifted", "nonlifted")))
    log = sys.stderr if args.json else sys.stdout
    inits = tuple(dict.fromkeys(args.init)) if args.init else None
    methods = tuple(dict.fromkeys(m for m in args.methods or () if m not in formulations))
    per_barrier = len(formulations) + sum(m in ("fddp", "ilqr") for m in methods)
    exact = len(methods) + len(formulations) - per_barrier
    runs = len(configs) * (len(args.barrier) * per_barrier * (len(inits) if inits else 1) + exact)
    # a bar on stderr (the solves take minutes)
    quiet = True if args.quiet or args.json else None  # None: on a terminal only
    bar = tqdm(total=runs, unit="solve", file=sys.stderr, disable=quiet, leave=False)

    def progress(s):
        if not args.quiet:
            bar.write(
                f"{s['name']:>14} {s['formulation']:>9} barrier {s['barrier']:<7g} {s['init']:>11} {s['status']:>14} "
                f"{s['iterations']:4d} iterations {s['solve_time_s']:8.2f} s",
                file=log,
            )
        bar.update(1)

    with bar:
        summaries = run_all(
            configs,
            args.out,
            tuple(args.barrier),
            formulations,
            progress,
            args.backend,
            inits,
            methods,
        )
    if args.json:
        print(json.dumps(summaries))
    else:
        print(markdown(rows(summaries)))
        print(f"figures and tables in {args.out}")
    return 0 if all(s["status"] == "converged" for s in summaries) else RUN_ERROR


def sweep(args) -> int:
    from tqdm import tqdm

    from liftoff.problems.files import check_output
    from liftoff.problems.studies.sweep import SchedulerError, run_sweep
    from liftoff.problems.studies.sweep_spec import cases, load_spec

    spec = load_spec(args.spec)
    total = len(cases(spec))  # every base configuration is read and every case validated first
    check_output(Path(args.out) / "table.csv")
    bar = tqdm(total=total, unit="case", file=sys.stderr, disable=True if args.quiet or args.json else None)
    counts = {}

    def progress(row):
        counts[row["status"]] = counts.get(row["status"], 0) + 1
        bar.update(1)

    with bar:
        try:
            rows = run_sweep(spec, args.out, args.workers, args.scheduler, progress)
        except SchedulerError as e:
            raise UserError(str(e)) from None
        except KeyboardInterrupt:
            return _error("interrupted; the cases solved so far are kept: rerun the same command to continue", 130)
    if args.json:
        print(json.dumps(rows))
    else:
        done = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
        print(f"{len(rows)} cases ({done}); table in {Path(args.out) / 'table.csv'} and table.parquet")
    return 0 if all(r["status"] == "converged" for r in rows) else RUN_ERROR


def report(args) -> int:
    from liftoff.problems.studies.compare import markdown, rows
    from liftoff.problems.studies.compare import report as redraw

    try:
        summaries = redraw(args.dir)
    except FileNotFoundError as err:
        raise UserError(str(err)) from None
    print(markdown(rows(summaries)))
    return 0


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("liftoff")
    except PackageNotFoundError:
        return "(not installed)"


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return value


def _positive_float(text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not (math.isfinite(x) and x > 0):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return x


def bench_dynamics(args) -> int:
    from liftoff.problems.bench import dynamics as bench

    progress = None if args.quiet else bench.stderr_progress
    try:
        result = bench.dynamics_benchmark(
            robot=args.robot,
            batches=tuple(args.batch),
            repeat=args.repeat,
            frame=args.frame,
            seed=args.seed,
            progress=progress,
        )
    except bench.BenchError as err:
        return _error(str(err), RUN_ERROR)
    print(json.dumps(result, indent=2) if args.json else bench.format_table(result))
    return 0


def _choose(given, choices, option) -> tuple:
    """``given`` (all ``choices`` if None) without repeats, each checked to be a choice."""
    for name in given or ():
        if name not in choices:
            raise UserError(f"{option}: unknown {name!r}; choose among {', '.join(choices)}")
    return tuple(dict.fromkeys(given)) if given else tuple(choices)


def bench_constrained(args) -> int:
    from liftoff.problems.bench import dynamics as bench

    progress = None if args.quiet else bench.stderr_progress
    algorithms = _choose(args.algorithm, bench.ALGORITHMS, "--algorithm")
    from liftoff.problems.files import check_output

    if args.figure is not None and not args.scaling:
        raise UserError("--figure draws the scaling study: use it with --scaling")
    figure = None if args.figure is None else check_output(args.figure)
    try:
        if args.tables:
            from liftoff.problems.bench import tables as bench_tables

            result = bench_tables.tables_benchmark(batches=tuple(args.batch), repeat=args.repeat, progress=progress)
            table = bench_tables.format_tables
        elif args.scaling:
            result = bench.scaling_benchmark(
                chain_sizes=tuple(args.chain_sizes or bench.CHAIN_SIZES),
                tree_sizes=tuple(args.tree_sizes or bench.TREE_SIZES),
                batch=args.scaling_batch or bench.SCALING_BATCH,
                repeat=args.repeat,
                algorithms=algorithms,
                seed=args.seed,
                progress=progress,
            )
            table = bench.format_scaling_table
            if figure is not None:
                from liftoff.problems.studies.figures import constrained_scaling_figure

                constrained_scaling_figure(result, figure)
        else:
            result = bench.constrained_benchmark(
                robots=_choose(args.robot, tuple(bench.CONTACT_CASES), "--robot"),
                batches=tuple(args.batch),
                repeat=args.repeat,
                algorithms=algorithms,
                seed=args.seed,
                progress=progress,
            )
            table = bench.format_constrained_table
    except bench.BenchError as err:
        return _error(str(err), RUN_ERROR)
    print(json.dumps(result, indent=2) if args.json else table(result))
    return 0


def bench_solve(args) -> int:
    from liftoff.problems.bench import dynamics as bench
    from liftoff.problems.bench import solve as bench_solve

    progress = None if args.quiet else bench.stderr_progress
    try:
        if args.scaling:
            result = bench_solve.scaling_benchmark(repeat=args.repeat, progress=progress)
            table = bench_solve.format_scaling
        else:
            result = bench_solve.solve_benchmark(_choose(args.gait, bench_solve.GAITS, "--gait"), args.repeat, progress)
            table = bench_solve.format_table
    except bench.BenchError as err:
        return _error(str(err), RUN_ERROR)
    print(json.dumps(result, indent=2) if args.json else table(result))
    return 0


def bench_ddp(args) -> int:
    from liftoff.problems.bench import ddp as bench_ddp
    from liftoff.problems.bench import dynamics as bench

    results = []
    try:
        for path in args.configs:
            _gait_configuration(path)  # one line for a bad file
            results.append(bench_ddp.crosscheck(path))
    except bench.BenchError as err:
        return _error(str(err), RUN_ERROR)
    print(json.dumps(results, indent=2) if args.json else "\n\n".join(map(bench_ddp.format_crosscheck, results)))
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG, description="Trajectory optimization and MPC of robots in contact, with lifted contact dynamics."
    )
    p.add_argument("--version", action="version", version=f"{PROG} {_version()}")
    commands = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p_solve = commands.add_parser(
        "solve",
        help="solve a gait optimization from a YAML file",
        description="Build the OCP of a gait configuration, solve it with the Riccati interior point, print the "
        "iteration log and save the result (.npz, readable by problems.runs.load_run).",
    )
    p_solve.add_argument("config", metavar="CONFIG", help="a YAML gait configuration, e.g. configs/anymal_trot.yaml")
    p_solve.add_argument("--formulation", choices=("lifted", "nonlifted"), help="override solver.formulation")
    p_solve.add_argument("--barrier", type=_positive_float, metavar="X", help="override solver.barrier")
    p_solve.add_argument("--backend", choices=("compiled", "numpy"), help="override solver.backend (stage evaluation)")
    p_solve.add_argument("--init", choices=("static", "zero_torque"), help="override solver.init (the initial guess)")
    p_solve.add_argument("--max-iterations", type=_non_negative_int, metavar="N", help="override solver.max_iterations")
    p_solve.add_argument("--tol", type=_positive_float, metavar="X", help="override solver.tol (on the KKT error)")
    p_solve.add_argument("--out", metavar="FILE", help="results file (default: results/NAME_FORMULATION_BARRIER.npz)")
    p_solve.add_argument("--quiet", action="store_true", help="no iteration log: only the outcome")
    p_solve.add_argument(
        "--json", action="store_true", help="print one JSON summary on stdout (the log goes to stderr)"
    )
    p_solve.set_defaults(run=solve)

    p_cmp = commands.add_parser(
        "compare",
        help="lifted vs non-lifted on several gaits and barriers",
        description="Solve every configuration with every formulation at every barrier; write the results files, "
        "the KKT-residual figure (kkt.png), the time bar chart (time.png), the contact forces of the lifted runs "
        "(forces_GAIT.png) and the table (table.md, table.csv, summary.json) to the output folder.",
    )
    p_cmp.add_argument("configs", metavar="CONFIG", nargs="+", help="YAML gait configurations")
    p_cmp.add_argument(
        "--barrier",
        type=_positive_float,
        nargs="+",
        default=[1e-1, 1e-4],
        metavar="X",
        help="barriers (default: 1e-1 1e-4)",
    )
    p_cmp.add_argument("--formulation", choices=("lifted", "nonlifted"), nargs="+", help="formulations (default: both)")
    p_cmp.add_argument(
        "--methods",
        choices=("lifted", "nonlifted", "fddp", "ilqr", "ipopt", "sqp"),
        nargs="+",
        help="the methods: formulations of the interior point (default: both, or --formulation) and baselines: "
        "fddp, ilqr (relaxed barrier, at each barrier); ipopt, sqp (exact problem) (default: none)",
    )
    p_cmp.add_argument("--backend", choices=("compiled", "numpy"), help="override solver.backend (stage evaluation)")
    p_cmp.add_argument("--max-iterations", type=_non_negative_int, metavar="N", help="override solver.max_iterations")
    p_cmp.add_argument("--quiet", action="store_true", help="no progress (the table still prints)")
    p_cmp.add_argument(
        "--init", choices=("static", "zero_torque"), nargs="+", help="initial guesses (default: each config's)"
    )
    p_cmp.add_argument(
        "--out", default="results/compare", metavar="DIR", help="output folder (default: results/compare)"
    )
    p_cmp.add_argument(
        "--json", action="store_true", help="print the summaries as one JSON list on stdout (progress on stderr)"
    )
    p_cmp.set_defaults(run=compare)

    p_mpc = commands.add_parser(
        "mpc",
        help="a task in closed loop: MPC against a simulated plant (polishing, gaits)",
        description="Run the MPC of a configuration (task: polishing or task: gait_mpc) against liftoff's "
        "simulated plant; write the results file (run.npz) and the task's figures (polishing: force.png, "
        "path.png; gaits: velocity.png, height.png, forces.png; both: ticks.png) to the output folder.",
    )
    p_mpc.add_argument("config", metavar="CONFIG", help="YAML configuration with task: polishing or gait_mpc")
    p_mpc.add_argument("--duration", type=_positive_float, metavar="S", help="override mpc.duration (s)")
    p_mpc.add_argument(
        "--push",
        action="append",
        metavar="FRAME:FX,FY,FZ:T0:DT",
        help="a force (N, world axes) on FRAME from T0 for DT seconds; repeatable",
    )
    p_mpc.add_argument(
        "--mass-scale",
        type=_positive_float,
        default=1.0,
        metavar="X",
        help="the plant's mass and inertia of plant.scaled_joints' bodies times X (a model mismatch)",
    )
    p_mpc.add_argument("--formulation", choices=("lifted", "nonlifted"), help="override solver.formulation")
    p_mpc.add_argument("--out", metavar="DIR", help="output folder (default: results/NAME_mpc)")
    p_mpc.add_argument("--quiet", action="store_true", help="no progress bar")
    p_mpc.add_argument("--json", action="store_true", help="print the measures as one JSON object")
    p_mpc.set_defaults(run=mpc)

    p_sweep = commands.add_parser(
        "sweep",
        help="a parameter study: every case of a sweep spec, on a local pool or a Dask cluster",
        description="Solve every case of a sweep spec (problems/sweep.py: base configs x grid, explicit and "
        "random cases) and write each case's results file and the table of all cases (table.csv, table.parquet). "
        "A rerun reuses the cases already solved.",
    )
    p_sweep.add_argument("spec", metavar="SPEC", help="YAML sweep spec")
    p_sweep.add_argument("--out", required=True, metavar="DIR", help="output folder")
    p_sweep.add_argument(
        "--workers", type=_positive_int, metavar="N", help="worker processes (default: the number of cores)"
    )
    p_sweep.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run on a Dask cluster: the scheduler's address (tcp://host:8786), or 'local' for a LocalCluster",
    )
    p_sweep.add_argument("--quiet", action="store_true", help="no progress bar")
    p_sweep.add_argument("--json", action="store_true", help="print the table's rows as one JSON list on stdout")
    p_sweep.set_defaults(run=sweep)

    p_rep = commands.add_parser(
        "report",
        help="redraw the figures and tables of a comparison from its results files",
        description="Redraw the figures and tables of `liftoff compare` from the results files in DIR, "
        "without solving.",
    )
    p_rep.add_argument("dir", metavar="DIR", help="a folder written by liftoff compare")
    p_rep.set_defaults(run=report)

    p_view = commands.add_parser(
        "view",
        help="watch a results file in a browser (meshcat), or export it as one HTML file",
        description="Animate a results file (liftoff solve or compare): the robot's meshes, the contact forces "
        "(red arrows), the friction pyramids of the feet in contact (blue) and the planned swing-foot positions "
        "(yellow). Live through a local meshcat server, or with --html as a standalone page that plays alone.",
    )
    p_view.add_argument("result", metavar="RESULT", help="a results file (.npz)")
    p_view.add_argument("--html", metavar="FILE", help="write a standalone HTML page instead of serving it")
    p_view.add_argument("--speed", type=_positive_float, default=1.0, metavar="X", help="playback speed (default 1)")
    p_view.set_defaults(run=view)

    p_schema = commands.add_parser(
        "schema",
        help="the JSON Schema of a configuration file, for editors",
        description="Print the JSON Schema of a gait (problems/config.py), polishing (problems/polishing.py) or "
        "gait MPC (problems/gait_mpc.py) configuration. Save it and start a YAML file with "
        "'# yaml-language-server: $schema=PATH' to get completion and checks in editors.",
    )
    p_schema.add_argument(
        "--task", choices=("gait", "polishing", "gait_mpc"), default="gait", help="which configuration"
    )
    p_schema.set_defaults(run=schema)

    p_info = commands.add_parser(
        "info", help="describe a robot model", description="Load a robot and describe its model."
    )
    p_info.add_argument(
        "robot", metavar="ROBOT", help="a robot of example-robot-data (anymal, talos, ur5, ...) or a URDF path"
    )
    base = p_info.add_mutually_exclusive_group()
    base.add_argument(
        "--fixed-base", dest="floating_base", action="store_false", default=None, help="no free-flyer root"
    )
    base.add_argument("--floating-base", dest="floating_base", action="store_true", help="add a free-flyer root")
    p_info.add_argument(
        "--lock",
        metavar="JOINT=VALUE",
        nargs="+",
        action="extend",
        help="lock joints at the given positions (reduced model)",
    )
    p_info.set_defaults(run=info)

    p_bench = commands.add_parser("bench", help="benchmarks against reference implementations")
    benches = p_bench.add_subparsers(dest="bench", metavar="BENCH", required=True)
    p_dyn = benches.add_parser(
        "dynamics",
        help="dynamics kernels vs Pinocchio",
        description="Time the batched dynamics kernels against Pinocchio on the same random states "
        "(after checking they agree to 1e-8).",
    )
    p_dyn.add_argument("--robot", default="anymal", help="robot name or URDF path (default: anymal)")
    p_dyn.add_argument(
        "--batch", type=_positive_int, nargs="+", default=[1, 128], metavar="B", help="batch sizes (default: 1 128)"
    )
    p_dyn.add_argument(
        "--repeat", type=_positive_int, default=5, metavar="N", help="timed runs per kernel, best kept (default: 5)"
    )
    p_dyn.add_argument("--frame", default=None, help="frame of frame_jacobian (default: LF_FOOT, else the last frame)")
    p_dyn.add_argument("--seed", type=int, default=0, help="seed of the random states (default: 0)")
    p_dyn.add_argument("--json", action="store_true", help="print the results as one JSON object")
    p_dyn.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p_dyn.set_defaults(run=bench_dynamics)

    p_con = benches.add_parser(
        "constrained",
        help="constrained dynamics and its derivatives vs Pinocchio",
        description="Time proximal constrained forward dynamics (each algorithm) and its derivatives against "
        "Pinocchio's constraintDynamics on the same random states (after checking they agree to 1e-8): "
        "ANYmal with 3D contacts on its feet (LOCAL_WORLD_ALIGNED), Talos with 6D contacts on its soles (LOCAL). "
        "With --scaling, instead: the scaling study of seed 003 Fig. 3 on serial chains (6D contact on the end "
        "effector) and balanced binary trees (3D contacts on the leaves).",
    )
    # defaults and choices live in problems.bench (imported when the command runs)
    p_con.add_argument("--robot", nargs="+", metavar="ROBOT", help="robots among anymal, talos (default: both)")
    p_con.add_argument(
        "--batch", type=_positive_int, nargs="+", default=[1, 128], metavar="B", help="batch sizes (default: 1 128)"
    )
    p_con.add_argument(
        "--algorithm",
        nargs="+",
        metavar="ALG",
        help="algorithms among proxLTL, proxLTLs, constrainedABA, proxPV (default: all four)",
    )
    p_con.add_argument(
        "--repeat", type=_positive_int, default=5, metavar="N", help="timed runs per kernel, best kept (default: 5)"
    )
    p_con.add_argument("--seed", type=int, default=0, help="seed of the random states (default: 0)")
    p_con.add_argument("--scaling", action="store_true", help="run the scaling study (chains and binary trees) instead")
    p_con.add_argument(
        "--figure", metavar="FILE", help="with --scaling: also draw seed 003 Fig. 3 (µs per state against n) to FILE"
    )
    p_con.add_argument(
        "--tables",
        action="store_true",
        help="seed 003 Tables II and III instead: three proximal iterations, and the damped OSIM, on panda, solo12, "
        "talos (soles and hands) and talos_full",
    )
    p_con.add_argument(
        "--chain-sizes", type=_positive_int, nargs="+", metavar="N", help="links of the chains (default: 8 16 32 64)"
    )
    p_con.add_argument(
        "--tree-sizes",
        type=_positive_int,
        nargs="+",
        metavar="N",
        help="links of the binary trees, 3 (2^d - 1): 3, 9, 21, 45, 93, 189, ... (default: 9 21 45 93)",
    )
    p_con.add_argument(
        "--scaling-batch", type=_positive_int, metavar="B", help="states per call in the scaling study (default: 32)"
    )
    p_con.add_argument("--json", action="store_true", help="print the results as one JSON object")
    p_con.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p_con.set_defaults(run=bench_constrained)

    p_sol = benches.add_parser(
        "solve",
        help="gait solves vs Crocoddyl's FDDP",
        description="Solve the five ANYmal gait configurations (compiled backend, lifted and non-lifted) and "
        "Crocoddyl's FDDP on its own ANYmal gait examples in the same run, CPU time with one BLAS thread, medians; "
        "print the time per knot and iteration, its ratio to Crocoddyl's, the total times and the split of an "
        "iteration. With --scaling, instead: time per iteration of the trot stretched 0.5x to 8x, and its linear fit.",
    )
    p_sol.add_argument(
        "--gait", nargs="+", metavar="GAIT", help="gaits among walk, trot, pace, bound, jump (default: all)"
    )
    p_sol.add_argument(
        "--repeat", type=_positive_int, default=3, metavar="N", help="solves per case, median kept (default: 3)"
    )
    p_sol.add_argument("--scaling", action="store_true", help="time per iteration against the horizon length instead")
    p_sol.add_argument("--json", action="store_true", help="print the results as one JSON object")
    p_sol.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p_sol.set_defaults(run=bench_solve)

    p_ddp = benches.add_parser(
        "ddp",
        help="liftoff's FDDP vs Crocoddyl's on the same problem",
        description="Build each gait configuration's OCP without cones and limits both in liftoff and in Crocoddyl "
        "(same contacts, Baumgarte gains, impacts, costs and explicit Euler steps), solve both with FDDP from the "
        "same initial guess in the same process, and print the one-step dynamics mismatch, the iterations, the "
        "final costs and their relative difference.",
    )
    p_ddp.add_argument(
        "configs", metavar="CONFIG", nargs="*", default=["configs/anymal_trot.yaml"], help="gait configurations"
    )
    p_ddp.add_argument("--json", action="store_true", help="print the results as one JSON list")
    p_ddp.set_defaults(run=bench_ddp)
    return p


def _error(message: str, status: int) -> int:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return status


def main(argv=None) -> int:
    try:
        return _main(argv)
    except KeyboardInterrupt:  # also while the libraries are still importing
        return _error("interrupted", 130)


def _main(argv) -> int:
    args = parser().parse_args(argv)
    # Imported late so that `liftoff --help` works even while the dynamics layer does not import.
    from liftoff.dynamics import (
        DimensionError,
        ModelError,
        UnknownNameError,
        retain_freed_memory,
    )
    from liftoff.problems.files import OutputError, ReadError
    from liftoff.problems.tasks.config import ConfigError
    from liftoff.problems.tasks.gaits import ProblemError

    retain_freed_memory()  # batched kernels reuse their large temporaries (see dynamics.memory)

    try:
        return args.run(args)
    except (
        ModelError,
        UnknownNameError,
        DimensionError,
        UserError,
        ConfigError,
        ProblemError,
        OutputError,
        ReadError,
    ) as err:
        return _error(err.args[0] if isinstance(err, KeyError) and err.args else str(err), USAGE_ERROR)
    except BrokenPipeError:  # output piped into `head` and the like
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return RUN_ERROR


if __name__ == "__main__":
    sys.exit(main())
