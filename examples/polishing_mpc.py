"""Polishing a table with Talos in closed loop (seed 001 Sec. IV): the MPC loop in a script.

python examples/polishing_mpc.py      (2 s simulated in MuJoCo, a 20 N push lifting the tool at 1 s;
                                       plant.engine: liftoff in the configuration for liftoff's idealized plant)
"""

from pathlib import Path

import numpy as np

from liftoff.problems.mpc.controller import MPC
from liftoff.problems.mpc.disturbances import Push
from liftoff.problems.mpc.loop import closed_loop
from liftoff.problems.mpc.observer import DisturbanceObserver
from liftoff.problems.mpc.polishing_run import make_plant, pad_forces
from liftoff.problems.tasks.config import load_config
from liftoff.problems.tasks.polishing import TOOL_FRAME, Horizons, PolishingConfig, make_task

config = load_config(Path(__file__).resolve().parent.parent / "configs" / "polishing_horizontal.yaml", PolishingConfig)
task = make_task(config)  # the reduced Talos with its tool frame, its initial state, the surface and the circle
push = Push("arm_right_7_link", (0.0, 0.0, 20.0), start=1.0, duration=0.1)
plant = make_plant(config, task, [push])  # MuJoCo: a table of friction 0.3, the pad a sphere on the gripper
observer = DisturbanceObserver(  # what the model misses (the joints' stiction, the push): offset-free MPC
    task.model, plant.dt, config.observer.time_constant, config.joint_friction.width, pad_forces(task), [TOOL_FRAME]
)
mpc = MPC.of_config(Horizons(task, lambda: observer.estimate), config, quiet=True)  # horizons of 50 stages
log = closed_loop(  # the policy at every plant step (1 kHz), an MPC update every 10 ms
    mpc, plant, task.model, task.q0, task.v0, 2.0, config.mpc.period, tau0=task.u_pressing, observe=observer.observe
)

a, steps = log.arrays(), round(config.mpc.period / plant.dt)
force = task.normal_force(a["contact_force"][:, 0]).reshape(-1, steps).mean(axis=1)  # over each MPC period
t, touching = a["t"][::steps], a["contact_active"][:, 0].reshape(-1, steps)
pushed, target = (t >= 1.0) & (t < 1.1), config.surface.force
low, high, rms = force[~pushed].min(), force[~pushed].max(), np.sqrt(np.mean((force[~pushed] - target) ** 2))
print(f"{plant.description}: {log.status}")
print(f"normal force (10 ms means) {low:.2f} to {high:.2f} N outside the push, RMS error {rms:.2f} N (target {target})")
print(f"during the push: down to {force[pushed].min():.1f} N")
print(f"no contact in {100 * np.mean(~touching):.1f}% of the steps, {np.sum(~touching.any(axis=1))} MPC periods")
print(f"{len(mpc.ticks)} MPC updates, median {1e3 * np.median([x.seconds for x in mpc.ticks[1:]]):.2f} ms")
