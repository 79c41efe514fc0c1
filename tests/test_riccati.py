"""The Riccati recursion against a dense solve of the LQR's KKT system, in numpy and compiled;
the compiled one against numpy on the sizes of liftoff's OCPs and on odd sizes, built by GCC and
by clang."""

import dataclasses

import numpy as np
import pytest
from conftest import required_program

from liftoff.dynamics import codegen
from liftoff.ocp import StageLQR, TerminalLQR
from liftoff.ocp.lqr import LQR
from liftoff.solvers import RiccatiError, riccati
from liftoff.solvers.riccati import _FUNCTIONS, _SOURCE, _compiled


def random_lqr(rng, N=6, nx=5, nu_of=lambda i: 3 if i % 3 else 0):
    """A convex LQR with stages of varying control size (``nu = 0`` like impulse stages)."""
    stages = []
    for i in range(N):
        nu = nu_of(i)
        W = rng.standard_normal((nx + nu, nx + nu))
        H = W @ W.T + 0.5 * np.eye(nx + nu)
        stages.append(
            StageLQR(
                A=np.eye(nx) + 0.1 * rng.standard_normal((nx, nx)),
                B=rng.standard_normal((nx, nu)),
                b=rng.standard_normal(nx),
                Qxx=H[:nx, :nx],
                Qxu=H[:nx, nx:],
                Quu=H[nx:, nx:],
                lx=rng.standard_normal(nx),
                lu=rng.standard_normal(nu),
            )
        )
    W = rng.standard_normal((nx, nx))
    return stages, TerminalLQR(W @ W.T + np.eye(nx), rng.standard_normal(nx)), rng.standard_normal(nx)


def dense_kkt(stages, terminal, dx0):
    """Primal ``[dx_0, du_0, dx_1, ..., dx_N]`` and multipliers ``lam_0..lam_N`` from one dense solve.

    Lagrangian: cost + lam_0^T (dx0 - dx_0) + sum lam_{i+1}^T (A dx_i + B du_i + b - dx_{i+1})."""
    nx = stages[0].nx
    sizes = [nx + s.nu for s in stages] + [nx]
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    n, m = offsets[-1], nx * (len(stages) + 1)
    H, g = np.zeros((n, n)), np.zeros(n)
    C, c = np.zeros((m, n)), np.zeros(m)
    C[:nx, :nx], c[:nx] = np.eye(nx), dx0
    for i, s in enumerate(stages):
        o = offsets[i]
        H[o : o + nx, o : o + nx] = s.Qxx
        H[o : o + nx, o + nx : o + nx + s.nu] = s.Qxu
        H[o + nx : o + nx + s.nu, o : o + nx] = s.Qxu.T
        H[o + nx : o + nx + s.nu, o + nx : o + nx + s.nu] = s.Quu
        g[o : o + nx], g[o + nx : o + nx + s.nu] = s.lx, s.lu
        r = nx * (i + 1)  # dx_{i+1} - A dx_i - B du_i = b
        C[r : r + nx, offsets[i + 1] : offsets[i + 1] + nx] = np.eye(nx)
        C[r : r + nx, o : o + nx], C[r : r + nx, o + nx : o + nx + s.nu] = -s.A, -s.B
        c[r : r + nx] = s.b
    o = offsets[-2]
    H[o:, o:], g[o:] = terminal.Qxx, terminal.lx
    kkt = np.block([[H, -C.T], [C, np.zeros((m, m))]])  # H z - C^T lam = -g, C z = c
    sol = np.linalg.solve(kkt, np.concatenate((-g, c)))
    return sol[:n], sol[n:].reshape(-1, nx), offsets


BACKENDS = ["numpy", "compiled"]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("seed", range(5))
def test_riccati_equals_dense_kkt_solve(seed, backend):
    rng = np.random.default_rng(seed)
    stages, terminal, dx0 = random_lqr(rng)
    sol = riccati(stages, terminal, dx0, backend)
    z, lam, offsets = dense_kkt(stages, terminal, dx0)
    nx = len(dx0)
    for i, s in enumerate(stages):
        np.testing.assert_allclose(sol.dx[i], z[offsets[i] : offsets[i] + nx], atol=1e-10)
        np.testing.assert_allclose(sol.du[i], z[offsets[i] + nx : offsets[i] + nx + s.nu], atol=1e-10)
    np.testing.assert_allclose(sol.dx[-1], z[offsets[-2] :], atol=1e-10)
    np.testing.assert_allclose(np.array(sol.lam), lam, atol=1e-9)


