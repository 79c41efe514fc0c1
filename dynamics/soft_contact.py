"""Soft (spring-damper) contact of a frame's origin against a plane, and forward dynamics with it.

Seed 002's simplest contact model: the force is a function of the state, not a constraint. A
:class:`SoftContact` holds a plane (a point ``p0`` on it and its unit outward normal ``n``, the
direction of its force on the robot) and the origin ``p`` of one of the robot's frames (a point
elsewhere on a body is a frame of its own, :func:`dynamics.add_frame`). With the penetration and
its rate

    d = -n . (p - p0),        d_dot = -n . p_dot

the normal force follows one of two laws:

- ``linear`` (Kelvin-Voigt): ``phi = k d + c d_dot``;
- ``hunt_crossley``: ``phi = k d^e (1 + c d_dot)``, whose damping vanishes with the penetration
  (the force is continuous at the touch);

unilateral: no force out of contact (``d <= 0``) and never a pull (``phi`` clamped at 0). The
optimal control problem needs derivatives, so both kinks are smoothed, **an approximation**
of the exact law, with widths that are parameters:

    f_n = sigma(d / delta) pos_w(phi),    pos_w(x) = (x + sqrt(x^2 + w^2)) / 2,

``sigma`` the logistic function over the depth width ``delta`` [m] (the contact switches on
within a few ``delta`` of the plane) and ``pos_w`` a smooth ``max(x, 0)`` over the force width
``w`` [N] (``pos_w(x) - max(x, 0)`` is ``w / 2`` at ``x = 0`` and about ``w^2 / (4 |x|)`` away
from it); Hunt-Crossley's ``d^e`` reads ``d+ = delta softplus(d / delta)``, a smooth ``max(d,
0)``. In contact (``d >> delta``, ``phi >> w``) the force is the exact law to ``w^2 / (4 phi)``:
1e-4 N at 30 N with the default width.

Optional Coulomb friction, **regularized** (smooth at rest, so that it has derivatives):

    f_t = -mu f_n v_t / sqrt(|v_t|^2 + eps^2),    v_t = (1 - n n^T) p_dot,

``eps`` [m/s] the slip width: the friction grows linearly through zero sliding speed instead of
jumping between ``-mu f_n`` and ``mu f_n`` (no stiction: a body at rest on a slope creeps).

The world force on the robot at ``p`` is ``F = f_n n + f_t``; its generalized force ``J^T F``
(``J`` the frame's point Jacobian in the world axes) enters the equation of motion as an applied
force: ``M a + h = tau + J^T F(q, v)`` (:func:`soft_forward_dynamics`). Derivatives with respect
to ``q`` are along tangent perturbations (``integrate(q, dq)``), like every derivative of
:mod:`dynamics`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .batch import batch, unbatch
from .contacts import Contact, contact_rows, generalized_force_derivative, resolve, row_derivatives
from .forward_dynamics import aba, aba_derivatives
from .kinematics import forward

LAWS = ("linear", "hunt_crossley")
EXP_CLIP = 50.0  # |argument| of the exponentials beyond which sigma and softplus are 0, 1 or linear


@dataclass(frozen=True)
class SoftContact:
    """A soft contact of ``frame``'s origin against the plane through ``origin`` with the unit
    outward ``normal`` (module docstring). ``stiffness`` ``k > 0`` [N/m; Hunt-Crossley N/m^e],
    ``damping`` ``c >= 0`` [N s/m; Hunt-Crossley s/m], ``law`` (``linear`` or
    ``hunt_crossley``), ``exponent`` ``e >= 1`` (Hunt-Crossley), ``friction`` ``mu >= 0``,
    and the widths of the smoothing: ``depth_width`` ``delta`` [m], ``force_width`` ``w`` [N],
    ``slip_width`` ``eps`` [m/s]. ``ValueError`` for values out of range; ``origin`` and
    ``normal`` are stored as tuples (the normal normalized), so that a contact is hashable."""

    frame: str
    origin: tuple
    normal: tuple
    stiffness: float
    damping: float = 0.0
    law: str = "linear"
    exponent: float = 1.5
    friction: float = 0.0
    depth_width: float = 1e-4
    force_width: float = 0.1
    slip_width: float = 1e-2

    def __post_init__(self):
        where = f"soft contact on {self.frame!r}"
        if self.law not in LAWS:
            raise ValueError(f"{where}: unknown law {self.law!r}; expected one of {', '.join(LAWS)}")
        origin = np.asarray(self.origin, dtype=float)
        normal = np.asarray(self.normal, dtype=float)
        if origin.shape != (3,) or not np.all(np.isfinite(origin)):
            raise ValueError(f"{where}: origin must be a finite point (3,), got {self.origin!r}")
        if normal.shape != (3,) or not np.all(np.isfinite(normal)) or np.linalg.norm(normal) < 1e-9:
            raise ValueError(f"{where}: normal must be a non-zero direction (3,), got {self.normal!r}")
        object.__setattr__(self, "origin", tuple(float(x) for x in origin))
        object.__setattr__(self, "normal", tuple(float(x) for x in normal / np.linalg.norm(normal)))
        for name, low, strict in (
            ("stiffness", 0.0, True),
            ("damping", 0.0, False),
            ("exponent", 1.0, False),
            ("friction", 0.0, False),
            ("depth_width", 0.0, True),
            ("force_width", 0.0, True),
            ("slip_width", 0.0, True),
        ):
            value = getattr(self, name)
            ok = np.isscalar(value) and np.isfinite(value) and (value > low if strict else value >= low)
            if not ok:
                raise ValueError(
                    f"{where}: {name} must be a finite number {'>' if strict else '>='} {low:g}, got {value!r}"
                )
            object.__setattr__(self, name, float(value))

    def parameters(self) -> np.ndarray:
        """``(13,)``: origin, normal, stiffness, damping, exponent, friction, depth, force and slip
        widths: the inputs of a compiled kernel's soft-contact slot (:mod:`dynamics.symbolic`)."""
        return np.array(
            [
                *self.origin,
                *self.normal,
                self.stiffness,
                self.damping,
                self.exponent,
                self.friction,
                self.depth_width,
                self.force_width,
                self.slip_width,
            ]
        )


