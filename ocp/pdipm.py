"""Primal-dual interior-point arithmetic for inequality constraints ``g(x) >= 0``.

Each constraint gets a slack ``s > 0`` (``g(x) - s = 0``) and a dual ``z > 0``; with the
barrier parameter ``eps`` the perturbed KKT conditions are

    stationarity  L_x - G^T z = 0,    primal  r_p = g - s = 0,    complementarity  r_c = s z - eps = 0

with ``G = dg/dx``. Newton's step eliminates the slack and dual directions,

    ds = G dx + r_p,    dz = -(r_c + z ds) / s,

so the inequalities only add ``G^T diag(z / s) G`` to the Hessian and ``G^T (r_c + z r_p) / s``
to the gradient (seed 004 Sec. III-D): the LQR subproblem keeps its structure. Slacks start
at ``max(g, sqrt(eps))`` with ``z = eps / s``; steps are cut by the fraction-to-boundary rule
separately for primal and dual variables. Arrays may have leading (stage) axes. ``G`` is an
array or an operator with the products ``dot``, ``transpose_dot`` and ``weighted_gram``
(:class:`ocp.inequalities.Inequalities`, which keeps the bound rows of the limits implicit).
"""

from __future__ import annotations

import numpy as np

FRACTION_TO_BOUNDARY = 0.995


def initial_slack_and_dual(g, eps):
    """``s = max(g, sqrt(eps))``, ``z = eps / s``: on the central path, strictly positive."""
    s = np.maximum(g, np.sqrt(eps))
    return s, eps / s


def residuals(g, s, z, eps):
    """``(r_p, r_c) = (g - s, s z - eps)``."""
    return g - s, s * z - eps


class Dense:
    """A Jacobian ``G (..., m, n)`` given as an array, with the products of the operators."""

    def __init__(self, G):
        self.G = G

    def dot(self, dx):
        return np.einsum("...mi,...i->...m", self.G, dx)

    def transpose_dot(self, x):
        return np.einsum("...mi,...m->...i", self.G, x)

    def weighted_gram(self, d, out=None):
        gram = (np.swapaxes(self.G, -1, -2) * d[..., None, :]) @ self.G
        if out is None:
            return gram
        out += gram
        return out


def _operator(G):
    return Dense(G) if isinstance(G, np.ndarray) else G


def condense(G, s, z, r_p, r_c, H=None, g=None):
    """Hessian and gradient added by the inequalities: ``(G^T diag(z/s) G, G^T (r_c + z r_p)/s)``,
    or, given ``H`` and ``g``, added to them in place and returned.

    ``G (..., m, n)``, the others ``(..., m)``; the gradient term completes ``L_x - G^T z``."""
    G = _operator(G)
    gradient = G.transpose_dot((r_c + z * r_p) / s)
    if H is None:
        return G.weighted_gram(z / s), gradient
    G.weighted_gram(z / s, out=H)
    g += gradient
    return H, g


def expand(G, dx, s, z, r_p, r_c):
    """The slack and dual directions ``(ds, dz)`` from the primal direction ``dx``."""
    ds = _operator(G).dot(dx) + r_p
    return ds, -(r_c + z * ds) / s


def fraction_to_boundary(v, dv, tau=FRACTION_TO_BOUNDARY):
    """The largest ``alpha`` in ``(0, 1]`` with ``v + alpha dv >= (1 - tau) v`` (``v > 0``)."""
    v, dv = np.asarray(v, dtype=float), np.asarray(dv, dtype=float)
    steps = np.divide(-tau * v, dv, out=np.full(v.shape, np.inf), where=dv < 0)  # to the boundary, if shrinking
    return float(min(1.0, steps.min(initial=np.inf)))


def complementarity_error(s, z, eps):
    """``|s z - eps|^2`` summed: the perturbed complementarity part of the KKT residual."""
    return float(np.sum((s * z - eps) ** 2))
