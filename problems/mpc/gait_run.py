"""A gait in closed loop: the legged MPC against a plant, and its measures.

:func:`run` builds the controller of a :class:`problems.tasks.gait_mpc.GaitMPCConfig`
(:class:`problems.mpc.locomotion.GaitController`: the schedule on the measured contacts, the
footholds, each horizon's OCP; the kernels built once for its layout), its MPC and its plant
(:func:`make_plant`: MuJoCo on flat ground of ``plant.friction`` by default; or liftoff's
engine, ``plant.contact.model``: its idealized legged plant, ``rigid_bilateral``, or its
simulator, the URDF's foot spheres on flat ground of ``plant.friction``, ``unilateral`` or
``soft``), and runs them until the end or a fall, the controller reading the
plant's contacts at every step. :func:`measures` gives what ``liftoff mpc --json`` prints,
from the plant's readings whatever the engine:

- ``fell`` (the base below ``FALL_HEIGHT_M`` above the ground or tilted more than
  ``FALL_TILT_DEG``; the run stops there with that status);
- ``commands``: per command of ``mpc.command``, the measured mean velocity in the base's heading
  frame and yaw rate (:func:`command_tracking`), and after a stop, how long the base took to
  stop; ``mean_forward_velocity_mps`` is the first command's, ``command_velocity_mps`` its
  forward velocity;
- ``slip_per_stance_m``: per stance of a foot (from touchdown to lift-off, as the plant reports
  contact, gaps shorter than ``STANCE_GAP_S`` bridged), the farthest the foot's material point
  at the contact slid along the ground from where it landed (the integral of its velocity
  there): median and max over the stances. A spherical foot that rolls does not slide; its
  contact point travels, which ``contact_travel_per_stance_m`` measures the same way;
- ``touchdown_error_ms``: each touchdown's time (the first contact in the second half of a swing)
  minus the time the plan put it down at its lift-off: median and max of the absolute values,
  and the count;
- ``impact_speed_mps``: at each impact (a step at which a foot's contact begins, the step before
  without: touchdowns, and the landings again of feet that bounced or flickered), the speed of
  the foot's material point at the contact: median, max and count (a count above the
  touchdowns' is feet that bounced or flickered);
- ``max_penetration_m`` (the deepest a foot went into the ground) and ``max_cone_violation``
  [N] (the largest tangential force beyond Coulomb's cone ``mu f_n`` of a foot in contact, with
  the ground's ``mu``: at most zero in MuJoCo, whose feet slip instead; what liftoff's idealized
  feet would have slipped by);
- the loop's timing (:func:`problems.mpc.results.timing`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from liftoff import dynamics
from liftoff.dynamics import collision, simulator
from liftoff.problems.tasks.gaits import legged_model

from .controller import MPC
from .disturbances import check_frames, describe, disturbances_of, scaled_model
from .locomotion import GaitController
from .loop import closed_loop
from .plants.ideal_legged import IdealLeggedPlant
from .plants.simulated import SimulatorPlant, contact_solver, urdf_spheres
from .results import outcome, timing

FALL_HEIGHT_M, FALL_TILT_DEG = 0.25, 45.0
STANCE_GAP_S = 0.01  # a foot without contact for less than this stands on (MuJoCo's contacts flicker)
SETTLE_S = 1.0  # the start of a command left out of its measured velocity
STOP_MPS = 0.05  # a base slower than this (averaged over a gait cycle) has stopped
GROUND = "ground"


@dataclass(frozen=True)
class GaitMPCRun:
    """A closed-loop run: its configuration, its controller, plant-rate arrays, the log
    (ticks, status, times), the formulation, the backend, the plant's engine and description,
    the ground's height and the disturbances applied."""

    config: object
    controller: object
    arrays: dict
    log: object
    formulation: str
    backend: str
    plant: dict
    ground: float
    disturbances: dict


