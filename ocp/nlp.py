"""An OCP as one nonlinear program, for general-purpose NLP solvers (the Ipopt baseline).

Seed 004's lifted direct multiple shooting written whole in CasADi SX, from liftoff's own
symbolic model (:mod:`dynamics.symbolic`):

- variables: per knot the configuration as a displacement ``dq_k`` from a reference
  configuration (``q_k = qref_k (+) dq_k``, exactly) and the velocity ``v_k``; per contact
  stage ``(u, a, f)``, per impulse stage ``(dv, Lambda)``;
- equalities: the initial state; the state equations (eq. 3, 10); at contact stages the
  inverse dynamics ``ID(q, v, a, f) - S u`` and the contact accelerations with their
  Baumgarte terms (eq. 16-17, 5); at impulse stages ``M dv - J^T Lambda`` and ``J (v + dv)``
  (eq. 9, 12);
- inequalities, at contact stages as in :mod:`ocp.inequalities`: the friction pyramid of
  every 3D contact force in the world axes (eq. 36) and the joint limits on ``q, v`` at the
  stage's first knot and on ``u``;
- cost: the OCP's cost terms (:mod:`ocp.costs`), ``1/2 sum w r^2`` per stage, and the terminal;
  their residuals are kept as a vector for Gauss-Newton methods (:mod:`solvers.sqp`).

The program's optimum is the OCP's; the interior point of :mod:`solvers.ipm` reaches it as
its barrier goes to zero. OCPs with a torque filter, sliding friction or soft contacts are not covered.
"""

from __future__ import annotations

from dataclasses import dataclass

import casadi as ca
import numpy as np

from liftoff.dynamics import symbolic as sx

from .costs import (
    CenterOfMassCost,
    FramePositionCost,
    FrameRotationCost,
    FrameVelocityCost,
    StateCost,
    VariableCost,
)
from .friction import pyramid
from .inequalities import limit_rows
from .lifted import actuation


@dataclass(frozen=True)
class NLP:
    """``problem``: the CasADi ``{"x", "f", "g"}``, with ``f = 1/2 sum weights residual^2``
    (``residual``: the SX vector of every cost term's residuals, for Gauss-Newton Hessians);
    bounds ``lbx, ubx, lbg, ubg``; the initial guess ``x0``; ``unpack(x) -> dict`` of ``q, v
    (K+1, .)`` and per stage ``u`` and ``w``."""

    problem: dict
    residual: object
    weights: np.ndarray
    lbx: np.ndarray
    ubx: np.ndarray
    lbg: np.ndarray
    ubg: np.ndarray
    x0: np.ndarray
    unpack: object


class _Builder:
    """Variables and constraints appended in order, with their bounds and guesses."""

    def __init__(self):
        self.x, self.lbx, self.ubx, self.x0 = [], [], [], []
        self.g, self.lbg, self.ubg = [], [], []

    def variable(self, name, n, guess, lower=-np.inf, upper=np.inf):
        start = sum(int(v.numel()) for v in self.x)
        x = ca.SX.sym(name, n)
        self.x.append(x)
        self.lbx.append(np.broadcast_to(lower, (n,)))
        self.ubx.append(np.broadcast_to(upper, (n,)))
        self.x0.append(np.broadcast_to(guess, (n,)))
        return x, slice(start, start + n)

    def equal(self, expr):
        self.constrain(expr, 0.0, 0.0)

    def constrain(self, expr, lower, upper):
        n = int(expr.numel())
        self.g.append(expr)
        self.lbg.append(np.broadcast_to(lower, (n,)))
        self.ubg.append(np.broadcast_to(upper, (n,)))