NPARAMETERS = 13  # the size of SoftContact.parameters()


# ----------------------------------------------------------------------------- smooth functions


def sigmoid(x):
    """``1 / (1 + exp(-x))``, its argument clipped to ``[-EXP_CLIP, EXP_CLIP]``."""
    return 1.0 / (1.0 + np.exp(-np.clip(x, -EXP_CLIP, EXP_CLIP)))


def softplus(x):
    """``log(1 + exp(x))``: ``x`` beyond ``EXP_CLIP``, the argument clipped below at ``-EXP_CLIP``
    (so that it stays positive). Its derivative is :func:`sigmoid`."""
    x = np.asarray(x, dtype=float)
    return np.where(x > EXP_CLIP, x, np.log1p(np.exp(np.clip(x, -EXP_CLIP, EXP_CLIP))))


def positive_part(x, w):
    """``pos_w(x) = (x + sqrt(x^2 + w^2)) / 2``, a smooth ``max(x, 0)``, and its derivative."""
    root = np.sqrt(x * x + w * w)
    return 0.5 * (x + root), 0.5 * (1.0 + x / root)


def normal_force(contact: SoftContact, d, d_dot):
    """``f_n`` of penetrations ``d`` and rates ``d_dot`` (arrays of one shape), and its partial
    derivatives ``(df_dd, df_dddot)`` (module docstring)."""
    k, c, delta = contact.stiffness, contact.damping, contact.depth_width
    gate = sigmoid(d / delta)
    dgate = gate * (1.0 - gate) / delta
    if contact.law == "linear":
        phi, dphi_dd, dphi_ddot = k * d + c * d_dot, k, c
    else:
        e = contact.exponent
        d_plus = delta * softplus(d / delta)
        spring = k * d_plus**e
        dspring = k * e * d_plus ** (e - 1) * sigmoid(d / delta)
        phi, dphi_dd, dphi_ddot = spring * (1 + c * d_dot), dspring * (1 + c * d_dot), spring * c
    pos, dpos = positive_part(phi, contact.force_width)
    return gate * pos, dgate * pos + gate * dpos * dphi_dd, gate * dpos * dphi_ddot


# ----------------------------------------------------------------------------- the force and its derivatives


@dataclass(frozen=True)
class SoftContactState:
    """One contact at a batch of states (batch first): the point ``p (B, 3)``, its velocity
    ``p_dot (B, 3)``, the penetration ``d (B,)`` and its rate ``d_dot (B,)``, the normal force
    ``f_n (B,)``, the world force ``F (B, 3)`` on the robot and the generalized force ``J^T F
    (B, nv)``; with derivatives: ``dF_dq, dF_dv (B, 3, nv)`` and ``dtau_dq, dtau_dv (B, nv, nv)``
    of ``J^T F`` (its ``J`` moving with ``q`` too)."""

    p: np.ndarray
    p_dot: np.ndarray
    d: np.ndarray
    d_dot: np.ndarray
    f_n: np.ndarray
    F: np.ndarray
    tau: np.ndarray
    dF_dq: np.ndarray | None = None
    dF_dv: np.ndarray | None = None
    dtau_dq: np.ndarray | None = None
    dtau_dv: np.ndarray | None = None


