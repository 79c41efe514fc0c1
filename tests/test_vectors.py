"""The C libraries at every lane width of ``dynamics/vectors.h``: the sums they keep in
registers are blocks of the processor's own vectors (8 doubles with AVX-512, 4 with AVX2, 2 with
SSE2 or NEON), so each width runs code of its own. ``LIFTOFF_LANES`` builds each here, whatever
the processor (a width wider than its registers is split by the compiler, slowly but with the
same arithmetic): each is checked against numpy, and all of them against each other to the last
bit, as their sums run in the same order."""

import stat
from contextlib import contextmanager

import numpy as np
import pytest
import test_condensing
import test_riccati

from liftoff.dynamics import codegen
from liftoff.ocp.condensing import condense, expand
from liftoff.solvers import riccati

WIDTHS = (2, 4, 8)


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    """Per width, a compiler that builds at it (``-DLIFTOFF_LANES=width``, and ``-O1``, which the
    tests' code needs, not its speed: a width the processor does not have takes GCC minutes at
    ``-O3``), a cache of its own and the compiler's log of commands."""
    out = {}
    for width in WIDTHS:
        folder = tmp_path_factory.mktemp(f"lanes{width}")
        log, wrapper = folder / "commands.log", folder / "cc"
        command = f'exec {codegen.compiler()} "$@" -O1 -DLIFTOFF_LANES={width}'
        wrapper.write_text(f'#!/bin/sh\necho "$@" >> {log}\n{command}\n')
        wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
        out[width] = wrapper, folder / "cache", log
    return out


@contextmanager
def built_at(build):
    """Every compiled library, within the block, the one ``build`` (of :func:`builds`) makes."""
    wrapper, cache, _ = build
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CC", str(wrapper))
        patch.setenv("LIFTOFF_CACHE", str(cache))
        patch.setattr(codegen, "_LIBRARIES", {})
        yield


@pytest.fixture(scope="module", params=WIDTHS)
def lanes(request, builds):
    """The libraries at one width; yields the compiler's log."""
    with built_at(builds[request.param]):
        yield builds[request.param][2]


def lqr(size):
    N, nx, _, nu_of = test_riccati.SIZES[size]
    return test_riccati.random_lqr(np.random.default_rng(11), N=N, nx=nx, nu_of=nu_of)


@pytest.mark.parametrize("size", test_riccati.SIZES)
def test_the_riccati_recursion_at_every_lane_width_equals_numpy(lanes, size):
    test_riccati.assert_compiled_equals_numpy(*lqr(size))
    assert "riccati.c" in lanes.read_text()  # built here, at this width


@pytest.mark.parametrize("make", test_condensing.MAKERS)
def test_the_condensing_at_every_lane_width_equals_numpy(lanes, make):
    test_condensing.assert_compiled_equals_numpy(make, full=False)
    assert "condensing.c" in lanes.read_text()


def outputs() -> list:
    """The compiled Riccati recursion's outputs on every size of ``test_riccati``, and the
    compiled condensing's and expansion's on every problem of ``test_condensing``."""
    out = []
    for size in test_riccati.SIZES:
        sol = riccati(*lqr(size), "compiled")
        out += [sol.dx, sol.lam, sol.P, sol.p, sol.controls, sol.gains, sol.feedforward]
    for make in test_condensing.MAKERS:
        rng = np.random.default_rng(4)
        st = make(rng)
        condensed = condense(st, "compiled")
        z, lam = rng.standard_normal((len(st.H), st.nx + st.nu)), rng.standard_normal((len(st.H), st.nx))
        out += [getattr(condensed, name) for name in ("T", "t", "A", "B", "b", "Q", "l")]
        out += list(expand(st, condensed, z, lam))
    return out


def test_every_lane_width_gives_the_same_bits(builds):
    results = {}
    for width in WIDTHS:
        with built_at(builds[width]):
            results[width] = outputs()
    for width in WIDTHS[1:]:
        assert len(results[width]) == len(results[WIDTHS[0]])
        for i, (a, b) in enumerate(zip(results[WIDTHS[0]], results[width])):
            assert np.array_equal(a, b), f"output {i}: lanes of {width} against {WIDTHS[0]}"
