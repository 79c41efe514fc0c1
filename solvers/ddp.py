"""FDDP and iLQR (Mastalli et al. 2020; seed 004's DDP-type baselines) on a shooting problem.

Each iteration runs the backward pass of the LQR at the current knots ``x_k`` and controls
``u_k`` with the gaps ``f_k`` as its affine terms (the Riccati recursion of
:func:`solvers.riccati.riccati`, so the value function ``V_k = 1/2 dx^T P_k dx + p_k^T dx``
accounts for the gaps as in FDDP's feasibility-driven backward pass), then a nonlinear forward
pass for step lengths ``alpha = 1, 1/2, ..., 2^-9``:

    x^_0 = x0,   u^_k = u_k + alpha k_k + K_k (x^_k (-) x_k),   x^_{k+1} = f_k(x^_k, u^_k)

FDDP keeps the fraction ``1 - alpha`` of each gap while the iterate is infeasible
(``x^_k = f_{k-1}(...) (+) (alpha - 1) f_k``); iLQR rolls out from ``x0`` (single shooting).
A step is accepted on the Goldstein-type test ``dV > 0.1 dV_exp`` of the actual against the
expected decrease ``dV_exp = alpha (d1 + alpha d2 / 2)``, with FDDP's gap terms in ``d``; FDDP
also accepts a cost increase that closes gaps, ``dV > 2 dV_exp`` when ``dV_exp < 0``. The
regularization ``mu`` (added to ``Quu`` and to ``P_k``) starts at ``reg_min``, is divided by
``reg_factor`` after a step longer than 1/2, multiplied after one of 1/100 or less, or when
``Quu + B^T P B`` is not positive definite; at ``reg_max`` the solve stops. The solve converges
when the iterate is feasible and the expected decrease ``|d1 + d2 / 2|`` is below ``tol``.
These are Crocoddyl's ``SolverFDDP`` and ``SolverDDP`` rules and defaults.

The problem's inequalities are in its cost (a relaxed barrier, :class:`ocp.shooting.Shooting`).
The solver reads only the problem's containers; it knows nothing of robots.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np

from liftoff.ocp.lqr import TerminalLQR

from .ipm import IterationLog, Result
from .riccati import RiccatiError, compile_riccati, riccati

METHODS = ("fddp", "ilqr")


class ShootingProblem(Protocol):
    """What the DDP solvers need (implemented by :class:`ocp.shooting.Shooting`)."""

    backend: str
    barrier: float
    x0: np.ndarray
    nu: np.ndarray

    def initial_guess(self) -> tuple: ...
    def integrate(self, xs, dxs): ...
    def difference(self, xs0, xs1): ...
    def step(self, k, x, u): ...
    def linearize(self, xs, us): ...
    def iterate(self, xs, us, linearization): ...


@dataclass(frozen=True)
class DDPOptions:
    """Crocoddyl's defaults: ``tol`` on the expected decrease (``th_stop``), the regularization
    range and factor, the acceptance thresholds ``accept_step`` (``th_acceptstep``) and
    ``accept_negative_step`` (FDDP's ``th_acceptnegstep``), the step lengths below which the
    regularization is raised (``raise_step``, ``th_stepinc``) and above which it is lowered
    (``lower_step``, ``th_stepdec``), and the number of step lengths tried."""

    max_iterations: int = 100
    tol: float = 1e-9
    reg_min: float = 1e-9
    reg_max: float = 1e9
    reg_factor: float = 10.0
    accept_step: float = 0.1
    accept_negative_step: float = 2.0
    raise_step: float = 0.01
    lower_step: float = 0.5
    grad_tol: float = 1e-12
    step_lengths: int = 10

    def __post_init__(self):
        if not (isinstance(self.max_iterations, (int, np.integer)) and self.max_iterations >= 0):
            raise ValueError(f"max_iterations must be an integer >= 0, got {self.max_iterations!r}")
        if not 0 < self.reg_min <= self.reg_max or self.reg_factor <= 1:
            raise ValueError("the regularization needs 0 < reg_min <= reg_max and reg_factor > 1")


@dataclass(frozen=True)
class _Backward:
    """The backward pass: feedback ``K (K, nm, nx)``, feedforward ``k (K, nm)`` (``du = K dx +
    alpha k``), ``P (K+1, nx, nx)``, ``p (K+1, nx)``, the control gradient ``Qu`` and
    ``Quu k`` per stage."""

    K: np.ndarray
    k: np.ndarray
    P: np.ndarray
    p: np.ndarray
    Qu: np.ndarray
    Quu_k: np.ndarray


def solve_ddp(problem: ShootingProblem, method="fddp", options: DDPOptions = DDPOptions(), callback=None) -> Result:
    """Solve ``problem`` by ``method`` (``fddp`` or ``ilqr``) from its initial guess (module
    docstring). The result has the interior point's fields: ``kkt_error`` is the l2 norm of
    the control gradients ``Qu`` and the gaps (the KKT residual of the shooting problem with
    the value function's gradients as costates), ``cost`` the cost without the barrier, the
    violation the largest gap or inequality violation; each iteration's log has the step
    length as both ``alpha``s."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; expected one of {METHODS}")
    with np.errstate(all="ignore"):  # non-finite values are detected and reported as a status
        return _solve(problem, method, options, callback)


def _solve(problem, method, options, callback):
    if problem.backend == "compiled":
        compile_riccati()  # on first use, before any timing
    start = time.perf_counter()
    xs, us = problem.initial_guess()
    history: list = []
    lin, measure = None, np.nan

    def finish(status, message):
        elapsed = time.perf_counter() - start
        if lin is None:
            return Result(status, message, len(history), np.nan, np.nan, np.nan, elapsed, problem.barrier)
        violation = max(lin.inequality_violation, float(np.max(np.abs(lin.gaps))))
        iterate = problem.iterate(xs, us, lin)
        return Result(
            status, message, len(history), measure, lin.cost, violation, elapsed, problem.barrier, iterate, history
        )

    try:
        lin = problem.linearize(xs, us)
    except FloatingPointError as e:
        return finish("diverged", f"the initial guess: {e}")
    feasible = was_feasible = False
    reg = options.reg_min
    alphas = 0.5 ** np.arange(options.step_lengths)
    for iteration in range(options.max_iterations):
        t0 = time.perf_counter()
        while True:
            try:
                bw = _backward(problem, lin, reg, feasible)
                break
            except (RiccatiError, FloatingPointError):
                reg = min(reg * options.reg_factor, options.reg_max)
                if reg == options.reg_max:
                    return finish("diverged", f"the regularization reached its maximum {options.reg_max:g}")
        gaps = None if feasible else lin.gaps
        measure = float(np.sqrt(np.sum(bw.Qu**2) + np.sum(lin.gaps**2)))
        dg = -float(np.sum(bw.Qu * bw.k))
        dq = -float(np.sum(bw.k * bw.Quu_k))
        if gaps is not None and method == "fddp":
            Vx = bw.p + np.einsum("kij,kj->ki", bw.P, gaps)
            dg -= float(np.sum(Vx * gaps))
            dq += float(np.einsum("ki,kij,kj->", gaps, bw.P, gaps))
        t1 = time.perf_counter()
        accepted, d = None, (dg, dq)
        for alpha in alphas:
            closing = method == "fddp" and gaps is not None and alpha < 1
            try:
                xs_try, us_try = _forward(problem, xs, us, bw, alpha, lin.gaps if closing else None)
                lin_try = problem.linearize(xs_try, us_try)
            except (FloatingPointError, np.linalg.LinAlgError):
                continue
            dV = lin.objective - lin_try.objective
            dv = 0.0
            if method == "fddp" and gaps is not None:
                dv = -float(np.einsum("ki,kij,kj->", gaps, bw.P, problem.difference(xs_try, xs)))
            d = (dg + dv, dq - 2 * dv)
            expected = alpha * (d[0] + 0.5 * alpha * d[1])
            if expected >= 0:
                accept = abs(d[0]) < options.grad_tol or dV > options.accept_step * expected
                accept = accept or (method == "ilqr" and not feasible)
            else:
                accept = method == "fddp" and not feasible and dV > options.accept_negative_step * expected
            if accept:
                accepted = (xs_try, us_try, lin_try)
                break
        t2 = time.perf_counter()
        times = (t2 - t0, t2 - t1, t1 - t0, 0.0)  # total, forward passes, backward pass
        entry = IterationLog(iteration, lin.objective, measure, problem.barrier, alpha, alpha, *times)
        history.append(entry)
        if callback is not None:
            callback(entry)
        if accepted is not None:
            was_feasible = feasible
            feasible = feasible or alpha == 1 or method == "ilqr"
            xs, us, lin = accepted
        if alpha > options.lower_step:
            reg = max(reg / options.reg_factor, options.reg_min)
        if alpha <= options.raise_step:
            reg = min(reg * options.reg_factor, options.reg_max)
            if reg == options.reg_max:
                return finish("diverged", f"the regularization reached its maximum {options.reg_max:g}")
        stop = abs(d[0] + 0.5 * d[1])
        if was_feasible and stop < options.tol:
            return finish("converged", f"expected decrease {stop:.3e} < {options.tol:.1e}")
    return finish("max_iterations", f"after {options.max_iterations} iterations")


def _backward(problem, lin, reg, feasible) -> _Backward:
    """The regularized Riccati recursion: ``mu`` on ``Qxx`` (so on every ``P_k``) and ``Quu``;
    the gaps as ``b`` unless the iterate is feasible."""
    lqr, nx = lin.lqr, lin.lqr.A.shape[1]
    nm = lqr.B.shape[2]
    b = np.zeros_like(lqr.b) if feasible else lqr.b
    dx0 = np.zeros(nx) if feasible else lin.gaps[0]
    regularized = replace(lqr, b=b, Qxx=lqr.Qxx + reg * np.eye(nx), Quu=lqr.Quu + reg * np.eye(nm))
    terminal = TerminalLQR(lin.terminal.Qxx + reg * np.eye(nx), lin.terminal.lx)
    sol = riccati(regularized, terminal, dx0, problem.backend)
    K, k = sol.gains, sol.feedforward
    co = np.einsum("kij,kj->ki", sol.P[1:], b) + sol.p[1:]
    Qu = regularized.lu + np.einsum("kxu,kx->ku", lqr.B, co)
    PB = sol.P[1:] @ lqr.B
    Quu_k = np.einsum("kuv,kv->ku", regularized.Quu + np.swapaxes(lqr.B, 1, 2) @ PB, k)
    mask = np.arange(nm)[None] < lqr.nu[:, None]
    if not (np.all(np.isfinite(sol.P)) and np.all(np.isfinite(k))):
        raise FloatingPointError("the backward pass is not finite")
    return _Backward(K, k, sol.P, sol.p, Qu * mask, Quu_k * mask)


def _forward(problem, xs, us, bw, alpha, gaps):
    """The nonlinear rollout of step length ``alpha``; ``gaps``: keep ``1 - alpha`` of them (FDDP
    on an infeasible iterate), None: close them."""
    xs_try, us_try = np.empty_like(xs), np.zeros_like(us)
    x = problem.x0
    for k in range(len(us)):
        xs_try[k] = x if gaps is None else problem.integrate(x[None], (alpha - 1) * gaps[k][None])[0]
        n = problem.nu[k]
        dx = problem.difference(xs[k][None], xs_try[k][None])[0]
        us_try[k, :n] = us[k, :n] + alpha * bw.k[k, :n] + bw.K[k, :n] @ dx
        x = problem.step(k, xs_try[k], us_try[k, :n])
        if not np.all(np.isfinite(x)):
            raise FloatingPointError(f"the rollout is not finite at stage {k}")
    xs_try[-1] = x if gaps is None else problem.integrate(x[None], (alpha - 1) * gaps[-1][None])[0]
    return xs_try, us_try