def make_plant(config, controller, pushes=(), mass_scale=1.0):
    """The plant of ``config.plant`` for the :class:`.locomotion.GaitController` ``controller``
    (module docstring) with ``pushes`` and the scaled joints' bodies ``mass_scale`` times
    heavier; returns ``(plant, ground height)``."""
    p = config.plant
    disturbances = disturbances_of(p, pushes)
    model, feet, q0 = controller.model, controller.feet, controller.q0
    if p.engine == "liftoff":
        scaled = scaled_model(model, p.scaled_joints, mass_scale) if mass_scale != 1.0 else model
        width = config.joint_friction.width
        if p.contact.model == "rigid_bilateral":
            ground = controller.ground
            plant = IdealLeggedPlant(
                scaled, feet, ground, controller.holds, p.dt, p.kp, p.kd, disturbances, friction_width=width
            )
            return plant, ground
        spheres = urdf_spheres(config.robot, feet)  # the feet's collision spheres
        ground = lowest_point(model, q0, spheres.values())  # where the feet stand
        plant = SimulatorPlant(
            scaled,
            {foot: (spheres[foot], foot) for foot in feet},
            (collision.Plane(GROUND, (0.0, 0.0, ground), (0.0, 0.0, 1.0), p.friction),),
            p.dt,
            p.contact.model,
            simulator.SpringDamper(p.contact.stiffness, p.contact.damping, slip=p.contact.slip),
            disturbances,
            None,
            width,
            "the controller's model, the URDF's foot spheres on flat ground",
            p.contact.solver,
        )
        plant.check_time_step(q0, scaled.mass * 9.81 / len(feet))  # the soft contact's stability, standing
        return plant, ground
    from .plants import mujoco_model as mm
    from .plants.mujoco_plant import MujocoPlant

    def build(surfaces):
        return mm.build(
            config.robot,
            model,
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
    soles = [g for foot in feet for g in mm.body_geoms(bare, foot)]
    ground = mm.lowest_point(bare, q0, soles)  # where the feet stand
    robot = build((mm.Surface(GROUND, "plane", np.array([0.0, 0.0, ground]), friction=p.friction),))
    return MujocoPlant(robot, {foot: (foot, mm.body_geoms(robot, foot)) for foot in feet}, disturbances), ground


def lowest_point(model, q, spheres) -> float:
    """The height of the lowest point of ``spheres`` (:class:`dynamics.collision.Sphere`) at ``q``."""
    spheres = tuple(spheres)
    kin = dynamics.kinematics.forward(model, np.asarray(q, dtype=float)[None])
    centres = collision.sphere_centres(model, kin, spheres, collision.frame_ids(model, spheres))
    return float(np.min(centres[:, 2] - [s.radius for s in spheres]))


class Fallen:
    """The stop test of a legged run on ground at height ``ground``: ``fell`` when the base is too
    low or tilted (module docstring); :meth:`anywhere` tests a block of steps at once."""

    def __init__(self, ground):
        self.ground = ground
        self.upright = math.cos(math.radians(FALL_TILT_DEG))  # the base's z axis along the vertical beyond this

    def __call__(self, measurement):
        z, x, y, _, _ = measurement.q[2:7].tolist()
        return "fell" if z - self.ground < FALL_HEIGHT_M or 1 - 2 * (x * x + y * y) < self.upright else None

    def anywhere(self, q) -> bool:
        """Whether the test says ``fell`` at any of the configurations ``q (n, nq)``."""
        z, x, y = q[:, 2], q[:, 3], q[:, 4]
        return bool(((z - self.ground < FALL_HEIGHT_M) | (1 - 2 * (x * x + y * y) < self.upright)).any())


def run(config, duration=None, pushes=(), mass_scale=1.0, formulation=None, progress=None, quiet=False):
    """Run the gait MPC of ``config`` for ``duration`` seconds (default ``mpc.duration``) with
    ``pushes`` (:class:`problems.mpc.disturbances.Push`) and the plant's scaled bodies' mass and
    inertia times ``mass_scale``; ``formulation`` overrides ``solver.formulation``."""
    model = legged_model(config)
    check_frames(model, pushes)
    controller = GaitController(config, model, quiet)
    mpc = MPC.of_config(controller, config, formulation, quiet, layout=controller.layout)
    plant, ground = make_plant(config, controller, pushes, mass_scale)
    duration = config.mpc.duration if duration is None else duration
    q0, v0 = controller.q0, np.zeros(controller.model.nv)
    log = closed_loop(
        mpc,
        plant,
        controller.model,
        q0,
        v0,
        duration,
        config.mpc.period,
        progress,
        stop=Fallen(ground),
        observe=controller.observe,
    )
    engine = {"engine": plant.engine, "description": plant.description, **contact_solver(plant)}
    applied = describe(pushes, mass_scale)
    formulation = mpc.formulation_name
    return GaitMPCRun(
        config, controller, log.arrays(), log, formulation, mpc.formulation.backend, engine, ground, applied
    )


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


def heading_velocities(q, v) -> tuple:
    """Per state, the base's horizontal velocity in its heading frame (forward, left) and its yaw
    rate about the vertical: ``(n, 2), (n,)``."""
    x, y, z, w = q[:, 3], q[:, 4], q[:, 5], q[:, 6]
    R = np.stack(
        (
            np.stack((1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)), axis=-1),
            np.stack((2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)), axis=-1),
            np.stack((2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)), axis=-1),
        ),
        axis=1,
    )
    linear, angular = np.einsum("nij,nj->ni", R, v[:, :3]), np.einsum("nij,nj->ni", R, v[:, 3:6])
    yaw = np.arctan2(R[:, 1, 0], R[:, 0, 0])
    c, s = np.cos(yaw), np.sin(yaw)
    heading = np.column_stack((c * linear[:, 0] + s * linear[:, 1], -s * linear[:, 0] + c * linear[:, 1]))
    return heading, angular[:, 2]


