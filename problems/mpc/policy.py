"""The MPC's policy between updates: the first-order expansion of a solution in its initial state.

Seed 001 (Sec. IV-C) interpolates the solution with the Riccati gains at 2 kHz between the
MPC's updates. With ``K_0, k_0`` the gains of the Riccati recursion at the final iterate,

    u(t, x) = u_0 + k_0 + K_0 (x (-) x_plan(t)),

``u_0`` the iterate's first control, ``k_0`` the feedforward of its next Newton step (zero at
convergence) and ``x_plan`` its state interpolated between knots 0 and 1 (the configuration
along the manifold: ``q_plan(t) = q_0 (+) s (q_1 (-) q_0)``, ``s`` the fraction of the first
stage elapsed, held at 1 after it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from liftoff import dynamics


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
