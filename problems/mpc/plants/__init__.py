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
(:meth:`.mujoco_plant.MujocoPlant.run`; the closed loop uses it where a plant has it). The closed
loop hands on consecutive steps as arrays, one row per step (:class:`Steps`): to its log and to
a controller's estimator, a period's steps at once.

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


def reading_rows(contacts, names) -> np.ndarray:
    """The readings of the contacts ``names`` (a tuple) in ``contacts`` (a dict of
    :class:`ContactReading`, or :class:`ContactReadings`) as rows ``(len(names), ROW)``."""
    if isinstance(contacts, ContactReadings):
        if tuple(contacts.index) == names:
            return contacts.rows
        return contacts.rows[[contacts.index[name] for name in names]].reshape(len(names), ROW)
    return np.array([reading_row(contacts[name]) for name in names]).reshape(len(names), ROW)


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


class Steps(NamedTuple):
    """Consecutive plant steps, one row each: their times ``t (n,)`` and commands ``u (n, nu)``;
    the state ``q (n + 1, nq)``, ``v (n + 1, nv)`` and the actuators' torques ``tau (n + 1,
    ntau)`` (``ntau`` 0 without a torque filter) at the first step's start (row 0) and after each
    step; the named contacts' readings during each step, ``readings (n, k, ROW)`` (:data:`ROW`),
    the column of each name in ``index`` (a dict name -> column, in the columns' order); the
    seconds each step took in the policy and in the plant, ``seconds (n, 2)``. ``checked``: the
    plant tested the state after each step for divergence (:class:`problems.mpc.loop.Divergence`)
    and stopped after the first that diverged, the last, if ``diverged``."""

    t: np.ndarray
    u: np.ndarray
    q: np.ndarray
    v: np.ndarray
    tau: np.ndarray
    readings: np.ndarray
    seconds: np.ndarray
    index: dict
    checked: bool = False
    diverged: bool = False

    @classmethod
    def one(cls, before: Measurement, t, u, after: Measurement, seconds, names) -> Steps:
        """The step at time ``t`` under the command ``u`` from the measurement ``before`` to
        ``after`` (its readings those of the contacts ``names``, a tuple), which took ``seconds``
        ``(policy, plant)``; not checked."""
        q, v = np.array([before.q, after.q]), np.array([before.v, after.v])
        tau = np.array([np.zeros(0) if m.tau is None else m.tau for m in (before, after)])
        readings = reading_rows(after.contacts, names)[None]
        index = {name: k for k, name in enumerate(names)}
        return cls(np.array([t]), np.array([u], dtype=float), q, v, tau, readings, np.array([seconds]), index)

    @classmethod
    def joined(cls, blocks) -> Steps:
        """The steps of ``blocks``, one after the other (each starting where the one before ended)."""
        if len(blocks) == 1:
            return blocks[0]
        rows = {name: np.concatenate([getattr(b, name) for b in blocks]) for name in _STEP_ROWS}
        for name in _KNOT_ROWS:  # the first block's start, then every block's steps
            rows[name] = np.concatenate([getattr(blocks[0], name)[:1]] + [getattr(b, name)[1:] for b in blocks])
        last = blocks[-1]
        return cls(**rows, index=last.index, checked=all(b.checked for b in blocks), diverged=last.diverged)

    @property
    def size(self) -> int:
        return len(self.t)

    def after(self, j) -> Measurement:
        """The measurement after step ``j``."""
        tau = self.tau[j + 1] if self.tau.shape[1] else None
        return Measurement(self.q[j + 1], self.v[j + 1], tau, ContactReadings(self.index, self.readings[j]))

    def head(self, n) -> Steps:
        """The first ``n`` steps."""
        rows = {name: getattr(self, name)[:n] for name in _STEP_ROWS}
        knots = {name: getattr(self, name)[: n + 1] for name in _KNOT_ROWS}
        return self._replace(**rows, **knots, diverged=self.diverged and n == self.size)


_STEP_ROWS, _KNOT_ROWS = ("t", "u", "readings", "seconds"), ("q", "v", "tau")  # Steps' arrays of n and n + 1 rows


def within(q, v, lower, upper) -> bool:
    """Whether the state ``(q, v)`` is finite and ``q`` within ``lower, upper`` (the closed loop's
    divergence test, :class:`problems.mpc.loop.Divergence`), in four passes."""
    return bool(np.isfinite(q).all() and np.isfinite(v).all() and (q >= lower).all() and (q <= upper).all())


class PlantFailure(RuntimeError):
    """A plant whose dynamics broke down at time ``t`` (a singular contact system); ``steps``: the
    :class:`Steps` a plant's ``run`` did before, or None."""

    CAUGHT = (np.linalg.LinAlgError, FloatingPointError)  # the errors of a plant's dynamics that break down

    def __init__(self, t, message, steps=None):
        super().__init__(message)
        self.t, self.steps = t, steps

    @classmethod
    def at(cls, t, error, steps=None) -> PlantFailure:
        """The failure of a step at time ``t`` that raised ``error`` (one of :data:`CAUGHT`)."""
        return cls(t, f"the plant failed at t = {t:.3f} s: {error}", steps)


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
