"""Proximal constrained forward dynamics, impulse dynamics and their derivatives.

Constrained dynamics (seed 001 eq. 2-3) finds ``a`` and the contact forces ``f`` with

    M a = tau - b(q, v) + J^T f,     J a = alpha* - drift     (the rows of dynamics.contacts)

and impulse dynamics (seed 004 eq. 9-13) the velocity jump ``dv`` and impulses ``Lambda``
with ``M dv = J^T Lambda``, ``J (v + dv) = 0``: the same system with other right-hand
sides, ``M x = h + J^T f``, ``J x = r``. Four interchangeable proximal algorithms solve it
(``mu > 0`` is the proximal damping of seed 000 eq. 18; the penalty of seed 003 is 1/mu):

- ``proxLTL`` (seed 000 Alg. 1): sparse ``U D U^T`` factorization of the KKT matrix
  ``[[-mu 1, J], [J^T, M]]``, joints eliminated along their ancestor chains, then a dense
  Cholesky of the damped Delassus matrix ``J M^-1 J^T + mu 1`` (whose inverse is the damped
  OSIM); proximal iterations ``(J M^-1 J^T + mu 1) f+ = r - J M^-1 h + mu f``;
- ``proxLTLs`` (seed 003 eq. 16): augmented Lagrangian on ``M + J^T J / mu``;
- ``constrainedABA`` (seed 003 Alg. 1-3): the world-frame ABA with inertias and forces of
  the constrained bodies augmented, then reduced force sweeps per iteration;
- ``proxPV`` (seed 003 Alg. 4): the Popov-Vereshchagin sweeps, which give the Delassus
  matrix and the free constraint accelerations at the root, proximal steps on that dual,
  and one forward sweep; loop closures included.

All converge to the least-squares solution for redundant constraints; ``"kkt"`` is the plain
solve (``mu = 0``), which refuses rank-deficient constraints. ``mu`` is a number or, seed 003
Remark 2, one damping per constraint row (the damped Delassus matrix ``J M^-1 J^T + R`` with
``R = diag(mu)``); ``warm_start`` starts the iterations from given forces instead of zero.

Stopping (seed 000 Sec. II-B, seed 003 eq. 14 and Alg. 3). Each iteration measures the primal
residual ``e = J x - r`` of its pair ``(x, f)`` (``M x = h + J^T f``):

- ``|e|_inf <= tol``: the constraints hold, status ``"converged"``;
- inconsistent constraints (one foot held twice towards two targets) cannot hold: the dual
  problem is unbounded, ``f`` grows by ``R^-1 e`` per iteration along the null space of
  ``J^T`` (no generalized force), while ``x`` converges to the least-squares solution, the
  minimum of ``|J x - r|`` in the norm ``R^-1`` under the equation of motion. The iterations
  stop there, status ``"least_squares"``, when the dual residual ``|J^T R^-1 e|_inf`` (the
  optimality of that least-squares problem, ``R^-1`` scaled to a largest weight of 1) is
  ``<= tol`` and the iterates have stopped moving: the change of the constraint accelerations
  ``|J (x_k - x_k-1)|_inf`` (seed 003 Alg. 3's acceleration change, on the constraint rows so
  that proxPV, which rolls out once, measures it too) is below ``STALL |e|_inf = 1e-3
  |e|_inf``. That relative test keeps consistent problems from stopping early: their residual
  shrinks by about ``mu / sigma`` per iteration while it changes by about itself (``sigma``:
  eigenvalues of the Delassus matrix), so it only passes where ``sigma < 1e-3 mu``, directions
  that take thousands of iterations to converge anyway; and the dual residual is only
  computed for such stalled states. A stalled state not yet optimal goes on without the drift
  (its forces reduced to their least norm, its multiplier steps taken on the range part of its
  residual, see :func:`_iterate`), so that the rounding of ``J^T f`` does not grow with
  ``f``. The forces returned are the least-squares ones of least ``R``-norm (numpy's
  pseudo-inverse removes their component in the null space of ``J^T``, which moves nothing):
  bounded, independent of ``max_iter``, and equal to the minimum-norm least-squares
  (``lstsq``) solution of the KKT system with its rows scaled by ``R^-1/2``;
- otherwise ``"max_iter"``.

Before a status is reported, the residuals of the returned pair are recomputed: the
constraint (or dual) residual and the equation of motion ``|M x - h - J^T f|_inf``, which must
be ``<= tol max(1, |h|_inf, |J^T f|_inf)``. A pair whose iterations met their test but whose
recomputed residuals do not is reported ``"inaccurate"`` (the augmented-Lagrangian
algorithms at a small ``mu``, see below).

Choosing ``mu``: the iterations contract like ``mu / (mu + sigma)`` (``sigma``: eigenvalues of
the Delassus matrix), so a small ``mu`` converges in fewer iterations. proxLTL's accuracy does
not depend on it, but the augmented-Lagrangian algorithms (proxLTLs, constrainedABA) factor
``M + J^T J / mu``, whose rounding leaves an equation-of-motion residual growing like ``1/mu``
(seed 000 Sec. III-A): about 1e-10 at the default ``mu = 1e-4`` (4-6 iterations on ANYmal
and Talos), 1e-8 to 1e-6 at ``mu = 1e-6``, 3e-6 at ``mu = 1e-8`` on Talos standing (forces
~700 N), where it misses ``tol max(1, |h|, |J^T f|)`` and the status says ``"inaccurate"``
(proxLTL and proxPV, whose ``x`` solves ``M x = h + J^T f`` for the ``f`` they return, stay at
1e-12).

Derivatives follow seed 001 Prop. 1: ``d(a, f)/dz`` solves the same system with
``h = -dID/dz``, ``r = -d alpha/dz``, where ``ID(q, v, a, f) = rnea(q, v, a) - J^T f`` and
``alpha = J a + drift - alpha*`` (the pieces below, also what the lifted OCP uses).
"""

from __future__ import annotations

import numpy as np

from .batch import batch, unbatch
from .contacts import contact_rows, dimension, generalized_force_derivative, resolve, row_derivatives
from .errors import DimensionError
from .forward_dynamics import Sweep, articulated_inertias, backward_sweep, forward_sweep, propagate_forces
from .inverse_dynamics import _symmetric_from_lower, derivatives_batch, mass_matrix, rnea, world_inertias
from .kinematics import forward, tree_sum
from .spatial import dot, matvec, rigid_matrix, transpose

ALGORITHMS = ("proxLTL", "proxLTLs", "constrainedABA", "proxPV", "kkt")
STATUSES = ("converged", "least_squares", "max_iter", "inaccurate")
_CONVERGED, _LEAST_SQUARES, _MAX_ITER, _INACCURATE = range(4)
STALL = 1e-3  # least squares: the constraint accelerations change by less than STALL |e| per iteration
_STATUS_NAMES = np.array(STATUSES)


class SingularConstraintError(np.linalg.LinAlgError):
    """Rank-deficient constraints where an undamped solve needs full rank: the plain KKT solve,
    or the inverse of the undamped Delassus matrix (use a proximal algorithm, or ``mu > 0``).
    A ``ValueError``, and numpy's ``LinAlgError`` for callers that catch that."""


class Solution(tuple):
    """``(x, f)`` with the solver's report per state:

    - ``status``: one of ``STATUSES`` (see the module's "Stopping"); ``converged`` is
      ``status == "converged"``;
    - ``iterations``: the iterations made;
    - ``residual``: the primal residual ``|J x - r|_inf`` of the returned pair;
    - ``dual_residual``: ``|J^T R^-1 (J x - r)|_inf`` (``R^-1`` scaled to a largest weight of 1),
      zero at the least-squares solution of inconsistent constraints;
    - ``eom_residual``: ``|M x - h - J^T f|_inf``, the equation of motion of the pair."""

    def __new__(cls, x, f, iterations, residual, status, dual_residual, eom_residual):
        out = super().__new__(cls, (x, f))
        out.iterations, out.residual, out.status = iterations, residual, status
        out.dual_residual, out.eom_residual = dual_residual, eom_residual
        return out

    @property
    def converged(self):
        return self.status == "converged"


