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

Between two MPC updates, :meth:`IdealLeggedPlant.run` takes the period's steps in one compiled
call with the policy (:mod:`.ideal_steps`), the same numbers as :meth:`IdealLeggedPlant.step`;
a step with a touchdown is left to the Python step.

What it idealizes, as :class:`.ideal.IdealPlant` does: feet in contact stick and are bilateral
(a foot cannot slide: it drifts only by the Baumgarte error, and a force outside the friction
cone is applied, not limited); the ground is flat at the height of the feet in the initial
configuration and only where the schedule expects a stance (a foot that dips below it while the
schedule swings it goes through: its reading's ``depth`` says how deep); the schedule, the
controller's plan, decides lift-off.
"""

from __future__ import annotations

import time

import numpy as np

from liftoff import dynamics
from liftoff.dynamics import Contact
from liftoff.dynamics.kinematics import frame_positions
from liftoff.problems.mpc.disturbances import Disturbances

from . import DEPTH, FORCE, POSITION, ROW, TOUCHING, VELOCITY, ContactReadings, Measurement, PlantFailure, Steps, within
from .ideal import IdealPlant
from .ideal_steps import DIVERGED, DONE, EVENT, legged_steps

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
        self._index = {foot: k for k, foot in enumerate(self.feet)}  # the rows of the readings
        self.kp, self.kd = kp, kd
        self.stance: dict = {}  # foot -> touchdown point
        # the feet's contacts, their targets (the touchdown points) given per step
        self.slots = tuple(Contact(f, "3D", "LOCAL_WORLD_ALIGNED", kp=kp, kd=kd, placement=np.zeros(3)) for f in feet)
        self._compiled = None  # the compiled steps of run(), made on first use (False: none)

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
        return self._step_under(t, self.torque(t, self.q, self.v, command))

    def _step_under(self, t, tau) -> Measurement:
        """:meth:`step` under the joint torques ``tau``."""
        q, v = self.q, self.v
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

    def run(self, first, steps, policy, measurement, lower, upper) -> Steps | None:
        """The ``steps`` steps from step index ``first`` (time ``first * dt``) from
        ``measurement`` (the plant's state) under ``policy``, in compiled calls
        (:mod:`.ideal_steps`) but for the steps with a touchdown or whose proximal steps miss the
        tolerance, which :meth:`step` takes; stopping after one whose state is beyond ``lower,
        upper (nq,)`` or not finite: the :class:`Steps` done, checked. None when they cannot run
        so (a policy or a step not compiled, joint friction, an actuation that does not select
        joints, a push during them); the closed loop then calls :meth:`step` at each. A step
        whose dynamics break down raises :class:`PlantFailure` with the steps done."""
        compiled = self._compiled_steps()
        native = getattr(policy, "native", lambda: None)()
        t = (first + np.arange(steps)) * self.dt
        if compiled is None or native is None or any(map(self.disturbances.active_pushes, t.tolist())):
            return None
        noise = self.disturbances.noise(self._rng, (steps, compiled.nu))
        times = t.tolist()
        released = [[foot not in now for foot in self.feet] for now in map(self.schedule, times)]
        held = [[foot in later for foot in self.feet] for later in (self.schedule(tj + self.dt) for tj in times)]
        q, v = np.empty((steps + 1, self.model.nq)), np.empty((steps + 1, self.model.nv))
        u, seconds = np.empty((steps, compiled.nu)), np.empty((steps, 2))
        readings = np.empty((steps, len(self.feet), ROW))
        q[0], v[0] = measurement.q, measurement.v
        bias = np.zeros(compiled.nu) + self.disturbances.torque_bias

        def done(j, diverged=False) -> Steps:  # the first j steps
            rows = (u[:j], q[: j + 1], v[: j + 1], np.zeros((j + 1, 0)), readings[:j], seconds[:j])
            return Steps(t[:j], *rows, self._index, True, diverged)

        j = 0
        while j < steps:
            stance = np.array([foot in self.stance for foot in self.feet], dtype=np.uint8)
            points = np.array([self.stance.get(foot, (0.0, 0.0, 0.0)) for foot in self.feet], dtype=float)
            rest = slice(j, steps)
            n, how = compiled(
                first + j, steps - j, native, q[j], v[j], bias, None if noise is None else noise[rest],
                released[rest], held[rest], stance, points, lower, upper,
                (q[j + 1 :], v[j + 1 :], u[j:], readings[j:], seconds[j:]),
            )  # fmt: skip
            self.stance = {foot: p for foot, p in self.stance.items() if stance[self._index[foot]]}  # the lift-offs
            j += n
            if how != EVENT:
                break
            drawn = None if noise is None else noise[j]
            try:  # the step left to Python
                u[j], after, seconds[j] = self._step_of(policy, times[j], q[j], v[j], drawn)
            except PlantFailure.CAUGHT as e:
                raise PlantFailure.at(times[j], e, done(j)) from None
            q[j + 1], v[j + 1], readings[j] = after.q, after.v, after.contacts.rows
            j += 1
            how = DONE if within(after.q, after.v, lower, upper) else DIVERGED
            if how == DIVERGED:
                break
        self.q, self.v = q[j].copy(), v[j].copy()
        return done(j, how == DIVERGED)

    def _step_of(self, policy, t, q, v, noise) -> tuple:
        """``(command, measurement, seconds)``: the step at time ``t`` from the state ``(q, v)``
        under ``policy``, the torque ``noise`` drawn beforehand (or None), no push acting; the
        seconds of the policy and of the step."""
        self.q, self.v = q.copy(), v.copy()
        begin = time.perf_counter()
        command = policy(t, q, v)
        middle = time.perf_counter()
        applied = self.disturbances.applied(command, noise)
        after = self._step_under(t, self.joint_torques(t, q, v, applied, False))
        return command, after, (middle - begin, time.perf_counter() - middle)

    def _compiled_steps(self):
        """The compiled steps (:mod:`.ideal_steps`), made on first use; None where they cannot run."""
        if self._compiled is None:
            actuated = np.flatnonzero(self._actuation.any(axis=1))
            selects = np.array_equal(self._actuation, np.eye(self.model.nv)[:, actuated])
            compiled_step = hasattr(self._step, "native")
            usable = compiled_step and selects and not dynamics.joint_friction.has_passive_torque(self.model)
            self._compiled = (usable and legged_steps(self, actuated)) or False
        return self._compiled or None

    def _readings(self, step) -> Measurement:
        """The state reached by ``step`` and each foot's reading (a stance foot touches: its
        force and velocity are the step's, a swinging foot's zero)."""
        rows = np.zeros((len(self.feet), ROW))
        rows[:, POSITION], rows[:, DEPTH] = step.p, np.maximum(0.0, self.ground - step.p[:, 2])
        touching = [i for i, foot in enumerate(self.feet) if foot in self.stance]
        rows[touching, TOUCHING] = 1.0
        rows[touching, FORCE], rows[touching, VELOCITY] = step.f.reshape(-1, 3)[touching], step.velocity[touching]
        return Measurement(self.q.copy(), self.v.copy(), None, ContactReadings(self._index, rows))
