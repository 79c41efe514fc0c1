"""Plants: the simulated robots a closed loop drives, behind one interface.

- :class:`.mujoco_plant.MujocoPlant`: MuJoCo driving a model generated from the URDF the
  controller reads (:mod:`.mujoco_model`), with its unilateral, compliant, frictional contacts.
  The world the controller must be right in, and the default.
- :class:`.ideal.IdealPlant` and :class:`.ideal_legged.IdealLeggedPlant`: liftoff's own
  plants, integrating the controller's own model with rigid bilateral contacts
  (``plant.contact: rigid_bilateral``). An idealization (they say so in every output), kept as
  a reference for debugging a controller.
- :class:`.simulated.SimulatorPlant`: liftoff's time-stepping simulator (seed 002) on the
  controller's model, spheres on the robot against planes: rigid unilateral contacts with
  Coulomb friction (``plant.contact: unilateral``) or soft ones (``soft``).

A plant starts from a state (:meth:`Plant.reset`) and advances one step of ``dt`` under a
command (:meth:`Plant.step`: the actuated joints' torques, or the torque filter's input); both
return a :class:`Measurement`: the state, the actuators' torques, and each named contact's
:class:`ContactReading` (whether it touches, the force, where, how deep). The closed loop and
the measures read only these.

Imports :mod:`liftoff.problems.mpc.disturbances` and the layers below.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np


@dataclass(frozen=True)
class ContactReading:
    """One contact of the robot with its environment during a step: ``active`` when it
    touches; ``force (3,)`` [N, world axes], the force the environment applies on the robot;
    ``position (3,)``, the contact point (the robot's contact frame when it does not touch);
    ``depth`` [m], how far the robot goes into the surface (0 when it does not); ``velocity
    (3,)`` [m/s, world axes], that of the robot's material point at the contact (its part
    along the surface is sliding: a rolling foot's contact point moves, its material point
    does not), zero when it does not touch."""

    active: bool
    force: np.ndarray
    position: np.ndarray
    depth: float = 0.0
    velocity: np.ndarray = field(default_factory=lambda: np.zeros(3))


@dataclass(frozen=True)
class Measurement:
    """What a plant reports after a step: the state ``(q, v)``, the actuators' torques ``tau``
    (with a torque filter, else None) and a :class:`ContactReading` per contact name."""

    q: np.ndarray
    v: np.ndarray
    tau: np.ndarray | None = None
    contacts: dict = field(default_factory=dict)


class Plant(Protocol):
    """A simulated robot (module docstring): its step ``dt``, its ``engine`` (``mujoco`` or
    ``liftoff``), a one-line ``description`` of what it idealizes (its contact model), and its
    ``contact_names``."""

    dt: float
    engine: str
    description: str
    contact_names: tuple

    def reset(self, q, v, tau=None) -> Measurement: ...
    def step(self, t, command) -> Measurement: ...
