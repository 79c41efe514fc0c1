"""Solve a gait configuration and keep the outcome: summary, trajectories, a results file.

A results file is one ``.npz`` holding the knot times, ``q, v, u, a`` by stage, the stage
kinds, the world-frame contact forces of every foot (``force/<frame>``), and two JSON strings:
the run's summary (:func:`summary`) and its configuration. :func:`load_run` reads it back
for plotting without solving again.
"""

from __future__ import annotations

import json
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from liftoff.ocp.formulation import Formulation
from liftoff.problems.files import ReadError, atomic
from liftoff.problems.tasks.config import to_dict, with_solver
from liftoff.problems.tasks.gaits import build_problem
from liftoff.solvers.ipm import solve


@dataclass(frozen=True)
class Run:
    """A solved configuration: the config as solved, the solver result, the trajectories
    (:meth:`ocp.formulation.Formulation.trajectories`), the knot times and the backend that
    evaluated the stages (``numpy`` when ``compiled`` was asked for but no compiler was found)."""

    config: object
    result: object
    trajectories: dict
    times: np.ndarray
    backend: str = "numpy"
    method: str = ""  # a baseline's name (problems.studies.baselines); empty: the formulation of config.solver


def prepare(config, **overrides):
    """``(config, problem)``: ``config`` with ``overrides`` of its solver section (fields of
    :class:`problems.tasks.config.Solver`; ``None`` keeps the config's), and its OCP in that
    formulation."""
    changes = {k: v for k, v in overrides.items() if v is not None}
    config = with_solver(config, **changes) if changes else config
    s = config.solver
    return config, Formulation(build_problem(config), s.formulation, s.backend, init=s.init)


def solve_config(
    config, formulation=None, barrier=None, callback=None, warm_start=None, backend=None, init=None
) -> Run:
    """Build and solve ``config``; ``formulation``, ``barrier``, ``backend`` and ``init``
    override its solver section."""
    prepared = prepare(config, formulation=formulation, barrier=barrier, backend=backend, init=init)
    return solve_prepared(*prepared, callback=callback, warm_start=warm_start)


def solve_prepared(config, problem, callback=None, warm_start=None) -> Run:
    result = solve(problem, config.solver.options(), warm_start=warm_start, callback=callback)
    trajectories = problem.trajectories(result.iterate)
    return Run(config, result, trajectories, problem.ocp.times(), problem.backend)


def describe_problem(config, problem) -> str:
    """One line: the configuration's name, formulation, barrier, stage backend and the sizes of
    its problem (stages, impulses, variables, equalities, inequalities)."""
    n = problem.sizes()
    return (
        f"{config.name}: {config.solver.formulation}, barrier {config.solver.barrier:g}, {problem.backend} stages; "
        f"{n['stages']} stages ({n['impulses']} impulse{'' if n['impulses'] == 1 else 's'}), "
        f"{n['variables']} variables, {n['equalities']} equalities, {n['inequalities']} inequalities"
    )


def outcome(run: Run, path) -> str:
    """Two lines: how the solve ended (status, message, cost, violation, time) and where it is saved."""
    r = run.result
    return (
        f"{r.status}: {r.message}; cost {r.cost:.6e}, max constraint violation {r.max_constraint_violation:.1e}, "
        f"{r.solve_time_s:.2f} s\nsaved {path}"
    )


def summary(run: Run) -> dict:
    """The JSON summary: status, formulation, iterations, KKT history, times, cost, violation."""
    r = run.result
    s = run.config.solver
    out = {"name": run.config.name, "formulation": run.method or s.formulation, "backend": run.backend, "init": s.init}
    out.update(r.summary())
    n = max(len(r.history), 1)
    out["time_per_iteration_s"] = sum(h.time for h in r.history) / n
    out["time_split_s"] = {
        part: sum(getattr(h, f"{part}_time") for h in r.history) / n for part in ("linearize", "riccati", "expand")
    }
    return out


def save_run(run: Run, path) -> Path:
    """Write the results file ``path`` whole (a temporary file renamed into place)."""
    path = Path(path)
    t = run.trajectories
    arrays = {key: t[key] for key in ("q", "v", "u", "a", "kinds")}
    arrays.update({f"force/{frame}": force for frame, force in t["forces"].items()})
    arrays.update({f"impulse/{frame}": impulse for frame, impulse in t["impulses"].items()})
    with atomic(path) as out:
        np.savez_compressed(
            out, times=run.times, summary=json.dumps(summary(run)), config=json.dumps(to_dict(run.config)), **arrays
        )
    return path


def load_run(path) -> dict:
    """A results file as ``{"summary": dict, "config": dict, "times", "q", "v", "u", "a",
    "kinds": arrays, "forces": {frame: (K, 3)} [N], "impulses": {frame: (K, 3)} [N s]}``;
    :class:`problems.files.ReadError` for a file that is not one."""
    try:
        return _load_run(Path(path))
    except (OSError, KeyError, ValueError, EOFError, zipfile.BadZipFile) as e:
        raise ReadError(f"{path}: not a readable liftoff results file ({e})") from None


def _load_run(path) -> dict:
    with np.load(path, allow_pickle=False) as data:
        out = {key: data[key] for key in data.files if "/" not in key and key not in ("summary", "config")}
        for group, prefix in (("forces", "force/"), ("impulses", "impulse/")):
            out[group] = {key[len(prefix) :]: data[key] for key in data.files if key.startswith(prefix)}
        out["summary"] = json.loads(str(data["summary"]))
        out["config"] = json.loads(str(data["config"]))
    return out


def default_path(config) -> Path:
    s = config.solver
    return Path("results") / f"{run_name(config.name, s.formulation, s.barrier, s.init)}.npz"


def run_name(name, formulation, barrier, init="static") -> str:
    """``NAME_FORMULATION_BARRIER``, and ``_INIT`` for a start other than the static one."""
    return f"{name}_{formulation}_{barrier:g}" + ("" if init == "static" else f"_{init}")
