"""What every command shares: the exit statuses, the user's errors and the argument types."""

from __future__ import annotations

import argparse
import math
import sys

PROG = "liftoff"
USAGE_ERROR, RUN_ERROR, INTERRUPTED = 2, 1, 130


class UserError(ValueError):
    """A mistake in the command line, reported without a traceback."""


def error(message: str, status: int) -> int:
    """Print ``liftoff: error: message`` on stderr and return ``status``."""
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return status


def positive_int(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {n}")
    return n


def non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return value


def positive_float(text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not (math.isfinite(x) and x > 0):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return x


def choose(given, choices, option) -> tuple:
    """``given`` (all ``choices`` if None) without repeats, each checked to be a choice."""
    for name in given or ():
        if name not in choices:
            raise UserError(f"{option}: unknown {name!r}; choose among {', '.join(choices)}")
    return tuple(dict.fromkeys(given)) if given else tuple(choices)


def quiet_bar(args):
    """tqdm's ``disable`` for a progress bar on stderr: off with ``--quiet`` or ``--json``, else
    only on a terminal."""
    return True if args.quiet or args.json else None
