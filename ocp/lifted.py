"""Linearized lifted stages of a rigid-body OCP (seed 004 Sec. III-A, III-B).

State ``x = (q, v)``, tangent ``dx = (dq, dv)``. A contact stage of time step ``dt`` has the
control ``u`` (torques of the actuated joints, ``S u`` in joint space) and the lifted
variables ``w = (a, f)``; an impulse stage has no control and ``w = (dv, Lambda)``.

State equation (seed 004 eq. 3, 10), written as residuals

    F_q = (q_i (-) q_{i+1}) + dt v_i      (impulse: without dt v_i)
    F_v = v_i + dt a_i - v_{i+1}           (impulse: v_i + dv_i - v_{i+1})

and solved for the next state at first order: ``dq_{i+1} = -D^-1 (F_q + D_q dq_i + dt dv_i)``
with ``D, D_q`` the Jacobians of ``q_i (-) q_{i+1}`` with respect to ``q_{i+1}`` and ``q_i``
(the configuration rows premultiplied so that ``dq_{i+1}`` has an identity coefficient).

Local equalities, eliminated by :mod:`ocp.condensing`:

    contact: ID(q, v, a, f) - S u = 0  (eq. 16-17),   alpha(q, v, a) = 0  (eq. 5)
    impulse: M(q) dv - J^T Lambda = 0  (eq. 9),       J (v + dv) = 0      (eq. 12)

whose Jacobian in ``w`` is ``[[M, -J^T], [J, 0]]`` (eq. 23). Everything is batched over the
stages of one kind (leading axis).
"""

from __future__ import annotations

import numpy as np

import dynamics

from .condensing import LiftedStages


def actuation(model) -> np.ndarray:
    """``S (nv, nu)``: the joint torques ``S u`` of the actuated joints (all but a free flyer)."""
    return np.eye(model.nv)[:, 6:] if model.has_free_flyer else np.eye(model.nv)


def _state_equation(model, q, q_next, dt, v):
    """The configuration rows of the state equation: ``A_q`` acting on ``(dq, dv)`` and ``b_q``
    (module docstring); ``dt = 0`` at impulse stages."""
    nv = model.nv
    F_q = dynamics.difference(model, q_next, q) + (dt * v if dt else 0.0)
    D, D_q = dynamics.difference_jacobians(model, q_next, q)  # d/dq_{i+1}, d/dq_i
    D_inv = np.linalg.inv(D)
    S = len(q)
    A_q = np.zeros((S, nv, 2 * nv))
    A_q[:, :, :nv] = -D_inv @ D_q
    A_q[:, :, nv:] = -D_inv * dt if dt else 0.0
    b_q = -np.einsum("sij,sj->si", D_inv, F_q)
    return A_q, b_q


def contact_stages(model, contacts, dt, q, v, a, f, u, q_next, v_next, H, g) -> LiftedStages:
    """Lifted contact stages at ``(q, v, a, f, u)`` (arrays with a leading stage axis) toward
    ``(q_next, v_next)``, with the cost ``H, g`` in ``y = (dq, dv, du, da, df)``."""
    nv = model.nv
    Sel = actuation(model)
    nu, m = Sel.shape[1], f.shape[1]
    S = len(q)
    nx, ny = 2 * nv, 2 * nv + nu + nv + m
    A_q, b_q = _state_equation(model, q, q_next, dt, v)
    A = np.zeros((S, nx, ny))
    A[:, :nv, :nx] = A_q
    A[:, nv:, nv:nx] = np.eye(nv)  # dv_{i+1} = dv_i + dt da_i + F_v
    A[:, nv:, nx + nu : nx + nu + nv] = dt * np.eye(nv)
    b = np.concatenate((b_q, v + dt * a - v_next), axis=1)
    dID_dq, dID_dv, dID_da, dID_df = dynamics.contact_inverse_dynamics_derivatives(model, q, v, a, f, contacts)
    dal_dq, dal_dv, dal_da = dynamics.contact_acceleration_derivatives(model, q, v, a, contacts)
    C = np.zeros((S, nv + m, ny))
    C[:, :nv] = np.concatenate((dID_dq, dID_dv, np.broadcast_to(-Sel, (S, nv, nu)), dID_da, dID_df), axis=2)
    C[:, nv:, :nx] = np.concatenate((dal_dq, dal_dv), axis=2)
    C[:, nv:, nx + nu : nx + nu + nv] = dal_da
    c = np.concatenate(
        (
            dynamics.contact_inverse_dynamics(model, q, v, a, f, contacts) - u @ Sel.T,
            dynamics.contact_acceleration(model, q, v, a, contacts),
        ),
        axis=1,
    )
    return LiftedStages(nx, nu, H, g, C, c, A, b)


def impulse_stages(model, contacts, q, v, dv, impulse, q_next, v_next, H, g) -> LiftedStages:
    """Lifted impulse stages at ``(q, v, dv, Lambda)``, cost ``H, g`` in ``y = (dq, dv, ddv, dLambda)``."""
    nv = model.nv
    m = impulse.shape[1]
    S = len(q)
    nx, ny = 2 * nv, 3 * nv + m
    A_q, b_q = _state_equation(model, q, q_next, 0.0, v)
    A = np.zeros((S, nx, ny))
    A[:, :nv, :nx] = A_q
    A[:, nv:, nv:nx] = np.eye(nv)  # dv_{i+1} = dv_i + d(dv)_i + F_v
    A[:, nv:, nx : nx + nv] = np.eye(nv)
    b = np.concatenate((b_q, v + dv - v_next), axis=1)
    dE_dq, dE_ddv, dE_dimpulse = dynamics.impulse_inverse_dynamics_derivatives(model, q, dv, impulse, contacts)
    dV_dq, J = dynamics.contact_velocity_derivatives(model, q, v + dv, contacts)
    C = np.zeros((S, nv + m, ny))
    C[:, :nv, :nv], C[:, :nv, nx : nx + nv], C[:, :nv, nx + nv :] = dE_dq, dE_ddv, dE_dimpulse
    C[:, nv:, :nv], C[:, nv:, nv:nx], C[:, nv:, nx : nx + nv] = dV_dq, J, J
    c = np.concatenate(
        (dynamics.impulse_inverse_dynamics(model, q, dv, impulse, contacts), dynamics.contact_velocity(model, q, v + dv, contacts)),
        axis=1,
    )
    return LiftedStages(nx, 0, H, g, C, c, A, b)