def build_nlp(ocp, guess=None) -> NLP:
    """The NLP of ``ocp`` (module docstring); ``guess``: a dict of ``q, v (K+1, .)``, ``u``,
    ``w`` (per stage) to start from and to take the reference configurations from (default:
    the initial state everywhere, no control, no contact variables)."""
    if ocp.torque_filter is not None:
        raise ValueError("the NLP of an OCP with a torque filter is not built")
    if any(stage.sliding for stage in ocp.stages):
        raise ValueError("the NLP of an OCP with sliding friction is not built")
    if any(stage.soft for stage in ocp.stages):
        raise ValueError("the NLP of an OCP with soft contacts is not built")
    model, K, nv, nu = ocp.model, ocp.K, ocp.model.nv, ocp.nu
    guess = guess or {
        "q": np.tile(ocp.q0, (K + 1, 1)),
        "v": np.tile(ocp.v0, (K + 1, 1)),
        "u": [np.zeros(nu if s.kind == "contact" else 0) for s in ocp.stages],
        "w": [np.zeros(nv + sum(c.dim for c in s.contacts)) for s in ocp.stages],
    }
    b = _Builder()
    q, v, slots = [], [], {"q": [], "v": [], "u": [], "w": []}
    for k in range(K + 1):
        dq, sq = b.variable(f"dq{k}", nv, 0.0)
        vk, sv = b.variable(f"v{k}", nv, guess["v"][k])
        q.append(sx.integrate(model, ca.DM(guess["q"][k]), dq))
        v.append(vk)
        slots["q"].append(sq)
        slots["v"].append(sv)
    b.equal(sx.difference(model, q[0], ca.DM(ocp.q0)))
    b.equal(v[0] - ca.DM(ocp.v0))
    limits = limit_rows(model, ocp.limits)
    S = ca.DM(actuation(model))
    disturbance = ca.DM(np.zeros(nv) if ocp.disturbance is None else ocp.disturbance)
    residuals = []
    for k, stage in enumerate(ocp.stages):
        m = sum(c.dim for c in stage.contacts)
        u_lower, u_upper = np.full(nu, -np.inf), np.full(nu, np.inf)
        if stage.kind == "contact" and "torque" in limits:
            (cols, _), (lo, hi) = limits["torque"]
            u_lower[cols], u_upper[cols] = lo, hi
        n_u = nu if stage.kind == "contact" else 0
        u, su = b.variable(f"u{k}", n_u, guess["u"][k], u_lower[:n_u], u_upper[:n_u])
        w, sw = b.variable(f"w{k}", nv + m, guess["w"][k])
        slots["u"].append(su)
        slots["w"].append(sw)
        a, f = w[:nv], w[nv:]
        config = sx.configuration(model, q[k])
        if stage.kind == "contact":
            kin = sx.forward(model, config, v[k], a)
            rows = _rows(model, kin, stage.contacts, f, targets=True)
            tau_f = sx.generalized_forces(model, kin, [x for _, r in rows for x in r.wrenches])
            passive = sx.passive_torque(model, v[k], ocp.joint_friction_width) + disturbance
            b.equal(sx.rnea(model, kin) - tau_f - passive - S @ u)
            b.equal(
                ca.vertcat(
                    *[r.acceleration + c.kd * r.velocity + (0 if r.error is None else c.kp * r.error) for c, r in rows]
                    + [ca.SX.zeros(0)]
                )
            )
            b.equal(sx.difference(model, q[k + 1], q[k]) + stage.dt * v[k])
            b.equal(v[k] + stage.dt * a - v[k + 1])
            _inequalities(b, ocp, limits, rows, q[k], v[k])
        else:
            zero = ca.SX.zeros(nv)
            kin = sx.forward(model, config, zero, a)
            rows = _rows(model, kin, stage.contacts, f, targets=False)
            tau_f = sx.generalized_forces(model, kin, [x for _, r in rows for x in r.wrenches])
            b.equal(sx.rnea(model, kin, gravity=False) - tau_f)
            after = _rows(model, sx.forward(model, config, v[k] + a), stage.contacts, f, targets=False)
            b.equal(ca.vertcat(*[r.velocity for _, r in after] + [ca.SX.zeros(0)]))
            b.equal(sx.difference(model, q[k + 1], q[k]))
            b.equal(v[k] + a - v[k + 1])
        residuals += _residuals(model, stage.costs, q[k], v[k], u, a, f)
    residuals += _residuals(model, ocp.terminal_costs, q[K], v[K], ca.SX.zeros(0), ca.SX.zeros(0), ca.SX.zeros(0))
    r = ca.vertcat(*[x for x, _ in residuals])
    weights = np.concatenate([w for _, w in residuals])
    cost = 0.5 * ca.dot(ca.DM(weights) * r, r)
    x = ca.vertcat(*b.x)
    configurations = ca.Function("q", [x], [ca.horzcat(*q).T])

    def unpack(values):
        values = np.asarray(values, dtype=float).ravel()
        return {
            "q": np.array(configurations(values)),
            "v": np.array([values[s] for s in slots["v"]]),
            "u": [values[s] for s in slots["u"]],
            "w": [values[s] for s in slots["w"]],
        }

    def cat(parts):
        return np.concatenate([np.asarray(p, dtype=float) for p in parts]) if parts else np.zeros(0)

    problem = {"x": x, "f": cost, "g": ca.vertcat(*b.g)}
    return NLP(problem, r, weights, cat(b.lbx), cat(b.ubx), cat(b.lbg), cat(b.ubg), cat(b.x0), unpack)