def _damping(mu, zero=False):
    """``mu`` as a float or a 1D float array (one per constraint row, seed 003 Remark 2),
    each finite and ``> 0`` (``>= 0`` with ``zero``)."""
    if type(mu) is float and 0 < mu < np.inf:  # the common case, quickly
        return mu
    what = "a finite number >= 0 (the damping)" if zero else "a finite number > 0 (the proximal damping)"
    try:
        values = np.asarray(mu, dtype=float)
    except (TypeError, ValueError):
        values = np.array(np.nan)
    if values.ndim > 1 or values.size == 0 or not np.all(np.isfinite(values)) or np.any(values < 0):
        ok = False
    else:
        ok = zero or np.all(values > 0)
    if not ok:
        raise ValueError(f"mu must be {what}, or one such number per constraint row, got {mu!r}")
    return float(values) if values.ndim == 0 else values


def _row_damping(mu, m):
    """``mu (m,)``, one per constraint row."""
    if np.ndim(mu) == 0:
        return np.full(m, float(mu))
    if len(mu) != m:
        raise DimensionError(f"mu: expected a number or {m} values (one per constraint row), got {len(mu)}")
    return np.asarray(mu, dtype=float)


def _settings(mu, max_iter, tol, algorithm):
    if algorithm not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {algorithm!r}; expected one of {', '.join(ALGORITHMS)}")
    if algorithm != "kkt":
        _damping(mu)
    if not (isinstance(max_iter, (int, np.integer)) and max_iter >= 1):
        raise ValueError(f"max_iter must be an integer >= 1, got {max_iter!r}")
    if not (np.isscalar(tol) and tol > 0):
        raise ValueError(f"tol must be a number > 0, got {tol!r}")


# ----------------------------------------------------------------------------- the system


class _System:
    """Joint-space inertia, contact rows and kinematics of ``(B, .)`` states, batch-first."""

    def __init__(self, model, q, v, contacts):
        self.model = model
        self.resolved = resolve(model, contacts)
        self.m = dimension(self.resolved)
        self.kin = forward(model, q, v, np.zeros_like(v), gravity=False)
        self.rows = [contact_rows(model, self.kin, rc) for rc in self.resolved]
        self.J = np.concatenate([r.J for r in self.rows]).transpose(2, 0, 1)  # (B, m, nv)
        self.velocity, self.drift, self.target = (
            np.concatenate([getattr(r, name) for r in self.rows]).T for name in ("velocity", "drift", "target")
        )
        self._M = None

    @property
    def M(self):
        if self._M is None:
            self._M = mass_matrix(self.model, self.kin)
        return self._M

    @property
    def world_contacts_only(self):
        return all(rc.frame2 is None for rc in self.resolved)


def _chains(model):
    """Per dof ``k``, the dofs before it that move its body: the pattern of ``U`` (seed 000 eq. 23)."""
    return [np.flatnonzero(model.tree.lower[k, :k]) for k in range(model.nv)]


def _udu(A, chains, C=None):
    """Sparse ``A = U D U^T`` (unit upper ``U`` with the tree pattern), eliminating the joints
    from the last; ``C (B, m, n)``: constraint rows eliminated alongside (seed 000 Alg. 1),
    which become ``J U^-T D^-1`` and whose Schur complement ``J A^-1 J^T`` is accumulated."""
    A = A.copy()
    C = None if C is None else C.copy()
    schur = None if C is None else np.zeros(C.shape[:2] + C.shape[1:2])
    for k in range(A.shape[-1] - 1, -1, -1):
        anc = chains[k]
        d = A[:, k, k]
        if len(anc):
            col = A[:, anc, k]
            ratio = col / d[:, None]
            A[:, anc[:, None], anc[None, :]] -= col[:, :, None] * ratio[:, None, :]
            if C is not None:
                C[:, :, anc] -= C[:, :, k, None] * ratio[:, None, :]
            A[:, anc, k] = ratio
        if C is not None:
            schur += C[:, :, k, None] * C[:, None, :, k] / d[:, None, None]
            C[:, :, k] /= d[:, None]
    return A, np.diagonal(A, axis1=1, axis2=2).copy(), C, schur


def _back(U, x, chains):
    """``U^-1 x`` for the unit upper ``U`` of :func:`_udu` (``x (B, n, c)``)."""
    x = x.copy()
    for k in range(x.shape[1] - 1, -1, -1):
        if len(chains[k]):
            x[:, chains[k]] -= U[:, chains[k], k, None] * x[:, k, None]
    return x


def _forth(U, x, chains):
    """``U^-T x``."""
    x = x.copy()
    for k in range(x.shape[1]):
        if len(chains[k]):
            x[:, k] -= np.einsum("bi,bic->bc", U[:, chains[k], k], x[:, chains[k]])
    return x


def _spd_inverse(A):
    L = np.linalg.cholesky(A)
    Linv = np.linalg.inv(L)
    return np.swapaxes(Linv, 1, 2) @ Linv


class _LeastSquares:
    """The least-squares problem of the constraint rows in the norm ``R^-1`` (``R = diag(mu)``,
    scaled to a largest weight ``W = min(mu) / mu`` of 1): its dual residual ``|J^T W e|_inf``
    for residuals ``e (B, m, c)``, zero at the least-squares solution, and the forces of least
    ``R``-norm with the same generalized force."""

    def __init__(self, J, mu):
        self.J, self._Jt = J, None
        self.w = None if np.ndim(mu) == 0 else (np.min(mu) / mu)[:, None]
        self.stalled = None  # states whose multiplier updates take the range part of the residual

    @property
    def Jt(self):
        """``J^T (B, nv, m)``, contiguous (``J`` is a transposed view: its products are slow)."""
        if self._Jt is None:
            self._Jt = np.ascontiguousarray(np.swapaxes(self.J, 1, 2))
        return self._Jt

    def weigh(self, e):
        return e if self.w is None else self.w * e

    def dual(self, e, states=slice(None)):
        return _inf_norm(self.Jt[states] @ self.weigh(e))

    def range(self, e):
        """The residuals ``e (B, m, c)`` with those of the stalled states replaced by their
        ``W``-orthogonal projection on the range of ``J``: their multiplier update ``R^-1 e``
        then has no component in the null space of ``J^T`` (the drift of inconsistent
        constraints, which moves nothing), and the forces stay bounded."""
        if self.stalled is None:
            return e
        s = self.stalled
        d = np.ones((1, 1)) if self.w is None else np.sqrt(self.w)
        A = d * self.J[s]
        e = e.copy()
        e[s] = A @ (np.linalg.pinv(A) @ (d * e[s])) / d
        return e

    def least_norm(self, f, states=slice(None)):
        """``D pinv(J^T D) J^T f`` (``D = W^1/2``) of forces ``f (B, m, c)`` of the ``states``:
        the component of ``f`` in the null space of ``J^T`` (which moves nothing) removed,
        by numpy's pseudo-inverse (seed 003 Remark 2's metric when ``mu`` varies by row)."""
        Jt = self.Jt[states]
        if self.w is None:
            return np.linalg.pinv(Jt) @ (Jt @ f)
        d = np.sqrt(self.w)
        return d * (np.linalg.pinv(Jt * d.T) @ (Jt @ f))


