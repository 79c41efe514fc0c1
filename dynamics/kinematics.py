"""Forward kinematics in the world frame, frame quantities and the centre of mass.

Every body quantity is kept in world coordinates at the world origin (Pinocchio's ``o``
quantities): placements ``oR, op`` of the joint frames, Jacobian columns ``oS`` (the motion
subspace of each dof mapped to the world), spatial velocities ``ov`` and accelerations
``oa``. In these coordinates ``ov_i = sum_k support[i, k] oS_k v_k``, so velocities and
accelerations of all bodies are one matrix product over the tree's ``support`` table.

Internal arrays put spatial components first and (joints or dofs, batch) last, see
:mod:`dynamics.spatial`: ``oR (3, 3, n, B)``, ``oS (6, nv, B)``, ``ov (6, n, B)``. Tree
operations are matrix products over the joint axis; public functions return batch-first
arrays.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np

from .batch import batch, unbatch
from .spatial import (
    act_inv_motion,
    act_motion,
    cross,
    matmul,
    matvec,
    motion_cross,
    quat_to_rotation,
    shift_motion,
)


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
            raise ValueError(
                f"unknown reference frame {value!r}; expected one of {', '.join(m.value for m in cls)}"
            ) from None


@dataclass(frozen=True)
class Kinematics:
    """World placements ``oR (3, 3, n, B)``, ``op (3, n, B)``, Jacobian columns ``oS (6, nv, B)``,
    velocities ``ov (6, n, B)`` and accelerations ``oa (6, n, B)`` (when computed); ``oa``
    includes the fictitious acceleration ``a0 = -g`` of the universe when asked for."""

    oR: np.ndarray
    op: np.ndarray
    oS: np.ndarray
    ov: np.ndarray | None = None
    oa: np.ndarray | None = None
    a0: np.ndarray | None = None  # acceleration of the universe, (6, 1, 1)

    @property
    def batch_size(self) -> int:
        return self.op.shape[-1]

    def parent_velocity(self, model):
        """Velocity of the parent body of each dof's joint, ``(6, nv, B)`` (zero for the universe)."""
        return _pad(self.ov, 0.0)[:, model.tree.dof_parent + 1]

    def parent_acceleration(self, model):
        return _pad(self.oa, self.a0)[:, model.tree.dof_parent + 1]


def _pad(x, first):
    """Prepend the universe's entry to a ``(6, n, B)`` array."""
    head = np.broadcast_to(np.asarray(first, dtype=float).reshape(-1, 1, 1), (x.shape[0], 1, x.shape[2]))
    return np.concatenate((head, x), axis=1)


def tree_sum(table, x):
    """``table (m, n)`` applied over the joint axis of ``x (..., n, B)``."""
    return np.matmul(table, x)


def joint_placements(model, q):
    """World placements of all joint frames ``oR (3, 3, n, B)``, ``op (3, n, B)`` of ``q (B, nq)``.

    Each joint is first placed in its parent (``R0 R(q)``; for revolute joints
    ``R0 + sin R0 [a]x + (1 - cos) R0 [a]x^2`` with precomputed products), then the
    placements are made absolute level by level.
    """
    t = model.tree
    B = q.shape[0]
    qt = q.T
    R0 = model.joint_rotation.transpose(1, 2, 0)[..., None]
    oR = np.repeat(R0, B, axis=-1)
    op = np.repeat(model.joint_translation.T[..., None], B, axis=-1)
    for joints, cos, sin in (
        (t.revolute, np.cos(qt[t.revolute_q]), np.sin(qt[t.revolute_q])),
        (t.continuous, qt[t.continuous_q], qt[t.continuous_q + 1]),
    ):
        if len(joints):
            oR[:, :, joints] += sin * t.placement_sin[:, :, joints] + (1 - cos) * t.placement_cos[:, :, joints]
    if len(t.prismatic):
        op[:, t.prismatic] += matvec(R0[:, :, t.prismatic], model.axis[t.prismatic].T[..., None]) * qt[t.prismatic_q]
    if t.free_flyer:
        oR[:, :, 0] = matmul(R0[:, :, 0], quat_to_rotation(qt[3:7]))
        op[:, 0] += matvec(R0[:, :, 0], qt[:3])
    for level in t.levels[1:]:
        par = model.parents[level]
        oR[:, :, level] = matmul(oR[:, :, par], oR[:, :, level])
        op[:, level] = op[:, par] + matvec(oR[:, :, par], op[:, level])
    return oR, op


