"""A simulated plant for testing controllers, and the closed loop of an MPC with it.

:class:`Plant` integrates liftoff's proximal constrained forward dynamics
(:func:`dynamics.constrained_dynamics`) with the semi-implicit Euler scheme

    v+ = v + dt a(q, v, tau),    q+ = q (+) dt v+

at a fixed step (1 kHz or more). With a ``torque_filter`` (cut-off ``f_c`` [Hz]) the joints
receive the actuators' torques ``tau``, a state of the plant that follows the command ``w``
as ``tau_dot = 2 pi f_c (w - tau)``, integrated exactly over a step with ``w`` held (seed 001
eq. 49; the torques are measured without error). What it idealizes: its contacts are bilateral while active
(the surface pulls as well as pushes; a negative normal force is reported as a lost contact,
not simulated as a separation) and held with Baumgarte gains toward their targets (no
penetration or compliance model), and the torques are applied exactly. Disturbances
(:class:`Disturbances`): a force pushing on a frame for a while (applied as the joint torques
``J^T F`` of a force at the frame's origin), torque noise and bias, and a model mismatch (the
plant's links heavier or lighter than the controller's model, :func:`scaled_model`).

:func:`closed_loop` runs an :class:`problems.mpc.controller.MPC` against a plant: the policy at the
plant's rate, an update every ``period``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np

from liftoff import dynamics
from liftoff.ocp.lifted import actuation


@dataclass(frozen=True)
class Push:
    """A force ``force (3,)`` [N, world axes] on the origin of ``frame`` from ``start`` for
    ``duration`` seconds."""

    frame: str
    force: tuple
    start: float
    duration: float

    def __post_init__(self):
        force = np.asarray(self.force, dtype=float)
        if force.shape != (3,) or not np.all(np.isfinite(force)):
            raise ValueError(f"push force: expected 3 finite numbers, got {self.force!r}")
        if not (np.isfinite(self.start) and self.start >= 0 and np.isfinite(self.duration) and self.duration > 0):
            raise ValueError(f"push: expected a start >= 0 and a duration > 0, got {self.start!r}, {self.duration!r}")

    def active(self, t) -> bool:
        return self.start <= t < self.start + self.duration

    @classmethod
    def parse(cls, text: str) -> Push:
        """The push of ``FRAME:FX,FY,FZ:T0:DT`` (``liftoff mpc --push``); ``ValueError`` naming
        the expected form."""
        parts = text.split(":")
        try:
            if len(parts) != 4:
                raise ValueError
            force = tuple(float(x) for x in parts[1].split(","))
            return cls(parts[0], force, float(parts[2]), float(parts[3]))
        except ValueError as e:
            why = f": {e}" if str(e) else ""
            raise ValueError(
                f"--push {text}: expected FRAME:FX,FY,FZ:T0:DT (e.g. arm_right_7_link:0,0,-20:3:0.1){why}"
            ) from None


@dataclass(frozen=True)
class Disturbances:
    """``pushes``; Gaussian torque noise of standard deviation ``torque_noise`` [N m] drawn
    from ``seed``; a constant ``torque_bias`` [N m] (a scalar or one per joint)."""

    pushes: tuple = ()
    torque_noise: float = 0.0
    torque_bias: object = 0.0
    seed: int = 0


def disturbances_of(settings, pushes) -> Disturbances:
    """The :class:`Disturbances` of a configuration's ``plant`` section and the ``pushes``."""
    return Disturbances(tuple(pushes), settings.torque_noise, settings.torque_bias, settings.seed)


def describe(pushes, mass_scale) -> dict:
    """The disturbances of a run as plain data (for its measures)."""
    return {
        "pushes": [
            {"frame": x.frame, "force": list(map(float, x.force)), "start": x.start, "duration": x.duration}
            for x in pushes
        ],
        "mass_scale": mass_scale,
    }


