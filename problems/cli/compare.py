"""``liftoff compare CONFIG...``: formulations and baselines on gait and polishing configurations and barriers."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from .arguments import RUN_ERROR, non_negative_int, positive_float, quiet_bar


def add_parser(commands) -> None:
    p = commands.add_parser(
        "compare",
        help="lifted vs non-lifted on several gaits (or polishing horizons) and barriers",
        description="Solve every configuration with every formulation at every barrier; write the results files, "
        "the KKT-residual figure (kkt.png), the time bar chart (time.png), the contact forces of the lifted runs "
        "(forces_GAIT.png; polishing: the normal force, normal_force.png) and the table (table.md, table.csv, "
        "summary.json) to the output folder. A polishing configuration is its horizon from the task's initial "
        "state; a method that does not take a configuration's OCP is a row of status unsupported.",
    )
    p.add_argument("configs", metavar="CONFIG", nargs="+", help="YAML gait or polishing configurations")
    p.add_argument(
        "--barrier",
        type=positive_float,
        nargs="+",
        default=[1e-1, 1e-4],
        metavar="X",
        help="barriers (default: 1e-1 1e-4)",
    )
    p.add_argument("--formulation", choices=("lifted", "nonlifted"), nargs="+", help="formulations (default: both)")
    p.add_argument(
        "--methods",
        choices=("lifted", "nonlifted", "fddp", "ilqr", "ipopt", "sqp"),
        nargs="+",
        help="the methods: formulations of the interior point (default: both, or --formulation) and baselines: "
        "fddp, ilqr (relaxed barrier, at each barrier); ipopt, sqp (exact problem) (default: none)",
    )
    p.add_argument("--backend", choices=("compiled", "numpy"), help="override solver.backend (stage evaluation)")
    p.add_argument("--max-iterations", type=non_negative_int, metavar="N", help="override solver.max_iterations")
    p.add_argument("--quiet", action="store_true", help="no progress (the table still prints)")
    p.add_argument(
        "--init", choices=("static", "zero_torque"), nargs="+", help="initial guesses (default: each config's)"
    )
    p.add_argument("--out", default="results/compare", metavar="DIR", help="output folder (default: results/compare)")
    p.add_argument(
        "--json", action="store_true", help="print the summaries as one JSON list on stdout (progress on stderr)"
    )
    p.set_defaults(run=run)


def run(args) -> int:
    from tqdm import tqdm

    from liftoff.problems.files import check_output
    from liftoff.problems.studies.compare import (
        UNSUPPORTED,
        cases,
        check_names,
        compare,
        load,
        markdown,
        methods_of,
        progress_line,
        rows,
    )
    from liftoff.problems.studies.runs import problem_of
    from liftoff.problems.tasks.config import naming, with_solver

    configs = [load(path) for path in args.configs]  # every file is checked before solving
    if args.max_iterations is not None:
        configs = [with_solver(c, max_iterations=args.max_iterations) for c in configs]
    for path, config in zip(args.configs, configs):
        with naming(path):
            problem_of(config)
    check_names(args.configs, configs)
    check_output(Path(args.out) / "summary.json")
    formulations, methods = methods_of(args.formulation, args.methods)
    inits = tuple(dict.fromkeys(args.init)) if args.init else None
    total = len(cases(configs, tuple(args.barrier), formulations, inits, methods))
    log = sys.stderr if args.json else sys.stdout
    bar = tqdm(total=total, unit="solve", file=sys.stderr, disable=quiet_bar(args), leave=False)

    def progress(s):
        if not args.quiet:
            bar.write(progress_line(s), file=log)
        bar.update(1)

    with bar:
        summaries = compare(
            configs, args.out, tuple(args.barrier), formulations, progress, args.backend, inits, methods
        )
    print(json.dumps(summaries) if args.json else f"{markdown(rows(summaries))}\nfigures and tables in {args.out}")
    return 0 if all(s["status"] in ("converged", UNSUPPORTED) for s in summaries) else RUN_ERROR
