"""Spatial algebra on batched arrays (component axis last).

Conventions (Pinocchio's): a motion vector is ``m = (v, w)`` (linear, angular), a force
vector is ``f = (f, n)`` (linear, angular). A placement ``M = (R, p)`` maps coordinates of
its frame to the world; its actions are

    Ad(M) m  = (R v + p x R w, R w)             (motion)
    Ad*(M) f = (R f, R n + p x R f)             (force)

``m1 x m2`` is the motion cross product and ``m x* f`` its dual on forces. A rigid-body
inertia in world coordinates is kept as ``(mass, c, Ic)``: mass, centre of mass, rotational
inertia about the centre of mass in world axes; ``I m = (mass (v - c x w), c x mass (v - c x w) + Ic w)``.
Every function broadcasts over leading axes.
"""

from __future__ import annotations

import numpy as np


def cross(a, b):
    """3-vector cross product over the last axis (faster than ``np.cross`` on small axes)."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return np.stack((a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0), axis=-1)


def skew(w):
    """The matrix ``[w]x`` such that ``[w]x u = w x u``; shape ``(..., 3, 3)``."""
    z = np.zeros_like(w[..., 0])
    return np.stack(
        (
            np.stack((z, -w[..., 2], w[..., 1]), axis=-1),
            np.stack((w[..., 2], z, -w[..., 0]), axis=-1),
            np.stack((-w[..., 1], w[..., 0], z), axis=-1),
        ),
        axis=-2,
    )


def rotate(R, x):
    """``R x`` for stacks of 3x3 matrices and 3-vectors."""
    return np.einsum("...ij,...j->...i", R, x)


def rotate_t(R, x):
    """``R^T x``."""
    return np.einsum("...ji,...j->...i", R, x)


def motion_cross(m1, m2):
    """Spatial motion cross product ``m1 x m2``."""
    v1, w1 = m1[..., :3], m1[..., 3:]
    v2, w2 = m2[..., :3], m2[..., 3:]
    return np.concatenate((cross(w1, v2) + cross(v1, w2), cross(w1, w2)), axis=-1)


def force_cross(m, f):
    """Dual cross product ``m x* f``."""
    v, w = m[..., :3], m[..., 3:]
    lin, ang = f[..., :3], f[..., 3:]
    return np.concatenate((cross(w, lin), cross(w, ang) + cross(v, lin)), axis=-1)


def act_motion(R, p, m):
    """``Ad(M) m``."""
    w = rotate(R, m[..., 3:])
    return np.concatenate((rotate(R, m[..., :3]) + cross(p, w), w), axis=-1)


def act_inv_motion(R, p, m):
    """``Ad(M)^-1 m``."""
    v, w = m[..., :3], m[..., 3:]
    return np.concatenate((rotate_t(R, v - cross(p, w)), rotate_t(R, w)), axis=-1)


def act_force(R, p, f):
    """``Ad*(M) f``: a force given in the frame of ``M`` expressed in the world."""
    lin = rotate(R, f[..., :3])
    return np.concatenate((lin, rotate(R, f[..., 3:]) + cross(p, lin)), axis=-1)


def shift_motion(m, p):
    """A motion given at the origin, expressed at point ``p`` (same axes)."""
    v, w = m[..., :3], m[..., 3:]
    return np.concatenate((v - cross(p, w), w), axis=-1)


def inertia_apply(mass, c, Ic, m):
    """Apply the world inertia ``(mass, c, Ic)`` to motion ``m``; ``mass`` has no trailing axis."""
    v, w = m[..., :3], m[..., 3:]
    lin = mass[..., None] * (v - cross(c, w))
    return np.concatenate((lin, cross(c, lin) + rotate(Ic, w)), axis=-1)


def inertia_matrix(mass, c, Ic):
    """The 6x6 matrix of the inertia ``(mass, c, Ic)`` in (linear, angular) ordering."""
    mc = mass[..., None, None] * skew(c)
    eye = np.broadcast_to(np.eye(3), Ic.shape) * mass[..., None, None]
    top = np.concatenate((eye, -mc), axis=-1)
    bottom = np.concatenate((mc, Ic - mc @ skew(c)), axis=-1)
    return np.concatenate((top, bottom), axis=-2)


def inertia_from_matrix(Y):
    """Inverse of :func:`inertia_matrix`: ``(mass, c, Ic)`` from a 6x6 spatial inertia."""
    mass = Y[..., 0, 0]
    mc = Y[..., 3:, :3]
    safe = np.where(mass > 0, mass, 1.0)
    c = np.stack((mc[..., 2, 1], mc[..., 0, 2], mc[..., 1, 0]), axis=-1) / safe[..., None]
    Ic = Y[..., 3:, 3:] + mc @ skew(c)
    return mass, c, Ic


def rotation_about(axis, cos, sin):
    """Rotation of angle ``atan2(sin, cos)`` about the unit ``axis`` (Rodrigues)."""
    K = skew(axis)
    return (
        np.eye(3)
        + sin[..., None, None] * K
        + (1.0 - cos)[..., None, None] * (K @ K)
    )


def quat_to_rotation(quat):
    """Rotation matrix of a unit quaternion stored ``(x, y, z, w)``."""
    x, y, z, w = quat[..., 0], quat[..., 1], quat[..., 2], quat[..., 3]
    return np.stack(
        (
            np.stack((1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)), axis=-1),
            np.stack((2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)), axis=-1),
            np.stack((2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)), axis=-1),
        ),
        axis=-2,
    )


def quat_multiply(a, b):
    """Hamilton product ``a * b`` of quaternions stored ``(x, y, z, w)``."""
    av, aw = a[..., :3], a[..., 3:]
    bv, bw = b[..., :3], b[..., 3:]
    return np.concatenate((aw * bv + bw * av + cross(av, bv), aw * bw - np.sum(av * bv, -1, keepdims=True)), axis=-1)


def quat_conjugate(q):
    return np.concatenate((-q[..., :3], q[..., 3:]), axis=-1)


def rpy_to_rotation(rpy):
    """URDF roll-pitch-yaw: ``R = Rz(yaw) Ry(pitch) Rx(roll)``."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    return np.array(
        [
            [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr],
        ]
    )
