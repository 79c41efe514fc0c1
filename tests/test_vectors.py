"""The C libraries at every lane width of ``dynamics/vectors.h``: the sums they keep in
registers are blocks of the processor's own vectors (8 doubles with AVX-512, 4 with AVX2, 2 with
SSE2 or NEON), so each width runs code of its own. ``LIFTOFF_LANES`` builds each here, whatever
the processor (a width wider than its registers is split by the compiler, slowly but with the
same arithmetic), and each is checked against numpy."""

import stat

import numpy as np
import pytest
import test_condensing
import test_riccati

from liftoff.dynamics import codegen

WIDTHS = (2, 4, 8)


@pytest.fixture(scope="module", params=WIDTHS)
def lanes(request, tmp_path_factory):
    """Every compiled library rebuilt, in a cache of its own, with ``-DLIFTOFF_LANES=width``
    (and ``-O1``, which the test's code needs, not its speed: a width the processor does not have
    takes GCC minutes at ``-O3``); yields the width and the compiler's log of commands."""
    width, folder = request.param, tmp_path_factory.mktemp(f"lanes{request.param}")
    log, wrapper = folder / "commands.log", folder / "cc"
    wrapper.write_text(f'#!/bin/sh\necho "$@" >> {log}\nexec {codegen.compiler()} "$@" -O1 -DLIFTOFF_LANES={width}\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CC", str(wrapper))
        patch.setenv("LIFTOFF_CACHE", str(folder / "cache"))
        patch.setattr(codegen, "_LIBRARIES", {})
        yield width, log


@pytest.mark.parametrize("size", test_riccati.SIZES)
def test_the_riccati_recursion_at_every_lane_width_equals_numpy(lanes, size):
    N, nx, nm, nu_of = test_riccati.SIZES[size]
    stages, terminal, dx0 = test_riccati.random_lqr(np.random.default_rng(11), N=N, nx=nx, nu_of=nu_of)
    test_riccati.assert_compiled_equals_numpy(stages, terminal, dx0)
    assert "riccati.c" in lanes[1].read_text()  # built here, at this width


@pytest.mark.parametrize("make", test_condensing.MAKERS)
def test_the_condensing_at_every_lane_width_equals_numpy(lanes, make):
    test_condensing.assert_compiled_equals_numpy(make, full=False)
    assert "condensing.c" in lanes[1].read_text()
