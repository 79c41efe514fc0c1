"""The configuration manifold: ``q (+) v``, ``q1 (-) q0`` and their Jacobians.

Revolute and prismatic joints are vector spaces; a continuous joint stores ``(cos, sin)``
of its angle (SO(2)); the free-flyer root is SE(3), stored ``(x, y, z, qx, qy, qz, qw)``
and moved in its LOCAL frame: ``integrate(q, v) = M(q) exp6(v)``,
``difference(q0, q1) = log6(M(q0)^-1 M(q1))`` (Pinocchio's convention). The SE(3) exponential,
logarithm and their Jacobians live here and nowhere else.

:func:`integrate` and :func:`difference` run as the loops of ``manifold.c``, the same formulas
compiled on first use (:func:`dynamics.codegen.compiled_library`), or as their numpy twins
``_integrate_numpy`` and ``_difference_numpy`` when it cannot be compiled.
"""

from __future__ import annotations

import ctypes
import weakref
from pathlib import Path
from typing import NamedTuple

import numpy as np

from .batch import batch, unbatch
from .memory import address
from .spatial import eye, matmul, matvec, quat_conjugate, quat_multiply, quat_to_rotation, skew, transpose

_SMALL = 1e-4  # below this rotation angle, Taylor series replace the closed forms


def _coefficients(theta):
    """``(1 - cos)/t^2, (t - sin)/t^3`` and the two higher ones of the SE(3) Jacobian."""
    small = theta < _SMALL
    t = np.where(small, 1.0, theta)
    t2 = theta * theta
    a = np.where(small, 0.5 - t2 / 24, (1 - np.cos(t)) / t**2)
    b = np.where(small, 1 / 6 - t2 / 120, (t - np.sin(t)) / t**3)
    c = np.where(small, 1 / 24 - t2 / 720, (t**2 + 2 * np.cos(t) - 2) / (2 * t**4))
    d = np.where(small, 1 / 120 - t2 / 2520, (2 * t - 3 * np.sin(t) + t * np.cos(t)) / (2 * t**5))
    return a, b, c, d


def _so3_left_jacobian(w):
    """Left Jacobian of the SO(3) exponential (its transpose is the right one)."""
    a, b, _, _ = _coefficients(np.linalg.norm(w, axis=0))
    W = skew(w)
    return eye(3, w) + a * W + b * matmul(W, W)


def exp6(nu):
    """SE(3) exponential of twists ``(6, B)``: ``(quaternion (4, B), translation (3, B))``."""
    v, w = nu[:3], nu[3:]
    theta = np.linalg.norm(w, axis=0)
    small = theta < _SMALL
    half = np.where(small, 0.5 - theta**2 / 48, np.sin(theta / 2) / np.where(small, 1, theta))
    quat = np.concatenate((half * w, np.cos(theta / 2)[None]))
    return quat, matvec(_so3_left_jacobian(w), v)


def log6(quat, p):
    """SE(3) logarithm of placements given as quaternion ``(4, B)`` and translation ``(3, B)``."""
    quat = np.where(quat[3] < 0, -quat, quat)
    s = np.linalg.norm(quat[:3], axis=0)
    tiny = s < 1e-12
    theta = 2 * np.arctan2(s, quat[3])
    w = np.where(tiny, 2 / quat[3], theta / np.where(tiny, 1, s)) * quat[:3]
    small = theta < _SMALL
    t = np.where(small, 1.0, theta)
    c = np.where(small, 1 / 12 + theta**2 / 720, (1 - t * np.sin(t) / (2 * (1 - np.cos(t)))) / t**2)
    W = skew(w)
    V_inv = eye(3, w) - 0.5 * W + c * matmul(W, W)
    return np.concatenate((matvec(V_inv, p), w))


def jexp6(nu):
    """Right Jacobian ``(6, 6, B)`` of the SE(3) exponential: ``exp6(nu + dnu) = exp6(nu) exp6(J dnu)``."""
    rho, phi = -nu[:3], -nu[3:]  # right Jacobian = left Jacobian at -nu
    a, b, c, d = _coefficients(np.linalg.norm(phi, axis=0))
    P, R = skew(phi), skew(rho)
    PR, RP = matmul(P, R), matmul(R, P)
    PRP = matmul(PR, P)
    Q = (
        0.5 * R
        + b * (PR + RP + PRP)
        + c * (matmul(P, PR) + matmul(RP, P) - 3 * PRP)
        + d * (matmul(PRP, P) + matmul(P, PRP))
    )
    J3 = _so3_left_jacobian(phi)
    return np.concatenate((np.concatenate((J3, Q), axis=1), np.concatenate((np.zeros_like(J3), J3), axis=1)))


