"""Inverse dynamics (RNEA) in the world frame, its analytical derivatives, CRBA.

World-frame recursive Newton-Euler: with the kinematics of :mod:`dynamics.kinematics`,
the force on each body is ``of_i = I_i oa_i + ov_i x* I_i ov_i - fext_i`` (gravity enters
as the acceleration ``-g`` of the universe), the force transmitted by joint ``j`` is the
subtree sum ``oF_j = sum_{i in subtree(j)} of_i`` and ``tau_k = oS_k . oF_joint(k)``.

Derivatives (the analytical RNEA derivatives of Carpentier & Mansard, in world
coordinates). A tangent perturbation of dof ``k`` rigidly rotates its subtree by ``oS_k``;
what does not rotate is the motion of the parent ``lambda(k)`` of its joint. With
``u_k = ov_lambda(k) x oS_k``, for a body ``i`` moved by ``k``:

    d ov_i/dq_k = oS_k x ov_i + u_k
    d oa_i/dq_k = oS_k x oa_i + alpha_k - ov_i x u_k,   alpha_k = -oS_k x oa_lambda(k) - u_k x ov_lambda(k)
    d of_i/dq_k = oS_k x* of_i + I_i alpha_k + BC_i u_k + u_k x* h_i
    d oa_i/dv_k = beta_k - ov_i x oS_k,                  beta_k = u_k - oS_k x ov_joint(k)
    d of_i/dv_k = I_i beta_k + BC_i oS_k + oS_k x* h_i

where ``h_i = I_i ov_i`` and ``BC_i = [ov_i x*] I_i - I_i [ov_i x]``, which for a rigid
inertia is ``[[0, -[h_lin]x], [[h_lin]x, Z + Z^T]]`` with ``Z = [w]x Io - [v]x [mc]x``.
Summed over a subtree these need only composites (subtree sums of ``I``, ``Z + Z^T``,
``h`` and ``of``). For ``k`` moving the body of ``l`` the rotation cancels in
``tau_l = oS_l . oF`` and ``dtau_l/dq_k = (Yc oS_l) . alpha_k + R_l . u_k`` with
``R_l = BCc oS_l - oS_l x* Hc`` (composites at the joint of ``l``): products of
``(nv x 6)`` by ``(6 x nv)`` matrices. For ``l`` above ``k``, ``dtau_l/dq_k = oS_l . G_k``
with ``G_k`` the subtree derivative of the force at the joint of ``k``.
"""

from __future__ import annotations

import numpy as np

from .batch import batch, unbatch
from .errors import DimensionError
from .kinematics import forward, tree_sum
from .spatial import (
    act_force,
    cross,
    dot,
    eye,
    force_cross,
    matmul,
    matvec,
    motion_cross,
    rigid_apply,
    rigid_from_com,
    transpose,
)


def world_inertias(model, kin):
    """Body inertias about the world origin: mass ``(n, 1)``, ``mc (3, n, B)``, ``Io (3, 3, n, B)``."""
    c = kin.op + matvec(kin.oR, model.body_com.T[..., None])
    Ic = matmul(matmul(kin.oR, model.body_inertia.transpose(1, 2, 0)[..., None]), transpose(kin.oR))
    return rigid_from_com(model.body_mass[:, None], c, Ic)


def fext_batch(model, fext):
    """Validate external forces ``(..., njoints, 6)`` and flatten them for :func:`batch`."""
    fext = np.asarray(fext, dtype=float)
    if fext.ndim < 2 or fext.shape[-2:] != (model.njoints, 6):
        raise DimensionError(
            f"fext: expected shape (..., {model.njoints}, 6), one LOCAL force per joint, got {fext.shape}"
        )
    return fext.reshape(fext.shape[:-2] + (model.njoints * 6,))


