"""Condensing lifted variables, the Riccati recursion and the expansion together give the
Newton direction of the uncondensed KKT system (primal and dual), in numpy and compiled; the
compiled condensing equals numpy's with the block structure of the OCP's stages."""

import numpy as np
import pytest

from liftoff.ocp import TerminalLQR
from liftoff.ocp.condensing import LiftedStages, condense, expand
from liftoff.solvers import riccati


def random_lifted(rng, S=5, nx=6, nu=3, nw=4):
    ny = nx + nu + nw
    W = rng.standard_normal((S, ny, ny))
    H = W @ np.swapaxes(W, 1, 2) + 0.5 * np.eye(ny)  # a positive definite Gauss-Newton Hessian
    C = rng.standard_normal((S, nw, ny))
    C[:, :, nx + nu :] += 3 * np.eye(nw)  # Cw invertible
    A = 0.2 * rng.standard_normal((S, nx, ny))
    A[:, :, :nx] += np.eye(nx)
    return LiftedStages(
        nx, nu, H, rng.standard_normal((S, ny)), C, rng.standard_normal((S, nw)), A, rng.standard_normal((S, nx))
    )


def dense_solution(st: LiftedStages, terminal: TerminalLQR, dx0):
    """Solve the uncondensed KKT system: variables y_0 .. y_{S-1}, dx_S; multipliers lam_0 ..
    lam_S (initial state, state equations) and beta_i (local equalities)."""
    S, nx, nw = len(st.H), st.nx, st.nw
    ny = st.H.shape[1]
    n = S * ny + nx
    H, g = np.zeros((n, n)), np.zeros(n)
    for i in range(S):
        o = i * ny
        H[o : o + ny, o : o + ny], g[o : o + ny] = st.H[i], st.g[i]
    H[-nx:, -nx:], g[-nx:] = terminal.Qxx, terminal.lx
    E_init = np.zeros((nx, n))
    E_init[:, :nx] = np.eye(nx)
    blocks = [(E_init, np.asarray(dx0))]  # E y = e, multiplier sign: L = cost + m^T (E y - e)
    for i in range(S):  # state equation: A y_i + b - dx_{i+1} = 0  ->  -A y_i + dx_{i+1} = b
        E = np.zeros((nx, n))
        E[:, i * ny : (i + 1) * ny] = -st.A[i]
        nxt = (i + 1) * ny if i + 1 < S else S * ny
        E[:, nxt : nxt + nx] = np.eye(nx)
        blocks.append((E, st.b[i]))
    for i in range(S):  # local equalities: C y_i = -c
        E = np.zeros((nw, n))
        E[:, i * ny : (i + 1) * ny] = st.C[i]
        blocks.append((E, -st.c[i]))
    E = np.concatenate([b[0] for b in blocks])
    e = np.concatenate([b[1] for b in blocks])
    m = len(e)
    kkt = np.block([[H, E.T], [E, np.zeros((m, m))]])
    sol = np.linalg.solve(kkt, np.concatenate((-g, e)))
    y, mult = sol[:n], sol[n:]
    lam = -mult[: nx * (S + 1)].reshape(S + 1, nx)  # Riccati's sign: lam^T (A y + b - dx_next)
    beta = mult[nx * (S + 1) :].reshape(S, nw)  # beta^T (C y + c)
    return y, lam, beta


BACKENDS = ["numpy", "compiled"]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("seed", range(4))
def test_condense_riccati_expand_equals_the_uncondensed_newton_step(seed, backend):
    rng = np.random.default_rng(seed)
    st = random_lifted(rng)
    W = rng.standard_normal((st.nx, st.nx))
    terminal = TerminalLQR(W @ W.T + np.eye(st.nx), rng.standard_normal(st.nx))
    dx0 = rng.standard_normal(st.nx)
    cond = condense(st, backend)
    assert (cond.factors is not None) == (backend == "compiled")
    sol = riccati([cond.stage(i, st.nx) for i in range(len(st.H))], terminal, dx0, backend)
    dx, du = np.array(sol.dx[:-1]), np.array(sol.du)
    dw, beta = expand(st, cond, np.concatenate((dx, du), axis=1), np.array(sol.lam[1:]))
    y, lam, beta_ref = dense_solution(st, terminal, dx0)
    ny = st.H.shape[1]
    Y = y[: len(dx) * ny].reshape(len(dx), ny)
    np.testing.assert_allclose(dx, Y[:, : st.nx], atol=1e-9)
    np.testing.assert_allclose(du, Y[:, st.nx : st.nx + st.nu], atol=1e-9)
    np.testing.assert_allclose(dw, Y[:, st.nx + st.nu :], atol=1e-9)
    np.testing.assert_allclose(sol.dx[-1], y[-st.nx :], atol=1e-9)
    np.testing.assert_allclose(np.array(sol.lam), lam, atol=1e-8)
    np.testing.assert_allclose(beta, beta_ref, atol=1e-8)