def _ad_inverse(quat, p):
    """``Ad(M)^-1 (6, 6, B)`` on (linear, angular) motions."""
    Rt = transpose(quat_to_rotation(quat))
    return np.concatenate(
        (np.concatenate((Rt, -matmul(Rt, skew(p))), axis=1), np.concatenate((np.zeros_like(Rt), Rt), axis=1))
    )


def _relative(q0, q1):
    """``M(q0)^-1 M(q1)`` of free-flyer configurations ``(B, nq)``, as quaternion and translation."""
    quat0 = q0[:, 3:7].T
    quat = quat_multiply(quat_conjugate(quat0), q1[:, 3:7].T)
    p = matvec(transpose(quat_to_rotation(quat0)), (q1[:, :3] - q0[:, :3]).T)
    return quat, p


def _batch_first(A):
    """``(6, 6, B) -> (B, 6, 6)``."""
    return A.transpose(2, 0, 1)


def neutral(model):
    """The neutral configuration: zero joint positions, identity base placement."""
    q = np.zeros(model.nq)
    if model.tree.free_flyer:
        q[6] = 1.0
    q[model.tree.continuous_q] = 1.0
    return q


def random_configuration(model, rng=None, size=None):
    """Uniform configurations within the position limits (``size`` of them, or one).

    Free-flyer positions are drawn within the +-1 translation limits, orientations uniformly
    on SO(3); continuous joints uniformly on the circle.
    """
    rng = np.random.default_rng(rng)
    n = 1 if size is None else int(np.prod(size))
    lo, hi = model.lower_position_limit, model.upper_position_limit
    q = np.zeros((n, model.nq))
    t = model.tree
    for idx in (t.revolute_q, t.prismatic_q):
        bad = idx[~np.isfinite(lo[idx]) | ~np.isfinite(hi[idx])]
        if len(bad):
            raise ValueError(f"cannot draw random positions for unbounded q indices {bad.tolist()}")
        q[:, idx] = rng.uniform(lo[idx], hi[idx], (n, len(idx)))
    angle = rng.uniform(-np.pi, np.pi, (n, len(t.continuous_q)))
    q[:, t.continuous_q], q[:, t.continuous_q + 1] = np.cos(angle), np.sin(angle)
    if t.free_flyer:
        q[:, :3] = rng.uniform(lo[:3], hi[:3], (n, 3))
        quat = rng.standard_normal((n, 4))
        q[:, 3:7] = quat / np.linalg.norm(quat, axis=-1, keepdims=True)
    return q[0] if size is None else q.reshape(tuple(np.atleast_1d(size)) + (model.nq,))


class _Layout(NamedTuple):
    """The joints of a model by kind, as :func:`integrate` and :func:`difference` use them: the q
    and v indices of the vector joints (``iq, iv``) and of the continuous ones (``cq, cv``), and
    the same as manifold.c's ``layout`` int array (its header comment)."""

    iq: np.ndarray
    iv: np.ndarray
    cq: np.ndarray
    cv: np.ndarray
    free_flyer: bool
    array: np.ndarray
    address: int


_LAYOUTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # models are immutable: one layout each


def _layout(model) -> _Layout:
    layout = _LAYOUTS.get(model)
    if layout is None:
        t = model.tree
        joints = np.concatenate((t.revolute, t.prismatic))
        iq, iv, cq, cv = model.idx_q[joints], model.idx_v[joints], t.continuous_q, model.idx_v[t.continuous]
        array = np.concatenate(([int(t.free_flyer), len(iq), len(cq)], iq, iv, cq, cv)).astype(np.intc)
        layout = _LAYOUTS[model] = _Layout(iq, iv, cq, cv, t.free_flyer, array, array.ctypes.data)
    return layout


_SOURCE = Path(__file__).with_name("manifold.c")
_P, _I = ctypes.c_void_p, ctypes.c_int
_FUNCTIONS = {name: (None, (_I, _I, _I, _P, _P, _P, _P)) for name in ("liftoff_integrate", "liftoff_difference")}
_LIBRARY: list = []  # the compiled manifold.c once loaded, or None when it cannot be compiled


