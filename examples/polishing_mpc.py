"""Polishing a table with Talos in closed loop (seed 001 Sec. IV): the MPC loop in a script.

python examples/polishing_mpc.py      (2 s simulated, a 20 N push lifting the tool at 1 s)
"""

from pathlib import Path

import numpy as np

from liftoff.problems.mpc.controller import MPC
from liftoff.problems.mpc.plant import Disturbances, Plant, Push
from liftoff.problems.tasks.config import load_config
from liftoff.problems.tasks.polishing import PolishingConfig, build_ocp, make_task
from liftoff.solvers.ipm import Options

config = load_config(Path(__file__).resolve().parent.parent / "configs" / "polishing_horizontal.yaml", PolishingConfig)
task = make_task(config)  # the reduced Talos, its initial state, the surface and the circle
mpc = MPC(lambda t, q, v, tau: build_ocp(task, t, q, v, tau), "lifted", options=Options(barrier=1e-3), quiet=True)
push = Push("arm_right_7_link", (0.0, 0.0, 20.0), start=1.0, duration=0.1)
plant = Plant(task.model, [task.contact()], 1e-3, Disturbances(pushes=(push,)), torque_filter=config.torque_filter)

q, v, tau = task.q0, task.v0, task.u_pressing  # the state, with the actuators' torques
policy = mpc.start(0.0, q, v, tau)  # the first solve
times, forces = [], []
for k in range(2000):  # 2 s at 1 kHz: the policy every step, an MPC update every 10 ms
    t = k * plant.dt
    if k > 0 and k % 10 == 0:
        policy = mpc.update(t, q, v, tau)
    q, v, f, tau = plant.step(t, q, v, policy(t, q, v, tau), tau)
    times.append(t)
    forces.append(task.normal_force(f))

times, forces, pushed = np.array(times), np.array(forces), (np.array(times) >= 1.0) & (np.array(times) < 1.1)
print(f"normal force {forces[~pushed].min():.2f} to {forces[~pushed].max():.2f} N (target {config.surface.force:g})")
print(f"during the push: down to {forces[pushed].min():.1f} N")
print(f"{len(mpc.ticks)} MPC updates, median {1e3 * np.median([x.seconds for x in mpc.ticks[1:]]):.2f} ms")
