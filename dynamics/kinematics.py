"""Forward kinematics in the world frame, frame quantities and the centre of mass.

Every body quantity is kept in world coordinates at the world origin (Pinocchio's ``o``
quantities): placements ``oR, op`` of the joint frames, Jacobian columns ``oS`` (the motion
subspace of each dof mapped to the world), spatial velocities ``ov`` and accelerations
``oa``. In these coordinates ``ov_i = sum_k support[i, k] oS_k v_k``, so velocities and
accelerations of all bodies are one matrix product over the tree's ``support`` table.

Internal arrays are item-major, ``(joints or dofs, B, ...)``: tree operations act on the
first axis as matrix products, the batch rides along.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np

from .batch import batch, unbatch
from .spatial import act_inv_motion, act_motion, cross, motion_cross, quat_to_rotation, rotate, rotation_about, shift_motion


class ReferenceFrame(str, Enum):
    """Where a frame quantity is expressed (Pinocchio's names).

    LOCAL: the frame itself; WORLD: the world frame (origin and axes); LOCAL_WORLD_ALIGNED:
    origin at the frame, axes of the world.
    """

    LOCAL = "LOCAL"
    WORLD = "WORLD"
    LOCAL_WORLD_ALIGNED = "LOCAL_WORLD_ALIGNED"

    @classmethod
    def parse(cls, value) -> "ReferenceFrame":
        try:
            return cls(value.value if isinstance(value, Enum) else str(value).upper())
        except ValueError:
            raise ValueError(f"unknown reference frame {value!r}; expected one of {', '.join(m.value for m in cls)}") from None


@dataclass(frozen=True)
class Kinematics:
    """World placements ``oR (n, B, 3, 3)``, ``op (n, B, 3)``, Jacobian columns ``oS (nv, B, 6)``,
    velocities ``ov (n, B, 6)`` and accelerations ``oa (n, B, 6)`` (when computed); ``oa``
    includes the fictitious acceleration ``-g`` of the universe when asked for."""

    oR: np.ndarray
    op: np.ndarray
    oS: np.ndarray
    ov: np.ndarray | None = None
    oa: np.ndarray | None = None
    a0: np.ndarray | None = None  # acceleration of the universe, (6,)

    def parent_velocity(self, model):
        """Velocity of the parent body of each dof's joint, ``(nv, B, 6)`` (zero for the universe)."""
        return _pad(self.ov, 0.0)[model.tree.dof_parent + 1]

    def parent_acceleration(self, model):
        return _pad(self.oa, self.a0)[model.tree.dof_parent + 1]


def _pad(x, first):
    """Prepend the universe's entry to an ``(n, B, 6)`` array."""
    head = np.broadcast_to(np.asarray(first, dtype=float), (1,) + x.shape[1:])
    return np.concatenate((head, x), axis=0)


def tree_sum(table, x):
    """``table @ x`` over the first axis of ``x`` (``table`` is ``(m, n)``, ``x`` is ``(n, ...)``)."""
    return (table @ x.reshape(x.shape[0], -1)).reshape((table.shape[0],) + x.shape[1:])


def joint_placements(model, q):
    """World placements of all joint frames: ``oR (n, B, 3, 3)``, ``op (n, B, 3)``; ``q`` is ``(B, nq)``."""
    t = model.tree
    n, B = model.njoints, q.shape[0]
    jR = np.broadcast_to(np.eye(3), (n, B, 3, 3)).copy()
    jp = np.zeros((n, B, 3))
    if len(t.revolute):
        angle = q[:, t.revolute_q].T
        jR[t.revolute] = rotation_about(model.axis[t.revolute, None], np.cos(angle), np.sin(angle))
    if len(t.continuous):
        jR[t.continuous] = rotation_about(model.axis[t.continuous, None], q[:, t.continuous_q].T, q[:, t.continuous_q + 1].T)
    if len(t.prismatic):
        jp[t.prismatic] = model.axis[t.prismatic, None] * q[:, t.prismatic_q].T[..., None]
    if t.free_flyer:
        jR[0] = quat_to_rotation(q[:, 3:7])
        jp[0] = q[:, :3]
    R0, p0 = model.joint_rotation[:, None], model.joint_translation[:, None]
    lR = R0 @ jR
    lp = p0 + rotate(R0, jp)
    oR, op = lR, lp  # the root level is placed in the universe already
    for level in t.levels[1:]:
        par = model.parents[level]
        oR[level] = oR[par] @ lR[level]
        op[level] = op[par] + rotate(oR[par], lp[level])
    return oR, op


def forward(model, q, v=None, a=None, gravity=False) -> Kinematics:
    """World kinematics of ``(B, nq)`` configurations, with velocities and accelerations if given.

    ``a = oS a + ov_parent x oS v`` summed over the support: the time derivative of
    ``oS_k`` is ``ov_joint(k) x oS_k``, and ``ov_joint(k) x oS_k v_k = ov_parent x oS_k v_k``.
    """
    oR, op = joint_placements(model, q)
    t = model.tree
    oS = act_motion(oR[t.dof_joint], op[t.dof_joint], t.motion_subspace[:, None, :])
    if v is None:
        return Kinematics(oR, op, oS)
    Sv = oS * v.T[..., None]
    ov = tree_sum(t.support, Sv)
    a0 = np.concatenate((-model.gravity, np.zeros(3))) if gravity else np.zeros(6)
    if a is None:
        return Kinematics(oR, op, oS, ov, None, a0)
    kin = Kinematics(oR, op, oS, ov, None, a0)
    bias = oS * a.T[..., None] + motion_cross(kin.parent_velocity(model), Sv)
    oa = tree_sum(t.support, bias) + a0
    return Kinematics(oR, op, oS, ov, oa, a0)


# ----------------------------------------------------------------------------- frames


def _frame(model, frame):
    f = model.frame_id(frame)
    return f, int(model.frame_parent[f])


def _frame_placement(model, kin, f, j):
    """World placement of frame ``f`` attached to joint ``j``, ``(B, 3, 3), (B, 3)``."""
    fR, fp = model.frame_rotation[f], model.frame_translation[f]
    B = kin.op.shape[1]
    if j < 0:
        return np.broadcast_to(fR, (B, 3, 3)), np.broadcast_to(fp, (B, 3))
    return kin.oR[j] @ fR, kin.op[j] + rotate(kin.oR[j], fp)


def _express(m, R, p, reference):
    """A world motion (at the origin) expressed in the frame ``(R, p)`` per ``reference``."""
    if reference is ReferenceFrame.WORLD:
        return m
    if reference is ReferenceFrame.LOCAL:
        return act_inv_motion(R, p, m)
    return shift_motion(m, p)


def _body_motion(kin_motion, j, B):
    return np.zeros((B, 6)) if j < 0 else kin_motion[j]


def frame_placement(model, q, frame):
    """Placement of ``frame`` in the world: ``(R (..., 3, 3), p (..., 3))``."""
    (q,), shape = batch(("q", q, model.nq))
    f, j = _frame(model, frame)
    R, p = _frame_placement(model, forward(model, q), f, j)
    return unbatch(np.ascontiguousarray(R), shape), unbatch(np.ascontiguousarray(p), shape)


def frame_velocity(model, q, v, frame, reference="LOCAL"):
    """Spatial velocity ``(linear, angular)`` of ``frame`` expressed in ``reference``."""
    reference = ReferenceFrame.parse(reference)
    (q, v), shape = batch(("q", q, model.nq), ("v", v, model.nv))
    f, j = _frame(model, frame)
    kin = forward(model, q, v)
    R, p = _frame_placement(model, kin, f, j)
    return unbatch(_express(_body_motion(kin.ov, j, q.shape[0]), R, p, reference), shape)


def frame_acceleration(model, q, v, a, frame, reference="LOCAL", classical=False):
    """Spatial acceleration of ``frame`` in ``reference`` (gravity not included).

    With ``classical=True``, the classical acceleration: the linear part is the second time
    derivative of the frame origin's position (in LOCAL and LOCAL_WORLD_ALIGNED), i.e. the
    spatial one plus ``w x v`` of the velocity expressed in the same frame.
    """
    reference = ReferenceFrame.parse(reference)
    (q, v, a), shape = batch(("q", q, model.nq), ("v", v, model.nv), ("a", a, model.nv))
    f, j = _frame(model, frame)
    kin = forward(model, q, v, a)
    R, p = _frame_placement(model, kin, f, j)
    B = q.shape[0]
    acc = _express(_body_motion(kin.oa, j, B), R, p, reference)
    if classical:
        vel = _express(_body_motion(kin.ov, j, B), R, p, reference)
        acc = acc + np.concatenate((cross(vel[:, 3:], vel[:, :3]), np.zeros((B, 3))), axis=-1)
    return unbatch(acc, shape)


def _world_jacobian(model, kin, j):
    """Jacobian of the body of joint ``j`` in the world: ``(nv, B, 6)`` (zero columns off its support)."""
    if j < 0:
        return np.zeros_like(kin.oS)
    return kin.oS * model.tree.support[j][:, None, None]


def frame_jacobian(model, q, frame, reference="LOCAL"):
    """Jacobian ``(..., 6, nv)`` mapping ``v`` to the frame velocity in ``reference``."""
    reference = ReferenceFrame.parse(reference)
    (q,), shape = batch(("q", q, model.nq))
    f, j = _frame(model, frame)
    kin = forward(model, q)
    R, p = _frame_placement(model, kin, f, j)
    J = _express(_world_jacobian(model, kin, j), R, p, reference)
    return unbatch(np.ascontiguousarray(J.transpose(1, 2, 0)), shape)


def frame_jacobian_time_variation(model, q, v, frame, reference="LOCAL"):
    """``dJ/dt (..., 6, nv)`` of :func:`frame_jacobian`; ``dJ/dt v`` is the acceleration drift.

    WORLD: ``d oS_k/dt = ov_joint(k) x oS_k``. LOCAL: ``Ad^-1 (dJ_world - ov_frame x J_world)``.
    LOCAL_WORLD_ALIGNED: shifted ``dJ_world`` plus ``(-pdot x J_angular, 0)``.
    """
    reference = ReferenceFrame.parse(reference)
    (q, v), shape = batch(("q", q, model.nq), ("v", v, model.nv))
    f, j = _frame(model, frame)
    kin = forward(model, q, v)
    R, p = _frame_placement(model, kin, f, j)
    Jw = _world_jacobian(model, kin, j)
    dJw = motion_cross(kin.ov[model.tree.dof_joint], Jw)
    vf = _body_motion(kin.ov, j, q.shape[0])
    if reference is ReferenceFrame.WORLD:
        dJ = dJw
    elif reference is ReferenceFrame.LOCAL:
        dJ = act_inv_motion(R, p, dJw - motion_cross(vf, Jw))
    else:
        pdot = shift_motion(vf, p)[:, :3]
        dJ = shift_motion(dJw, p)
        dJ[..., :3] -= cross(pdot, Jw[..., 3:])
    return unbatch(np.ascontiguousarray(dJ.transpose(1, 2, 0)), shape)


# ----------------------------------------------------------------------------- centre of mass


def _mass_moments(model, kin):
    """Body masses ``(n,)`` and first moments ``m_i c_i (n, B, 3)`` in the world."""
    c = kin.op + rotate(kin.oR, model.body_com[:, None])
    return model.body_mass, model.body_mass[:, None, None] * c


def center_of_mass(model, q):
    """Position ``(..., 3)`` of the centre of mass in the world."""
    (q,), shape = batch(("q", q, model.nq))
    m, mc = _mass_moments(model, forward(model, q))
    return unbatch(mc.sum(0) / m.sum(), shape)


def com_jacobian(model, q):
    """Jacobian ``(..., 3, nv)`` of the centre of mass position.

    Column ``k``: ``(m_sub oS_lin - (m c)_sub x oS_ang) / m`` with the mass and first moment
    of the subtree moved by dof ``k``.
    """
    (q,), shape = batch(("q", q, model.nq))
    kin = forward(model, q)
    m, mc = _mass_moments(model, kin)
    t = model.tree
    m_sub = (t.descendants @ m)[t.dof_joint]
    mc_sub = tree_sum(t.descendants, mc)[t.dof_joint]
    J = (m_sub[:, None, None] * kin.oS[..., :3] - cross(mc_sub, kin.oS[..., 3:])) / m.sum()
    return unbatch(np.ascontiguousarray(J.transpose(1, 2, 0)), shape)
