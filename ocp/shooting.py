"""The non-lifted OCP as a shooting problem, for the DDP-type solvers (:mod:`solvers.ddp`).

The knots ``x_k = (q_k, v_k, tau_k)`` (``tau`` empty without a torque filter) are flat vectors
of size ``nq + nv + ntau``; stage ``k`` maps ``(x_k, u_k)`` to ``f_k(x_k, u_k)``, the state
equation of :mod:`ocp.lifted` solved for the next knot with ``w`` from the constrained forward
(impulse) dynamics (impulse stages have no control: a state jump). The gaps

    f_0 = x0 (-) x_0,    f_{k+1} = f_k(x_k, u_k) (-) x_{k+1}

(Crocoddyl's ``fs``, in the tangent at the knot) vanish on a rollout. The inequalities
(friction cones, limits) join the cost through the relaxed barrier ``eps sum B(g)``
(:mod:`ocp.relaxed_barrier`) instead of slacks: a penalty, which the solution may violate.

A linearization is the LQR of the same condensing as the non-lifted interior point's, with
the barrier's Gauss-Newton terms in place of the slacks' and the gaps as its ``b``. The
stages are evaluated by the formulation's backend, batched over groups; :meth:`step`
evaluates one stage, for the solver's sequential rollouts.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np

from liftoff import dynamics

from . import condensing, lifted
from .formulation import Formulation, GroupVariables, Iterate, NonFiniteError, check_finite
from .lqr import LQR, TerminalLQR
from .relaxed_barrier import relaxed_barrier


@dataclass(frozen=True)
class ShootingLinearization:
    """The LQR of the step (the gaps as its ``b``, ``gaps[0]`` as ``dx0``), its terminal stage,
    ``gaps (K+1, ndx)``, the ``objective`` (``cost + eps * barrier``), the ``cost`` alone, the
    ``barrier`` sum, the largest inequality violation ``max(-g, 0)`` and the contact
    variables ``w`` of each group (for :meth:`Shooting.iterate`)."""

    lqr: LQR
    terminal: TerminalLQR
    gaps: np.ndarray
    objective: float
    cost: float
    barrier: float
    inequality_violation: float
    w: tuple


class Shooting:
    """``ocp`` for DDP-type solvers (module docstring): the barrier parameter ``barrier`` and
    its ``relaxation`` (:func:`ocp.relaxed_barrier.relaxed_barrier`), stages evaluated by
    ``backend``, the initial guess by ``init`` (:meth:`ocp.formulation.Formulation.initial_iterate`)."""

    def __init__(self, ocp, barrier=1e-1, relaxation=1e-2, backend="compiled", init="static", quiet=False):
        if not (np.isfinite(barrier) and barrier > 0):
            raise ValueError(f"the barrier parameter must be > 0, got {barrier!r}")
        relaxed_barrier(1.0, relaxation)  # refuses a bad relaxation here
        self.ocp, self.model = ocp, ocp.model
        self.barrier, self.relaxation = float(barrier), float(relaxation)
        self.formulation = Formulation(ocp, "nonlifted", backend, quiet=quiet, init=init)
        self.stages, self.backend = self.formulation.stages, self.formulation.backend
        self.singles = ocp.stage_groups()
        self.single = self.stages.for_problem(ocp, self.singles)
        self.x0 = np.concatenate((ocp.q0, ocp.v0, ocp.tau0))
        self.nu = np.array([ocp.nu if s.kind == "contact" else 0 for s in ocp.stages], dtype=np.intc)

    def with_relaxation(self, relaxation) -> Shooting:
        """The same problem with another relaxation of the barrier (the kernels are kept)."""
        relaxed_barrier(1.0, relaxation)
        new = copy.copy(self)
        new.relaxation = float(relaxation)
        return new

    @property
    def K(self) -> int:
        return self.ocp.K

    def initial_guess(self) -> tuple:
        """``(xs (K+1, nx), us (K, nu))`` of the interior point's initial iterate: every knot at
        the initial state, the controls of ``init`` (zero rows at impulse stages)."""
        it = self.formulation.initial_iterate(self.barrier)
        us = np.zeros((self.K, self.ocp.nu))
        for group, gv in zip(self.formulation.groups, it.groups):
            us[group.index, : gv.u.shape[1]] = gv.u
        return np.concatenate((it.q, it.v, it.tau), axis=1), us

    # ------------------------------------------------------------------ the state manifold

    def split(self, xs):
        """``(q, v, tau)`` of knots ``xs (n, nx)`` (``tau`` None without a torque filter)."""
        nq, nv = self.model.nq, self.model.nv
        tau = xs[:, nq + nv :] if self.ocp.ntau else None
        return xs[:, :nq], xs[:, nq : nq + nv], tau

    def integrate(self, xs, dxs):
        """``x (+) dx`` of knots ``(n, nx)`` and tangents ``(n, ndx)``."""
        q, v, tau = self.split(xs)
        nv = self.model.nv
        parts = (dynamics.integrate(self.model, q, dxs[:, :nv]), v + dxs[:, nv : 2 * nv])
        return np.concatenate(parts + (() if tau is None else (tau + dxs[:, 2 * nv :],)), axis=1)

    def difference(self, xs0, xs1):
        """``x1 (-) x0``, ``(n, ndx)``."""
        (q0, v0, tau0), (q1, v1, tau1) = self.split(xs0), self.split(xs1)
        parts = (dynamics.difference(self.model, q0, q1), v1 - v0)
        return np.concatenate(parts + (() if tau0 is None else (tau1 - tau0,)), axis=1)

    # ------------------------------------------------------------------ stages

    def _next(self, group, q, v, tau, u, w):
        """``f(x, u)`` of the stages of ``group`` given their contact variables ``w``."""
        filtered = None
        if tau is not None:
            gain = self.ocp.filter_gain(group.dt) if group.kind == "contact" else None
            filtered = (tau, u, gain)
        dt = group.dt if group.kind == "contact" else None
        return np.concatenate(lifted.next_state(self.model, q, v, w[:, : self.model.nv], dt, filtered), axis=1)

    def _dynamics(self, stages, group, q, v, tau, u):
        w = stages.dynamics(group, q, v, u if tau is None else tau)
        check_finite("contact dynamics", group, w)
        return w

    def step(self, k, x, u):
        """``f_k(x, u)`` of stage ``k`` (``u``: its ``nu[k]`` controls)."""
        group = self.singles[k]
        q, v, tau = self.split(x[None])
        u = np.asarray(u, dtype=float)[None, : self.nu[k]]
        return self._next(group, q, v, tau, u, self._dynamics(self.single, group, q, v, tau, u))[0]

    def linearize(self, xs, us) -> ShootingLinearization:
        """The LQR of the step at the knots ``xs`` and controls ``us`` (module docstring);
        :class:`ocp.formulation.NonFiniteError` where the dynamics or the cost is not finite."""
        K, nx, nm = self.K, self.ocp.nx, self.ocp.nu
        eps, delta = self.barrier, self.relaxation
        q, v, tau = self.split(xs)
        lqr, gaps, ws = LQR.for_stages(K, nx, nm), np.zeros((K + 1, nx)), []
        cost = barrier = violation = 0.0
        for group in self.formulation.groups:
            idx = group.index
            u = us[idx, : self.nu[idx[0]]]
            t, t_next = (None, None) if tau is None else (tau[idx], tau[idx + 1])
            w = self._dynamics(self.stages, group, q[idx], v[idx], t, u)
            ev = self.stages.evaluate(group, q[idx], v[idx], u, w, q[idx + 1], v[idx + 1], t, t_next)
            value, d1, d2 = relaxed_barrier(ev.ineq.g, delta)
            H = ev.ineq.weighted_gram(eps * d2, out=ev.H.copy())
            g = ev.g + ev.ineq.transpose_dot(eps * d1)
            gaps[idx + 1] = self.difference(xs[idx + 1], self._next(group, q[idx], v[idx], t, u, w))
            stages = condensing.LiftedStages(nx, u.shape[1], H, g, ev.C, np.zeros_like(ev.c), ev.A, gaps[idx + 1])
            condensing.condense(stages, self.backend, ev.supports, into=(lqr, idx))
            cost += float(np.sum(ev.cost))
            barrier += float(np.sum(value))
            violation = max(violation, float(np.max(-ev.ineq.g, initial=0.0)))
            ws.append(w)
        cost_T, H_T, g_T = self.stages.terminal(q[K], v[K], None if tau is None else tau[K])
        cost += cost_T
        gaps[0] = self.difference(xs[:1], self.x0[None])[0]
        objective = cost + eps * barrier
        if not np.isfinite(objective):
            raise NonFiniteError("cost", K)
        return ShootingLinearization(lqr, TerminalLQR(H_T, g_T), gaps, objective, cost, barrier, violation, tuple(ws))

    def iterate(self, xs, us, lin: ShootingLinearization) -> Iterate:
        """The knots, controls and contact variables as the formulation's iterate (no
        multipliers or slacks), for :meth:`ocp.formulation.Formulation.trajectories`."""
        q, v, tau = self.split(xs)
        groups = []
        for group, w in zip(self.formulation.groups, lin.w):
            empty = np.zeros((group.size, 0))
            groups.append(GroupVariables(us[group.index, : self.nu[group.index[0]]], w, empty, empty, empty))
        tau = np.zeros((self.K + 1, 0)) if tau is None else tau
        return Iterate(q, v, np.zeros((self.K + 1, self.ocp.nx)), tuple(groups), tau)
