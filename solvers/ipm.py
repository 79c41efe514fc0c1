"""The Riccati-recursion primal-dual interior-point method (seed 004 Alg. 1, Sec. III-C, D).

Each iteration linearizes every stage (batched by the problem), solves the condensed LQR by
:func:`solvers.riccati.riccati`, expands the direction, and steps with the primal and dual
step sizes of the fraction-to-boundary rule. As in seed 004's experiments there is no Hessian
regularization and, by default, no line search; with ``line_search=True`` the primal step is
halved until the merit ``cost - eps sum(log s) + penalty * |equality residuals|_1`` or the
KKT error decreases (the second test keeps steps near the optimum, where merit changes are
at roundoff level, from being cut). Trial points are fully linearized, so an accepted trial
is the next iteration's system.

The barrier ``eps`` (``barrier_update``) is

- ``fixed`` at ``barrier`` (seed 004's experiments);
- ``monotone``: it starts at ``barrier`` and is multiplied by ``barrier_factor`` whenever the
  KKT error falls below ``10 eps``, down to ``barrier_min`` (Fiacco and McCormick's strategy; the
  problem puts slacks and duals back on the central path of the new barrier, and linearizes
  again);
- ``adaptive``: after each step it follows the complementarity the iterate reached, by LOQO's
  centrality rule (Vanderbei and Shanno 1999, eq. 3.3): with ``m`` the mean of the products
  ``s_i z_i`` and ``xi`` their smallest over ``m``, ``eps = sigma m`` with
  ``sigma = 0.1 min(0.05 (1 - xi) / xi, 2)^3``, and ``sigma`` at least ``(1 - alpha)^3`` for
  the step just taken (``alpha`` the smaller of its primal and dual sizes): Mehrotra's centring
  ``(m_aff / m)^3`` (Mehrotra 1992) with that step in place of an affine-scaling predictor, whose
  products fall by about ``1 - alpha``. A short step leaves the barrier near the products: the
  iterate is not yet where a smaller barrier pays, and the cones that cut the step stay
  centred. The barrier is never above the previous one nor below ``barrier_min``. The next
  linearization is at the new barrier, so it costs nothing; on the five ANYmal gaits it
  reaches ``barrier_min = 1e-4`` in fewer iterations than a fixed barrier of 1e-4 takes
  (``liftoff bench solve --barrier-update``).

The stage Hessians (``hessian``) are

- ``gauss-newton``: the costs' residual Jacobians and the inequalities' barrier terms (seed
  004); the iterations then converge linearly near a solution, at a rate set by the curvature
  left out, which is slow where the dynamics bend a lot (the bound: a KKT error divided by about
  1.6 per iteration);
- ``exact``: where Gauss-Newton is slow, the Hessian of each stage's Lagrangian: the second
  derivatives of the costs' residuals, of the local equalities (the dynamics and the contact
  constraints, weighted by their multipliers ``beta``) and of the state equation's
  configuration rows (:meth:`ocp.kernels.CompiledStages.curvature`). Two terms are left out:
  the coupling of consecutive knots through the free flyer's state equation, which the
  stage-wise LQR has no place for, and the curvature of friction cones expressed in a moving
  frame (the gaits' cones are in world axes, where they are linear). On a small trot whose
  Gauss-Newton tail divides the KKT error by about 5 per iteration, it divides it by 25 to 60
  (``tests/test_exact_hessian.py``); not the quadratic rate of Newton's method, which those
  terms would restore. An iteration takes it once the barrier is at its last value
  (``barrier`` when fixed, else ``barrier_min``), the step before was a full one in primal and
  dual, and that step was exact, or a Gauss-Newton step that followed a full one and divided
  the KKT error by less than 2 (:data:`SLOW`). The first exact iteration of such a run computes
  the curvature (its kernels are 1.7 times the size of the stage kernels on ANYmal: the
  iteration costs about 1.7 to 1.8 Gauss-Newton ones on the bound); the next ones add that same
  curvature to their Gauss-Newton Hessians (a simplified Newton method: near a solution the
  curvature hardly moves), about 1.15 Gauss-Newton iterations each (the curvature's addition and
  the condensing of the denser blocks; both kinds run in the compiled horizon), until
  an exact step divides the KKT error by less than 2 (:data:`STALE`), after which the next one
  computes it afresh. So it is taken only where Gauss-Newton's linear rate is slow (the bound),
  not where it is fast (the other gaits). Wherever the exact LQR is not convex (the Riccati
  recursion fails), the iteration is Gauss-Newton's.

The solver reads only the problem's containers (a :class:`Problem`); it knows nothing of robots.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, fields
from typing import Protocol

import numpy as np

from .riccati import RiccatiError, compile_riccati, compiled_address, riccati, solution_of

BARRIER_UPDATES = ("fixed", "monotone", "adaptive")
HESSIANS = ("gauss-newton", "exact")


class Problem(Protocol):
    """What the interior point needs (implemented by :class:`ocp.formulation.Formulation`):
    its ``backend`` (``compiled`` or ``numpy``) also runs the Riccati recursion."""

    backend: str

    def initial_iterate(self, eps): ...
    def reset_slacks(self, iterate, eps): ...
    def linearize(self, iterate, eps): ...
    def direction(self, iterate, linearization, riccati_solution): ...
    def max_steps(self, iterate, direction): ...
    def step(self, iterate, direction, alpha_primal, alpha_dual): ...
    def complementarity(self, iterate): ...  # the products s_i z_i (for the adaptive barrier)

    exact_hessian: bool  # whether linearize(iterate, eps, curvature=True) adds the Lagrangian's curvature


@dataclass(frozen=True)
class Options:
    """Solver options; the defaults are seed 004's experimental settings."""

    barrier: float = 1e-1
    max_iterations: int = 100
    tol: float = 1e-5  # on the l2 norm of the KKT residual (above its round-off floor: 2e-7 to 4e-5 on ANYmal gaits)
    barrier_update: str = "fixed"  # or "monotone", "adaptive" (module docstring)
    barrier_min: float = 1e-4
    barrier_factor: float = 0.1
    line_search: bool = False
    merit_penalty: float = 1e3
    max_backtracks: int = 10
    divergence: float = 1e20  # a KKT error above this is reported as divergence
    hessian: str = "gauss-newton"  # or "exact" where Gauss-Newton is slow (module docstring)

    def __post_init__(self):
        for name in ("barrier", "tol", "barrier_min", "merit_penalty", "divergence"):
            value = getattr(self, name)
            if not (np.isfinite(value) and value > 0):
                raise ValueError(f"solver option {name} must be a finite number > 0, got {value!r}")
        if not (isinstance(self.max_iterations, (int, np.integer)) and self.max_iterations >= 0):
            raise ValueError(f"solver option max_iterations must be an integer >= 0, got {self.max_iterations!r}")
        if self.barrier_update not in BARRIER_UPDATES:
            choices = ", ".join(BARRIER_UPDATES)
            raise ValueError(f"solver option barrier_update must be one of {choices}, got {self.barrier_update!r}")
        if self.barrier_update != "fixed" and self.barrier_min > self.barrier:
            raise ValueError(f"solver option barrier_min {self.barrier_min:g} exceeds barrier {self.barrier:g}")
        if self.hessian not in HESSIANS:
            raise ValueError(f"solver option hessian must be one of {', '.join(HESSIANS)}, got {self.hessian!r}")
        if not 0 < self.barrier_factor < 1:
            raise ValueError(f"solver option barrier_factor must be in (0, 1), got {self.barrier_factor!r}")


