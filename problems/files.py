"""Files the program writes: checked before the work that fills them, written whole or not at all.

:func:`check_output` refuses, before a solve, a path that cannot be written (a folder, a
device, a parent that cannot be created or written); :func:`atomic` writes to a temporary
file beside the target and renames it into place when the writing ends, so that an error or
an interrupt leaves the previous file as it was; :func:`save_figure` writes a figure so.
:func:`check_archive` refuses, in one line, a file given as results that is not an ``.npz``
archive.
"""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path


class OutputError(ValueError):
    """An output path that cannot be written (one line: the path and why)."""


class ReadError(ValueError):
    """An input file that is not what it should be (one line: the path and why)."""


def check_output(path) -> Path:
    """``path`` if a file can be written there, else :class:`OutputError`."""
    path = Path(path)
    if path.exists() and not path.is_file():
        raise OutputError(f"{path}: not a regular file (a folder or a device)")
    folder = path.parent
    blocking = next((p for p in (folder, *folder.parents) if p.exists() and not p.is_dir()), None)
    if blocking is not None:
        raise OutputError(f"{path}: {blocking} is not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".probe")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise OutputError(f"{path}: cannot write there ({e.strerror or e})") from None
    return path


ARCHIVE_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # a zip archive's first bytes (an .npz is one)


def check_archive(path, what="liftoff results file") -> Path:
    """``path`` if it can be opened and starts as a zip archive (``.npz``), else
    :class:`ReadError` saying it is missing, a folder, or not ``what``."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except FileNotFoundError:
        raise ReadError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise ReadError(f"{path}: a folder, not a {what}") from None
    except OSError as e:
        raise ReadError(f"{path}: cannot read it ({e.strerror or e})") from None
    if head not in ARCHIVE_MAGIC:
        raise ReadError(f"{path}: not a {what} (those are .npz archives)")
    return path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextmanager
def atomic(path, mode="wb"):
    """An open temporary file beside ``path``, renamed onto ``path`` when the block ends; an
    exception (an interrupt included) removes it and leaves ``path`` untouched. Write errors
    become :class:`OutputError`."""
    path = check_output(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8", "newline": ""})) as f:
            yield f
        os.chmod(tmp, 0o666 & ~_umask())  # a temporary file is private; the result is not
        os.replace(tmp, path)
    except BaseException as e:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(e, OSError):
            raise OutputError(f"{path}: cannot write it ({e.strerror or e})") from None
        raise


def save_figure(fig, path) -> Path:
    """Write a matplotlib figure whole (:func:`atomic`) in the format of ``path``'s suffix, and
    close it."""
    import matplotlib.pyplot as plt

    try:
        with atomic(path) as f:
            fig.savefig(f, format=Path(path).suffix.lstrip(".") or "png", dpi=120)
    finally:
        plt.close(fig)
    return Path(path)
