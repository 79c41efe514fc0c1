"""Stage evaluation: what a Newton step reads from the stages of one group, by one of two backends.

A backend evaluates, for all stages of a :class:`ocp.problem.StageGroup` at once, the pieces of
seed 004's stage problems at ``(q, v, u, w)`` toward ``(q_next, v_next)`` (and the torque
states ``tau, tau_next`` of a filtered OCP), in the group's own layout ``y = (dq, dv, dtau,
du, dw)`` (:mod:`ocp.lifted`):

- the cost per stage and its Gauss-Newton ``H, g`` (:mod:`ocp.costs`);
- the local equalities ``c`` and their Jacobian ``C`` (lifted: ``ID - S u``, ``alpha`` at contact
  stages, ``M dv - J^T Lambda``, ``J (v + dv)`` at impulses);
- the state equation ``dx_{i+1} = A y + b``;
- the inequalities ``g >= 0`` and their Jacobian (:class:`ocp.inequalities.Inequalities`);

and, for the non-lifted formulation, ``w`` itself from the constrained forward or impulse
dynamics. :class:`NumpyStages` is the reference, written with :mod:`dynamics`;
:class:`ocp.kernels.CompiledStages` evaluates the same equations with compiled kernels, and
:func:`ocp.backends.make_stages` chooses between them. The formulation does not know which
one it reads.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np

from liftoff import dynamics

from . import lifted
from .costs import StageVariables
from .inequalities import Inequalities, inequalities, inequality_values, limit_rows


@dataclass(frozen=True)
class StageEval:
    """A group's evaluated stages (leading axis ``S``): ``cost (S,)``, ``H (S, ny, ny)``,
    ``g (S, ny)``, ``c (S, nw)``, ``C (S, nw, ny)``, ``b (S, nx)``, ``A (S, nx, ny)``, the
    inequalities ``ineq``, and, when known from the structure of the equations, the
    ``supports`` of the blocks the condensing multiplies (:func:`ocp.condensing.condense`).
    ``calls``: a dict kept with these arrays from one evaluation to the next (the compiled
    backend's workspace), where the interior-point terms and the condensing keep their compiled
    calls bound to them (:func:`dynamics.memory.bound`); None for arrays of this evaluation alone."""

    cost: np.ndarray
    H: np.ndarray
    g: np.ndarray
    c: np.ndarray
    C: np.ndarray
    b: np.ndarray
    A: np.ndarray
    ineq: Inequalities
    supports: tuple | None = None
    calls: dict | None = None


class Stages(Protocol):
    """What :class:`ocp.formulation.Formulation` asks of a backend."""

    name: str

    def evaluate(self, group, q, v, u, w, q_next, v_next, tau=None, tau_next=None) -> StageEval: ...
    def static_terms(self, group) -> tuple: ...
    def dynamics(self, group, q, v, torque) -> np.ndarray: ...
    def terminal(self, q, v, tau=None) -> tuple: ...
    def inequalities(self, group, q, v, u, f, tau=None) -> tuple: ...
    def inequality_values(self, group, q, v, u, f, tau=None) -> np.ndarray: ...
    def for_problem(self, ocp, groups) -> Stages: ...
    def from_state(self, ocp) -> Stages: ...


class NumpyStages:
    """The reference backend: :mod:`dynamics`, :mod:`ocp.lifted`, :mod:`ocp.costs` in numpy.

    ``dynamics_options`` go to :func:`dynamics.constrained_dynamics` and
    :func:`dynamics.impulse_dynamics`."""

    name = "numpy"
    kernel_seconds = 0.0  # no kernels

    def __init__(self, ocp, dynamics_options=None):
        self.ocp, self.model = ocp, ocp.model
        self.S = lifted.actuation(self.model)
        self.limits = limit_rows(self.model, ocp.limits)
        self.terminal_cost = ocp.terminal()
        self.dynamics_options = dict(dynamics_options or {})
        self._statics = None  # the static start's terms at q0 (:meth:`static_terms`), made on first use

    def static_terms(self, group) -> tuple:
        """The generalized gravity at the problem's ``q0`` and the Jacobian ``(m, nv)`` there of
        ``group``'s contacts: the static start's equation ``S u + J^T f = g(q0)``. One Jacobian
        of every contact of the problem is made on first use, and its rows shared."""
        model, q0 = self.model, self.ocp.q0
        if self._statics is None:
            every = [c for stage in self.ocp.stages for c in stage.contacts]
            self._statics = (dynamics.generalized_gravity(model, q0), jacobian_rows(model, q0, every))
        gravity, rows = self._statics
        keys = [slot_key(c) for c in group.contact_set]
        if any(key not in rows for key in keys):  # a group of another problem's contacts
            rows.update(jacobian_rows(model, q0, group.contact_set))
        return gravity, np.concatenate([rows[key] for key in keys] + [np.zeros((0, model.nv))])

    def inequalities(self, group, q, v, u, f, tau=None):
        return inequalities(self.model, self.ocp.friction, self.limits, group, q, v, u, f, tau)

    def inequality_values(self, group, q, v, u, f, tau=None):
        return inequality_values(self.model, self.ocp.friction, self.limits, group, q, v, u, f, tau)

    def for_problem(self, ocp, groups) -> NumpyStages:
        """The same evaluation for ``ocp`` (grouped in ``groups``), an OCP of the same structure
        with other data."""
        return NumpyStages(ocp, self.dynamics_options)

    def from_state(self, ocp) -> NumpyStages:
        """The same evaluation for ``ocp``, this one's OCP from another initial state."""
        return NumpyStages(ocp, self.dynamics_options)

    def evaluate(self, group, q, v, u, w, q_next, v_next, tau=None, tau_next=None) -> StageEval:
        model, nv = self.model, self.model.nv
        a, f = w[:, :nv], w[:, nv:]
        z = StageVariables(q, v, u, a, f, tau)
        H, g = group.costs.gauss_newton(model, z)
        cost = sum(group.costs.evaluate(model, z).values(), np.zeros(group.size))
        if group.kind == "contact":
            filtered = None if tau is None else (tau, tau_next, self.ocp.filter_gain(group.dt))
            st = lifted.contact_stages(
                model,
                group.contacts,
                group.dt,
                q,
                v,
                a,
                f,
                u,
                q_next,
                v_next,
                H,
                g,
                filtered,
                self.ocp.joint_friction_width,
                group.sliding,
                self.ocp.disturbance,
                group.soft,
            )
            ineq = self.inequalities(group, q, v, u, f, tau)
        else:
            filtered = None if tau is None else (tau, tau_next)
            st = lifted.impulse_stages(model, group.contacts, q, v, a, f, q_next, v_next, H, g, filtered)
            ineq = self.inequalities(group, q, v, u, f, tau)
        return StageEval(cost, H, g, st.c, st.C, st.b, st.A, ineq)

    def dynamics(self, group, q, v, torque):
        """``w``: ``(a, f)`` of the constrained forward dynamics under the actuated joints'
        ``torque``, the joints' passive torques and the soft contacts' forces (a flight: the
        ABA), or ``(dv, Lambda)`` of the impulse dynamics."""
        model, opts = self.model, self.dynamics_options
        if group.kind == "impulse":
            v_plus, impulse = dynamics.impulse_dynamics(model, q, v, group.contacts, **opts)
            return np.concatenate((v_plus - v, impulse), axis=1)
        applied = torque @ self.S.T
        if dynamics.has_passive_torque(model):
            applied = applied + dynamics.passive_torque(model, v, self.ocp.joint_friction_width)
        if self.ocp.disturbance is not None:
            applied = applied + self.ocp.disturbance
        if group.soft:
            applied = applied + dynamics.soft_contact_forces(model, q, v, group.soft)[1]
        if not group.contacts:
            return dynamics.aba(model, q, v, applied)
        return np.concatenate(dynamics.constrained_dynamics(model, q, v, applied, group.contacts, **opts), axis=1)

    def terminal(self, q, v, tau=None):
        """``(cost, H, g)`` of the terminal cost at ``x_K`` in ``(dq, dv, dtau)``."""
        zT = StageVariables(q[None], v[None], *(np.zeros((1, 0)),) * 3, None if tau is None else tau[None])
        H, g = self.terminal_cost.gauss_newton(self.model, zT)
        cost = sum(float(np.sum(c)) for c in self.terminal_cost.evaluate(self.model, zT).values())
        return cost, H[0], g[0]


def slot_key(c):
    """What makes two contacts of a stage the same constraint (their gains and targets aside)."""
    return (c.frame, c.kind, c.reference, c.frame2, c.rotation_key)


def jacobian_rows(model, q, contacts) -> dict:
    """``{slot key: rows (dim, nv)}``: the Jacobian at ``q`` of each distinct contact of
    ``contacts`` (by :func:`slot_key`; gains and targets aside), from one call for them all."""
    union = {}
    for c in contacts:
        union.setdefault(slot_key(c), replace(c, placement=None, kp=0.0, kd=0.0))  # J only
    if not union:
        return {}
    J = dynamics.contact_jacobian(model, q[None], tuple(union.values()))[0]
    rows, offset = {}, 0
    for key, c in union.items():
        rows[key], offset = J[offset : offset + c.dim], offset + c.dim
    return rows