@dataclass(frozen=True)
class IterationLog:
    """One iteration: the KKT error and cost at its start, the steps it took, and the seconds
    it spent: in total, linearizing and condensing at the new iterate (line search included),
    in the Riccati recursion, and expanding and stepping; ``exact``: whether its step used the
    exact Hessian (module docstring), ``fresh``: with the curvature computed at its iterate
    (else an earlier exact iteration's)."""

    iteration: int
    cost: float
    kkt_error: float
    barrier: float
    alpha_primal: float
    alpha_dual: float
    time: float
    linearize_time: float
    riccati_time: float
    expand_time: float
    exact: bool = False
    fresh: bool = False


@dataclass
class Result:
    """``status``: ``converged``, ``max_iterations`` or ``diverged`` (``message`` says where);
    the final ``iterate`` (a warm start for :func:`solve`), its KKT error, cost and largest
    constraint violation, the per-iteration ``history``, and the problem's ``linearization`` at
    the final iterate (its Riccati solution is the next Newton step, and its gains the
    feedback of an MPC policy; ``None`` if the problem could not be linearized there)."""

    status: str
    message: str
    iterations: int
    kkt_error: float
    cost: float
    max_constraint_violation: float
    solve_time_s: float
    barrier: float
    iterate: object = None
    history: list = field(default_factory=list)
    linearization: object = None

    @property
    def converged(self) -> bool:
        return self.status == "converged"

    def summary(self) -> dict:
        """A JSON-ready dictionary of the status, the history and the final numbers."""
        skip = ("iterate", "history", "linearization")
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in skip}
        out["kkt"] = [h.kkt_error for h in self.history]
        out["history"] = [asdict(h) for h in self.history]
        return out