def _iterate(update, f, max_iter, tol, ls):
    """Run ``x, f_pair, e, f = update(f)`` until every state has stopped (module docstring,
    "Stopping"): its primal residual ``|e|_inf <= tol`` (converged), or its dual residual
    ``ls.dual(e) <= tol`` with ``e`` changing by less than ``STALL |e|_inf`` since the previous
    iteration (least squares).

    ``(x, f_pair)`` is a consistent pair (``M x = h + J^T f_pair``) of constraint residual
    ``e`` (either sign), and ``update`` takes ``ls.range`` of the residual in its multiplier
    step; each state keeps the pair of the iteration where it stopped (the last one if never).
    Returns ``x, f, iterations, status`` (codes ``_CONVERGED``, ...).

    A stall needs ``|e_k| >= |e_k-1| / (1 + STALL)``: states whose residual drops, as consistent
    problems' do, skip the rest of the test. For inconsistent constraints the forces grow by
    ``R^-1 e`` per iteration in the null space of ``J^T``, and the rounding of ``J^T f`` with
    them (``eps |e| k / mu``), which would hold the dual residual above ``tol`` at a small
    ``mu``: a stalled state whose dual residual is still above ``tol`` goes on from the forces
    of least norm (``ls.least_norm``), with multiplier steps on the range part of its residual
    (``ls.range``): no drift, and the proximal steps correct what the projection rounded."""
    stop, least = np.zeros(len(f), dtype=int), np.zeros(len(f), dtype=bool)
    x_out = f_out = e_prev = primal_prev = ls.stalled = None
    for k in range(1, max_iter + 1):
        x, f_pair, e, f = update(f)
        if x_out is None:
            x_out, f_out = np.array(x), np.array(f_pair)
        running = stop == 0
        x_out[running], f_out[running] = x[running], f_pair[running]
        primal = _inf_norm(e)
        done = running & (primal <= tol)
        if primal_prev is not None and np.any(slow := primal * (1 + STALL) >= primal_prev):
            slow &= running & ~done
            if slow.any():
                states = np.flatnonzero(slow)
                states = states[_inf_norm(e[states] - e_prev[states]) <= STALL * primal[states]]
                optimal = ls.dual(e[states], states) <= tol
                least[states[optimal]], done[states[optimal]] = True, True
                drifting = states[~optimal]
                if len(drifting):  # from now on without the drift (ls.range), and without what it added
                    f[drifting] = ls.least_norm(f[drifting], drifting)
                    ls.stalled = drifting if ls.stalled is None else np.union1d(ls.stalled, drifting)
        stop[done] = k
        if np.all(stop > 0):
            break
        e_prev, primal_prev = e, primal
    status = np.where(stop == 0, _MAX_ITER, np.where(least, _LEAST_SQUARES, _CONVERGED))
    return x_out, f_out, np.where(stop > 0, stop, max_iter), status


def _dual_steps(evaluate, damped_osim, f, max_iter, tol, ls):
    """:func:`_iterate` of the proximal steps on the dual (proxLTL, proxPV): ``f+ = f + (J M^-1
    J^T + R)^-1 e(f)`` with ``x, e = evaluate(f)`` (``e = r - J x``), each iteration returning
    the pair after its step, so that ``max_iter`` steps are taken (the starting forces' residual
    is evaluated once before them)."""
    residual = [evaluate(f)[1]]

    def update(f):
        f_next = f + damped_osim @ ls.range(residual[0])
        x, residual[0] = evaluate(f_next)
        return x, f_next, residual[0], f_next

    return _iterate(update, f, max_iter, tol, ls)


def _inf_norm(x, initial=0.0):
    """``max(initial, max |x|)`` per state of ``x (B, ...)``."""
    return np.abs(x).max(axis=tuple(range(1, x.ndim)), initial=initial)


class _LTL:
    """proxLTL: the sparse KKT factorization (seed 000 Alg. 1) and the dual proximal steps."""

    def __init__(self, system, mu):
        self.chains, self.J = _chains(system.model), system.J
        self.mu = _row_damping(mu, system.m)
        self.U, self.D, self.Y, schur = _udu(system.M, self.chains, system.J)
        self.delassus = schur + np.diag(self.mu)  # J M^-1 J^T + R
        self.osim = _spd_inverse(self.delassus)  # the damped OSIM, from the Cholesky factor
        self.ls = _LeastSquares(system.J, mu)

    def solve(self, h, r, max_iter, tol, f0=None):
        """Proximal steps ``(J M^-1 J^T + R) (f+ - f) = r - J x(f)`` with ``x(f) = M^-1 (h + J^T f)``:
        seed 000 eq. 18 written on the true residual, so that rounding errors are fed back
        (iterative refinement; it matters when the Delassus matrix is singular)."""
        w = _back(self.U, h, self.chains) / self.D[:, :, None]  # D^-1 U^-1 h
        Yt = np.swapaxes(self.Y, 1, 2)

        def evaluate(f):
            x = _forth(self.U, w + Yt @ f, self.chains)
            return x, r - self.J @ x

        return _dual_steps(evaluate, self.osim, np.zeros_like(r) if f0 is None else f0, max_iter, tol, self.ls)

    def solve_exact(self, h, r, max_iter, tol):
        """The undamped KKT solve ``f = (J M^-1 J^T)^-1 (r - J M^-1 h)`` when the Delassus matrix
        is positive definite (the exact ``K^-1`` of seed 001 Prop. 1); proximal steps otherwise."""
        try:
            exact = _spd_inverse(self.delassus - np.diag(self.mu))
        except np.linalg.LinAlgError:
            return self.solve(h, r, max_iter, tol)[:2]
        w = _back(self.U, h, self.chains) / self.D[:, :, None]
        f = exact @ (r - self.Y @ (w * self.D[:, :, None]))
        return _forth(self.U, w + np.swapaxes(self.Y, 1, 2) @ f, self.chains), f


class _LTLs:
    """proxLTLs: augmented Lagrangian with ``M + J^T J / mu`` (seed 003 eq. 16).

    ``J^T J`` keeps the tree pattern for contacts with the world, and ``M + J^T J / mu`` is the
    CRBA of the augmented inertias (seed 003 eq. 24, :func:`_augmented_mass_matrix`), factored
    sparsely; loop closures couple branches: ``M + J^T J / mu`` dense and a dense Cholesky."""

    def __init__(self, system, mu):
        self.J, self.rho, self.ls = system.J, 1.0 / _row_damping(mu, system.m)[:, None], _LeastSquares(system.J, mu)
        if system.world_contacts_only:
            M_rho = _augmented_mass_matrix(system, self.rho[:, 0])
            self.chains = _chains(system.model)
            self.U, self.D, _, _ = _udu(M_rho, self.chains)
            self.solve_M = lambda x: _forth(self.U, _back(self.U, x, self.chains) / self.D[:, :, None], self.chains)
        else:
            L = np.linalg.cholesky(system.M + np.swapaxes(self.J, 1, 2) @ (self.rho * self.J))
            self.solve_M = lambda x: np.linalg.solve(np.swapaxes(L, 1, 2), np.linalg.solve(L, x))

    def solve(self, h, r, max_iter, tol, f0=None):
        Jt = np.swapaxes(self.J, 1, 2)

        def update(f):
            x = self.solve_M(h + Jt @ (f + self.rho * r))
            residual = self.J @ x - r
            f_next = f - self.rho * self.ls.range(residual)
            return x, f_next, residual, f_next

        return _iterate(update, np.zeros_like(r) if f0 is None else f0, max_iter, tol, self.ls)


def _supporting(model, joints):
    """Per tree level, the positions of its joints that support a body of ``joints`` (seed 003
    Alg. 2's ``S_E``: the bodies on their chains to the root)."""
    keep = np.zeros(model.njoints, dtype=bool)
    for j in joints:
        while j >= 0 and not keep[j]:
            keep[j] = True
            j = int(model.parents[j])
    return [np.flatnonzero(keep[J]) for J in model.tree.levels]


def _propagate_supported(model, sweep, dpA, support):
    """:func:`propagate_forces` over the supporting bodies only (the others carry no force)."""
    dpA = dpA.copy()
    for depth in range(len(sweep.levels) - 1, 0, -1):
        J, SJ, U, D, _ = sweep.levels[depth]
        p = support[depth]
        if len(p):
            Jp = J[p]
            np.add.at(dpA, (slice(None), model.parents[Jp]), dpA[:, Jp] - U[:, p] * (dot(SJ[:, p], dpA[:, Jp]) / D[p]))
    return dpA


def _accelerations_supported(model, kin, sweep, dpA, support):
    """The body accelerations ``(6, n, B)`` of :func:`forward_sweep` at the supporting bodies
    (zero elsewhere): seed 003 Alg. 2's reduced roll-out."""
    acc = np.zeros((6, model.njoints, kin.batch_size))
    for depth, (J, SJ, U, D, u) in enumerate(sweep.levels):
        p = support[depth]
        if not len(p):
            break
        Jp = J[p]
        ap = (
            np.broadcast_to(kin.a0, (6, len(p), kin.batch_size)) if depth == 0 else acc[:, model.parents[Jp]]
        ) + sweep.c[:, Jp]
        if depth == 0 and model.tree.free_flyer:
            u0 = u if dpA is None else u - matvec(transpose(SJ), dpA[:, 0])
            rhs = u0 - matvec(transpose(U), ap[:, 0])
            qdd = np.linalg.solve(D.transpose(2, 0, 1), rhs.T[..., None])[..., 0].T
            acc[:, 0] = ap[:, 0] + matvec(SJ, qdd)
            continue
        up = u[p] if dpA is None else u[p] - dot(SJ[:, p], dpA[:, Jp])
        acc[:, Jp] = ap + SJ[:, p] * ((up - dot(U[:, p], ap)) / D[p])
    return acc


