"""ANYmal trotting in closed loop: the gait MPC against MuJoCo, in a script.

python examples/anymal_mpc.py      (2 s simulated, a 50 N lateral push on the base at 1 s;
                                    plant.engine: liftoff in the configuration for liftoff's idealized plant)
"""

from pathlib import Path

import numpy as np

from liftoff.problems.mpc.controller import MPC
from liftoff.problems.mpc.disturbances import Push
from liftoff.problems.mpc.gait_run import STANCE_GAP_S, fallen, make_plant, stances
from liftoff.problems.mpc.loop import closed_loop
from liftoff.problems.tasks.config import load_config
from liftoff.problems.tasks.gait_mpc import GaitMPCConfig, make_run, window

config = load_config(Path(__file__).resolve().parent.parent / "configs" / "anymal_trot_mpc.yaml", GaitMPCConfig)
plan = make_run(config)  # the whole run's OCP: each update takes the 0.5 s window at its time
mpc = MPC.of_config(lambda t, q, v, tau: window(plan, t, q, v), config, quiet=True, layout=plan.ocp)
push = Push("base", (0.0, 50.0, 0.0), start=1.0, duration=0.1)
plant, ground = make_plant(config, plan, [push])  # MuJoCo: the feet's spheres on flat ground of friction 0.5
q0, v0 = plan.ocp.q0, plan.ocp.v0
# the policy at every plant step (1 kHz), an MPC update every 20 ms, until the end or a fall
log = closed_loop(mpc, plant, plan.model, q0, v0, 2.0, config.mpc.period, stop=fallen(ground))

a, gap = log.arrays(), round(STANCE_GAP_S / plant.dt)  # a foot off the ground for less than 10 ms stands on
touchdowns = sum(first > gap for _, first, _ in stances(a["contact_active"], gap))  # not the feet standing at 0
moved, height = a["q"][-1, 0] - q0[0], a["q"][:, 2] - ground
print(f"{plant.description}: {log.status} after {log.end_time:g} s")
print(f"base moved {moved:.3f} m forward in 2 s (command {plan.command_velocity():.2f} m/s after 0.2 s)")
print(f"base height {height.min():.3f} to {height.max():.3f} m above the ground; {touchdowns} touchdowns")
print(f"{len(mpc.ticks)} MPC updates, median {1e3 * np.median([x.seconds for x in mpc.ticks[1:]]):.2f} ms")