def command_tracking(config, t, q, v, end) -> list:
    """Per command of ``mpc.command`` that started before ``end``: the command, and the
    measured mean forward and lateral velocity and yaw rate over the whole gait cycles between
    ``SETTLE_S`` after its start (or half its time, if shorter) and its end (over that span if
    it holds no whole cycle: a gait's velocities swing within a cycle); after a command to
    stand still that follows a motion, ``stop_time_s``: how long the base took to stay below
    ``STOP_MPS`` (its speed averaged over the gait cycle centred on each instant, so that the
    average does not lag), None if it did not."""
    commands = config.mpc.command
    heading, yaw_rate = heading_velocities(q, v)
    cycle = sum(p.knots for p in config.gait.phases[config.mpc.cycle_start :]) * config.gait.dt
    window = max(1, int(round(cycle / config.plant.dt)))
    box = np.ones(window)
    speed = np.convolve(np.linalg.norm(heading, axis=1), box, mode="same") / np.convolve(np.ones(len(t)), box, "same")
    out = []
    for n, c in enumerate(commands):
        until = min(commands[n + 1].t if n + 1 < len(commands) else end, end)
        if c.t >= end:
            break
        settle = c.t + min(SETTLE_S, 0.5 * (until - c.t))
        cycles = int((until - settle) // cycle)  # whole gait cycles: a gait's velocities are periodic
        inside = (t >= (until - cycles * cycle if cycles else settle) - 1e-9) & (t < until)
        entry = {"t": c.t, "until": until, "command": {"vx": c.vx, "vy": c.vy, "yaw_rate": c.yaw_rate}}
        entry["measured"] = {
            "vx": float(np.mean(heading[inside, 0])) if inside.any() else float("nan"),
            "vy": float(np.mean(heading[inside, 1])) if inside.any() else float("nan"),
            "yaw_rate": float(np.mean(yaw_rate[inside])) if inside.any() else float("nan"),
        }
        moving = n > 0 and (commands[n - 1].vx, commands[n - 1].vy) != (0.0, 0.0)
        if moving and (c.vx, c.vy) == (0.0, 0.0):
            segment = (t >= c.t) & (t < until)
            above = np.flatnonzero(segment & (speed >= STOP_MPS))
            last = t[above[-1]] + config.plant.dt if above.size else c.t
            entry["stop_time_s"] = float(last - c.t) if last < until - 1e-9 else None
        out.append(entry)
    return out


def impact_speeds(active, velocity) -> np.ndarray:
    """The speeds of the feet's material points at the contact at their impacts (module
    docstring), by step then foot; ``active (n, k)`` and ``velocity (n, k, 3)`` per step and foot."""
    begins = active[1:] & ~active[:-1]
    return np.linalg.norm(velocity[1:][begins], axis=-1)


def measures(r: GaitMPCRun) -> dict:
    """The closed loop's measures (module docstring)."""
    a, controller = r.arrays, r.controller
    q, v, t = a["q"], a["v"], a["t"]
    duration = float(r.log.end_time)
    active, force, position = a["contact_active"], a["contact_force"], a["contact_position"]
    gap = int(round(STANCE_GAP_S / r.config.plant.dt))
    sliding = a["contact_velocity"][..., :2] * r.config.plant.dt
    slips, travels = [], []
    for i, first, last in stances(active, gap):
        slips.append(float(np.max(np.linalg.norm(np.cumsum(sliding[first : last + 1, i], axis=0), axis=1))))
        moved = np.linalg.norm(position[first : last + 1, i, :2] - position[first, i, :2], axis=1)
        travels.append(float(moved.max()))
    errors = [1e3 * (x.measured - x.planned) for x in controller.touchdowns]
    impacts = impact_speeds(active, a["contact_velocity"])
    tangential = np.linalg.norm(force[..., :2], axis=-1) - r.config.plant.friction * force[..., 2]
    commands = command_tracking(r.config, t, q, v, duration)
    forward = commands[0]["measured"]["vx"] if commands else float("nan")
    return {
        **outcome(r, duration),
        "fell": r.log.status == "fell",
        "mean_forward_velocity_mps": forward,
        "command_velocity_mps": r.config.mpc.command[0].vx,
        "commands": commands,
        "slip_per_stance_m": _median_max(slips),
        "contact_travel_per_stance_m": _median_max(travels),
        "touchdown_error_ms": {**_median_max(np.abs(errors)), "count": len(errors)},
        "touchdowns": len(errors),
        "impact_speed_mps": {**_median_max(impacts), "count": len(impacts)},
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
    slip, touchdown, impact = m["slip_per_stance_m"], m["touchdown_error_ms"], m["impact_speed_mps"]
    lines = [f"plant: {m['plant']['description']}{fell}"]
    for c in m["commands"]:
        cmd, got = c["command"], c["measured"]
        stop = ""
        if "stop_time_s" in c:
            stop = ", did not stop" if c["stop_time_s"] is None else f", stopped in {c['stop_time_s']:.2f} s"
        lines.append(
            f"from {c['t']:g} s: vx {got['vx']:.3f} m/s, vy {got['vy']:.3f} m/s, yaw rate {got['yaw_rate']:.3f} "
            f"rad/s (command {cmd['vx']:g}, {cmd['vy']:g}, {cmd['yaw_rate']:g}){stop}"
        )
    lines.append(
        f"feet: {m['touchdowns']} touchdowns, {touchdown['median']:.1f} ms off the plan (median; max "
        f"{touchdown['max']:.1f}), slip per stance {1e3 * slip['median']:.1f} mm (median; max "
        f"{1e3 * slip['max']:.1f}), cone violation up to {max(0.0, m['max_cone_violation']):.2f} N"
    )
    lines.append(
        f"impacts: {impact['count']} at {impact['median']:.2f} m/s (median; max {impact['max']:.2f}), "
        f"penetration up to {1e3 * m['max_penetration_m']:.1f} mm"
    )
    return tuple(lines)