@pytest.mark.parametrize("backend", BACKENDS)
def test_stages_of_different_control_sizes_equal_dense_kkt_solve(backend):
    """Stages with fewer controls than the widest (their blocks padded in the stacked LQR)."""
    rng = np.random.default_rng(5)
    stages, terminal, dx0 = random_lqr(rng, N=8, nx=6, nu_of=lambda i: (4, 1, 0, 3, 2)[i % 5])
    sol = riccati(stages, terminal, dx0, backend)
    z, lam, offsets = dense_kkt(stages, terminal, dx0)
    for i, s in enumerate(stages):
        np.testing.assert_allclose(sol.du[i], z[offsets[i] + 6 : offsets[i] + 6 + s.nu], atol=1e-10)
        assert sol.K[i].shape == (s.nu, 6) and sol.k[i].shape == (s.nu,)
        padded = (sol.controls[i, s.nu :], sol.gains[i, s.nu :], sol.feedforward[i, s.nu :])
        assert all(np.all(x == 0) for x in padded)  # the rows beyond the stage's controls
    np.testing.assert_allclose(sol.dx[-1], z[offsets[-2] :], atol=1e-10)
    np.testing.assert_allclose(np.array(sol.lam), lam, atol=1e-9)


@pytest.mark.parametrize("backend", BACKENDS)
def test_rollout_satisfies_the_dynamics_and_initial_state(backend):
    rng = np.random.default_rng(7)
    stages, terminal, dx0 = random_lqr(rng)
    sol = riccati(stages, terminal, dx0, backend)
    np.testing.assert_allclose(sol.dx[0], dx0)
    for i, s in enumerate(stages):
        np.testing.assert_allclose(sol.dx[i + 1], s.A @ sol.dx[i] + s.B @ sol.du[i] + s.b, atol=1e-12)
        np.testing.assert_allclose(sol.du[i], sol.K[i] @ sol.dx[i] + sol.k[i], atol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_nonconvex_stage_is_reported(backend):
    rng = np.random.default_rng(3)
    stages, terminal, dx0 = random_lqr(rng, nu_of=lambda i: 2)
    bad = stages[2]
    stages[2] = StageLQR(bad.A, bad.B, bad.b, bad.Qxx, bad.Qxu, -10 * np.eye(2), bad.lx, bad.lu)
    with pytest.raises(RiccatiError, match="stage 2"):
        riccati(stages, terminal, dx0, backend)


def assert_compiled_equals_numpy(stages, terminal, dx0, rtol=1e-12, library=None):
    """The compiled recursion (of ``library``, default liftoff's build) against numpy's."""
    ref = riccati(stages, terminal, dx0, "numpy")
    if library is None:
        got = riccati(stages, terminal, dx0, "compiled")
    else:
        got = _compiled(library, LQR.from_stages(stages), terminal, np.asarray(dx0))
    for name in ("dx", "lam", "P", "p"):
        x = getattr(ref, name)
        np.testing.assert_allclose(getattr(got, name), x, rtol=0, atol=rtol * np.abs(x).max(), err_msg=name)
    for name in ("du", "K", "k"):
        for i, (x, y) in enumerate(zip(getattr(ref, name), getattr(got, name))):
            np.testing.assert_allclose(
                y, x, rtol=0, atol=rtol * max(1.0, np.abs(x).max(initial=0)), err_msg=f"{name}[{i}]"
            )
    for name in ("controls", "gains", "feedforward"):  # the rows beyond each stage's controls
        for i, n in enumerate(got.nu.tolist()):
            assert np.all(getattr(got, name)[i, n:] == 0), f"{name}[{i}]"
    return got


SIZES = {  # N, nx, nm and the stages' control sizes
    "anymal mpc": (26, 36, 12, lambda i: 0 if i in (6, 13, 20) else 12),  # impulse stages: nu = 0
    "anymal solve": (73, 36, 12, lambda i: 0 if i % 18 == 17 else 12),
    "talos polishing": (50, 18, 6, lambda i: 6),
    "nx 17, nm 5": (9, 17, 5, lambda i: (5, 0, 3, 1, 5)[i % 5]),
    "nx 17, nm 1": (7, 17, 1, lambda i: i % 2),
    "nx 9, nm 8": (7, 9, 8, lambda i: (8, 7, 0)[i % 3]),
    "nx 5, nm 13": (6, 5, 13, lambda i: (13, 9, 0)[i % 3]),
    "nx 1, nm 1": (5, 1, 1, lambda i: 1),
}


@pytest.mark.parametrize("size", SIZES)
def test_compiled_equals_numpy(size):
    N, nx, nm, nu_of = SIZES[size]
    stages, terminal, dx0 = random_lqr(np.random.default_rng(11), N=N, nx=nx, nu_of=nu_of)
    got = assert_compiled_equals_numpy(stages, terminal, dx0)
    assert got.gains.shape == (N, nm, nx)
    assert np.array_equal(got.P, got.P.swapaxes(1, 2))  # exactly symmetric, as numpy's


@pytest.fixture(scope="module")
def clang_library(tmp_path_factory):
    """riccati.c built by clang (the compiler of macOS; ``$CC`` picks the compiler) in a cache of
    its own, typed as liftoff types its build."""
    cache = tmp_path_factory.mktemp("clang")
    with pytest.MonkeyPatch.context() as patch:
        why = "riccati.c is built by clang on macOS: apt-get install clang (.ci/run does)"
        patch.setenv("CC", required_program(("clang",), why))
        patch.setenv("LIFTOFF_CACHE", str(cache))
        library = codegen.load_library(_SOURCE, quiet=True)
    (built,) = cache.glob("riccati-*.so")
    assert b"clang version" in built.read_bytes()  # its .comment: built by clang, not GCC
    for name, (restype, argtypes) in _FUNCTIONS.items():
        getattr(library, name).restype, getattr(library, name).argtypes = restype, argtypes
    return library


@pytest.mark.parametrize("size", ["anymal mpc", "talos polishing", "nx 17, nm 5", "nx 1, nm 1"])
def test_compiled_by_clang_equals_numpy(size, clang_library):
    N, nx, nm, nu_of = SIZES[size]
    stages, terminal, dx0 = random_lqr(np.random.default_rng(11), N=N, nx=nx, nu_of=nu_of)
    got = assert_compiled_equals_numpy(stages, terminal, dx0, library=clang_library)
    assert np.array_equal(got.P, got.P.swapaxes(1, 2))


@pytest.mark.parametrize("size", ["anymal mpc", "talos polishing", "nx 17, nm 5", "nx 5, nm 13"])
def test_compiled_equals_numpy_on_costs_that_are_not_symmetric(size):
    """numpy's recursion symmetrizes P, factors G = Quu + B^T P B from its entries on and below
    the diagonal and uses the terminal Qxx as given: the compiled one alike."""
    N, nx, nm, nu_of = SIZES[size]
    rng = np.random.default_rng(5)
    stages, terminal, dx0 = random_lqr(rng, N=N, nx=nx, nu_of=nu_of)
    stages = [
        StageLQR(
            s.A, s.B, s.b, s.Qxx + np.triu(rng.standard_normal((nx, nx)), 1), s.Qxu,
            s.Quu + np.triu(rng.standard_normal((s.nu, s.nu)), 1), s.lx, s.lu,
        )
        for s in stages
    ]  # fmt: skip
    terminal = TerminalLQR(terminal.Qxx + 0.1 * rng.standard_normal((nx, nx)), terminal.lx)
    got = assert_compiled_equals_numpy(stages, terminal, dx0)
    np.testing.assert_array_equal(got.P[-1], terminal.Qxx)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("size", "bad", "direction"), [
    ("anymal mpc", 19, 0), ("anymal mpc", 25, 11), ("talos polishing", 37, 5), ("nx 17, nm 5", 4, 2),
])  # fmt: skip
def test_nonconvex_stage_is_reported_at_its_index(size, bad, direction, backend):
    """Quu with one negative curvature (along a control ``direction``): the error names that
    stage, whichever pivot of G fails."""
    N, nx, nm, nu_of = SIZES[size]
    stages, terminal, dx0 = random_lqr(np.random.default_rng(2), N=N, nx=nx, nu_of=nu_of)
    s = stages[bad]
    Quu = s.Quu.copy()
    Quu[direction, direction] = -1e8
    stages[bad] = StageLQR(s.A, s.B, s.b, s.Qxx, s.Qxu, Quu, s.lx, s.lu)
    with pytest.raises(RiccatiError, match=f"stage {bad}:"):
        riccati(stages, terminal, dx0, backend)


def test_an_lqr_of_arrays_that_are_not_contiguous_solves_as_its_contiguous_copy():
    """The compiled recursion reads an LQR that compiled condensing wrote by its blocks' kept
    addresses, and contiguous copies of any other LQR's blocks."""
    stages, terminal, dx0 = random_lqr(np.random.default_rng(3))
    lqr = LQR.from_stages(stages)
    blocks = [getattr(lqr, f.name) for f in dataclasses.fields(lqr)]
    strided = LQR(*(np.asfortranarray(x) if x.ndim > 1 else x for x in blocks))
    with pytest.raises(ValueError, match="contiguous"):
        strided.addresses  # noqa: B018 (the fallback's condition)
    ref, got = riccati(lqr, terminal, dx0, "compiled"), riccati(strided, terminal, dx0, "compiled")
    for name in ("dx", "lam", "P", "p", "controls", "gains", "feedforward"):
        np.testing.assert_array_equal(getattr(got, name), getattr(ref, name), err_msg=name)


def test_an_unknown_backend_is_refused():
    stages, terminal, dx0 = random_lqr(np.random.default_rng(0))
    with pytest.raises(ValueError, match="unknown backend 'fast'"):
        riccati(stages, terminal, dx0, "fast")
