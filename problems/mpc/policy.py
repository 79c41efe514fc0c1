"""The MPC's policy between updates: the first-order expansion of a solution in its initial state.

Seed 001 (Sec. IV-C) interpolates the solution with the Riccati gains at 2 kHz between the
MPC's updates. With ``K_0, k_0`` the gains of the Riccati recursion at the final iterate,

    u(t, x) = u_0 + k_0 + K_0 (x (-) x_plan(t)),

``u_0`` the iterate's first control, ``k_0`` the feedforward of its next Newton step (zero at
convergence) and ``x_plan`` its state interpolated between knots 0 and 1 (the configuration
along the manifold: ``q_plan(t) = q_0 (+) s (q_1 (-) q_0)``, ``s`` the fraction of the first
stage elapsed, held at 1 after it).

:class:`Policy` evaluates the law with numpy (the reference). :class:`PolicyKernel` compiles
the same equations for a model (the manifold's exponential and logarithm of
:mod:`dynamics.symbolic`, the gains' product) and :meth:`PolicyKernel.bind` gives a policy
whose plan and gains are written once into the kernel's input: a call writes the time and
the measured state in place and runs the C function, with no allocation but the returned
control's copy.
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass

import casadi as ca
import numpy as np

from liftoff import dynamics
from liftoff.dynamics import codegen
from liftoff.dynamics import symbolic as sx
from liftoff.dynamics.memory import address


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


class PolicyKernel:
    """The policy's equations compiled for ``model`` with ``nu`` controls and ``ntau`` torque
    states (0 without a torque filter); ``quiet``: no message while compiling. Raises
    :class:`dynamics.codegen.CompileError` without a compiler.

    The kernel's input is ``(s, q, v, tau, q_plan, v_plan, tau_plan, u, K)``, the plan's knots
    and ``K`` row by row; its output the control."""

    def __init__(self, model, nu: int, ntau: int, quiet=False):
        self.model, self.nu, self.ntau = model, nu, ntau
        self.nx = 2 * model.nv + ntau
        key = {"model": codegen.model_key(model), "nu": nu, "ntau": ntau}
        key["source"] = codegen.source_digest(sys.modules[__name__])
        self.kernel = codegen.load(f"policy_{model.name}", key, self._function, quiet)
        self.address = getattr(self.kernel, "address", None)  # a compiled kernel's batch function

    def _function(self) -> ca.Function:
        m, nt, nu, nx = self.model, self.ntau, self.nu, self.nx
        sizes = (1, m.nq, m.nv, nt, m.nq, m.nq, 2 * m.nv, 2 * nt, nu, nu * nx)
        x = ca.SX.sym("x", sum(sizes))
        s, q, v, tau, q0, q1, v_plan, tau_plan, u, K = ca.vertsplit(x, list(np.cumsum((0,) + sizes)))
        q_ref = sx.integrate(m, q0, s * sx.difference(m, q0, q1))
        v_ref = (1 - s) * v_plan[: m.nv] + s * v_plan[m.nv :]
        tau_ref = (1 - s) * tau_plan[:nt] + s * tau_plan[nt:]
        dx = ca.vertcat(sx.difference(m, q_ref, q), v - v_ref, tau - tau_ref)
        return ca.Function("policy", [x], [u + ca.reshape(K, nx, nu).T @ dx])

    def bind(self, policy: Policy) -> CompiledPolicy:
        """``policy`` (of this kernel's model and sizes) evaluated by the kernel."""
        return CompiledPolicy(self, policy)


class CompiledPolicy:
    """A :class:`Policy` evaluated by a :class:`PolicyKernel` (its ``policy`` is the reference)."""

    def __init__(self, kernel: PolicyKernel, policy: Policy):
        m, nt = kernel.model, kernel.ntau
        if policy.model is not m or policy.K.shape != (kernel.nu, kernel.nx):
            raise ValueError("the policy's model or gains are not the kernel's")
        self.policy = policy
        x = np.zeros((1, kernel.kernel.n_in))
        plan = (policy.q_plan, policy.v_plan, policy.tau_plan, policy.u, policy.K)
        np.concatenate([a.ravel() for a in plan], out=x[0, 1 + m.nq + m.nv + nt :])
        self._x, self._u = x[0], np.zeros((1, kernel.nu))
        self._q, self._v, self._tau = (
            slice(1, 1 + m.nq),
            slice(1 + m.nq, 1 + m.nq + m.nv),
            slice(1 + m.nq + m.nv, 1 + m.nq + m.nv + nt),
        )
        self._t0, self._rate = policy.t0, 1.0 / policy.dt
        self._kernel, self._address = kernel.kernel, kernel.address

    def native(self) -> tuple | None:
        """The policy as compiled code evaluates it (``mujoco_steps.c``'s ``policy_t``): the
        address of the kernel's batch function, those of its input row and its output row, where
        ``q``, ``v`` and ``tau`` start in the input, ``t0`` and ``1 / dt``; None when the kernel is
        not compiled."""
        if self._address is None:
            return None
        starts = (self._q.start, self._v.start, self._tau.start)
        return (self._address, address(self._x), address(self._u), *starts, self._t0, self._rate)

    @functools.cached_property
    def _call(self):
        """The kernel bound to the input and output rows, made on the first call from Python (a
        plant that runs the policy in compiled code, :meth:`native`, never makes it)."""
        return self._kernel.bind(self._x[None], [self._u])

    def __call__(self, t, q, v, tau=None) -> np.ndarray:
        x, s = self._x, (t - self._t0) * self._rate
        x[0] = 0.0 if s < 0.0 else 1.0 if s > 1.0 else s
        x[self._q], x[self._v] = q, v
        if tau is not None:
            x[self._tau] = tau
        self._call()
        return self._u[0].copy()
