"""The rigid-body equations of :mod:`dynamics` as CasADi SX expressions, for code generation.

The same model and the same world-frame formulas as the numpy modules they mirror
(:mod:`dynamics.kinematics`, :mod:`dynamics.inverse_dynamics`, :mod:`dynamics.contacts`,
:mod:`dynamics.manifold`), written per joint on scalar expression graphs instead of batched
arrays: placements ``oR, op``, Jacobian columns ``oS``, velocities ``ov`` and accelerations
``oa`` of every body in world coordinates at the world origin, the RNEA, frame placements,
contact rows and the centre of mass. Numpy stays the tested reference; these expressions are
held equal to it by the tests and compiled by :mod:`dynamics.codegen`.

Derivatives with respect to ``q`` are taken by CasADi's AD along tangent perturbations: a
configuration is built as :class:`Configuration` ``q (+) dq`` *to first order in dq* (the base
``R (1 + [dw]x), p + R dv``, joints ``q_j + dq_j``), which is exact for first derivatives at
``dq = 0``. The SE(3) logarithm and exponential of the
configuration manifold, whose derivatives have closed forms, are written with those forms
(:func:`difference`, :func:`difference_jacobians`), as in :mod:`dynamics.manifold`.
"""

from __future__ import annotations

from dataclasses import dataclass

import casadi as ca
import numpy as np

from .kinematics import ReferenceFrame
from .manifold import _SMALL
from .model import CONTINUOUS, FREE_FLYER, PRISMATIC
from .soft_contact import EXP_CLIP

# ----------------------------------------------------------------------------- small algebra


def const(x):
    """A numpy constant as an SX matrix."""
    return ca.SX(ca.DM(np.asarray(x, dtype=float)))


def skew(w):
    """The matrix of ``w x``: CasADi's (as :func:`cross`)."""
    return ca.skew(w)


def cross(a, b):
    """``a x b`` of 3-vectors: CasADi's, the same expression built in one call instead of twelve
    element reads, each a Python call through SWIG (the kernels' builds take thousands)."""
    return ca.cross(a, b)


def motion_cross(m1, m2):
    """``m1 x m2`` of spatial motions ``(linear, angular)``."""
    v1, w1, v2, w2 = m1[:3], m1[3:], m2[:3], m2[3:]
    return ca.vertcat(cross(w1, v2) + cross(v1, w2), cross(w1, w2))


def force_cross(m, f):
    """``m x* f``."""
    v, w, lin, ang = m[:3], m[3:], f[:3], f[3:]
    return ca.vertcat(cross(w, lin), cross(w, ang) + cross(v, lin))


def act_motion(R, p, m):
    w = R @ m[3:]
    return ca.vertcat(R @ m[:3] + cross(p, w), w)


def act_inv_motion(R, p, m):
    return ca.vertcat(R.T @ (m[:3] - cross(p, m[3:])), R.T @ m[3:])


def shift_motion(m, p):
    """A motion given at the origin, expressed at the point ``p`` (same axes)."""
    return ca.vertcat(m[:3] - cross(p, m[3:]), m[3:])


def quat_to_rotation(quat):
    x, y, z, w = quat[0], quat[1], quat[2], quat[3]
    return ca.vertcat(
        ca.horzcat(1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)),
        ca.horzcat(2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)),
        ca.horzcat(2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)),
    )


def quat_multiply(a, b):
    av, aw, bv, bw = a[:3], a[3], b[:3], b[3]
    return ca.vertcat(aw * bv + bw * av + cross(av, bv), aw * bw - ca.dot(av, bv))


def quat_conjugate(q):
    return ca.vertcat(-q[:3], q[3])


# ----------------------------------------------------------------------------- configurations


@dataclass(frozen=True)
class Configuration:
    """A configuration as the kinematics reads it: the free-flyer placement ``(R, p)`` (or
    ``None``) and the configuration vector ``q`` for the other joints."""

    q: ca.SX
    base: tuple | None


