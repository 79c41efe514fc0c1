"""The SX twin of the dynamics (dynamics.symbolic) against the numpy reference, function by
function, on random states of several robots: RNEA, its analytical derivatives (with and
without gravity), the tangent-AD derivatives, frames, centre of mass, the configuration
manifold's difference and its Jacobians (and the inverse the state equation uses)."""

from __future__ import annotations

import casadi as ca
import numpy as np
import pytest
from conftest import atol, random_states

from liftoff import dynamics
from liftoff.dynamics import symbolic as sx
from liftoff.dynamics.inverse_dynamics import derivatives_batch

ROBOTS = ["anymal", "talos", "solo12", "ur5"]
N = 4  # random states per robot


@pytest.fixture(scope="module", params=ROBOTS)
def case(request):
    model = dynamics.load(request.param)
    q, v, a = (ca.SX.sym(n, d) for n, d in (("q", model.nq), ("v", model.nv), ("a", model.nv)))
    return model, q, v, a


def evaluate(inputs, outputs, values):
    f = ca.Function("f", list(inputs), list(outputs))
    return [np.array(x) for x in f.call([ca.DM(x) for x in values])]


@pytest.mark.parametrize("gravity", [True, False])
def test_rnea_and_its_analytical_derivatives(case, gravity, rng):
    model, q, v, a = case
    kin = sx.forward(model, sx.configuration(model, q), v, a)
    outputs = (sx.rnea(model, kin, gravity), *sx.rnea_derivatives(model, kin, gravity))
    for qn, vn, an in zip(*random_states(model, rng, N)):
        tau, dq, dv, M = evaluate((q, v, a), outputs, (qn, vn, an))
        ref = derivatives_batch(model, qn[None], vn[None], an[None], gravity=gravity)
        ref_tau = dynamics.rnea(model, qn, vn, an)
        if not gravity:
            ref_tau = ref_tau - dynamics.generalized_gravity(model, qn)
        np.testing.assert_allclose(tau[:, 0], ref_tau, rtol=0, atol=atol(ref_tau, 1e-10))
        for got, want in zip((dq, dv, M), ref):
            np.testing.assert_allclose(got, want[0], rtol=0, atol=atol(want, 1e-10))


def test_tangent_ad_gives_the_configuration_derivatives(case, rng):
    """AD along q (+) dq to first order (:func:`dynamics.symbolic.configuration`), at dq = 0:
    the RNEA's dtau/dq and the Jacobian of a frame."""
    model, q, v, a = case
    frame = model.frame_names[-1]

    def outputs(cfg):
        kin = sx.forward(model, cfg, v, a)
        return ca.vertcat(sx.rnea(model, kin), sx.frame_placement(model, kin, frame)[1])

    dq = ca.SX.sym("dq", model.nv)
    d = ca.substitute(ca.jacobian(outputs(sx.configuration(model, q, dq)), dq), dq, ca.SX.zeros(model.nv))
    for qn, vn, an in zip(*random_states(model, rng, N)):
        (got,) = evaluate((q, v, a), (d,), (qn, vn, an))
        dtau_dq = dynamics.rnea_derivatives(model, qn, vn, an)[0]
        J = dynamics.frame_jacobian(model, qn, frame, "LOCAL_WORLD_ALIGNED")[:3]
        np.testing.assert_allclose(got[: model.nv], dtau_dq, rtol=0, atol=atol(dtau_dq, 1e-10))
        np.testing.assert_allclose(got[model.nv :], J, rtol=0, atol=1e-12)


