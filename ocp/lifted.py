"""Linearized lifted stages of a rigid-body OCP (seed 004 Sec. III-A, III-B).

State ``x = (q, v)``, tangent ``dx = (dq, dv)``. A contact stage of time step ``dt`` has the
control ``u`` (torques of the actuated joints, ``S u`` in joint space) and the lifted
variables ``w = (a, f)``; an impulse stage has no control and ``w = (dv, Lambda)``. With a
torque filter (:class:`ocp.problem.OCP`) the state is ``x = (q, v, tau)``, the joints receive
``S tau`` and ``u`` is the filter's input; ``y = (dq, dv, dtau, du, dw)`` in either case
(``dtau`` empty without a filter).

State equation (seed 004 eq. 3, 10; seed 001 eq. 49), written as residuals

    F_q = (q_i (-) q_{i+1}) + dt v_i      (impulse: without dt v_i)
    F_v = v_i + dt a_i - v_{i+1}           (impulse: v_i + dv_i - v_{i+1})
    F_tau = g tau_i + (1 - g) u_i - tau_{i+1}   (impulse: tau_i - tau_{i+1}; g the filter's gain)

and solved for the next state at first order: ``dq_{i+1} = -D^-1 (F_q + D_q dq_i + dt dv_i)``
with ``D, D_q`` the Jacobians of ``q_i (-) q_{i+1}`` with respect to ``q_{i+1}`` and ``q_i``
(the configuration rows premultiplied so that ``dq_{i+1}`` has an identity coefficient).

Local equalities, eliminated by :mod:`ocp.condensing`:

    contact: ID(q, v, a, f) - S u = 0  (eq. 16-17; S tau with a filter),   alpha(q, v, a) = 0  (eq. 5)
    impulse: M(q) dv - J^T Lambda = 0  (eq. 9),       J (v + dv) = 0      (eq. 12)

whose Jacobian in ``w`` is ``[[M, -J^T], [J, 0]]`` (eq. 23), with ``ID = RNEA(q, v, a) - J^T f -
tau_p(v) - tau_d``: the joints' damping and smoothed Coulomb friction (:mod:`dynamics.joint_friction`),
the sliding friction of a tool (:func:`sliding_friction`), the forces of soft contacts
(:mod:`dynamics.soft_contact`) and an estimated disturbance ``tau_d`` are on the side of the
applied torques. Everything is batched over the stages of one kind
(leading axis).
"""

from __future__ import annotations

import numpy as np

from liftoff import dynamics

from .condensing import LiftedStages


def actuation(model) -> np.ndarray:
    """``S (nv, nu)``: the joint torques ``S u`` of the actuated joints (all but a free flyer)."""
    return np.eye(model.nv)[:, 6:] if model.has_free_flyer else np.eye(model.nv)


def state_equation(model, q, v, w_v, q_next, v_next, dt, nu, nw, filtered=None):
    """The linearized state equation ``dx_{i+1} = A y + b`` of stages with ``y = (dq, dv, dtau,
    du, dw)``, ``w = (w_v, ...)`` (module docstring). Contact stages: ``w_v = a`` and the time
    step ``dt (S,)``; impulse stages: ``w_v = dv`` and ``dt = None`` (no time elapses).
    ``filtered``: ``(tau, tau_next, u, gain)`` of a torque filter (``gain (S,)``, None at
    impulse stages), or None."""
    nv, S = model.nv, len(q)
    impulse = dt is None
    h = np.zeros((S, 1)) if impulse else np.broadcast_to(np.asarray(dt, dtype=float), (S,))[:, None]
    F_q = dynamics.difference(model, q_next, q) + h * v
    D, D_q = dynamics.difference_jacobians(model, q_next, q)  # d/dq_{i+1}, d/dq_i
    D_inv = np.linalg.inv(D)
    ntau = 0 if filtered is None else filtered[0].shape[1]
    nx = 2 * nv + ntau
    eye = np.eye(nv)
    A = np.zeros((S, nx, nx + nu + nw))
    A[:, :nv, :nv] = -D_inv @ D_q
    A[:, :nv, nv : 2 * nv] = -D_inv * h[:, :, None]
    A[:, nv : 2 * nv, nv : 2 * nv] = eye
    A[:, nv : 2 * nv, nx + nu : nx + nu + nv] = eye if impulse else h[:, :, None] * eye
    w_step = w_v if impulse else h * w_v
    b = [-np.einsum("sij,sj->si", D_inv, F_q), v + w_step - v_next]
    if filtered is not None:
        tau, tau_next, u, gain = filtered
        keep = np.ones((S, 1)) if impulse else np.asarray(gain, dtype=float).reshape(S, 1)
        A[:, 2 * nv :, 2 * nv : nx] = keep[:, :, None] * np.eye(ntau)
        if not impulse:
            A[:, 2 * nv :, nx : nx + nu] = (1 - keep)[:, :, None] * np.eye(ntau)
        b.append(keep * tau + (0 if impulse else (1 - keep) * u) - tau_next)
    return A, np.concatenate(b, axis=1)