def configuration(model, q, dq=None) -> Configuration:
    """``q`` (SX, nq), moved along the tangent ``dq`` (SX, nv) to first order if given."""
    base = None
    if model.has_free_flyer:
        R, p = quat_to_rotation(q[3:7]), q[:3]
        if dq is not None:
            p = p + R @ dq[:3]
            R = R @ (ca.SX.eye(3) + skew(dq[3:6]))
        base = (R, p)
    if dq is not None:
        moved = [q[i] for i in range(model.nq)]
        t = model.tree
        for j in np.concatenate((t.revolute, t.prismatic)).astype(int):
            moved[model.idx_q[j]] = q[model.idx_q[j]] + dq[model.idx_v[j]]
        for j in t.continuous:
            iq, d = model.idx_q[j], dq[model.idx_v[j]]
            moved[iq], moved[iq + 1] = q[iq] - q[iq + 1] * d, q[iq + 1] + q[iq] * d
        q = ca.vertcat(*moved)
    return Configuration(q, base)


# ----------------------------------------------------------------------------- kinematics


@dataclass(frozen=True)
class Kinematics:
    """Per joint ``oR[i] (3, 3)``, ``op[i] (3,)``; per dof ``oS[k] (6,)``; per joint ``ov[i]``,
    ``oa[i] (6,)`` (when computed; ``oa`` without gravity)."""

    oR: list
    op: list
    oS: list
    ov: list | None = None
    oa: list | None = None


def joint_placements(model, config: Configuration):
    """World placements of the joint frames (:func:`dynamics.kinematics.joint_placements`)."""
    q = config.q
    oR, op = [], []
    for i, kind in enumerate(model.joint_types):
        R0, t0 = const(model.joint_rotation[i]), const(model.joint_translation[i])
        iq = int(model.idx_q[i])
        if kind == FREE_FLYER:
            R, p = config.base
            R, p = R0 @ R, t0 + R0 @ p
        elif kind == PRISMATIC:
            R, p = R0, t0 + R0 @ const(model.axis[i]) * q[iq]
        else:
            cos, sin = (q[iq], q[iq + 1]) if kind == CONTINUOUS else (ca.cos(q[iq]), ca.sin(q[iq]))
            K = skew(const(model.axis[i]))
            R, p = R0 + sin * (R0 @ K) + (1 - cos) * (R0 @ K @ K), t0
        parent = int(model.parents[i])
        if parent >= 0:
            R, p = oR[parent] @ R, op[parent] + oR[parent] @ p
        oR.append(R)
        op.append(p)
    return oR, op


def forward(model, config: Configuration, v=None, a=None) -> Kinematics:
    """World kinematics (:func:`dynamics.kinematics.forward`), accelerations without gravity."""
    oR, op = joint_placements(model, config)
    S = model.tree.motion_subspace[:, :, 0]
    oS = [act_motion(oR[j], op[j], const(S[:, k])) for k, j in enumerate(model.tree.dof_joint)]
    if v is None:
        return Kinematics(oR, op, oS)
    ov, oa = [], []
    for i in range(model.njoints):
        dofs = range(int(model.idx_v[i]), int(model.idx_v[i] + model.nvs[i]))
        parent = int(model.parents[i])
        v_par = ov[parent] if parent >= 0 else ca.SX.zeros(6)
        Sv = sum((oS[k] * v[k] for k in dofs), ca.SX.zeros(6))
        ov.append(v_par + Sv)
        if a is not None:
            a_par = oa[parent] if parent >= 0 else ca.SX.zeros(6)
            oa.append(a_par + sum((oS[k] * a[k] for k in dofs), ca.SX.zeros(6)) + motion_cross(v_par, Sv))
    return Kinematics(oR, op, oS, ov, oa if a is not None else None)