def body_forces(model, kin, inertia, fext=None):
    """``of_i = I_i oa_i + ov_i x* I_i ov_i - fext_i`` and the momenta ``h_i = I_i ov_i``.

    ``fext``: ``(B, njoints * 6)`` forces in the LOCAL joint frames."""
    h = rigid_apply(*inertia, kin.ov)
    of = rigid_apply(*inertia, kin.oa) + force_cross(kin.ov, h)
    if fext is not None:
        of = of - act_force(kin.oR, kin.op, fext.reshape(-1, model.njoints, 6).transpose(2, 1, 0))
    return of, h


def inputs(model, q, v, x, fext, x_name="a"):
    """Validated ``(B, .)`` arrays ``q, v, x`` (acceleration or torque) and ``fext`` (or None)."""
    specs = [("q", q, model.nq), ("v", v, model.nv), (x_name, x, model.nv)]
    if fext is not None:
        specs.append(("fext", fext_batch(model, fext), model.njoints * 6))
    arrays, shape = batch(*specs)
    return arrays + [None] * (4 - len(arrays)), shape


def _torques(model, kin, of):
    oF = tree_sum(model.tree.descendants, of)
    return dot(kin.oS, oF[:, model.tree.dof_joint])


def rnea(model, q, v, a, fext=None):
    """Joint torques ``tau = M(q) a + h(q, v) - sum J_i^T fext_i``.

    ``fext`` (optional): ``(..., njoints, 6)`` forces applied to each joint's body,
    expressed in that joint's LOCAL frame (Pinocchio's ``fext`` without the universe).
    """
    (q, v, a, fext), shape = inputs(model, q, v, a, fext)
    kin = forward(model, q, v, a, gravity=True)
    of, _ = body_forces(model, kin, world_inertias(model, kin), fext)
    return unbatch(_torques(model, kin, of).T, shape)


def nonlinear_effects(model, q, v):
    """``h(q, v)``: Coriolis, centrifugal and gravity torques."""
    return rnea(model, q, v, np.zeros(model.nv))


def generalized_gravity(model, q):
    """``g(q)``: gravity torques."""
    return rnea(model, q, np.zeros(model.nv), np.zeros(model.nv))


def _pairwise(X, Y):
    """``out[b, l, k] = X[:, l, b] . Y[:, k, b]``: ``X`` is a list of ``(c_i, nv, B)`` arrays
    stacked along ``c``, ``Y`` a list of lists: row ``i`` pairs with ``X[i]``, columns go along ``k``."""
    B, nv = X[0].shape[-1], X[0].shape[1]
    c = [x.shape[0] for x in X]
    left = np.empty((B, nv, sum(c)))
    right = np.zeros((B, sum(c), sum(y.shape[1] for y in Y[0])))
    row = 0
    for x, ys, ci in zip(X, Y, c):
        left[:, :, row : row + ci] = x.transpose(2, 1, 0)
        col = 0
        for y in ys:
            if y is not None:
                right[:, row : row + ci, col : col + y.shape[1]] = y.transpose(2, 0, 1)
            col += nv if y is None else y.shape[1]
        row += ci
    return left @ right


def _composites(model, *arrays):
    """Subtree sums of ``(..., n, B)`` arrays, taken at the joint of each dof: ``(..., nv, B)``."""
    n, B = arrays[0].shape[-2:]
    sizes = [int(np.prod(x.shape[:-2])) for x in arrays]
    stacked = np.concatenate([x.reshape(-1, n, B) for x in arrays]).transpose(1, 0, 2).reshape(n, -1)
    summed = (model.tree.dof_descendants @ stacked).reshape(model.nv, -1, B).transpose(1, 0, 2)
    parts = np.split(summed, np.cumsum(sizes)[:-1])
    return [p.reshape(x.shape[:-2] + p.shape[-2:]) for p, x in zip(parts, arrays)]


def _composite_mass(model):
    """Mass of the subtree of the joint of each dof, ``(nv, 1)``."""
    return (model.tree.descendants @ model.body_mass)[model.tree.dof_joint][:, None]


