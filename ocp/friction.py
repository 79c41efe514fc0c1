"""Polyhedral friction cones on contact forces in the world frame (seed 004 eq. 36).

For the world force ``(fx, fy, fz)`` of a contact, the five rows ``g >= 0``:

    fz,   mu' fz - fx,   mu' fz + fx,   mu' fz - fy,   mu' fz + fy

with ``mu' = mu / sqrt(2)``: the pyramid inscribed in the circular cone of coefficient ``mu``
(every force it admits sticks). Forces are given as the contacts' rows (their frame, turned
by the contact's constant ``rotation`` ``R_c``, the identity by default): ``f_world = R_c f``
in WORLD and LOCAL_WORLD_ALIGNED; a LOCAL force turns with the frame, ``f_world = R R_c f``,
so the cone depends on ``q`` through ``d(R R_c f)/dq_k = w_k x f_world`` with ``w_k`` the
angular Jacobian column of the frame's body.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from liftoff import dynamics

ROWS = 5


@lru_cache(maxsize=8)
def pyramid(mu):
    """The ``(5, 3)`` rows of the cone's inequalities on a world force (module docstring), made
    once per coefficient (read-only)."""
    m = mu / np.sqrt(2.0)
    P = np.array([[0, 0, 1], [-1, 0, m], [1, 0, m], [0, -1, m], [0, 1, m]], dtype=float)
    P.flags.writeable = False
    return P


def friction_cones(model, q, f, contacts, mu, derivatives=True):
    """``(g, dg_dq, dg_df)`` for the 3D contacts ``contacts`` with forces ``f (S, 3 nc)``:
    ``g (S, 5 nc)``, ``dg_dq (S, 5 nc, nv)``, ``dg_df (S, 5 nc, 3 nc)``; without
    ``derivatives``, ``(g, None, None)``."""
    if not (np.isscalar(mu) and np.isfinite(mu) and mu > 0):
        raise ValueError(f"friction coefficient must be a finite number > 0, got {mu!r}")
    for c in contacts:
        if c.kind != "3D":
            raise ValueError(f"friction cone on {c.frame!r}: needs a 3D contact, got kind {c.kind!r}")
    P = pyramid(float(mu))
    S, nc = len(q), len(contacts)
    g = np.zeros((S, ROWS * nc))
    dg_dq = np.zeros((S, ROWS * nc, model.nv)) if derivatives else None
    dg_df = np.zeros((S, ROWS * nc, 3 * nc)) if derivatives else None
    for i, c in enumerate(contacts):
        rows, cols = slice(ROWS * i, ROWS * (i + 1)), slice(3 * i, 3 * i + 3)
        fi = f[:, cols]
        if c.reference is dynamics.ReferenceFrame.LOCAL:
            R, _ = dynamics.frame_placement(model, q, c.frame)
            R = R if c.rotation is None else R @ c.rotation
            f_world = np.einsum("sij,sj->si", R, fi)
            if derivatives:
                w = dynamics.frame_jacobian(model, q, c.frame, "LOCAL_WORLD_ALIGNED")[:, 3:]  # (S, 3, nv)
                df_world_dq = np.cross(np.swapaxes(w, 1, 2), f_world[:, None, :]).transpose(0, 2, 1)
                dg_dq[:, rows] = P @ df_world_dq
                dg_df[:, rows, cols] = P @ R
        else:
            f_world = fi if c.rotation is None else fi @ c.rotation.T
            if derivatives:
                dg_df[:, rows, cols] = P if c.rotation is None else P @ c.rotation
        g[:, rows] = f_world @ P.T
    return g, dg_dq, dg_df
