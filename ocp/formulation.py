"""Newton steps of an :class:`ocp.problem.OCP` in the lifted or the non-lifted formulation.

Both formulations share the knots ``x_k = (q_k, v_k)`` (``(q_k, v_k, tau_k)`` with a torque
filter, :class:`ocp.problem.OCP`), the costates ``lam_k`` (``lam_0``
for the initial state, ``lam_{k+1}`` for the state equation of stage ``k``) and, per stage,
the control ``u``, the contact variables ``w = (a, f)`` (impulse: ``(dv, Lambda)``) and the
slacks ``s`` and duals ``z`` of its inequalities. They differ in how ``w`` is fixed:

- **lifted** (seed 004 Sec. III-A, B): ``w`` is a variable with the local equalities of
  :mod:`ocp.lifted` and their multipliers ``beta``; each Newton step condenses ``dw`` out
  (``dw = T (dx, du) + t`` from the equalities) and expands it afterwards;
- **non-lifted**: ``w`` is the constrained forward (impulse) dynamics of ``(q, v, u)``,
  recomputed at every iterate; its derivatives are the ``T`` of the same elimination, with
  ``t = 0``.

Groups whose contacts are redundant (:meth:`Formulation.redundant`: a contact listed twice, or
a rank-deficient contact Jacobian) have a singular ``Cw``; they are eliminated by
:func:`ocp.condensing.condense_redundant` (the least-norm forces of seed 000, plus, lifted, the
split that the stage's cost prefers), the others by the LU path as before.

The Lagrangian of a stage is ``cost(y) - z^T (g(y) - s) + beta^T c(y) + lam_{k+1}^T F(y)``
(no ``beta`` term when non-lifted), with ``F`` the state equation premultiplied as in
:mod:`ocp.lifted` (``-lam_{k+1}`` on ``x_{k+1}``). Its KKT residual has the stationarity in
the stage's variables, the residuals of ``F``, ``c`` and ``g - s``, and the perturbed
complementarity ``s z - eps`` (:mod:`ocp.pdipm`); the error is their global l2 norm.
Every stage group (:meth:`ocp.problem.OCP.groups`) is evaluated in one batched pass. On
compiled kernels, a lifted horizon's linearization is one compiled call and its direction and
step another (:mod:`ocp.horizon`), bitwise the group-by-group steps below, which the exact
Hessian, redundant contacts and the numpy backend take.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from liftoff import dynamics
from liftoff.dynamics import manifold

from . import condensing, interior, lifted, pdipm
from .backends import BACKENDS, make_stages
from .horizon import KEPT, CompiledHorizon, Structure
from .lqr import LQR, TerminalLQR
from .stages import jacobian_rows, slot_key

FORMULATIONS = ("lifted", "nonlifted")
INITS = ("static", "zero_torque")


class NonFiniteError(FloatingPointError):
    """A quantity of the OCP became NaN or infinite, first at ``stage`` (or at the knot)."""

    def __init__(self, quantity, stage, where="stage"):
        super().__init__(f"{quantity} is not finite at {where} {stage}")
        self.quantity, self.stage = quantity, stage


@dataclass(frozen=True)
class GroupVariables:
    """Per stage of a group: control ``u``, contact variables ``w``, multipliers ``beta`` of the
    local equalities (zero when non-lifted), slacks ``s`` and duals ``z``."""

    u: np.ndarray
    w: np.ndarray
    beta: np.ndarray
    s: np.ndarray
    z: np.ndarray


@dataclass(frozen=True)
class Iterate:
    """A primal-dual point: knots ``q (K+1, nq)``, ``v (K+1, nv)``, costates ``lam (K+1, nx)``,
    the variables of each stage group, and the torque-state knots ``tau (K+1, ntau)`` (empty
    without a torque filter)."""

    q: np.ndarray
    v: np.ndarray
    lam: np.ndarray
    groups: tuple
    tau: np.ndarray


@dataclass(frozen=True)
class GroupStep:
    """A group's linearization: inequalities, condensed blocks and what expansion needs, and
    its KKT residual by part (``stationarity`` in the stage's variables, ``state_equation``,
    ``local`` equalities, ``inequality`` ``g - s``, ``complementarity`` ``s z - eps``)."""

    residual: dict
    ineq: object
    r_p: np.ndarray
    r_c: np.ndarray
    condensed: condensing.Condensed
    lifted: condensing.LiftedStages | None

    @classmethod
    def of(cls, stationarity, state_equation, local, ineq, r_p, r_c, condensed, lifted) -> GroupStep:
        """The step of a group whose KKT residual has these parts (``r_p``: ``g - s``, ``r_c``:
        ``s z - eps``)."""
        residual = {
            "stationarity": stationarity,
            "state_equation": state_equation,
            "local": local,
            "inequality": r_p,
            "complementarity": r_c,
        }
        return cls(residual, ineq, r_p, r_c, condensed, lifted)


@dataclass(frozen=True)
class Linearization:
    """What the solver reads: the LQR stages in time order (an :class:`ocp.lqr.LQR`), the
    terminal stage, ``dx_0``, the KKT error, the cost, the largest equality or inequality violation, the l1 norm of the
    equality residuals (``g - s`` included), the barrier cost ``cost - eps sum(log s)``, and
    per-group data for :meth:`Formulation.direction`. With the compiled backend the per-group
    data are the kernels' workspace (:mod:`ocp.kernels`): a direction is taken from the
    formulation's latest linearization; the LQR and the numbers stay valid."""

    lqr: LQR
    terminal: TerminalLQR
    dx0: np.ndarray
    kkt_error: float
    cost: float
    constraint_violation: float
    infeasibility: float
    barrier_cost: float
    groups: tuple


