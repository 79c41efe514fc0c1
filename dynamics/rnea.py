"""Inverse dynamics (RNEA) in the world frame, its analytical derivatives, CRBA.

World-frame recursive Newton-Euler: with the kinematics of :mod:`dynamics.kinematics`,
the force on each body is ``of_i = I_i oa_i + ov_i x* I_i ov_i - fext_i`` (gravity enters
as the acceleration ``-g`` of the universe), the force transmitted by joint ``j`` is the
subtree sum ``oF_j = sum_{i in subtree(j)} of_i`` and ``tau_k = oS_k . oF_joint(k)``.

Derivatives (Carpentier & Mansard's analytical RNEA derivatives, written for pairs): a
tangent perturbation of dof ``k`` rigidly rotates every body of its subtree by ``oS_k``,
so for each pair (body ``i``, dof ``k``) with ``k`` in the support of ``i``

    d ov_i/dq_k = oS_k x ov_i + dv,   dv = -oS_k x ov_lambda(k)
    d oa_i/dq_k = oS_k x oa_i + da,   da = -oS_k x oa_lambda(k) + (ov_lambda(k) x oS_k) x (ov_i - ov_lambda(k))
    d of_i/dq_k = oS_k x* of_i + I_i da + dv x* I_i ov_i + ov_i x* I_i dv

(``lambda(k)``: parent of the joint of ``k``), and with respect to velocities
``d oa_i/dv_k = ov_lambda(k) x oS_k + oS_k x (ov_i - ov_joint(k))``. Subtree sums of these
pair quantities give ``d oF_j``, and ``dtau_l/dq_k = oS_l . d oF_joint(l)/dq_k +
(oS_k x oS_l) . oF_joint(l)`` when ``k`` supports ``l``, ``oS_l . d oF_joint(k)/dq_k`` when
``k`` is below ``l``. No loop over joints: every step is one array operation over pairs.
"""

from __future__ import annotations

import numpy as np

from .batch import batch, unbatch
from .errors import DimensionError
from .kinematics import forward, tree_sum
from .spatial import act_force, force_cross, inertia_apply, inertia_matrix, motion_cross


def world_inertias(model, kin):
    """Body inertias in the world: mass ``(n, 1)``, centre of mass ``(n, B, 3)``, ``Ic (n, B, 3, 3)``."""
    c = kin.op + np.einsum("nbij,nj->nbi", kin.oR, model.body_com)
    Ic = kin.oR @ model.body_inertia[:, None] @ np.swapaxes(kin.oR, -1, -2)
    return model.body_mass[:, None], c, Ic


def fext_batch(model, fext):
    """Validate external forces ``(..., njoints, 6)`` and flatten them for :func:`batch`."""
    fext = np.asarray(fext, dtype=float)
    if fext.ndim < 2 or fext.shape[-2:] != (model.njoints, 6):
        raise DimensionError(f"fext: expected shape (..., {model.njoints}, 6), one LOCAL force per joint, got {fext.shape}")
    return fext.reshape(fext.shape[:-2] + (model.njoints * 6,))


def _external(model, kin, fext):
    """External forces given per joint in its LOCAL frame, moved to the world: ``(n, B, 6)``."""
    f = fext.reshape(fext.shape[0], model.njoints, 6).transpose(1, 0, 2)
    return act_force(kin.oR, kin.op, f)


def body_forces(model, kin, inertia, fext=None):
    """``of_i = I_i oa_i + ov_i x* I_i ov_i - fext_i`` and the momenta ``h_i = I_i ov_i``."""
    h = inertia_apply(*inertia, kin.ov)
    of = inertia_apply(*inertia, kin.oa) + force_cross(kin.ov, h)
    if fext is not None:
        of = of - _external(model, kin, fext)
    return of, h


def _inputs(model, q, v, a, fext):
    specs = [("q", q, model.nq), ("v", v, model.nv), ("a", a, model.nv)]
    if fext is not None:
        specs.append(("fext", fext_batch(model, fext), model.njoints * 6))
    arrays, shape = batch(*specs)
    return arrays + [None] * (4 - len(arrays)), shape


def rnea(model, q, v, a, fext=None):
    """Joint torques ``tau = M(q) a + h(q, v) - sum J_i^T fext_i``.

    ``fext`` (optional): ``(..., njoints, 6)`` forces applied to each joint's body,
    expressed in that joint's LOCAL frame (Pinocchio's ``fext`` without the universe).
    """
    (q, v, a, fext), shape = _inputs(model, q, v, a, fext)
    kin = forward(model, q, v, a, gravity=True)
    of, _ = body_forces(model, kin, world_inertias(model, kin), fext)
    oF = tree_sum(model.tree.descendants, of)
    tau = np.sum(kin.oS * oF[model.tree.dof_joint], axis=-1)
    return unbatch(tau.T, shape)


