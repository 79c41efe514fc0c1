"""``liftoff solve CONFIG``: one gait configuration, its iteration log and its results file."""

from __future__ import annotations

import json
import sys
from contextlib import contextmanager

from .arguments import RUN_ERROR, UserError, non_negative_int, positive_float


def add_parser(commands) -> None:
    p = commands.add_parser(
        "solve",
        help="solve a gait optimization from a YAML file",
        description="Build the OCP of a gait configuration, solve it with the Riccati interior point, print the "
        "iteration log and save the result (.npz, readable by liftoff.problems.studies.runs.load_run).",
    )
    p.add_argument("config", metavar="CONFIG", help="a YAML gait configuration, e.g. configs/anymal_trot.yaml")
    p.add_argument("--formulation", choices=("lifted", "nonlifted"), help="override solver.formulation")
    p.add_argument(
        "--barrier", type=positive_float, metavar="X", help="override solver.barrier (a decreasing one's start)"
    )
    p.add_argument("--barrier-update", choices=("fixed", "monotone", "adaptive"), help="override solver.barrier_update")
    p.add_argument(
        "--barrier-min", type=positive_float, metavar="X", help="override solver.barrier_min (a decreasing one's end)"
    )
    p.add_argument("--backend", choices=("compiled", "numpy"), help="override solver.backend (stage evaluation)")
    p.add_argument(
        "--hessian",
        choices=("gauss-newton", "exact"),
        help="override solver.hessian (exact: where Gauss-Newton is slow)",
    )
    p.add_argument("--init", choices=("static", "zero_torque"), help="override solver.init (the initial guess)")
    p.add_argument("--max-iterations", type=non_negative_int, metavar="N", help="override solver.max_iterations")
    p.add_argument("--tol", type=positive_float, metavar="X", help="override solver.tol (on the KKT error)")
    p.add_argument("--out", metavar="FILE", help="results file (default: results/NAME_FORMULATION_BARRIER.npz)")
    p.add_argument(
        "--replace",
        action="store_true",
        help="let a solve that does not converge replace a converged results file (by default it is saved beside "
        "it, as NAME.STATUS.npz)",
    )
    p.add_argument("--quiet", action="store_true", help="no iteration log: only the outcome")
    p.add_argument("--json", action="store_true", help="print one JSON summary on stdout (the log goes to stderr)")
    p.set_defaults(run=run)


def run(args) -> int:
    from liftoff.problems.files import check_output
    from liftoff.problems.studies.runs import (
        default_path,
        describe_problem,
        outcome,
        prepare,
        save_run,
        solve_prepared,
        summary,
    )
    from liftoff.problems.tasks.config import load_gait_config, naming
    from liftoff.solvers.ipm import LOG_HEADER, format_final, format_log

    config = load_gait_config(args.config)
    fields = ("formulation", "barrier", "barrier_update", "barrier_min", "backend", "hessian", "init")
    fields += ("max_iterations", "tol")
    overrides = {k: getattr(args, k) for k in fields}
    out = check_output(args.out) if args.out else None  # before the kernels are compiled
    with naming(args.config), too_large(args.config, config):
        config, problem = prepare(config, **overrides)
    out = out or check_output(default_path(config))  # the default's name is the prepared solver's; before the solve
    stream = sys.stderr if args.json else sys.stdout

    def log(line):
        if not args.quiet:
            print(line, file=stream, flush=True)

    log(describe_problem(config, problem))
    log(LOG_HEADER)
    with too_large(args.config, config):
        solved = solve_prepared(config, problem, callback=lambda h: log(format_log(h)))
    log(format_final(solved.result))
    path = save_run(solved, out, replace=args.replace)
    print(json.dumps({**summary(solved), "results_file": str(path)}) if args.json else outcome(solved, path, out))
    return 0 if solved.result.converged else RUN_ERROR


@contextmanager
def too_large(source, config):
    """A :class:`MemoryError` in the block becomes one :class:`UserError` line with the size of
    the problem (the stages of ``config``'s horizon)."""
    try:
        yield
    except MemoryError as e:
        size = str(e).split(" for an array")[0].removeprefix("Unable to allocate ").replace(". ", " ")  # numpy's
        more = f" (it could not allocate {size} more)" if size and size != str(e) else ""
        raise UserError(
            f"{source}: out of memory for {config.gait.horizon} stages (gait.horizon) of {config.robot}{more}; "
            "a shorter horizon, or a machine with more memory, is needed"
        ) from None