def frame_placement(model, kin: Kinematics, frame):
    """World placement ``(R, p)`` of ``frame`` (a name or index)."""
    f = model.frame_id(frame)
    j = int(model.frame_parent[f])
    fR, fp = const(model.frame_rotation[f]), const(model.frame_translation[f])
    if j < 0:
        return fR, fp
    return kin.oR[j] @ fR, kin.op[j] + kin.oR[j] @ fp


def frame_velocity(model, kin: Kinematics, frame):
    """The velocity of ``frame``'s origin in the world axes (its LOCAL_WORLD_ALIGNED linear
    velocity); ``kin`` with velocities."""
    return _point(model, kin, frame)[5]


def _body(x, j):
    return ca.SX.zeros(6) if j < 0 or x is None else x[j]


def center_of_mass(model, kin: Kinematics):
    mc = sum(
        (model.body_mass[i] * (kin.op[i] + kin.oR[i] @ const(model.body_com[i])) for i in range(model.njoints)),
        ca.SX.zeros(3),
    )
    return mc / model.mass


# ----------------------------------------------------------------------------- dynamics


def _world_inertia(model, kin: Kinematics, i):
    """``(mass, mc, Io)`` of body ``i`` about the world origin
    (:func:`dynamics.inverse_dynamics.world_inertias`)."""
    m = float(model.body_mass[i])
    c = kin.op[i] + kin.oR[i] @ const(model.body_com[i])
    Io = kin.oR[i] @ const(model.body_inertia[i]) @ kin.oR[i].T + m * (ca.dot(c, c) * ca.SX.eye(3) - c @ c.T)
    return m, m * c, Io


def _rigid_apply(mass, mc, Io, x):
    return ca.vertcat(mass * x[:3] - cross(mc, x[3:]), cross(mc, x[:3]) + Io @ x[3:])


def rnea(model, kin: Kinematics, gravity=True):
    """Joint torques (:func:`dynamics.rnea`, no external forces) from kinematics with ``ov, oa``;
    contact forces enter through :func:`generalized_forces`."""
    a0 = ca.vertcat(-const(model.gravity), ca.SX.zeros(3)) if gravity else ca.SX.zeros(6)
    of = []
    for i in range(model.njoints):
        inertia = _world_inertia(model, kin, i)
        h = _rigid_apply(*inertia, kin.ov[i])
        of.append(_rigid_apply(*inertia, kin.oa[i] + a0) + force_cross(kin.ov[i], h))
    oF = list(of)
    for i in range(model.njoints - 1, -1, -1):
        parent = int(model.parents[i])
        if parent >= 0:
            oF[parent] = oF[parent] + oF[i]
    return ca.vertcat(*[ca.dot(kin.oS[k], oF[j]) for k, j in enumerate(model.tree.dof_joint)])


def generalized_forces(model, kin: Kinematics, forces):
    """``sum_i J_i^T W_i``: the joint torques of world wrenches ``forces`` (``[(joint, W)]``, at
    the origin) applied to the bodies."""
    tau = [0] * model.nv
    for j, wrench in forces:
        for k in np.flatnonzero(model.tree.support[j]):
            tau[k] = tau[k] + ca.dot(kin.oS[k], wrench)
    return ca.vertcat(*[ca.SX(x) for x in tau])


def passive_torque(model, v, width):
    """The joints' damping and smoothed Coulomb friction torque (:func:`dynamics.passive_torque`)."""
    return -const(model.damping) * v - const(model.friction) * ca.tanh(v / width)


# ----------------------------------------------------------------------------- contacts


@dataclass(frozen=True)
class ContactRows:
    """The rows of one contact (:mod:`dynamics.contacts`): velocity ``J v`` and acceleration
    rows ``J a + drift`` (classical for translational kinds, without gravity), the position
    error rows (``None`` without a target), and the world wrenches ``K^T f`` of a force ``f``
    given in the contact's frame, per body: ``[(joint, wrench)]``."""

    velocity: ca.SX
    acceleration: ca.SX
    error: ca.SX | None
    wrenches: list


