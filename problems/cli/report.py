"""``liftoff report DIR``: a comparison's figures and tables redrawn from its results files."""

from __future__ import annotations

from .arguments import UserError


def add_parser(commands) -> None:
    p = commands.add_parser(
        "report",
        help="redraw the figures and tables of a comparison from its results files",
        description="Redraw the figures and tables of `liftoff compare` from the results files in DIR, "
        "without solving.",
    )
    p.add_argument("dir", metavar="DIR", help="a folder written by liftoff compare")
    p.set_defaults(run=run)


def run(args) -> int:
    from liftoff.problems.studies.compare import markdown, report, rows

    try:
        summaries = report(args.dir)
    except FileNotFoundError as err:
        raise UserError(str(err)) from None
    print(markdown(rows(summaries)))
    return 0
