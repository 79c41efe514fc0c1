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
"""

from __future__ import annotations

import numpy as np

from liftoff import dynamics
from liftoff.ocp.lifted import actuation
from liftoff.problems.mpc.disturbances import Disturbances

from . import ContactReading, Measurement

DESCRIPTION = (
    "liftoff's idealized plant (the controller's model, rigid bilateral contacts: plant.contact rigid_bilateral)"
)


def world_force(model, q, contact, f) -> np.ndarray:
    """The world force ``(3,)`` [N] of a translational ``contact`` whose rows carry ``f``."""
    full = np.zeros(3)
    full[list(contact.rows)] = f
    rotation = getattr(contact, "rotation", None)
    if rotation is not None:
        full = np.asarray(rotation) @ full
    if contact.reference is dynamics.ReferenceFrame.LOCAL:
        full = dynamics.frame_placement(model, q, contact.frame)[0] @ full
    return full


class IdealPlant:
    """``model`` with its ``contacts`` (a dict name -> :class:`dynamics.Contact`, targets
    included), stepped by ``dt``; ``torque_filter`` the actuators' cut-off frequency [Hz]
    (None: the command is applied directly); ``mu`` the proximal damping of the dynamics;
    ``friction_width`` the smoothing of the joints' Coulomb friction."""

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
    ):
        if not (np.isfinite(dt) and dt > 0):
            raise ValueError(f"plant time step must be > 0, got {dt!r}")
        for push in disturbances.pushes:
            model.frame_id(push.frame)  # unknown frames raise here
        self.model, self.contacts, self.dt, self.disturbances, self.mu = model, dict(contacts), dt, disturbances, mu
        self.contact_names = tuple(self.contacts)
        self.friction_width = friction_width
        self.filter_gain = None if torque_filter is None else float(np.exp(-2 * np.pi * torque_filter * dt))
        self._rng = np.random.default_rng(disturbances.seed)
        self.q = self.v = self.tau = None

    def reset(self, q, v, tau=None) -> Measurement:
        """Start from ``(q, v)`` and the actuators' torques ``tau`` (with a filter); the contact
        forces reported are those under ``tau`` (zero torques without a filter)."""
        self._rng = np.random.default_rng(self.disturbances.seed)
        self.q, self.v = np.array(q, dtype=float), np.array(v, dtype=float)
        self.tau = None if tau is None else np.array(tau, dtype=float)
        nu = actuation(self.model).shape[1]
        applied = np.zeros(nu) if tau is None else self.tau
        return self._measure(self._accelerations(self.q, self.v, self.torque(0.0, self.q, self.v, applied, False))[1])

    def torque(self, t, q, v, tau, disturbed=True) -> np.ndarray:
        """The joint torques ``(nv,)`` the plant receives for the actuated joints' ``tau`` at
        time ``t``: bias and noise added (when ``disturbed``), the torques of the pushes, and the
        joints' passive torques at ``v``."""
        if disturbed:
            tau = self.disturbances.torques(self._rng, tau)
        out = actuation(self.model) @ tau + dynamics.passive_torque(self.model, v, self.friction_width)
        for push in self.disturbances.active_pushes(t) if disturbed else ():
            J = dynamics.frame_jacobian(self.model, q, push.frame, "LOCAL_WORLD_ALIGNED")[:3]
            out = out + J.T @ np.asarray(push.force, dtype=float)
        return out

    def _accelerations(self, q, v, torque):
        """``(a, f)``: the accelerations and the contacts' force rows."""
        contacts = tuple(self.contacts.values())
        if contacts:
            return dynamics.constrained_dynamics(self.model, q, v, torque, contacts, mu=self.mu)[:2]
        return dynamics.aba(self.model, q, v, torque), np.zeros(0)

    def step(self, t, command) -> Measurement:
        """One step from the plant's state under ``command`` at time ``t`` (module docstring)."""
        if self.filter_gain is None:
            applied = command
        else:
            applied, self.tau = self.tau, self.filter_gain * self.tau + (1 - self.filter_gain) * command
        a, f = self._accelerations(self.q, self.v, self.torque(t, self.q, self.v, applied))
        self.v = self.v + self.dt * a
        self.q = dynamics.integrate(self.model, self.q, self.dt * self.v)
        return self._measure(f)

    def _measure(self, f) -> Measurement:
        """The state and each contact's reading with its force rows ``f`` (held: always active)."""
        readings, offset = {}, 0
        for name, contact in self.contacts.items():
            rows = f[offset : offset + contact.dim]
            offset += contact.dim
            _, p = dynamics.frame_placement(self.model, self.q, contact.frame)
            readings[name] = ContactReading(True, world_force(self.model, self.q, contact, rows), np.asarray(p))
        return Measurement(self.q.copy(), self.v.copy(), None if self.tau is None else self.tau.copy(), readings)