def _point(model, kin, frame):
    f = model.frame_id(frame)
    j = int(model.frame_parent[f])
    R, p = frame_placement(model, kin, f)
    v, a = _body(kin.ov, j), _body(kin.oa, j)
    pdot = shift_motion(v, p)[:3]
    pddot = shift_motion(a, p)[:3] + cross(v[3:], pdot)
    return j, R, p, v, a, pdot, pddot


def contact_rows(model, kin: Kinematics, contact, force, target=None) -> ContactRows:
    """Rows of ``contact`` (a :class:`dynamics.Contact`, its ``rotation`` a constant; its
    ``placement`` is ignored, the Baumgarte target is ``target``: ``p (3,)``, or ``(R (3, 3),
    p)`` for rotational kinds) with ``force`` (SX, ``contact.dim``) in its frame."""
    sel = list(contact.rows)
    full = ca.SX.zeros(6)
    for r, i in enumerate(sel):
        full[i] = force[r]
    j, R, p, v, a, pdot, pddot = _point(model, kin, contact.frame)
    ref = contact.reference
    if contact.translational:
        Rt = R.T if ref is ReferenceFrame.LOCAL else ca.SX.eye(3)
        if contact.rotation is not None:  # R_c^T R_ref^T, R_c a compile-time constant
            Rt = const(contact.rotation.T) @ Rt
        vel, acc, err, points = pdot, pddot, None, [(j, p, 1.0)]
        if contact.frame2 is not None:
            j2, _, p2, _, _, pdot2, pddot2 = _point(model, kin, contact.frame2)
            vel, acc, err = vel - pdot2, acc - pddot2, p - p2
            points.append((j2, p2, -1.0))
        elif target is not None:
            err = p - target
        lin = Rt.T @ full[:3]  # the force in the world axes, R_ref R_c f
        wrenches = [(jj, sign * ca.vertcat(lin, cross(pp, lin))) for jj, pp, sign in points if jj >= 0]
        rows = (Rt @ vel, Rt @ acc, None if err is None else Rt @ err)
    else:
        if ref is ReferenceFrame.LOCAL:
            X = lambda m: act_inv_motion(R, p, m)  # noqa: E731
            wrench = ca.vertcat(R @ full[:3], R @ full[3:] + cross(p, R @ full[:3]))
        elif ref is ReferenceFrame.LOCAL_WORLD_ALIGNED:
            X = lambda m: shift_motion(m, p)  # noqa: E731
            wrench = ca.vertcat(full[:3], full[3:] + cross(p, full[:3]))
        else:
            X = lambda m: m  # noqa: E731
            wrench = full
        err = None if target is None else _error_6d(ref, R, p, *target)
        rows = (X(v), X(a), err)
        wrenches = [(j, wrench)] if j >= 0 else []
        if contact.frame2 is not None:  # a 6D loop closure: X (v1 - v2), X (a1 - a2 + v1 x v2) in LOCAL
            j2, _, _, v2, a2, _, _ = _point(model, kin, contact.frame2)
            drift = X(motion_cross(v, v2)) if ref is ReferenceFrame.LOCAL else 0
            rows = (X(v - v2), X(a - a2) + drift, None)
            wrenches = [(jj, sign * wrench) for jj, sign in ((j, 1.0), (j2, -1.0)) if jj >= 0]
    vel, acc, err = (None if x is None else x[sel] for x in rows)
    return ContactRows(vel, acc, err, wrenches)


def _error_6d(reference, R, p, Rt, pt):
    """Position error of a 6D contact (:func:`dynamics.contacts._error_6d`)."""
    if reference is ReferenceFrame.WORLD:  # log6(M Mt^-1)
        Rr = R @ Rt.T
        return log6(rotation_to_quat(Rr), p - Rr @ pt)
    local = log6(rotation_to_quat(Rt.T @ R), Rt.T @ (p - pt))  # log6(Mt^-1 M)
    if reference is ReferenceFrame.LOCAL:
        return local
    return ca.vertcat(R @ local[:3], R @ local[3:])


