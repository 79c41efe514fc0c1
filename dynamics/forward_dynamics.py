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
from .inverse_dynamics import body_forces, inputs, rnea_derivatives, world_inertias
from .spatial import dot, matmul, matvec, motion_cross, rigid_matrix, transpose


def articulated_forward_dynamics(model, kin, v, tau, fext=None):
    """Accelerations ``(B, nv)`` from world kinematics (with ``-g`` as universe acceleration)."""
    t = model.tree
    inertia = world_inertias(model, kin)
    IA = rigid_matrix(*inertia)
    pA, _ = body_forces(model, replace(kin, oa=np.zeros_like(kin.ov)), inertia, fext)  # ov x* I ov - fext
    S = kin.oS
    c = tree_sum(t.owner, motion_cross(kin.parent_velocity(model), S * v.T))  # ov_parent x S v per joint
    tau_t = tau.T
    stored = []
    for depth in range(len(t.levels) - 1, -1, -1):
        J = t.levels[depth]
        if depth == 0 and t.free_flyer:
            S6 = S[:, :6]  # (6 components, 6 dofs, B)
            U = matmul(IA[:, :, 0], S6)
            D = matmul(transpose(S6), U)
            u = tau_t[:6] - matvec(transpose(S6), pA[:, 0])
            stored.append((J, S6, U, D, u))
            continue
        SJ = S[:, model.idx_v[J]]
        U = matvec(IA[:, :, J], SJ)
        D = dot(SJ, U)
        u = tau_t[model.idx_v[J]] - dot(SJ, pA[:, J])
        stored.append((J, SJ, U, D, u))
        if depth > 0:
            Ia = IA[:, :, J] - U[:, None] * U[None, :] / D
            pa = pA[:, J] + matvec(Ia, c[:, J]) + U * (u / D)
            par = model.parents[J]
            np.add.at(IA, (slice(None), slice(None), par), Ia)
            np.add.at(pA, (slice(None), par), pa)
    B = kin.batch_size
    acc = np.zeros((6, model.njoints, B))
    qdd = np.zeros((model.nv, B))
    for depth, (J, SJ, U, D, u) in enumerate(reversed(stored)):
        a_par = np.broadcast_to(kin.a0, (6, len(J), B)) if depth == 0 else acc[:, model.parents[J]]
        ap = a_par + c[:, J]
        if depth == 0 and t.free_flyer:
            rhs = u - matvec(transpose(U), ap[:, 0])
            qdd6 = np.linalg.solve(D.transpose(2, 0, 1), rhs.T[..., None])[..., 0].T
            qdd[:6] = qdd6
            acc[:, 0] = ap[:, 0] + matvec(SJ, qdd6)
            continue
        qj = (u - dot(U, ap)) / D
        qdd[model.idx_v[J]] = qj
        acc[:, J] = ap + SJ * qj
    return qdd.T


def aba(model, q, v, tau, fext=None):
    """Forward dynamics ``a = M(q)^-1 (tau - h(q, v) + sum J_i^T fext_i)`` by the ABA."""
    (q, v, tau, fext), shape = inputs(model, q, v, tau, fext, "tau")
    kin = forward(model, q, v, gravity=True)
    return unbatch(articulated_forward_dynamics(model, kin, v, tau, fext), shape)


def aba_derivatives(model, q, v, tau, fext=None):
    """Partial derivatives of :func:`aba`: ``(da_dq, da_dv, da_dtau)``, each ``(..., nv, nv)``.

    From the RNEA derivatives at ``a = aba(q, v, tau)``: ``da_dq = -M^-1 dtau_dq``,
    ``da_dv = -M^-1 dtau_dv``, ``da_dtau = M^-1``.
    """
    (q, v, tau, fext), shape = inputs(model, q, v, tau, fext, "tau")
    kin = forward(model, q, v, gravity=True)
    a = articulated_forward_dynamics(model, kin, v, tau, fext)
    fext = None if fext is None else fext.reshape(-1, model.njoints, 6)
    dtau_dq, dtau_dv, M = rnea_derivatives(model, q, v, a, fext)
    Minv = np.linalg.inv(M)
    Minv = 0.5 * (Minv + Minv.swapaxes(-1, -2))
    return unbatch(-Minv @ dtau_dq, shape), unbatch(-Minv @ dtau_dv, shape), unbatch(Minv, shape)