def test_frames_and_centre_of_mass(case, rng):
    model, q, _, _ = case
    kin = sx.forward(model, sx.configuration(model, q))
    frames = model.frame_names[1 :: max(1, model.nframes // 5)]
    outputs = [sx.center_of_mass(model, kin)] + [x for f in frames for x in sx.frame_placement(model, kin, f)]
    for qn in dynamics.random_configuration(model, rng, N):
        got = evaluate((q,), outputs, (qn,))
        np.testing.assert_allclose(got[0][:, 0], dynamics.center_of_mass(model, qn), atol=1e-12)
        for k, f in enumerate(frames):
            R, p = dynamics.frame_placement(model, qn, f)
            np.testing.assert_allclose(got[1 + 2 * k], R, atol=1e-12)
            np.testing.assert_allclose(got[2 + 2 * k][:, 0], p, atol=1e-12)


@pytest.mark.parametrize("spread", [1.0, 1e-7, 0.0])  # large, small (Taylor branches) and no rotation
def test_difference_its_jacobians_and_the_inverse(case, spread, rng):
    model, q, _, _ = case
    q1 = ca.SX.sym("q1", model.nq)
    d0, d1 = sx.difference_jacobians(model, q, q1)
    outputs = (sx.difference(model, q, q1), d0, d1, sx.difference_jacobian_inverse(model, q, q1))
    for q0n in dynamics.random_configuration(model, rng, N):
        q1n = dynamics.integrate(model, q0n, spread * rng.standard_normal(model.nv))
        diff, j0, j1, inv = evaluate((q, q1), outputs, (q0n, q1n))
        ref0, ref1 = dynamics.difference_jacobians(model, q0n, q1n)
        np.testing.assert_allclose(diff[:, 0], dynamics.difference(model, q0n, q1n), atol=1e-12)
        np.testing.assert_allclose(j0, ref0, atol=1e-10)
        np.testing.assert_allclose(j1, ref1, atol=1e-10)
        np.testing.assert_allclose(inv @ ref0, np.eye(model.nv), atol=1e-10)


def test_integrate_is_exact_and_difference_is_differentiable_at_the_identity(case, rng):
    """``integrate`` equals the numpy one, and AD through ``difference`` is finite where the two
    configurations coincide (the NLP baselines start there) and gives its Jacobian."""
    model, q, _, _ = case
    dq, q1 = ca.SX.sym("dq", model.nv), ca.SX.sym("q1", model.nq)
    moved = sx.integrate(model, q, dq)
    ad = ca.jacobian(sx.difference(model, q, q1), q1) @ ca.jacobian(sx.integrate(model, q1, dq), dq)
    for q0n in dynamics.random_configuration(model, rng, N):
        step = rng.standard_normal(model.nv)
        (value,) = evaluate((q, dq), (moved,), (q0n, step))
        np.testing.assert_allclose(value[:, 0], dynamics.integrate(model, q0n, step), atol=1e-12)
        (jacobian,) = evaluate((q, q1, dq), (ad,), (q0n, q0n, np.zeros(model.nv)))
        assert np.all(np.isfinite(jacobian))
        _, d1 = dynamics.difference_jacobians(model, q0n, q0n)
        np.testing.assert_allclose(jacobian, d1, atol=1e-10)


@pytest.mark.parametrize("reference", ["LOCAL", "WORLD"])
def test_6d_loop_closure_rows_equal_the_numpy_ones(reference, rng):
    """Velocity and acceleration rows and the generalized force ``J^T f`` of a 6D loop closure
    (Talos' hands welded) in the SX model against :mod:`dynamics.contacts`."""
    model = dynamics.load("talos")
    loop = dynamics.Contact("arm_left_7_link", "6D", reference, frame2="arm_right_7_link")
    q, v, a = random_states(model, rng, 3)
    f = rng.standard_normal((3, 6))
    qs, vs, as_, fs = (ca.SX.sym(n, k) for n, k in (("q", model.nq), ("v", model.nv), ("a", model.nv), ("f", 6)))
    rows = sx.contact_rows(model, sx.forward(model, sx.configuration(model, qs), vs, as_), loop, fs)
    tau = sx.generalized_forces(model, sx.forward(model, sx.configuration(model, qs)), rows.wrenches)
    fn = ca.Function("rows", [qs, vs, as_, fs], [rows.velocity, rows.acceleration, tau])
    J = dynamics.contact_jacobian(model, q, [loop])
    for b in range(3):
        vel, acc, gen = (np.asarray(x).ravel() for x in fn(q[b], v[b], a[b], f[b]))
        np.testing.assert_allclose(vel, dynamics.contact_velocity(model, q[b], v[b], [loop]), atol=1e-10)
        np.testing.assert_allclose(acc, dynamics.contact_acceleration(model, q[b], v[b], a[b], [loop]), atol=1e-9)
        np.testing.assert_allclose(gen, J[b].T @ f[b], atol=1e-10)
