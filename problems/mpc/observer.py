"""A disturbance observer: the generalized force the controller's model misses, estimated from
the plant's measurements, for offset-free MPC.

Over a plant step at time ``t`` from ``(q_k, v_k)`` to ``v_{k+1}``, with the joint torques
``tau_k`` applied (the actuators' measured torques with a torque filter, else the command), the
model's equation of motion leaves the residual

    d_k = M(q_k) a_k + h(q_k, v_k) - S tau_k - tau_p(v_k) - sum J_p(q_k)^T F_k,    a_k = (v_{k+1} - v_k) / dt

(``tau_p`` the model's joint damping and friction), ``F_k`` the contact forces the controller's
own contact model gives for what the plant measured (``contact_forces(t, measurement)``: a
polishing pad's measured normal force, with the sliding friction the OCP models at that force),
``J_p`` the Jacobian of each force's point, moving with its frame. So ``d_k`` is what the model
gets wrong: the joints' unmodelled friction (stiction), a heavier link, a push, the friction the
contact model misses. Its estimate follows ``d_k`` through a first-order filter of time constant
``T``; the MPC takes it as the constant disturbance of each horizon (:class:`ocp.problem.OCP`'s
``disturbance``), so that a constant model error leaves no constant tracking error.
"""

from __future__ import annotations

import numpy as np

from liftoff import dynamics
from liftoff.ocp.lifted import actuation


class DisturbanceObserver:
    """The estimate (module docstring) for ``model``, plant step ``dt``, filter time constant
    ``time_constant`` [s], the joints' Coulomb friction smoothed over ``width``, and
    ``contact_forces(t, measurement) -> [(frame, point (3,), world force (3,))]``."""

    def __init__(self, model, dt, time_constant, width, contact_forces):
        self.model, self.dt, self.width, self.contact_forces = model, dt, width, contact_forces
        self.gain = dt / (time_constant + dt)
        self.S = actuation(model)
        self.estimate = np.zeros(model.nv)

    def observe(self, t, before, command, after) -> None:
        """The plant step at time ``t``: the measurements ``before`` and ``after`` it, and its
        ``command``."""
        model, q, v = self.model, before.q, before.v
        a = (after.v - v) / self.dt
        tau = before.tau if before.tau is not None else np.asarray(command, dtype=float)
        residual = dynamics.rnea(model, q, v, a) - self.S @ tau - dynamics.passive_torque(model, v, self.width)
        for frame, point, force in self.contact_forces(t, after):  # the forces during the step
            _, p = dynamics.frame_placement(model, q, frame)
            J = dynamics.frame_jacobian(model, q, frame, "LOCAL_WORLD_ALIGNED")
            residual = residual - J[:3].T @ force - J[3:].T @ np.cross(np.asarray(point) - p, force)
        if np.all(np.isfinite(residual)):
            self.estimate = self.estimate + self.gain * (residual - self.estimate)
