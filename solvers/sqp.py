"""A Gauss-Newton SQP whose subproblems OSQP solves, in the spirit of mim_solvers' constrained
SQP: the baseline of a sparse QP solver on the whole program, without Riccati structure.

On an NLP ``min 1/2 r(x)^T W r(x)`` subject to ``lbg <= g(x) <= ubg`` and ``lbx <= x <= ubx``
(:class:`ocp.nlp.NLP`), each iteration solves the QP

    min  1/2 dx^T (J^T W J) dx + (J^T W r)^T dx
    s.t. lbg - g <= G dx <= ubg - g,   lbx - x <= dx <= ubx - x

with ``J = dr/dx`` and ``G = dg/dx`` (the Gauss-Newton Hessian: no second derivatives of the
constraints), warm-started from the previous step and multipliers, and takes the step cut
back until the l1 merit ``f + mu |constraint violation|_1`` decreases (``mu`` above the largest
multiplier). It stops when the step (infinity norm, relative to the iterate's) and the
constraint violation (l1 norm) are below ``tol`` (the result's ``measure``: their maximum);
OSQP, a first-order method, leaves noise of order its own tolerance in the steps.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import casadi as ca
import numpy as np
import osqp
import scipy.sparse as sparse

from .nlp_result import NLPResult


@dataclass(frozen=True)
class SQPOptions:
    """``tol`` on the step (infinity norm, relative) and the constraint violation (l1); ``max_iterations``;
    ``max_backtracks``; OSQP's ``qp_tol`` (absolute and relative) and ``qp_max_iterations``."""

    tol: float = 1e-6
    max_iterations: int = 200
    max_backtracks: int = 20
    qp_tol: float = 1e-8
    qp_max_iterations: int = 50_000


def solve_sqp(nlp, options: SQPOptions = SQPOptions()) -> NLPResult:
    """Solve ``nlp`` (an :class:`ocp.nlp.NLP`) from its initial guess (module docstring)."""
    x_sym, r, g = nlp.problem["x"], nlp.residual, nlp.problem["g"]
    W = ca.DM(nlp.weights)
    J = ca.jacobian(r, x_sym)
    hessian = ca.triu(J.T @ ca.diag(W) @ J)
    evaluate = ca.Function("sqp", [x_sym], [r, J.T @ (W * r), hessian, g, ca.jacobian(g, x_sym)])
    values = ca.Function("merit", [x_sym], [0.5 * ca.dot(W * r, r), g])
    n = int(x_sym.numel())
    x = np.clip(nlp.x0, nlp.lbx, nlp.ubx)
    start, solver, history = time.perf_counter(), None, {"cost": [], "violation": [], "step": []}
    status, mu = "max_iterations", 1.0
    for _ in range(options.max_iterations):
        res, grad, P, gx, G = evaluate(x)
        P, G = _csc(P), _csc(G)
        A = sparse.vstack([G, sparse.identity(n, format="csc")], format="csc")
        lower = np.concatenate((nlp.lbg - _vec(gx), nlp.lbx - x))
        upper = np.concatenate((nlp.ubg - _vec(gx), nlp.ubx - x))
        if solver is None:
            solver = osqp.OSQP()
            solver.setup(
                P,
                _vec(grad),
                A,
                lower,
                upper,
                verbose=False,
                eps_abs=options.qp_tol,
                eps_rel=options.qp_tol,
                max_iter=options.qp_max_iterations,
                polishing=True,
            )
        else:
            solver.update(q=_vec(grad), l=lower, u=upper, Px=P.data, Ax=A.data)
        cost, violation = _merit_parts(values, x, nlp)
        history["cost"].append(cost)
        history["violation"].append(violation)
        qp = solver.solve(raise_error=False)  # a failed subproblem is a status
        if qp.info.status_val not in (1, 2):  # solved, or solved inaccurately
            status = "qp_failed"
            break
        dx, y = np.asarray(qp.x), np.asarray(qp.y)
        step = float(np.max(np.abs(dx), initial=0.0))
        history["step"].append(step)
        if step <= options.tol * max(1.0, float(np.max(np.abs(x)))) and violation <= options.tol:
            status = "converged"
            break
        mu = max(mu, 1.1 * float(np.max(np.abs(y), initial=0.0)))
        merit, alpha = cost + mu * violation, 1.0
        for _ in range(options.max_backtracks):
            trial_cost, trial_violation = _merit_parts(values, x + alpha * dx, nlp)
            if trial_cost + mu * trial_violation < merit or alpha * step <= options.tol:
                break
            alpha *= 0.5
        x = x + alpha * dx
        solver.warm_start(x=dx, y=y)
    cost, violation = _merit_parts(values, x, nlp)
    scale = max(1.0, float(np.max(np.abs(x))))
    history["measure"] = list(
        np.maximum(np.array(history["step"]) / scale, history["violation"][: len(history["step"])])
    )
    measure = history["measure"][-1] if history["measure"] else np.nan
    elapsed = time.perf_counter() - start
    return NLPResult(status, status, len(history["step"]), cost, violation, measure, elapsed, x, history)


def _merit_parts(values, x, nlp):
    """``(cost, l1 constraint violation)`` at ``x``."""
    cost, g = values(x)
    g = _vec(g)
    violation = np.sum(np.maximum(nlp.lbg - g, 0) + np.maximum(g - nlp.ubg, 0))
    violation += np.sum(np.maximum(nlp.lbx - x, 0) + np.maximum(x - nlp.ubx, 0))
    return float(cost), float(violation)


def _vec(x) -> np.ndarray:
    return np.asarray(ca.DM(x)).ravel()


def _csc(m) -> sparse.csc_matrix:
    """A CasADi sparse matrix as SciPy CSC, keeping its structural nonzeros (OSQP's updates
    need a fixed pattern)."""
    m = ca.DM(m)
    rows, cols = m.sparsity().get_triplet()
    return sparse.csc_matrix((np.asarray(m.nonzeros()), (rows, cols)), shape=m.shape)
