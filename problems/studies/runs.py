"""Solve a gait configuration, or a polishing task's first horizon, and keep the outcome:
summary, trajectories, a results file.

A results file is one ``.npz`` holding the knot times, ``q, v, u, a`` by stage, the stage
kinds, the world-frame contact forces of every foot or tool (``force/<frame>``; a soft
contact's is its spring's force at each stage's state), and two JSON strings: the run's
summary (:func:`summary`) and its configuration. :func:`load_run` reads it back for plotting
without solving again.
"""

from __future__ import annotations

import json
import math
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from liftoff import dynamics
from liftoff.ocp.formulation import Formulation
from liftoff.problems.files import ReadError, atomic, check_archive
from liftoff.problems.tasks.config import to_dict, with_solver
from liftoff.problems.tasks.gaits import build_problem
from liftoff.problems.tasks.polishing import TOOL_FRAME, PolishingConfig, build_ocp, make_task
from liftoff.solvers.ipm import Result, solve

UNSUPPORTED = "unsupported"  # the status of a method that does not take a configuration's OCP (:func:`unsupported`)


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
    formulation. Where the compiled kernels fall back to numpy (no C compiler), the exact
    Hessian, which needs them, gives way to Gauss-Newton's, with one warning line."""
    changes = {k: v for k, v in overrides.items() if v is not None}
    config = with_solver(config, **changes) if changes else config
    s = config.solver
    problem = Formulation(problem_of(config), s.formulation, s.backend, init=s.init)
    if s.hessian == "exact" and not problem.exact_hessian:
        print("liftoff: warning: the exact Hessian needs compiled kernels; using Gauss-Newton's", file=sys.stderr)
        config = with_solver(config, hessian="gauss-newton")
    return config, problem


def problem_of(config):
    """The OCP of a gait configuration, or of a polishing configuration's horizon from the task's
    initial state (:func:`problems.tasks.polishing.build_ocp`)."""
    return build_ocp(make_task(config)) if isinstance(config, PolishingConfig) else build_problem(config)


def solve_config(
    config, formulation=None, barrier=None, callback=None, warm_start=None, backend=None, init=None
) -> Run:
    """Build and solve ``config``; ``formulation``, ``barrier``, ``backend`` and ``init``
    override its solver section."""
    prepared = prepare(config, formulation=formulation, barrier=barrier, backend=backend, init=init)
    return solve_prepared(*prepared, callback=callback, warm_start=warm_start)


def solve_prepared(config, problem, callback=None, warm_start=None) -> Run:
    result = solve(problem, config.solver.options(), warm_start=warm_start, callback=callback)
    trajectories = with_soft_forces(problem.ocp, problem.trajectories(result.iterate))
    return Run(config, result, trajectories, problem.ocp.times(), problem.backend)


def with_soft_forces(ocp, trajectories) -> dict:
    """``trajectories`` whose ``forces`` hold, besides the contact variables', the world force of
    each soft contact at each stage's state ``(q_k, v_k)`` (:func:`dynamics.soft_contact_forces`)."""
    forces = dict(trajectories["forces"])
    for k, stage in enumerate(ocp.stages):
        if stage.soft:
            F, _ = dynamics.soft_contact_forces(ocp.model, trajectories["q"][k], trajectories["v"][k], stage.soft)
            for contact, force in zip(stage.soft, F):
                forces.setdefault(contact.frame, np.zeros((ocp.K, 3)))[k] = force
    return {**trajectories, "forces": forces}


def unsupported(config, method, barrier, why) -> Run:
    """The run of a ``method`` that does not take ``config``'s OCP: status ``unsupported``, ``why``
    its message, no iteration, the trajectories of the interior point's initial guess."""
    form = Formulation(problem_of(config), "lifted", "numpy", quiet=True, init=config.solver.init)
    trajectories = with_soft_forces(form.ocp, form.trajectories(form.initial_iterate(config.solver.barrier)))
    result = Result(UNSUPPORTED, why, 0, np.nan, np.nan, np.nan, 0.0, barrier)
    return Run(config, result, trajectories, form.ocp.times(), "numpy", method)


