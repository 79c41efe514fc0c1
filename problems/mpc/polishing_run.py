"""The polishing task in closed loop: MPC against a plant, its measures and its file.

:func:`run` builds the task of a :class:`problems.tasks.polishing.PolishingConfig`, its MPC
(:class:`problems.mpc.controller.MPC`, the force reference moved by the force error's integral)
and its plant (:func:`make_plant`: MuJoCo by default, the table or board a box of the surface's
friction and the pad a sphere on the gripper; or liftoff's engine, ``plant.contact.model``:
its idealized plant, ``rigid_bilateral``, or its simulator, the pad a sphere on the surface's
plane, ``unilateral`` or ``soft``), and runs them.
:func:`measures` gives what ``liftoff mpc --json`` prints, from the plant's readings whatever
the engine (after the first second, or after the first half of a run shorter than 2 s):

- ``force_rms_error_N``, ``force_max_error_N``: the RMS and largest absolute error of the
  normal force against its target, the force averaged over each MPC period (the surface's
  impulse over the period: what a force sensor read at the controller's rate reports);
- ``force_step_rms_error_N``: the same of the force at every plant step. In MuJoCo a sliding
  contact chatters: its convex contact model lets a body that slides under a load lift off for a
  step or two now and then (more often the heavier and faster it slides: a 3 kg sphere pressed
  with 30 N and dragged at 7 cm/s over friction 0.3 loses contact in about 5% of the steps, a
  10 kg one in about 30%), and the force of the steps in contact makes up for the others;
- ``circle_rms_error_m``: the RMS distance, in the surface plane, of the tool from the circle
  reference at the same time;
- ``contact_lost_fraction``: the share of plant steps without contact, and
  ``contact_lost_periods_fraction`` that of MPC periods without any;
- ``min_normal_force_N`` at a plant step (a negative value: the idealized plant pulled the tool);
- ``force_settling_s``: from the end of the last push (or from the start), the time after which
  the period-averaged normal force stays within ``FORCE_BAND_N`` of its target;
- the controller's timing (:func:`problems.mpc.results.timing`).

Its results file (:mod:`problems.mpc.results`) holds, besides the log's arrays, the normal
force, the tool position and its reference.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from liftoff import dynamics
from liftoff.dynamics import collision, simulator
from liftoff.problems.tasks.polishing import TOOL_FRAME, Horizons, make_task

from .controller import MPC
from .disturbances import check_frames, describe, disturbances_of, scaled_model
from .loop import closed_loop
from .observer import DisturbanceObserver
from .plants import FORCE, POSITION
from .plants.ideal import IdealPlant
from .plants.simulated import SimulatorPlant, contact_solver
from .results import outcome, timing

FORCE_BAND_N = 5.0
PAD, SURFACE = "pad", "surface"


@dataclass(frozen=True)
class PolishingRun:
    """A closed-loop run: its configuration, task, plant-rate arrays (the log's, and
    ``force, tool, reference``), the MPC's ticks, the log (status, times), the formulation, the
    backend, the plant's engine and description, and the disturbances applied."""

    config: object
    task: object
    arrays: dict
    log: object
    formulation: str
    backend: str
    plant: dict
    disturbances: dict


def make_plant(config, task, pushes=(), mass_scale=1.0):
    """The plant of ``config.plant`` (module docstring) with ``pushes`` and the scaled joints'
    bodies ``mass_scale`` times heavier."""
    p = config.plant
    disturbances = disturbances_of(p, pushes)
    s, tool = config.surface, config.tool
    centre = task.R0.T @ (tool.radius * task.normal)  # the pad's centre, off the contact point along the normal
    if p.engine == "liftoff":
        model = scaled_model(task.model, p.scaled_joints, mass_scale) if mass_scale != 1.0 else task.model
        width = config.joint_friction.width
        if p.contact.model == "rigid_bilateral":
            contacts = {"tool": task.contact()}
            return IdealPlant(
                model, contacts, p.dt, disturbances, torque_filter=config.torque_filter, friction_width=width
            )
        plant = SimulatorPlant(
            model,
            {"tool": (collision.Sphere(TOOL_FRAME, tool.radius, centre), TOOL_FRAME)},
            (collision.Plane(SURFACE, task.surface_point(), task.normal, s.friction),),
            p.dt,
            p.contact.model,
            simulator.SpringDamper(p.contact.stiffness, p.contact.damping, slip=p.contact.slip),
            disturbances,
            config.torque_filter,
            width,
            "the controller's model, the pad a sphere on the surface's plane",
            p.contact.solver,
        )
        plant.check_time_step(task.q0, s.force)  # the soft contact's stability, pressing
        return plant
    from .plants import mujoco_model as mm
    from .plants.mujoco_plant import MujocoPlant

    surface = mm.Surface(SURFACE, "box", task.surface_point(), s.axes, (0.4, 0.4, 0.02), s.friction)
    pad = mm.Tool(PAD, TOOL_FRAME, centre, tool.radius)
    robot = mm.build(
        config.robot,
        task.model,
        task.locked,
        (surface,),
        (pad,),
        p.dt,
        config.torque_filter,
        mm.ContactSettings(p.contact.solref, p.contact.solimp),
        p.joint_friction,
        (p.scaled_joints, mass_scale) if mass_scale != 1.0 else None,
    )
    return MujocoPlant(robot, {"tool": (TOOL_FRAME, [robot.tools[PAD]])}, disturbances)