class Plant:
    """The simulated robot ``model`` (module docstring) with ``contacts`` (targets included),
    stepped by ``dt``; ``torque_filter`` the actuators' cut-off frequency [Hz] (None: the
    command is applied directly); ``mu`` the proximal damping of the dynamics."""

    def __init__(self, model, contacts, dt=1e-3, disturbances=Disturbances(), mu=1e-8, torque_filter=None):
        if not (np.isfinite(dt) and dt > 0):
            raise ValueError(f"plant time step must be > 0, got {dt!r}")
        for push in disturbances.pushes:
            model.frame_id(push.frame)  # unknown frames raise here
        self.model, self.contacts, self.dt, self.disturbances, self.mu = model, tuple(contacts), dt, disturbances, mu
        self.filter_gain = None if torque_filter is None else float(np.exp(-2 * np.pi * torque_filter * dt))
        self._rng = np.random.default_rng(disturbances.seed)

    def start(self, q):
        """Prepare a run from the configuration ``q`` (nothing to do: the contacts are fixed)."""

    def torque(self, t, q, tau) -> np.ndarray:
        """The joint torques ``(nv,)`` the plant receives for the actuated joints' ``tau``: bias
        and noise added, then the torques of the pushes."""
        d = self.disturbances
        out = tau + d.torque_bias
        if d.torque_noise > 0:
            out = out + self._rng.normal(0.0, d.torque_noise, size=tau.shape)
        out = actuation(self.model) @ out
        for push in d.pushes:
            if push.active(t):
                J = dynamics.frame_jacobian(self.model, q, push.frame, "LOCAL_WORLD_ALIGNED")[:3]
                out = out + J.T @ np.asarray(push.force, dtype=float)
        return out

    def step(self, t, q, v, command, tau=None):
        """``(q+, v+, f, tau+)``: the state after one step from ``(q, v)`` (and the actuators'
        torques ``tau`` with a filter) under ``command`` at time ``t``, and the contact forces
        during it (the contacts' rows and frames); ``tau+`` is None without a filter."""
        if self.filter_gain is None:
            applied, tau_next = command, None
        else:
            applied, tau_next = tau, self.filter_gain * tau + (1 - self.filter_gain) * command
        tau = self.torque(t, q, applied)
        if self.contacts:
            a, f = dynamics.constrained_dynamics(self.model, q, v, tau, self.contacts, mu=self.mu)[:2]
        else:
            a, f = dynamics.aba(self.model, q, v, tau), np.zeros(0)
        v_next = v + self.dt * a
        return dynamics.integrate(self.model, q, self.dt * v_next), v_next, f, tau_next


def scaled_model(model, joints, factor):
    """``model`` with the mass and rotational inertia of the bodies of ``joints`` multiplied by
    ``factor`` (a model mismatch for the plant)."""
    if not (np.isfinite(factor) and factor > 0):
        raise ValueError(f"mass scale must be > 0, got {factor!r}")
    index = [model.joint_id(j) for j in joints]
    mass, inertia = model.body_mass.copy(), model.body_inertia.copy()
    mass[index] *= factor
    inertia[index] *= factor
    return replace(model, body_mass=mass, body_inertia=inertia)


@dataclass
class Log:
    """A closed-loop run at the plant's rate: ``t (n,)``, ``q, v, tau (n, .)`` at the start of
    each step (``tau`` the actuators' torques, empty without a filter), the command ``u (n, nu)``
    and the contact forces ``f (n, m)`` during it; ``ticks`` of the MPC and the wall
    ``control_seconds`` spent in updates and policy evaluations (not in the first solve, which
    comes before the loop)."""

    t: list = field(default_factory=list)
    q: list = field(default_factory=list)
    v: list = field(default_factory=list)
    tau: list = field(default_factory=list)
    u: list = field(default_factory=list)
    f: list = field(default_factory=list)
    ticks: list = field(default_factory=list)
    control_seconds: float = 0.0

    def arrays(self) -> dict:
        return {k: np.asarray(getattr(self, k)) for k in ("t", "q", "v", "tau", "u", "f")}


def closed_loop(mpc, plant, q0, v0, duration, period, progress=None, tau0=None) -> Log:
    """Run ``mpc`` (started here) against ``plant`` from ``(q0, v0)`` (and the actuators'
    torques ``tau0`` of a plant with a filter) for ``duration`` seconds: the policy every plant
    step, an MPC update every ``period`` (a multiple of the plant's step), both reading the
    measured state. ``progress(t)`` is called after each update."""
    steps = int(round(period / plant.dt))
    if steps < 1 or abs(steps * plant.dt - period) > 1e-9 * period:
        raise ValueError(f"the MPC period {period!r} is not a multiple of the plant's step {plant.dt!r}")
    log = Log()
    q, v, t = np.asarray(q0, dtype=float), np.asarray(v0, dtype=float), 0.0
    tau = None if tau0 is None else np.asarray(tau0, dtype=float)
    plant.start(q)
    policy = mpc.start(t, q, v, tau)  # before the loop: not counted in the controller's time
    updates = int(round(duration / period))
    for k in range(updates):
        for j in range(steps):
            t = (k * steps + j) * plant.dt
            begin = time.perf_counter()
            u = policy(t, q, v, tau)
            log.control_seconds += time.perf_counter() - begin
            q_next, v_next, f, tau_next = plant.step(t, q, v, u, tau)
            for name, x in (("t", t), ("q", q), ("v", v), ("tau", np.zeros(0) if tau is None else tau), ("u", u)):
                getattr(log, name).append(x)
            log.f.append(f)
            q, v, tau = q_next, v_next, tau_next
            if not (np.all(np.isfinite(q)) and np.all(np.isfinite(v))):
                raise FloatingPointError(f"the simulated state is not finite at t = {t:.3f} s")
        t = (k + 1) * period
        if k + 1 < updates:  # no update after the last period
            begin = time.perf_counter()
            policy = mpc.update(t, q, v, tau)
            log.control_seconds += time.perf_counter() - begin
        if progress is not None:
            progress(t)
    log.ticks = list(mpc.ticks)
    return log
