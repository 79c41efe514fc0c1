"""Newton steps of an :class:`ocp.problem.OCP` in the lifted or the non-lifted formulation.

Both formulations share the knots ``x_k = (q_k, v_k)``, the costates ``lam_k`` (``lam_0``
for the initial state, ``lam_{k+1}`` for the state equation of stage ``k``) and, per stage,
the control ``u``, the contact variables ``w = (a, f)`` (impulse: ``(dv, Lambda)``) and the
slacks ``s`` and duals ``z`` of its inequalities. They differ in how ``w`` is fixed:

- **lifted** (seed 004 Sec. III-A, B): ``w`` is a variable with the local equalities of
  :mod:`ocp.lifted` and their multipliers ``beta``; each Newton step condenses ``dw`` out
  (``dw = T (dx, du) + t`` from the equalities) and expands it afterwards;
- **non-lifted**: ``w`` is the constrained forward (impulse) dynamics of ``(q, v, u)``,
  recomputed at every iterate; its derivatives are the ``T`` of the same elimination, with
  ``t = 0``.

The Lagrangian of a stage is ``cost(y) - z^T (g(y) - s) + beta^T c(y) + lam_{k+1}^T F(y)``
(no ``beta`` term when non-lifted), with ``F`` the state equation premultiplied as in
:mod:`ocp.lifted` (``-lam_{k+1}`` on ``x_{k+1}``). Its KKT residual has the stationarity in
the stage's variables, the residuals of ``F``, ``c`` and ``g - s``, and the perturbed
complementarity ``s z - eps`` (:mod:`ocp.pdipm`); the error is their global l2 norm.
Every stage group (:meth:`ocp.problem.OCP.groups`) is evaluated in one batched pass.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

import dynamics

from . import condensing, lifted, pdipm
from .costs import StageVariables
from .friction import friction_cones
from .lqr import TerminalLQR

FORMULATIONS = ("lifted", "nonlifted")


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
    """A primal-dual point: knots ``q (K+1, nq)``, ``v (K+1, nv)``, costates ``lam (K+1, 2 nv)``
    and the variables of each stage group."""

    q: np.ndarray
    v: np.ndarray
    lam: np.ndarray
    groups: tuple


@dataclass(frozen=True)
class GroupStep:
    """A group's linearization: inequalities, condensed blocks and what expansion needs, and
    its KKT residual by part (``stationarity`` in the stage's variables, ``state_equation``,
    ``local`` equalities, ``inequality`` ``g - s``, ``complementarity`` ``s z - eps``)."""

    residual: dict
    G: np.ndarray
    r_p: np.ndarray
    r_c: np.ndarray
    condensed: condensing.Condensed
    lifted: condensing.LiftedStages | None


@dataclass(frozen=True)
class Linearization:
    """What the solver reads: the LQR stages in time order, the terminal stage, ``dx_0``, the
    KKT error, the cost, the largest equality or inequality violation, the l1 norm of the
    equality residuals (``g - s`` included), the barrier cost ``cost - eps sum(log s)``, and
    per-group data for :meth:`Formulation.direction`."""

    stages: list
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
    """Newton direction: ``dx (K+1, 2 nv)``, the new costates ``lam``, and per group
    ``(du, dw, beta_new, ds, dz)``."""

    dx: np.ndarray
    lam: np.ndarray
    groups: tuple


class Formulation:
    """The OCP ``ocp`` in the formulation ``name`` (``lifted`` or ``nonlifted``).

    ``dynamics_options`` go to :func:`dynamics.constrained_dynamics` and
    :func:`dynamics.impulse_dynamics` (non-lifted only)."""

    def __init__(self, ocp, name="lifted", dynamics_options=None):
        if name not in FORMULATIONS:
            raise ValueError(f"unknown formulation {name!r}; expected one of {FORMULATIONS}")
        self.ocp, self.name = ocp, name
        self.model = ocp.model
        self.groups = ocp.groups()
        self.terminal_cost = ocp.terminal()
        self.S = lifted.actuation(self.model)
        self.dynamics_options = dict(dynamics_options or {})
        self.limits = _limit_rows(self.model, ocp.limits)

    # ------------------------------------------------------------------ sizes and start

    def initial_iterate(self, eps) -> Iterate:
        """Every knot at the initial state, no motion;
        each contact stage in static equilibrium (least-squares ``S u + J^T f = g(q)``) with
        ``a = 0``; no impulse; slacks and duals on the central path of ``eps``."""
        model, K = self.model, self.ocp.K
        q, v = np.tile(self.ocp.q0, (K + 1, 1)), np.tile(self.ocp.v0, (K + 1, 1))
        groups = []
        for group in self.groups:
            qg, m, nv = q[group.index], sum(c.dim for c in group.contacts), model.nv
            if group.kind == "contact":
                J = dynamics.contact_jacobian(model, qg, group.contacts) if group.contacts else np.zeros((group.size, 0, nv))
                static = np.concatenate((np.broadcast_to(self.S, (group.size,) + self.S.shape), np.swapaxes(J, 1, 2)), axis=2)
                gravity = dynamics.generalized_gravity(model, qg)
                x = (np.linalg.pinv(static) @ gravity[:, :, None])[:, :, 0]  # minimum-norm least squares
                u, w = x[:, : self.ocp.nu], np.concatenate((np.zeros((group.size, nv)), x[:, self.ocp.nu :]), axis=1)
            else:
                u, w = np.zeros((group.size, 0)), np.zeros((group.size, nv + m))
            vars_ = GroupVariables(u, w, np.zeros_like(w), None, None)
            g, _ = self._inequalities(group, qg, v[group.index], u, w[:, nv:])
            s, z = pdipm.initial_slack_and_dual(g, eps)
            groups.append(replace(vars_, s=s, z=z))
        return Iterate(q, v, np.zeros((K + 1, 2 * model.nv)), tuple(groups))

    def reset_slacks(self, it: Iterate, eps) -> Iterate:
        """The same primal point with slacks and duals put back on the central path of ``eps``."""
        groups = []
        for group, gv in zip(self.groups, it.groups):
            g, _ = self._inequalities(group, it.q[group.index], it.v[group.index], gv.u, gv.w[:, self.model.nv :])
            s, z = pdipm.initial_slack_and_dual(g, eps)
            groups.append(replace(gv, s=s, z=z))
        return replace(it, groups=tuple(groups))

    # ------------------------------------------------------------------ inequalities

    def _inequalities(self, group, q, v, u, f):
        """``g (S, ni) >= 0`` and ``G = dg/dy (S, ni, ny)`` for ``y = (dq, dv, du, dw)``: at
        contact stages the friction cones of the forces and the joint limits. Impulses are not
        constrained (as in seed 004): the standing feet's impulses sit at the apex of their
        cones, where the cone rows are degenerate and the interior point stalls."""
        S, nv, nu = len(q), self.model.nv, u.shape[1]
        m = f.shape[1]
        ny = 2 * nv + nu + nv + m
        if group.kind != "contact":
            return np.zeros((S, 0)), np.zeros((S, 0, ny))
        blocks, jacobians = [], []
        cones = [i for i, c in enumerate(group.contacts) if c.kind == "3D"]
        if self.ocp.friction is not None and cones:
            offsets = np.cumsum([0] + [c.dim for c in group.contacts])
            cols = np.concatenate([np.arange(offsets[i], offsets[i] + 3) for i in cones])
            g, dg_dq, dg_df = friction_cones(self.model, q, f[:, cols], [group.contacts[i] for i in cones], self.ocp.friction)
            G = np.zeros((S, g.shape[1], ny))
            G[:, :, :nv] = dg_dq
            G[:, :, 2 * nv + nu + nv + cols] = dg_df
            blocks.append(g)
            jacobians.append(G)
        values = {"position": q, "velocity": v, "torque": u}
        offsets = {"position": 0, "velocity": nv, "torque": 2 * nv}
        for name, (rows, bound) in self.limits.items():
            x = values[name][:, rows[0]]
            blocks += [x - bound[0], bound[1] - x]
            for sign in (1.0, -1.0):
                G = np.zeros((S, len(bound[0]), ny))
                G[:, np.arange(len(bound[0])), offsets[name] + rows[1]] = sign
                jacobians.append(G)
        if not blocks:
            return np.zeros((S, 0)), np.zeros((S, 0, ny))
        return np.concatenate(blocks, axis=1), np.concatenate(jacobians, axis=1)

    # ------------------------------------------------------------------ linearization

    def _local(self, group, q, v, gv):
        """``w`` (non-lifted: from the dynamics) and the elimination ``T`` (``None`` when
        lifted: it comes from the local equalities)."""
        model, nv = self.model, self.model.nv
        if self.name == "lifted":
            return gv.w, None
        opts = self.dynamics_options
        if group.kind == "contact" and not group.contacts:  # a flight: the unconstrained dynamics
            tau = gv.u @ self.S.T
            da_dq, da_dv, da_dtau = dynamics.aba_derivatives(model, q, v, tau)
            return dynamics.aba(model, q, v, tau), np.concatenate((da_dq, da_dv, da_dtau @ self.S), axis=2)
        if group.kind == "contact":
            tau = gv.u @ self.S.T
            a, f = dynamics.constrained_dynamics(model, q, v, tau, group.contacts, **opts)
            da_dq, da_dv, da_dtau, df_dq, df_dv, df_dtau = dynamics.constrained_dynamics_derivatives(model, q, v, tau, group.contacts, **_derivative_options(opts))
            T = np.concatenate(
                (np.concatenate((da_dq, da_dv, da_dtau @ self.S), axis=2), np.concatenate((df_dq, df_dv, df_dtau @ self.S), axis=2)), axis=1
            )
            return np.concatenate((a, f), axis=1), T
        v_plus, impulse = dynamics.impulse_dynamics(model, q, v, group.contacts, **opts)
        dvp_dq, dvp_dv, dl_dq, dl_dv = dynamics.impulse_dynamics_derivatives(model, q, v, group.contacts, **_derivative_options(opts))
        T = np.concatenate((np.concatenate((dvp_dq, dvp_dv - np.eye(nv)), axis=2), np.concatenate((dl_dq, dl_dv), axis=2)), axis=1)
        return np.concatenate((v_plus - v, impulse), axis=1), T

    def linearize(self, it: Iterate, eps) -> tuple:
        """The Newton system at ``it`` for the barrier ``eps``: a :class:`Linearization` and the
        iterate with the non-lifted ``w`` refreshed from the dynamics."""
        model, K = self.model, self.ocp.K
        for name, x in (("configuration q", it.q), ("velocity v", it.v)):
            bad = ~np.all(np.isfinite(x), axis=1)
            if np.any(bad):
                raise NonFiniteError(name, int(np.argmax(bad)), "knot")
        stages, steps, groups = [None] * K, [], []
        squares = cost = violation = l1 = log_slacks = 0.0
        for group, gv in zip(self.groups, it.groups):
            gv, step, condensed, terms = self._linearize_group(group, gv, it, eps)
            for j, k in enumerate(group.index):
                stages[k] = condensed.stage(j, 2 * model.nv)
            steps.append(step)
            groups.append(gv)
            squares, cost, log_slacks = squares + terms[0], cost + terms[1], log_slacks + float(np.sum(np.log(gv.s)))
            violation, l1 = max(violation, terms[2]), l1 + terms[3]
        zT = StageVariables(it.q[K:], it.v[K:], *(np.zeros((1, 0)),) * 3)
        H_T, g_T = self.terminal_cost.gauss_newton(model, zT)
        cost += sum(float(np.sum(c)) for c in self.terminal_cost.evaluate(model, zT).values())
        dx0 = np.concatenate((dynamics.difference(model, it.q[0], self.ocp.q0), self.ocp.v0 - it.v[0]))
        squares += float(np.sum((g_T[0] - it.lam[K]) ** 2)) + float(np.sum(dx0**2))
        violation, l1 = max(violation, float(np.max(np.abs(dx0)))), l1 + float(np.sum(np.abs(dx0)))
        if not np.isfinite(squares + cost):
            raise NonFiniteError("terminal cost", K)
        lin = Linearization(stages, TerminalLQR(H_T[0], g_T[0]), dx0, float(np.sqrt(squares)), cost, violation, l1, cost - eps * log_slacks, tuple(steps))
        return lin, replace(it, groups=tuple(groups))

    def _linearize_group(self, group, gv, it, eps):
        """One group's condensed blocks, its step data and ``(squared KKT residual, cost,
        max constraint violation)``."""
        model, nv = self.model, self.model.nv
        nx, idx = 2 * nv, group.index
        q, v, q_next, v_next = it.q[idx], it.v[idx], it.q[idx + 1], it.v[idx + 1]
        w, T = self._local(group, q, v, gv)
        _finite("contact dynamics", group, w)
        gv = replace(gv, w=w)
        a, f = w[:, :nv], w[:, nv:]
        nz = nx + gv.u.shape[1]
        z = StageVariables(q, v, gv.u, a, f)
        H, g = group.costs.gauss_newton(model, z)
        cost = sum(float(np.sum(c)) for c in group.costs.evaluate(model, z).values())
        gin, G = self._inequalities(group, q, v, gv.u, f)
        r_p, r_c = pdipm.residuals(gin, gv.s, gv.z, eps)
        H_in, g_in = pdipm.condense(G, gv.s, gv.z, r_p, r_c)
        grad = g - np.einsum("smy,sm->sy", G, gv.z)  # d/dy (cost - z^T (g - s))
        if T is None:  # lifted: eliminate w with the local equalities, which keep a residual
            if group.kind == "contact":
                stages = lifted.contact_stages(model, group.contacts, group.dt, q, v, a, f, gv.u, q_next, v_next, H + H_in, grad + g_in)
            else:
                stages = lifted.impulse_stages(model, group.contacts, q, v, a, f, q_next, v_next, H + H_in, grad + g_in)
            condensed, A, b, local = condensing.condense(stages), stages.A, stages.b, stages.c
            stationarity = grad + np.einsum("swy,sw->sy", stages.C, gv.beta) + np.einsum("sxy,sx->sy", A, it.lam[idx + 1])
        else:  # non-lifted: w is the dynamics, eliminated with its derivatives T
            stages, local = None, np.zeros((group.size, 0))
            A, b = lifted.state_equation(model, q, v, a, q_next, v_next, group.dt, gv.u.shape[1], w.shape[1])
            condensed = condensing.eliminate(H + H_in, grad + g_in, A, b, nz, T, np.zeros(w.shape))
            Z = np.concatenate((np.broadcast_to(np.eye(nz), (group.size, nz, nz)), T), axis=1)
            AB = np.concatenate((condensed.A, condensed.B), axis=2)
            stationarity = np.einsum("syz,sy->sz", Z, grad) + np.einsum("sxz,sx->sz", AB, it.lam[idx + 1])
        stationarity[:, :nx] -= it.lam[idx]
        _finite("state equation", group, b)
        _finite("KKT residual", group, stationarity, local, r_p, r_c)
        squares = sum(float(np.sum(x**2)) for x in (stationarity, b, local, r_p, r_c))
        violation = max(float(np.max(np.abs(x), initial=0.0)) for x in (b, local, np.minimum(gin, 0.0)))
        l1 = sum(float(np.sum(np.abs(x))) for x in (b, local, r_p))
        residual = {"stationarity": stationarity, "state_equation": b, "local": local, "inequality": r_p, "complementarity": r_c}
        return gv, GroupStep(residual, G, r_p, r_c, condensed, stages), condensed, (squares, cost, violation, l1)

    # ------------------------------------------------------------------ expansion and step

    def direction(self, it: Iterate, lin: Linearization, sol) -> Direction:
        """Expand the Riccati solution ``sol`` into the full primal-dual direction."""
        dx, lam = np.asarray(sol.dx), np.asarray(sol.lam)
        groups = []
        for group, gv, step in zip(self.groups, it.groups, lin.groups):
            idx = group.index
            du = np.stack([sol.du[k] for k in idx])
            if step.lifted is not None:
                dw, beta = condensing.expand(step.lifted, step.condensed, dx[idx], du, lam[idx + 1])
            else:
                z = np.concatenate((dx[idx], du), axis=1)
                dw, beta = np.einsum("swz,sz->sw", step.condensed.T, z), gv.beta
            dy = np.concatenate((dx[idx], du, dw), axis=1)
            ds, dz = pdipm.expand(step.G, dy, gv.s, gv.z, step.r_p, step.r_c)
            groups.append((du, dw, beta, ds, dz))
        return Direction(dx, lam, tuple(groups))

    def max_steps(self, it: Iterate, d: Direction):
        """Fraction-to-boundary step sizes ``(primal, dual)``."""
        alpha_p = min([1.0] + [pdipm.fraction_to_boundary(gv.s, g[3]) for gv, g in zip(it.groups, d.groups)])
        alpha_d = min([1.0] + [pdipm.fraction_to_boundary(gv.z, g[4]) for gv, g in zip(it.groups, d.groups)])
        return alpha_p, alpha_d

    def step(self, it: Iterate, d: Direction, alpha_p, alpha_d) -> Iterate:
        nv = self.model.nv
        q = dynamics.integrate(self.model, it.q, alpha_p * d.dx[:, :nv])
        v = it.v + alpha_p * d.dx[:, nv:]
        groups = tuple(
            GroupVariables(gv.u + alpha_p * du, gv.w + alpha_p * dw, gv.beta + alpha_d * (beta - gv.beta), gv.s + alpha_p * ds, gv.z + alpha_d * dz)
            for gv, (du, dw, beta, ds, dz) in zip(it.groups, d.groups)
        )
        return Iterate(q, v, it.lam + alpha_d * (d.lam - it.lam), groups)

    # ------------------------------------------------------------------ results

    def trajectories(self, it: Iterate) -> dict:
        """The solution by stage: ``q, v (K+1, .)``; ``u (K, nu)`` (zero at impulse stages);
        ``a (K, nv)`` (``dv`` at impulse stages); ``f``, a list of each stage's ``(m,)`` contact
        forces (impulses) in their contacts' frames; ``forces``, ``{frame: (K, 3)}`` the
        translational force (impulse) of each contact frame in the world axes, zero when the
        frame is not in contact; ``kinds (K,)``."""
        K, nv = self.ocp.K, self.model.nv
        u, a, f = np.zeros((K, self.ocp.nu)), np.zeros((K, nv)), [None] * K
        forces: dict = {}
        for group, gv in zip(self.groups, it.groups):
            idx = group.index
            if group.kind == "contact":
                u[idx] = gv.u
            a[idx] = gv.w[:, :nv]
            for j, k in enumerate(idx):
                f[k] = gv.w[j, nv:].copy()
            offset = nv
            for c in group.contacts:
                rows = gv.w[:, offset : offset + c.dim]
                offset += c.dim
                if not c.translational:
                    continue
                force = np.zeros((len(idx), 3))
                force[:, list(c.rows)] = rows
                if c.reference is dynamics.ReferenceFrame.LOCAL:
                    R, _ = dynamics.frame_placement(self.model, it.q[idx], c.frame)
                    force = np.einsum("sij,sj->si", R, force)
                forces.setdefault(c.frame, np.zeros((K, 3)))[idx] = force
        kinds = np.array([stage.kind for stage in self.ocp.stages])
        return {"q": it.q, "v": it.v, "u": u, "a": a, "f": f, "forces": forces, "kinds": kinds}


def _derivative_options(opts):
    return {k: v for k, v in opts.items() if k != "algorithm"}


def _finite(quantity, group, *arrays):
    for x in arrays:
        bad = ~np.all(np.isfinite(x.reshape(len(x), -1)), axis=1)
        if np.any(bad):
            raise NonFiniteError(quantity, int(group.index[np.argmax(bad)]))


def _limit_rows(model, limits):
    """``{name: ((columns in the variable, columns in its tangent), (lower, upper))}`` for the
    actuated joints with finite limits."""
    first = 6 if model.has_free_flyer else 0
    dofs = np.arange(first, model.nv)
    joints = [j for j in range(len(model.joint_names)) if model.nvs[j] == 1 and model.idx_v[j] >= first]
    out = {}
    if "position" in limits:
        bounded = [j for j in joints if model.nqs[j] == 1]
        qi = np.array([model.idx_q[j] for j in bounded], dtype=int)
        vi = np.array([model.idx_v[j] for j in bounded], dtype=int)
        lo, hi = model.lower_position_limit[qi], model.upper_position_limit[qi]
        keep = np.isfinite(lo) & np.isfinite(hi)
        out["position"] = ((qi[keep], vi[keep]), (lo[keep], hi[keep]))
    for name, bound in (("velocity", model.velocity_limit), ("torque", model.effort_limit)):
        if name in limits:
            keep = np.isfinite(bound[dofs]) & (bound[dofs] > 0)
            cols = dofs[keep] - (first if name == "torque" else 0)
            out[name] = ((cols, cols), (-bound[dofs][keep], bound[dofs][keep]))
    return out
