"""liftoff's own plant: the controller's model integrated with rigid bilateral contacts.

:class:`IdealPlant` integrates liftoff's proximal constrained forward dynamics
(:func:`dynamics.constrained_dynamics`) with the semi-implicit Euler scheme

    v+ = v + dt a(q, v, tau),    q+ = q (+) dt v+

at a fixed step (1 kHz or more), the joints' damping and smoothed Coulomb friction of the model
included (:mod:`dynamics.joint_friction`). With a ``torque_filter`` (cut-off ``f_c`` [Hz]) the
joints receive the actuators' torques ``tau``, a state of the plant that follows the command
``w`` as ``tau_dot = 2 pi f_c (w - tau)``, integrated exactly over a step with ``w`` held (seed
001 eq. 49; the torques are measured without error).

What it idealizes: its contacts are bilateral and rigid (the surface pulls as well as pushes,
held with Baumgarte gains toward its targets: no compliance, no separation, no friction limit:
a negative normal force is reported, not simulated), it shares the controller's model (unless
a mass scale makes it heavier), and the torques are applied exactly. It is a reference for
debugging a controller, not evidence that it works: :mod:`.mujoco_plant` is that.

A step runs compiled (:class:`.ideal_kernel.StepKernel`, the same equations in C) unless
``backend="numpy"`` or the kernel cannot be compiled (one warning line): numpy
(:class:`.ideal_kernel.NumpyStep`) is the reference.
"""

from __future__ import annotations

import numpy as np

from liftoff import dynamics
from liftoff.ocp.lifted import actuation
from liftoff.problems.mpc.disturbances import Disturbances

from . import FORCE, POSITION, ROW, TOUCHING, ContactReadings, Measurement
from .ideal_kernel import BACKENDS, step_backend

DESCRIPTION = (
    "liftoff's idealized plant (the controller's model, rigid bilateral contacts: plant.contact rigid_bilateral)"
)


def world_force(contact, f, R) -> np.ndarray:
    """The world force ``(3,)`` [N] of a translational ``contact`` whose rows carry ``f``, its
    frame's world rotation ``R``."""
    full = np.zeros(3)
    full[list(contact.rows)] = f
    rotation = getattr(contact, "rotation", None)
    if rotation is not None:
        full = np.asarray(rotation) @ full
    if contact.reference is dynamics.ReferenceFrame.LOCAL:
        full = R @ full
    return full


def contact_target(contact):
    """The Baumgarte target of ``contact``: its placement, the origin (unused, ``kp = 0``) without one."""
    if contact.placement is not None:
        return contact.placement
    return np.zeros(3) if contact.translational else (np.eye(3), np.zeros(3))