def forward(model, q, v=None, a=None, gravity=False) -> Kinematics:
    """World kinematics of ``(B, nq)`` configurations, with velocities and accelerations if given.

    ``oa = sum over the support of (oS a + ov_parent x oS v)``: the time derivative of
    ``oS_k`` is ``ov_joint(k) x oS_k``, and ``ov_joint(k) x oS_k v_k = ov_parent x oS_k v_k``.
    """
    oR, op = joint_placements(model, q)
    t = model.tree
    oS = act_motion(oR[:, :, t.dof_joint], op[:, t.dof_joint], t.motion_subspace)
    if v is None:
        return Kinematics(oR, op, oS)
    Sv = oS * v.T
    ov = tree_sum(t.support, Sv)
    a0 = (np.concatenate((-model.gravity, np.zeros(3))) if gravity else np.zeros(6)).reshape(6, 1, 1)
    kin = Kinematics(oR, op, oS, ov, None, a0)
    if a is None:
        return kin
    bias = oS * a.T + motion_cross(kin.parent_velocity(model), Sv)
    return Kinematics(oR, op, oS, ov, tree_sum(t.support, bias) + a0, a0)


# ----------------------------------------------------------------------------- frames


def _frame(model, frame):
    f = model.frame_id(frame)
    return f, int(model.frame_parent[f])


def frame_placement_world(model, kin, f, j):
    """World placement of frame ``f`` attached to joint ``j``: ``(3, 3, B), (3, B)``."""
    fR, fp = model.frame_rotation[f], model.frame_translation[f]
    B = kin.batch_size
    if j < 0:
        return np.broadcast_to(fR[..., None], (3, 3, B)), np.broadcast_to(fp[:, None], (3, B))
    R = kin.oR[:, :, j]
    return matmul(R, fR[..., None]), kin.op[:, j] + matvec(R, fp[:, None])


def _express(m, R, p, reference):
    """World motions (at the origin) ``(6, ..., B)`` expressed in the frame ``(R, p)`` per ``reference``."""
    if reference is ReferenceFrame.WORLD:
        return m
    extra = m.ndim - 2  # axes between components and batch
    R = R.reshape(R.shape[:2] + (1,) * extra + R.shape[-1:])
    p = p.reshape(p.shape[:1] + (1,) * extra + p.shape[-1:])
    if reference is ReferenceFrame.LOCAL:
        return act_inv_motion(R, p, m)
    return shift_motion(m, p)


def _body(x, j, B):
    """Entry of joint ``j`` of a ``(6, n, B)`` array (zero for the universe)."""
    return np.zeros((6, B)) if j < 0 else x[:, j]


def _batch_first(x):
    """``(c, ..., B) -> (B, c, ...)``."""
    return np.ascontiguousarray(np.moveaxis(x, -1, 0))


def frame_placement(model, q, frame):
    """Placement of ``frame`` in the world: ``(R (..., 3, 3), p (..., 3))``."""
    (q,), shape = batch(("q", q, model.nq))
    f, j = _frame(model, frame)
    R, p = frame_placement_world(model, forward(model, q), f, j)
    return unbatch(_batch_first(R), shape), unbatch(_batch_first(p), shape)


def frame_positions(model, q, frames) -> np.ndarray:
    """The world positions ``(..., len(frames), 3)`` of the origins of ``frames``, from one pass
    of forward kinematics (:func:`frame_placement` runs one per frame)."""
    (q,), shape = batch(("q", q, model.nq))
    kin = forward(model, q)
    p = np.stack([frame_placement_world(model, kin, *_frame(model, frame))[1] for frame in frames])
    return unbatch(p.transpose(2, 0, 1), shape)


