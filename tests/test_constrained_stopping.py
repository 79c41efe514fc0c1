"""Stopping of the proximal algorithms (seed 000 Sec. II-B, seed 003 eq. 14, Alg. 3, Remark 2):
inconsistent constraints end at the least-squares solution with bounded forces and say so,
warm starts, per-row weights, truthful statuses, and the undamped Delassus inverse's error.

The least-squares references are numpy's ``lstsq`` of the KKT system ``[[M, -J^T], [J, 0]]
(a, f) = (h, r)`` (minimum-norm forces) and, physically, one foot held towards the mean of
its two targets (the Baumgarte targets enter ``r`` linearly).
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import atol, load_pair, regular_configurations
from test_constrained_behaviour import ANYMAL_FEET, PROXIMAL, feet_contacts, talos_redundant_problem

from liftoff import dynamics
from liftoff.dynamics import Contact

KP, KD = 100.0, 20.0
OFFSET = np.array([0.0, 0.0, 0.01])  # the two targets of the held-twice foot: 2 cm apart


@pytest.fixture(scope="module")
def anymal_states():
    """ANYmal, four random regular states ``(model, q, v, tau)`` for its four feet."""
    model = load_pair("anymal")[0]
    rng = np.random.default_rng(26)
    q = regular_configurations(model, rng, 4, feet_contacts())
    v, tau = rng.standard_normal((2, len(q), model.nv))
    return model, q, v, tau


def held_at(model, q, shifts):
    """The four feet in 3D contacts, LF_FOOT once per shift of its target (from where it is)."""
    p = dynamics.frame_placement(model, q, ANYMAL_FEET[0])[1]
    lf = [Contact(ANYMAL_FEET[0], "3D", "LOCAL_WORLD_ALIGNED", kp=KP, kd=KD, placement=p + shift) for shift in shifts]
    return lf + feet_contacts()[1:]


def kkt_lstsq(model, q, v, tau, contacts, mu=None):
    """numpy's minimum-norm least-squares solution of the KKT system, rows scaled by
    ``R^-1/2 = diag(mu)^-1/2``: ``(a, f)`` per state."""
    M, J = dynamics.crba(model, q), dynamics.contact_jacobian(model, q, contacts)
    h = tau - dynamics.nonlinear_effects(model, q, v)
    r = -dynamics.contact_acceleration(model, q, v, np.zeros_like(v), contacts)
    m, nv = J.shape[1], model.nv
    d = np.ones(m) if mu is None else 1.0 / np.sqrt(mu)
    out = []
    for b in range(len(q)):
        K = np.block([[M[b], -(d[:, None] * J[b]).T], [d[:, None] * J[b], np.zeros((m, m))]])
        x = np.linalg.lstsq(K, np.concatenate((h[b], d * r[b])), rcond=None)[0]
        out.append(np.concatenate((x[:nv], d * x[nv:])))
    out = np.array(out)
    return out[:, :nv], out[:, nv:]


# ----------------------------------------------------------------------------- inconsistent constraints


@pytest.mark.parametrize("algorithm", PROXIMAL)
def test_a_foot_held_towards_two_targets_gets_the_least_squares_solution(algorithm, anymal_states):
    """One foot held twice, towards targets 2 cm apart: the rows cannot both hold (their
    accelerations differ by kp * 2 cm = 2 m/s^2). The iterations stop at numpy's least-squares
    solution of the KKT system, which holds the foot towards the mean target with half the
    force in each copy; the forces do not grow with the iteration budget (they reached 3e5 N
    after 30 iterations and 3e6 N after 300 when only |J a - r| was tested)."""
    model, q, v, tau = anymal_states
    contacts = held_at(model, q, (OFFSET, -OFFSET))
    a_ref, f_ref = kkt_lstsq(model, q, v, tau, contacts)
    a_mean, f_mean = dynamics.constrained_dynamics(model, q, v, tau, held_at(model, q, (0 * OFFSET,)), algorithm="kkt")
    np.testing.assert_allclose(a_ref, a_mean, rtol=0, atol=atol(a_mean, 1e-9))  # the two references agree

    short, long = (
        dynamics.constrained_dynamics(model, q, v, tau, contacts, max_iter=n, algorithm=algorithm) for n in (30, 300)
    )
    for sol in (short, long):
        assert np.all(sol.status == "least_squares"), sol.status
        assert not np.any(sol.converged)
        assert np.all(sol.iterations <= 10), sol.iterations
        np.testing.assert_array_less(sol.dual_residual, 1e-10)
        np.testing.assert_allclose(sol.residual, KP * 0.01, rtol=1e-6)  # each copy misses by kp * 1 cm
        np.testing.assert_array_less(sol.eom_residual, 1e-8)
    np.testing.assert_array_equal(long.iterations, short.iterations)
    for x, y in zip(long, short):
        np.testing.assert_array_equal(x, y)
    a, f = short
    np.testing.assert_allclose(a, a_ref, rtol=0, atol=atol(a_ref))
    np.testing.assert_allclose(f, f_ref, rtol=0, atol=atol(f_ref))
    assert np.abs(f).max() < 2 * np.abs(f_mean).max()  # bounded: no component along the null space of J^T
    np.testing.assert_allclose(f[:, :3], f[:, 3:6], rtol=0, atol=atol(f_mean))
    np.testing.assert_allclose(f[:, :3] + f[:, 3:6], f_mean[:, :3], rtol=0, atol=atol(f_mean))


@pytest.mark.parametrize("algorithm", ("proxLTL", "proxPV"))
def test_least_squares_at_a_small_mu(algorithm, anymal_states):
    """At mu = 1e-6 the forces would grow by 1e6 N per iteration in the null space of J^T, and
    the rounding of J^T f with them (~1e-9 in the dual residual after a few iterations): once
    the residual stalls the steps take its range part only, and the dual residual reaches
    rounding level. (proxLTLs and constrainedABA are left out: at this mu their equation of
    motion misses tol by itself, see test_small_mu_reports_the_augmented_lagrangian_rounding.)"""
    model, q, v, tau = anymal_states
    contacts = held_at(model, q, (OFFSET, -OFFSET))
    a_ref, f_ref = kkt_lstsq(model, q, v, tau, contacts)
    sol = dynamics.constrained_dynamics(model, q, v, tau, contacts, mu=1e-6, algorithm=algorithm)
    assert np.all(sol.status == "least_squares"), sol.status
    assert np.all(sol.iterations <= 6), sol.iterations
    np.testing.assert_array_less(sol.dual_residual, 1e-11)
    np.testing.assert_allclose(sol[0], a_ref, rtol=0, atol=atol(a_ref))
    np.testing.assert_allclose(sol[1], f_ref, rtol=0, atol=atol(f_ref))


def test_slow_consistent_problems_are_not_called_least_squares(anymal_states):
    """With mu = 1 a consistent problem crawls (the residual shrinks by mu / (mu + sigma) per
    iteration): it runs out of iterations, and is not mistaken for an inconsistent one."""
    model, q, v, tau = anymal_states
    contacts = held_at(model, q, (OFFSET,))
    for algorithm in PROXIMAL:
        sol = dynamics.constrained_dynamics(model, q, v, tau, contacts, mu=1.0, algorithm=algorithm)
        assert np.all(sol.status == "max_iter"), (algorithm, sol.status)
        assert np.all(sol.iterations == 30)
        assert np.all(sol.residual > 1e-10)


# ----------------------------------------------------------------------------- statuses


def test_statuses(anymal_states):
    """``converged`` for consistent problems, ``max_iter`` when the budget is too short; one
    plain string per unbatched state; ``converged`` is ``status == "converged"``."""
    model, q, v, tau = anymal_states
    contacts = held_at(model, q, (OFFSET,))
    sol = dynamics.constrained_dynamics(model, q, v, tau, contacts)
    assert sol.status.tolist() == ["converged"] * len(q)
    np.testing.assert_array_equal(sol.converged, True)
    np.testing.assert_array_less(sol.dual_residual, 1e-9)
    short = dynamics.constrained_dynamics(model, q, v, tau, contacts, max_iter=2)
    assert short.status.tolist() == ["max_iter"] * len(q) and not np.any(short.converged)
    single = dynamics.constrained_dynamics(model, q[0], v[0], tau[0], held_at(model, q[0], (OFFSET, -OFFSET)))
    assert single.status in {"converged", "least_squares", "max_iter"} and single.status == "least_squares"
    assert isinstance(single.status, str) and not single.converged
    jump = dynamics.impulse_dynamics(model, q, v, contacts)
    assert jump.status.tolist() == ["converged"] * len(q)


def talos_soles(n=4, seed=1):
    model = load_pair("talos")[0]
    contacts = [Contact(f, "6D", "LOCAL") for f in ("left_sole_link", "right_sole_link")]
    rng = np.random.default_rng(seed)
    q = regular_configurations(model, rng, n, contacts)
    v, tau = rng.standard_normal((2, n, model.nv))
    return model, q, v, tau, contacts


def test_small_mu_reports_the_augmented_lagrangian_rounding():
    """At mu = 1e-8 the augmented-Lagrangian algorithms (proxLTLs, constrainedABA) factor
    ``M + J^T J / mu`` and scale the residual's rounding by 1/mu into the forces: their
    equation of motion holds to ~1e-6 only, and they say so ("inaccurate") although their
    constraint residual meets tol; proxLTL and proxPV hold it to ~1e-12 and converge."""
    model, q, v, tau, contacts = talos_soles()
    M, J = dynamics.crba(model, q), dynamics.contact_jacobian(model, q, contacts)
    h = tau - dynamics.nonlinear_effects(model, q, v)
    for algorithm in PROXIMAL:
        sol = dynamics.constrained_dynamics(model, q, v, tau, contacts, mu=1e-8, algorithm=algorithm)
        a, f = sol
        eom = np.abs(np.einsum("bij,bj->bi", M, a) - h - np.einsum("bmi,bm->bi", J, f)).max(axis=1)
        np.testing.assert_allclose(sol.eom_residual, eom, rtol=1e-2, atol=1e-11)  # the report is the true residual
        np.testing.assert_array_less(sol.residual, 1e-10)
        scale = np.maximum(np.abs(h).max(axis=1), np.abs(np.einsum("bmi,bm->bi", J, f)).max(axis=1))
        if algorithm in ("proxLTLs", "constrainedABA"):
            assert np.all(eom > 1e-10 * scale), eom / scale
            assert sol.status.tolist() == ["inaccurate"] * len(q)
        else:
            assert np.all(eom <= 1e-10 * scale), eom / scale
            assert sol.status.tolist() == ["converged"] * len(q)
        default = dynamics.constrained_dynamics(model, q, v, tau, contacts, algorithm=algorithm)
        assert default.status.tolist() == ["converged"] * len(q)


# ----------------------------------------------------------------------------- warm start


@pytest.mark.parametrize("algorithm", PROXIMAL)
def test_warm_start_from_the_solution_takes_one_iteration(algorithm):
    model, q, v, tau, contacts = talos_soles(seed=2)
    a, f = dynamics.constrained_dynamics(model, q, v, tau, contacts, algorithm="kkt")
    cold = dynamics.constrained_dynamics(model, q, v, tau, contacts, algorithm=algorithm)
    warm = dynamics.constrained_dynamics(model, q, v, tau, contacts, algorithm=algorithm, warm_start=f)
    assert np.all(cold.iterations >= 3), cold.iterations
    np.testing.assert_array_equal(warm.iterations, 1)
    assert warm.status.tolist() == ["converged"] * len(q)
    np.testing.assert_allclose(warm[0], a, rtol=0, atol=atol(a, 1e-9))
    np.testing.assert_allclose(warm[1], f, rtol=0, atol=atol(f, 1e-9))
    zero = dynamics.constrained_dynamics(model, q, v, tau, contacts, algorithm=algorithm, warm_start=np.zeros(12))
    for x, y in zip(zero, cold):
        np.testing.assert_array_equal(x, y)

    v_plus, impulse = dynamics.impulse_dynamics(model, q, v, contacts, algorithm="kkt")
    jump = dynamics.impulse_dynamics(model, q, v, contacts, algorithm=algorithm, warm_start=impulse)
    np.testing.assert_array_equal(jump.iterations, 1)
    np.testing.assert_allclose(jump[0], v_plus, rtol=0, atol=atol(v_plus, 1e-9))
    single = dynamics.constrained_dynamics(model, q[0], v[0], tau[0], contacts, algorithm=algorithm, warm_start=f[0])
    assert single.iterations == 1


def test_warm_start_shape_is_checked(anymal_states):
    model, q, v, tau = anymal_states
    with pytest.raises(dynamics.DimensionError, match=r"warm_start: expected shape \(12,\) or \(4, 12\)"):
        dynamics.constrained_dynamics(model, q, v, tau, feet_contacts(), warm_start=np.zeros((2, 12)))
    with pytest.raises(ValueError, match="warm_start: the starting forces must be finite"):
        dynamics.impulse_dynamics(model, q, v, feet_contacts(), warm_start=np.full(12, np.nan))


# ----------------------------------------------------------------------------- per-row weights (seed 003 Remark 2)


@pytest.mark.parametrize("algorithm", PROXIMAL)
def test_row_weights_choose_the_least_squares_compromise(algorithm, anymal_states):
    """Weights 1/mu: copy A of the foot (mu = 1e-4) four times stiffer than copy B (4e-4). The
    least-squares solution in the norm R^-1 holds the foot towards (4 A + B) / 5, and the
    forces of least R-norm split 4:1; the lstsq of the KKT with rows scaled by R^-1/2 agrees."""
    model, q, v, tau = anymal_states
    contacts = held_at(model, q, (OFFSET, -OFFSET))
    mu = np.full(15, 1e-4)
    mu[3:6] = 4e-4
    a_ref, f_ref = kkt_lstsq(model, q, v, tau, contacts, mu)
    a_mix, f_mix = dynamics.constrained_dynamics(model, q, v, tau, held_at(model, q, (0.6 * OFFSET,)), algorithm="kkt")
    np.testing.assert_allclose(a_ref, a_mix, rtol=0, atol=atol(a_mix, 1e-9))

    sol = dynamics.constrained_dynamics(model, q, v, tau, contacts, mu=mu, algorithm=algorithm)
    assert np.all(sol.status == "least_squares"), sol.status
    a, f = sol
    np.testing.assert_allclose(a, a_ref, rtol=0, atol=atol(a_ref))
    np.testing.assert_allclose(f, f_ref, rtol=0, atol=atol(f_ref))
    np.testing.assert_allclose(f[:, :3], 0.8 * f_mix[:, :3], rtol=0, atol=atol(f_mix))
    np.testing.assert_allclose(f[:, 3:6], 0.2 * f_mix[:, :3], rtol=0, atol=atol(f_mix))
    unweighted = dynamics.constrained_dynamics(model, q, v, tau, contacts, algorithm=algorithm)[0]
    assert np.abs(unweighted - a).max() > 1e-3 * np.abs(a).max()  # the weights matter


@pytest.mark.parametrize("algorithm", PROXIMAL)
def test_row_weights_split_redundant_forces(algorithm, rng):
    """Consistent, redundant: Talos' contacts listed twice, the first copy three times stiffer.
    The motion is the non-redundant one; the forces of least R-norm split 3:1."""
    model, q, v, tau, contacts, redundant = talos_redundant_problem(rng, n=3)
    a_ref, f_ref = dynamics.constrained_dynamics(model, q, v, tau, contacts, algorithm="kkt")
    mu = np.tile(np.repeat([1e-4, 3e-4], 6), 3)
    sol = dynamics.constrained_dynamics(model, q, v, tau, redundant, mu=mu, algorithm=algorithm)
    assert np.all(sol.converged), sol.status
    np.testing.assert_allclose(sol[0], a_ref, rtol=0, atol=atol(a_ref))
    pairs = sol[1].reshape(len(q), 3, 2, 6)
    f_ref = f_ref.reshape(len(q), 3, 6)
    np.testing.assert_allclose(pairs[:, :, 0], 0.75 * f_ref, rtol=0, atol=atol(f_ref))
    np.testing.assert_allclose(pairs[:, :, 1], 0.25 * f_ref, rtol=0, atol=atol(f_ref))


def test_row_weights_in_the_damped_osim(rng):
    """``(J M^-1 J^T + diag(mu))^-1`` by every damped-OSIM algorithm and by ``delassus``."""
    model = load_pair("anymal")[0]
    contacts = feet_contacts()
    q = regular_configurations(model, rng, 3, contacts)
    J = dynamics.contact_jacobian(model, q, contacts)
    mu = np.linspace(1e-3, 4e-3, 12)
    damped = J @ np.linalg.solve(dynamics.crba(model, q), np.swapaxes(J, 1, 2)) + np.diag(mu)
    expected = np.linalg.inv(damped)
    np.testing.assert_allclose(dynamics.delassus(model, q, contacts, mu)[0], damped, rtol=0, atol=atol(damped, 1e-10))
    for algorithm in dynamics.OSIM_ALGORITHMS:
        osim = dynamics.damped_osim(model, q, contacts, mu, algorithm)
        np.testing.assert_allclose(osim, expected, rtol=0, atol=atol(expected, 1e-9), err_msg=algorithm)
    with pytest.raises(dynamics.DimensionError, match="mu: expected a number or 12 values"):
        dynamics.constrained_dynamics(model, q, np.zeros_like(J[:, 0]), np.zeros_like(J[:, 0]), contacts, mu=mu[:6])
    with pytest.raises(ValueError, match="mu must be"):
        dynamics.damped_osim(model, q, contacts, np.r_[mu[:-1], 0.0])


# ----------------------------------------------------------------------------- the undamped Delassus inverse


def test_undamped_delassus_of_redundant_contacts_says_why_it_fails(rng):
    model, q, _, _, _, redundant = talos_redundant_problem(rng, n=2)
    with pytest.raises(dynamics.SingularConstraintError, match=r"rank 18 < 36 rows .*pass a damping mu > 0"):
        dynamics.delassus(model, q, redundant)
    assert issubclass(dynamics.SingularConstraintError, np.linalg.LinAlgError)  # callers catching numpy's error
    D, osim = dynamics.delassus(model, q, redundant, mu=1e-6)
    identity = np.broadcast_to(np.eye(36), D.shape)
    np.testing.assert_allclose(osim @ D, identity, rtol=0, atol=1e-6)