def nonlinear_effects(model, q, v):
    """``h(q, v)``: Coriolis, centrifugal and gravity torques."""
    return rnea(model, q, v, np.zeros(model.nv))


def generalized_gravity(model, q):
    """``g(q)``: gravity torques."""
    return rnea(model, q, np.zeros(model.nv), np.zeros(model.nv))


def mass_matrix(model, kin):
    """Joint-space inertia ``M (B, nv, nv)`` from world kinematics.

    World composite inertias are plain subtree sums; ``M[k, l] = oS_k . Yc_joint(l) oS_l``
    for ``k`` in the support of ``l`` (and symmetric).
    """
    t = model.tree
    Y = inertia_matrix(*world_inertias(model, kin))
    Yc = tree_sum(t.descendants, Y)
    F = (Yc[t.dof_joint] @ kin.oS[..., None])[..., 0]
    values = np.sum(kin.oS[t.lower_k] * F[t.lower_l], axis=-1)
    M = np.zeros((model.nv, model.nv, kin.oS.shape[1]))
    M[t.lower_l, t.lower_k] = values
    M[t.lower_k, t.lower_l] = values
    return M.transpose(2, 0, 1)


def crba(model, q):
    """The joint-space inertia matrix ``M(q)``, full and symmetric: ``(..., nv, nv)``."""
    (q,), shape = batch(("q", q, model.nq))
    return unbatch(mass_matrix(model, forward(model, q)), shape)


def _pair_force_derivatives(model, kin, inertia, of, h):
    """``d of_i/dq_k`` and ``d of_i/dv_k`` for every (body i, dof k) pair: ``(P, B, 6)`` each."""
    t = model.tree
    pb, pk = t.pair_body, t.pair_dof
    mass, c, Ic = inertia
    Ip = (mass[pb], c[pb], Ic[pb])
    S = kin.oS[pk]
    v_i = kin.ov[pb]
    v_par = kin.parent_velocity(model)[pk]
    a_par = kin.parent_acceleration(model)[pk]
    h_i = h[pb]
    dv = -motion_cross(S, v_par)
    da = -motion_cross(S, a_par) + motion_cross(motion_cross(v_par, S), v_i - v_par)
    df_dq = force_cross(S, of[pb]) + inertia_apply(*Ip, da) + force_cross(dv, h_i) + force_cross(v_i, inertia_apply(*Ip, dv))
    da_dv = motion_cross(v_par, S) + motion_cross(S, v_i - kin.ov[t.dof_joint[pk]])
    df_dv = inertia_apply(*Ip, da_dv) + force_cross(S, h_i) + force_cross(v_i, inertia_apply(*Ip, S))
    return df_dq, df_dv


def _torque_derivative(model, kin, dF, oF=None):
    """Assemble ``dtau (nv, nv, B)`` from subtree force derivatives over pairs ``dF (P, B, 6)``.

    ``oF`` adds the rotation of ``oS_l`` itself (the q derivative)."""
    t = model.tree
    S = kin.oS
    out = np.zeros((model.nv, model.nv, S.shape[1]))
    lower = np.sum(S[t.lower_l] * dF[t.lower_pair], axis=-1)
    if oF is not None:
        lower += np.sum(motion_cross(S[t.lower_k], S[t.lower_l]) * oF[t.dof_joint[t.lower_l]], axis=-1)
    out[t.lower_l, t.lower_k] = lower
    out[t.below_l, t.below_k] = np.sum(S[t.below_l] * dF[t.below_pair], axis=-1)
    return out.transpose(2, 0, 1)


def rnea_derivatives(model, q, v, a, fext=None):
    """Partial derivatives of :func:`rnea`: ``(dtau_dq, dtau_dv, dtau_da)``, each ``(..., nv, nv)``.

    ``dtau_dq`` is with respect to tangent perturbations of ``q`` (``integrate(q, dq)``);
    ``dtau_da = M(q)``. ``fext`` is held fixed in the LOCAL frames of the joints.
    """
    (q, v, a, fext), shape = _inputs(model, q, v, a, fext)
    kin = forward(model, q, v, a, gravity=True)
    inertia = world_inertias(model, kin)
    of, h = body_forces(model, kin, inertia, fext)
    t = model.tree
    oF = tree_sum(t.descendants, of)
    df_dq, df_dv = _pair_force_derivatives(model, kin, inertia, of, h)
    dtau_dq = _torque_derivative(model, kin, tree_sum(t.pair_subtree, df_dq), oF)
    dtau_dv = _torque_derivative(model, kin, tree_sum(t.pair_subtree, df_dv))
    M = mass_matrix(model, kin)
    return unbatch(dtau_dq, shape), unbatch(dtau_dv, shape), unbatch(M, shape)