def frame_velocity(model, q, v, frame, reference="LOCAL"):
    """Spatial velocity ``(linear, angular)`` of ``frame`` expressed in ``reference``."""
    reference = ReferenceFrame.parse(reference)
    (q, v), shape = batch(("q", q, model.nq), ("v", v, model.nv))
    f, j = _frame(model, frame)
    kin = forward(model, q, v)
    R, p = frame_placement_world(model, kin, f, j)
    return unbatch(_batch_first(_express(_body(kin.ov, j, kin.batch_size), R, p, reference)), shape)


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
    R, p = frame_placement_world(model, kin, f, j)
    B = kin.batch_size
    acc = _express(_body(kin.oa, j, B), R, p, reference)
    if classical:
        vel = _express(_body(kin.ov, j, B), R, p, reference)
        acc = acc + np.concatenate((cross(vel[3:], vel[:3]), np.zeros((3, B))))
    return unbatch(_batch_first(acc), shape)


def world_jacobian(model, kin, j):
    """Jacobian ``(6, nv, B)`` of the body of joint ``j`` in the world (zero off its support)."""
    if j < 0:
        return np.zeros_like(kin.oS)
    return kin.oS * model.tree.support[j][:, None]


def frame_jacobian(model, q, frame, reference="LOCAL"):
    """Jacobian ``(..., 6, nv)`` mapping ``v`` to the frame velocity in ``reference``."""
    reference = ReferenceFrame.parse(reference)
    (q,), shape = batch(("q", q, model.nq))
    f, j = _frame(model, frame)
    kin = forward(model, q)
    R, p = frame_placement_world(model, kin, f, j)
    return unbatch(_batch_first(_express(world_jacobian(model, kin, j), R, p, reference)), shape)


def frame_jacobian_time_variation(model, q, v, frame, reference="LOCAL"):
    """``dJ/dt (..., 6, nv)`` of :func:`frame_jacobian`; ``dJ/dt v`` is the acceleration drift.

    WORLD: ``d oS_k/dt = ov_joint(k) x oS_k``. LOCAL: ``Ad^-1 (dJ_world - ov_frame x J_world)``.
    LOCAL_WORLD_ALIGNED: shifted ``dJ_world`` plus ``(-pdot x J_angular, 0)``.
    """
    reference = ReferenceFrame.parse(reference)
    (q, v), shape = batch(("q", q, model.nq), ("v", v, model.nv))
    f, j = _frame(model, frame)
    kin = forward(model, q, v)
    R, p = frame_placement_world(model, kin, f, j)
    Jw = world_jacobian(model, kin, j)
    dJw = motion_cross(kin.ov[:, model.tree.dof_joint], Jw)
    vf = _body(kin.ov, j, kin.batch_size)[:, None]
    if reference is ReferenceFrame.WORLD:
        dJ = dJw
    elif reference is ReferenceFrame.LOCAL:
        dJ = _express(dJw - motion_cross(vf, Jw), R, p, reference)
    else:
        pdot = _express(vf, R, p, reference)[:3]
        dJ = _express(dJw, R, p, reference)
        dJ[:3] -= cross(pdot, Jw[3:])
    return unbatch(_batch_first(dJ), shape)


# ----------------------------------------------------------------------------- centre of mass


def _mass_moments(model, kin):
    """Body masses ``(n,)`` and first moments ``m_i c_i (3, n, B)`` in the world."""
    c = kin.op + matvec(kin.oR, model.body_com.T[..., None])
    return model.body_mass, model.body_mass[:, None] * c


def center_of_mass(model, q):
    """Position ``(..., 3)`` of the centre of mass in the world."""
    (q,), shape = batch(("q", q, model.nq))
    m, mc = _mass_moments(model, forward(model, q))
    return unbatch(_batch_first(mc.sum(1) / m.sum()), shape)


def com_jacobian(model, q):
    """Jacobian ``(..., 3, nv)`` of the centre of mass position.

    Column ``k``: ``(m_sub oS_lin - (m c)_sub x oS_ang) / m`` with the mass and first moment
    of the subtree moved by dof ``k``.
    """
    (q,), shape = batch(("q", q, model.nq))
    kin = forward(model, q)
    m, mc = _mass_moments(model, kin)
    t = model.tree
    m_sub = (t.descendants @ m)[t.dof_joint][:, None]
    mc_sub = tree_sum(t.descendants, mc)[:, t.dof_joint]
    J = (m_sub * kin.oS[:3] - cross(mc_sub, kin.oS[3:])) / m.sum()
    return unbatch(_batch_first(J), shape)
