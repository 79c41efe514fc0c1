"""Lifted ANYmal stages: linearizations against finite differences of their residuals on the
manifold, and condensing equal to the uncondensed Newton step (seed 004 eq. 18-28, 32-35)."""

import numpy as np
import pytest
from test_condensing import dense_solution

from liftoff import dynamics
from liftoff.dynamics import Contact
from liftoff.ocp import TerminalLQR
from liftoff.ocp.condensing import condense, expand
from liftoff.ocp.lifted import actuation, contact_stages, impulse_stages
from liftoff.solvers import riccati

FEET = ("LF_FOOT", "LH_FOOT", "RF_FOOT", "RH_FOOT")
Q_STAND = np.array([0, 0, 0.4792, 0, 0, 0, 1, -0.1, 0.7, -1.0, -0.1, -0.7, 1.0, 0.1, 0.7, -1.0, 0.1, -0.7, 1.0])


@pytest.fixture(scope="module")
def anymal():
    return dynamics.load("anymal")


def near_standing(model, rng, S):
    return dynamics.integrate(model, Q_STAND, 0.1 * rng.standard_normal((S, model.nv)))


def random_cost(rng, S, ny):
    W = rng.standard_normal((S, ny, ny))
    return W @ np.swapaxes(W, 1, 2) + np.eye(ny), rng.standard_normal((S, ny))


def contact_case(model, rng, feet, S=3):
    contacts = [
        Contact(f, "3D", "LOCAL_WORLD_ALIGNED", kp=625.0, kd=50.0, placement=rng.standard_normal(3) * 0.1) for f in feet
    ]
    nv, m = model.nv, 3 * len(feet)
    q, q_next = near_standing(model, rng, S), near_standing(model, rng, S)
    v, v_next, a = (rng.standard_normal((S, nv)) for _ in range(3))
    f, u = 50 * rng.standard_normal((S, m)), rng.standard_normal((S, nv - 6))
    return contacts, (q, v, a, f, u, q_next, v_next)


def contact_residuals(model, contacts, dt, q, v, a, f, u, q_next, v_next):
    """The nonlinear residuals linearized by contact_stages: (F_q, F_v), and the local ones."""
    Fq = dynamics.difference(model, q_next, q) + dt * v
    Fv = v + dt * a - v_next
    local = np.concatenate(
        (
            dynamics.contact_inverse_dynamics(model, q, v, a, f, contacts) - u @ actuation(model).T,
            dynamics.contact_acceleration(model, q, v, a, contacts),
        ),
        axis=1,
    )
    return Fq, Fv, local


@pytest.mark.parametrize("feet", [FEET[:3], FEET], ids=["3 contacts", "4 contacts"])
def test_contact_stage_linearization_matches_finite_differences(anymal, feet):
    """C is the local residuals' Jacobian in y; (A, b) solve the linearized state equation for
    dx_next, so along (dy, dx_next = A dy + b) the state residuals change by -F."""
    model, rng = anymal, np.random.default_rng(len(feet))
    contacts, (q, v, a, f, u, q_next, v_next) = contact_case(model, rng, feet)
    dt, nv, S = 0.02, model.nv, len(q)
    stages = contact_stages(
        model, contacts, dt, q, v, a, f, u, q_next, v_next, *random_cost(rng, S, 2 * nv + 12 + nv + f.shape[1])
    )
    dy = rng.standard_normal((S, stages.A.shape[2]))
    dx_next = np.einsum("sxy,sy->sx", stages.A, dy) + stages.b
    nu = u.shape[1]
    parts = np.split(dy, np.cumsum([nv, nv, nu, nv]), axis=1)  # dq, dv, du, da, df

    def residuals(eps):
        return contact_residuals(
            model,
            contacts,
            dt,
            dynamics.integrate(model, q, eps * parts[0]),
            v + eps * parts[1],
            a + eps * parts[3],
            f + eps * parts[4],
            u + eps * parts[2],
            dynamics.integrate(model, q_next, eps * dx_next[:, :nv]),
            v_next + eps * dx_next[:, nv:],
        )

    h = 1e-6
    (Fq_p, Fv_p, loc_p), (Fq_m, Fv_m, loc_m), (Fq, Fv, loc) = residuals(h), residuals(-h), residuals(0.0)
    dFq, dFv, dloc = (Fq_p - Fq_m) / (2 * h), (Fv_p - Fv_m) / (2 * h), (loc_p - loc_m) / (2 * h)
    np.testing.assert_allclose(stages.c, loc, atol=1e-9)
    np.testing.assert_allclose(np.einsum("swy,sy->sw", stages.C, dy), dloc, rtol=1e-5, atol=1e-5 * np.abs(dloc).max())
    # (A, b) solve the linearized state equation for dx_next: along (dy, A dy + b), dF = -F
    np.testing.assert_allclose(dFv + Fv, 0.0, atol=1e-6)
    np.testing.assert_allclose(dFq + Fq, 0.0, atol=1e-6 * max(1, np.abs(dFq).max()))


