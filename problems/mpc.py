"""Model predictive control: a receding horizon of Newton iterations, and a policy between updates.

An :class:`MPC` holds a problem builder ``build(t, q, v, tau) -> OCP`` (the horizon that
starts at time ``t`` from the measured state; ``tau`` the measured torques of an OCP with a
torque filter, else None) and one formulation of its OCPs, whose kernels are built
once (:meth:`ocp.formulation.Formulation.for_problem`). Each update builds the horizon's OCP,
warm-starts from the previous solution moved by the knots that elapsed (:func:`shift`), runs
at most ``iterations`` Newton iterations of the interior point (:func:`solvers.ipm.solve`),
and returns a :class:`Policy` for the plant until the next update.

The policy is the first-order expansion of the solution in the initial state (seed 001 Sec.
IV-C, where the Riccati gains interpolate the solution at 2 kHz): with ``K_0, k_0`` the gains
of the Riccati recursion at the final iterate,

    u(t, x) = u_0 + k_0 + K_0 (x (-) x_plan(t)),

``u_0`` the iterate's first control, ``k_0`` the feedforward of its next Newton step (zero at
convergence) and ``x_plan`` its state interpolated between knots 0 and 1. Each update is
recorded as a :class:`Tick` (wall time, iterations, KKT error, status).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np

import dynamics
from ocp.formulation import Formulation, Iterate
from solvers.ipm import Options, solve
from solvers.riccati import riccati


@dataclass(frozen=True)
class Policy:
    """The control law from time ``t0``: ``u(t, x) = u + K (x (-) x_plan(t))`` (module
    docstring) with ``x = (q, v)``, or ``(q, v, tau)`` with a torque filter; ``x_plan`` between
    the plan's knots 0 at ``t0`` and 1 at ``t0 + dt`` (``q_plan, v_plan, tau_plan (2, .)``)."""

    model: object
    t0: float
    dt: float
    q_plan: np.ndarray
    v_plan: np.ndarray
    tau_plan: np.ndarray
    u: np.ndarray
    K: np.ndarray

    def __call__(self, t, q, v, tau=None) -> np.ndarray:
        s = float(np.clip((t - self.t0) / self.dt, 0.0, 1.0))
        q0, q1 = self.q_plan
        q_ref = dynamics.integrate(self.model, q0, s * dynamics.difference(self.model, q0, q1))
        v_ref, tau_ref = ((1 - s) * x[0] + s * x[1] for x in (self.v_plan, self.tau_plan))
        dtau = np.zeros(0) if tau is None else tau - tau_ref
        dx = np.concatenate((dynamics.difference(self.model, q_ref, q), v - v_ref, dtau))
        return self.u + self.K @ dx


@dataclass(frozen=True)
class Tick:
    """One update: its time ``t``, wall ``seconds`` (building the OCP, solving, the gains),
    Newton ``iterations``, KKT error and solver status at its end."""

    t: float
    seconds: float
    iterations: int
    kkt_error: float
    status: str


class MPC:
    """Receding-horizon control of the OCPs of ``build`` (module docstring) in the formulation
    ``formulation`` evaluated by ``backend``; ``options`` of the interior point (its
    ``max_iterations`` is replaced: ``first_iterations`` for the first solve, ``iterations``
    per update); ``shift``: knots elapsed between updates; ``on_tick(tick)`` sees every update."""

    def __init__(
        self,
        build,
        formulation="lifted",
        backend="compiled",
        options=Options(),
        iterations=1,
        first_iterations=100,
        shift=1,
        on_tick=None,
        quiet=False,
    ):
        if not (isinstance(iterations, int) and iterations >= 1):
            raise ValueError(f"iterations per update must be an integer >= 1, got {iterations!r}")
        if not (isinstance(first_iterations, int) and first_iterations >= 1):
            raise ValueError(f"first_iterations must be an integer >= 1, got {first_iterations!r}")
        if not (isinstance(shift, int) and shift >= 0):
            raise ValueError(f"shift must be an integer >= 0 (knots between updates), got {shift!r}")
        self.build, self.options = build, options
        self.iterations, self.first_iterations, self.shift = iterations, first_iterations, shift
        self.on_tick, self.formulation_name, self.backend, self.quiet = on_tick, formulation, backend, quiet
        self.formulation = None
        self.result = None
        self.ticks: list = []

    def start(self, t, q, v, tau=None, warm_start=None) -> Policy:
        """The first solve, from the formulation's initial guess (or ``warm_start``: an
        :class:`ocp.formulation.Iterate` of the same structure) with ``first_iterations``."""
        begin = time.perf_counter()
        ocp = self.build(t, q, v, tau)
        if ocp.stages[0].kind != "contact":
            raise ValueError("an MPC horizon starts with a contact stage (its control is the policy's)")
        self.formulation = Formulation(ocp, self.formulation_name, self.backend, quiet=self.quiet)
        return self._solve(t, begin, warm_start, self.first_iterations)

    def update(self, t, q, v, tau=None) -> Policy:
        """One update at time ``t`` from the measured state ``(q, v)`` (and torques ``tau`` with
        a torque filter), after :meth:`start`."""
        if self.result is None:
            raise RuntimeError("MPC.update before MPC.start")
        begin = time.perf_counter()
        self.formulation = self.formulation.for_problem(self.build(t, q, v, tau))
        return self._solve(t, begin, shift(self.formulation, self.result.iterate, self.shift), self.iterations)

    def _solve(self, t, begin, warm_start, iterations) -> Policy:
        options = replace(self.options, max_iterations=iterations)
        self.result = result = solve(self.formulation, options, warm_start=warm_start)
        if result.linearization is None or not np.isfinite(result.kkt_error):
            raise MPCError(f"the MPC update at t = {t:.3f} s failed: {result.message}")
        lin = result.linearization
        sol = riccati(lin.lqr, lin.terminal, lin.dx0, self.formulation.backend)
        it = result.iterate
        u0 = it.groups[0].u[0]  # the groups are in first-stage order: stage 0 is row 0 of the first
        dt = self.formulation.ocp.stages[0].dt
        plan = (it.q[:2].copy(), it.v[:2].copy(), it.tau[:2].copy())
        policy = Policy(self.formulation.model, t, dt, *plan, u0 + sol.k[0], sol.K[0])
        tick = Tick(t, time.perf_counter() - begin, result.iterations, result.kkt_error, result.status)
        self.ticks.append(tick)
        if self.on_tick is not None:
            self.on_tick(tick)
        return policy


class MPCError(RuntimeError):
    """An update that could not produce a policy (a non-finite or singular problem)."""


def shift(formulation, it: Iterate, n: int) -> Iterate:
    """``it`` moved ``n`` knots earlier for ``formulation`` (whose groups are those ``it`` was
    solved with): knots ``q, v, tau, lam`` and each stage's variables take those ``n`` knots later,
    the last ones repeated; a stage whose later stage is in another group keeps its own."""
    K = len(it.q) - 1
    later = np.minimum(np.arange(K + 1) + n, K)
    groups = []
    for group, gv in zip(formulation.groups, it.groups):
        row = {int(k): r for r, k in enumerate(group.index)}
        source = np.array([row.get(int(min(k + n, K - 1)), r) for r, k in enumerate(group.index)])
        groups.append(type(gv)(*(x[source] for x in (gv.u, gv.w, gv.beta, gv.s, gv.z))))
    return Iterate(it.q[later], it.v[later], it.lam[later], tuple(groups), it.tau[later])