def run(config, duration=None, pushes=(), mass_scale=1.0, formulation=None, progress=None, quiet=False):
    """Run the polishing MPC of ``config`` for ``duration`` seconds (default ``mpc.duration``)
    with ``pushes`` (:class:`problems.mpc.disturbances.Push`) and the plant's scaled bodies'
    mass and inertia times ``mass_scale``; ``formulation`` overrides ``solver.formulation``."""
    task = make_task(config)
    check_frames(task.model, pushes)
    m = config.mpc
    plant = make_plant(config, task, pushes, mass_scale)
    width, time_constant = config.joint_friction.width, config.observer.time_constant
    observer = DisturbanceObserver(
        task.model, plant.dt, time_constant, width, pad_forces(task), (TOOL_FRAME,), config.solver.backend, quiet
    )
    estimate = (lambda: observer.estimate) if time_constant > 0 else (lambda: None)
    mpc = MPC.of_config(Horizons(task, estimate), config, formulation, quiet)
    duration = m.duration if duration is None else duration
    tau0 = task.u_pressing if config.torque_filter is not None else None
    log = closed_loop(
        mpc,
        plant,
        task.model,
        task.q0,
        task.v0,
        duration,
        m.period,
        progress,
        tau0,
        observe=observer.observe if time_constant > 0 else None,
    )
    arrays = log.arrays()
    arrays["force"] = task.normal_force(arrays["contact_force"][:, 0])
    arrays["tool"] = dynamics.frame_placement(task.model, arrays["q"], TOOL_FRAME)[1]
    arrays["reference"] = task.circle(arrays["t"])
    applied = describe(pushes, mass_scale)
    engine = {"engine": plant.engine, "description": plant.description, **contact_solver(plant)}
    return PolishingRun(config, task, arrays, log, mpc.formulation_name, mpc.formulation.backend, engine, applied)


def pad_forces(task):
    """The observer's ``contact_forces`` (:class:`.observer.DisturbanceObserver`): ``task``'s
    modelled forces for the pad's readings."""

    def contact_forces(steps):
        rows = steps.readings[:, steps.index["tool"]]
        return task.modelled_forces(steps.t, rows[:, FORCE], rows[:, POSITION], steps.q[1:], steps.v[1:])

    return contact_forces


def measures(r: PolishingRun) -> dict:
    """The closed loop's measures (module docstring)."""
    a, cfg = r.arrays, r.config
    t, duration = a["t"], r.log.end_time
    steps = max(int(round(cfg.mpc.period / cfg.plant.dt)), 1)
    n = len(t) // steps * steps
    error = a["force"] - cfg.surface.force
    period_t, period_error = t[:n:steps], error[:n].reshape(-1, steps).mean(axis=1)  # the impulse per period
    start = 1.0 if duration >= 2.0 else duration / 2
    window, period_window = t >= start, period_t >= start
    circle_error = np.linalg.norm(((a["tool"] - a["reference"]) @ r.task.plane)[window], axis=1)
    since = max((p["start"] + p["duration"] for p in r.disturbances["pushes"]), default=0.0)
    outside = np.flatnonzero((period_t >= since) & (np.abs(period_error) > FORCE_BAND_N))
    settled = since if len(outside) == 0 else period_t[outside[-1]] + cfg.mpc.period
    touching = a["contact_active"][:, 0] & (a["force"] > 0)
    untouched_periods = ~touching[:n].reshape(-1, steps).any(axis=1)
    return {
        **outcome(r, duration),
        "force_rms_error_N": _rms(period_error[period_window]),
        "force_max_error_N": float(np.max(np.abs(period_error[period_window]), initial=0.0)),
        "force_step_rms_error_N": _rms(error[window]),
        "circle_rms_error_m": _rms(circle_error),
        "contact_lost_fraction": float(np.mean(~touching[window])) if np.any(window) else 0.0,
        "contact_lost_periods_fraction": float(np.mean(untouched_periods[period_window]))
        if np.any(period_window)
        else 0.0,
        "min_normal_force_N": float(np.min(a["force"][window], initial=np.inf)),
        "force_settling_s": float(max(settled - since, 0.0)),
        "surface_plane": r.task.plane.tolist(),
        **timing(r.log, duration),
        "disturbances": r.disturbances,
    }


def _rms(x) -> float:
    return float(np.sqrt(np.mean(x**2))) if len(x) else float("nan")


def summary_lines(m: dict) -> tuple:
    """The measures a person reads first, as lines."""
    return (
        f"plant: {m['plant']['description']}",
        f"normal force over each MPC period: RMS error {m['force_rms_error_N']:.3f} N, largest "
        f"{m['force_max_error_N']:.2f} N",
        f"normal force at each plant step: RMS error {m['force_step_rms_error_N']:.3f} N, minimum "
        f"{m['min_normal_force_N']:.2f} N, no contact in {100 * m['contact_lost_fraction']:.1f}% of the steps",
        f"circle: RMS error {1e3 * m['circle_rms_error_m']:.2f} mm",
    )
