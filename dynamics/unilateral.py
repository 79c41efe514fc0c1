"""The contact problem of one time step: unilateral contacts with Coulomb friction.

Names (seed 002, "from bilateral to unilateral"): each of the ``k`` contacts has a frame
``(n, t1, t2)`` (normal first) and an impulse ``lambda_i = (lambda_n, lambda_t)`` over the step,
laid out contact after contact in ``lambda (3k,)``. The contact velocities after the step are
affine in the impulses,

    u = G lambda + c,       G = J M^-1 J^T (+ eps 1: the damped Delassus matrix),

with ``c`` the *free velocity* (``J`` times the velocity the step reaches without contact
impulses, plus any position-correction bias). The Signorini-Coulomb problem at velocity level
(Moreau's sweeping process; Stewart & Trinkle 1996) asks, for every contact, with ``mu`` its
friction coefficient and ``K_mu = {|lambda_t| <= mu lambda_n}`` the *Coulomb cone*:

- Signorini: ``0 <= lambda_n  _|_  u_n >= 0`` (no pull, no penetration velocity, no
  impulse on a separating contact);
- Coulomb with maximum dissipation: ``lambda in K_mu``; sticking (``|lambda_t| < mu lambda_n``)
  gives ``u_t = 0``; sliding gives ``lambda_t = -mu lambda_n u_t / |u_t|``.

De Saxcé's bipotential (De Saxcé & Feng 1991) writes both as one cone complementarity on the
*corrected velocity* ``u_hat = (u_n + mu |u_t|, u_t)``: ``K_mu  contains  lambda  _|_  u_hat  in
K_mu^*`` (the dual cone ``K_mu^* = K_{1/mu}``, and ``u_hat in K_mu^*`` iff ``u_n >= 0``). The residuals every solver
reports measure exactly that, per contact, and take the largest:

- ``cone``: the distance of ``lambda_i`` to ``K_mu`` (primal feasibility);
- ``velocity``: ``max(0, -u_n)`` (dual feasibility: no approaching contact);
- ``complementarity``: ``|lambda_i . u_hat_i|`` (zero iff Signorini holds and the friction
  impulse opposes the slip at the cone's boundary).

The problem is not a convex program (the corrected velocity depends on ``u``): the solvers
below iterate toward a solution and report whether all three residuals fell below ``tol``.

- :func:`pgs`: projected (nonsmooth) Gauss-Seidel, the nonsmooth contact dynamics of Jean &
  Moreau (1992; M. Jean, "The non-smooth contact dynamics method", CMAME 177, 1999) as presented
  by Acary & Brogliato (2008, "Numerical Methods for Nonsmooth Dynamical Systems", Springer): a
  sweep over the contacts, each solved with the others held. Where their local solver treats a
  contact's three rows at once, this one splits it in two exact pieces: the normal impulse (a
  projection on ``lambda_n >= 0``), then the friction impulse (a 2D trust-region problem on the
  disc ``|lambda_t| <= mu lambda_n``, solved to round-off). A fixed point of the sweep satisfies
  the Signorini-Coulomb conditions exactly; convergence is observed, not proven (the friction
  disc moves with ``lambda_n``), and slow on statically indeterminate contacts (a box on four
  corners pushed near the friction limit: 300 sweeps from zero).
- :func:`admm`: the alternating direction method of multipliers on the cone-constrained
  problem with De Saxcé's correction, as in Carpentier, Le Lidec et al. (2024, "From compliant
  to rigid contact simulation: a unified and efficient approach", RSS) and Tasora et al. (2021,
  "Solving variational inequalities and cone complementarity problems in nonsmooth dynamics
  using the alternating direction method of multipliers", IJNME): ``(G + rho 1) lambda = rho z - y
  - c - s``, ``z = P_K(lambda + y / rho)``, ``y += rho (lambda - z)``, with ``s = mu |u_t| e_n``
  updated every iteration and ``rho`` rebalanced between the primal and dual residuals. Its
  fixed points are the Signorini-Coulomb solutions (``y = -u_hat`` there); convergence, as for
  PGS, is observed.
- :func:`bilateral`: the equality-held contact (every row held, impulses of any sign: what
  liftoff's plants did before), by proximal iterations on the damped Delassus matrix (seed 000
  eq. 18) converging to the least-squares impulses when ``G`` is singular.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import cho_factor, cho_solve


@dataclass(frozen=True)
class Settings:
    """Stopping rule of the contact solvers: all three residuals ``<= tol`` (impulse times
    velocity for the complementarity, impulse for the cone, velocity for the velocity one) or
    ``max_iter`` iterations (sweeps for PGS)."""

    max_iter: int = 500
    tol: float = 1e-10

    def __post_init__(self):
        if not (isinstance(self.max_iter, (int, np.integer)) and self.max_iter >= 1):
            raise ValueError(f"max_iter must be an integer >= 1, got {self.max_iter!r}")
        if not (np.isscalar(self.tol) and np.isfinite(self.tol) and self.tol > 0):
            raise ValueError(f"tol must be a finite number > 0, got {self.tol!r}")


@dataclass(frozen=True)
class Report:
    """A solver's result: impulses ``impulse (3k,)``, the velocities ``velocity = G impulse + c``,
    ``iterations``, ``converged`` (every residual ``<= tol``) and the residuals of the module
    docstring (``cone``, ``velocity``, ``complementarity``; for :func:`bilateral`, ``velocity``
    is ``|u|_inf`` and the others zero)."""

    impulse: np.ndarray
    velocity: np.ndarray
    iterations: int
    converged: bool
    cone: float
    velocity_residual: float
    complementarity: float

    @property
    def residual(self) -> float:
        return max(self.cone, self.velocity_residual, self.complementarity)


def _check(G, c, mu):
    G, c, mu = np.asarray(G, dtype=float), np.asarray(c, dtype=float), np.asarray(mu, dtype=float).reshape(-1)
    k = len(mu)
    if G.shape != (3 * k, 3 * k) or c.shape != (3 * k,):
        raise ValueError(f"expected G ({3 * k}, {3 * k}) and c ({3 * k},) for {k} contacts, got {G.shape}, {c.shape}")
    if np.any(~np.isfinite(mu)) or np.any(mu < 0):
        raise ValueError(f"friction coefficients must be finite numbers >= 0, got {mu}")
    return G, c, mu


def project_cone(lam, mu) -> np.ndarray:
    """Euclidean projection of impulses ``(k, 3)`` on their Coulomb cones ``K_mu`` (``mu (k,)``)."""
    n, t = lam[:, 0], lam[:, 1:]
    r = np.linalg.norm(t, axis=1)
    inside = r <= mu * n
    polar = mu * r <= -n
    alpha = (n + mu * r) / (1.0 + mu**2)  # the boundary case: (alpha, mu alpha t / |t|)
    scale = np.where(r > 0, mu * alpha / np.where(r > 0, r, 1.0), 0.0)
    out = np.column_stack((alpha, scale[:, None] * t))
    out[inside] = lam[inside]
    out[polar & ~inside] = 0.0
    return out


def residuals(impulse, velocity, mu) -> tuple:
    """``(cone, velocity, complementarity)`` of the module docstring, each the largest over the contacts."""
    lam, u = impulse.reshape(-1, 3), velocity.reshape(-1, 3)
    if len(lam) == 0:
        return 0.0, 0.0, 0.0
    cone = np.linalg.norm(lam - project_cone(lam, mu), axis=1)
    u_hat_n = u[:, 0] + mu * np.linalg.norm(u[:, 1:], axis=1)
    complementarity = np.abs(lam[:, 0] * u_hat_n + np.einsum("ij,ij->i", lam[:, 1:], u[:, 1:]))
    return float(cone.max()), float(np.maximum(-u[:, 0], 0.0).max()), float(complementarity.max())


def _report(impulse, G, c, mu, iterations, settings) -> Report:
    velocity = G @ impulse + c
    cone, vel, comp = residuals(impulse, velocity, mu)
    converged = max(cone, vel, comp) <= settings.tol
    return Report(impulse, velocity, iterations, bool(converged), cone, vel, comp)


def _disc_qp(eig, b, radius):
    """``argmin 1/2 x^T A x + b^T x`` over ``|x| <= radius`` for a 2x2 positive semi-definite ``A``
    given by its eigen-decomposition ``eig = (w, V)`` (the trust-region subproblem). Inside:
    ``A x = -b``; on the boundary: ``(A + sigma 1) x = -b`` with ``sigma >= 0`` the root of
    ``|x(sigma)| = radius``, found by Newton's method on ``1/|x(sigma)| - 1/radius`` (More &
    Sorensen 1983), concave and increasing in ``sigma``: monotone convergence from ``sigma = 0``
    to round-off."""
    if radius <= 0.0:
        return np.zeros(2)
    w, V = eig
    floor = 1e-15 * max(w[1], 1e-300)
    w = np.maximum(w, floor)
    beta = V.T @ b
    x = -beta / w
    if x @ x <= radius**2:
        return V @ x
    sigma = 0.0
    for _ in range(50):
        d = w + sigma
        x = -beta / d
        norm = np.sqrt(x @ x)
        dnorm = -(x @ (x / d)) / norm  # d|x|/dsigma < 0
        step = (1.0 / norm - 1.0 / radius) * norm**2 / dnorm
        sigma += step
        if step <= 1e-15 * sigma:
            break
    x = -beta / (w + sigma)
    return V @ (x * (radius / np.sqrt(x @ x)))


def pgs(G, c, mu, impulse=None, settings=Settings()) -> Report:
    """Projected Gauss-Seidel (module docstring) from ``impulse`` (a warm start; zero by
    default), for the Delassus matrix ``G (3k, 3k)``, free velocity ``c (3k,)`` and friction
    coefficients ``mu (k,)``."""
    G, c, mu = _check(G, c, mu)
    k = len(mu)
    lam = np.zeros(3 * k) if impulse is None else project_cone(np.array(impulse, float).reshape(-1, 3), mu).ravel()
    u = G @ lam + c
    blocks = [G[3 * i + 1 : 3 * i + 3, 3 * i + 1 : 3 * i + 3] for i in range(k)]
    eigs = [np.linalg.eigh(block) for block in blocks]
    for iteration in range(1, settings.max_iter + 1):
        for i in range(k):
            n, t = 3 * i, slice(3 * i + 1, 3 * i + 3)
            ln = max(0.0, lam[n] - u[n] / G[n, n]) if G[n, n] > 0 else lam[n]
            u += G[:, n] * (ln - lam[n])
            lam[n] = ln
            lt = _disc_qp(eigs[i], u[t] - blocks[i] @ lam[t], mu[i] * ln)
            u += G[:, t] @ (lt - lam[t])
            lam[t] = lt
        report = _report(lam.copy(), G, c, mu, iteration, settings)
        if report.converged:
            return report
    return report


def _saxce(velocity, mu) -> np.ndarray:
    """De Saxcé's correction ``s = mu |u_t| e_n`` per contact, ``(3k,)``."""
    u = velocity.reshape(-1, 3)
    s = np.zeros_like(u)
    s[:, 0] = mu * np.linalg.norm(u[:, 1:], axis=1)
    return s.ravel()