LOG_HEADER = f"{'iter':>4} {'cost':>14} {'kkt error':>11} {'barrier':>8} {'alpha_p':>8} {'alpha_d':>8} {'time [s]':>9}"


def format_log(h: IterationLog) -> str:
    """The log row of an iteration; ``exact`` after it when its step took the exact Hessian
    (``exact, reused`` with an earlier iteration's curvature)."""
    mark = ("  exact" if h.fresh else "  exact, reused") if h.exact else ""
    return (
        f"{h.iteration:4d} {h.cost:14.6e} {h.kkt_error:11.4e} {h.barrier:8.1e} "
        f"{h.alpha_primal:8.4f} {h.alpha_dual:8.4f} {h.time:9.4f}" + mark
    )


def format_final(result: Result) -> str:
    """The log row of the final iterate: its cost and KKT error, no step taken from it."""
    r = result
    return f"{r.iterations:4d} {r.cost:14.6e} {r.kkt_error:11.4e} {r.barrier:8.1e} {'-':>8} {'-':>8} {'-':>9}"


def solve(problem: Problem, options: Options = Options(), warm_start=None, callback=None) -> Result:
    """Run the interior point on ``problem`` from its initial iterate (or ``warm_start``: a
    previous :class:`Result` or iterate). ``callback(IterationLog)`` sees every iteration."""
    with np.errstate(all="ignore"):  # non-finite values are detected and reported as a status
        return _solve(problem, options, warm_start, callback)