def describe_problem(config, problem) -> str:
    """One line: the configuration's name, formulation, barrier, Hessian (when exact), stage
    backend and the sizes of its problem (stages, impulses, variables, equalities, inequalities)."""
    n, s = problem.sizes(), config.solver
    barrier = f"barrier {s.barrier:g}" + (
        "" if s.barrier_update == "fixed" else f" {s.barrier_update} to {s.barrier_min:g}"
    )
    hessian = ", exact Hessian" if s.hessian == "exact" else ""
    return (
        f"{config.name}: {s.formulation}, {barrier}{hessian}, {problem.backend} stages; "
        f"{n['stages']} stages ({n['impulses']} impulse{'' if n['impulses'] == 1 else 's'}), "
        f"{n['variables']} variables, {n['equalities']} equalities, {n['inequalities']} inequalities"
    )


def outcome(run: Run, path, target=None) -> str:
    """Two lines: how the solve ended (status, message, cost, violation, time) and where it is
    saved (and why not at ``target``, when :func:`save_run` kept a converged solve there)."""
    r = run.result
    saved = f"saved {path}"
    if target is not None and Path(path) != Path(target):
        saved += f" ({target} holds a converged solve and is kept; --replace replaces it)"
    return (
        f"{r.status}: {r.message}; cost {r.cost:.6e}, max constraint violation {r.max_constraint_violation:.1e}, "
        f"{r.solve_time_s:.2f} s\n{saved}"
    )


def summary(run: Run) -> dict:
    """The JSON summary: status, formulation, iterations, KKT history, times, cost, violation; for
    a polishing configuration also the pad's ``contact`` model and the surface's normal force on
    it: at the horizon's last stage (``end_force_N``), its median over the stages, the target."""
    r = run.result
    s = run.config.solver
    out = {"name": run.config.name, "formulation": run.method or s.formulation, "backend": run.backend, "init": s.init}
    out.update(r.summary())
    n = max(len(r.history), 1)
    out["time_per_iteration_s"] = sum(h.time for h in r.history) / n
    out["time_split_s"] = {
        part: sum(getattr(h, f"{part}_time") for h in r.history) / n for part in ("linearize", "riccati", "expand")
    }
    if isinstance(run.config, PolishingConfig) and r.status != UNSUPPORTED:
        surface = run.config.surface
        normal = run.trajectories["forces"][TOOL_FRAME] @ np.asarray(surface.normal)  # the surface's force, by stage
        out["contact"] = run.config.contacts.model
        out["end_force_N"] = float(normal[-1])
        out["median_force_N"] = float(np.median(normal))
        out["target_force_N"] = surface.force
    return out


def save_run(run: Run, path, replace=True) -> Path:
    """Write the results file ``path`` whole (a temporary file renamed into place) and return
    where it went. Unless ``replace``, a run that did not converge leaves a converged solve at
    ``path`` as it is and goes beside it, to :func:`failed_path` (``NAME.STATUS.npz``)."""
    path = Path(path)
    if not replace and not run.result.converged and holds_converged(path):
        path = failed_path(path, run.result.status)
    t = run.trajectories
    arrays = {key: t[key] for key in ("q", "v", "u", "a", "kinds")}
    arrays.update({f"force/{frame}": force for frame, force in t["forces"].items()})
    arrays.update({f"impulse/{frame}": impulse for frame, impulse in t["impulses"].items()})
    with atomic(path) as out:
        np.savez_compressed(
            out, times=run.times, summary=json.dumps(summary(run)), config=json.dumps(to_dict(run.config)), **arrays
        )
    return path


def failed_path(path, status) -> Path:
    """``NAME.STATUS.npz`` beside the results file ``NAME.npz``: a run that ended with ``status``."""
    path = Path(path)
    return path.with_name(f"{path.stem}.{status}{path.suffix}")


def holds_converged(path) -> bool:
    """Whether ``path`` is a readable results file of a converged solve."""
    if not Path(path).is_file():
        return False
    try:
        return load_run(path)["summary"].get("status") == "converged"
    except ReadError:
        return False


def load_run(path) -> dict:
    """A results file as ``{"summary": dict, "config": dict, "times", "q", "v", "u", "a",
    "kinds": arrays, "forces": {frame: (K, 3)} [N], "impulses": {frame: (K, 3)} [N s]}``, its
    arrays' shapes and the summary's fields checked; :class:`problems.files.ReadError` for a
    file that is not one."""
    check_archive(path)
    try:
        return _checked(_load_run(Path(path)))
    except (OSError, KeyError, ValueError, EOFError, zipfile.BadZipFile) as e:
        why = f"missing {e}" if isinstance(e, KeyError) else str(e) or type(e).__name__
        raise ReadError(f"{path}: not a readable liftoff results file ({why})") from None


