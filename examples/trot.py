"""ANYmal trotting from its YAML file: build the OCP, solve it in both formulations, compare.

python examples/trot.py [--plot]      (--plot writes results/trot_forces.png)
"""

import sys
from pathlib import Path

import numpy as np

from liftoff.ocp.formulation import Formulation
from liftoff.problems.tasks.config import load_config
from liftoff.problems.tasks.gaits import build_problem
from liftoff.solvers.ipm import solve

config = load_config(Path(__file__).resolve().parent.parent / "configs" / "anymal_trot.yaml")
problem = build_problem(config)  # an ocp.problem.OCP: stages, costs, contacts, limits
print(f"{problem.K} stages ({sum(s.kind == 'impulse' for s in problem.stages)} impulses), {problem.times()[-1]:.2f} s")

for formulation in ("lifted", "nonlifted"):
    form = Formulation(problem, formulation)
    result = solve(form, config.solver.options())
    print(
        f"{formulation:>9}: {result.status} in {result.iterations} iterations, cost {result.cost:.6e}, "
        f"KKT error {result.kkt_error:.1e}"
    )

trajectory = form.trajectories(result.iterate)  # q, v, u, a, f by stage; world forces by foot
base = trajectory["q"][:, :3]
print(f"base moved {base[-1, 0] - base[0, 0]:.3f} m forward; peak torque {np.abs(trajectory['u']).max():.1f} N m")

if "--plot" in sys.argv:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    contact = trajectory["kinds"] == "contact"  # impulse stages hold impulses (N s), not forces
    t = problem.times()[:-1][contact]
    for foot, force in trajectory["forces"].items():
        plt.plot(t, force[contact, 2], label=foot)
    plt.xlabel("time [s]"), plt.ylabel("normal force [N]"), plt.legend()
    Path("results").mkdir(exist_ok=True)
    plt.savefig("results/trot_forces.png", dpi=120)
    print("wrote results/trot_forces.png")
