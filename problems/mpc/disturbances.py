"""What the world does to a plant that the controller does not know: pushes, torque noise and
bias, and a model mismatch (the plant's links heavier or lighter than the controller's model).

Every plant applies them the same way: a :class:`Push` is a force at a frame's origin, the
torque noise and bias are added to the actuated joints' torques, and a mass scale multiplies the
mass and rotational inertia of some joints' bodies (:func:`scaled_model` for liftoff's plants,
:func:`mujoco_model.build`'s ``scaled`` for MuJoCo's).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np


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

    def torques(self, rng, tau) -> np.ndarray:
        """The actuated joints' torques ``tau`` with the bias and the noise (drawn from ``rng``) added."""
        return self.applied(tau, self.noise(rng, np.shape(tau)))

    def applied(self, tau, noise) -> np.ndarray:
        """The actuated joints' torques ``tau`` with the bias and ``noise`` (or None) added."""
        out = tau + self.torque_bias
        return out if noise is None else out + noise

    def noise(self, rng, shape) -> np.ndarray | None:
        """The torque noise of ``shape`` drawn from ``rng``, None without noise. The draws come one
        after the other: several steps' at once are the steps' drawn one at a time."""
        return rng.normal(0.0, self.torque_noise, size=shape) if self.torque_noise > 0 else None

    def active_pushes(self, t) -> list:
        return [push for push in self.pushes if push.active(t)]


def disturbances_of(settings, pushes) -> Disturbances:
    """The :class:`Disturbances` of a configuration's ``plant`` section and the ``pushes``."""
    return Disturbances(tuple(pushes), settings.torque_noise, settings.torque_bias, settings.seed)


def check_frames(model, pushes) -> None:
    """The unknown-frame error of ``model`` for the first of ``pushes`` on a frame it lacks: a
    run checks its pushes before it builds (and compiles) anything."""
    for push in pushes:
        model.frame_id(push.frame)


def describe(pushes, mass_scale) -> dict:
    """The disturbances of a run as plain data (for its measures)."""
    return {
        "pushes": [
            {"frame": x.frame, "force": list(map(float, x.force)), "start": x.start, "duration": x.duration}
            for x in pushes
        ],
        "mass_scale": mass_scale,
    }


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
