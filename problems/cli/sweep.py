"""``liftoff sweep SPEC``: every case of a sweep spec, on local processes or a Dask cluster."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from .arguments import INTERRUPTED, RUN_ERROR, UserError, error, positive_int, quiet_bar


def add_parser(commands) -> None:
    p = commands.add_parser(
        "sweep",
        help="a parameter study: every case of a sweep spec, on a local pool or a Dask cluster",
        description="Solve every case of a sweep spec (problems/studies/sweep_spec.py: base configs x grid, "
        "explicit and random cases) and write each case's results file and the table of all cases (table.csv, "
        "table.parquet). A rerun reuses the cases already solved.",
    )
    p.add_argument("spec", metavar="SPEC", help="YAML sweep spec")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder")
    p.add_argument("--workers", type=positive_int, metavar="N", help="worker processes (default: the number of cores)")
    p.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run on a Dask cluster: the scheduler's address (tcp://host:8786), or 'local' for a LocalCluster",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the table's rows as one JSON list on stdout")
    p.set_defaults(run=run)


def run(args) -> int:
    from tqdm import tqdm

    from liftoff.problems.files import check_output
    from liftoff.problems.studies.sweep import SchedulerError, outcome_line, run_sweep
    from liftoff.problems.studies.sweep_spec import cases, load_spec

    spec = load_spec(args.spec)
    total = len(cases(spec))  # every base configuration is read and every case validated first
    check_output(Path(args.out) / "table.csv")
    bar = tqdm(total=total, unit="case", file=sys.stderr, disable=quiet_bar(args))
    with bar:
        try:
            rows = run_sweep(spec, args.out, args.workers, args.scheduler, lambda row: bar.update(1))
        except SchedulerError as e:
            raise UserError(str(e)) from None
        except KeyboardInterrupt:
            return error(
                "interrupted; the cases solved so far are kept: rerun the same command to continue", INTERRUPTED
            )
    print(json.dumps(rows) if args.json else outcome_line(rows, args.out))
    return 0 if all(r["status"] == "converged" for r in rows) else RUN_ERROR
