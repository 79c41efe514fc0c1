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
:class:`ContactReading` (whether it touches, the force, where, how deep; a plant may hold them
as rows of numbers, :class:`ContactReadings`). The closed loop and the measures read only these.
A plant may also run the steps between two MPC updates in one call, the policy included
(:meth:`.mujoco_plant.MujocoPlant.run`; the closed loop uses it where a plant has it).

Imports :mod:`liftoff.problems.mpc.disturbances` and the layers below.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

import numpy as np

_NO_VELOCITY = np.zeros(3)
_NO_VELOCITY.flags.writeable = False


class ContactReading(NamedTuple):
    """One contact of the robot with its environment during a step: ``active`` when it
    touches; ``force (3,)`` [N, world axes], the force the environment applies on the robot;
    ``position (3,)``, the contact point (the robot's contact frame when it does not touch);
    ``depth`` [m], how far the robot goes into the surface (0 when it does not); ``velocity
    (3,)`` [m/s, world axes], that of the robot's material point at the contact (its part
    along the surface is sliding: a rolling foot's contact point moves, its material point
    does not), zero when it does not touch. A named tuple: a plant makes one per contact at
    every step."""

    active: bool
    force: np.ndarray
    position: np.ndarray
    depth: float = 0.0
    velocity: np.ndarray = _NO_VELOCITY


ROW = 11  # a reading as numbers: touching (1 or 0), force (3), position (3), depth, velocity (3)
TOUCHING, FORCE, POSITION, DEPTH, VELOCITY = 0, slice(1, 4), slice(4, 7), 7, slice(8, 11)  # their columns


def reading_row(reading: ContactReading) -> np.ndarray:
    """``reading`` as a row of :data:`ROW` numbers."""
    r = reading
    return np.concatenate(([float(r.active)], r.force, r.position, [r.depth], r.velocity))


def reading_rows(measurements, name) -> np.ndarray:
    """The readings of the contact ``name`` in ``measurements`` as rows ``(len(measurements), ROW)``."""
    return np.array([_reading_row(m.contacts, name) for m in measurements])


def _reading_row(contacts, name) -> np.ndarray:
    if isinstance(contacts, ContactReadings):
        return contacts.rows[contacts.index[name]]
    return reading_row(contacts[name])


class ContactReadings(Mapping):
    """The readings of a step's named contacts held as ``rows (n, ROW)`` (:data:`ROW`), the
    row of each name in ``index`` (a dict name -> row, in the rows' order): a name's
    :class:`ContactReading` is made when it is read."""

    __slots__ = ("index", "rows")

    def __init__(self, index: dict, rows: np.ndarray):
        self.index, self.rows = index, rows

    def __getitem__(self, name) -> ContactReading:
        r = self.rows[self.index[name]]
        return ContactReading(bool(r[TOUCHING]), r[FORCE], r[POSITION], float(r[DEPTH]), r[VELOCITY])

    def __iter__(self):
        return iter(self.index)

    def __len__(self) -> int:
        return len(self.index)


@dataclass(frozen=True)
class Measurement:
    """What a plant reports after a step: the state ``(q, v)``, the actuators' torques ``tau``
    (with a torque filter, else None) and a :class:`ContactReading` per contact name (a dict,
    or :class:`ContactReadings`)."""

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