def test_filtered_contact_stage_linearization_matches_finite_differences(anymal):
    """With a torque filter (seed 001 eq. 49): y = (dq, dv, dtau, du, da, df), the joints
    receive S tau, and F_tau = g tau + (1 - g) u - tau_next is solved for dtau_next exactly."""
    model, rng = anymal, np.random.default_rng(11)
    contacts, (q, v, a, f, u, q_next, v_next) = contact_case(model, rng, FEET)
    dt, nv, S, nu = 0.02, model.nv, len(q), u.shape[1]
    tau, tau_next = (rng.standard_normal((S, nu)) for _ in range(2))
    gain = np.exp(-2 * np.pi * 5.0 * dt) * np.ones(S)
    ny = 2 * nv + 2 * nu + nv + f.shape[1]
    stages = contact_stages(
        model, contacts, dt, q, v, a, f, u, q_next, v_next, *random_cost(rng, S, ny), (tau, tau_next, gain)
    )
    assert stages.A.shape == (S, 2 * nv + nu, ny) and stages.C.shape[2] == ny
    dy = rng.standard_normal((S, ny))
    dx_next = np.einsum("sxy,sy->sx", stages.A, dy) + stages.b
    dq, dv, dtau, du, da, df = np.split(dy, np.cumsum([nv, nv, nu, nu, nv]), axis=1)

    def residuals(eps):
        Fq, Fv, _ = contact_residuals(
            model,
            contacts,
            dt,
            dynamics.integrate(model, q, eps * dq),
            v + eps * dv,
            a + eps * da,
            f + eps * df,
            u + eps * du,
            dynamics.integrate(model, q_next, eps * dx_next[:, :nv]),
            v_next + eps * dx_next[:, nv : 2 * nv],
        )
        t, w = tau + eps * dtau, u + eps * du
        local = np.concatenate(
            (
                dynamics.contact_inverse_dynamics(
                    model, dynamics.integrate(model, q, eps * dq), v + eps * dv, a + eps * da, f + eps * df, contacts
                )
                - t @ actuation(model).T,
                dynamics.contact_acceleration(
                    model, dynamics.integrate(model, q, eps * dq), v + eps * dv, a + eps * da, contacts
                ),
            ),
            axis=1,
        )
        Ftau = gain[:, None] * t + (1 - gain[:, None]) * w - (tau_next + eps * dx_next[:, 2 * nv :])
        return Fq, Fv, Ftau, local

    h = 1e-6
    plus, minus, zero = residuals(h), residuals(-h), residuals(0.0)
    dFq, dFv, dFtau, dloc = ((p - m) / (2 * h) for p, m in zip(plus, minus))
    Fq, Fv, Ftau, loc = zero
    np.testing.assert_allclose(stages.c, loc, atol=1e-9)
    np.testing.assert_allclose(np.einsum("swy,sy->sw", stages.C, dy), dloc, rtol=1e-5, atol=1e-5 * np.abs(dloc).max())
    np.testing.assert_allclose(dFtau + Ftau, 0.0, atol=1e-8)
    np.testing.assert_allclose(dFv + Fv, 0.0, atol=1e-6)
    np.testing.assert_allclose(dFq + Fq, 0.0, atol=1e-6 * max(1, np.abs(dFq).max()))