def compiled(model):
    """``(integrate, difference, layout)``: the addresses of manifold.c's two functions and of
    ``model``'s layout, for compiled code that calls them; None when manifold.c is not compiled."""
    library = _library()
    if library is None:
        return None
    at = (ctypes.cast(f, _P).value for f in (library.liftoff_integrate, library.liftoff_difference))
    return (*at, _layout(model).address)


def _library():
    """The compiled manifold.c (compiled on first use), or ``None``: then numpy computes (without
    a word when there is no C compiler: whoever asks for the compiled backend is told)."""
    if not _LIBRARY:
        from .codegen import CompileError, compiled_library, compiler

        try:
            compiler()
        except CompileError:
            _LIBRARY.append(None)
        else:
            _LIBRARY.append(compiled_library(_SOURCE, _FUNCTIONS))
    return _LIBRARY[0]


_FLOAT = np.dtype(float)


def _rows(name0, x0, dim0, name1, x1, dim1):
    """:func:`batch` of two arrays, C-contiguous; float arrays of the right shapes pass as they are."""
    if (
        type(x0) is np.ndarray
        and type(x1) is np.ndarray
        and x0.dtype == _FLOAT
        and x1.dtype == _FLOAT
        and x0.flags.c_contiguous
        and x1.flags.c_contiguous
    ):
        if x0.shape == (dim0,) and x1.shape == (dim1,):
            return x0, x1, 1, ()
        if x0.ndim == 2 and x0.shape[1] == dim0 and x1.shape == (len(x0), dim1):
            return x0, x1, len(x0), x0.shape[:1]
    (x0, x1), shape = batch((name0, x0, dim0), (name1, x1, dim1))
    return np.ascontiguousarray(x0), np.ascontiguousarray(x1), len(x0), shape


def integrate(model, q, v):
    """``q (+) v``: the configuration reached from ``q`` by moving along ``v`` for unit time."""
    q, v, n, shape = _rows("q", q, model.nq, "v", v, model.nv)
    library, layout = _library(), _layout(model)
    if library is None:
        return unbatch(_integrate_numpy(layout, q.reshape(n, -1), v.reshape(n, -1)), shape)
    out = np.empty(shape + (model.nq,))
    library.liftoff_integrate(n, model.nq, model.nv, layout.address, *map(address, (q, v, out)))
    return out


def difference(model, q0, q1):
    """``q1 (-) q0``: the tangent vector ``v`` with ``integrate(q0, v) = q1``."""
    q0, q1, n, shape = _rows("q0", q0, model.nq, "q1", q1, model.nq)
    library, layout = _library(), _layout(model)
    if library is None:
        return unbatch(_difference_numpy(layout, model.nv, q0.reshape(n, -1), q1.reshape(n, -1)), shape)
    out = np.empty(shape + (model.nv,))
    library.liftoff_difference(n, model.nq, model.nv, layout.address, *map(address, (q0, q1, out)))
    return out


def _integrate_numpy(layout: _Layout, q, v):
    """:func:`integrate` of configurations ``(B, nq)`` and velocities ``(B, nv)`` in numpy."""
    out = q.copy()
    out[:, layout.iq] += v[:, layout.iv]
    if len(layout.cq):
        cq, cv = layout.cq, layout.cv
        c, s = q[:, cq], q[:, cq + 1]
        cd, sd = np.cos(v[:, cv]), np.sin(v[:, cv])
        out[:, cq], out[:, cq + 1] = c * cd - s * sd, s * cd + c * sd
    if layout.free_flyer:
        quat0 = q[:, 3:7].T
        quat_exp, p_exp = exp6(v[:, :6].T)
        quat = quat_multiply(quat0, quat_exp)
        quat /= np.linalg.norm(quat, axis=0)
        quat = np.where(np.sum(quat * quat0, axis=0) < 0, -quat, quat)
        out[:, :3] = q[:, :3] + matvec(quat_to_rotation(quat0), p_exp).T
        out[:, 3:7] = quat.T
    return out


