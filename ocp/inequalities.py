"""The inequalities ``g(y) >= 0`` of a contact stage: friction cones, then joint limits.

At contact stages: the friction cone (:mod:`ocp.friction`) of every 3D contact force, in the
order of the stage's contacts, then for each imposed limit (``position``, ``velocity``,
``torque``, in the order given) the rows ``x - lower`` and then ``upper - x`` of the actuated
joints with finite limits. Impulses are not constrained (as in seed 004): the standing
feet's impulses sit at the apex of their cones, where the cone rows are degenerate and the
interior point stalls.
"""

from __future__ import annotations

import numpy as np

from .friction import friction_cones


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


def inequalities(model, friction, limits, group, q, v, u, f):
    """``g (S, ni) >= 0`` and ``G = dg/dy (S, ni, ny)`` for ``y = (dq, dv, du, dw)`` of the
    stages of ``group`` (none at impulse stages); ``limits`` from :func:`limit_rows`."""
    S, nv, nu = len(q), model.nv, u.shape[1]
    m = f.shape[1]
    ny = 2 * nv + nu + nv + m
    if group.kind != "contact":
        return np.zeros((S, 0)), np.zeros((S, 0, ny))
    blocks, jacobians = [], []
    cones = [i for i, c in enumerate(group.contacts) if c.kind == "3D"]
    if friction is not None and cones:
        offsets = np.cumsum([0] + [c.dim for c in group.contacts])
        cols = np.concatenate([np.arange(offsets[i], offsets[i] + 3) for i in cones])
        g, dg_dq, dg_df = friction_cones(model, q, f[:, cols], [group.contacts[i] for i in cones], friction)
        G = np.zeros((S, g.shape[1], ny))
        G[:, :, :nv] = dg_dq
        G[:, :, 2 * nv + nu + nv + cols] = dg_df
        blocks.append(g)
        jacobians.append(G)
    values = {"position": q, "velocity": v, "torque": u}
    offsets = {"position": 0, "velocity": nv, "torque": 2 * nv}
    for name, (rows, bound) in limits.items():
        x = values[name][:, rows[0]]
        blocks += [x - bound[0], bound[1] - x]
        for sign in (1.0, -1.0):
            G = np.zeros((S, len(bound[0]), ny))
            G[:, np.arange(len(bound[0])), offsets[name] + rows[1]] = sign
            jacobians.append(G)
    if not blocks:
        return np.zeros((S, 0)), np.zeros((S, 0, ny))
    return np.concatenate(blocks, axis=1), np.concatenate(jacobians, axis=1)
