"""A gait in closed loop: MPC of its receding horizon against the legged plant, and its measures.

:func:`run` builds the whole run of a :class:`problems.tasks.gait_mpc.GaitMPCConfig`, its MPC (the
kernels built once for the whole run's contacts and costs) and its plant
(:class:`problems.mpc.legged_plant.LeggedPlant`, the same model unless a mass scale is given), and
runs them. :func:`measures` gives what ``liftoff mpc --json`` prints:

- ``fell``: the base below 0.25 m or tilted more than 45 degrees at some point;
- ``mean_forward_velocity_mps`` of the base over the run, and ``command_velocity_mps``, that of
  its references over the repeated cycles;
- ``max_cone_violation`` [N]: the largest tangential force beyond the friction pyramid of a
  foot in contact (the plant's feet stick: this is what a real foot would have slipped by);
- ``max_foot_slip_m``: the largest drift of a foot in contact from its touchdown point;
- ``max_penetration_m``, ``touchdowns``;
- the controller's timing (:func:`problems.mpc.results.timing`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from liftoff.problems.tasks.gait_mpc import make_run, window

from .controller import MPC
from .legged_plant import LeggedPlant
from .plant import closed_loop, describe, disturbances_of, scaled_model
from .results import timing

FALL_HEIGHT_M, FALL_TILT_DEG = 0.25, 45.0


@dataclass(frozen=True)
class GaitMPCRun:
    """A closed-loop run: its configuration, the whole run's plan, plant-rate arrays (``t, q,
    v, u, f``), the MPC's ticks, the controller's wall time, the formulation, the backend, the
    plant's event counts and the disturbances applied."""

    config: object
    plan: object
    arrays: dict
    ticks: list
    control_seconds: float
    formulation: str
    backend: str
    plant: dict
    disturbances: dict


def run(config, duration=None, pushes=(), mass_scale=1.0, formulation=None, progress=None, quiet=False):
    """Run the gait MPC of ``config`` for ``duration`` seconds (default ``mpc.duration``) with
    ``pushes`` (:class:`problems.mpc.plant.Push`) and the plant's scaled bodies' mass and inertia
    times ``mass_scale``; ``formulation`` overrides ``solver.formulation``."""
    plan = make_run(config)
    m, p = config.mpc, config.plant
    mpc = MPC.of_config(lambda t, q, v, tau: window(plan, t, q, v), config, formulation, quiet, layout=plan.ocp)
    model = scaled_model(plan.model, p.scaled_joints, mass_scale) if mass_scale != 1.0 else plan.model
    disturbances = disturbances_of(p, pushes)
    friction = config.contacts.friction
    plant = LeggedPlant(model, plan.feet, plan.ground, friction, plan.schedule, p.dt, p.kp, p.kd, disturbances)
    duration = m.duration if duration is None else duration
    log = closed_loop(mpc, plant, plan.ocp.q0, plan.ocp.v0, duration, m.period, progress)
    events = {
        "touchdowns": plant.touchdowns,
        "max_cone_violation": plant.max_cone_violation,
        "max_foot_slip_m": plant.max_slip,
        "max_penetration_m": plant.max_penetration,
    }
    applied = describe(pushes, mass_scale)
    arrays = log.arrays()
    return GaitMPCRun(
        config,
        plan,
        arrays,
        log.ticks,
        log.control_seconds,
        mpc.formulation_name,
        mpc.formulation.backend,
        events,
        applied,
    )


def tilt_degrees(q) -> np.ndarray:
    """The angle between the base's z axis and the vertical, from the quaternions ``q[:, 3:7]``."""
    x, y = q[:, 3], q[:, 4]
    return np.degrees(np.arccos(np.clip(1 - 2 * (x * x + y * y), -1.0, 1.0)))


def measures(r: GaitMPCRun) -> dict:
    """The closed loop's measures (module docstring)."""
    q, t = r.arrays["q"], r.arrays["t"]
    duration = float(t[-1] + r.config.plant.dt)
    fell = bool(np.any(q[:, 2] < FALL_HEIGHT_M) or np.any(tilt_degrees(q) > FALL_TILT_DEG))
    return {
        "status": "completed",
        "formulation": r.formulation,
        "backend": r.backend,
        "duration_s": duration,
        "fell": fell,
        "mean_forward_velocity_mps": float((q[-1, 0] - q[0, 0]) / duration),
        "command_velocity_mps": r.plan.command_velocity(),
        **r.plant,
        **timing(r.ticks, r.control_seconds, duration),
        "disturbances": r.disturbances,
    }


def summary_lines(m: dict) -> tuple:
    """The measures a person reads first, as lines."""
    return (
        f"base: mean forward velocity {m['mean_forward_velocity_mps']:.3f} m/s "
        f"(command {m['command_velocity_mps']:.3f}){' (FELL)' if m['fell'] else ''}",
        f"feet: {m['touchdowns']} touchdowns, slip up to {1e3 * m['max_foot_slip_m']:.2f} mm, "
        f"cone violation up to {max(0.0, m['max_cone_violation']):.2f} N",
    )