# ----------------------------------------------------------------------------- soft contacts


def _sigmoid(x, clip):
    """:func:`dynamics.soft_contact.sigmoid`."""
    return 1.0 / (1.0 + ca.exp(-ca.fmin(ca.fmax(x, -clip), clip)))


def _softplus(x, clip):
    """:func:`dynamics.soft_contact.softplus`."""
    return ca.if_else(x > clip, x, ca.log1p(ca.exp(ca.fmin(ca.fmax(x, -clip), clip))))


def soft_contact_force(model, kin: Kinematics, frame, law, parameters):
    """A soft contact of ``frame``'s origin (:mod:`dynamics.soft_contact`, its smoothed law
    ``law``), its ``parameters`` (SX, :meth:`dynamics.SoftContact.parameters`) inputs: ``(F,
    f_n, wrenches)``, the world force on the robot, its normal part and ``[(joint, (F, p x
    F))]`` for :func:`generalized_forces`. ``kin`` holds ``ov``."""
    f = model.frame_id(frame)
    j = int(model.frame_parent[f])
    _, p = frame_placement(model, kin, f)
    pdot = shift_motion(_body(kin.ov, j), p)[:3]
    p0, n = parameters[0:3], parameters[3:6]
    k, c, e, mu, delta, w, eps = (parameters[i] for i in range(6, 13))
    d, d_dot = -ca.dot(n, p - p0), -ca.dot(n, pdot)
    if law == "linear":
        phi = k * d + c * d_dot
    else:
        phi = k * (delta * _softplus(d / delta, EXP_CLIP)) ** e * (1 + c * d_dot)
    f_n = _sigmoid(d / delta, EXP_CLIP) * 0.5 * (phi + ca.sqrt(phi * phi + w * w))
    v_t = pdot - ca.dot(n, pdot) * n
    F = f_n * n - mu * f_n / ca.sqrt(ca.dot(v_t, v_t) + eps * eps) * v_t
    return F, f_n, ([(j, ca.vertcat(F, cross(p, F)))] if j >= 0 else [])


# ----------------------------------------------------------------------------- the configuration manifold


def _coefficients(theta2):
    """:func:`dynamics.manifold._coefficients` of ``theta^2``: closed forms, Taylor series below
    ``_SMALL``."""
    small = theta2 < _SMALL**2
    t = ca.sqrt(ca.if_else(small, 1.0, theta2))
    a = ca.if_else(small, 0.5 - theta2 / 24, (1 - ca.cos(t)) / t**2)
    b = ca.if_else(small, 1.0 / 6 - theta2 / 120, (t - ca.sin(t)) / t**3)
    c = ca.if_else(small, 1.0 / 24 - theta2 / 720, (t**2 + 2 * ca.cos(t) - 2) / (2 * t**4))
    d = ca.if_else(small, 1.0 / 120 - theta2 / 2520, (2 * t - 3 * ca.sin(t) + t * ca.cos(t)) / (2 * t**5))
    return a, b, c, d


def log6(quat, p):
    """SE(3) logarithm of a placement given by a quaternion and a translation
    (:func:`dynamics.manifold.log6`)."""
    quat = ca.if_else(quat[3] < 0, -quat, quat)
    s = ca.sqrt(ca.dot(quat[:3], quat[:3]) + 1e-30)  # never 0: AD through sqrt stays finite at the identity
    theta = 2 * ca.atan2(s, quat[3])
    w = theta / s * quat[:3]
    small = theta < _SMALL
    t = ca.if_else(small, 1.0, theta)
    c = ca.if_else(small, 1.0 / 12 + theta**2 / 720, (1 - t * ca.sin(t) / (2 * (1 - ca.cos(t)))) / t**2)
    W = skew(w)
    V_inv = ca.SX.eye(3) - 0.5 * W + c * (W @ W)
    return ca.vertcat(V_inv @ p, w)


