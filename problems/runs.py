"""Solve a gait configuration and keep the outcome: summary, trajectories, a results file.

A results file is one ``.npz`` holding the knot times, ``q, v, u, a`` by stage, the stage
kinds, the world-frame contact forces of every foot (``force/<frame>``), and two JSON strings:
the run's summary (:func:`summary`) and its configuration. :func:`load_run` reads it back
for plotting without solving again.
"""

from __future__ import annotations

import json
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ocp.formulation import Formulation
from solvers.ipm import Options, solve

from .config import to_dict, with_solver
from .files import ReadError, atomic
from .gaits import build_problem


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
    method: str = ""  # a baseline's name (ipopt, sqp); empty: the formulation of config.solver


def solver_options(config) -> Options:
    """The :class:`solvers.ipm.Options` of ``config.solver`` (all its fields but the formulation
    and the backend, which belong to the problem)."""
    return Options(**{k: v for k, v in asdict(config.solver).items() if k not in ("formulation", "backend", "init")})


def prepare(config, **overrides):
    """``(config, problem)``: ``config`` with ``overrides`` of its solver section (fields of
    :class:`problems.config.Solver`; ``None`` keeps the config's), and its OCP in that
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
    result = solve(problem, solver_options(config), warm_start=warm_start, callback=callback)
    trajectories = problem.trajectories(result.iterate)
    return Run(config, result, trajectories, problem.ocp.times(), problem.backend)


BASELINES = ("ipopt", "sqp")


def solve_baseline(config, method) -> Run:
    """Solve ``config``'s OCP as one NLP (:mod:`ocp.nlp`) by ``method``: ``ipopt``
    (:mod:`solvers.ipopt`) or ``sqp`` (:mod:`solvers.sqp`), from the interior point's initial
    guess (``solver.init``'s controls and forces). The run's result has the interior
    point's fields; its ``kkt`` history is the method's own measure: Ipopt's ``max(inf_pr,
    inf_du)``, the SQP's ``max(relative step, constraint violation)``; its barrier is 0 (the
    exact problem)."""
    from ocp.nlp import build_nlp
    from solvers.ipm import IterationLog, Result

    if method not in BASELINES:
        raise ValueError(f"unknown method {method!r}; expected one of {BASELINES}")
    ocp = build_problem(config)
    form = Formulation(ocp, "lifted", "numpy")
    start = form.trajectories(form.initial_iterate(config.solver.barrier))  # the interior point's start
    nlp = build_nlp(ocp, guess=nlp_guess(ocp, start))
    if method == "ipopt":
        from solvers.ipopt import solve_ipopt

        out = solve_ipopt(nlp)
    else:
        from solvers.sqp import solve_sqp

        out = solve_sqp(nlp)
    per_iteration = out.solve_time_s / max(out.iterations, 1)
    history = [
        IterationLog(k, np.nan, float(e), 0.0, 1.0, 1.0, per_iteration, 0.0, 0.0, 0.0)
        for k, e in enumerate(out.history["measure"][: out.iterations])
    ]
    result = Result(
        out.status,
        out.message,
        out.iterations,
        out.measure,
        out.cost,
        out.violation,
        out.solve_time_s,
        0.0,
        None,
        history,
    )  # the interior point's result fields
    trajectories = form.trajectories(_iterate(form, nlp.unpack(out.x)))
    return Run(config, result, trajectories, ocp.times(), "casadi" if method == "ipopt" else "osqp", method)


def nlp_guess(ocp, trajectories) -> dict:
    """The NLP's start (:func:`ocp.nlp.build_nlp`) from a formulation's trajectories."""
    controls = [u if stage.kind == "contact" else np.zeros(0) for u, stage in zip(trajectories["u"], ocp.stages)]
    lifted = [np.concatenate((a, f)) for a, f in zip(trajectories["a"], trajectories["f"])]
    return {"q": trajectories["q"], "v": trajectories["v"], "u": controls, "w": lifted}


def _iterate(form, solution):
    """An NLP solution as the formulation's iterate (no multipliers or slacks: for its trajectories)."""
    from ocp.formulation import GroupVariables, Iterate

    groups = []
    for group in form.groups:
        u = np.array([solution["u"][k] for k in group.index])
        w = np.array([solution["w"][k] for k in group.index])
        empty = np.zeros((group.size, 0))
        groups.append(GroupVariables(u.reshape(group.size, -1), w, empty, empty, empty))
    K = len(solution["q"]) - 1
    return Iterate(solution["q"], solution["v"], np.zeros((K + 1, 0)), tuple(groups), np.zeros((K + 1, 0)))


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
