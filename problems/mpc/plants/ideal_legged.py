"""liftoff's own legged plant for closed-loop gait MPC: feet that touch down, stick and lift off.

:class:`IdealLeggedPlant` integrates liftoff's proximal constrained dynamics with the
semi-implicit Euler scheme of :class:`.ideal.IdealPlant`, the feet on the ground as 3D contacts
held at their touchdown points by Baumgarte gains. Events within a step:

- **touchdown**: a foot that the schedule holds on the ground and that reaches the ground
  height during the step. The step is cut at the event, located to 2^-30 of the step
  (grid searches, the acceleration held); there the impulse dynamics of the new contact set
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

import numpy as np

from liftoff import dynamics
from liftoff.dynamics import Contact
from liftoff.dynamics.kinematics import frame_positions
from liftoff.problems.mpc.disturbances import Disturbances

from . import ContactReading, Measurement
from .ideal import IdealPlant

GRID, ROUNDS = 32, 6  # the touchdown's search: 32^6 = 2^30 fractions of the step

DESCRIPTION = (
    "liftoff's idealized legged plant (the controller's model, feet that stick and may pull: plant.contact "
    "rigid_bilateral)"
)


class IdealLeggedPlant(IdealPlant):
    """A legged ``model`` with ``feet`` (frame names) on flat ground at ``ground`` [m],
    ``schedule(t)``: the feet the plan holds on the ground at time ``t``; Baumgarte gains ``kp,
    kd`` hold the feet in contact; step ``dt``; disturbances, proximal damping ``mu``, the
    joints' friction smoothing and the step's ``backend`` as for :class:`.ideal.IdealPlant`."""

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
        backend="compiled",
    ):
        super().__init__(model, {}, dt, disturbances, mu, friction_width=friction_width, backend=backend)
        for foot in feet:
            model.frame_id(foot)  # unknown frames raise here
        self.feet, self.ground, self.schedule = tuple(feet), float(ground), schedule
        self.contact_names = self.feet
        self.kp, self.kd = kp, kd
        self.stance: dict = {}  # foot -> touchdown point
        # the feet's contacts, their targets (the touchdown points) given per step
        self.slots = tuple(Contact(f, "3D", "LOCAL_WORLD_ALIGNED", kp=kp, kd=kd, placement=np.zeros(3)) for f in feet)

    def reset(self, q, v, tau=None) -> Measurement:
        """Start from ``(q, v)``: the feet at the ground height (within 1 mm) are in contact
        where they stand."""
        self._rng = np.random.default_rng(self.disturbances.seed)
        self.q, self.v, self.tau = np.array(q, dtype=float), np.array(v, dtype=float), None
        self._stepper()
        self.stance = {}
        for foot, p in zip(self.feet, frame_positions(self.model, self.q, self.feet)):
            if abs(p[2] - self.ground) < 1e-3:
                self.stance[foot] = p
        torque = self.torque(0.0, self.q, self.v, np.zeros(self.model.nv - 6), False)
        return self._readings(self._dynamics(self.q, self.v, torque, 0.0))

    def _stance_targets(self) -> tuple:
        """Per foot its touchdown point, None when it does not stand."""
        return tuple(self.stance.get(foot) for foot in self.feet)

    def _dynamics(self, q, v, tau, h):
        """The step (:class:`.ideal_kernel.StepResult`) over ``h`` with the stance feet; feet
        whose normal force would be negative are released first."""
        while True:
            step = self._step(q, v, tau, h, self._stance_targets())
            normal = {foot: step.f[3 * self.feet.index(foot) + 2] for foot in self.stance}
            if not normal:
                return step
            pulling = min(normal, key=normal.get)
            if normal[pulling] >= 0:
                return step
            del self.stance[pulling]

    def _advance(self, q, v, a, h):
        v_next = v + h * a
        return dynamics.integrate(self.model, q, h * v_next), v_next

    def _touchdown(self, q, v, a, below) -> float:
        """The first fraction of the step at which a foot of ``below`` reaches the ground, to
        2^-30 (a bisection's 30 halvings) by :data:`ROUNDS` searches on grids of :data:`GRID`
        fractions, each grid's heights from one batched call."""
        feet = [self.feet.index(foot) for foot in below]
        lo, width = 0.0, 1.0
        for _ in range(ROUNDS):
            width /= GRID
            fractions = lo + width * np.arange(1, GRID + 1)
            heights = self._step.positions(q, v, a, fractions * self.dt)[:, feet, 2].min(axis=1) - self.ground
            lo += width * int(np.argmax(heights < 0))  # the interval of the first fraction below the ground
        return lo + width

    def step(self, t, command) -> Measurement:
        """One step under the torques ``command`` at time ``t`` (events in the module docstring);
        the readings carry the feet's world forces at the end of the step."""
        q, v = self.q, self.v
        tau = self.torque(t, q, v, command)
        held = self.schedule(t + self.dt)
        for foot in [f for f in self.stance if f not in self.schedule(t)]:
            del self.stance[foot]  # lift-off: released by the plan
        step = self._dynamics(q, v, tau, self.dt)
        below = [f for f, p in zip(self.feet, step.p) if f not in self.stance and f in held and p[2] - self.ground < 0]
        if below:
            hi = self._touchdown(q, v, step.a, below)
            qe, ve = self._advance(q, v, step.a, hi * self.dt)
            self.stance.update(zip(below, frame_positions(self.model, qe, below)))
            ve = self._step.impulse(qe, ve, self._stance_targets())
            step = self._dynamics(qe, ve, tau, (1 - hi) * self.dt)
        self.q, self.v = step.q, step.v
        return self._readings(step)

    def _readings(self, step) -> Measurement:
        """The state reached by ``step`` and each foot's reading (a stance foot touches)."""
        readings = {}
        for i, foot in enumerate(self.feet):
            touching, p = foot in self.stance, step.p[i]
            readings[foot] = ContactReading(
                touching,
                step.f[3 * i : 3 * i + 3] if touching else np.zeros(3),
                p,
                float(max(0.0, self.ground - p[2])),
                step.velocity[i] if touching else np.zeros(3),
            )
        return Measurement(self.q.copy(), self.v.copy(), None, readings)