def _augmented_mass_matrix(system, rho):
    """``M + J^T diag(rho) J (B, nv, nv)`` for contacts with the world by the CRBA on augmented
    inertias (seed 003 eq. 24): each contact body's world inertia gets ``K^T diag(rho) K`` (its
    rows ``K a_j``), the composite inertias ``Yc`` are subtree sums, and ``M[l, k] = oS_k . Yc
    oS_l`` for ``k`` moving ``l``, as :func:`mass_matrix` does."""
    model, kin = system.model, system.kin
    inertia = rigid_matrix(*world_inertias(model, kin))  # (6, 6, n, B)
    for rc, rows in zip(system.resolved, system.rows):
        ((j, K),) = rows.bodies
        inertia[:, :, j] += np.einsum("rcb,r,rdb->cdb", K, rho[rc.slice], K)
    for J in model.tree.levels[:0:-1]:  # composite inertias, leaves first: O(n)
        np.add.at(inertia, (slice(None), slice(None), model.parents[J]), inertia[:, :, J])
    F = np.einsum("cdkb,dkb->bkc", inertia[:, :, model.tree.dof_joint], kin.oS)  # Yc_joint(l) oS_l, (B, nv, 6)
    return _symmetric_from_lower(model, F @ kin.oS.transpose(2, 0, 1))


def _check_attached(rc, joint):
    if joint < 0:
        raise ValueError(f"contact on {rc.contact.frame!r} is attached to the universe: it constrains nothing")


class _CABA:
    """constrainedABA (seed 003 Alg. 1-3) in world coordinates.

    Body ``j`` of a contact with world rows ``K`` gets ``IA += K^T K / mu`` and bias force
    ``pA -= K^T (k / mu + f)``, with ``K a_j = k`` the rows in the ABA's accelerations
    (which include the ``-g`` of the universe). Later iterations only propagate the force
    change ``K^T (K a_j - k) / mu`` (seed 003 Alg. 2) and roll out again, both over the bodies
    that support a contact only (:func:`_supporting`); the joint accelerations of every body
    are rolled out once, from the forces of the iteration where the state stopped."""

    def __init__(self, system, kin, v, tau, mu):
        if not system.world_contacts_only:
            raise ValueError(
                "constrainedABA handles contacts with the world (seed 003 eq. 20c); "
                "use proxLTL, proxLTLs or proxPV for loop closures"
            )
        self.model, self.kin, self.tau = system.model, kin, tau
        self.rho, self.ls = 1.0 / _row_damping(mu, system.m)[:, None], _LeastSquares(system.J, mu)
        self.IA, self.pA, self.c = articulated_inertias(system.model, kin, v)
        self.inertia = self.IA.copy()  # before the augmentation, for the equation of motion
        self.blocks = []  # (joint, row slice, K (m_c, 6, B), bias rows (m_c, B))
        for rc, rows in zip(system.resolved, system.rows):
            ((j, K),) = rows.bodies
            _check_attached(rc, j)
            bias = np.einsum("rcb,cb->rb", K, kin.oa[:, j])  # K a_j at zero joint acceleration (with a0)
            self.blocks.append((j, rc.slice, K, bias))
            self.IA[:, :, j] += np.einsum("rcb,r,rdb->cdb", K, self.rho[rc.slice, 0], K)

    def _rows(self, acc):
        return np.concatenate([np.einsum("rcb,cb->rb", K, acc[:, j]) for j, _, K, _ in self.blocks]).T[..., None]

    def _forces(self, f):
        """World bias forces ``K^T f`` of the contacts, ``(6, n, B)``."""
        out = np.zeros_like(self.pA)
        for j, sl, K, _ in self.blocks:
            out[:, j] += np.einsum("rcb,br->cb", K, f[:, sl, 0])
        return out

    def solve(self, r, max_iter, tol, f0=None):
        k = r + np.concatenate([bias for *_, bias in self.blocks]).T[..., None]
        pA = self.pA - self._forces(self.rho * k)
        sweep = backward_sweep(self.model, self.kin, self.IA, pA, self.c, self.tau)
        start = np.zeros_like(r) if f0 is None else f0
        support = _supporting(self.model, [j for j, *_ in self.blocks])

        def update(f):  # the reduced sweeps: the pair's x is rolled out once, from the forces it used
            cold = f is start and f0 is None  # zero forces: nothing to propagate
            dpA = None if cold else _propagate_supported(self.model, sweep, -self._forces(f), support)
            residual = self._rows(_accelerations_supported(self.model, self.kin, sweep, dpA, support)) - k
            f_next = f - self.rho * self.ls.range(residual)
            return f, f_next, residual, f_next

        used, f, iterations, status = _iterate(update, start, max_iter, tol, self.ls)
        qdd, _ = forward_sweep(self.model, self.kin, sweep, propagate_forces(self.model, sweep, -self._forces(used)))
        return qdd.T[..., None], f, iterations, status

    def motion(self, x):
        """``M x - h (B, nv, 1)``."""
        return (_joint_forces(self.model, self.kin, self.inertia, self.pA, x[..., 0]) - self.tau)[..., None]


class _Support:
    """The constraint rows each body supports (seed 003 Sec. VI-A's ``ES(i)``: the rows of the
    constraints on its subtree, a loop closure's row on both bodies' chains), laid out per tree
    level as ``(row, joint)`` pairs: what the extended force propagator carries. Alg. 4's
    stacking ``K^A_parent = [K^A_parent; K^A_i P_i^T]`` then costs ``O(m d)`` over the tree and
    the Delassus terms ``K^A S D^-1 S^T K^A^T`` of each joint only couple its own rows:
    ``sum_j m_j^2 <= m^2 d``, ``O(n + m^2 d)`` in all instead of ``O(n m^2)``.

    Per level ``d`` (of ``model.tree.levels``): ``rows[d], pos[d] (P_d,)``, the row and the
    joint's position in the level of each pair (sorted by joint); ``up[d]``, the pair of the
    same row at the parent (level ``d - 1``); ``a[d], b[d]``, the pairs of pairs at one joint
    (the entries ``L[rows[a], rows[b]]`` its Delassus term fills, ``flat[d]`` their index in
    ``L.reshape(m * m)``); and whether ``up`` and ``flat`` repeat (only loop closures make them)."""

    def __init__(self, model, row_joints):
        self.m, parents, levels = len(row_joints), model.parents, model.tree.levels
        support = [[] for _ in range(model.njoints)]
        for r, joints in enumerate(row_joints):
            for j in joints:
                while j >= 0 and (not support[j] or support[j][-1] != r):  # rows come in order
                    support[j].append(r)
                    j = int(parents[j])
        self.rows, self.pos, self.up, self.a, self.b, self.flat, self.unique = [], [], [], [], [], [], []
        self.index = []  # per level, {(joint, row): pair}
        for d, J in enumerate(levels):
            counts = [len(support[j]) for j in J]
            rows = np.array([r for j in J for r in support[j]], dtype=int)
            pos = np.repeat(np.arange(len(J)), counts)
            index = {(int(J[p]), int(r)): i for i, (p, r) in enumerate(zip(pos, rows))}
            starts = np.concatenate(([0], np.cumsum(counts)))
            a = np.concatenate([np.repeat(np.arange(s, e), e - s) for s, e in zip(starts[:-1], starts[1:])] or [[]])
            b = np.concatenate([np.tile(np.arange(s, e), e - s) for s, e in zip(starts[:-1], starts[1:])] or [[]])
            a, b = a.astype(int), b.astype(int)
            up = None
            if d > 0:
                up = np.array([self.index[d - 1][(int(parents[J[p]]), int(r))] for p, r in zip(pos, rows)], dtype=int)
            flat = rows[a] * self.m + rows[b]
            # a row at two joints of a level (a loop closure) repeats its L entries and l0 entry
            self.unique.append((up is None or len(set(up.tolist())) == len(up), len(set(rows.tolist())) == len(rows)))
            self.rows.append(rows), self.pos.append(pos), self.up.append(up)
            self.a.append(a), self.b.append(b), self.flat.append(flat), self.index.append(index)
        self.depth = {int(j): d for d, J in enumerate(levels) for j in J}

    def pairs(self, joint, rows):
        """The pairs of ``rows`` at ``joint``, and its level."""
        d = self.depth[joint]
        return d, np.array([self.index[d][(joint, int(r))] for r in rows], dtype=int)