@dataclass(frozen=True)
class Direction:
    """Newton direction: ``dx (K+1, nx)``, the new costates ``lam``, and per group
    ``(du, dw, beta_new, ds, dz)``; the iterate it was taken at (``origin``), the
    fraction-to-boundary step sizes ``(primal, dual)`` there (``steps``) and, from a compiled
    horizon, the iterate those sizes reach (``stepped``, :meth:`Formulation.step`'s)."""

    dx: np.ndarray
    lam: np.ndarray
    groups: tuple
    origin: Iterate | None = None
    steps: tuple | None = None
    stepped: Iterate | None = None


class Formulation:
    """The OCP ``ocp`` in the formulation ``name`` (``lifted`` or ``nonlifted``), its stages
    evaluated by the ``backend`` ``compiled`` or ``numpy`` (:func:`ocp.backends.make_stages`:
    compiled kernels, or numpy when no C compiler is available; ``self.backend`` says which).

    ``dynamics_options`` go to :func:`dynamics.constrained_dynamics` and
    :func:`dynamics.impulse_dynamics` (non-lifted, numpy backend; the compiled one solves the
    KKT system of the dynamics, the matrix that the condensing factors next)."""

    def __init__(self, ocp, name="lifted", backend="compiled", dynamics_options=None, quiet=False, init="static"):
        if name not in FORMULATIONS:
            raise ValueError(f"unknown formulation {name!r}; expected one of {FORMULATIONS}")
        if init not in INITS:
            raise ValueError(f"unknown initial guess {init!r}; expected one of {INITS}")
        self.init = init
        if backend not in BACKENDS:
            raise ValueError(f"unknown backend {backend!r}; expected one of {BACKENDS}")
        self.ocp, self.name = ocp, name
        self.model = ocp.model
        self.groups = ocp.groups()
        self.S = lifted.actuation(self.model)
        self.stages = make_stages(
            ocp, backend, nonlifted=name == "nonlifted", dynamics_options=dynamics_options, quiet=quiet
        )
        self.backend = self.stages.name
        self._redundant = {}  # contact set -> redundant (shared with for_problem's copies)
        self._slots = {}  # id(group key) -> its contacts' slot keys (shared likewise; the keys live on)
        self._flags = self._redundant_groups()
        self._structures = {}  # the compiled horizons' structures met (shared with for_problem's copies)
        self._horizon = None  # this problem's CompiledHorizon, False without one, None until decided
        self._compiled = None  # whether a problem of these kernels can have one (_compilable), until decided
        self._exact = None  # the same for the exact Hessian with the kept curvature (:meth:`_exact_horizon`)

    def for_problem(self, ocp) -> Formulation:
        """This formulation of ``ocp``: an OCP of the same model, torque state, cones and limits
        whose stages the stage backend can evaluate (compiled: their contacts and cost terms
        are slots of this formulation's kernels), with other data and possibly another contact
        schedule. The kernels are kept: an MPC loop changes problems at the cost of regrouping
        their stages. ``ValueError`` for an OCP that does not fit."""
        same = (
            ocp.model is self.model
            and ocp.ntau == self.ocp.ntau
            and ocp.friction == self.ocp.friction
            and tuple(ocp.limits) == tuple(self.ocp.limits)
        )
        if not same:
            raise ValueError("the OCP's model, torque state, cones or limits are not this formulation's")
        groups = ocp.groups()
        new = copy.copy(self)
        new.ocp, new.groups = ocp, groups
        new.stages = self.stages.for_problem(ocp, groups)
        new._flags = new._redundant_groups()
        new._horizon = new._exact = None
        return new

    def from_state(self, q0, v0, tau0=None) -> Formulation:
        """This formulation of its OCP from the initial state ``(q0, v0, tau0)`` (``tau0``: the
        torque state of a filtered OCP; None: zero), its stages and their groups kept: the
        start of :meth:`initial_variables` there."""
        new = copy.copy(self)
        new.ocp = replace(self.ocp, q0=q0, v0=v0, tau0=tau0)
        new.stages = self.stages.from_state(new.ocp)
        new._horizon = new._exact = None
        return new

    # ------------------------------------------------------------------ sizes and start

    def sizes(self) -> dict:
        """The size of the problem: ``stages``, ``impulses``, ``variables`` (knots, controls,
        and ``w`` when lifted), ``equalities`` (initial state, state equations, and the local
        equalities when lifted) and ``inequalities``."""
        nv, K, lifted = self.model.nv, self.ocp.K, self.name == "lifted"
        variables = equalities = (K + 1) * self.ocp.nx
        inequalities = 0
        q0, v0 = self.ocp.q0[None], self.ocp.v0[None]
        for group in self.groups:
            m = sum(c.dim for c in group.contact_set)
            nu = self.ocp.nu if group.kind == "contact" else 0
            g = self.stages.inequality_values(group, q0, v0, np.zeros((1, nu)), np.zeros((1, m)), self._tau0(1))
            variables += group.size * (nu + (nv + m if lifted else 0))
            equalities += group.size * (nv + m if lifted else 0)
            inequalities += group.size * g.shape[1]
        impulses = sum(s.kind == "impulse" for s in self.ocp.stages)
        return dict(stages=K, impulses=impulses, variables=variables, equalities=equalities, inequalities=inequalities)

    def initial_iterate(self, eps) -> Iterate:
        """Every knot at the initial state, no motion, no impulse, slacks and duals on the
        central path of ``eps``; the controls and forces by ``init`` (the stages of a group
        are then alike: one is computed and repeated):

        - ``static``: each contact stage in static equilibrium (least-squares ``S u + J^T f =
          g(q)``) with ``a = 0``;
        - ``zero_torque``: ``u = 0``, ``a = 0`` and a quarter of the robot's weight on the
          normal row of each contact (seed 004's start, that of the authors' code; along the
          reference's z axis for a rotated contact, :func:`_weight_share`); the
          non-lifted formulation takes ``(a, f)`` from the dynamics at ``u = 0`` instead, a
          falling robot whose forces violate their cones (the slacks start from those)."""
        K = self.ocp.K
        groups = tuple(self.initial_variables(group, eps) for group in self.groups)
        q, v = np.repeat(self.ocp.q0[None], K + 1, axis=0), np.repeat(self.ocp.v0[None], K + 1, axis=0)
        tau = np.repeat(self.ocp.tau0[None], K + 1, axis=0)  # (K+1, 0) without a filter
        return Iterate(q, v, np.zeros((K + 1, self.ocp.nx)), groups, tau)

    def initial_variables(self, group, eps) -> GroupVariables:
        """The variables of ``group`` in :meth:`initial_iterate`."""
        model, nv = self.model, self.model.nv
        q0, v0 = self.ocp.q0[None], self.ocp.v0[None]
        m = sum(c.dim for c in group.contact_set)
        if group.kind == "contact" and self.init == "zero_torque" and self.name == "nonlifted":
            S = group.size  # every stage: the Baumgarte targets differ
            qs, vs, u = np.repeat(q0, S, axis=0), np.repeat(v0, S, axis=0), np.zeros((S, self.ocp.nu))
            taus = self._tau0(S)
            w = self.stages.dynamics(group, qs, vs, u if taus is None else taus)  # the cones start violated
            g = self.stages.inequality_values(group, qs, vs, u, w[:, nv:], taus)
            s, z = pdipm.initial_slack_and_dual(g, eps)
            return GroupVariables(u, w, np.zeros_like(w), s, z)
        if group.kind == "contact" and self.init == "zero_torque":
            u, w = np.zeros((1, self.ocp.nu)), np.zeros((1, nv + m))
            offset = nv
            for c in group.contact_set:
                _weight_share(w[0, offset : offset + c.dim], c, model.mass * np.linalg.norm(model.gravity) / 4)
                offset += c.dim
        elif group.kind == "contact":
            gravity, J = self.stages.static_terms(group)
            x = np.linalg.pinv(np.concatenate((self.S, J.T), axis=1)) @ gravity  # least-norm squares
            u, w = x[None, : self.ocp.nu], np.concatenate((np.zeros(nv), x[self.ocp.nu :]))[None]
        else:
            u, w = np.zeros((1, 0)), np.zeros((1, nv + m))
        g = self.stages.inequality_values(group, q0, v0, u, w[:, nv:], self._tau0(1))
        s, z = pdipm.initial_slack_and_dual(g, eps)
        u, w, s, z = (np.repeat(x, group.size, axis=0) for x in (u, w, s, z))
        return GroupVariables(u, w, np.zeros_like(w), s, z)

    def _tau0(self, n):
        """The initial torque state repeated ``n`` times, or None without a torque filter."""
        return None if self.ocp.torque_filter is None else np.repeat(self.ocp.tau0[None], n, axis=0)

    def _taus(self, it: Iterate, index):
        """The torque states of knots ``index`` of ``it``, or None without a torque filter."""
        return None if self.ocp.torque_filter is None else it.tau[index]

    def reset_slacks(self, it: Iterate, eps) -> Iterate:
        """The same primal point with slacks and duals put back on the central path of ``eps``."""
        groups = []
        for group, gv in zip(self.groups, it.groups):
            idx, f = group.index, gv.w[:, self.model.nv :]
            g = self.stages.inequality_values(group, it.q[idx], it.v[idx], gv.u, f, self._taus(it, idx))
            s, z = pdipm.initial_slack_and_dual(g, eps)
            groups.append(replace(gv, s=s, z=z))
        return replace(it, groups=tuple(groups))

    def complementarity(self, it: Iterate) -> np.ndarray:
        """The products ``s_i z_i`` of every inequality's slack and dual at ``it``."""
        return np.concatenate([(gv.s * gv.z).ravel() for gv in it.groups] + [np.zeros(0)])

    # ------------------------------------------------------------------ linearization

    @property
    def exact_hessian(self) -> bool:
        """Whether :meth:`linearize` can add the curvature of the stages' Lagrangian (the lifted
        formulation on compiled kernels)."""
        return self.name == "lifted" and hasattr(self.stages, "curvature")

    def linearize(self, it: Iterate, eps, curvature=False, fresh=True) -> tuple:
        """The Newton system at ``it`` for the barrier ``eps``: a :class:`Linearization` and the
        iterate with the non-lifted ``w`` refreshed from the dynamics. The stage Hessians are
        Gauss-Newton's (the costs' residual Jacobians, the inequalities' barrier terms); with
        ``curvature`` (:attr:`exact_hessian` only) they add the second derivatives of the costs'
        residuals, of the local equalities and of the state equation's configuration rows,
        weighted by the residuals and the multipliers ``beta`` and ``lam`` (the Hessian of the
        Lagrangian but for the coupling of consecutive knots and the cones' curvature,
        :mod:`solvers.ipm`; :meth:`ocp.kernels.CompiledStages.curvature`); not ``fresh``, they add
        those of the last fresh linearization of this problem, at its iterate."""
        if curvature and not self.exact_hessian:
            raise ValueError("the exact Hessian needs the lifted formulation on compiled kernels")
        model, K = self.model, self.ocp.K
        _check_knots(it)
        horizon = self._exact_horizon(fresh) if curvature else self.compiled_horizon()
        if horizon is not None:
            terminal = self.stages.terminal_curvature(it.q[K], it.v[K], self._taus(it, K), fresh) if curvature else None
            compiled = horizon.linearize(it, eps, terminal, curvature and fresh)
            if compiled is not None:
                if curvature and fresh:
                    self.stages.keep_curvature(self.groups)
                return self._horizon_linearization(horizon, compiled, eps, curvature), it
            self._horizon = self._exact = False  # the steps below find where, or mark a group redundant
        nx, nm = self.ocp.nx, self.ocp.nu
        lqr, steps, groups = LQR.for_stages(K, nx, nm), [], []
        squares = cost = violation = l1 = log_slacks = 0.0
        for group, gv in zip(self.groups, it.groups):
            gv, step, terms = self._linearize_group(group, gv, it, eps, lqr, curvature, fresh)
            steps.append(step)
            groups.append(gv)
            squares, cost, log_slacks = squares + terms[0], cost + terms[1], log_slacks + float(np.log(gv.s).sum())
            violation, l1 = max(violation, terms[2]), l1 + terms[3]
        x_K = (it.q[K], it.v[K], self._taus(it, K))
        cost_T, H_T, g_T = (
            self.stages.terminal(*x_K, curvature=True, fresh=fresh) if curvature else self.stages.terminal(*x_K)
        )
        cost += cost_T
        dq0 = dynamics.difference(model, it.q[0], self.ocp.q0)
        dx0 = np.concatenate((dq0, self.ocp.v0 - it.v[0], self.ocp.tau0 - it.tau[0]))
        squares += float(((g_T - it.lam[K]) ** 2).sum()) + float((dx0**2).sum())
        violation, l1 = max(violation, float(np.abs(dx0).max())), l1 + float(np.abs(dx0).sum())
        if not np.isfinite(squares + cost):
            raise NonFiniteError("terminal cost", K)
        lin = Linearization(
            lqr,
            TerminalLQR(H_T, g_T),
            dx0,
            float(np.sqrt(squares)),
            cost,
            violation,
            l1,
            cost - eps * log_slacks,
            tuple(steps),
        )
        unchanged = all(a is b for a, b in zip(groups, it.groups))  # lifted: w is a variable, not refreshed
        return lin, it if unchanged else replace(it, groups=tuple(groups))

    def newton_step(self, it: Iterate, eps, recursion) -> tuple | None:
        """:meth:`linearize` at ``it`` for the barrier ``eps`` (Gauss-Newton's Hessian), the
        Riccati recursion of its LQR (``recursion``: the address of a compiled function of
        ``liftoff_riccati``'s signature, :mod:`solvers.riccati`) and the step of its
        :meth:`direction` at the fraction-to-boundary sizes (:meth:`max_steps`, :meth:`step`), in
        one compiled call (:meth:`ocp.horizon.CompiledHorizon.newton_step`: the same compiled
        functions as those methods, on the same arrays, bitwise): ``(linearization, solution,
        stepped)``, ``solution`` the recursion's arrays by name (``P, p, K, k, dx, du, lam``) and
        ``stepped`` the iterate reached; ``(linearization, None, None)`` where the recursion finds
        the LQR not convex. None where :meth:`linearize` goes group by group (the numpy backend,
        the non-lifted formulation, redundant contacts, a singular ``Cw`` or a value not finite,
        which it then finds)."""
        _check_knots(it)
        horizon = self.compiled_horizon()
        out = None if horizon is None else horizon.newton_step(it, eps, recursion)
        if out is None:
            if horizon is not None:
                self._horizon = False  # linearize's steps find where
            return None
        lin, solution, step = out
        return self._horizon_linearization(horizon, lin, eps), solution, None if step is None else _stepped(step)

    def compiled_horizon(self) -> CompiledHorizon | None:
        """This problem's :class:`ocp.horizon.CompiledHorizon` (made on first use), or None where
        :meth:`linearize` goes group by group: the numpy backend, the non-lifted formulation,
        redundant contacts, a kernel or library not compiled."""
        if self._horizon is None:
            self._horizon = self._make_horizon() or False
        return self._horizon or None

    def _exact_horizon(self, fresh) -> CompiledHorizon | None:
        """The :class:`ocp.horizon.CompiledHorizon` of this problem's exact linearizations
        (:meth:`linearize` with ``curvature``), or None where they go group by group: as
        :meth:`compiled_horizon`; ``fresh``, where a group's curvature kernel is not compiled;
        not ``fresh``, where a group's workspace keeps no curvature of this problem."""
        if self.compiled_horizon() is None:
            return None
        if self._exact is None:
            self._exact = self._make_horizon(exact=True) or False
        if not self._exact:
            return None
        if fresh:
            return self._exact if all(call.fresh for call in self._exact.structure.calls) else None
        return self._exact if all(self.stages.keeps_curvature(g) for g in self.groups) else None

    def _make_horizon(self, exact=False) -> CompiledHorizon | None:
        stages, model = self.stages, self.model
        if not self._compilable():
            return None
        kernel, constants = stages.terminal_inputs
        calls = [None if self.redundant(g) else stages.group_linearization(g, exact) for g in self.groups]
        if any(call is None for call in calls):
            return None
        key = (self.ocp.K, *map(id, calls))  # the groups' workspaces, in order (the calls keep them alive)
        structure = self._structures.get(key)
        if structure is None:
            if len(self._structures) >= KEPT:  # structures that do not recur: start over
                self._structures.clear()
            structure = self._structures[key] = Structure(calls, self.ocp.K, model, self.ocp.ntau, self.ocp.nu, kernel)
        groups = self.groups

        def prepare():
            for group in groups:
                stages.write_constants(group)

        return CompiledHorizon(structure, self.ocp, [g.index for g in groups], constants, prepare)

    def _compilable(self) -> bool:
        """Whether this formulation's problems can have a :class:`ocp.horizon.CompiledHorizon`:
        lifted, its stages, terminal kernel and manifold functions compiled (decided once for
        :meth:`for_problem`'s copies, which share the kernels)."""
        if self._compiled is None:
            stages = self.stages
            self._compiled = (
                self.name == "lifted"
                and hasattr(stages, "group_linearization")
                and manifold.compiled(self.model) is not None
                and getattr(stages.terminal_inputs[0], "_batch", None) is not None
            )
        return self._compiled

    def _horizon_linearization(self, horizon, lin, eps, exact=False) -> Linearization:
        """The :class:`Linearization` of a compiled horizon's ``lin`` at the barrier ``eps``
        (``exact``: with the exact Hessian)."""
        scalars = lin.scalars
        self.stages.kernel_seconds += scalars["seconds"]
        cost, barrier_cost = scalars["cost"], scalars["cost"] - eps * scalars["log_slacks"]
        terminal = TerminalLQR(lin.H_T, lin.g_T)
        numbers = (scalars["kkt_error"], cost, scalars["violation"], scalars["l1"], barrier_cost)
        return Linearization(lin.lqr, terminal, lin.dx0, *numbers, HorizonSteps(self, horizon, lin, exact))

    def _linearize_group(self, group, gv, it, eps, lqr, curvature=False, fresh=True):
        """One group's condensed blocks, written into ``lqr``; its variables (the non-lifted
        ``w`` refreshed), its step data and ``(squared KKT residual, cost, max constraint
        violation, l1 norm of the equality residuals)``."""
        nx, idx, nxt = self.ocp.nx, group.rows, group.next_rows
        fused = self._fused(group, gv, it, eps, lqr, curvature)
        if fused is None:
            q, v, tau = it.q[idx], it.v[idx], self._taus(it, idx)
            if self.name == "nonlifted":  # w is the dynamics of (q, v, u), or of (q, v, tau) with a filter
                gv = replace(gv, w=self.stages.dynamics(group, q, v, gv.u if tau is None else tau))
                check_finite("contact dynamics", group, gv.w)
            ev = self.stages.evaluate(group, q, v, gv.u, gv.w, it.q[nxt], it.v[nxt], tau, self._taus(it, nxt))
            if curvature:
                ev = self.stages.curvature(group, ev, gv.beta, it.lam[nxt], fresh)
        nz = nx + gv.u.shape[1]
        if self.name == "lifted":  # eliminate w with the local equalities, which keep a residual
            if fused is None:
                terms = interior.terms(ev, gv.s, gv.z, eps, gv.beta, it.lam[idx], it.lam[nxt], self.backend)
                condensed = None
            else:
                ev, terms, condensed = fused
            r_p, r_c, stationarity, local = terms.r_p, terms.r_c, terms.stationarity, ev.c
            squares, violation, l1 = terms.squares, terms.violation, terms.l1
            stages = condensing.LiftedStages(nx, nz - nx, terms.H, terms.g, ev.C, ev.c, ev.A, ev.b, ev.calls)
            if condensed is None:  # not fused, or Cw singular (the condensing finds it again, then the redundant one)
                condensed = self._condense(group, stages, ev.supports, lqr)
        else:  # w is the dynamics: the same elimination with the derivatives T and t = 0
            r_p, r_c = pdipm.residuals(ev.ineq.g, gv.s, gv.z, eps)
            grad = ev.g - ev.ineq.transpose_dot(gv.z)  # d/dy (cost - z^T (g - s))
            H, g = pdipm.condense(ev.ineq, gv.s, gv.z, r_p, r_c, ev.H, grad.copy())  # into the evaluation's H
            stages = condensing.LiftedStages(nx, nz - nx, H, g, ev.C, np.zeros_like(ev.c), ev.A, ev.b)
            condensed, local = self._condense(group, stages, ev.supports, lqr), np.zeros((group.size, 0))
            stages = None
            Z = np.concatenate((np.broadcast_to(np.eye(nz), (group.size, nz, nz)), condensed.T), axis=1)
            AB = np.concatenate((condensed.A, condensed.B), axis=2)
            stationarity = np.einsum("syz,sy->sz", Z, grad) + np.einsum("sxz,sx->sz", AB, it.lam[nxt])
            stationarity[:, :nx] -= it.lam[idx]
            squares, violation, l1 = interior.norms(stationarity, ev.b, local, r_p, r_c, ev.ineq.g)
        b = ev.b
        if not np.isfinite(squares):  # find where (a finite overflow goes on)
            check_finite("state equation", group, b)
            check_finite("KKT residual", group, stationarity, local, r_p, r_c)
        terms = (squares, float(ev.cost.sum()), violation, l1)
        return gv, GroupStep.of(stationarity, b, local, ev.ineq, r_p, r_c, condensed, stages), terms

    def _fused(self, group, gv, it, eps, lqr, curvature):
        """The lifted linearization of ``group`` in one compiled call
        (:meth:`ocp.kernels.CompiledStages.linearize_group`: ``(StageEval, Terms, Condensed or None)``),
        or None where its steps run one by one: the numpy backend, the non-lifted formulation,
        the curvature, redundant contacts."""
        linearize = getattr(self.stages, "linearize_group", None)
        if linearize is None or self.name != "lifted" or curvature or self.redundant(group):
            return None
        return linearize(group, gv, it, eps, lqr)

    def redundant(self, group) -> bool:
        """Whether ``group``'s contacts are redundant: the same contact listed twice, or a
        contact Jacobian of rank below its rows at the initial configuration (decided once per
        contact set, when the formulation is made; a singular ``Cw`` met later also marks it).
        Its stages are condensed by :func:`ocp.condensing.condense_redundant` (the least-norm
        forces, seed 000)."""
        flag = self._flags.get(id(group))
        return self._redundant_groups((group,))[id(group)] if flag is None else flag

    def _redundant_groups(self, groups=None) -> dict:
        """``{id(group): redundant}`` for ``groups`` (default: the formulation's), the contact
        sets not met before checked together (one Jacobian of their contacts at ``q0``)."""
        groups = self.groups if groups is None else groups
        keys = {id(g): self._slot_keys(g) for g in groups}
        new = {key: g.contact_set for g in groups for key in [keys[id(g)]] if key not in self._redundant}
        if new:
            self._redundant.update(_redundant_sets(self.model, self.ocp.q0, new))
        return {i: self._redundant[key] for i, key in keys.items()}

    def _slot_keys(self, group) -> tuple:
        """The slot keys of ``group``'s contacts, kept by its key (interned: equal keys are one
        object, :func:`ocp.problem._stage_key`), which fixes them."""
        keys = self._slots.get(id(group.key))
        if keys is None:
            keys = self._slots[id(group.key)] = tuple(slot_key(c) for c in group.contact_set)
        return keys

    def _condense(self, group, stages, supports, lqr):
        lifted, into = self.name == "lifted", (lqr, group.index)
        if not self.redundant(group):
            try:
                return condensing.condense(stages, self.backend, supports, into=into)
            except np.linalg.LinAlgError:  # Cw singular: redundant at this configuration
                self._redundant[self._slot_keys(group)] = True
                self._flags[id(group)] = True
        return condensing.condense(stages, self.backend, supports, redundant=True, lifted=lifted, into=into)

    # ------------------------------------------------------------------ expansion and step

    def direction(self, it: Iterate, lin: Linearization, sol) -> Direction:
        """Expand the Riccati solution ``sol`` into the full primal-dual direction."""
        dx, lam, nx = np.asarray(sol.dx), np.asarray(sol.lam), self.ocp.nx
        if isinstance(lin.groups, HorizonSteps):  # expansion and step in one compiled call
            step = lin.groups.horizon.step(it, lin.groups.lin, dx, sol.controls, lam)
            return Direction(dx, lam, step.directions, it, step.steps, _stepped(step))
        groups, primal, dual = [], 1.0, 1.0
        for group, gv, step in zip(self.groups, it.groups, lin.groups):
            calls = None if step.lifted is None else step.lifted.calls
            fused = (calls or {}).get("group") if step.condensed.factors is not None else None
            if fused:  # the steps below in one compiled call (ocp.group), bitwise
                du, dw, beta, ds, dz, (a_p, a_d) = fused.expand(
                    group.index, dx, sol.controls, lam, step.lifted.g, step.condensed, gv.s, gv.z, step.r_p, step.r_c
                )
            else:
                idx = group.rows
                z = np.concatenate((dx[idx], sol.controls[idx, : gv.u.shape[1]]), axis=1)
                if step.lifted is not None:
                    dw, beta = condensing.expand(step.lifted, step.condensed, z, lam[group.next_rows])
                else:
                    dw, beta = np.einsum("swz,sz->sw", step.condensed.T, z), gv.beta
                ineq, backend = step.ineq, self.backend
                ds, dz, (a_p, a_d) = interior.expand(ineq, z, dw, gv.s, gv.z, step.r_p, step.r_c, backend, calls)
                du = z[:, nx:]
            primal, dual = min(primal, a_p), min(dual, a_d)
            groups.append((du, dw, beta, ds, dz))
        return Direction(dx, lam, tuple(groups), it, (primal, dual))

    def max_steps(self, it: Iterate, d: Direction):
        """Fraction-to-boundary step sizes ``(primal, dual)`` of ``d`` from ``it`` (found by
        :meth:`direction` when ``d`` was taken at ``it``)."""
        if d.origin is it:
            return d.steps
        alpha_p = min([1.0] + [pdipm.fraction_to_boundary(gv.s, g[3]) for gv, g in zip(it.groups, d.groups)])
        alpha_d = min([1.0] + [pdipm.fraction_to_boundary(gv.z, g[4]) for gv, g in zip(it.groups, d.groups)])
        return alpha_p, alpha_d

    def step(self, it: Iterate, d: Direction, alpha_p, alpha_d) -> Iterate:
        if d.stepped is not None and d.origin is it and (alpha_p, alpha_d) == d.steps:
            return d.stepped  # made with the direction, by the same equations
        nv = self.model.nv
        q = dynamics.integrate(self.model, it.q, alpha_p * d.dx[:, :nv])
        v = it.v + alpha_p * d.dx[:, nv : 2 * nv]
        tau = it.tau + alpha_p * d.dx[:, 2 * nv :]
        groups = tuple(
            GroupVariables(
                gv.u + alpha_p * du,
                gv.w + alpha_p * dw,
                gv.beta + alpha_d * (beta - gv.beta),
                gv.s + alpha_p * ds,
                gv.z + alpha_d * dz,
            )
            for gv, (du, dw, beta, ds, dz) in zip(it.groups, d.groups)
        )
        return Iterate(q, v, it.lam + alpha_d * (d.lam - it.lam), groups, tau)

    # ------------------------------------------------------------------ results

    def trajectories(self, it: Iterate) -> dict:
        """The solution by stage: ``q, v, tau (K+1, .)`` (``tau`` empty without a torque filter);
        ``u (K, nu)`` (zero at impulse stages);
        ``a (K, nv)`` (``dv`` at impulse stages); ``f``, a list of each stage's ``(m,)`` contact
        forces (impulses) in their contacts' frames; ``forces``, ``{frame: (K, 3)}`` the
        translational force [N] of each contact frame in the world axes at contact stages (zero
        elsewhere), and ``impulses`` the same [N s] at impulse stages; ``kinds (K,)``."""
        K, nv = self.ocp.K, self.model.nv
        u, a, f = np.zeros((K, self.ocp.nu)), np.zeros((K, nv)), [None] * K
        by_kind: dict = {"contact": {}, "impulse": {}}
        for group, gv in zip(self.groups, it.groups):
            idx = group.index
            if group.kind == "contact":
                u[idx] = gv.u
            a[idx] = gv.w[:, :nv]
            for j, k in enumerate(idx):
                f[k] = gv.w[j, nv:].copy()
            offset = nv
            for c in group.contact_set:
                rows = gv.w[:, offset : offset + c.dim]
                offset += c.dim
                if not c.translational:
                    continue
                force = np.zeros((len(idx), 3))
                force[:, list(c.rows)] = rows
                if c.rotation is not None:  # R_c f: in the reference's axes
                    force = force @ c.rotation.T
                if c.reference is dynamics.ReferenceFrame.LOCAL:
                    R, _ = dynamics.frame_placement(self.model, it.q[idx], c.frame)
                    force = np.einsum("sij,sj->si", R, force)
                by_kind[group.kind].setdefault(c.frame, np.zeros((K, 3)))[idx] += force  # a frame listed twice: the sum
        frames = list(dict.fromkeys([*by_kind["contact"], *by_kind["impulse"]]))
        forces, impulses = ({frame: d.get(frame, np.zeros((K, 3))) for frame in frames} for d in by_kind.values())
        kinds = np.array([stage.kind for stage in self.ocp.stages])
        return {
            "q": it.q,
            "v": it.v,
            "tau": it.tau,
            "u": u,
            "a": a,
            "f": f,
            "forces": forces,
            "impulses": impulses,
            "kinds": kinds,
        }