def _evaluate(model, q, v, contact: SoftContact, derivatives: bool) -> SoftContactState:
    """:class:`SoftContactState` of ``(B, nq)``, ``(B, nv)`` arrays."""
    if not isinstance(contact, SoftContact):
        raise TypeError(f"expected a dynamics.SoftContact, got {type(contact).__name__}")
    (rc,) = resolve(model, Contact(contact.frame, "3D", "LOCAL_WORLD_ALIGNED"))
    kin = forward(model, q, v, np.zeros_like(v))  # accelerations (zero) for the velocity derivatives
    rows = contact_rows(model, kin, rc)
    J = np.moveaxis(rows.J, -1, 0)  # (B, 3, nv): world axes
    p, p_dot = rows.points[0].p.T, rows.velocity.T
    n, p0 = np.asarray(contact.normal), np.asarray(contact.origin)
    d, d_dot = -(p - p0) @ n, -p_dot @ n
    f_n, df_dd, df_dddot = normal_force(contact, d, d_dot)
    P = np.eye(3) - np.outer(n, n)
    v_t = p_dot @ P
    s = np.sqrt(np.sum(v_t * v_t, axis=1) + contact.slip_width**2)
    mu = contact.friction
    F = f_n[:, None] * n - (mu * f_n / s)[:, None] * v_t
    tau = np.einsum("bxn,bx->bn", J, F)
    if not derivatives:
        return SoftContactState(p, p_dot, d, d_dot, f_n, F, tau)
    dpdot_dq = np.moveaxis(row_derivatives(model, kin, rc, rows).velocity_dq, -1, 0)  # (B, 3, nv)
    dd_dq, dddot_dq, dddot_dv = -n @ J, -n @ dpdot_dq, -n @ J  # (B, nv)
    dfn_dq = df_dd[:, None] * dd_dq + df_dddot[:, None] * dddot_dq
    dfn_dv = df_dddot[:, None] * dddot_dv
    # f_t = -mu f_n v_t / s: d f_t = -mu (v_t / s) df_n - mu f_n (1 / s - v_t v_t^T / s^3) P dp_dot
    G = (np.eye(3)[None] / s[:, None, None] - np.einsum("bi,bj->bij", v_t, v_t) / s[:, None, None] ** 3) @ P
    G = -mu * f_n[:, None, None] * G
    slide = -(mu / s)[:, None] * v_t
    dF_dq = (n[None, :, None] + slide[:, :, None]) * dfn_dq[:, None] + G @ dpdot_dq
    dF_dv = (n[None, :, None] + slide[:, :, None]) * dfn_dv[:, None] + G @ J
    held = generalized_force_derivative(model, kin, rc, rows, F.T)  # d(J^T F)/dq with F held in the world axes
    Jt = np.swapaxes(J, 1, 2)
    return SoftContactState(p, p_dot, d, d_dot, f_n, F, tau, dF_dq, dF_dv, held + Jt @ dF_dq, Jt @ dF_dv)


def _states(model, q, v, contacts, derivatives):
    if isinstance(contacts, SoftContact):
        contacts = (contacts,)
    (q, v), shape = batch(("q", q, model.nq), ("v", v, model.nv))
    return [_evaluate(model, q, v, c, derivatives) for c in contacts], shape


def soft_contact_state(model, q, v, contact: SoftContact, derivatives=False) -> SoftContactState:
    """The :class:`SoftContactState` of ``contact`` at ``q (..., nq)``, ``v (..., nv)`` (its
    arrays with the leading batch shape of the inputs)."""
    (state,), shape = _states(model, q, v, (contact,), derivatives)
    return SoftContactState(*(None if x is None else unbatch(x, shape) for x in _fields(state)))


def _fields(state):
    return tuple(getattr(state, name) for name in state.__dataclass_fields__)


def soft_contact_forces(model, q, v, contacts):
    """``(F (..., k, 3), tau (..., nv))``: the world force of each of the ``k`` soft ``contacts``
    on the robot (at its frame's origin) and their generalized force ``sum J^T F``."""
    states, shape = _states(model, q, v, contacts, False)
    F = np.stack([s.F for s in states], axis=1)
    return unbatch(F, shape), unbatch(sum(s.tau for s in states), shape)


def soft_contact_forces_derivatives(model, q, v, contacts):
    """``(dtau_dq, dtau_dv)`` of the generalized force ``sum J^T F(q, v)`` of ``contacts``,
    each ``(..., nv, nv)``."""
    states, shape = _states(model, q, v, contacts, True)
    return unbatch(sum(s.dtau_dq for s in states), shape), unbatch(sum(s.dtau_dv for s in states), shape)


def soft_forward_dynamics(model, q, v, tau, contacts):
    """``a = M^-1 (tau - h + sum J^T F(q, v)) (..., nv)``: the forward dynamics (ABA) with the
    soft ``contacts``' forces applied."""
    _, tau_c = soft_contact_forces(model, q, v, contacts)
    return aba(model, q, v, np.asarray(tau, dtype=float) + tau_c)


def soft_forward_dynamics_derivatives(model, q, v, tau, contacts):
    """``(da_dq, da_dv, da_dtau)`` of :func:`soft_forward_dynamics`, each ``(..., nv, nv)``: the
    ABA derivatives with the contact force held plus ``M^-1 d(J^T F)/d(q, v)``."""
    (q, v, tau), shape = batch(("q", q, model.nq), ("v", v, model.nv), ("tau", tau, model.nv))
    states, _ = _states(model, q, v, contacts, True)
    tau_c = sum(s.tau for s in states)
    da_dq, da_dv, Minv = aba_derivatives(model, q, v, tau + tau_c)
    da_dq = da_dq + Minv @ sum(s.dtau_dq for s in states)
    da_dv = da_dv + Minv @ sum(s.dtau_dv for s in states)
    return unbatch(da_dq, shape), unbatch(da_dv, shape), unbatch(Minv, shape)
