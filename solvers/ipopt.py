"""Ipopt through CasADi on an OCP's nonlinear program (:mod:`ocp.nlp`): the off-the-shelf
baseline of seed 004, which notes that the non-lifted Newton direction is what such a solver
takes on the problem eliminated of its contact variables; here Ipopt sees the lifted program
whole, with exact Hessians from CasADi's AD.

The solver reads the NLP's containers only (no robot knowledge). Ipopt's own convergence
measures are reported: the primal infeasibility ``inf_pr`` (the result's ``violation``) and
the dual infeasibility ``inf_du`` (scaled, as Ipopt defines them), per iteration; the
result's ``measure`` is their maximum.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import casadi as ca
import numpy as np

from .nlp_result import NLPResult


@dataclass(frozen=True)
class IpoptOptions:
    """``tol``: Ipopt's tolerance on its scaled KKT error; ``max_iterations``; ``print_level``
    (0: silent); ``hessian``: ``exact`` or ``limited-memory``."""

    tol: float = 1e-8
    max_iterations: int = 500
    print_level: int = 0
    hessian: str = "exact"


def solve_ipopt(nlp, options: IpoptOptions = IpoptOptions()) -> NLPResult:
    """Solve ``nlp`` (an :class:`ocp.nlp.NLP`) from its initial guess."""
    settings = {
        "ipopt.tol": options.tol,
        "ipopt.max_iter": options.max_iterations,
        "ipopt.print_level": options.print_level,
        "ipopt.sb": "yes",  # no banner on stdout
        "ipopt.hessian_approximation": options.hessian,
        "print_time": False,
    }
    solver = ca.nlpsol("liftoff_ipopt", "ipopt", nlp.problem, settings)
    start = time.perf_counter()
    out = solver(x0=nlp.x0, lbx=nlp.lbx, ubx=nlp.ubx, lbg=nlp.lbg, ubg=nlp.ubg)
    elapsed = time.perf_counter() - start
    stats = solver.stats()
    iterations = stats.get("iterations", {})
    inf_pr, inf_du = (np.array(iterations.get(k, [np.nan]), dtype=float) for k in ("inf_pr", "inf_du"))
    status = "converged" if stats.get("success") else str(stats.get("return_status", "failed"))
    measure = np.maximum(inf_pr, inf_du)
    return NLPResult(
        status,
        str(stats.get("return_status", "")),
        int(stats.get("iter_count", 0)),
        float(out["f"]),
        float(inf_pr[-1]),
        float(measure[-1]),
        elapsed,
        np.array(out["x"]).ravel(),
        {"measure": list(measure), "inf_pr": list(inf_pr), "inf_du": list(inf_du)},
    )
