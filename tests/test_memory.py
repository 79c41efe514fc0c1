"""Opting in to keeping freed memory (glibc only), and the addresses of arrays."""

import platform

import numpy as np
import pytest

from liftoff import dynamics
from liftoff.dynamics.memory import address, bound, outputs


def test_retain_freed_memory_reports_whether_it_applied():
    assert dynamics.retain_freed_memory() is (platform.libc_ver()[0] == "glibc")


@pytest.mark.parametrize(
    "make",
    [
        lambda x: x,
        lambda x: x[1:],  # a view
        lambda x: x[:, ::2],  # not contiguous: ctypes' address of its first element
        lambda x: np.broadcast_to(x[0], (3, 6)),  # read-only
        lambda x: np.arange(5, dtype=np.intc),
    ],
)
def test_an_arrays_address_is_that_of_its_data(make):
    x = make(np.zeros((4, 6)))
    assert address(x) == x.__array_interface__["data"][0]


def test_empty_arrays_have_one_valid_address():
    addresses = {address(np.zeros(shape)) for shape in ((0,), (3, 0), (0, 5))}
    assert len(addresses) == 1 and 0 not in addresses


def test_a_bound_call_is_kept_for_the_same_arrays_only():
    class Call:
        def __init__(self, arrays):
            self.arrays = arrays

    calls, a, b = {}, np.zeros(3), np.ones(3)
    first = bound(calls, "f", (a, b), lambda: Call((a, b)))
    assert bound(calls, "f", (a, b), lambda: Call((a, b))) is first
    other = bound(calls, "f", (a, b.copy()), lambda: Call((a, b.copy())))  # equal values, another array
    assert other is not first and calls["f"] is other
    assert bound(None, "f", (a, b), lambda: Call((a, b))) is not first  # nowhere to keep it
    strided = np.zeros((3, 2))[:, 0]
    assert bound(calls, "f", (a, strided), lambda: Call((a, strided))) is not bound(
        calls, "f", (a, strided), lambda: Call((a, strided))
    )  # a call on a copy of it: made anew each time


def test_outputs_are_separate_contiguous_arrays_at_their_addresses():
    shapes = ((2, 3), (0,), (4,), (2, 0, 5), (1,), (3, 2, 2))
    arrays, addresses = outputs(*shapes)
    assert [a.shape for a in arrays] == list(shapes)
    assert all(a.flags.c_contiguous and a.dtype == float for a in arrays)
    for a, at in zip(arrays, addresses):
        if a.size:
            assert at == address(a)
    for k, a in enumerate(arrays):  # no two overlap: each keeps what is written into it
        a[...] = k
    assert all((a == k).all() for k, a in enumerate(arrays))
    assert outputs() == ([], [])
    again, _ = outputs(*shapes)  # the same shapes: new arrays, the earlier ones left as they were
    for a in again:
        a[...] = -1.0
    assert all((a == k).all() for k, a in enumerate(arrays))
