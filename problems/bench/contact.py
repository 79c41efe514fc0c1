"""``liftoff bench contact``: seed 002's simulation figures with liftoff's simulator.

- A ball (1 kg, radius 0.1 m) dropped from ``height`` onto the ground under the soft contact
  (linear spring-damper, damping ratio ``zeta``: ``c = 2 zeta sqrt(k m)``) at three stiffnesses,
  each at half the step its stability demands (:func:`dynamics.simulator.soft_time_step_bound`,
  ``2 / sqrt(k / m)`` without damping): the stiffer the contact, the smaller the step. Stable is
  not accurate: the ball enters the spring by up to ``v dt`` before it feels it, and that step
  creates the elastic energy ``k (v dt)^2 / 2`` (the energy column counts it; its jump at the
  first impact is the "max dE");
- the same ball under the rigid unilateral contact (Signorini-Coulomb, ADMM) at 1 kHz: it stops
  at the impact (Moreau's scheme is inelastic) without penetrating;
- penetration and energy against time for all of them (``--figure``);
- the unilateral contact solvers (PGS and ADMM) on ANYmal dropped 5 cm onto the ground with
  PD-held joints: iterations and wall time per step, largest residual.

Times are wall-clock on this machine, for orders of magnitude only (DESIGN.md, Speed).
"""

from __future__ import annotations

import time

import numpy as np

from liftoff import dynamics
from liftoff.dynamics import collision, simulator
from liftoff.dynamics.robots import named_configuration

BALL_MASS, BALL_RADIUS = 1.0, 0.1
STIFFNESSES = (1e3, 1e5, 1e7)  # [N/m]
DAMPING_RATIO = 0.1
HEIGHT = 0.5  # [m], of the ball's lowest point
DURATION = 1.0  # [s]
RIGID_DT = 1e-3
STEP_FRACTION = 0.5  # of the stability bound, the soft runs' default step
SERIES_POINTS = 400  # per run, in the result (and the figure)

ANYMAL_FEET = ("LF_FOOT", "LH_FOOT", "RF_FOOT", "RH_FOOT")
ANYMAL_FOOT_SPHERES = tuple(collision.Sphere(f, 0.031, (0, 0, 0.02325)) for f in ANYMAL_FEET)  # the URDF's
ANYMAL_PD = (300.0, 8.0)  # stiff PD around the standing posture [N m/rad, N m s/rad]
ANYMAL_DROP, ANYMAL_DURATION = 0.05, 0.5  # [m], [s]


def ball_model():
    inertia = 0.4 * BALL_MASS * BALL_RADIUS**2
    urdf = (
        f'<robot name="ball"><link name="ball"><inertial><origin xyz="0 0 0"/><mass value="{BALL_MASS}"/>'
        f'<inertia ixx="{inertia}" ixy="0" ixz="0" iyy="{inertia}" iyz="0" izz="{inertia}"/></inertial></link></robot>'
    )
    return dynamics.load_urdf_string(urdf, floating_base=True)


def soft_contact(stiffness, damping_ratio=DAMPING_RATIO) -> simulator.SpringDamper:
    """The linear soft contact of ``stiffness`` and damping ratio ``damping_ratio`` on the ball,
    without friction (the ball falls straight)."""
    return simulator.SpringDamper(stiffness, 2 * damping_ratio * np.sqrt(stiffness * BALL_MASS), friction=False)


def stability_bound(stiffness, damping_ratio=DAMPING_RATIO) -> float:
    """The largest stable step [s] of the ball on the soft contact of ``stiffness``."""
    return simulator.soft_time_step_bound(stiffness, soft_contact(stiffness, damping_ratio).damping, BALL_MASS)


def unstable_time_step(dt, stiffnesses, damping_ratio=DAMPING_RATIO) -> str | None:
    """Why the step ``dt`` is unstable for the first of ``stiffnesses`` whose bound it exceeds
    (one line), or None."""
    for k in stiffnesses:
        bound = stability_bound(k, damping_ratio)
        if dt > bound:
            return (
                f"{dt:g} s is above the stability bound {bound:.3g} s of the soft contact k = {k:g} N/m "
                f"(damping ratio {damping_ratio:g}, ball of {BALL_MASS:g} kg)"
            )
    return None