def next_state(model, q, v, w_v, dt, filtered=None):
    """The state equation solved exactly for the next knot ``(q_{i+1}, v_{i+1}, tau_{i+1})``:
    ``(q (+) dt v, v + dt a)`` over contact stages of time steps ``dt (S,)``, ``(q, v + dv)``
    over impulse stages (``dt = None``); ``filtered``: ``(tau, u, gain)`` of a torque filter
    (``u, gain`` None at impulse stages), or None (``tau_{i+1}`` empty)."""
    if dt is None:
        q_next, v_next = q, v + w_v
    else:
        h = np.asarray(dt, dtype=float).reshape(-1, 1)
        q_next, v_next = dynamics.integrate(model, q, h * v), v + h * w_v
    if filtered is None:
        return q_next, v_next, np.zeros((len(q), 0))
    tau, u, gain = filtered
    if dt is None:
        return q_next, v_next, tau
    keep = np.asarray(gain, dtype=float).reshape(-1, 1)
    return q_next, v_next, keep * tau + (1 - keep) * u


def contact_stages(
    model,
    contacts,
    dt,
    q,
    v,
    a,
    f,
    u,
    q_next,
    v_next,
    H,
    g,
    filtered=None,
    width=dynamics.joint_friction.DEFAULT_WIDTH,
    sliding=(),
    disturbance=None,
    soft=(),
) -> LiftedStages:
    """Lifted contact stages at ``(q, v, a, f, u)`` (arrays with a leading stage axis) toward
    ``(q_next, v_next)``, with the cost ``H, g`` in ``y = (dq, dv, dtau, du, da, df)``;
    ``filtered``: ``(tau, tau_next, gain)`` of a torque filter, or None; ``width``: the
    smoothing width of the joints' Coulomb friction; ``sliding``: the
    :class:`ocp.problem.SlidingFriction` of the contacts, whose forces enter ``ID``;
    ``disturbance (nv,)``: an estimated generalized force applied on the joints, or None;
    ``soft``: the :class:`dynamics.SoftContact` of the stages, whose generalized force ``J^T F(q,
    v)`` enters ``ID`` as an applied force."""
    nv = model.nv
    Sel = actuation(model)
    nu, m = Sel.shape[1], f.shape[1]
    S = len(q)
    ntau = 0 if filtered is None else nu
    nx = 2 * nv + ntau
    ny = nx + nu + nv + m
    state = None if filtered is None else (filtered[0], filtered[1], u, filtered[2])
    A, b = state_equation(model, q, v, a, q_next, v_next, dt, nu, nv + m, state)
    (ID, dID_dq, dID_dv, dID_da, dID_df), (alpha, dal_dq, dal_dv, dal_da) = _contact_equalities(
        model, contacts, q, v, a, f
    )
    if dynamics.has_passive_torque(model):
        ID = ID - dynamics.passive_torque(model, v, width)
        dID_dv = dID_dv - dynamics.passive_torque_derivative(model, v, width)[:, :, None] * np.eye(nv)
    for s in sliding:
        G, dG_dq, _, dG_df = sliding_friction(model, contacts, s, q, v, f)
        ID, dID_dq, dID_df = ID + G, dID_dq + dG_dq, dID_df + dG_df
    if disturbance is not None:
        ID = ID - disturbance
    if soft:
        _, tau_c = dynamics.soft_contact_forces(model, q, v, soft)
        dtau_dq, dtau_dv = dynamics.soft_contact_forces_derivatives(model, q, v, soft)
        ID, dID_dq, dID_dv = ID - tau_c, dID_dq - dtau_dq, dID_dv - dtau_dv
    C = np.zeros((S, nv + m, ny))
    C[:, :nv, :nv], C[:, :nv, nv : 2 * nv] = dID_dq, dID_dv
    torque = slice(2 * nv, nx) if filtered is not None else slice(nx, nx + nu)  # the columns of S's input
    C[:, :nv, torque] = -Sel
    C[:, :nv, nx + nu :] = np.concatenate((dID_da, dID_df), axis=2)
    C[:, nv:, : 2 * nv] = np.concatenate((dal_dq, dal_dv), axis=2)
    C[:, nv:, nx + nu : nx + nu + nv] = dal_da
    applied = u if filtered is None else filtered[0]
    c = np.concatenate((ID - applied @ Sel.T, alpha), axis=1)
    return LiftedStages(nx, nu, H, g, C, c, A, b)


