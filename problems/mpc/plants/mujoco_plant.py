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
        force = {name: np.zeros(3) for name in self.contacts}
        moment = {name: np.zeros(3) for name in self.contacts}
        sliding = {name: np.zeros(3) for name in self.contacts}
        weight = dict.fromkeys(self.contacts, 0.0)
        depth = dict.fromkeys(self.contacts, 0.0)
        wrench, twist = np.zeros(6), np.zeros(6)
        for i in range(d.ncon):
            contact = d.contact[i]
            g1, g2 = int(contact.geom1), int(contact.geom2)
            if (g1 in self.surfaces) == (g2 in self.surfaces):
                continue
            robot_geom, sign = (g2, 1.0) if g1 in self.surfaces else (g1, -1.0)
            for name, (_, geoms) in self.contacts.items():
                if robot_geom not in geoms:
                    continue
                self.mujoco.mj_contactForce(m, d, i, wrench)
                frame = contact.frame.reshape(3, 3)  # rows: the normal (geom1 to geom2), then the tangents
                f = sign * frame.T @ wrench[:3]  # on geom2 when the surface is geom1
                force[name] += f
                normal = abs(wrench[0])
                moment[name] += normal * np.asarray(contact.pos)
                self.mujoco.mj_objectVelocity(m, d, self.mujoco.mjtObj.mjOBJ_GEOM, robot_geom, twist, 0)
                sliding[name] += normal * (twist[3:] + np.cross(twist[:3], contact.pos - d.geom_xpos[robot_geom]))
                weight[name] += normal
                depth[name] = max(depth[name], -float(contact.dist))
        readings, placed = {}, False
        for name in self.contacts:
            touching = weight[name] > 0
            if touching:
                position, velocity = moment[name] / weight[name], sliding[name] / weight[name]
            else:  # the frame's origin at the state after the step (mj_step left the kinematics of its start)
                if not placed:
                    self.mujoco.mj_kinematics(m, d)
                    placed = True
                body, p = self._frames[name]
                position, velocity = d.xpos[body] + d.xmat[body].reshape(3, 3) @ p, np.zeros(3)
            readings[name] = ContactReading(touching, force[name], position, depth[name], velocity)
        return Measurement(q, v, tau, readings)
