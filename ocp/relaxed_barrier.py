"""The relaxed logarithmic barrier (ReB, Hauser & Saccon 2006): how the DDP-type solvers of
seed 004's comparison handle inequalities ``g >= 0``.

For a relaxation ``delta > 0`` each row costs

    B(g) = -ln g                                              for g > delta
    B(g) = 1/2 (((g - 2 delta) / delta)^2 - 1) - ln delta     for g <= delta

a quadratic extension, twice continuously differentiable at ``delta`` and finite for every
``g``: iterates may leave the feasible region, and so may the solution (a penalty, not an
exact constraint). Scaled by the barrier parameter ``eps`` it joins the cost,
``eps sum B(g)``, with the Gauss-Newton Hessian ``eps G^T diag(B'') G``.
"""

from __future__ import annotations

import numpy as np


def relaxed_barrier(g, delta):
    """``(B, B', B'')`` of every row of ``g`` (any shape) for the relaxation ``delta > 0``."""
    g = np.asarray(g, dtype=float)
    if not (np.isfinite(delta) and delta > 0):
        raise ValueError(f"the barrier's relaxation must be > 0, got {delta!r}")
    inside = g > delta
    safe = np.where(inside, g, 1.0)
    e = (g - 2 * delta) / delta
    value = np.where(inside, -np.log(safe), 0.5 * (e * e - 1) - np.log(delta))
    d1 = np.where(inside, -1 / safe, e / delta)
    d2 = np.where(inside, 1 / (safe * safe), 1 / delta**2)
    return value, d1, d2