def _scatter(target, index, values, unique):
    """``target[index] += values``, with repeated indices summed when not ``unique``."""
    if unique:
        target[index] += values
    else:
        np.add.at(target, index, values)


def _body_rows(system, kin):
    """``(support, KA, bias)``: the rows each body supports (:class:`_Support`), each
    constraint row as maps of its bodies' world accelerations placed on those pairs (``KA``,
    per level ``(P_d, 6, B)``: ``rows = sum_j K_j a_j``), and the rows at zero joint
    acceleration under ``kin`` (``K a_j`` with the universe's ``a0``, ``(m, B)``)."""
    B = kin.batch_size
    row_joints = [[] for _ in range(system.m)]
    for rc, rows in zip(system.resolved, system.rows):
        for j, _ in rows.bodies:
            _check_attached(rc, j)
            for r in range(rc.slice.start, rc.slice.stop):
                row_joints[r].append(int(j))
    support = _Support(system.model, row_joints)
    KA = [np.zeros((len(rows), 6, B)) for rows in support.rows]
    bias = np.zeros((system.m, B))
    for rc, rows in zip(system.resolved, system.rows):
        for j, K in rows.bodies:
            d, pairs = support.pairs(int(j), range(rc.slice.start, rc.slice.stop))
            np.add.at(KA[d], pairs, K)  # a loop closure between two frames of one body hits a pair twice
            bias[rc.slice] += np.einsum("rcb,cb->rb", K, kin.oa[:, j])
    return support, KA, bias


def _pv_sweep(model, sweep, support, KA, depths=None):
    """The Popov-Vereshchagin terms of the constraint rows ``KA`` (per level, on the pairs of
    ``support``) over an ABA backward ``sweep``: ``(K0 (m, 6, B), L0 (m, m, B), l0 (m, B), KS)``
    with ``y = K0 a0 + L0 lambda + l0`` at the universe and ``KS`` per level the ``(K^A S)`` of
    its pairs (:class:`_PV`). ``depths``: the levels swept, deepest first (all by default); the
    rows reaching a level not swept stay in ``KA`` (cABA-OSIMf's base). Modifies ``KA``."""
    m, B = support.m, KA[0].shape[-1]
    K0, L0, l0, KS_levels = np.zeros((m, 6, B)), np.zeros((m * m, B)), np.zeros((m, B)), {}
    c = sweep.c
    for depth in range(len(sweep.levels) - 1, -1, -1) if depths is None else depths:
        J, SJ, U, D, u = sweep.levels[depth]
        K, rows, pos, (up_unique, flat_unique) = (
            KA[depth],
            support.rows[depth],
            support.pos[depth],
            support.unique[depth],
        )
        a, b = support.a[depth], support.b[depth]
        if depth == 0 and model.tree.free_flyer:  # one 6-dof joint
            KS = np.einsum("rcb,cdb->rdb", K, SJ)
            KSD = np.einsum("rdb,deb->reb", KS, np.linalg.inv(D.transpose(2, 0, 1)).transpose(1, 2, 0))
            K_up = K - np.einsum("reb,ceb->rcb", KSD, U)
            _scatter(L0, support.flat[0], np.einsum("reb,reb->rb", KSD[a], KS[b]), flat_unique)
            _scatter(l0, rows, np.einsum("rcb,cb->rb", K_up, c[:, 0]) + np.einsum("reb,eb->rb", KSD, u), False)
            np.add.at(K0, rows, K_up)
            KS_levels[depth] = KS
            continue
        Sp, Up, Dp = SJ[:, pos], U[:, pos], D[pos]
        KS = np.einsum("rcb,crb->rb", K, Sp)
        K_up = K - KS[:, None] * np.swapaxes(Up / Dp, 0, 1)
        _scatter(L0, support.flat[depth], KS[a] * KS[b] / Dp[a], flat_unique)
        _scatter(l0, rows, np.einsum("rcb,crb->rb", K_up, c[:, J][:, pos]) + KS * (u[pos] / Dp), flat_unique)
        KS_levels[depth] = KS
        if depth == 0:  # roots of a fixed base: the universe
            np.add.at(K0, rows, K_up)
        else:
            _scatter(KA[depth - 1], support.up[depth], K_up, up_unique)
    return K0, L0.reshape(m, m, B), l0, KS_levels


class _PV:
    """proxPV (seed 003 Alg. 4) in world coordinates.

    The ABA's backward sweep also carries, for the subtree of each body ``j``, the affine map
    from the body's acceleration and the constraint forces ``lambda`` to the constraint rows:
    ``y = K^A a_j + L^A lambda + l``. A joint passes to its parent ``K^A P^T``,
    ``L^A + K^A S D^-1 S^T K^A^T`` and ``l + K^A (P^T c + S D^-1 u)`` (``P = 1 - U D^-1 S^T``,
    ``U = IA S``), and the universe's acceleration closes it: ``y = K a0 + L lambda + l`` with
    ``L`` the Delassus matrix. ``L`` and ``l`` only ever add up, so each joint's terms go
    straight to the root's. Proximal steps on that dual, ``(L + mu) (lambda+ - lambda) =
    k - y(lambda)``, then one forward sweep with the joint forces ``u + S^T K^A^T lambda``.
    Each body carries only the rows it supports (:class:`_Support`, Alg. 4's stacking):
    ``O(n + m^2 d)``; loop closures come as they are (a row with two bodies enters both
    chains, the common ancestor sums them)."""

    def __init__(self, system, kin, v, tau, mu):
        model = self.model = system.model
        self.kin, self.tau, self.mu = kin, tau, _row_damping(mu, system.m)
        self.ls = _LeastSquares(system.J, mu)
        IA, pA, c = articulated_inertias(model, kin, v)
        self.inertia, self.bias_forces = IA.copy(), pA.copy()  # for the equation of motion
        self.sweep = backward_sweep(model, kin, IA, pA, c, tau)
        B = len(v)
        self.support, KA, self.bias = _body_rows(system, kin)
        K0, L0, l0, self.KS = _pv_sweep(model, self.sweep, self.support, KA)
        self.delassus = L0.transpose(2, 0, 1)  # (B, m, m)
        self.free = (np.einsum("rcb,cb->rb", K0, kin.a0[:, 0] * np.ones((1, B))) + l0).T[..., None]

    def solve(self, r, max_iter, tol, f0=None):
        k = r + self.bias.T[..., None]
        damped = _spd_inverse(self.delassus + np.diag(self.mu))

        def evaluate(f):
            return f, k - self.free - self.delassus @ f

        _, f, iterations, status = _dual_steps(
            evaluate, damped, np.zeros_like(r) if f0 is None else f0, max_iter, tol, self.ls
        )
        return self.rollout(f[..., 0]), f, iterations, status

    def rollout(self, f):
        """The forward sweep under the constraint forces ``f (B, m)``: ``(B, nv, 1)``."""
        levels = []
        for depth, (J, SJ, U, D, u) in enumerate(self.sweep.levels):
            KS, rows = self.KS[depth], self.support.rows[depth]
            if depth == 0 and self.model.tree.free_flyer:
                u = u + np.einsum("reb,br->eb", KS, f[:, rows])
            elif len(rows):
                u = u.copy()
                np.add.at(u, self.support.pos[depth], KS * f[:, rows].T)
            levels.append((J, SJ, U, D, u))
        qdd, _ = forward_sweep(self.model, self.kin, Sweep(tuple(levels), self.sweep.c))
        return qdd.T[..., None]

    def motion(self, x):
        """``M x - h (B, nv, 1)``."""
        return (_joint_forces(self.model, self.kin, self.inertia, self.bias_forces, x[..., 0]) - self.tau)[..., None]


