"""A gait in closed loop: MPC of its receding horizon against a plant, and its measures.

:func:`run` builds the whole run of a :class:`problems.tasks.gait_mpc.GaitMPCConfig`, its MPC
(the kernels built once for the whole run's contacts and costs) and its plant
(:func:`make_plant`: MuJoCo on flat ground of the contacts' friction by default, or liftoff's
idealized legged plant), and runs them until the end or a fall. :func:`measures` gives what
``liftoff mpc --json`` prints, from the plant's readings whatever the engine:

- ``fell`` (the base below ``FALL_HEIGHT_M`` above the ground or tilted more than
  ``FALL_TILT_DEG``; the run stops there with that status);
- ``mean_forward_velocity_mps`` of the base over the run, and ``command_velocity_mps``, that of
  its references over the repeated cycles;
- ``slip_per_stance_m``: per stance of a foot (from touchdown to lift-off, as the plant reports
  contact, gaps shorter than ``STANCE_GAP_S`` bridged), the largest distance its contact point
  moved in the ground plane from where it landed: median and max over the stances;
- ``touchdown_error_ms``: each touchdown's time minus that of the nearest planned touchdown of
  the same foot: median and max of the absolute values, and the count;
- ``max_penetration_m`` (the deepest a foot went into the ground) and ``max_cone_violation``
  [N] (the largest tangential force beyond Coulomb's cone ``mu f_n`` of a foot in contact: at
  most zero in MuJoCo, whose feet slip instead; what liftoff's idealized feet would have slipped
  by);
- the loop's timing (:func:`problems.mpc.results.timing`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from liftoff.problems.tasks.gait_mpc import make_run, window

from .controller import MPC
from .disturbances import describe, disturbances_of, scaled_model
from .loop import closed_loop
from .plants.ideal_legged import IdealLeggedPlant
from .results import timing

FALL_HEIGHT_M, FALL_TILT_DEG = 0.25, 45.0
STANCE_GAP_S = 0.01  # a foot without contact for less than this stands on (MuJoCo's contacts flicker)
GROUND = "ground"


@dataclass(frozen=True)
class GaitMPCRun:
    """A closed-loop run: its configuration, the whole run's plan, plant-rate arrays, the log
    (ticks, status, times), the formulation, the backend, the plant's engine and description,
    the ground's height and the disturbances applied."""

    config: object
    plan: object
    arrays: dict
    log: object
    formulation: str
    backend: str
    plant: dict
    ground: float
    disturbances: dict


def make_plant(config, plan, pushes=(), mass_scale=1.0):
    """The plant of ``config.plant`` (module docstring) with ``pushes`` and the scaled joints'
    bodies ``mass_scale`` times heavier; returns ``(plant, ground height)``."""
    p = config.plant
    disturbances = disturbances_of(p, pushes)
    if p.engine == "liftoff":
        model = scaled_model(plan.model, p.scaled_joints, mass_scale) if mass_scale != 1.0 else plan.model
        width = config.joint_friction.width
        plant = IdealLeggedPlant(
            model, plan.feet, plan.ground, plan.schedule, p.dt, p.kp, p.kd, disturbances, friction_width=width
        )
        return plant, plan.ground
    from .plants import mujoco_model as mm
    from .plants.mujoco_plant import MujocoPlant

    def build(surfaces):
        return mm.build(
            config.robot,
            plan.model,
            None,
            surfaces,
            (),
            p.dt,
            None,
            mm.ContactSettings(p.contact.solref, p.contact.solimp),
            p.joint_friction,
            (p.scaled_joints, mass_scale) if mass_scale != 1.0 else None,
        )

    bare = build(())
    soles = [g for foot in plan.feet for g in mm.body_geoms(bare, foot)]
    ground = mm.lowest_point(bare, plan.ocp.q0, soles)  # where the feet stand
    robot = build((mm.Surface(GROUND, "plane", np.array([0.0, 0.0, ground]), friction=config.contacts.friction),))
    feet = {foot: (foot, mm.body_geoms(robot, foot)) for foot in plan.feet}
    return MujocoPlant(robot, feet, disturbances), ground


def fallen(ground):
    """The stop test of a legged run: ``fell`` when the base is too low or tilted (module docstring)."""

    def stop(measurement):
        q = measurement.q
        low = q[2] - ground < FALL_HEIGHT_M
        return "fell" if low or tilt_degrees(q[None])[0] > FALL_TILT_DEG else None

    return stop