class IdealPlant:
    """``model`` with its ``contacts`` (a dict name -> :class:`dynamics.Contact`, targets
    included), stepped by ``dt``; ``torque_filter`` the actuators' cut-off frequency [Hz]
    (None: the command is applied directly); ``mu`` the proximal damping of the dynamics;
    ``friction_width`` the smoothing of the joints' Coulomb friction; ``backend`` ``"compiled"``
    or ``"numpy"`` (module docstring)."""

    engine = "liftoff"
    description = DESCRIPTION

    def __init__(
        self,
        model,
        contacts,
        dt=1e-3,
        disturbances=Disturbances(),
        mu=1e-8,
        torque_filter=None,
        friction_width=dynamics.joint_friction.DEFAULT_WIDTH,
        backend="compiled",
    ):
        if not (np.isfinite(dt) and dt > 0):
            raise ValueError(f"plant time step must be > 0, got {dt!r}")
        if backend not in BACKENDS:
            raise ValueError(f"a plant's backend is one of {', '.join(BACKENDS)}, got {backend!r}")
        for push in disturbances.pushes:
            model.frame_id(push.frame)  # unknown frames raise here
        self.model, self.contacts, self.dt, self.disturbances, self.mu = model, dict(contacts), dt, disturbances, mu
        self.contact_names = tuple(self.contacts)
        self._index = {name: k for k, name in enumerate(self.contact_names)}  # the rows of the readings
        self.friction_width = friction_width
        self.filter_gain = None if torque_filter is None else float(np.exp(-2 * np.pi * torque_filter * dt))
        self._rng = np.random.default_rng(disturbances.seed)
        self.q = self.v = self.tau = None
        self.backend, self._step = backend, None  # the step's backend, made by the first reset
        self.slots = tuple(self.contacts.values())  # the contacts the step's backend knows
        self._targets = tuple(contact_target(c) for c in self.slots)
        ends = np.cumsum([c.dim for c in self.slots]).tolist()
        self._rows = [slice(end - c.dim, end) for c, end in zip(self.slots, ends)]  # each contact's in the forces
        self._actuation = actuation(model)

    def _stepper(self):
        """The step's backend for the contact ``slots``, made once."""
        if self._step is None:
            self._step = step_backend(self.model, self.slots, self.mu, self.backend)
        return self._step

    def reset(self, q, v, tau=None) -> Measurement:
        """Start from ``(q, v)`` and the actuators' torques ``tau`` (with a filter); the contact
        forces reported are those under ``tau`` (zero torques without a filter)."""
        self._rng = np.random.default_rng(self.disturbances.seed)
        self.q, self.v = np.array(q, dtype=float), np.array(v, dtype=float)
        self.tau = None if tau is None else np.array(tau, dtype=float)
        applied = np.zeros(self._actuation.shape[1]) if tau is None else self.tau
        step = self._stepper()(self.q, self.v, self.torque(0.0, self.q, self.v, applied, False), 0.0, self._targets)
        return self._measure(step)

    def torque(self, t, q, v, tau, disturbed=True) -> np.ndarray:
        """The joint torques ``(nv,)`` the plant receives for the actuated joints' ``tau`` at
        time ``t``: bias and noise added (when ``disturbed``), the torques of the pushes, and the
        joints' passive torques at ``v``."""
        return self.joint_torques(t, q, v, self.disturbances.torques(self._rng, tau) if disturbed else tau, disturbed)

    def joint_torques(self, t, q, v, applied, pushed=True) -> np.ndarray:
        """The joint torques ``(nv,)`` of the actuated joints' torques ``applied`` at time ``t``:
        with the torques of the pushes (when ``pushed``) and the joints' passive torques at ``v``."""
        out = self._actuation @ applied + dynamics.passive_torque(self.model, v, self.friction_width)
        for push in self.disturbances.active_pushes(t) if pushed else ():
            J = dynamics.frame_jacobian(self.model, q, push.frame, "LOCAL_WORLD_ALIGNED")[:3]
            out = out + J.T @ np.asarray(push.force, dtype=float)
        return out

    def step(self, t, command) -> Measurement:
        """One step from the plant's state under ``command`` at time ``t`` (module docstring)."""
        if self.filter_gain is None:
            applied = command
        else:
            applied, self.tau = self.tau, self.filter_gain * self.tau + (1 - self.filter_gain) * command
        step = self._step(self.q, self.v, self.torque(t, self.q, self.v, applied), self.dt, self._targets)
        self.q, self.v = step.q, step.v
        return self._measure(step)

    def _measure(self, step) -> Measurement:
        """The state and each contact's reading from the ``step`` that reached it (held: always
        active, at no depth and no velocity)."""
        readings = np.zeros((len(self.slots), ROW))
        readings[:, TOUCHING], readings[:, POSITION] = 1.0, step.p  # at its frame's position
        for row, contact, rows, R in zip(readings, self.slots, self._rows, step.R):
            row[FORCE] = world_force(contact, step.f[rows], R)
        tau = None if self.tau is None else self.tau.copy()
        return Measurement(self.q.copy(), self.v.copy(), tau, ContactReadings(self._index, readings))