def _solve(system, algorithm, h, r, mu, max_iter, tol, aba=None, f0=None):
    """``x, f, iterations, status, ls, motion`` with ``M x = h + J^T f``, ``J x = r`` (``h (B,
    nv, c)``, ``r (B, m, c)``), the proximal iterations started at ``f0`` (zero if None);
    ``ls``: the least-squares problem (:class:`_LeastSquares`), ``motion(x) = M x - h``."""
    if algorithm in ("proxPV", "constrainedABA"):
        solver = aba(_PV if algorithm == "proxPV" else _CABA)
        return (*solver.solve(r, max_iter, tol, f0), solver.ls, solver.motion)
    if algorithm == "kkt":
        out, ls = _kkt(system, h, r), _LeastSquares(system.J, 1.0)
    else:
        solver = (_LTL if algorithm == "proxLTL" else _LTLs)(system, mu)
        out, ls = solver.solve(h, r, max_iter, tol, f0), solver.ls
    return (*out, ls, lambda x: system.M @ x - h)


def _kkt(system, h, r):
    """Plain KKT solve (no damping): refuses rank-deficient constraint Jacobians."""
    J = system.J
    rank = np.linalg.matrix_rank(J)
    if np.any(rank < system.m):
        b = int(np.argmax(rank < system.m))
        raise SingularConstraintError(
            f"the KKT matrix is singular: the constraint Jacobian has rank {int(rank[b])} < {system.m} rows "
            f"(state {b}; redundant or singular contacts); use a proximal algorithm (proxLTL, proxLTLs, constrainedABA)"
        )
    Minv_Jt = np.linalg.solve(system.M, np.swapaxes(J, 1, 2))
    Minv_h = np.linalg.solve(system.M, h)
    f = np.linalg.solve(J @ Minv_Jt, r - J @ Minv_h)
    ones = np.ones(len(h), dtype=int)
    return Minv_h + Minv_Jt @ f, f, ones, ones * _CONVERGED


# ----------------------------------------------------------------------------- public API


def _inputs(model, q, v, x=None, name="tau"):
    specs = [("q", q, model.nq), ("v", v, model.nv)] + ([] if x is None else [(name, x, model.nv)])
    return batch(*specs)


def _warm_start(f0, m, shape):
    """Starting forces ``(..., m)`` (or ``(m,)`` for every state) as ``(B, m, 1)``, or None."""
    if f0 is None:
        return None
    f0 = np.asarray(f0, dtype=float)
    if f0.shape not in ((m,), shape + (m,)):
        raise DimensionError(
            f"warm_start: expected shape ({m},) or {shape + (m,)} (forces of these contacts), got {f0.shape}"
        )
    if not np.all(np.isfinite(f0)):
        raise ValueError("warm_start: the starting forces must be finite")
    return np.ascontiguousarray(np.broadcast_to(f0, shape + (m,))).reshape(-1, m, 1)


def _joint_forces(model, kin, inertia, bias, a):
    """``M a + b (B, nv)``: the RNEA over the ABA's kinematics ``kin`` (at zero joint
    acceleration, with ``a0``) and its world inertias ``(6, 6, n, B)`` and bias forces
    ``v x* I v (6, n, B)``: the equation of motion of the ABA-based algorithms."""
    t = model.tree
    acc = kin.oa + tree_sum(t.support, kin.oS * a.T)
    return dot(kin.oS, tree_sum(t.descendants, matvec(inertia, acc) + bias)[:, t.dof_joint]).T


def _solution(system, solved, r, h, tol, shape):
    """The :class:`Solution` of ``solved = _solve(...)``. Least-squares forces are reduced to
    their least ``R``-norm; the status is checked on the residuals recomputed from the
    returned pair (module docstring, "Stopping")."""
    x, f, iterations, status, ls, motion = solved
    least = status == _LEAST_SQUARES
    if least.any():
        f[least] = ls.least_norm(f[least], least)
    e = system.J @ x - r
    Jt_ef = ls.Jt @ np.concatenate((ls.weigh(e), f), axis=2)
    Jte, Jtf = Jt_ef[..., : e.shape[2]], Jt_ef[..., e.shape[2] :]  # J^T W e, J^T f
    primal, dual = _inf_norm(e), _inf_norm(Jte)
    eom = _inf_norm(motion(x) - Jtf)
    holds = eom <= tol * _inf_norm(np.concatenate((h, Jtf), axis=1), 1.0)  # relative to max(1, |h|, |J^T f|)
    converged = holds & (primal <= tol)
    if np.all(converged):
        final = np.zeros(len(x), dtype=int)
    else:
        final = np.where(status == _MAX_ITER, _MAX_ITER, _INACCURATE)
        final[holds & least & (dual <= tol)] = _LEAST_SQUARES
        final[converged] = _CONVERGED
    return Solution(
        unbatch(x[..., 0], shape),
        unbatch(f[..., 0], shape),
        unbatch(iterations, shape),
        unbatch(primal, shape),
        unbatch(_STATUS_NAMES[final], shape)[()],
        unbatch(dual, shape),
        unbatch(eom, shape),
    )


def constrained_dynamics(
    model, q, v, tau, contacts, mu=1e-4, max_iter=30, tol=1e-10, algorithm="proxLTL", warm_start=None
):
    """Accelerations and contact forces: a :class:`Solution` ``(a, f)``.

    ``a (..., nv)``; ``f (..., m)`` stacks the contacts in list order, each in its own frame
    and components (6D as (linear, angular)), the force on the robot. ``mu > 0``: proximal
    damping, a number or one per constraint row ``(m,)``; iterations stop as the module
    docstring says ("Stopping") or at ``max_iter``. ``warm_start``: forces ``(m,)`` or
    ``(..., m)`` to start the iterations from (e.g. the previous time step's); zero if None,
    unused by ``"kkt"``. From the exact forces the iterations stop at the first.
    """
    _settings(mu, max_iter, tol, algorithm)
    (q, v, tau), shape = _inputs(model, q, v, tau)
    system = _System(model, q, v, contacts)
    f0 = _warm_start(warm_start, system.m, shape)
    h = (tau - rnea(model, q, v, np.zeros_like(v)))[..., None]
    r = (system.target - system.drift)[..., None]
    aba = lambda cls: cls(system, forward(model, q, v, np.zeros_like(v), gravity=True), v, tau, mu)  # noqa: E731
    solved = _solve(system, algorithm, h, r, mu, max_iter, tol, aba, f0)
    return _solution(system, solved, r, h, tol, shape)


def impulse_dynamics(model, q, v, contacts, mu=1e-4, max_iter=30, tol=1e-10, algorithm="proxLTL", warm_start=None):
    """Velocity after a fully inelastic impact and the contact impulses: ``(v_plus, impulse)``.

    ``M dv = J^T impulse`` and ``J (v + dv) = 0`` (seed 004 eq. 9-13); ``impulse`` is laid out
    like the forces of :func:`constrained_dynamics`, and so is ``warm_start``, the impulses to
    start the iterations from. The report (:class:`Solution`) is that of ``dv``."""
    _settings(mu, max_iter, tol, algorithm)
    (q, v), shape = _inputs(model, q, v)
    system = _System(model, q, v, contacts)
    f0 = _warm_start(warm_start, system.m, shape)
    r = -system.velocity[..., None]
    zeros = np.zeros_like(v)
    aba = lambda cls: cls(system, forward(model, q, zeros, zeros, gravity=False), zeros, zeros, mu)  # noqa: E731
    h = zeros[..., None]
    sol = _solution(system, _solve(system, algorithm, h, r, mu, max_iter, tol, aba, f0), r, h, tol, shape)
    return Solution(unbatch(v, shape) + sol[0], sol[1], *_report(sol))


def _report(sol):
    return sol.iterations, sol.residual, sol.status, sol.dual_residual, sol.eom_residual


