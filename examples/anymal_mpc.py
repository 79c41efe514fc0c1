"""ANYmal trotting in closed loop: the gait MPC against the legged plant, in a script.

python examples/anymal_mpc.py      (2 s simulated, a 50 N lateral push on the base at 1 s)
"""

from pathlib import Path

import numpy as np

from liftoff.problems.mpc.controller import MPC
from liftoff.problems.mpc.legged_plant import LeggedPlant
from liftoff.problems.mpc.plant import Disturbances, Push
from liftoff.problems.tasks.config import load_config
from liftoff.problems.tasks.gait_mpc import GaitMPCConfig, make_run, window
from liftoff.solvers.ipm import Options

config = load_config(Path(__file__).resolve().parent.parent / "configs" / "anymal_trot_mpc.yaml", GaitMPCConfig)
plan = make_run(config)  # the whole run's OCP: each update takes the 0.5 s window at its time
mpc = MPC(lambda t, q, v, tau: window(plan, t, q, v), "lifted", options=Options(barrier=1e-3), layout=plan.ocp)
push = Disturbances(pushes=(Push("base", (0.0, 50.0, 0.0), start=1.0, duration=0.1),))
plant = LeggedPlant(plan.model, plan.feet, plan.ground, 0.5, plan.schedule, dt=1e-3, disturbances=push)

q, v = plan.ocp.q0, plan.ocp.v0
plant.start(q)  # the feet on the ground stand where they are
policy = mpc.start(0.0, q, v)  # the first solve
heights = []
for k in range(2000):  # 2 s at 1 kHz: the policy every step, an MPC update every 20 ms
    t = k * plant.dt
    if k > 0 and k % 20 == 0:
        policy = mpc.update(t, q, v)
    q, v, forces, _ = plant.step(t, q, v, policy(t, q, v))
    heights.append(q[2])

print(
    f"base moved {q[0] - plan.ocp.q0[0]:.3f} m forward in 2 s (command {plan.command_velocity():.2f} m/s after 0.2 s)"
)
print(f"base height {min(heights):.3f} to {max(heights):.3f} m; {plant.touchdowns} touchdowns")
print(f"{len(mpc.ticks)} MPC updates, median {1e3 * np.median([x.seconds for x in mpc.ticks[1:]]):.2f} ms")
