"""The ``liftoff`` command line: one module per command, each adding its parser
(``add_parser``) and running it (``run``) by calls to the floors below; nothing else.

    liftoff solve CONFIG [--formulation lifted|nonlifted] [--barrier X] [--backend compiled|numpy]
                  [--init static|zero_torque] [--max-iterations N] [--tol X] [--out FILE] [--replace] [--json]
                  [--quiet]
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
arguments, a problem too large for the memory) print one line ``liftoff: error: ...`` on stderr
and exit with status 2; a solve that does not converge, or a benchmark that cannot run
(Pinocchio missing, or disagreeing with liftoff), exits with status 1; an interrupt (Ctrl-C),
with status 130, except in the live viewer, which it stops (status 0). A reader that closes
standard output (``| head``) does not stop a command: its files are written all the same.

Imports every floor below, inside each command's ``run`` (so that ``liftoff --help`` is quick).
"""

from __future__ import annotations

import argparse
import sys

from . import bench, compare, info, mpc, report, schema, solve, sweep, view
from .arguments import INTERRUPTED, PROG, USAGE_ERROR, ClosableOutput, Parser, UserError, error

COMMANDS = (solve, compare, report, mpc, sweep, view, schema, info, bench)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("liftoff")
    except PackageNotFoundError:
        return "(not installed)"


def parser() -> argparse.ArgumentParser:
    p = Parser(
        prog=PROG, description="Trajectory optimization and MPC of robots in contact, with lifted contact dynamics."
    )
    p.add_argument("--version", action="version", version=f"{PROG} {_version()}")
    commands = p.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in COMMANDS:
        command.add_parser(commands)
    return p


def main(argv=None) -> int:
    stdout = sys.stdout
    sys.stdout = ClosableOutput(stdout)
    try:
        return _main(argv)
    except KeyboardInterrupt:  # also while the libraries are still importing
        return error("interrupted", INTERRUPTED)
    except UserError as err:  # the arguments
        return error(str(err), USAGE_ERROR)
    finally:
        sys.stdout = stdout


def _main(argv) -> int:
    args = parser().parse_args(argv)
    # Imported late so that `liftoff --help` works even while the dynamics layer does not import.
    from liftoff.dynamics import DimensionError, ModelError, UnknownNameError, retain_freed_memory
    from liftoff.dynamics.codegen import silent
    from liftoff.problems.files import OutputError, ReadError
    from liftoff.problems.tasks.config import ConfigError, ProblemError

    retain_freed_memory()  # batched kernels reuse their large temporaries (see dynamics.memory)

    try:
        with silent(getattr(args, "quiet", False)):  # --quiet: no compile lines either
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
        return error(err.args[0] if isinstance(err, KeyError) and err.args else str(err), USAGE_ERROR)
    except MemoryError:  # a problem too large for the memory, when the command did not say how large
        return error("out of memory: the problem is too large for this machine", USAGE_ERROR)