def delassus(model, q, contacts, mu=0.0):
    """The damped Delassus matrix ``J M^-1 J^T + mu 1`` and its inverse, the damped OSIM,
    from the proxLTL factorization: ``(delassus, osim)``, each ``(..., m, m)``. ``mu >= 0``, a
    number or one per constraint row (``J M^-1 J^T + diag(mu)``). Redundant or singular
    contacts leave ``J M^-1 J^T`` singular: with ``mu = 0`` it then has no inverse and
    :class:`SingularConstraintError` says so."""
    mu = _damping(mu, zero=True)
    (q,), shape = batch(("q", q, model.nq))
    system = _System(model, q, np.zeros((len(q), model.nv)), contacts)
    chains = _chains(model)
    _, _, _, schur = _udu(system.M, chains, system.J)
    damped = schur + np.diag(_row_damping(mu, system.m))
    try:
        osim = _spd_inverse(damped)
    except np.linalg.LinAlgError:
        raise SingularConstraintError(_singular_delassus(system, damped, mu)) from None
    return unbatch(damped, shape), unbatch(osim, shape)


def _singular_delassus(system, damped, mu):
    rank = np.linalg.matrix_rank(system.J)
    deficient = rank < system.m
    b = int(np.argmax(deficient)) if np.any(deficient) else int(np.argmin(np.linalg.eigvalsh(damped)[:, 0]))
    cause = (
        f"the constraint Jacobian has rank {int(rank[b])} < {system.m} rows (redundant or singular contacts)"
        if deficient[b]
        else "the contacts are at a singular configuration"
    )
    matrix = "J M^-1 J^T" if np.all(np.asarray(mu) == 0) else "J M^-1 J^T + diag(mu)"
    return (
        f"the Delassus matrix {matrix} is singular at state {b}: {cause}, so it has no inverse (OSIM); "
        f"pass a damping mu > 0 (e.g. mu=1e-6) for the damped OSIM (J M^-1 J^T + mu 1)^-1"
    )


OSIM_ALGORITHMS = ("cABA-OSIM", "cABA-OSIMf", "proxPV", "proxLTL")


def damped_osim(model, q, contacts, mu, algorithm="cABA-OSIM"):
    """The damped OSIM (the damped Delassus inverse) ``(J M^-1 J^T + mu 1)^-1``, ``(..., m, m)``,
    for ``mu > 0``, by one of ``OSIM_ALGORITHMS``:

    - ``cABA-OSIM`` (seed 003 Alg. 5, eq. 40): with ``rho = 1/mu``, the inertias of the
      constrained bodies augmented by ``rho K^T K`` (the articulated inertias of ``M + rho J^T
      J``), the Popov-Vereshchagin sweep of the constraint rows gives ``J (M + rho J^T J)^-1
      J^T``, and the matrix inversion lemma the OSIM ``rho 1 - rho^2 J (M + rho J^T J)^-1 J^T``
      without factorizing an ``m x m`` matrix. Contacts with the world only (a loop
      closure's ``rho J^T J`` couples two bodies);
      The subtraction cancels digits like ``rho / |OSIM|``: about 1e-8 relative at ``mu =
      1e-4`` on Solo12's light links, 1e-11 on ANYmal and Talos;
      Each body carries only the rows it supports (:class:`_Support`): ``O(n + m^2 d)``, not
      yet the ``O(n + m^2)`` of the paper's PV-OSIMr, which sums the chains between branching
      bodies into 6x6 extended force propagators and forms each pair of rows once;
    - ``cABA-OSIMf`` (seed 003 Sec. VI-B), for a floating base: the same with the Delassus
      matrix as block-diagonal branch terms (the sweep below the base, where a body carries
      the rows of its branch only) plus the base's rank-6 update;
    - ``proxPV``: the Delassus matrix of the Popov-Vereshchagin sweep, damped and inverted;
    - ``proxLTL``: the same from the sparse factorization (:func:`delassus`).

    ``mu``: a number or one per constraint row, ``(J M^-1 J^T + diag(mu))^-1`` (seed 003
    Remark 2; ``rho = 1/mu`` row by row above)."""
    if algorithm not in OSIM_ALGORITHMS:
        raise ValueError(f"unknown algorithm {algorithm!r}; expected one of {', '.join(OSIM_ALGORITHMS)}")
    mu = _damping(mu)
    if algorithm == "proxLTL":
        return delassus(model, q, contacts, mu)[1]
    (q,), shape = batch(("q", q, model.nq))
    zeros = np.zeros((len(q), model.nv))
    system = _System(model, q, zeros, contacts)
    kin, mu = system.kin, _row_damping(mu, system.m)
    if algorithm == "proxPV":
        L = _PV(system, kin, zeros, zeros, mu).delassus
        return unbatch(_spd_inverse(L + np.diag(mu)), shape)
    if not system.world_contacts_only:
        raise ValueError(f"{algorithm} handles contacts with the world; use proxPV or proxLTL for loop closures")
    if algorithm == "cABA-OSIMf" and not model.tree.free_flyer:
        raise ValueError("cABA-OSIMf splits the constraints at a floating base; use cABA-OSIM on a fixed base")
    rho = 1.0 / mu
    IA, pA, c = articulated_inertias(model, kin, zeros)
    support, KA, _ = _body_rows(system, kin)
    for rc, rows in zip(system.resolved, system.rows):  # each row on one body: the inertias of M + J^T R^-1 J
        ((j, K),) = rows.bodies
        IA[:, :, j] += np.einsum("rcb,r,rdb->cdb", K, rho[rc.slice], K)
    sweep = backward_sweep(model, kin, IA, np.zeros_like(pA), np.zeros_like(c), zeros)
    deepest = range(len(sweep.levels) - 1, -1, -1)
    if algorithm == "cABA-OSIM":
        L_rho = _pv_sweep(model, sweep, support, KA, deepest)[1]
    else:  # the branches' block-diagonal terms, then the base's rank-6 update (seed 003 eq. 41)
        L_rho = _pv_sweep(model, sweep, support, KA, deepest[:-1])[1] + _pv_sweep(model, sweep, support, KA, (0,))[1]
    osim = np.diag(rho) - rho[:, None] * rho * L_rho.transpose(2, 0, 1)  # with L_rho = J M_rho^-1 J^T
    return unbatch(osim, shape)


# ----------------------------------------------------------------------------- the pieces of the lifted OCP


def _stack(blocks):
    """Per-contact ``(m_c, nv, B)`` blocks -> ``(B, m, nv)``."""
    return np.concatenate(blocks).transpose(2, 0, 1)


def _acceleration_derivatives(system, kin):
    """``d alpha/dq, d alpha/dv (B, m, nv)`` of ``alpha = J a + drift - alpha*`` at ``kin``'s
    velocity and acceleration, with ``alpha* = -kp e - kd J v``."""
    dq, dv = [], []
    for rc, rows in zip(system.resolved, system.rows):
        d = row_derivatives(system.model, kin, rc, rows)
        c = rc.contact
        dq.append(
            d.acceleration_dq
            + c.kd * d.velocity_dq
            + (c.kp * d.error_dq if d.error_dq is not None and c.kp > 0 else 0.0)
        )
        dv.append(d.acceleration_dv + c.kd * rows.J)
    return _stack(dq), _stack(dv)


def _velocity_derivative(system, kin):
    """``d (J v)/dq (B, m, nv)`` at ``kin``'s velocity."""
    return _stack(
        [row_derivatives(system.model, kin, rc, rows).velocity_dq for rc, rows in zip(system.resolved, system.rows)]
    )


def _force_derivative(system, f):
    """``d (J^T f)/dq (B, nv, nv)`` for forces ``f (B, m)`` held in their contact frames."""
    return sum(
        generalized_force_derivative(system.model, system.kin, rc, rows, f[:, rc.slice].T)
        for rc, rows in zip(system.resolved, system.rows)
    )


def contact_jacobian(model, q, contacts):
    """``J (..., m, nv)``: the contact rows' Jacobian (velocity rows ``J v``)."""
    (q,), shape = batch(("q", q, model.nq))
    return unbatch(_System(model, q, np.zeros((len(q), model.nv)), contacts).J, shape)


def contact_acceleration(model, q, v, a, contacts):
    """``alpha = J a + drift - alpha* (..., m)``: zero when the contacts hold (seed 004 eq. 5)."""
    (q, v, a), shape = _inputs(model, q, v, a, "a")
    system = _System(model, q, v, contacts)
    return unbatch(np.einsum("bmn,bn->bm", system.J, a) + system.drift - system.target, shape)


