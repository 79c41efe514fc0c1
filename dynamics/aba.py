"""Forward dynamics by the articulated-body algorithm (ABA), in the world frame, and its derivatives.

In world coordinates no spatial transform is needed between a body and its parent: the
backward sweep (Featherstone's, seed 003 Alg. 1 without constraints) computes for each
joint ``U = IA S``, ``D = S^T U``, ``u = tau - S^T pA`` and adds to the parent
``IA - U D^-1 U^T`` and ``pA + Ia c + U D^-1 u`` (``c = ov_parent x S v``, the bias
acceleration); the forward sweep gives ``qdd = D^-1 (u - U^T a')`` with
``a' = a_parent + c``. Both sweeps loop over the levels of the tree (its depth), each
level handled for all its joints and the whole batch at once.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .batch import unbatch
from .kinematics import forward, tree_sum
from .rnea import _inputs, body_forces, rnea_derivatives, world_inertias
from .spatial import inertia_matrix, motion_cross


def _joint_bias(model, kin, v):
    """Bias acceleration ``c_j = ov_parent x S_j v_j`` of each joint: ``(n, B, 6)``."""
    t = model.tree
    c_dof = motion_cross(kin.parent_velocity(model), kin.oS * v.T[..., None])
    owner = (t.dof_joint[None, :] == np.arange(model.njoints)[:, None]).astype(float)
    return tree_sum(owner, c_dof)


def articulated_forward_dynamics(model, kin, v, tau, fext=None):
    """Accelerations ``(B, nv)`` from world kinematics (with ``-g`` as universe acceleration)."""
    t = model.tree
    inertia = world_inertias(model, kin)
    IA = inertia_matrix(*inertia)
    pA, _ = body_forces(model, replace(kin, oa=np.zeros_like(kin.ov)), inertia, fext)  # ov x* I ov - fext
    c = _joint_bias(model, kin, v)
    S, tau_t = kin.oS, tau.T
    B = S.shape[1]
    stored = []
    for depth in range(len(t.levels) - 1, -1, -1):
        J = t.levels[depth]
        if depth == 0 and t.free_flyer:
            S6 = S[:6].transpose(1, 2, 0)  # (B, 6, 6), columns oS_k
            U = IA[0] @ S6
            D = np.swapaxes(S6, -1, -2) @ U
            u = tau[:, :6] - np.einsum("bji,bj->bi", S6, pA[0])
            stored.append((J, S6, U, D, u))
            continue
        k = model.idx_v[J]
        SJ = S[k]
        U = (IA[J] @ SJ[..., None])[..., 0]
        D = np.sum(SJ * U, axis=-1)
        u = tau_t[k] - np.sum(SJ * pA[J], axis=-1)
        stored.append((J, SJ, U, D, u))
        if depth > 0:
            Ia = IA[J] - U[..., :, None] * U[..., None, :] / D[..., None, None]
            pa = pA[J] + (Ia @ c[J][..., None])[..., 0] + U * (u / D)[..., None]
            par = model.parents[J]
            np.add.at(IA, par, Ia)
            np.add.at(pA, par, pa)
    acc = np.zeros((model.njoints, B, 6))
    qdd = np.zeros((model.nv, B))
    for depth, (J, SJ, U, D, u) in zip(range(len(t.levels)), reversed(stored)):
        a_par = np.broadcast_to(kin.a0, (len(J), B, 6)) if depth == 0 else acc[model.parents[J]]
        ap = a_par + c[J]
        if depth == 0 and t.free_flyer:
            rhs = u - np.einsum("bji,bj->bi", U, ap[0])
            qdd6 = np.linalg.solve(D, rhs[..., None])[..., 0]
            qdd[:6] = qdd6.T
            acc[0] = ap[0] + (SJ @ qdd6[..., None])[..., 0]
            continue
        qj = (u - np.sum(U * ap, axis=-1)) / D
        qdd[model.idx_v[J]] = qj
        acc[J] = ap + SJ * qj[..., None]
    return qdd.T


def aba(model, q, v, tau, fext=None):
    """Forward dynamics ``a = M(q)^-1 (tau - h(q, v) + sum J_i^T fext_i)`` by the ABA."""
    (q, v, tau, fext), shape = _inputs(model, q, v, tau, fext)
    kin = forward(model, q, v, gravity=True)
    return unbatch(articulated_forward_dynamics(model, kin, v, tau, fext), shape)


def aba_derivatives(model, q, v, tau, fext=None):
    """Partial derivatives of :func:`aba`: ``(da_dq, da_dv, da_dtau)``, each ``(..., nv, nv)``.

    From the RNEA derivatives at ``a = aba(q, v, tau)``: ``da_dq = -M^-1 dtau_dq``,
    ``da_dv = -M^-1 dtau_dv``, ``da_dtau = M^-1``.
    """
    (q, v, tau, fext), shape = _inputs(model, q, v, tau, fext)
    kin = forward(model, q, v, gravity=True)
    a = articulated_forward_dynamics(model, kin, v, tau, fext)
    fext = None if fext is None else fext.reshape(-1, model.njoints, 6)
    dtau_dq, dtau_dv, M = rnea_derivatives(model, q, v, a, fext)
    Minv = np.linalg.inv(M)
    Minv = 0.5 * (Minv + np.swapaxes(Minv, -1, -2))
    return unbatch(-Minv @ dtau_dq, shape), unbatch(-Minv @ dtau_dv, shape), unbatch(Minv, shape)