def test_impulse_stage_linearization_matches_finite_differences(anymal):
    model, rng = anymal, np.random.default_rng(5)
    contacts = [Contact(f, "3D", "LOCAL_WORLD_ALIGNED") for f in FEET]
    S, nv, m = 3, model.nv, 12
    q, q_next = near_standing(model, rng, S), near_standing(model, rng, S)
    v, dv, v_next = (rng.standard_normal((S, nv)) for _ in range(3))
    impulse = rng.standard_normal((S, m))
    stages = impulse_stages(model, contacts, q, v, dv, impulse, q_next, v_next, *random_cost(rng, S, 3 * nv + m))
    dy = rng.standard_normal((S, 3 * nv + m))
    dx_next = np.einsum("sxy,sy->sx", stages.A, dy) + stages.b

    def residuals(eps):
        qq, vv = dynamics.integrate(model, q, eps * dy[:, :nv]), v + eps * dy[:, nv : 2 * nv]
        dvv, ii = dv + eps * dy[:, 2 * nv : 3 * nv], impulse + eps * dy[:, 3 * nv :]
        qn, vn = dynamics.integrate(model, q_next, eps * dx_next[:, :nv]), v_next + eps * dx_next[:, nv:]
        local = np.concatenate(
            (
                dynamics.impulse_inverse_dynamics(model, qq, dvv, ii, contacts),
                dynamics.contact_velocity(model, qq, vv + dvv, contacts),
            ),
            axis=1,
        )
        return dynamics.difference(model, qn, qq), vv + dvv - vn, local

    h = 1e-6
    (Fq_p, Fv_p, loc_p), (Fq_m, Fv_m, loc_m), (Fq, Fv, loc) = residuals(h), residuals(-h), residuals(0.0)
    np.testing.assert_allclose(stages.c, loc, atol=1e-9)
    dloc = (loc_p - loc_m) / (2 * h)
    np.testing.assert_allclose(np.einsum("swy,sy->sw", stages.C, dy), dloc, rtol=1e-5, atol=1e-5 * np.abs(dloc).max())
    np.testing.assert_allclose((Fq_p - Fq_m) / (2 * h) + Fq, 0.0, atol=1e-6)
    np.testing.assert_allclose((Fv_p - Fv_m) / (2 * h) + Fv, 0.0, atol=1e-6)


@pytest.mark.parametrize("kind", ["3 contacts", "4 contacts", "impulse"])
def test_condensed_direction_equals_uncondensed_on_anymal_stages(anymal, kind):
    """Seed 004's condensing on real stages: condense -> Riccati -> expand equals the solve of
    the uncondensed KKT system (primal, costates and the multipliers beta of eq. 16, 5 / 9, 12)."""
    model, rng = anymal, np.random.default_rng(11)
    nv = model.nv
    if kind == "impulse":
        contacts = [Contact(f, "3D", "LOCAL_WORLD_ALIGNED") for f in FEET]
        S = 2
        q, q_next = near_standing(model, rng, S), near_standing(model, rng, S)
        v, dv, v_next = (rng.standard_normal((S, nv)) for _ in range(3))
        stages = impulse_stages(
            model, contacts, q, v, dv, rng.standard_normal((S, 12)), q_next, v_next, *random_cost(rng, S, 3 * nv + 12)
        )
    else:
        feet = FEET[:3] if kind == "3 contacts" else FEET
        contacts, (q, v, a, f, u, q_next, v_next) = contact_case(model, rng, feet, S=2)
        ny = 2 * nv + 12 + nv + f.shape[1]
        stages = contact_stages(model, contacts, 0.02, q, v, a, f, u, q_next, v_next, *random_cost(rng, len(q), ny))
    nx = stages.nx
    W = rng.standard_normal((nx, nx))
    terminal = TerminalLQR(W @ W.T + np.eye(nx), rng.standard_normal(nx))
    dx0 = 0.1 * rng.standard_normal(nx)
    cond = condense(stages)
    sol = riccati([cond.stage(i, nx) for i in range(len(stages.H))], terminal, dx0)
    dw, beta = expand(stages, cond, np.concatenate((sol.dx[:-1], sol.du), axis=1), np.array(sol.lam[1:]))
    y, lam, beta_ref = dense_solution(stages, terminal, dx0)
    ny = stages.H.shape[1]
    Y = y[: len(stages.H) * ny].reshape(len(stages.H), ny)
    scale = max(1.0, np.abs(Y).max())
    np.testing.assert_allclose(np.array(sol.dx[:-1]), Y[:, :nx], atol=1e-8 * scale)
    np.testing.assert_allclose(dw, Y[:, nx + stages.nu :], atol=1e-8 * scale)
    np.testing.assert_allclose(np.array(sol.lam), lam, atol=1e-8 * max(1.0, np.abs(lam).max()))
    np.testing.assert_allclose(beta, beta_ref, atol=1e-8 * max(1.0, np.abs(beta_ref).max()))
