"""FDDP and iLQR (solvers.ddp) on toy shooting problems with known answers, the relaxed
barrier, and the non-lifted shooting problem of an OCP (ocp.shooting) against finite
differences and against the interior point."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest
from test_cli_solve import TINY

from liftoff.ocp.formulation import Formulation
from liftoff.ocp.lqr import LQR, TerminalLQR
from liftoff.ocp.relaxed_barrier import relaxed_barrier
from liftoff.ocp.shooting import Shooting
from liftoff.problems.tasks.config import parse_config
from liftoff.problems.tasks.gaits import build_problem
from liftoff.solvers.ddp import DDPOptions, solve_ddp
from liftoff.solvers.ipm import Options, solve

# ---------------------------------------------------------------------------- relaxed barrier


def test_relaxed_barrier_is_the_log_above_delta_and_c2_at_it():
    delta = 0.3
    g = np.array([0.5, 2.0, 10.0])
    value, d1, d2 = relaxed_barrier(g, delta)
    np.testing.assert_allclose(value, -np.log(g))
    np.testing.assert_allclose(d1, -1 / g)
    np.testing.assert_allclose(d2, 1 / g**2)
    for part in relaxed_barrier(np.array([delta - 1e-9, delta + 1e-9]), delta):  # value, B', B''
        assert part[0] == pytest.approx(part[1], rel=1e-7)


def test_relaxed_barrier_derivatives_match_finite_differences():
    delta, h = 0.2, 1e-6
    g = np.array([-3.0, -0.1, 0.05, 0.19, 0.25, 4.0])
    value, d1, d2 = relaxed_barrier(g, delta)
    plus, minus = relaxed_barrier(g + h, delta), relaxed_barrier(g - h, delta)
    np.testing.assert_allclose(d1, (plus[0] - minus[0]) / (2 * h), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(d2, (plus[1] - minus[1]) / (2 * h), rtol=1e-6, atol=1e-5)
    assert np.all(np.isfinite(value)) and value[0] > value[1] > value[2]  # finite and decreasing when infeasible


@pytest.mark.parametrize("delta", [0.0, -1.0, np.nan])
def test_relaxed_barrier_refuses_a_bad_relaxation(delta):
    with pytest.raises(ValueError, match="relaxation"):
        relaxed_barrier(1.0, delta)


# ---------------------------------------------------------------------------- toy problems


class Toy:
    """``x_{k+1} = A x_k + B u_k + c - h curvature x_k^3`` (elementwise) in R^2, cost
    ``1/2 (x^T Q x + u^T R u) + q^T x`` per stage and ``1/2 x^T Q x`` at the end: linear-
    quadratic when ``curvature = 0``. Implements :class:`solvers.ddp.ShootingProblem`."""

    backend, barrier = "numpy", 1.0

    def __init__(self, K=8, curvature=0.0, R=0.1, seed=0):
        rng = np.random.default_rng(seed)
        self.K, self.curvature, self.h = K, curvature, 0.1
        self.A = np.array([[1.0, 0.1], [-0.2, 0.95]])
        self.B = np.array([[0.0], [0.1]])
        self.c = np.array([0.05, -0.02])
        self.Q, self.R, self.q = np.diag([2.0, 0.5]), R * np.eye(1), np.array([0.3, -0.1])
        self.x0 = np.array([1.0, -0.5])
        self.nu = np.ones(K, dtype=np.intc)
        self.guess = (rng.normal(size=(K + 1, 2)), rng.normal(size=(K, 1)))

    def initial_guess(self):
        return self.guess[0].copy(), self.guess[1].copy()

    def integrate(self, xs, dxs):
        return xs + dxs

    def difference(self, xs0, xs1):
        return xs1 - xs0

    def step(self, k, x, u):
        return self.A @ x + self.B @ u + self.c - self.h * self.curvature * x**3

    def linearize(self, xs, us):
        K = self.K
        lqr = LQR.zeros(K, 2, 1)
        gaps = np.zeros((K + 1, 2))
        gaps[0] = self.x0 - xs[0]
        cost = 0.0
        for k in range(K):
            A = self.A - 3 * self.h * self.curvature * np.diag(xs[k] ** 2)
            gaps[k + 1] = self.step(k, xs[k], us[k]) - xs[k + 1]
            gradient = (self.Q @ xs[k] + self.q, self.R @ us[k])
            lqr.set(k, A, self.B, gaps[k + 1], self.Q, np.zeros((2, 1)), self.R, *gradient)
            cost += 0.5 * (xs[k] @ self.Q @ xs[k] + us[k] @ self.R @ us[k]) + self.q @ xs[k]
        cost += 0.5 * xs[K] @ self.Q @ xs[K]
        terminal = TerminalLQR(self.Q, self.Q @ xs[K])
        return SimpleNamespace(
            lqr=lqr, terminal=terminal, gaps=gaps, objective=cost, cost=cost, inequality_violation=0.0
        )

    def iterate(self, xs, us, lin):
        return xs, us

    def optimum(self):
        """The linear-quadratic problem's solution from its dense KKT system."""
        K, n = self.K, 2
        nz = (K + 1) * n + K
        H, g = np.zeros((nz, nz)), np.zeros(nz)
        E, e = np.zeros(((K + 1) * n, nz)), np.zeros((K + 1) * n)
        X = lambda k: slice(k * n, (k + 1) * n)  # noqa: E731
        U = lambda k: slice((K + 1) * n + k, (K + 1) * n + k + 1)  # noqa: E731
        for k in range(K + 1):
            H[X(k), X(k)] = self.Q
            g[X(k)] = self.q if k < K else 0.0
        E[X(0), X(0)], e[X(0)] = np.eye(n), self.x0
        for k in range(K):
            H[U(k), U(k)] = self.R
            E[X(k + 1), X(k + 1)], E[X(k + 1), X(k)], E[X(k + 1), U(k)] = np.eye(n), -self.A, -self.B
            e[X(k + 1)] = self.c
        kkt = np.block([[H, E.T], [E, np.zeros((len(e), len(e)))]])
        z = np.linalg.solve(kkt, np.concatenate((-g, e)))[:nz]
        return z[: (K + 1) * n].reshape(K + 1, n), z[(K + 1) * n :].reshape(K, 1)