def rotation_to_quat(R):
    """Unit quaternion ``(x, y, z, w)``, ``w >= 0``, of a rotation (Shepperd's method, as
    :func:`dynamics.manifold.rotation_to_quat`)."""
    trace = R[0, 0] + R[1, 1] + R[2, 2]
    candidates = [
        ca.vertcat(1 + 2 * R[0, 0] - trace, R[0, 1] + R[1, 0], R[0, 2] + R[2, 0], R[2, 1] - R[1, 2]),
        ca.vertcat(R[0, 1] + R[1, 0], 1 + 2 * R[1, 1] - trace, R[1, 2] + R[2, 1], R[0, 2] - R[2, 0]),
        ca.vertcat(R[0, 2] + R[2, 0], R[1, 2] + R[2, 1], 1 + 2 * R[2, 2] - trace, R[1, 0] - R[0, 1]),
        ca.vertcat(R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1], 1 + trace),
    ]
    keys = [R[0, 0], R[1, 1], R[2, 2], trace]
    quat, best = candidates[0], keys[0]
    for cand, key in zip(candidates[1:], keys[1:]):  # argmax, the first on ties
        better = key > best
        quat, best = ca.if_else(better, cand, quat), ca.if_else(better, key, best)
    quat = quat / ca.norm_2(quat)
    return ca.if_else(quat[3] < 0, -quat, quat)


def _so3_left_jacobian(w):
    a, b, _, _ = _coefficients(ca.dot(w, w))
    W = skew(w)
    return ca.SX.eye(3) + a * W + b * (W @ W)


def jexp6(nu):
    """Right Jacobian of the SE(3) exponential (:func:`dynamics.manifold.jexp6`)."""
    rho, phi = -nu[:3], -nu[3:]
    a, b, c, d = _coefficients(ca.dot(phi, phi))
    P, R = skew(phi), skew(rho)
    PR, RP = P @ R, R @ P
    PRP = PR @ P
    Q = 0.5 * R + b * (PR + RP + PRP) + c * (P @ PR + RP @ P - 3 * PRP) + d * (PRP @ P + P @ PRP)
    J3 = _so3_left_jacobian(phi)
    return ca.vertcat(ca.horzcat(J3, Q), ca.horzcat(ca.SX.zeros(3, 3), J3))


def _ad(quat, p):
    """``Ad(M) (6, 6)`` on (linear, angular) motions."""
    R = quat_to_rotation(quat)
    return ca.vertcat(ca.horzcat(R, skew(p) @ R), ca.horzcat(ca.SX.zeros(3, 3), R))


def _ad_inverse(quat, p):
    Rt = quat_to_rotation(quat).T
    return ca.vertcat(ca.horzcat(Rt, -Rt @ skew(p)), ca.horzcat(ca.SX.zeros(3, 3), Rt))


def _relative(q0, q1):
    """``M(q0)^-1 M(q1)`` of free-flyer configurations as a quaternion and a translation."""
    quat0 = q0[3:7]
    return quat_multiply(quat_conjugate(quat0), q1[3:7]), quat_to_rotation(quat0).T @ (q1[:3] - q0[:3])


def _vector_indices(model):
    t = model.tree
    joints = np.concatenate((t.revolute, t.prismatic)).astype(int)
    return model.idx_q[joints], model.idx_v[joints]


def difference(model, q0, q1):
    """``q1 (-) q0`` (:func:`dynamics.difference`)."""
    out = [None] * model.nv
    for iq, iv in zip(*_vector_indices(model)):
        out[iv] = q1[iq] - q0[iq]
    t = model.tree
    for j, cq in zip(t.continuous, t.continuous_q):
        c0, s0, c1, s1 = q0[cq], q0[cq + 1], q1[cq], q1[cq + 1]
        out[model.idx_v[j]] = ca.atan2(c0 * s1 - s0 * c1, c0 * c1 + s0 * s1)
    if t.free_flyer:
        xi = log6(*_relative(q0, q1))
        out[:6] = [xi[i] for i in range(6)]
    return ca.vertcat(*out)


