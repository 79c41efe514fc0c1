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
of the robot's material point there, and the deepest penetration.
"""

from __future__ import annotations

import numpy as np

from liftoff import dynamics
from liftoff.problems.mpc.disturbances import Disturbances

from . import ContactReading, Measurement
from .mujoco_model import MujocoRobot, frame_body, import_mujoco

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
        self._frames = {name: self._placement_in_body(frame) for name, (frame, _) in self.contacts.items()}
        self.disturbances = disturbances
        self.surfaces = frozenset(robot.surfaces.values())
        self._is_surface = np.zeros(self.mj.ngeom, dtype=bool)
        self._is_surface[list(self.surfaces)] = True
        self._names_of = [[] for _ in range(self.mj.ngeom)]  # per geom, the named contacts it is part of
        for k, (_, geoms) in enumerate(self.contacts.values()):
            for g in geoms:
                self._names_of[g].append(k)
        self._wrench, self._twist = np.zeros(6), np.zeros(6)  # MuJoCo's outputs for one contact
        self._push_bodies = {}
        for push in disturbances.pushes:
            self._push_bodies[push.frame] = self._body_of(push.frame)
        self._rng = np.random.default_rng(disturbances.seed)

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
        self.mujoco.mj_forward(m, d)
        return self._measure()

    def step(self, t, command) -> Measurement:
        """One MuJoCo step under ``command`` at time ``t`` (module docstring)."""
        m, d = self.mj, self.data
        d.ctrl[self.robot.actuators] = self.disturbances.torques(self._rng, np.asarray(command, dtype=float))
        d.xfrc_applied[:] = 0.0
        for push in self.disturbances.active_pushes(t):
            body = self._push_bodies[push.frame]
            q, _ = self.robot.from_mujoco(d.qpos, d.qvel)
            _, p = dynamics.frame_placement(self.robot.model, q, push.frame)
            force = np.asarray(push.force, dtype=float)
            d.xfrc_applied[body, :3] += force
            d.xfrc_applied[body, 3:] += np.cross(p - d.xipos[body], force)  # the force acts at the frame's origin
        self.mujoco.mj_step(m, d)  # its contacts and forces: those of the step, found at its start
        return self._measure()

    def _measure(self) -> Measurement:
        m, d = self.mj, self.data
        q, v = self.robot.from_mujoco(d.qpos, d.qvel)
        tau = np.array(d.act[m.actuator_actadr[self.robot.actuators]]) if self.robot.filtered else None
        force, moment, sliding, weight, depth = self._contact_sums()
        readings, placed = {}, False
        for k, name in enumerate(self.contacts):
            touching = bool(weight[k] > 0)
            if touching:
                position, velocity = moment[k] / weight[k], sliding[k] / weight[k]
            else:  # the frame's origin at the state after the step (mj_step left the kinematics of its start)
                if not placed:
                    self.mujoco.mj_kinematics(m, d)
                    placed = True
                body, p = self._frames[name]
                position, velocity = d.xpos[body] + d.xmat[body].reshape(3, 3) @ p, np.zeros(3)
            readings[name] = ContactReading(touching, force[k], position, float(depth[k]), velocity)
        return Measurement(q, v, tau, readings)

    def _contact_sums(self) -> tuple:
        """Per named contact (rows in ``contact_names`` order), over MuJoCo's contacts between
        its geoms and a surface: the force on the robot, the sums of the contact points and of
        the robot's material points' velocities there weighted by the normal force, the normal
        force, and the deepest penetration. A contact at a time in floats: there are a few."""
        m, d = self.mj, self.data
        sums = [[0.0] * 11 for _ in self.contacts]  # per name: force, moment, sliding, weight, depth
        c = d.contact
        is_surface, wrench, twist, geom = self._is_surface, self._wrench, self._twist, self.mujoco.mjtObj.mjOBJ_GEOM
        rows = zip(c.geom1.tolist(), c.geom2.tolist(), c.frame.tolist(), c.pos.tolist(), c.dist.tolist())
        for i, (g1, g2, frame, pos, dist) in enumerate(rows):
            robot = g2 if is_surface[g1] else g1
            if is_surface[g1] == is_surface[g2] or not self._names_of[robot]:
                continue
            self.mujoco.mj_contactForce(m, d, i, wrench)  # in the contact's frame: its rows, normal first
            self.mujoco.mj_objectVelocity(m, d, geom, robot, twist, 0)
            (fn, f1, f2), sign = wrench[:3].tolist(), 1.0 if is_surface[g1] else -1.0  # the force is on geom2
            force = [sign * (fn * frame[j] + f1 * frame[3 + j] + f2 * frame[6 + j]) for j in range(3)]
            (wx, wy, wz, vx, vy, vz), centre = twist.tolist(), d.geom_xpos[robot].tolist()
            x, y, z = pos[0] - centre[0], pos[1] - centre[1], pos[2] - centre[2]
            point = (vx + wy * z - wz * y, vy + wz * x - wx * z, vz + wx * y - wy * x)  # the material point's velocity
            normal = abs(fn)
            row = force + [normal * p for p in pos] + [normal * p for p in point] + [normal]
            for k in self._names_of[robot]:
                total = sums[k]
                for j in range(10):
                    total[j] += row[j]
                total[10] = max(total[10], -dist)
        sums = np.array(sums).reshape(len(self.contacts), 11)
        return sums[:, 0:3], sums[:, 3:6], sums[:, 6:9], sums[:, 9], sums[:, 10]