def _series(log, energy) -> dict:
    """Penetration [m], energy [J] and height [m] against time: ``SERIES_POINTS`` evenly spaced
    steps and every step in contact (a stiff contact lasts a few steps)."""
    keep = np.union1d(np.linspace(0, len(log.t) - 1, SERIES_POINTS).astype(int), np.flatnonzero(log.contacts))
    return dict(
        t=log.t[keep].tolist(),
        penetration=log.penetration[keep].tolist(),
        energy=energy[keep].tolist(),
        height=(log.q[keep, 2] - BALL_RADIUS).tolist(),
    )


def ball_run(contact, dt, duration, height, soft=None) -> dict:
    """The ball dropped from ``height`` for ``duration`` under ``contact`` at step ``dt``; its energy
    with the soft contact's elastic energy (at the start of each step)."""
    ground = collision.Plane("ground", friction=0.5)
    options = {} if soft is None else {"soft": soft}
    sim = simulator.SimulatorModel(
        ball_model(), [collision.Sphere("ball", BALL_RADIUS)], [ground], dt, contact, **options
    )
    data = simulator.make_data(sim, np.array([0, 0, height + BALL_RADIUS, 0, 0, 0, 1.0]))
    steps = int(round(duration / dt))
    start = time.perf_counter()
    log = simulator.simulate(sim, data, steps)
    seconds = time.perf_counter() - start
    energy = log.energy + (0.0 if soft is None else soft.elastic_energy(log.penetration))
    return dict(
        contact=contact,
        dt=dt,
        steps=steps,
        max_penetration=float(log.penetration.max()),
        initial_energy=float(energy[0]),
        final_energy=float(energy[-1]),
        max_energy_gain=float(max(np.diff(energy).max(initial=0.0), 0.0)),
        final_height=float(data.q[2] - BALL_RADIUS),
        us_per_step=1e6 * seconds / max(steps, 1),
        series=_series(log, energy),
    )


def anymal_on_the_ground(drop=ANYMAL_DROP):
    """ANYmal in its standing posture (SRDF), its lowest foot ``drop`` above the ground at z = 0,
    and a PD around the posture: ``(model, q0, control)`` (``control(t, q, v) -> tau (nv,)``)."""
    model = dynamics.load("anymal")
    q0 = dynamics.neutral(model)
    for name, value in named_configuration("anymal", "standing").items():
        q0[model.idx_q[model.joint_id(name)]] = value
    centres = foot_centres(model, q0)
    q0[2] += drop - (centres[:, 2].min() - ANYMAL_FOOT_SPHERES[0].radius)
    kp, kd = ANYMAL_PD

    def control(t, q, v):
        return np.concatenate((np.zeros(6), kp * (q0[7:] - q[7:]) - kd * v[6:]))

    return model, q0, control


def foot_centres(model, q) -> np.ndarray:
    """World centres ``(4, 3)`` of ANYmal's foot spheres at ``q``."""
    kin = dynamics.kinematics.forward(model, np.asarray(q, dtype=float)[None])
    frames = collision.frame_ids(model, ANYMAL_FOOT_SPHERES)
    return collision.sphere_centres(model, kin, ANYMAL_FOOT_SPHERES, frames)


def anymal_run(solver, duration=ANYMAL_DURATION) -> dict:
    """ANYmal dropped on the ground with ``solver``: iterations, time per step, residual, slip."""
    model, q0, control = anymal_on_the_ground()
    ground = collision.Plane("ground", friction=0.7)
    sim = simulator.SimulatorModel(model, ANYMAL_FOOT_SPHERES, [ground], RIGID_DT, solver=solver)
    steps = int(round(duration / RIGID_DT))
    start = time.perf_counter()
    log = simulator.simulate(sim, simulator.make_data(sim, q0), steps, control)
    seconds = time.perf_counter() - start
    solved = log.contacts > 0
    landed = int(np.argmax(log.contacts == 4))
    slip = np.linalg.norm(foot_centres(model, log.q[-1])[:, :2] - foot_centres(model, log.q[landed + 1])[:, :2], axis=1)
    return dict(
        solver=solver,
        steps=steps,
        mean_iterations=float(log.iterations[solved].mean()),
        max_iterations=int(log.iterations.max()),
        max_residual=float(log.residual.max()),
        converged=bool(log.converged.all()),
        us_per_step=1e6 * seconds / steps,
        landed_at=landed * RIGID_DT,
        final_base_height=float(log.q[-1][2]),
        max_foot_slip=float(slip.max()),
        max_penetration=float(log.penetration.max()),
    )


