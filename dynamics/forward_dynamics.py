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

from dataclasses import dataclass, replace

import numpy as np

from .batch import unbatch
from .inverse_dynamics import body_forces, inputs, rnea_derivatives, world_inertias
from .kinematics import forward, tree_sum
from .spatial import dot, matmul, matvec, motion_cross, rigid_matrix, transpose


@dataclass(frozen=True)
class Sweep:
    """What the backward sweep leaves for the forward one, per tree level (root level first):
    ``(joints, S, U, D, u)`` with ``U = IA S``, ``D = S^T U``, ``u = tau - S^T pA``; and the
    bias accelerations ``c (6, n, B)``."""

    levels: tuple
    c: np.ndarray


def articulated_inertias(model, kin, v, fext=None):
    """Initial articulated inertias ``IA (6, 6, n, B)``, bias forces ``pA = v x* I v - fext``
    and bias accelerations ``c = ov_parent x S v`` per joint."""
    inertia = world_inertias(model, kin)
    pA, _ = body_forces(model, replace(kin, oa=np.zeros_like(kin.ov)), inertia, fext)
    c = tree_sum(model.tree.owner, motion_cross(kin.parent_velocity(model), kin.oS * v.T))
    return rigid_matrix(*inertia), pA, c


def backward_sweep(model, kin, IA, pA, c, tau) -> Sweep:
    """Articulated inertias and forces from the leaves to the root (modifies ``IA, pA``)."""
    t = model.tree
    S, tau_t = kin.oS, tau.T
    stored = []
    for depth in range(len(t.levels) - 1, -1, -1):
        J = t.levels[depth]
        if depth == 0 and t.free_flyer:
            S6 = S[:, :6]  # (6 components, 6 dofs, B)
            U = matmul(IA[:, :, 0], S6)
            stored.append((J, S6, U, matmul(transpose(S6), U), tau_t[:6] - matvec(transpose(S6), pA[:, 0])))
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
    return Sweep(tuple(reversed(stored)), c)


def propagate_forces(model, sweep: Sweep, dpA):
    """Add to the bias forces ``dpA (6, n, B)`` their articulated propagation to the root
    (``P = 1 - U D^-1 S^T``, seed 003 Alg. 2 backward sweep); returns the propagated array."""
    dpA = dpA.copy()
    for depth in range(len(sweep.levels) - 1, 0, -1):
        J, SJ, U, D, _ = sweep.levels[depth]
        np.add.at(dpA, (slice(None), model.parents[J]), dpA[:, J] - U * (dot(SJ, dpA[:, J]) / D))
    return dpA


def forward_sweep(model, kin, sweep: Sweep, dpA=None):
    """Joint accelerations ``(nv, B)`` and body accelerations ``(6, n, B)`` from the root to the
    leaves; ``dpA``: propagated bias-force changes since the backward sweep (or None)."""
    t = model.tree
    B = kin.batch_size
    acc = np.zeros((6, model.njoints, B))
    qdd = np.zeros((model.nv, B))
    for depth, (J, SJ, U, D, u) in enumerate(sweep.levels):
        a_par = np.broadcast_to(kin.a0, (6, len(J), B)) if depth == 0 else acc[:, model.parents[J]]
        ap = a_par + sweep.c[:, J]
        if depth == 0 and t.free_flyer:
            if dpA is not None:
                u = u - matvec(transpose(SJ), dpA[:, 0])
            rhs = u - matvec(transpose(U), ap[:, 0])
            qdd[:6] = np.linalg.solve(D.transpose(2, 0, 1), rhs.T[..., None])[..., 0].T
            acc[:, 0] = ap[:, 0] + matvec(SJ, qdd[:6])
            continue
        if dpA is not None:
            u = u - dot(SJ, dpA[:, J])
        qj = (u - dot(U, ap)) / D
        qdd[model.idx_v[J]] = qj
        acc[:, J] = ap + SJ * qj
    return qdd, acc


def articulated_forward_dynamics(model, kin, v, tau, fext=None):
    """Accelerations ``(B, nv)`` from world kinematics (with ``-g`` as universe acceleration)."""
    IA, pA, c = articulated_inertias(model, kin, v, fext)
    return forward_sweep(model, kin, backward_sweep(model, kin, IA, pA, c, tau))[0].T


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