def _solve(problem, options, warm_start, callback):
    if options.hessian == "exact" and not problem.exact_hessian:
        raise ValueError("the exact Hessian needs the lifted formulation on compiled kernels")
    if problem.backend == "compiled":
        compile_riccati()  # on first use, before any timing
    start = time.perf_counter()
    eps = options.barrier
    iterate = problem.initial_iterate(eps) if warm_start is None else getattr(warm_start, "iterate", warm_start)
    history: list = []
    lin, exact, fresh = None, False, True

    def finish(status, message):
        summary = (np.nan, np.nan, np.nan) if lin is None else (lin.kkt_error, lin.cost, lin.constraint_violation)
        elapsed = time.perf_counter() - start
        return Result(status, message, len(history), *summary, elapsed, eps, iterate, history, lin)

    try:
        lin, iterate = problem.linearize(iterate, eps)
        for k in range(options.max_iterations + 1):
            if barrier_falls(options, eps, lin.kkt_error):
                eps = max(options.barrier_min, options.barrier_factor * eps)
                iterate = problem.reset_slacks(iterate, eps)
                lin, iterate = problem.linearize(iterate, eps)
            stop = stopping(options, eps, lin.kkt_error, k)
            if stop is not None:
                return finish(*stop)
            t0, eps_step = time.perf_counter(), eps
            try:
                sol = riccati(lin.lqr, lin.terminal, lin.dx0, problem.backend)
            except RiccatiError:
                if not exact:
                    raise
                exact = False  # not convex with the curvature: Gauss-Newton's system at the same iterate
                lin, iterate = problem.linearize(iterate, eps)
                sol = riccati(lin.lqr, lin.terminal, lin.dx0, problem.backend)
            t1 = time.perf_counter()
            d = problem.direction(iterate, lin, sol)
            alpha_p, alpha_d = problem.max_steps(iterate, d)
            trial = problem.step(iterate, d, alpha_p, alpha_d)
            t2 = time.perf_counter()
            if options.barrier_update == "adaptive" and not options.line_search:
                eps = _centrality_barrier(problem.complementarity(trial), eps, options.barrier_min, alpha_p, alpha_d)
            exact_step, exact = exact, _exact_next(options, eps, alpha_p, alpha_d, exact, lin, history)
            fresh_step, fresh = fresh, _fresh_next(exact_step, lin, history)
            lin_trial, trial = _linearize(problem, trial, eps, exact, fresh)
            merit = _merit(lin, options)
            for _ in range(options.max_backtracks if options.line_search else 0):
                if _merit(lin_trial, options) < merit or lin_trial.kkt_error < lin.kkt_error:
                    break
                alpha_p *= 0.5
                exact = False
                trial = problem.step(iterate, d, alpha_p, alpha_d)
                lin_trial, trial = problem.linearize(trial, eps)
            if options.barrier_update == "adaptive" and options.line_search:  # from the accepted step
                eps = _centrality_barrier(problem.complementarity(trial), eps, options.barrier_min, alpha_p, alpha_d)
                exact = _exact_next(options, eps, alpha_p, alpha_d, exact_step, lin, history)
                lin_trial, trial = _linearize(problem, trial, eps, exact, fresh)
            t3 = time.perf_counter()
            times = (t3 - t0, t3 - t2, t1 - t0, t2 - t1)
            entry = IterationLog(
                k, lin.cost, lin.kkt_error, eps_step, alpha_p, alpha_d, *times, exact_step, exact_step and fresh_step
            )
            history.append(entry)
            if callback is not None:
                callback(entry)
            iterate, lin = trial, lin_trial
    except RiccatiError as e:
        return finish("diverged", f"Riccati recursion failed: {e}")
    except FloatingPointError as e:
        return finish("diverged", str(e))
    except np.linalg.LinAlgError as e:
        return finish("diverged", f"singular linear system: {e}")


def newton_step(problem, options: Options, iterate):
    """:func:`solve` from ``iterate`` with no iteration (``options.max_iterations`` 0) and the
    Newton step of its linearization: ``(result, solution, stepped)``, the Riccati solution and
    the iterate reached at the fraction-to-boundary sizes (the problem's ``direction``,
    ``max_steps`` and ``step``), in one compiled call where the problem has one
    (:meth:`ocp.formulation.Formulation.newton_step`, the same equations): an MPC's real-time
    iteration. ``(result, None, None)`` where the LQR is not convex there. None where there is
    no such call, where the barrier would fall first (``monotone``) or where the linearization
    fails (:func:`solve` then says why): the caller runs those steps one after the other."""
    call = getattr(problem, "newton_step", None)
    if options.max_iterations != 0 or call is None or problem.backend != "compiled":
        return None
    recursion = compiled_address()
    if recursion is None:
        return None
    start, eps = time.perf_counter(), options.barrier
    try:
        with np.errstate(all="ignore"):
            out = call(iterate, eps, recursion)
    except (FloatingPointError, np.linalg.LinAlgError):
        return None
    if out is None:
        return None
    lin, solution, stepped = out
    if barrier_falls(options, eps, lin.kkt_error):
        return None
    summary = (lin.kkt_error, lin.cost, lin.constraint_violation, time.perf_counter() - start, eps)
    result = Result(*stopping(options, eps, lin.kkt_error, 0), 0, *summary, iterate, [], lin)
    return result, None if solution is None else solution_of(solution, lin.lqr.nu), stepped


