"""liftoff's own legged plant for closed-loop gait MPC: feet that touch down, stick and lift off.

:class:`IdealLeggedPlant` integrates liftoff's proximal constrained dynamics with the
semi-implicit Euler scheme of :class:`.ideal.IdealPlant`, the feet on the ground as 3D contacts
held at their touchdown points by Baumgarte gains. Events within a step:

- **touchdown**: a foot that the schedule holds on the ground and that reaches the ground
  height during the step. The step is cut at the event, located by bisection on the step
  fraction (the acceleration held); there the impulse dynamics of the new contact set
  (:func:`dynamics.impulse_dynamics`) zero the landing foot's velocity, once; the rest of the
  step runs with the foot in contact;
- **lift-off**: a foot leaves the ground when the schedule releases it or when its normal
  force would turn negative.

What it idealizes, as :class:`.ideal.IdealPlant` does: feet in contact stick and are bilateral
(a foot cannot slide: it drifts only by the Baumgarte error, and a force outside the friction
cone is applied, not limited); the ground is flat at the height of the feet in the initial
configuration and only where the schedule expects a stance (a foot that dips below it while the
schedule swings it goes through: its reading's ``depth`` says how deep); the schedule, the
controller's plan, decides lift-off.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from liftoff import dynamics
from liftoff.dynamics import Contact
from liftoff.problems.mpc.disturbances import Disturbances

from . import ContactReading, Measurement
from .ideal import IdealPlant

DESCRIPTION = (
    "liftoff's idealized legged plant (the controller's model, feet that stick and may pull: plant.contact "
    "rigid_bilateral)"
)


class IdealLeggedPlant(IdealPlant):
    """A legged ``model`` with ``feet`` (frame names) on flat ground at ``ground`` [m],
    ``schedule(t)``: the feet the plan holds on the ground at time ``t``; Baumgarte gains ``kp,
    kd`` hold the feet in contact; step ``dt``; disturbances, proximal damping ``mu`` and the
    joints' friction smoothing as for :class:`.ideal.IdealPlant`."""

    description = DESCRIPTION

    def __init__(
        self,
        model,
        feet,
        ground,
        schedule,
        dt=1e-3,
        kp=0.0,
        kd=0.0,
        disturbances=Disturbances(),
        mu=1e-8,
        friction_width=dynamics.joint_friction.DEFAULT_WIDTH,
    ):
        super().__init__(model, {}, dt, disturbances, mu, friction_width=friction_width)
        for foot in feet:
            model.frame_id(foot)  # unknown frames raise here
        self.feet, self.ground, self.schedule = tuple(feet), float(ground), schedule
        self.contact_names = self.feet
        self.kp, self.kd = kp, kd
        self.stance: dict = {}  # foot -> touchdown point

    def reset(self, q, v, tau=None) -> Measurement:
        """Start from ``(q, v)``: the feet at the ground height (within 1 mm) are in contact
        where they stand."""
        self._rng = np.random.default_rng(self.disturbances.seed)
        self.q, self.v, self.tau = np.array(q, dtype=float), np.array(v, dtype=float), None
        self.stance = {}
        for foot in self.feet:
            _, p = dynamics.frame_placement(self.model, self.q, foot)
            if abs(p[2] - self.ground) < 1e-3:
                self.stance[foot] = np.asarray(p, dtype=float)
        torque = self.torque(0.0, self.q, self.v, np.zeros(self.model.nv - 6), False)
        return self._readings(self._dynamics(self.q, self.v, torque)[1])

    def _contacts(self, stance):
        return tuple(
            Contact(foot, "3D", "LOCAL_WORLD_ALIGNED", kp=self.kp, kd=self.kd, placement=p)
            for foot, p in stance.items()
        )

    def _dynamics(self, q, v, tau):
        """``(a, forces)``: the accelerations with the stance feet, and their world forces; feet
        whose normal force would be negative are released first."""
        while True:
            if not self.stance:
                return dynamics.aba(self.model, q, v, tau), {}
            a, f = dynamics.constrained_dynamics(self.model, q, v, tau, self._contacts(self.stance), mu=self.mu)[:2]
            forces = dict(zip(self.stance, f.reshape(-1, 3)))
            pulling = min(forces, key=lambda foot: forces[foot][2])
            if forces[pulling][2] >= 0:
                return a, forces
            del self.stance[pulling]

    def _advance(self, q, v, a, h):
        v_next = v + h * a
        return dynamics.integrate(self.model, q, h * v_next), v_next

    def _heights(self, q, feet):
        return np.array([dynamics.frame_placement(self.model, q, foot)[1][2] for foot in feet]) - self.ground

    def step(self, t, command) -> Measurement:
        """One step under the torques ``command`` at time ``t`` (events in the module docstring);
        the readings carry the feet's world forces at the end of the step."""
        q, v = self.q, self.v
        tau = self.torque(t, q, v, command)
        held = self.schedule(t + self.dt)
        for foot in [f for f in self.stance if f not in self.schedule(t)]:
            del self.stance[foot]  # lift-off: released by the plan
        a, forces = self._dynamics(q, v, tau)
        q1, v1 = self._advance(q, v, a, self.dt)
        landing = [f for f in self.feet if f not in self.stance and f in held]
        below = [f for f, h in zip(landing, self._heights(q1, landing)) if h < 0]
        if below:
            lo, hi = 0.0, 1.0  # the first fraction of the step at which a landing foot reaches the ground
            for _ in range(30):
                mid = 0.5 * (lo + hi)
                if np.min(self._heights(self._advance(q, v, a, mid * self.dt)[0], below)) < 0:
                    hi = mid
                else:
                    lo = mid
            qe, ve = self._advance(q, v, a, hi * self.dt)
            for foot in below:
                self.stance[foot] = np.array(dynamics.frame_placement(self.model, qe, foot)[1], dtype=float)
            contacts = tuple(replace(c, kp=0.0, kd=0.0) for c in self._contacts(self.stance))  # velocities only
            ve, _ = dynamics.impulse_dynamics(self.model, qe, ve, contacts, mu=self.mu)[:2]
            a, forces = self._dynamics(qe, ve, tau)
            q1, v1 = self._advance(qe, ve, a, (1 - hi) * self.dt)
        self.q, self.v = q1, v1
        return self._readings(forces)

    def _readings(self, forces) -> Measurement:
        readings = {}
        heights = self._heights(self.q, self.feet)
        for foot, height in zip(self.feet, heights):
            _, p = dynamics.frame_placement(self.model, self.q, foot)
            touching = foot in forces
            force = np.asarray(forces[foot], dtype=float) if touching else np.zeros(3)
            velocity = dynamics.frame_velocity(self.model, self.q, self.v, foot, "LOCAL_WORLD_ALIGNED")[:3]
            readings[foot] = ContactReading(
                touching,
                force,
                np.asarray(p, dtype=float),
                float(max(0.0, -height)),
                velocity if touching else np.zeros(3),
            )
        return Measurement(self.q.copy(), self.v.copy(), None, readings)