def _difference_numpy(layout: _Layout, nv, q0, q1):
    """:func:`difference` of configurations ``(B, nq)`` in numpy."""
    out = np.zeros((q0.shape[0], nv))
    out[:, layout.iv] = q1[:, layout.iq] - q0[:, layout.iq]
    if len(layout.cq):
        cq, cv = layout.cq, layout.cv
        c0, s0, c1, s1 = q0[:, cq], q0[:, cq + 1], q1[:, cq], q1[:, cq + 1]
        out[:, cv] = np.arctan2(c0 * s1 - s0 * c1, c0 * c1 + s0 * s1)
    if layout.free_flyer:
        out[:, :6] = log6(*_relative(q0, q1)).T
    return out


def integrate_jacobians(model, q, v):
    """Jacobians of ``integrate(q, v)`` in the tangent spaces: ``(dq_out_dq, dq_out_dv)``."""
    (q, v), shape = batch(("q", q, model.nq), ("v", v, model.nv))
    eye = np.broadcast_to(np.eye(model.nv), (q.shape[0], model.nv, model.nv))
    d_dq, d_dv = eye.copy(), eye.copy()
    if model.tree.free_flyer:
        nu = v[:, :6].T
        d_dq[:, :6, :6] = _batch_first(_ad_inverse(*exp6(nu)))
        d_dv[:, :6, :6] = _batch_first(jexp6(nu))
    return unbatch(d_dq, shape), unbatch(d_dv, shape)


def difference_jacobians(model, q0, q1):
    """Jacobians of ``difference(q0, q1)`` in the tangent spaces: ``(d_dq0, d_dq1)``."""
    (q0, q1), shape = batch(("q0", q0, model.nq), ("q1", q1, model.nq))
    eye = np.broadcast_to(np.eye(model.nv), (q0.shape[0], model.nv, model.nv))
    d_dq0, d_dq1 = -eye, eye.copy()
    if model.tree.free_flyer:
        quat, p = _relative(q0, q1)
        jlog = np.linalg.inv(_batch_first(jexp6(log6(quat, p))))
        d_dq1[:, :6, :6] = jlog
        d_dq0[:, :6, :6] = -jlog @ _batch_first(_ad_inverse(quat, p))
    return unbatch(d_dq0, shape), unbatch(d_dq1, shape)


def rotation_to_quat(R):
    """Unit quaternion ``(4, B)``, stored ``(x, y, z, w)`` with ``w >= 0``, of rotations ``(3, 3, B)``."""
    trace = R[0, 0] + R[1, 1] + R[2, 2]
    candidates = np.stack(  # 4 q_i q_j rows of the largest diagonal term, Shepperd's method
        (
            np.stack((1 + 2 * R[0, 0] - trace, R[0, 1] + R[1, 0], R[0, 2] + R[2, 0], R[2, 1] - R[1, 2])),
            np.stack((R[0, 1] + R[1, 0], 1 + 2 * R[1, 1] - trace, R[1, 2] + R[2, 1], R[0, 2] - R[2, 0])),
            np.stack((R[0, 2] + R[2, 0], R[1, 2] + R[2, 1], 1 + 2 * R[2, 2] - trace, R[1, 0] - R[0, 1])),
            np.stack((R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1], 1 + trace)),
        )
    )
    pivot = np.argmax(np.stack((R[0, 0], R[1, 1], R[2, 2], trace)), axis=0)
    quat = np.take_along_axis(candidates, pivot[None, None], axis=0)[0]
    quat = quat / np.linalg.norm(quat, axis=0)
    return np.where(quat[3] < 0, -quat, quat)


def log3(R):
    """Rotation vectors ``(3, B)`` of rotations ``(3, 3, B)`` (angle in ``[0, pi]``)."""
    return log6(rotation_to_quat(R), np.zeros(R.shape[:1] + R.shape[2:]))[3:]


def jlog3(w):
    """Inverse of the right Jacobian of the SO(3) exponential at ``w`` (3, B): ``d log3(R exp(dw)) = jlog3 dw``."""
    theta = np.linalg.norm(w, axis=0)
    small = theta < _SMALL
    t = np.where(small, 1.0, theta)
    c = np.where(small, 1 / 12 + theta**2 / 720, 1 / t**2 - (1 + np.cos(t)) / (2 * t * np.sin(t)))
    W = skew(w)
    return eye(3, w) + 0.5 * W + c * matmul(W, W)


def jlog6(xi):
    """Inverse ``(6, 6, B)`` of :func:`jexp6`: ``d log6(M exp6(dxi)) = jlog6 dxi`` with ``xi = log6(M)``."""
    return np.linalg.inv(jexp6(xi).transpose(2, 0, 1)).transpose(1, 2, 0)