@pytest.mark.parametrize("method", ["fddp", "ilqr"])
def test_one_iteration_solves_a_linear_quadratic_problem_from_an_infeasible_guess(method):
    toy = Toy()
    xs_star, us_star = toy.optimum()
    one = solve_ddp(toy, method, DDPOptions(max_iterations=1))
    xs, us = one.iterate
    assert one.history[0].alpha_primal == 1.0
    np.testing.assert_allclose(xs, xs_star, atol=1e-7)
    np.testing.assert_allclose(us, us_star, atol=1e-7)
    full = solve_ddp(toy, method)
    assert full.converged and full.iterations == 2  # the second one sees nothing left to gain
    assert full.max_constraint_violation < 1e-12  # closed gaps


def test_the_line_search_cuts_steps_and_feasible_iterates_only_descend():
    toy = Toy(K=20, curvature=10.0, seed=1)
    toy.guess = (np.ones((21, 2)), np.ones((20, 1)))
    result = solve_ddp(toy, "fddp", DDPOptions(max_iterations=100))
    assert result.converged
    steps = [h.alpha_primal for h in result.history]
    assert min(steps) < 1  # the full step was refused at least once
    costs = [h.cost for h in result.history] + [result.cost]
    feasible = next(i for i, h in enumerate(result.history) if h.alpha_primal == 1.0) + 1
    assert np.all(np.diff(costs[feasible:]) <= 1e-12)
    xs, us = result.iterate
    for k in range(toy.K):  # a rollout: the gaps are closed
        np.testing.assert_allclose(toy.step(k, xs[k], us[k]), xs[k + 1], atol=1e-12)


def test_the_regularization_rises_until_the_backward_pass_is_convex_and_stops_at_its_maximum():
    toy = Toy(R=-0.5)  # a concave control cost: Quu < 0 without regularization
    capped = solve_ddp(toy, "fddp", DDPOptions(reg_max=1e-2))
    assert capped.status == "diverged" and "regularization" in capped.message
    assert capped.iterations == 0
    free = solve_ddp(toy, "fddp", DDPOptions(max_iterations=2))
    assert free.iterations == 2  # the regularization made the backward pass succeed
    assert free.history[1].cost < free.history[0].cost or free.cost < free.history[1].cost


def test_unknown_method_and_bad_options_are_refused():
    with pytest.raises(ValueError, match="unknown method"):
        solve_ddp(Toy(), "newton")
    with pytest.raises(ValueError, match="regularization"):
        DDPOptions(reg_min=1.0, reg_max=0.1)


# ---------------------------------------------------------------------------- the OCP as a shooting problem


@pytest.fixture(scope="module")
def tiny_ocp():
    return build_problem(parse_config(TINY))


def test_step_and_gaps_agree_and_a_rollout_has_none(tiny_ocp):
    sh = Shooting(tiny_ocp, backend="numpy")
    xs, us = sh.initial_guess()
    lin = sh.linearize(xs, us)
    for k in range(sh.K):
        gap = sh.difference(xs[k + 1][None], sh.step(k, xs[k], us[k, : sh.nu[k]])[None])[0]
        np.testing.assert_allclose(lin.gaps[k + 1], gap, atol=1e-12)
    rolled = [sh.x0]
    for k in range(sh.K):
        rolled.append(sh.step(k, rolled[-1], us[k, : sh.nu[k]]))
    assert np.max(np.abs(sh.linearize(np.array(rolled), us).gaps)) < 1e-12