def integrate(model, q, dq):
    """``q (+) dq`` exactly (:func:`dynamics.integrate`): the free flyer by the SE(3)
    exponential, continuous joints by rotation of their ``(cos, sin)``."""
    out = [q[i] for i in range(model.nq)]
    for iq, iv in zip(*_vector_indices(model)):
        out[iq] = q[iq] + dq[iv]
    t = model.tree
    for j, cq in zip(t.continuous, t.continuous_q):
        c, s, d = q[cq], q[cq + 1], dq[model.idx_v[j]]
        out[cq], out[cq + 1] = c * ca.cos(d) - s * ca.sin(d), s * ca.cos(d) + c * ca.sin(d)
    if t.free_flyer:
        w = dq[3:6]
        theta2 = ca.dot(w, w)
        small = theta2 < _SMALL**2
        theta = ca.sqrt(ca.if_else(small, 1.0, theta2))
        half = ca.if_else(small, 0.5 - theta2 / 48, ca.sin(theta / 2) / theta)
        turn = ca.vertcat(half * w, ca.if_else(small, 1 - theta2 / 8, ca.cos(theta / 2)))  # unit to second order
        quat = quat_multiply(q[3:7], turn)
        p = q[:3] + quat_to_rotation(q[3:7]) @ _so3_left_jacobian(w) @ dq[:3]
        out[:3], out[3:7] = [p[i] for i in range(3)], [quat[i] for i in range(4)]
    return ca.vertcat(*out)


def log3(R):
    """Rotation vector of a rotation matrix (:func:`dynamics.manifold.log3`)."""
    return log6(rotation_to_quat(R), ca.SX.zeros(3))[3:]


def jlog3(w):
    """Inverse of the right Jacobian of the SO(3) exponential at ``w`` (:func:`dynamics.manifold.jlog3`)."""
    theta2 = ca.dot(w, w)
    small = theta2 < _SMALL**2
    t = ca.sqrt(ca.if_else(small, 1.0, theta2))
    c = ca.if_else(small, 1.0 / 12 + theta2 / 720, 1 / t**2 - (1 + ca.cos(t)) / (2 * t * ca.sin(t)))
    W = skew(w)
    return ca.SX.eye(3) + 0.5 * W + c * (W @ W)


def _jlog6(xi):
    """Inverse of :func:`jexp6` in closed form: ``[[J3, Q], [0, J3]]^-1 = [[Ji, -Ji Q Ji], [0, Ji]]``
    with ``Ji`` the inverse SO(3) Jacobian (:func:`jlog3`)."""
    J = jexp6(xi)
    Ji = jlog3(xi[3:])
    return ca.vertcat(ca.horzcat(Ji, -Ji @ J[:3, 3:] @ Ji), ca.horzcat(ca.SX.zeros(3, 3), Ji))


def difference_jacobians(model, q0, q1):
    """``(d_dq0, d_dq1)`` of :func:`difference` (:func:`dynamics.difference_jacobians`)."""
    nv = model.nv
    d_dq0, d_dq1 = -ca.SX.eye(nv), ca.SX.eye(nv)
    if model.tree.free_flyer:
        quat, p = _relative(q0, q1)
        jlog = _jlog6(log6(quat, p))
        d_dq1[:6, :6] = jlog
        d_dq0[:6, :6] = -jlog @ _ad_inverse(quat, p)
    return d_dq0, d_dq1


def difference_jacobian_inverse(model, q0, q1):
    """``(d_dq0)^-1`` of :func:`difference` in closed form: ``-Ad(M0^-1 M1) jexp6(xi)`` on the
    free flyer (minus the identity elsewhere)."""
    out = -ca.SX.eye(model.nv)
    if model.tree.free_flyer:
        quat, p = _relative(q0, q1)
        out[:6, :6] = -_ad(quat, p) @ jexp6(log6(quat, p))
    return out


