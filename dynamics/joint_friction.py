"""Joint damping and Coulomb friction: the torques the URDF's ``<dynamics damping friction>``
apply on the joints, and their derivative.

The passive torque of a joint of velocity ``v`` is

    tau_p(v) = -D v - F tanh(v / width)

with ``D = model.damping`` (viscous, exact) and ``F = model.friction`` (Coulomb). The sign of
the Coulomb friction jumps at ``v = 0``; ``tanh(v / width)`` is its smooth approximation, whose
``width`` [rad/s, or m/s for prismatic joints] sets how fast it turns: at ``|v| = 2 width`` the
friction is 96% of ``F``. A stuck joint (static friction holding it) is outside this model:
near ``v = 0`` the friction is a steep damping of slope ``F / width``. The equation of motion
with them is ``M a + h = S u + J^T f + tau_p(v)``.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .batch import checked_vectors

DEFAULT_WIDTH = 0.5  # rad/s: the smoothing width of the Coulomb friction (sharper ones are stiff for an MPC)


def passive_torque(model, v, width=DEFAULT_WIDTH) -> np.ndarray:
    """``tau_p (..., nv)`` of the velocities ``v (..., nv)`` (module docstring)."""
    v = _checked(model, v, width)
    return -model.damping * v - model.friction * np.tanh(v / width)


def passive_torque_derivative(model, v, width=DEFAULT_WIDTH) -> np.ndarray:
    """``d tau_p / dv (..., nv)``: the diagonal of the (diagonal) Jacobian."""
    v = _checked(model, v, width)
    return -model.damping - model.friction / width * (1.0 - np.tanh(v / width) ** 2)


def keep_joint_friction(model, damping=True, coulomb=True):
    """``model`` with its joint ``damping`` and Coulomb ``friction`` kept or zeroed (to measure
    what they are worth to a controller)."""
    changes = {}
    if not damping:
        changes["damping"] = np.zeros(model.nv)
    if not coulomb:
        changes["friction"] = np.zeros(model.nv)
    for value in changes.values():
        value.setflags(write=False)
    return replace(model, **changes) if changes else model


def has_passive_torque(model) -> bool:
    """Whether any joint of ``model`` has damping or friction."""
    return bool(np.any(model.damping) or np.any(model.friction))


def _checked(model, v, width) -> np.ndarray:
    """The velocities ``v`` as a float array, checked with the ``width``."""
    if not (np.isfinite(width) and width > 0):
        raise ValueError(f"the Coulomb friction's smoothing width must be > 0, got {width!r}")
    return checked_vectors("v", v, model.nv)
