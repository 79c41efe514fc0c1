"""Memory for compiled code: freed memory kept for reuse, and the addresses of arrays.

Batched algorithms allocate many large temporaries.

By default glibc serves every allocation above 128 KiB with a fresh ``mmap`` and returns
it on free, so each batched call pays page faults for all its temporaries (a third of the
time of :func:`dynamics.rnea_derivatives` on 128 ANYmal states). Raising the thresholds
keeps those pages in the heap for the next call. This changes the whole process's
allocator, so it is opt-in: the ``liftoff`` command calls it at start-up, scripts may too.

A compiled function receives its arrays by address (:func:`address`); an MPC update passes a
few hundred. A call on arrays kept from one evaluation to the next takes their addresses once
(:func:`bound`); a call's new outputs are views of one allocation, whose addresses follow from
its own (:func:`outputs`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import itertools
import math
import operator

import numpy as np

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters


def retain_freed_memory(mmap_threshold: int = 32 << 20, trim_threshold: int = 128 << 20) -> bool:
    """Serve allocations below ``mmap_threshold`` bytes from the heap and keep up to
    ``trim_threshold`` bytes of freed heap; returns False where the C library is not glibc."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
        mallopt = libc.mallopt
    except (OSError, AttributeError, TypeError):
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, int(mmap_threshold))) and bool(
        mallopt(_M_TRIM_THRESHOLD, int(trim_threshold))
    )


_NOTHING = ctypes.c_double()  # what an empty array's address points to: nothing is read or written there
_view, _addressof = ctypes.c_char.from_buffer, ctypes.addressof  # looked up once: an update takes hundreds of addresses


def address(x) -> int:
    """The address of the data of the C-contiguous array ``x``: through a ctypes view of its
    buffer, a third of the time of ``x.ctypes.data``, which serves the read-only arrays; an
    empty array's, whose data no compiled loop touches, is a valid address of no array."""
    if not x.nbytes:
        return _addressof(_NOTHING)
    try:
        return _addressof(_view(x))
    except (TypeError, ValueError):
        return x.ctypes.data


def bound(calls, name, arrays, make):
    """The call ``name`` kept in the dict ``calls`` for exactly ``arrays`` (compared by
    identity), made by ``make()`` when there is none or it was made for others; a call made for
    this use alone when ``calls`` is None or an array is not C-contiguous (a call reads a
    contiguous copy of it, which later writes to the array would not reach). A call holds what
    it was made for in ``arrays``."""
    if calls is None:
        return make()
    call = calls.get(name)
    if call is not None and len(call.arrays) == len(arrays) and all(map(operator.is_, call.arrays, arrays)):
        return call  # made for these very arrays, which were contiguous then
    if not all(a.flags.c_contiguous for a in arrays):
        return make()
    call = calls[name] = make()
    return call


def outputs(*shapes) -> tuple:
    """``(arrays, addresses)``: float arrays of ``shapes``, contiguous views of one allocation,
    and their addresses, for the outputs of a compiled call (one :func:`address` for all)."""
    total, parts, offsets = layout(shapes)
    block = np.empty(total)
    base = address(block)
    return [block[start:end].reshape(shape) for start, end, shape in parts], [base + at for at in offsets]


@functools.lru_cache(maxsize=1024)
def layout(shapes) -> tuple:
    """The allocation of :func:`outputs` (or of another block of arrays) for ``shapes``: its size,
    each array's ``(start, end, shape)`` in it and its offset in bytes (cached: a compiled call's
    outputs have the same shapes call after call)."""
    ends = list(itertools.accumulate(math.prod(shape) for shape in shapes))
    starts = [0, *ends[:-1]] if ends else []
    parts = tuple(zip(starts, ends, shapes))
    return (ends[-1] if ends else 0), parts, tuple(np.dtype(float).itemsize * start for start in starts)