class HorizonSteps(Sequence):
    """:attr:`Linearization.groups` of a compiled horizon's linearization ``lin``
    (:class:`ocp.horizon.CompiledHorizon`) of ``formulation`` (``exact``: with the exact Hessian):
    each group's :class:`GroupStep`, made when read."""

    def __init__(self, formulation, horizon, lin, exact=False):
        self.formulation, self.horizon, self.lin, self.exact = formulation, horizon, lin, exact

    def __len__(self) -> int:
        return len(self.formulation.groups)

    def __getitem__(self, i) -> GroupStep:
        f = self.formulation
        i = range(len(self))[i]
        group, out = f.groups[i], self.horizon.group_outputs(self.lin, i)
        ev, nu = f.stages.evaluation(group, self.exact), f.ocp.nu if group.kind == "contact" else 0
        stages = condensing.LiftedStages(f.ocp.nx, nu, ev.H, out["gc"], ev.C, ev.c, ev.A, ev.b, ev.calls)
        condensed = condensing.Condensed(out["T"], out["t"], self.lin.lqr, group.index, (out["LU"], out["piv"]))
        return GroupStep.of(out["stationarity"], ev.b, ev.c, ev.ineq, out["r_p"], out["r_c"], condensed, stages)


#: A contact Jacobian whose smallest singular value is below this fraction of its largest is
#: rank deficient (redundant contacts give 1e-16).
RANK_RTOL = 1e-9