def _rows(model, kin, contacts, f, targets):
    """``[(contact, ContactRows)]`` of ``contacts`` with their force rows of ``f`` (and their
    Baumgarte targets if ``targets``)."""
    out, offset = [], 0
    for c in contacts:
        target = None
        if targets and c.placement is not None:
            target = ca.DM(c.placement) if c.translational else tuple(ca.DM(x) for x in c.placement)
        out.append((c, sx.contact_rows(model, kin, c, f[offset : offset + c.dim], target)))
        offset += c.dim
    return out


def _inequalities(b, ocp, limits, rows, q, v):
    """The friction pyramids of the 3D contacts and the limits on ``q, v`` of a contact stage."""
    if ocp.friction is not None:
        P = ca.DM(pyramid(ocp.friction))
        for c, r in rows:
            if c.kind == "3D":  # the force in the world axes: the linear part of its wrench
                b.constrain(P @ r.wrenches[0][1][:3], 0.0, np.inf)
    for name, x in (("position", q), ("velocity", v)):
        if name in limits:
            (cols, _), (lo, hi) = limits[name]
            b.constrain(ca.vertcat(*[x[int(i)] for i in cols]), lo, hi)


def _residuals(model, terms, q, v, u, a, f) -> list:
    """``[(r, w)]`` of cost terms (one stage's) at the stage's variables: their cost is
    ``1/2 w r^2`` summed."""
    named = {"u": u, "a": a, "f": f}
    kin, out = None, []
    for term in terms:
        if isinstance(term, StateCost):
            r = ca.vertcat(sx.difference(model, ca.DM(term.q_ref), q), v - ca.DM(term.v_ref))
        elif isinstance(term, VariableCost):
            if term.variable not in named:
                raise ValueError(f"the NLP has no variable {term.variable!r}")
            r = named[term.variable] - ca.DM(np.broadcast_to(term.reference, (int(named[term.variable].numel()),)))
        else:
            kin = kin or sx.forward(model, sx.configuration(model, q))
            if isinstance(term, CenterOfMassCost):
                r = sx.center_of_mass(model, kin) - ca.DM(term.reference)
            elif isinstance(term, FramePositionCost):
                r = sx.frame_placement(model, kin, term.frame)[1] - ca.DM(term.reference)
            elif isinstance(term, FrameRotationCost):
                R, _ = sx.frame_placement(model, kin, term.frame)
                r = sx.log3(ca.DM(term.reference).T @ R)
            elif isinstance(term, FrameVelocityCost):
                moving = sx.forward(model, sx.configuration(model, q), v)
                r = sx.frame_velocity(model, moving, term.frame) - ca.DM(term.reference)
            else:
                raise ValueError(f"no NLP form of the cost term {type(term).__name__}")
        out.append((r, np.broadcast_to(np.asarray(term.weights, dtype=float), (int(r.numel()),)).copy()))
    return out