def _load_run(path) -> dict:
    with np.load(path, allow_pickle=False) as data:
        out = {key: data[key] for key in data.files if "/" not in key and key not in ("summary", "config")}
        for group, prefix in (("forces", "force/"), ("impulses", "impulse/")):
            out[group] = {key[len(prefix) :]: data[key] for key in data.files if key.startswith(prefix)}
        out["summary"] = json.loads(str(data["summary"]))
        out["config"] = json.loads(str(data["config"]))
    return out


SUMMARY_TEXT = ("name", "formulation", "status")  # the summary's fields that the report and the viewer read
SUMMARY_NUMBERS = (
    "barrier",
    "iterations",
    "kkt_error",
    "cost",
    "max_constraint_violation",
    "solve_time_s",
    "time_per_iteration_s",
)


def _checked(run: dict) -> dict:
    """``run`` if its arrays have the shapes of one solve and its summary the fields a report
    reads; ``ValueError`` naming the first that does not."""
    times = _array(run, "times", 1)
    K = len(times) - 1
    if K < 1:
        raise ValueError("times: expected at least two knots")
    for key, rows in (("q", K + 1), ("v", K + 1), ("u", K), ("a", K)):
        if len(_array(run, key, 2)) != rows:
            raise ValueError(f"{key}: expected {rows} rows, got {len(run[key])}")
    kinds = run["kinds"]
    if kinds.shape != (K,) or not set(kinds.tolist()) <= {"contact", "impulse"}:
        raise ValueError(f"kinds: expected {K} stage kinds (contact or impulse)")
    for group in ("forces", "impulses"):
        for frame, force in run[group].items():
            if np.shape(force) != (K, 3) or not np.issubdtype(np.asarray(force).dtype, np.number):
                raise ValueError(f"{group} of {frame}: expected a ({K}, 3) array, got {np.shape(force)}")
    summary, config = run["summary"], run["config"]
    if not isinstance(summary, dict) or not isinstance(config, dict):
        raise ValueError("its summary and configuration are not JSON objects")
    for key in SUMMARY_TEXT:
        if not isinstance(summary.get(key), str):
            raise ValueError(f"summary.{key}: expected a string")
    for key in SUMMARY_NUMBERS:
        if isinstance(summary.get(key), bool) or not isinstance(summary.get(key), (int, float)):
            raise ValueError(f"summary.{key}: expected a number")
    if not (math.isfinite(summary["barrier"]) and summary["barrier"] >= 0):
        raise ValueError(f"summary.barrier: expected a number >= 0, got {summary['barrier']}")
    for key in ("solve_time_s", "time_per_iteration_s"):
        if not (math.isfinite(summary[key]) and summary[key] >= 0):
            raise ValueError(f"summary.{key}: expected a time >= 0, got {summary[key]}")
    if not isinstance(summary["iterations"], int) or summary["iterations"] < 0:
        raise ValueError(f"summary.iterations: expected an integer >= 0, got {summary['iterations']}")
    kkt = summary.get("kkt")
    if not isinstance(kkt, list) or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in kkt):
        raise ValueError("summary.kkt: expected a list of numbers")
    if not isinstance(summary.get("init", "static"), str):
        raise ValueError("summary.init: expected a string")
    return run


def _array(run, key, ndim) -> np.ndarray:
    x = run[key]
    if x.ndim != ndim or not np.issubdtype(x.dtype, np.number):
        raise ValueError(f"{key}: expected a {ndim}-D array of numbers, got {x.dtype} of shape {x.shape}")
    return x


def default_path(config) -> Path:
    """``results/`` and the :func:`run_name` of ``config``'s solve, ``_exact`` after it with the
    exact Hessian (so that it does not replace the Gauss-Newton solve's file)."""
    s = config.solver
    barrier = s.barrier if s.barrier_update == "fixed" else f"{s.barrier_update}_{s.barrier:g}-{s.barrier_min:g}"
    exact = "_exact" if s.hessian == "exact" else ""
    return Path("results") / f"{run_name(config.name, s.formulation, barrier, s.init)}{exact}.npz"


def run_name(name, formulation, barrier, init="static") -> str:
    """``NAME_FORMULATION_BARRIER``, and ``_INIT`` for a start other than the static one;
    ``barrier`` a number, or a text (a decreasing barrier's course)."""
    barrier = barrier if isinstance(barrier, str) else f"{barrier:g}"
    return f"{name}_{formulation}_{barrier}" + ("" if init == "static" else f"_{init}")