def contact_benchmark(
    stiffnesses=STIFFNESSES, damping_ratio=DAMPING_RATIO, dt=None, duration=DURATION, height=HEIGHT, progress=None
) -> dict:
    """Every run of the module docstring; ``dt``: the soft runs' step (default: ``STEP_FRACTION``
    of each one's bound; the caller checks it against the bounds)."""
    say = progress or (lambda line: None)
    soft = []
    for k in stiffnesses:
        bound = stability_bound(k, damping_ratio)
        step = STEP_FRACTION * bound if dt is None else dt
        say(f"soft ball, k = {k:g} N/m, dt = {step:.3g} s")
        run = ball_run("soft", step, duration, height, soft_contact(k, damping_ratio))
        soft.append(dict(stiffness=k, damping=soft_contact(k, damping_ratio).damping, stability_bound=bound, **run))
    say("rigid unilateral ball")
    rigid = ball_run("unilateral", RIGID_DT, duration, height)
    anymal = []
    for solver in simulator.SOLVERS:
        say(f"ANYmal drop, {solver}")
        anymal.append(anymal_run(solver))
    return dict(
        ball=dict(mass=BALL_MASS, radius=BALL_RADIUS, height=height, duration=duration, damping_ratio=damping_ratio),
        soft=soft,
        rigid=rigid,
        anymal=anymal,
    )


def format_table(result) -> str:
    ball = result["ball"]
    lines = [
        f"ball {ball['mass']:g} kg, radius {ball['radius']:g} m, dropped from {ball['height']:g} m for "
        f"{ball['duration']:g} s (soft: damping ratio {ball['damping_ratio']:g}, no friction)",
        f"{'contact':<22} {'dt [s]':>9} {'bound [s]':>9} {'penetr. [m]':>11} {'E0 [J]':>8} {'E end [J]':>9} "
        f"{'max dE [J]':>10} {'us/step':>8}",
    ]
    runs = [(f"soft k = {r['stiffness']:.0e} N/m", r, f"{r['stability_bound']:9.2e}") for r in result["soft"]]
    runs.append(("rigid unilateral", result["rigid"], f"{'-':>9}"))
    for name, r, bound in runs:
        lines.append(
            f"{name:<22} {r['dt']:9.2e} {bound} {r['max_penetration']:11.2e} {r['initial_energy']:8.3f} "
            f"{r['final_energy']:9.3f} {r['max_energy_gain']:10.1e} {r['us_per_step']:8.0f}"
        )
    lines.append("")
    lines.append("ANYmal dropped 5 cm on the ground, PD-held joints, unilateral contact at 1 kHz")
    lines.append(
        f"{'solver':<7} {'mean it':>7} {'max it':>6} {'max residual':>12} {'us/step':>8} {'landed [s]':>10} "
        f"{'base z [m]':>10} {'slip [m]':>9}"
    )
    for r in result["anymal"]:
        lines.append(
            f"{r['solver']:<7} {r['mean_iterations']:7.1f} {r['max_iterations']:6d} {r['max_residual']:12.1e} "
            f"{r['us_per_step']:8.0f} {r['landed_at']:10.3f} {r['final_base_height']:10.4f} {r['max_foot_slip']:9.1e}"
        )
    return "\n".join(lines)


def contact_figure(result, path) -> None:
    """Seed 002's figures: height, penetration and energy of the ball against time, one line per
    contact model and stiffness."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from liftoff.problems.files import save_figure

    fig, axes = plt.subplots(1, 3, figsize=(15, 3.8))
    runs = [(f"soft k = {r['stiffness']:.0e} N/m, dt = {r['dt']:.1e} s", r) for r in result["soft"]]
    runs.append((f"rigid unilateral, dt = {result['rigid']['dt']:.0e} s", result["rigid"]))
    for label, r in runs:
        s = r["series"]
        axes[0].plot(s["t"], s["height"], label=label)
        axes[1].semilogy(s["t"], np.maximum(s["penetration"], 1e-12), label=label)
        axes[2].plot(s["t"], s["energy"], label=label)
    for ax, title in zip(axes, ("height of the lowest point [m]", "penetration [m] (1e-12: none)", "energy [J]")):
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("t [s]")
        ax.grid(True, alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, path)