def admm(G, c, mu, impulse=None, settings=Settings(), rho=None) -> Report:
    """ADMM with De Saxcé's correction (module docstring) from ``impulse`` (a warm start);
    ``rho``: the initial penalty (default: the mean diagonal of ``G``), rebalanced by a factor 5
    when the primal and dual residuals differ by more than 10 (Boyd et al. 2011, Sec. 3.4.1)."""
    G, c, mu = _check(G, c, mu)
    k = len(mu)
    z = np.zeros(3 * k) if impulse is None else project_cone(np.array(impulse, float).reshape(-1, 3), mu).ravel()
    if k == 0:
        return _report(z, G, c, mu, 0, settings)
    rho = float(np.mean(np.diag(G))) if rho is None else float(rho)
    rho = max(rho, 1e-12)
    eye = np.eye(3 * k)
    factor = cho_factor(G + rho * eye)
    y = -(G @ z + c + _saxce(G @ z + c, mu))  # the dual at a fixed point: a warm start for it too
    for iteration in range(1, settings.max_iter + 1):
        rhs = rho * z - y - c - _saxce(G @ z + c, mu)
        lam = cho_solve(factor, rhs)
        z_prev = z
        z = project_cone((lam + y / rho).reshape(-1, 3), mu).ravel()
        y = y + rho * (lam - z)
        report = _report(z, G, c, mu, iteration, settings)
        if report.converged:
            return report
        primal, dual = np.linalg.norm(lam - z), rho * np.linalg.norm(z - z_prev)
        if primal > 10 * dual or dual > 10 * primal:
            rho *= 5.0 if primal > dual else 0.2
            factor = cho_factor(G + rho * eye)
    return report


def bilateral(G, c, damping=1e-8, settings=Settings()) -> Report:
    """Every row held: ``G lambda + c = 0`` by proximal iterations ``(G + damping 1) (lambda+ -
    lambda) = -(G lambda + c)`` (seed 000 eq. 18), the least-squares impulses when ``G`` is
    singular; the ``velocity`` residual is ``|G lambda + c|_inf``."""
    G, c = np.asarray(G, dtype=float), np.asarray(c, dtype=float)
    lam = np.zeros(len(c))
    if len(c) == 0:
        return Report(lam, c, 0, True, 0.0, 0.0, 0.0)
    factor = cho_factor(G + damping * np.eye(len(c)))
    for iteration in range(1, settings.max_iter + 1):
        u = G @ lam + c
        residual = float(np.abs(u).max())
        if residual <= settings.tol:
            break
        lam = lam - cho_solve(factor, u)
    u = G @ lam + c
    residual = float(np.abs(u).max())
    return Report(lam, u, iteration, residual <= settings.tol, 0.0, residual, 0.0)