def structured_lifted(rng, S=7, nx=8, nu=3, nv=4, m=3):
    """The structure of a lifted contact stage: no cost coupling of (x, u) with w, a cost on
    the last w entries (the forces) only, w entering the state equation by a dt block on the
    first nv of them (the accelerations), and a row-permuted Cw (pivoting needed)."""
    st = random_lifted(rng, S, nx, nu, nv + m)
    nz = nx + nu
    H = st.H.copy()
    H[:, :nz, nz:], H[:, nz:, :nz] = 0.0, 0.0
    H[:, nz : nz + nv, nz:], H[:, nz:, nz : nz + nv] = 0.0, 0.0
    A = st.A.copy()
    A[:, :, nz:] = 0.0
    A[:, nx - nv :, nz : nz + nv] = 0.02 * np.eye(nv)
    C = st.C.copy()
    C[:, :, nz:] = C[:, ::-1, nz:]
    return LiftedStages(nx, nu, H, st.g, C, st.c, A, st.b)


def weighted_at_one_stage(rng):
    """:func:`structured_lifted` with a cost on the accelerations at one stage only (the MPC's
    approach to a landing): the support of H_ww has rows that are zero at the other stages."""
    st = structured_lifted(rng)
    nz, nv = st.nx + st.nu, 4
    H = st.H.copy()
    H[2, nz : nz + nv, nz : nz + nv] += np.diag(rng.uniform(1.0, 2.0, nv))
    return LiftedStages(st.nx, st.nu, H, st.g, st.C, st.c, st.A, st.b)


def larger_structured(rng):
    """:func:`structured_lifted` with nw = 17 and nz = 20: several of the compiled solve's blocks
    of rows and of columns, the last ones padded."""
    return structured_lifted(rng, S=4, nx=14, nu=6, nv=11, m=6)


def without_controls(rng):
    """:func:`structured_lifted` with nu = 0 (an impulse stage)."""
    return structured_lifted(rng, S=3, nx=14, nu=0, nv=11, m=6)


def full_supports(st):
    """Supports holding every row and column: the compiled condensing finds the zeros itself."""
    nw = st.nw
    return np.arange(nw), np.arange(nw), np.arange(st.nx), np.arange(nw)


MAKERS = [random_lifted, structured_lifted, weighted_at_one_stage, larger_structured, without_controls]


@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("make", MAKERS)
def test_compiled_condensing_and_expansion_equal_numpy(make, full):
    assert_compiled_equals_numpy(make, full)


def assert_compiled_equals_numpy(make, full):
    """The compiled condensing and expansion of ``make``'s stages (with every row and column in
    their supports if ``full``) against numpy's."""
    rng = np.random.default_rng(4)
    st = make(rng)
    ref, got = condense(st, "numpy"), condense(st, "compiled", full_supports(st) if full else None)
    for name in ("T", "t", "A", "B", "b", "Q", "l"):
        x = getattr(ref, name)
        np.testing.assert_allclose(
            getattr(got, name), x, rtol=0, atol=1e-12 * max(1.0, np.abs(x).max(initial=0.0)), err_msg=name
        )
    z, lam = rng.standard_normal((len(st.H), st.nx + st.nu)), rng.standard_normal((len(st.H), st.nx))
    for x, y in zip(expand(st, ref, z, lam), expand(st, got, z, lam)):
        np.testing.assert_allclose(y, x, rtol=0, atol=1e-12 * max(1.0, np.abs(x).max(initial=0.0)))


