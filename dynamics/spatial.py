"""Spatial algebra on arrays with the components FIRST.

A 3-vector array has shape ``(3, ...)``, a spatial vector ``(6, ...)``, a rotation
``(3, 3, ...)``, a 6x6 matrix ``(6, 6, ...)``; the trailing axes (bodies, batch) are
what numpy vectorizes over. This "structure of arrays" layout keeps every component a
contiguous block, which makes the many tiny 3x3 and 6x6 products of rigid-body algorithms
run at array speed instead of per-matrix speed.

Conventions (Pinocchio's): a motion vector is ``m = (v, w)`` (linear, angular), a force
vector is ``f = (f, n)`` (linear, angular). A placement ``M = (R, p)`` maps coordinates of
its frame to the world; its actions are

    Ad(M) m  = (R v + p x R w, R w)             (motion)
    Ad*(M) f = (R f, R n + p x R f)             (force)

``m1 x m2`` is the motion cross product and ``m x* f`` its dual on forces. Rigid-body
inertias are kept about the origin of their coordinates (see :func:`rigid_apply`).
"""

from __future__ import annotations

import numpy as np

_NEXT = np.array([1, 2, 0])


def cross(a, b):
    """3-vector cross product ``a x b``.

    With ``a'`` the components shifted by one, ``(a b' - a' b)`` holds the cross product
    shifted by one: one gather less than the textbook formula, and no Python loop.
    """
    return (a * b[_NEXT] - a[_NEXT] * b)[_NEXT]


def dot(a, b):
    """Inner product over the component axis."""
    return np.einsum("i...,i...->...", a, b)


def skew(w):
    """The matrix ``[w]x`` (``[w]x u = w x u``), shape ``(3, 3, ...)``."""
    z = np.zeros_like(w[0])
    return np.stack((np.stack((z, -w[2], w[1])), np.stack((w[2], z, -w[0])), np.stack((-w[1], w[0], z))))


def matmul(A, B):
    """Product of matrix arrays ``(i, j, ...) (j, k, ...) -> (i, k, ...)``."""
    return np.einsum("ij...,jk...->ik...", A, B)


def matvec(A, x):
    """``A x`` for ``(i, j, ...)`` matrices and ``(j, ...)`` vectors."""
    return np.einsum("ij...,j...->i...", A, x)


def transpose(A):
    return A.swapaxes(0, 1)


def eye(n, like):
    """Identity matrices ``(n, n) + like.shape[...]`` broadcast over trailing axes of ``like``."""
    return np.eye(n).reshape((n, n) + (1,) * (like.ndim - 1)) * np.ones(like.shape[1:])


def motion_cross(m1, m2):
    """Spatial motion cross product ``m1 x m2``."""
    v1, w1, v2, w2 = m1[:3], m1[3:], m2[:3], m2[3:]
    return np.concatenate((cross(w1, v2) + cross(v1, w2), cross(w1, w2)))


def force_cross(m, f):
    """Dual cross product ``m x* f``."""
    v, w, lin, ang = m[:3], m[3:], f[:3], f[3:]
    return np.concatenate((cross(w, lin), cross(w, ang) + cross(v, lin)))


def act_motion(R, p, m):
    """``Ad(M) m``."""
    w = matvec(R, m[3:])
    return np.concatenate((matvec(R, m[:3]) + cross(p, w), w))


def act_inv_motion(R, p, m):
    """``Ad(M)^-1 m``."""
    Rt = transpose(R)
    return np.concatenate((matvec(Rt, m[:3] - cross(p, m[3:])), matvec(Rt, m[3:])))


def act_force(R, p, f):
    """``Ad*(M) f``: a force given in the frame of ``M``, expressed in the world."""
    lin = matvec(R, f[:3])
    return np.concatenate((lin, matvec(R, f[3:]) + cross(p, lin)))


def shift_motion(m, p):
    """A motion given at the origin, expressed at point ``p`` (same axes)."""
    return np.concatenate((m[:3] - cross(p, m[3:]), m[3:]))


def rigid_apply(mass, mc, Io, m):
    """Apply the rigid inertia ``(mass, mc, Io)`` to the motion ``m``.

    The inertia is kept about the world origin: mass, first moment ``mc = mass c``, and
    rotational inertia ``Io = Ic + mass (|c|^2 1 - c c^T)``; these add up over bodies.
    ``I m = (mass v - mc x w, mc x v + Io w)``.
    """
    v, w = m[:3], m[3:]
    return np.concatenate((mass * v - cross(mc, w), cross(mc, v) + matvec(Io, w)))


def rigid_from_com(mass, c, Ic):
    """``(mass, mc, Io)`` of a body given by its mass, centre of mass and inertia about it."""
    mc = mass * c
    return mass, mc, Ic + mass * (dot(c, c) * eye(3, c) - c[:, None] * c[None, :])


def rigid_to_com(mass, mc, Io):
    """Inverse of :func:`rigid_from_com`: ``(mass, c, Ic)`` (``c = 0`` for a massless body)."""
    c = mc / np.where(mass > 0, mass, 1.0)
    return mass, c, Io - mass * (dot(c, c) * eye(3, c) - c[:, None] * c[None, :])


def rigid_matrix(mass, mc, Io):
    """The 6x6 matrix ``(6, 6, ...)`` of a rigid inertia, (linear, angular) order."""
    C = skew(mc)
    top = np.concatenate((mass * eye(3, mc), -C), axis=1)
    return np.concatenate((top, np.concatenate((C, Io), axis=1)))


def rotation_about(axis, cos, sin):
    """Rotation of angle ``atan2(sin, cos)`` about the unit ``axis`` (Rodrigues)."""
    K = skew(axis)
    return np.eye(3).reshape((3, 3) + (1,) * (K.ndim - 2)) + sin * K + (1.0 - cos) * matmul(K, K)


def quat_to_rotation(quat):
    """Rotation matrix of a unit quaternion stored ``(x, y, z, w)``."""
    x, y, z, w = quat
    return np.stack(
        (
            np.stack((1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w))),
            np.stack((2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w))),
            np.stack((2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y))),
        )
    )


def quat_multiply(a, b):
    """Hamilton product ``a * b`` of quaternions stored ``(x, y, z, w)``."""
    av, aw, bv, bw = a[:3], a[3], b[:3], b[3]
    return np.concatenate((aw * bv + bw * av + cross(av, bv), (aw * bw - dot(av, bv))[None]))


def quat_conjugate(q):
    return np.concatenate((-q[:3], q[3:]))


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