def _redundant_sets(model, q, sets) -> dict:
    """``{key: redundant}`` for contact sets ``{key: contacts}``: a contact listed twice, or a
    Jacobian at ``q`` with fewer independent rows than rows (one Jacobian of all their contacts)."""
    rows = jacobian_rows(model, q, [c for contacts in sets.values() for c in contacts])
    flags = {}
    for key in sets:
        if not key:
            flags[key] = False
        elif len(set(key)) < len(key):
            flags[key] = True
        else:
            Jk = np.concatenate([rows[k] for k in key])
            sigma = np.linalg.svd(Jk, compute_uv=False)
            flags[key] = bool(Jk.shape[0] > Jk.shape[1] or sigma[-1] <= RANK_RTOL * sigma[0])
    return flags


def _check_knots(it: Iterate):
    """Raise :class:`NonFiniteError` at the first knot of ``it`` whose configuration or velocity
    is not finite."""
    for name, x in (("configuration q", it.q), ("velocity v", it.v)):
        if not np.isfinite(x).all():
            raise NonFiniteError(name, int(np.argmax(~np.isfinite(x).all(axis=1))), "knot")


def _stepped(step) -> Iterate:
    """The iterate of a compiled horizon's step (:class:`ocp.horizon.HorizonStep`)."""
    return Iterate(step.q, step.v, step.lam, tuple(GroupVariables(*x) for x in step.variables), step.tau)


def check_finite(quantity, group, *arrays):
    """Raise :class:`NonFiniteError` at the first stage of ``group`` where an array is not finite."""
    for x in arrays:
        bad = ~np.all(np.isfinite(x.reshape(len(x), -1)), axis=1)
        if np.any(bad):
            raise NonFiniteError(quantity, int(group.index[np.argmax(bad)]))


def _weight_share(rows, contact, weight):
    """Write the ``zero_torque`` start's force of ``contact`` into its ``rows``: ``weight`` along
    the z axis of its reference (the world's, the frame's in LOCAL), that is on its z row, or
    with a ``rotation`` ``R_c`` the components ``weight R_c^T e_z`` of the rows it has."""
    if contact.rotation is not None:
        rows[:] = weight * contact.rotation[2, list(contact.rows)]
    elif 2 in contact.rows:  # the normal (z) row
        rows[contact.rows.index(2)] = weight
