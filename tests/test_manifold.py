"""The configuration manifold: integrate, difference and their Jacobians against Pinocchio
and finite differences; random configurations."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from conftest import NSTATES, ROBOTS, finite_differences, load_pair, pin_loop

from liftoff import dynamics

MANIFOLD_ROBOTS = ROBOTS + ["double_pendulum_continuous"]
ARG0, ARG1 = pin.ArgumentPosition.ARG0, pin.ArgumentPosition.ARG1


@pytest.fixture(params=MANIFOLD_ROBOTS)
def pair(request):
    return load_pair(request.param)


def states(model, rng, n=NSTATES, scale=1.0):
    """Two random configurations and a tangent vector ``scale * N(0, 1)``."""
    q0 = dynamics.random_configuration(model, rng, n)
    q1 = dynamics.random_configuration(model, rng, n)
    return q0, q1, scale * rng.standard_normal((n, model.nv))


def test_neutral(pair):
    model, pmodel = pair
    np.testing.assert_array_equal(dynamics.neutral(model), pin.neutral(pmodel))


def test_integrate_and_difference_equal_pinocchio(pair, rng):
    model, pmodel = pair
    q0, q1, v = states(model, rng)
    ref = pin_loop(lambda q, dq: pin.integrate(pmodel, q, dq), q0, v)
    np.testing.assert_allclose(dynamics.integrate(model, q0, v), ref, rtol=0, atol=1e-12)
    ref = pin_loop(lambda a, b: pin.difference(pmodel, a, b), q0, q1)
    np.testing.assert_allclose(dynamics.difference(model, q0, q1), ref, rtol=0, atol=1e-10)
    # single states
    np.testing.assert_allclose(
        dynamics.integrate(model, q0[3], v[3]), pin.integrate(pmodel, q0[3], v[3]), rtol=0, atol=1e-12
    )
    np.testing.assert_allclose(
        dynamics.difference(model, q0[3], q1[3]), pin.difference(pmodel, q0[3], q1[3]), rtol=0, atol=1e-10
    )


def test_manifold_jacobians_equal_pinocchio(pair, rng):
    model, pmodel = pair
    q0, q1, v = states(model, rng)
    dq, dv = dynamics.integrate_jacobians(model, q0, v)
    np.testing.assert_allclose(dq, pin_loop(lambda q, x: pin.dIntegrate(pmodel, q, x, ARG0), q0, v), rtol=0, atol=1e-10)
    np.testing.assert_allclose(dv, pin_loop(lambda q, x: pin.dIntegrate(pmodel, q, x, ARG1), q0, v), rtol=0, atol=1e-10)
    d0, d1 = dynamics.difference_jacobians(model, q0, q1)
    np.testing.assert_allclose(
        d0, pin_loop(lambda a, b: pin.dDifference(pmodel, a, b, ARG0), q0, q1), rtol=0, atol=1e-9
    )
    np.testing.assert_allclose(
        d1, pin_loop(lambda a, b: pin.dDifference(pmodel, a, b, ARG1), q0, q1), rtol=0, atol=1e-9
    )
    # single state
    dq1, dv1 = dynamics.integrate_jacobians(model, q0[0], v[0])
    assert dq1.shape == dv1.shape == (model.nv, model.nv)
    np.testing.assert_allclose(dv1, pin.dIntegrate(pmodel, q0[0], v[0], ARG1), rtol=0, atol=1e-10)
    d01, d11 = dynamics.difference_jacobians(model, q0[0], q1[0])
    np.testing.assert_allclose(d01, pin.dDifference(pmodel, q0[0], q1[0], ARG0), rtol=0, atol=1e-9)
    np.testing.assert_allclose(d11, pin.dDifference(pmodel, q0[0], q1[0], ARG1), rtol=0, atol=1e-9)


def test_manifold_jacobians_equal_finite_differences(pair, rng):
    model, _ = pair
    q0, q1, v = states(model, rng, n=10)
    dq, dv = dynamics.integrate_jacobians(model, q0, v)
    integrate = lambda q, x: dynamics.integrate(model, q, x)  # noqa: E731
    fd = finite_differences(integrate, q0, v, model=model, wrt="configuration", out="configuration")
    np.testing.assert_allclose(dq, fd, rtol=0, atol=1e-6)
    fd = finite_differences(lambda x, q: dynamics.integrate(model, q, x), v, q0, model=model, out="configuration")
    np.testing.assert_allclose(dv, fd, rtol=0, atol=1e-6)
    d0, d1 = dynamics.difference_jacobians(model, q0, q1)
    fd = finite_differences(lambda a, b: dynamics.difference(model, a, b), q0, q1, model=model, wrt="configuration")
    np.testing.assert_allclose(d0, fd, rtol=0, atol=1e-6)
    fd = finite_differences(lambda b, a: dynamics.difference(model, a, b), q1, q0, model=model, wrt="configuration")
    np.testing.assert_allclose(d1, fd, rtol=0, atol=1e-6)


def test_integrate_difference_round_trip(pair, rng):
    model, _ = pair
    q0, q1, v = states(model, rng, scale=0.5)  # rotations below pi: the logarithm inverts exp
    back = dynamics.integrate(model, q0, dynamics.difference(model, q0, q1))
    np.testing.assert_allclose(dynamics.difference(model, q1, back), 0.0, rtol=0, atol=1e-10)
    if model.has_free_flyer:  # q and -q are the same orientation
        back[:, 3:7] *= np.sign(np.sum(back[:, 3:7] * q1[:, 3:7], axis=-1, keepdims=True))
    np.testing.assert_allclose(back, q1, rtol=0, atol=1e-10)
    np.testing.assert_allclose(dynamics.difference(model, q0, dynamics.integrate(model, q0, v)), v, rtol=0, atol=1e-10)
    np.testing.assert_allclose(dynamics.difference(model, q0, q0), 0.0, rtol=0, atol=1e-12)
    np.testing.assert_allclose(dynamics.integrate(model, q0, np.zeros(model.nv)), q0, rtol=0, atol=1e-15)


def test_random_configuration(pair):
    model, _ = pair
    q = dynamics.random_configuration(model, np.random.default_rng(1), 1000)
    assert q.shape == (1000, model.nq)
    lo, hi = model.lower_position_limit, model.upper_position_limit
    assert np.all((q >= lo) & (q <= hi))
    if model.has_free_flyer:
        np.testing.assert_allclose(np.linalg.norm(q[:, 3:7], axis=-1), 1.0, rtol=0, atol=1e-12)
        assert np.all(np.abs(q[:, :3]) <= 1.0)
        # orientations cover SO(3): all signs of every quaternion component occur
        assert np.all(q[:, 3:7].max(0) > 0.5) and np.all(q[:, 3:7].min(0) < -0.5)
    for j in np.flatnonzero(model.nqs == 2):  # continuous joints: on the circle, all around it
        c, s = q[:, model.idx_q[j]], q[:, model.idx_q[j] + 1]
        np.testing.assert_allclose(np.hypot(c, s), 1.0, rtol=0, atol=1e-12)
        assert np.ptp(np.arctan2(s, c)) > 6.0
    scalar = model.idx_q[model.nqs == 1]
    scalar = scalar[scalar >= (7 if model.has_free_flyer else 0)]
    span = (q[:, scalar].max(0) - q[:, scalar].min(0)) / (hi[scalar] - lo[scalar])
    assert np.all(span > 0.9)  # uniform over the whole range, not a corner of it
    # one configuration without size; a seed reproduces the draw
    one = dynamics.random_configuration(model, np.random.default_rng(7))
    assert one.shape == (model.nq,)
    np.testing.assert_array_equal(one, dynamics.random_configuration(model, np.random.default_rng(7)))
