"""What every command shares: the exit statuses, the user's errors, the parser, the argument
types and a standard output that may be closed."""

from __future__ import annotations

import argparse
import io
import math
import os
import sys

PROG = "liftoff"
USAGE_ERROR, RUN_ERROR, INTERRUPTED = 2, 1, 130


class UserError(ValueError):
    """A mistake in the command line, reported without a traceback."""


def error(message: str, status: int) -> int:
    """Print ``liftoff: error: message`` on stderr and return ``status``."""
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return status


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one :class:`UserError` line (``liftoff: error: ...``,
    exit status 2) naming the command's help, instead of argparse's usage and exit."""

    def error(self, message):
        raise UserError(f"{message} (see {self.prog} --help)")


class ClosableOutput(io.TextIOBase):
    """Standard output that its reader may close (``liftoff solve ... | head``): the first write
    that finds the pipe closed sends the file descriptor to ``/dev/null`` and drops what follows,
    so that the command runs to its end and writes its files."""

    def __init__(self, stream):
        self.stream, self.closed_by_reader = stream, False

    def write(self, text) -> int:
        if not self.closed_by_reader:
            try:
                self.stream.write(text)
            except BrokenPipeError:
                self._reader_closed()
        return len(text)

    def flush(self) -> None:
        """Flush the stream, unless its reader or its owner closed it (the wrapper owns nothing:
        closing it, as the collector does, flushes only a stream still open)."""
        if not self.closed_by_reader and not getattr(self.stream, "closed", False):
            try:
                self.stream.flush()
            except BrokenPipeError:
                self._reader_closed()

    def _reader_closed(self) -> None:
        self.closed_by_reader = True
        try:
            fd = self.stream.fileno()
        except (AttributeError, OSError, ValueError):
            return
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, fd)  # what the stream still buffers is flushed there at exit
        os.close(null)

    def isatty(self) -> bool:
        return self.stream.isatty()

    def fileno(self) -> int:
        return self.stream.fileno()

    @property
    def encoding(self):
        return getattr(self.stream, "encoding", "utf-8")


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


MASS_SCALES = (0.1, 10.0)  # liftoff mpc --mass-scale: a model mismatch, not another robot


def mass_scale(text: str) -> float:
    """A mass scale in :data:`MASS_SCALES` (both ends included)."""
    low, high = MASS_SCALES
    try:
        x = float(text)
    except ValueError:
        x = math.nan
    if not low <= x <= high:
        raise argparse.ArgumentTypeError(f"expected a number in [{low:g}, {high:g}], got {text!r}")
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
