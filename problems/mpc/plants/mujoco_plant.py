"""The MuJoCo plant: MuJoCo steps the robot, the closed loop sees measurements.

:class:`MujocoPlant` holds a model generated from the URDF the controller reads
(:mod:`.mujoco_model`) and MuJoCo's data. A step sets the actuators' controls (the command,
with the disturbances' torque noise and bias) and the pushes (forces at frames, MuJoCo's
``xfrc_applied`` on their bodies), then runs ``mj_step``: MuJoCo's contacts are unilateral,
compliant and frictional, the joints have the URDF's damping and friction, the actuators their
effort limits and, with a torque filter, their first-order dynamics, whose state is the
measured torque.

A named contact of the robot is a set of its geoms (a foot's sphere, the polishing pad); its
reading sums MuJoCo's contacts between those geoms and the environment's surfaces: the force
(``mj_contactForce``, turned to the world axes), the force-weighted contact point and velocity
of the robot's material point there, and the deepest penetration (:mod:`.mujoco_readings`,
compiled).

Between two MPC updates, :meth:`MujocoPlant.run` steps a whole period in one compiled call
(:mod:`.mujoco_steps`), the compiled policy included: the numbers of :meth:`MujocoPlant.step`
called at each step, to the bit.
"""

from __future__ import annotations

import numpy as np

from liftoff import dynamics
from liftoff.problems.mpc.disturbances import Disturbances

from . import ContactReadings, Measurement, Steps
from .mujoco_model import MujocoRobot, frame_body, import_mujoco
from .mujoco_readings import Readings
from .mujoco_steps import compiled_steps

DESCRIPTION = "MuJoCo (unilateral, compliant, frictional contacts; the URDF's joint damping and friction)"


class MujocoPlant:
    """MuJoCo driving ``robot`` (:class:`.mujoco_model.MujocoRobot`; its time step is the
    plant's ``dt``); ``contacts``: a dict name -> (the robot's frame, the MuJoCo geom ids that
    make the contact); ``disturbances`` as for liftoff's plants."""

    engine = "mujoco"
    description = DESCRIPTION

    def __init__(self, robot: MujocoRobot, contacts, disturbances=Disturbances()):
        self.mujoco = import_mujoco()
        self.robot, self.mj = robot, robot.mj
        self.data = self.mujoco.MjData(self.mj)
        self.dt = float(self.mj.opt.timestep)
        self.contacts = {name: (frame, frozenset(geoms)) for name, (frame, geoms) in contacts.items()}
        self.contact_names = tuple(self.contacts)
        self.index = {name: k for k, name in enumerate(self.contact_names)}  # the rows of the readings
        self.disturbances = disturbances
        self.surfaces = frozenset(robot.surfaces.values())
        self._push_bodies = {push.frame: self._body_of(push.frame) for push in disturbances.pushes}  # before compiling
        placed = {name: (*self._placement_in_body(frame), geoms) for name, (frame, geoms) in self.contacts.items()}
        self.readings = Readings(self.mujoco, self.mj, placed, self.surfaces)
        self._rng = np.random.default_rng(disturbances.seed)
        self._pushed = False  # whether the last step applied a push (its wrenches still in xfrc_applied)
        self._steps = compiled_steps(self)  # None: the steps of run() one at a time in Python
        nu = len(robot.actuators)
        self._bias = np.ascontiguousarray(np.broadcast_to(np.asarray(disturbances.torque_bias, dtype=float), (nu,)))

    def _body_of(self, frame) -> int:
        """The MuJoCo body that carries the liftoff frame ``frame``."""
        return self.mj.body(frame_body(self.robot.model, frame)[0]).id

    def _placement_in_body(self, frame) -> tuple:
        """``(body id, position)``: the MuJoCo body of ``frame`` and the frame's origin in it."""
        link, _, p = frame_body(self.robot.model, frame)
        return self.mj.body(link).id, p

    def reset(self, q, v, tau=None) -> Measurement:
        """Start from ``(q, v)`` (and the actuators' torques ``tau`` with a filter)."""
        m, d = self.mj, self.data
        self.mujoco.mj_resetData(m, d)
        d.qpos[:], d.qvel[:] = self.robot.to_mujoco(q, v)
        if self.robot.filtered:
            d.act[m.actuator_actadr[self.robot.actuators]] = tau
        self._rng = np.random.default_rng(self.disturbances.seed)
        self._pushed = False  # mj_resetData cleared xfrc_applied
        self.mujoco.mj_forward(m, d)
        return self._measure()

    def step(self, t, command) -> Measurement:
        """One MuJoCo step under ``command`` at time ``t`` (module docstring)."""
        m, d = self.mj, self.data
        d.ctrl[self.robot.actuators] = self.disturbances.torques(self._rng, np.asarray(command, dtype=float))
        pushes = self.disturbances.active_pushes(t)
        if pushes or self._pushed:  # the wrenches of the last step's pushes are taken off
            d.xfrc_applied[:] = 0.0
        self._pushed = bool(pushes)
        for push in pushes:
            body = self._push_bodies[push.frame]
            q, _ = self.robot.from_mujoco(d.qpos, d.qvel)
            _, p = dynamics.frame_placement(self.robot.model, q, push.frame)
            force = np.asarray(push.force, dtype=float)
            d.xfrc_applied[body, :3] += force
            d.xfrc_applied[body, 3:] += np.cross(p - d.xipos[body], force)  # the force acts at the frame's origin
        self.mujoco.mj_step(m, d)  # its contacts and forces: those of the step, found at its start
        return self._measure()

    def run(self, first, steps, policy, measurement, lower, upper) -> Steps | None:
        """The ``steps`` steps from step index ``first`` (time ``first * dt``) from
        ``measurement`` under ``policy``, in one compiled call (:mod:`.mujoco_steps`), stopping
        after one whose state is beyond ``lower, upper (nq,)`` or not finite: the :class:`Steps`
        done, checked. None when they cannot run so: a policy that is not compiled, a push during
        them, or the steps not compiled; the closed loop then calls :meth:`step` at each."""
        native = getattr(policy, "native", lambda: None)()
        if native is None or self._steps is None:
            return None
        pushes = self.disturbances.pushes
        if pushes and any(self.disturbances.active_pushes((first + j) * self.dt) for j in range(steps)):
            return None
        if self._pushed:  # the wrenches of the last step's pushes are taken off
            self.data.xfrc_applied[:] = 0.0
            self._pushed = False
        noise = self.disturbances.noise(self._rng, (steps, len(self.robot.actuators)))
        return self._steps(first, steps, native, measurement, self._bias, noise, lower, upper)

    def _measure(self) -> Measurement:
        m, d = self.mj, self.data
        q, v = self.robot.from_mujoco(d.qpos, d.qvel)
        tau = np.array(d.act[m.actuator_actadr[self.robot.actuators]]) if self.robot.filtered else None
        return Measurement(q, v, tau, ContactReadings(self.index, self.readings(d)))
