"""Interior-point arithmetic: the condensed step is the full Newton step; a fixed-barrier
Newton loop reaches the central path of a convex QP."""

import numpy as np
import pytest

from liftoff.ocp import pdipm


def random_qp(rng, n=6, m=9):
    W = rng.standard_normal((n, n))
    return W @ W.T + np.eye(n), rng.standard_normal(n), rng.standard_normal((m, n)), rng.uniform(0.5, 1.5, m)


@pytest.mark.parametrize("seed", range(4))
def test_condensed_step_equals_full_newton_step(seed):
    """min 1/2 x^T H x + c^T x s.t. G x + h >= 0: eliminating (ds, dz) gives the direction
    of the full (x, s, z) Newton system."""
    rng = np.random.default_rng(seed)
    H, c, G, h = random_qp(rng)
    n, m = len(c), len(h)
    x, s, z, eps = rng.standard_normal(n), rng.uniform(0.1, 2, m), rng.uniform(0.1, 2, m), 1e-2
    r_p, r_c = pdipm.residuals(G @ x + h, s, z, eps)
    L_x = H @ x + c - G.T @ z
    full = np.block(
        [
            [H, np.zeros((n, m)), -G.T],
            [G, -np.eye(m), np.zeros((m, m))],
            [np.zeros((m, n)), np.diag(z), np.diag(s)],
        ]
    )
    expected = np.linalg.solve(full, -np.concatenate((L_x, r_p, r_c)))
    H_add, g_add = pdipm.condense(G, s, z, r_p, r_c)
    dx = np.linalg.solve(H + H_add, -(L_x + g_add))
    ds, dz = pdipm.expand(G, dx, s, z, r_p, r_c)
    np.testing.assert_allclose(np.concatenate((dx, ds, dz)), expected, atol=1e-10)


def test_fixed_barrier_newton_reaches_the_central_path():
    rng = np.random.default_rng(11)
    H, c, G, h = random_qp(rng)
    eps = 1e-4
    x = np.zeros(len(c))
    s, z = pdipm.initial_slack_and_dual(G @ x + h, eps)
    for _ in range(60):
        r_p, r_c = pdipm.residuals(G @ x + h, s, z, eps)
        L_x = H @ x + c - G.T @ z
        if np.linalg.norm(np.concatenate((L_x, r_p, r_c))) < 1e-12:
            break
        H_add, g_add = pdipm.condense(G, s, z, r_p, r_c)
        dx = np.linalg.solve(H + H_add, -(L_x + g_add))
        ds, dz = pdipm.expand(G, dx, s, z, r_p, r_c)
        a_p, a_d = pdipm.fraction_to_boundary(s, ds), pdipm.fraction_to_boundary(z, dz)
        x, s, z = x + a_p * dx, s + a_p * ds, z + a_d * dz
    np.testing.assert_allclose(s * z, eps, rtol=1e-8)
    np.testing.assert_allclose(G @ x + h, s, atol=1e-10)
    np.testing.assert_allclose(H @ x + c, G.T @ z, atol=1e-10)
    assert np.all(s > 0) and np.all(z > 0)
    assert pdipm.complementarity_error(s, z, eps) < 1e-20


def test_initial_slack_is_interior_and_on_the_central_path():
    s, z = pdipm.initial_slack_and_dual(np.array([-1.0, 0.0, 2.0]), 1e-2)
    np.testing.assert_allclose(s, [0.1, 0.1, 2.0])
    np.testing.assert_allclose(s * z, 1e-2)


def test_fraction_to_boundary_keeps_a_margin():
    v, dv = np.array([1.0, 2.0, 1.0]), np.array([-2.0, 1.0, -0.5])
    alpha = pdipm.fraction_to_boundary(v, dv)
    assert alpha == pytest.approx(0.995 * 0.5)
    assert np.all(v + alpha * dv >= (1 - 0.995) * v - 1e-15)
    assert pdipm.fraction_to_boundary(v, np.abs(dv)) == 1.0
    assert pdipm.fraction_to_boundary(np.zeros((3, 0)), np.zeros((3, 0))) == 1.0  # stages without inequalities