def barrier_falls(options: Options, eps, kkt_error) -> bool:
    """Whether the ``monotone`` barrier ``eps`` falls before a step from a system of ``kkt_error``
    (:func:`solve`'s rule)."""
    return options.barrier_update == "monotone" and eps > options.barrier_min and kkt_error <= 10 * eps


def stopping(options: Options, eps, kkt_error, k) -> tuple | None:
    """``(status, message)`` where the interior point stops at iteration ``k`` with a system of
    ``kkt_error`` at the barrier ``eps`` (diverged, converged, or out of iterations), or None:
    :func:`solve`'s rule, which an MPC's updates in place follow."""
    if kkt_error > options.divergence:
        return "diverged", f"KKT error {kkt_error:.3e} exceeds {options.divergence:.1e}"
    if kkt_error <= options.tol and (options.barrier_update == "fixed" or eps <= options.barrier_min):
        return "converged", f"KKT error {kkt_error:.3e} <= {options.tol:.1e}"
    if k == options.max_iterations:
        return "max_iterations", f"KKT error {kkt_error:.3e} after {k} iterations"
    return None


SLOW = 0.5  # a full Gauss-Newton step that divides the KKT error by less than 2 calls for the exact Hessian
STALE = 0.5  # an exact step that divides it by less than 2 had a stale curvature: the next one computes it afresh


def _exact_next(options, eps, alpha_p, alpha_d, exact, lin, history) -> bool:
    """Whether the next iteration takes the exact Hessian (module docstring), after a step of
    sizes ``alpha_p, alpha_d`` from the system ``lin`` (``exact``: whether it had the exact
    Hessian) that ``history`` led to: asked for, the barrier at its last value, the step a full
    one, and either an exact one or the Gauss-Newton step before it a full one that was
    :data:`SLOW`."""
    last = options.barrier if options.barrier_update == "fixed" else options.barrier_min
    if options.hessian != "exact" or eps > last or alpha_p != 1.0 or alpha_d != 1.0:
        return False
    if exact:
        return True
    before = history[-1] if history else None
    full = before is not None and before.alpha_primal == before.alpha_dual == 1.0
    return full and lin.kkt_error > SLOW * before.kkt_error


def _fresh_next(exact_step, lin, history) -> bool:
    """Whether the next exact linearization computes the curvature afresh (module docstring),
    after a step from the system ``lin`` (``exact_step``: whether it had the exact Hessian) that
    ``history`` led to: unless that step was exact and the exact step before it, if any, was
    not :data:`STALE`."""
    if not exact_step:
        return True
    before = history[-1] if history else None
    return before is not None and before.exact and lin.kkt_error > STALE * before.kkt_error


def _linearize(problem, iterate, eps, exact, fresh=True):
    return problem.linearize(iterate, eps, curvature=True, fresh=fresh) if exact else problem.linearize(iterate, eps)


def _centrality_barrier(products, eps, eps_min, alpha_p=1.0, alpha_d=1.0) -> float:
    """The adaptive barrier (module docstring) after a step of sizes ``alpha_p``, ``alpha_d``
    that reached the products ``s_i z_i``."""
    if products.size == 0:
        return eps_min
    mean = float(np.mean(products))
    xi = float(np.min(products)) / mean if mean > 0 else 1.0
    sigma = 0.1 * min(0.05 * (1.0 - xi) / max(xi, 1e-300), 2.0) ** 3
    sigma = max(sigma, (1.0 - min(alpha_p, alpha_d)) ** 3)
    return float(np.clip(sigma * mean, eps_min, eps))


def _merit(lin, options):
    return lin.barrier_cost + options.merit_penalty * lin.infeasibility