def sliding_friction(model, contacts, sliding, q, v, f):
    """``G = -J^T F`` of the :class:`ocp.problem.SlidingFriction` ``sliding`` (its force ``F =
    -mu f_n d`` at the contact's frame, ``mu (S,)``, ``d (S, 3)``; ``J`` the frame's point
    Jacobian in the world axes) and its derivatives in ``q``, ``v`` and ``f``, as terms of ``ID``."""
    S, nv, m = q.shape[0], model.nv, f.shape[1]
    point = (dynamics.Contact(contacts[sliding.contact].frame, "3D", "LOCAL_WORLD_ALIGNED"),)
    column = sum(c.dim for c in contacts[: sliding.contact])
    mu_d = np.broadcast_to(np.asarray(sliding.mu, dtype=float)[..., None] * sliding.direction, (S, 3))
    F = -f[:, column : column + 1] * mu_d
    Jt = np.swapaxes(dynamics.contact_jacobian(model, q, point), 1, 2)
    zero = np.zeros((S, nv))
    held = dynamics.contact_inverse_dynamics_derivatives(model, q, zero, zero, F, point)[0]  # d(rnea - J^T F)/dq
    dG_df = np.zeros((S, nv, m))
    dG_df[:, :, column] = np.einsum("sij,sj->si", Jt, mu_d)  # -J^T dF/df_n
    dG_dq = held - dynamics.rnea_derivatives(model, q, zero, zero)[0]
    return -np.einsum("sij,sj->si", Jt, F), dG_dq, np.zeros((S, nv, nv)), dG_df


def _contact_equalities(model, contacts, q, v, a, f):
    """``ID = rnea - J^T f`` and ``alpha`` with their derivatives; without contacts (a flight)
    ``ID`` is the RNEA and ``alpha`` has no rows."""
    if contacts:
        return (
            (dynamics.contact_inverse_dynamics(model, q, v, a, f, contacts),)
            + dynamics.contact_inverse_dynamics_derivatives(model, q, v, a, f, contacts),
            (dynamics.contact_acceleration(model, q, v, a, contacts),)
            + dynamics.contact_acceleration_derivatives(model, q, v, a, contacts),
        )
    S, nv = q.shape[0], model.nv
    none = np.zeros((S, 0, nv))
    return (
        (dynamics.rnea(model, q, v, a),) + dynamics.rnea_derivatives(model, q, v, a) + (np.zeros((S, nv, 0)),),
        (np.zeros((S, 0)), none, none, none),
    )


def impulse_stages(model, contacts, q, v, dv, impulse, q_next, v_next, H, g, filtered=None) -> LiftedStages:
    """Lifted impulse stages at ``(q, v, dv, Lambda)``, cost ``H, g`` in ``y = (dq, dv, dtau,
    ddv, dLambda)``; ``filtered``: ``(tau, tau_next)`` of a torque filter (held), or None."""
    nv = model.nv
    m = impulse.shape[1]
    S = len(q)
    ntau = 0 if filtered is None else filtered[0].shape[1]
    nx = 2 * nv + ntau
    ny = nx + nv + m
    state = None if filtered is None else (*filtered, None, None)
    A, b = state_equation(model, q, v, dv, q_next, v_next, None, 0, nv + m, state)
    dE_dq, dE_ddv, dE_dimpulse = dynamics.impulse_inverse_dynamics_derivatives(model, q, dv, impulse, contacts)
    dV_dq, J = dynamics.contact_velocity_derivatives(model, q, v + dv, contacts)
    C = np.zeros((S, nv + m, ny))
    C[:, :nv, :nv], C[:, :nv, nx : nx + nv], C[:, :nv, nx + nv :] = dE_dq, dE_ddv, dE_dimpulse
    C[:, nv:, :nv], C[:, nv:, nv : 2 * nv], C[:, nv:, nx : nx + nv] = dV_dq, J, J
    c = np.concatenate(
        (
            dynamics.impulse_inverse_dynamics(model, q, dv, impulse, contacts),
            dynamics.contact_velocity(model, q, v + dv, contacts),
        ),
        axis=1,
    )
    return LiftedStages(nx, 0, H, g, C, c, A, b)