def test_singular_local_equalities_are_reported():
    st = random_lifted(np.random.default_rng(2))
    C = st.C.copy()
    C[3, :, st.nx + st.nu :] = 0.0
    for backend in BACKENDS:
        with pytest.raises(np.linalg.LinAlgError, match="stage 3" if backend == "compiled" else None):
            condense(LiftedStages(st.nx, st.nu, st.H, st.g, C, st.c, st.A, st.b), backend)


@pytest.mark.parametrize("seed", range(20))
def test_a_contact_listed_twice_is_singular_to_the_compiled_lu(seed):
    """Cw = [[M, -J^T], [J, 0]] (rows shuffled) at stage 2, the last three rows of J those of its
    first three: the compiled LU meets an exact zero pivot (a multiplier of exactly 1 between the
    equal rows) and names the stage, which the formulation then condenses as redundant."""
    rng = np.random.default_rng(seed)
    st = larger_structured(rng)
    nz, nv, m = st.nx + st.nu, 11, 6
    W = rng.standard_normal((nv, nv))
    J = rng.standard_normal((m, nv))
    J[3:] = J[:3]
    Cw = np.block([[W @ W.T + np.eye(nv), -J.T], [J, np.zeros((m, m))]])
    C = st.C.copy()
    C[2, :, nz:] = Cw[rng.permutation(nv + m)]
    with pytest.raises(np.linalg.LinAlgError, match="stage 2"):
        condense(LiftedStages(st.nx, st.nu, st.H, st.g, C, st.c, st.A, st.b), "compiled")


def test_condensed_state_equation_and_cost_match_the_substitution():
    rng = np.random.default_rng(9)
    st = random_lifted(rng, S=3)
    cond = condense(st)
    z = rng.standard_normal((3, st.nx + st.nu))
    dw = np.einsum("swz,sz->sw", cond.T, z) + cond.t
    y = np.concatenate((z, dw), axis=1)
    np.testing.assert_allclose(np.einsum("swy,sy->sw", st.C, y) + st.c, 0.0, atol=1e-12)
    nxt = np.einsum("sxy,sy->sx", st.A, y) + st.b
    np.testing.assert_allclose(
        np.einsum("sxz,sz->sx", np.concatenate((cond.A, cond.B), axis=2), z) + cond.b, nxt, atol=1e-12
    )

    def full_cost(y):
        return 0.5 * np.einsum("sy,syx,sx->s", y, st.H, y) + np.einsum("sy,sy->s", st.g, y)

    reduced = 0.5 * np.einsum("sy,syx,sx->s", z, cond.Q, z) + np.einsum("sy,sy->s", cond.l, z)
    at_zero = full_cost(np.concatenate((np.zeros_like(z), cond.t), axis=1))  # the constant dropped
    np.testing.assert_allclose(full_cost(y), reduced + at_zero, atol=1e-10)


@pytest.mark.parametrize("backend", ["numpy", "compiled"])
def test_condensing_into_a_problems_lqr_fills_its_stages_only(backend):
    """Five stages of three controls condensed into stages 7, 2, 9, 0, 4 of an LQR of 11 stages
    and four controls: those stages hold the blocks of a condensing on their own in their first
    three columns of controls; the fourth column and the other stages are untouched."""
    from liftoff.ocp.lqr import LQR

    rng = np.random.default_rng(6)
    st = random_lifted(rng)
    alone = condense(st, backend)
    lqr = LQR.zeros(11, st.nx, st.nu + 1)
    for name in ("A", "B", "Qxx", "Qxu", "Quu", "lx", "lu", "b"):
        getattr(lqr, name)[:] = 7.0
    index = np.array([7, 2, 9, 0, 4])
    into = condense(st, backend, into=(lqr, index))
    for name in ("A", "B", "b", "Q", "l"):
        np.testing.assert_array_equal(getattr(into, name), getattr(alone, name), err_msg=name)
    nu, others = st.nu, np.setdiff1d(np.arange(11), index)
    np.testing.assert_array_equal(lqr.nu[index], nu)
    for name in ("A", "B", "Qxx", "Qxu", "Quu", "lx", "lu", "b"):
        assert np.all(getattr(lqr, name)[others] == 7.0), name
    assert np.all(lqr.B[index, :, nu:] == 7.0) and np.all(lqr.lu[index, nu:] == 7.0)  # beyond the stage's controls
    np.testing.assert_array_equal(lqr.Quu[index, :nu, :nu], alone.Q[:, st.nx :, st.nx :])