def contact_acceleration_derivatives(model, q, v, a, contacts):
    """Derivatives of :func:`contact_acceleration`: ``(d_dq, d_dv, d_da)``, each ``(..., m, nv)``."""
    (q, v, a), shape = _inputs(model, q, v, a, "a")
    system = _System(model, q, v, contacts)
    d_dq, d_dv = _acceleration_derivatives(system, forward(model, q, v, a, gravity=False))
    return unbatch(d_dq, shape), unbatch(d_dv, shape), unbatch(system.J, shape)


def contact_velocity(model, q, v, contacts):
    """``J v (..., m)``: the contact rows' velocity (zero after an inelastic impact, seed 004 eq. 12)."""
    (q, v), shape = _inputs(model, q, v)
    return unbatch(_System(model, q, v, contacts).velocity, shape)


def contact_velocity_derivatives(model, q, v, contacts):
    """Derivatives of :func:`contact_velocity`: ``(d_dq, d_dv)``, each ``(..., m, nv)``."""
    (q, v), shape = _inputs(model, q, v)
    system = _System(model, q, v, contacts)
    return unbatch(_velocity_derivative(system, system.kin), shape), unbatch(system.J, shape)


def _forces(model, f, m, shape_name="f"):
    f = np.asarray(f, dtype=float)
    if f.ndim == 0 or f.shape[-1] != m:
        raise DimensionError(f"{shape_name}: expected shape ({m},) or (B, {m}) for these contacts, got {f.shape}")
    return f


def contact_inverse_dynamics(model, q, v, a, f, contacts):
    """``ID(q, v, a, f) = rnea(q, v, a) - J^T f (..., nv)`` (seed 004 eq. 16)."""
    m = dimension(resolve(model, contacts))
    (q, v, a, f), shape = batch(
        ("q", q, model.nq), ("v", v, model.nv), ("a", a, model.nv), ("f", _forces(model, f, m), m)
    )
    system = _System(model, q, v, contacts)
    return unbatch(rnea(model, q, v, a) - np.einsum("bmn,bm->bn", system.J, f), shape)


def contact_inverse_dynamics_derivatives(model, q, v, a, f, contacts):
    """Derivatives of :func:`contact_inverse_dynamics`: ``(d_dq, d_dv, d_da, d_df)``, the
    first three ``(..., nv, nv)``, ``d_df = -J^T (..., nv, m)``; ``f`` held in its frames."""
    m = dimension(resolve(model, contacts))
    (q, v, a, f), shape = batch(
        ("q", q, model.nq), ("v", v, model.nv), ("a", a, model.nv), ("f", _forces(model, f, m), m)
    )
    system = _System(model, q, v, contacts)
    dtau_dq, dtau_dv, M = derivatives_batch(model, q, v, a)
    out = (dtau_dq - _force_derivative(system, f), dtau_dv, M, -np.swapaxes(system.J, 1, 2))
    return tuple(unbatch(x, shape) for x in out)


def impulse_inverse_dynamics(model, q, dv, impulse, contacts):
    """``M(q) dv - J^T impulse (..., nv)`` (seed 004 eq. 11)."""
    m = dimension(resolve(model, contacts))
    (q, dv, impulse), shape = batch(
        ("q", q, model.nq), ("dv", dv, model.nv), ("impulse", _forces(model, impulse, m, "impulse"), m)
    )
    system = _System(model, q, np.zeros_like(dv), contacts)
    return unbatch(np.einsum("bij,bj->bi", system.M, dv) - np.einsum("bmn,bm->bn", system.J, impulse), shape)


def impulse_inverse_dynamics_derivatives(model, q, dv, impulse, contacts):
    """Derivatives of :func:`impulse_inverse_dynamics`: ``(d_dq, d_ddv = M, d_dimpulse = -J^T)``."""
    m = dimension(resolve(model, contacts))
    (q, dv, impulse), shape = batch(
        ("q", q, model.nq), ("dv", dv, model.nv), ("impulse", _forces(model, impulse, m, "impulse"), m)
    )
    zeros = np.zeros_like(dv)
    system = _System(model, q, zeros, contacts)
    dM_dq, _, M = derivatives_batch(model, q, zeros, dv, gravity=False)
    out = (dM_dq - _force_derivative(system, impulse), M, -np.swapaxes(system.J, 1, 2))
    return tuple(unbatch(x, shape) for x in out)


# ----------------------------------------------------------------------------- derivatives (seed 001 Prop. 1)


def _split(x, f, sizes):
    cuts = np.cumsum(sizes)[:-1]
    return np.split(x, cuts, axis=-1), np.split(f, cuts, axis=-1)


def _derivative_solve(ltl, h, r, max_iter, tol):
    """Solve ``M X = h + J^T F``, ``J X = r`` for matrix right-hand sides (the KKT of Prop. 1)."""
    scale = max(1.0, float(np.max(np.abs(h), initial=0.0)), float(np.max(np.abs(r), initial=0.0)))
    return ltl.solve_exact(h, r, max_iter, tol * scale)


def constrained_dynamics_derivatives(model, q, v, tau, contacts, mu=1e-4, max_iter=30, tol=1e-10):
    """Derivatives of :func:`constrained_dynamics`: ``(da_dq, da_dv, da_dtau, df_dq, df_dv,
    df_dtau)``, ``da_* (..., nv, nv)``, ``df_* (..., m, nv)`` (seed 001 Prop. 1, solved with
    the proxLTL factorization)."""
    _settings(mu, max_iter, tol, "proxLTL")
    (q, v, tau), shape = _inputs(model, q, v, tau)
    system = _System(model, q, v, contacts)
    h = (tau - rnea(model, q, v, np.zeros_like(v)))[..., None]
    r = (system.target - system.drift)[..., None]
    ltl = _LTL(system, mu)
    a, f, *_ = ltl.solve(h, r, max_iter, tol)
    a, f = a[..., 0], f[..., 0]
    dtau_dq, dtau_dv, _ = derivatives_batch(model, q, v, a)
    dID_dq = dtau_dq - _force_derivative(system, f)
    dalpha_dq, dalpha_dv = _acceleration_derivatives(system, forward(model, q, v, a, gravity=False))
    nv = model.nv
    eye = np.broadcast_to(np.eye(nv), dtau_dq.shape)
    H = np.concatenate((-dID_dq, -dtau_dv, eye), axis=-1)
    R = np.concatenate((-dalpha_dq, -dalpha_dv, np.zeros_like(dalpha_dq)), axis=-1)
    X, F = _derivative_solve(ltl, H, R, max_iter, tol)
    (da_dq, da_dv, da_dtau), (df_dq, df_dv, df_dtau) = _split(X, F, (nv, nv, nv))
    return tuple(unbatch(x, shape) for x in (da_dq, da_dv, da_dtau, df_dq, df_dv, df_dtau))


def impulse_dynamics_derivatives(model, q, v, contacts, mu=1e-4, max_iter=30, tol=1e-10):
    """Derivatives of :func:`impulse_dynamics`: ``(dvplus_dq, dvplus_dv, dimpulse_dq,
    dimpulse_dv)``: Prop. 1 on ``M dv - J^T Lambda = 0``, ``J (v + dv) = 0``."""
    _settings(mu, max_iter, tol, "proxLTL")
    (q, v), shape = _inputs(model, q, v)
    system = _System(model, q, v, contacts)
    zeros = np.zeros_like(v)
    ltl = _LTL(system, mu)
    dv, impulse, *_ = ltl.solve(zeros[..., None], -system.velocity[..., None], max_iter, tol)
    dv, impulse = dv[..., 0], impulse[..., 0]
    dM_dq, _, _ = derivatives_batch(model, q, zeros, dv, gravity=False)
    dE1_dq = dM_dq - _force_derivative(system, impulse)
    dE2_dq = _velocity_derivative(system, forward(model, q, v + dv, zeros, gravity=False))
    nv = model.nv
    H = np.concatenate((-dE1_dq, np.zeros_like(dE1_dq)), axis=-1)
    R = np.concatenate((-dE2_dq, -system.J), axis=-1)
    X, F = _derivative_solve(ltl, H, R, max_iter, tol)
    (ddv_dq, ddv_dv), (di_dq, di_dv) = _split(X, F, (nv, nv))
    return tuple(unbatch(x, shape) for x in (ddv_dq, np.eye(nv) + ddv_dv, di_dq, di_dv))
