"""The polishing task in closed loop: MPC against the simulated plant, its measures and its file.

:func:`run` builds the task of a :class:`problems.tasks.polishing.PolishingConfig`, its MPC
(:class:`problems.mpc.controller.MPC`) and its plant (:class:`problems.mpc.plant.Plant`, the same model
unless a mass scale is given), and runs them for the configured duration. :func:`measures`
gives what ``liftoff mpc --json`` prints:

- ``force_rms_error_N``: the RMS of the normal force minus its target after the first second
  (the whole run if shorter than 2 s: after its first half);
- ``circle_rms_error_m``: the RMS distance, in the surface plane, of the tool from the circle
  reference at the same time, over the same window;
- ``min_normal_force_N`` and ``contact_lost`` (a negative normal force: the bilateral contact
  of the plant pulled the tool);
- ``force_settling_s``: from the end of the last push (or from the start), the time after which
  the normal force stays within ``FORCE_BAND_N`` of its target;
- the controller's timing (:func:`problems.mpc.results.timing`).

Its results file (:mod:`problems.mpc.results`) holds, besides ``t, q, v, u``, the normal
force, the tool position and its reference.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from liftoff import dynamics
from liftoff.problems.tasks.polishing import build_ocp, make_task

from .controller import MPC
from .plant import Plant, closed_loop, describe, disturbances_of, scaled_model
from .results import timing

FORCE_BAND_N = 5.0


@dataclass(frozen=True)
class PolishingRun:
    """A closed-loop run: its configuration, task, plant-rate arrays (``t, q, v, u, force,
    tool, reference``), the MPC's ticks, the controller's wall time, the formulation, the
    backend and the disturbances applied."""

    config: object
    task: object
    arrays: dict
    ticks: list
    control_seconds: float
    formulation: str
    backend: str
    disturbances: dict


def run(config, duration=None, pushes=(), mass_scale=1.0, formulation=None, progress=None, quiet=False):
    """Run the polishing MPC of ``config`` for ``duration`` seconds (default ``mpc.duration``)
    with ``pushes`` (:class:`problems.mpc.plant.Push`) and the plant's scaled bodies' mass and
    inertia times ``mass_scale``; ``formulation`` overrides ``solver.formulation``."""
    task = make_task(config)
    m, p = config.mpc, config.plant
    mpc = MPC.of_config(lambda t, q, v, tau: build_ocp(task, t, q, v, tau), config, formulation, quiet)
    model = scaled_model(task.model, p.scaled_joints, mass_scale) if mass_scale != 1.0 else task.model
    disturbances = disturbances_of(p, pushes)
    plant = Plant(model, (task.contact(),), p.dt, disturbances, torque_filter=config.torque_filter)
    duration = m.duration if duration is None else duration
    tau0 = task.u_pressing if config.torque_filter is not None else None
    log = closed_loop(mpc, plant, task.q0, task.v0, duration, m.period, progress, tau0)
    arrays = log.arrays()
    arrays["force"] = task.normal_force(arrays.pop("f"))
    arrays["tool"] = dynamics.frame_placement(task.model, arrays["q"], config.tool)[1]
    arrays["reference"] = task.circle(arrays["t"])
    applied = describe(pushes, mass_scale)
    return PolishingRun(
        config, task, arrays, log.ticks, log.control_seconds, mpc.formulation_name, mpc.formulation.backend, applied
    )


def measures(r: PolishingRun) -> dict:
    """The closed loop's measures (module docstring)."""
    a, cfg = r.arrays, r.config
    t, duration = a["t"], a["t"][-1] + cfg.plant.dt
    window = t >= (1.0 if duration >= 2.0 else duration / 2)
    plane = list(r.task.plane)
    force_error = a["force"][window] - cfg.surface.force
    circle_error = np.linalg.norm((a["tool"] - a["reference"])[window][:, plane], axis=1)
    since = max((p["start"] + p["duration"] for p in r.disturbances["pushes"]), default=0.0)
    outside = np.flatnonzero((t >= since) & (np.abs(a["force"] - cfg.surface.force) > FORCE_BAND_N))
    settled = since if len(outside) == 0 else t[outside[-1]] + cfg.plant.dt
    return {
        "status": "completed",
        "formulation": r.formulation,
        "backend": r.backend,
        "duration_s": float(duration),
        "force_rms_error_N": float(np.sqrt(np.mean(force_error**2))),
        "circle_rms_error_m": float(np.sqrt(np.mean(circle_error**2))),
        "min_normal_force_N": float(np.min(a["force"])),
        "contact_lost": bool(np.any(a["force"] < 0)),
        "force_settling_s": float(settled - since),
        **timing(r.ticks, r.control_seconds, duration),
        "disturbances": r.disturbances,
    }


def summary_lines(m: dict) -> tuple:
    """The measures a person reads first, as lines."""
    lost = " (CONTACT LOST)" if m["contact_lost"] else ""
    return (
        f"normal force: RMS error {m['force_rms_error_N']:.3f} N after the first second, "
        f"minimum {m['min_normal_force_N']:.2f} N{lost}",
        f"circle: RMS error {1e3 * m['circle_rms_error_m']:.2f} mm",
    )