def mass_matrix(model, kin):
    """Joint-space inertia ``M (B, nv, nv)``: ``M[l, k] = oS_k . Yc_joint(l) oS_l`` for ``k`` moving ``l``.

    World composite inertias ``Yc`` are plain subtree sums."""
    _, mc, Io = world_inertias(model, kin)
    F = rigid_apply(_composite_mass(model), *_composites(model, mc, Io), kin.oS)
    return _symmetric_from_lower(model, _pairwise([F], [[kin.oS]]))


def _symmetric_from_lower(model, X):
    """The symmetric matrix whose lower-mask entries are those of ``X (B, nv, nv)``."""
    t = model.tree
    return X * t.mass_lower + (X * t.mass_strict).swapaxes(-1, -2)


def crba(model, q):
    """The joint-space inertia matrix ``M(q)``, full and symmetric: ``(..., nv, nv)``."""
    (q,), shape = batch(("q", q, model.nq))
    return unbatch(mass_matrix(model, forward(model, q)), shape)


def rnea_derivatives(model, q, v, a, fext=None):
    """Partial derivatives of :func:`rnea`: ``(dtau_dq, dtau_dv, dtau_da)``, each ``(..., nv, nv)``.

    ``dtau_dq`` is with respect to tangent perturbations of ``q`` (``integrate(q, dq)``);
    ``dtau_da = M(q)``. ``fext`` is held fixed in the LOCAL frames of the joints.
    """
    (q, v, a, fext), shape = inputs(model, q, v, a, fext)
    return tuple(unbatch(x, shape) for x in derivatives_batch(model, q, v, a, fext))


def derivatives_batch(model, q, v, a, fext=None, gravity=True):
    """:func:`rnea_derivatives` of validated ``(B, .)`` arrays, optionally without gravity."""
    kin = forward(model, q, v, a, gravity=gravity)
    t = model.tree
    inertia = world_inertias(model, kin)
    of, h = body_forces(model, kin, inertia, fext)
    _, mc, Io = inertia
    v, w = kin.ov[:3], kin.ov[3:]
    Z = cross(w[:, None], Io) - mc[:, None] * v[None, :] + dot(v, mc) * eye(3, v)  # [w]x Io - [v]x [mc]x
    mc_c, Io_c, X_c, H_c, oF = _composites(model, mc, Io, Z + transpose(Z), h, of)
    Yc = (_composite_mass(model), mc_c, Io_c)
    Hl, Ha = H_c[:3], H_c[3:]

    def bc_plus_cross(x):  # BCc x + x x* Hc
        return np.concatenate((2 * cross(x[3:], Hl), matvec(X_c, x[3:]) + cross(x[3:], Ha)))

    S = kin.oS
    v_par, a_par = kin.parent_velocity(model), kin.parent_acceleration(model)
    u = motion_cross(v_par, S)
    alpha = -motion_cross(S, a_par) - motion_cross(u, v_par)
    beta = u - motion_cross(S, kin.ov[:, t.dof_joint])
    F = rigid_apply(*Yc, S)  # the CRBA columns
    R = np.concatenate((np.zeros_like(S[:3]), 2 * cross(Hl, S[:3]) + matvec(X_c, S[3:]) - cross(S[3:], Ha)))
    G_q = rigid_apply(*Yc, alpha) + bc_plus_cross(u) + force_cross(S, oF)
    G_v = rigid_apply(*Yc, beta) + bc_plus_cross(S)
    nv = model.nv
    lower = _pairwise([F, R], [[alpha, beta, S], [u, S, None]])  # [F; R] . [alpha, beta, S; u, S, 0]
    below = _pairwise([S], [[G_q, G_v]])
    dtau_dq, dtau_dv = (
        np.where(t.lower, lower[..., i * nv : (i + 1) * nv], below[..., i * nv : (i + 1) * nv] * t.below)
        for i in (0, 1)
    )
    return dtau_dq, dtau_dv, _symmetric_from_lower(model, lower[..., 2 * nv :])
