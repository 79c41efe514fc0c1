"""The inequalities ``g(y) >= 0`` of a contact stage: friction cones, then joint limits.

At contact stages: the friction cone (:mod:`ocp.friction`) of every 3D contact force, in the
order of the stage's contacts, then for each imposed limit (``position``, ``velocity``,
``torque``, in the order given) the rows ``x - lower`` and then ``upper - x`` of the actuated
joints with finite limits (the torque limits bound the torque state ``tau`` of a filtered OCP,
which sits in ``y`` where the controls sit otherwise). Impulses are not constrained (as in seed 004): the standing
feet's impulses sit at the apex of their cones, where the cone rows are degenerate and the
interior point stalls.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .friction import friction_cones


@dataclass(frozen=True)
class Inequalities:
    """``g (S, ni) >= 0`` of the stages of a group and its Jacobian ``dg/dy`` in two parts: the
    first ``ng`` rows (friction cones) with ``G (S, ng, ny)``, then bound rows, each a sign
    times one column of ``y`` (the limits): ``bounds (nb, ny)``, the same for every stage;
    ``columns``: the columns of ``y`` where ``G`` can be nonzero by its structure, increasing
    (None: any). The products the interior point needs use that structure (:mod:`ocp.pdipm`)."""

    g: np.ndarray
    G: np.ndarray
    bounds: np.ndarray
    columns: np.ndarray | None = None

    @property
    def ng(self) -> int:
        return self.G.shape[1]

    def dot(self, dy):
        """``(dg/dy) dy``, ``(S, ni)``."""
        return np.concatenate((np.einsum("smy,sy->sm", self.G, dy), dy @ self.bounds.T), axis=1)

    def transpose_dot(self, x):
        """``(dg/dy)^T x`` for ``x (S, ni)``, ``(S, ny)``."""
        return np.einsum("smy,sm->sy", self.G, x[:, : self.ng]) + x[:, self.ng :] @ self.bounds

    def weighted_gram(self, d, out=None):
        """``(dg/dy)^T diag(d) (dg/dy)`` for ``d (S, ni)``, or added to ``out`` in place: the bound
        rows add to the diagonal, the cone rows to the columns they touch (forces, and ``dq``
        for LOCAL forces) only."""
        S, ny = self.G.shape[0], self.G.shape[2]
        out = np.zeros((S, ny, ny)) if out is None else out
        cols = np.flatnonzero(np.any(self.G != 0, axis=(0, 1)))
        Gc = self.G[:, :, cols]
        out[:, cols[:, None], cols] += (np.swapaxes(Gc, 1, 2) * d[:, None, : self.ng]) @ Gc
        out[:, np.arange(ny), np.arange(ny)] += d[:, self.ng :] @ np.abs(self.bounds)
        return out

    def jacobian(self):
        """The whole ``dg/dy (S, ni, ny)``."""
        return np.concatenate((self.G, np.broadcast_to(self.bounds, (len(self.g),) + self.bounds.shape)), axis=1)


def bound_rows(limits, nv, nu, ny):
    """The signed one-hot rows ``(nb, ny)`` of the limits (lower rows then upper ones per limit)."""
    offsets = {"position": 0, "velocity": nv, "torque": 2 * nv}
    blocks = []
    for name, (rows, bound) in limits.items():
        for sign in (1.0, -1.0):
            B = np.zeros((len(bound[0]), ny))
            B[np.arange(len(bound[0])), offsets[name] + rows[1]] = sign
            blocks.append(B)
    return np.concatenate(blocks) if blocks else np.zeros((0, ny))


def limit_rows(model, limits):
    """``{name: ((columns in the variable, columns in its tangent), (lower, upper))}`` for the
    actuated joints with finite limits."""
    first = 6 if model.has_free_flyer else 0
    dofs = np.arange(first, model.nv)
    joints = [j for j in range(len(model.joint_names)) if model.nvs[j] == 1 and model.idx_v[j] >= first]
    out = {}
    if "position" in limits:
        bounded = [j for j in joints if model.nqs[j] == 1]
        qi = np.array([model.idx_q[j] for j in bounded], dtype=int)
        vi = np.array([model.idx_v[j] for j in bounded], dtype=int)
        lo, hi = model.lower_position_limit[qi], model.upper_position_limit[qi]
        keep = np.isfinite(lo) & np.isfinite(hi)
        out["position"] = ((qi[keep], vi[keep]), (lo[keep], hi[keep]))
    for name, bound in (("velocity", model.velocity_limit), ("torque", model.effort_limit)):
        if name in limits:
            keep = np.isfinite(bound[dofs]) & (bound[dofs] > 0)
            cols = dofs[keep] - (first if name == "torque" else 0)
            out[name] = ((cols, cols), (-bound[dofs][keep], bound[dofs][keep]))
    return out


def inequalities(model, friction, limits, group, q, v, u, f, tau=None) -> Inequalities:
    """The :class:`Inequalities` of the stages of ``group`` at ``y = (dq, dv, dtau, du, dw)``
    (none at impulse stages); ``limits`` from :func:`limit_rows`; ``tau`` the torque state of a
    filtered OCP (None: none)."""
    ny = 2 * model.nv + (0 if tau is None else tau.shape[1]) + u.shape[1] + model.nv + f.shape[1]
    g, cones = _values(model, friction, limits, group, q, v, u, f, tau, True)
    G = np.zeros((len(q), 0 if cones is None else cones[0].shape[1], ny))
    if cones is not None:
        cols, dg_dq, dg_df = cones[1:]
        G[:, :, : model.nv] = dg_dq
        G[:, :, ny - f.shape[1] + cols] = dg_df
    bounds = bound_rows(limits, model.nv, u.shape[1], ny) if group.kind == "contact" else np.zeros((0, ny))
    return Inequalities(g, G, bounds)


def inequality_values(model, friction, limits, group, q, v, u, f, tau=None) -> np.ndarray:
    """The values ``g (S, ni)`` of :func:`inequalities` alone, without their derivatives (the
    slacks of a start)."""
    return _values(model, friction, limits, group, q, v, u, f, tau, False)[0]


def _values(model, friction, limits, group, q, v, u, f, tau, derivatives) -> tuple:
    """``(g, cones)``: the values of :func:`inequalities` and, with ``derivatives`` and friction
    cones, ``(g_cones, cols, dg_dq, dg_df)`` (:func:`ocp.friction.friction_cones`, ``cols`` the
    cones' columns of ``f``); else None."""
    if group.kind != "contact":
        return np.zeros((len(q), 0)), None
    blocks, cones = [], None
    cone_slots = [i for i, c in enumerate(group.contact_set) if c.kind == "3D"]
    if friction is not None and cone_slots:
        offsets = np.cumsum([0] + [c.dim for c in group.contact_set])
        cols = np.concatenate([np.arange(offsets[i], offsets[i] + 3) for i in cone_slots])
        contacts = [group.contact_set[i] for i in cone_slots]
        g, dg_dq, dg_df = friction_cones(model, q, f[:, cols], contacts, friction, derivatives)
        cones = (g, cols, dg_dq, dg_df) if derivatives else None
        blocks.append(g)
    values = {"position": q, "velocity": v, "torque": u if tau is None else tau}
    for name, (rows, bound) in limits.items():
        x = values[name][:, rows[0]]
        blocks += [x - bound[0], bound[1] - x]
    return (np.concatenate(blocks, axis=1) if blocks else np.zeros((len(q), 0))), cones