# ----------------------------------------------------------------------------- RNEA derivatives


def rnea_derivatives(model, kin: Kinematics, gravity=True):
    """``(dtau_dq, dtau_dv, M)`` of :func:`rnea` without external forces, by the world-frame
    analytical derivatives of :func:`dynamics.rnea_derivatives` (the formulas of
    :mod:`dynamics.inverse_dynamics`, written per joint): an O(nv^2) set of 6-vector products
    instead of differentiating the whole recursion. ``kin`` holds ``ov, oa`` (without gravity)."""
    t, n, nv = model.tree, model.njoints, model.nv
    a0 = ca.vertcat(-const(model.gravity), ca.SX.zeros(3)) if gravity else ca.SX.zeros(6)
    oa = [x + a0 for x in kin.oa]
    mass, mc, Io, Z, h, of = [], [], [], [], [], []
    for i in range(n):
        m, mci, Ii = _world_inertia(model, kin, i)
        v, w = kin.ov[i][:3], kin.ov[i][3:]
        hi = _rigid_apply(m, mci, Ii, kin.ov[i])
        mass.append(m), mc.append(mci), Io.append(Ii), h.append(hi)
        of.append(_rigid_apply(m, mci, Ii, oa[i]) + force_cross(kin.ov[i], hi))
        Zi = skew(w) @ Ii - mci @ v.T + ca.dot(v, mci) * ca.SX.eye(3)
        Z.append(Zi + Zi.T)
    composite = [list(x) for x in (mass, mc, Io, Z, h, of)]
    for i in range(n - 1, -1, -1):
        parent = int(model.parents[i])
        if parent >= 0:
            for x in composite:
                x[parent] = x[parent] + x[i]
    m_c, mc_c, Io_c, X_c, H_c, oF = composite
    F, Rr, alpha, beta, u, G_q, G_v = ([None] * nv for _ in range(7))
    for k, j in enumerate(t.dof_joint):
        S, parent = kin.oS[k], int(model.parents[j])
        v_par = kin.ov[parent] if parent >= 0 else ca.SX.zeros(6)
        a_par = oa[parent] if parent >= 0 else a0
        Yc = (m_c[j], mc_c[j], Io_c[j])
        Hl, Ha = H_c[j][:3], H_c[j][3:]

        def bc_plus_cross(x):
            return ca.vertcat(2 * cross(x[3:], Hl), X_c[j] @ x[3:] + cross(x[3:], Ha))

        u[k] = motion_cross(v_par, S)
        alpha[k] = -motion_cross(S, a_par) - motion_cross(u[k], v_par)
        beta[k] = u[k] - motion_cross(S, kin.ov[j])
        F[k] = _rigid_apply(*Yc, S)
        Rr[k] = ca.vertcat(ca.SX.zeros(3), 2 * cross(Hl, S[:3]) + X_c[j] @ S[3:] - cross(S[3:], Ha))
        G_q[k] = _rigid_apply(*Yc, alpha[k]) + bc_plus_cross(u[k]) + force_cross(S, oF[j])
        G_v[k] = _rigid_apply(*Yc, beta[k]) + bc_plus_cross(S)
    dq, dv, M = ca.SX.zeros(nv, nv), ca.SX.zeros(nv, nv), ca.SX.zeros(nv, nv)
    for l in range(nv):
        for k in range(nv):
            if t.lower[l, k]:
                dq[l, k] = ca.dot(F[l], alpha[k]) + ca.dot(Rr[l], u[k])
                dv[l, k] = ca.dot(F[l], beta[k]) + ca.dot(Rr[l], kin.oS[k])
                if k <= l:
                    M[l, k] = ca.dot(F[l], kin.oS[k])
                    M[k, l] = M[l, k]
            elif t.below[l, k]:
                dq[l, k] = ca.dot(kin.oS[l], G_q[k])
                dv[l, k] = ca.dot(kin.oS[l], G_v[k])
    return dq, dv, M
