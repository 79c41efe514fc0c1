"""ANYmal trotting in closed loop: the legged MPC against MuJoCo, in a script.

python examples/anymal_mpc.py      (2 s simulated, a 50 N lateral push on the base at 1 s;
                                    plant.engine: liftoff in the configuration for liftoff's idealized plant)
"""

from pathlib import Path

import numpy as np

from liftoff.problems.mpc.controller import MPC
from liftoff.problems.mpc.disturbances import Push
from liftoff.problems.mpc.gait_run import Fallen, make_plant
from liftoff.problems.mpc.locomotion import GaitController
from liftoff.problems.mpc.loop import closed_loop
from liftoff.problems.tasks.config import load_config
from liftoff.problems.tasks.gait_mpc import GaitMPCConfig

config = load_config(Path(__file__).resolve().parent.parent / "configs" / "anymal_trot_mpc.yaml", GaitMPCConfig)
controller = GaitController(config)  # the schedule on the measured contacts, the footholds, each horizon's OCP
mpc = MPC.of_config(controller, config, quiet=True, layout=controller.layout)
push = Push("base", (0.0, 50.0, 0.0), start=1.0, duration=0.1)
plant, ground = make_plant(config, controller, [push])  # MuJoCo: the feet's spheres on flat ground of friction 0.5
q0, v0 = controller.q0, np.zeros(controller.model.nv)
# the policy at every plant step (1 kHz), an MPC update every 5 ms, until the end or a fall;
# the controller reads the feet's contacts at every step
log = closed_loop(
    mpc, plant, controller.model, q0, v0, 2.0, config.mpc.period, stop=Fallen(ground), observe=controller.observe
)

a = log.arrays()
errors = [1e3 * (x.measured - x.planned) for x in controller.touchdowns]
moved, height = a["q"][-1, 0] - q0[0], a["q"][:, 2] - ground
print(f"{plant.description}: {log.status} after {log.end_time:g} s")
print(f"base moved {moved:.3f} m forward in 2 s (command 0.3 m/s after 0.2 s standing)")
print(f"base height {height.min():.3f} to {height.max():.3f} m above the ground")
print(f"{len(errors)} touchdowns, {np.median(np.abs(errors)):.1f} ms off the plan (median)")
print(f"{len(mpc.ticks)} MPC updates, median {1e3 * np.median([x.seconds for x in mpc.ticks[1:]]):.2f} ms")
