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

The subproblems are solved inexactly far from the solution: OSQP's tolerance is the previous
measure times ``qp_forcing``, between a floor and ``qp_tol_max`` (an inexact Newton method's
forcing sequence); the floor starts at ``qp_tol`` and becomes ten times the tolerance of a
subproblem that OSQP did not solve to it (the accuracy OSQP reaches on this problem). OSQP's step
size ``rho`` adapts every ``qp_rho_interval`` iterations (OSQP adapts it by its setup time
otherwise, which after a warm start is almost never). A subproblem that ends at OSQP's iteration
limit or inaccurate still gives its step when the line search finds it decreases the merit;
otherwise, or when OSQP finds the subproblem infeasible, the SQP ends with the status
``qp_failed``, its message naming OSQP's status. A full step that the merit refuses is corrected
once by a second-order correction before it is cut back (it may raise the violation of curved
constraints, the Maratos effect).
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
    ``max_backtracks``; OSQP's tolerance (absolute and relative) from ``qp_tol_max`` down to at least
    ``qp_tol``, ``qp_forcing`` times the previous measure in between; ``qp_max_iterations``;
    ``qp_rho_interval`` (OSQP iterations between updates of its step size)."""

    tol: float = 1e-6
    max_iterations: int = 200
    max_backtracks: int = 20
    qp_tol: float = 1e-8
    qp_tol_max: float = 1e-4
    qp_forcing: float = 1e-2
    qp_max_iterations: int = 50_000
    qp_rho_interval: int = 25


SOLVED, SOLVED_INACCURATE, MAX_ITERATIONS = 1, 2, 7  # OSQP's status values that still give a step


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
    start, solver = time.perf_counter(), None
    history = {"cost": [], "violation": [], "step": [], "qp": [], "alpha": [], "corrections": 0}
    status, message, mu, measure, floor = "max_iterations", "", 1.0, np.inf, options.qp_tol
    for k in range(options.max_iterations):
        res, grad, P, gx, G = evaluate(x)
        P, G = _csc(P), _csc(G)
        A = sparse.vstack([G, sparse.identity(n, format="csc")], format="csc")
        lower = np.concatenate((nlp.lbg - _vec(gx), nlp.lbx - x))
        upper = np.concatenate((nlp.ubg - _vec(gx), nlp.ubx - x))
        qp_tol = float(np.clip(options.qp_forcing * measure, floor, options.qp_tol_max))
        if solver is None:
            solver = osqp.OSQP()
            solver.setup(
                P,
                _vec(grad),
                A,
                lower,
                upper,
                verbose=False,
                eps_abs=qp_tol,
                eps_rel=qp_tol,
                max_iter=options.qp_max_iterations,
                adaptive_rho_interval=options.qp_rho_interval,
                polishing=True,
            )
        else:
            solver.update(q=_vec(grad), l=lower, u=upper, Px=P.data, Ax=A.data)
            solver.update_settings(eps_abs=qp_tol, eps_rel=qp_tol)
        cost, violation = _merit_parts(values, x, nlp)
        history["cost"].append(cost)
        history["violation"].append(violation)
        qp = solver.solve(raise_error=False)  # a failed subproblem is a status
        info = qp.info
        history["qp"].append({"status": info.status, "iterations": int(info.iter), "tol": qp_tol})
        why = f"OSQP: {info.status} after {info.iter} iterations (tolerance {qp_tol:.0e}) at SQP iteration {k}"
        dx, y = np.asarray(qp.x), np.asarray(qp.y)
        if info.status_val not in (SOLVED, SOLVED_INACCURATE, MAX_ITERATIONS) or not np.all(np.isfinite(dx)):
            status, message = "qp_failed", why
            break
        exact = info.status_val == SOLVED
        if not exact:  # OSQP cannot reach this tolerance here: ask less of the next subproblems
            floor = min(10 * qp_tol, options.qp_tol_max)
        step = float(np.max(np.abs(dx), initial=0.0))
        scale = max(1.0, float(np.max(np.abs(x))))
        measure = max(step / scale, violation)
        history["step"].append(step)
        if exact and step <= options.tol * scale and violation <= options.tol:
            status, message = "converged", f"step {step / scale:.1e} (relative), violation {violation:.1e}"
            break
        if np.all(np.isfinite(y)):
            mu = max(mu, 1.1 * float(np.max(np.abs(y), initial=0.0)))
        merit, alpha = cost + mu * violation, 1.0
        trial_cost, trial_violation, g_trial = _merit_parts(values, x + dx, nlp, with_g=True)
        descent = trial_cost + mu * trial_violation < merit
        if not descent:  # the full step may raise the violation (the Maratos effect): correct it once
            corrected = _second_order_correction(solver, nlp, x, dx, G @ dx - g_trial)
            if corrected is not None:
                trial_cost, trial_violation = _merit_parts(values, x + corrected[0], nlp)
                descent = trial_cost + mu * trial_violation < merit
                if descent:
                    dx, y = corrected
                    history["corrections"] += 1
        for _ in range(options.max_backtracks if not descent else 0):
            alpha *= 0.5
            trial_cost, trial_violation = _merit_parts(values, x + alpha * dx, nlp)
            descent = trial_cost + mu * trial_violation < merit
            if descent or (exact and alpha * step <= options.tol):
                break
        if not (exact or descent):  # an inexact step that does not descend: nothing to take
            status, message = "qp_failed", f"{why}; its step does not decrease the merit"
            break
        history["alpha"].append(alpha)
        x = x + alpha * dx
        solver.warm_start(x=dx, y=y)
    else:
        message = f"{options.max_iterations} iterations without convergence"
    cost, violation = _merit_parts(values, x, nlp)
    scale = max(1.0, float(np.max(np.abs(x))))
    history["measure"] = list(
        np.maximum(np.array(history["step"]) / scale, history["violation"][: len(history["step"])])
    )
    measure = history["measure"][-1] if history["measure"] else np.nan
    elapsed = time.perf_counter() - start
    return NLPResult(status, message, len(history["step"]), cost, violation, measure, elapsed, x, history)


def _second_order_correction(solver, nlp, x, dx, shift):
    """``(step, multipliers)`` of the subproblem whose constraint rows are moved by ``shift = G dx -
    g(x + dx)`` (what the rows miss at the full step), so that the corrected step lands on their
    second-order approximation (Nocedal and Wright, Sec. 15.6); ``None`` if OSQP gives no step.
    Leaves the subproblem's bounds so moved (each iteration sets them again)."""
    solver.update(l=np.concatenate((nlp.lbg + shift, nlp.lbx - x)), u=np.concatenate((nlp.ubg + shift, nlp.ubx - x)))
    solver.warm_start(x=dx)
    qp = solver.solve(raise_error=False)
    step = np.asarray(qp.x)
    if qp.info.status_val not in (SOLVED, SOLVED_INACCURATE, MAX_ITERATIONS) or not np.all(np.isfinite(step)):
        return None
    return step, np.asarray(qp.y)


def _merit_parts(values, x, nlp, with_g=False):
    """``(cost, l1 constraint violation)`` at ``x`` (and the constraints ``g(x)`` if ``with_g``)."""
    cost, g = values(x)
    g = _vec(g)
    violation = np.sum(np.maximum(nlp.lbg - g, 0) + np.maximum(g - nlp.ubg, 0))
    violation += np.sum(np.maximum(nlp.lbx - x, 0) + np.maximum(x - nlp.ubx, 0))
    return (float(cost), float(violation), g) if with_g else (float(cost), float(violation))


def _vec(x) -> np.ndarray:
    return np.asarray(ca.DM(x)).ravel()


def _csc(m) -> sparse.csc_matrix:
    """A CasADi sparse matrix as SciPy CSC, keeping its structural nonzeros (OSQP's updates
    need a fixed pattern)."""
    m = ca.DM(m)
    rows, cols = m.sparsity().get_triplet()
    return sparse.csc_matrix((np.asarray(m.nonzeros()), (rows, cols)), shape=m.shape)