def run(config, duration=None, pushes=(), mass_scale=1.0, formulation=None, progress=None, quiet=False):
    """Run the gait MPC of ``config`` for ``duration`` seconds (default ``mpc.duration``) with
    ``pushes`` (:class:`problems.mpc.disturbances.Push`) and the plant's scaled bodies' mass and
    inertia times ``mass_scale``; ``formulation`` overrides ``solver.formulation``."""
    plan = make_run(config)
    m = config.mpc
    mpc = MPC.of_config(lambda t, q, v, tau: window(plan, t, q, v), config, formulation, quiet, layout=plan.ocp)
    plant, ground = make_plant(config, plan, pushes, mass_scale)
    duration = m.duration if duration is None else duration
    q0, v0 = plan.ocp.q0, plan.ocp.v0
    log = closed_loop(mpc, plant, plan.model, q0, v0, duration, m.period, progress, stop=fallen(ground))
    engine = {"engine": plant.engine, "description": plant.description}
    applied = describe(pushes, mass_scale)
    formulation = mpc.formulation_name
    return GaitMPCRun(config, plan, log.arrays(), log, formulation, mpc.formulation.backend, engine, ground, applied)


def tilt_degrees(q) -> np.ndarray:
    """The angle between the base's z axis and the vertical, from the quaternions ``q[:, 3:7]``."""
    x, y = q[:, 3], q[:, 4]
    return np.degrees(np.arccos(np.clip(1 - 2 * (x * x + y * y), -1.0, 1.0)))


def stances(active, gap) -> list:
    """``[(foot, first step, last step)]``: the stances of each foot, runs of steps in which it
    touches, runs separated by fewer than ``gap`` steps without contact merged (a foot whose
    contact flickers for a step or two stands on)."""
    out = []
    for i in range(active.shape[1]):
        edges = np.diff(np.concatenate(([0], active[:, i].astype(int), [0])))
        runs = [[int(s), int(e) - 1] for s, e in zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1))]
        merged = []
        for run in runs:
            if merged and run[0] - merged[-1][1] <= gap:
                merged[-1][1] = run[1]
            else:
                merged.append(run)
        out += [(i, first, last) for first, last in merged]
    return out


def planned_touchdowns(plan, foot) -> np.ndarray:
    """The times at which the plan puts ``foot`` down (its contact stages' starts)."""
    times = plan.ocp.times()
    held = [foot in {c.frame for c in plan.ocp.stages[k].contacts} for k in plan.contact_stages]
    starts = times[plan.contact_stages]
    return np.array([starts[k] for k in range(1, len(held)) if held[k] and not held[k - 1]])


def measures(r: GaitMPCRun) -> dict:
    """The closed loop's measures (module docstring)."""
    a, plan = r.arrays, r.plan
    q, t = a["q"], a["t"]
    duration = float(r.log.end_time)
    active, force, position = a["contact_active"], a["contact_force"], a["contact_position"]
    slips, errors = [], []
    gap = int(round(STANCE_GAP_S / r.config.plant.dt))
    for i, first, last in stances(active, gap):
        moved = np.linalg.norm(position[first : last + 1, i, :2] - position[first, i, :2], axis=1)
        slips.append(float(moved.max()))
        planned = planned_touchdowns(plan, plan.feet[i])
        if first > gap and len(planned):  # a touchdown (not a foot standing at the start)
            errors.append(1e3 * float(t[first] - planned[np.argmin(np.abs(planned - t[first]))]))
    tangential = np.linalg.norm(force[..., :2], axis=-1) - r.config.contacts.friction * force[..., 2]
    return {
        "status": r.log.status,
        "end_time_s": r.log.end_time,
        "message": r.log.message,
        "formulation": r.formulation,
        "backend": r.backend,
        "plant": r.plant,
        "duration_s": duration,
        "fell": r.log.status == "fell",
        "mean_forward_velocity_mps": float((q[-1, 0] - q[0, 0]) / duration) if duration > 0 else 0.0,
        "command_velocity_mps": plan.command_velocity(),
        "slip_per_stance_m": _median_max(slips),
        "touchdown_error_ms": {**_median_max(np.abs(errors)), "count": len(errors)},
        "touchdowns": len(errors),
        "max_penetration_m": float(np.max(a["contact_depth"], initial=0.0)),
        "max_cone_violation": float(np.max(np.where(active, tangential, -np.inf), initial=0.0)),
        "ground_m": r.ground,
        **timing(r.log, duration),
        "disturbances": r.disturbances,
    }


def _median_max(x) -> dict:
    x = np.asarray(x, dtype=float)
    return {"median": float(np.median(x)) if x.size else 0.0, "max": float(np.max(x)) if x.size else 0.0}


def summary_lines(m: dict) -> tuple:
    """The measures a person reads first, as lines."""
    fell = f" (FELL at {m['end_time_s']:.2f} s)" if m["fell"] else ""
    slip, touchdown = m["slip_per_stance_m"], m["touchdown_error_ms"]
    return (
        f"plant: {m['plant']['description']}",
        f"base: mean forward velocity {m['mean_forward_velocity_mps']:.3f} m/s "
        f"(command {m['command_velocity_mps']:.3f}){fell}",
        f"feet: {m['touchdowns']} touchdowns, {touchdown['median']:.1f} ms off the plan (median; max "
        f"{touchdown['max']:.1f}), slip per stance {1e3 * slip['median']:.1f} mm (median; max "
        f"{1e3 * slip['max']:.1f}), cone violation up to {max(0.0, m['max_cone_violation']):.2f} N",
    )