def test_linearization_matches_finite_differences_of_step_and_objective(tiny_ocp):
    """On a rollout: ``A, B`` are the derivatives of ``f_k`` in the tangents, ``lx, lu`` the
    gradient of the objective (cost and relaxed barrier, some rows in each branch). Only stage
    ``k``'s terms of the objective hold ``x_k`` and ``u_k``: its differences are those of that
    stage's terms (:func:`_stage_objective`), the others' cancel."""
    sh = Shooting(tiny_ocp, barrier=0.3, relaxation=20.0, backend="numpy")
    xs, us = sh.initial_guess()
    rolled = [sh.x0]
    for k in range(sh.K):
        rolled.append(sh.step(k, rolled[-1], us[k, : sh.nu[k]]))
    xs = np.array(rolled)
    lin = sh.linearize(xs, us)
    g = np.concatenate([ev for ev in _inequalities(sh, xs, us)])
    assert np.any(g < sh.relaxation) and np.any(g > sh.relaxation)  # both branches of the barrier
    h = 1e-6
    for k in (1, 3):  # a contact stage of each kind of support
        n, ndx = sh.nu[k], lin.lqr.A.shape[1]
        f = sh.step(k, xs[k], us[k, :n])
        A = np.zeros((ndx, ndx))
        gx = np.zeros(ndx)
        for i in range(ndx):
            dx = np.zeros(ndx)
            dx[i] = h
            plus, minus = (sh.integrate(xs[k][None], s * dx[None])[0] for s in (1, -1))
            A[:, i] = (sh.difference(f[None], sh.step(k, plus, us[k, :n])[None])[0]) / h
            A[:, i] -= sh.difference(f[None], sh.step(k, minus, us[k, :n])[None])[0] / h
            A[:, i] /= 2
            gx[i] = (_stage_objective(sh, k, plus, us[k]) - _stage_objective(sh, k, minus, us[k])) / (2 * h)
        np.testing.assert_allclose(lin.lqr.A[k], A, atol=1e-5)
        np.testing.assert_allclose(lin.lqr.lx[k], gx, rtol=1e-5, atol=1e-4)
        B, gu = np.zeros((ndx, n)), np.zeros(n)
        for j in range(n):
            du = np.zeros(n)
            du[j] = h
            up, um = us.copy(), us.copy()
            up[k, :n] += du
            um[k, :n] -= du
            B[:, j] = sh.difference(sh.step(k, xs[k], um[k, :n])[None], sh.step(k, xs[k], up[k, :n])[None])[0] / (2 * h)
            gu[j] = (_stage_objective(sh, k, xs[k], up[k]) - _stage_objective(sh, k, xs[k], um[k])) / (2 * h)
        np.testing.assert_allclose(lin.lqr.B[k, :, :n], B, atol=1e-5)
        np.testing.assert_allclose(lin.lqr.lu[k, :n], gu, rtol=1e-5, atol=1e-4)


def _stage_objective(sh, k, x, u):
    """Stage ``k``'s terms of the objective, cost plus ``eps`` times the relaxed barrier, at its
    knot ``x`` and controls ``u`` (the next knot, which they do not hold: ``x``)."""
    group, u = sh.singles[k], u[None, : sh.nu[k]]
    q, v, _ = sh.split(x[None])
    w = sh.single.dynamics(group, q, v, u)
    ev = sh.single.evaluate(group, q, v, u, w, q, v)
    return float(ev.cost.sum()) + sh.barrier * float(relaxed_barrier(ev.ineq.g, sh.relaxation)[0].sum())


def _inequalities(sh, xs, us):
    q, v, _ = sh.split(xs)
    for group in sh.formulation.groups:
        idx = group.index
        u = us[idx, : sh.nu[idx[0]]]
        w = sh.stages.dynamics(group, q[idx], v[idx], u)
        yield sh.stages.inequalities(group, q[idx], v[idx], u, w[:, sh.model.nv :]).g.ravel()


@pytest.mark.parametrize("method", ["fddp", "ilqr"])
def test_without_inequalities_ddp_reaches_the_interior_points_optimum(tiny_ocp, method):
    ocp = dataclasses.replace(tiny_ocp, friction=None, limits=())
    ddp = solve_ddp(Shooting(ocp, backend="numpy"), method)
    ipm = solve(Formulation(ocp, "nonlifted", "numpy"), Options(tol=1e-9))
    assert ddp.converged and ddp.iterations <= 15
    assert ddp.cost == pytest.approx(ipm.cost, rel=1e-9)
    np.testing.assert_allclose(ddp.iterate.q, ipm.iterate.q, atol=1e-6)


def test_with_a_barrier_inside_its_log_branch_fddp_solves_the_interior_points_barrier_problem(tiny_ocp):
    """The relaxed barrier's log branch is the barrier problem whose solution the interior
    point approaches at a fixed barrier: the same cost, and every inequality satisfied."""
    ddp = solve_ddp(Shooting(tiny_ocp, barrier=0.1, relaxation=1e-4, backend="numpy"), "fddp")
    ipm = solve(Formulation(tiny_ocp, "nonlifted", "numpy"), Options(barrier=0.1, tol=1e-9))
    assert ddp.converged
    assert ddp.cost == pytest.approx(ipm.cost, rel=1e-7)
    assert ddp.max_constraint_violation < 1e-12
