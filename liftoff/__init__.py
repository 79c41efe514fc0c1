"""liftoff: trajectory optimization and model predictive control of robots in contact.

Four layers, each importing only the ones below it::

    liftoff.problems   tasks from YAML, MPC loops and plants, studies, viewer, benchmarks, CLI
    liftoff.solvers    the Riccati interior point and the baselines
    liftoff.ocp        the optimal control problem, lifted and non-lifted
    liftoff.dynamics   rigid-body and contact dynamics with their derivatives

(``docs/architecture.md`` walks through them.) What a script needs most is here, loaded when
first used, so that ``import liftoff.dynamics`` stays light::

    import liftoff

    problem = liftoff.build_problem(liftoff.load_config("configs/anymal_trot.yaml"))
    result = liftoff.solve(liftoff.Formulation(problem, "lifted"))

In the source tree the four layers are the repository's top-level folders ``dynamics/``,
``ocp/``, ``solvers/`` and ``problems/``; an installed liftoff has them inside this package.
"""

from importlib import import_module
from pathlib import Path

__version__ = "0.1.0"

_here = Path(__file__).resolve().parent
if not (_here / "dynamics").is_dir() and (_here.parent / "dynamics" / "__init__.py").is_file():
    __path__.append(str(_here.parent))  # the source tree: the layers are the folders beside this one

_ENTRY_POINTS = {
    "load_config": "liftoff.problems.tasks.config",
    "build_problem": "liftoff.problems.tasks.gaits",
    "Formulation": "liftoff.ocp.formulation",
    "solve": "liftoff.solvers.ipm",
    "Options": "liftoff.solvers.ipm",
    "MPC": "liftoff.problems.mpc.controller",
}
__all__ = ["__version__", *_ENTRY_POINTS]


def __getattr__(name):
    if name in _ENTRY_POINTS:
        value = getattr(import_module(_ENTRY_POINTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'liftoff' has no attribute {name!r}")
