"""Lifted against non-lifted: every formulation on every configuration at every barrier, and
the baselines of ``methods`` (:mod:`problems.studies.baselines`): FDDP and iLQR at each barrier and
start, Ipopt and the OSQP SQP once on the exact problem (barrier 0).

A configuration is a gait's or a polishing task's (its horizon from the task's initial state:
rigid against soft contact), the two mixed at will. A method that does not take a
configuration's OCP (the non-lifted formulation and sliding friction, the baselines and a
polishing task) is a row of status ``unsupported`` that says why; the others run. A polishing
row adds the surface's normal force on the pad at the horizon's end against the target, and
``normal_force.png`` draws it over the horizon.

:func:`compare` solves, saves each run's results file in the output folder and calls
:func:`report`, which reads the results files back and writes the figures of
:mod:`problems.studies.figures` and the table (``table.md``, ``table.csv``, ``summary.json``) of
iterations, the lifted/non-lifted iteration ratio, time per iteration, total time, final
cost and status. ``report`` alone redraws everything from a folder of results files without
solving again.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from liftoff.problems.files import OutputError, ReadError, atomic
from liftoff.problems.tasks.config import ConfigError, ProblemError, load_config, load_gait_config, task_of, with_solver
from liftoff.problems.tasks.polishing import TOOL_FRAME, PolishingConfig

from . import figures
from .baselines import BASELINES, DDP_METHODS, solve_baseline
from .runs import UNSUPPORTED, load_run, prepare, run_name, save_run, solve_prepared, summary, unsupported

FORMULATIONS = ("lifted", "nonlifted")
METHODS = FORMULATIONS + BASELINES
BARRIERS = (1e-1, 1e-4)
COLUMNS = (
    "gait",
    "formulation",
    "barrier",
    "init",
    "status",
    "iterations",
    "iteration_ratio",
    "ms_per_iteration",
    "total_s",
    "cost",
    "kkt_error",
    "max_violation",
)
FORCE_COLUMNS = ("contact", "end_force_N", "median_force_N", "target_force_N")  # of polishing rows (runs.summary)


def load(path):
    """The gait or polishing configuration of the YAML file ``path``; :class:`ConfigError` for
    another task's (``liftoff mpc`` runs it)."""
    return load_config(path, PolishingConfig) if task_of(path) == "polishing" else load_gait_config(path)


def methods_of(formulations=None, methods=None) -> tuple:
    """``(formulations, baselines)`` of a comparison from the formulations and methods asked for:
    the formulations named in either (both when none is), and the baselines of ``methods``."""
    given = tuple(formulations or ()) + tuple(m for m in methods or () if m in FORMULATIONS)
    chosen = tuple(dict.fromkeys(given or FORMULATIONS))
    return chosen, tuple(dict.fromkeys(m for m in methods or () if m not in chosen))


def check_names(paths, configs) -> None:
    """:class:`problems.files.OutputError` when two configurations (read from ``paths``) have one
    name: their results would overwrite each other's."""
    names = [c.name for c in configs]
    for name in names:
        if names.count(name) > 1:
            others = ", ".join(str(p) for p, n in zip(paths, names) if n == name)
            raise OutputError(f"two configurations named {name!r} ({others}) would overwrite each other's results")


def cases(configs, barriers=BARRIERS, formulations=FORMULATIONS, inits=None, methods=()) -> list:
    """The solves of a comparison, ``(config, method, barrier, init)``: each formulation and DDP
    baseline at each barrier and initial guess of ``inits`` (by default each config's), and each
    NLP baseline once at barrier 0."""
    by_barrier = tuple(formulations) + tuple(m for m in methods if m in DDP_METHODS)
    return [
        (config, form, eps, init)
        for config in configs
        for init in (inits or (config.solver.init,))
        for eps in barriers
        for form in by_barrier
    ] + [(config, method, 0.0, "static") for config in configs for method in methods if method not in DDP_METHODS]


def compare(
    configs, out_dir, barriers=BARRIERS, formulations=FORMULATIONS, progress=None, backend=None, inits=None, methods=()
) -> list:
    """Solve the :func:`cases` of ``configs``, stages evaluated by ``backend`` (by default each
    config's), the baselines by :mod:`problems.studies.baselines`; return the summaries.
    ``out_dir`` may hold results files of this comparison only (they are overwritten): the
    report draws every results file in it, so :class:`problems.files.OutputError` refuses others
    before anything is solved. ``progress(summary)`` follows each solve."""
    out_dir = Path(out_dir)
    todo = cases(configs, barriers, formulations, inits, tuple(methods))
    paths = [out_dir / f"{run_name(config.name, form, eps, init)}.npz" for config, form, eps, init in todo]
    others = sorted(p.name for p in out_dir.glob("*.npz") if p not in paths)
    if others:
        listed = ", ".join(others[:3]) + (", ..." if len(others) > 3 else "")
        raise OutputError(f"{out_dir} holds results of another comparison ({listed}); choose another --out or clear it")
    out_dir.mkdir(parents=True, exist_ok=True)
    for (config, form, eps, init), path in zip(todo, paths):
        run = _solve(config, form, eps, init, backend)
        save_run(run, path)
        if progress is not None:
            progress(summary(run))
    return report(out_dir)


def _solve(config, method, barrier, init, backend):
    """The run of ``method`` on ``config`` (:func:`compare`), or an ``unsupported`` one. The
    non-lifted formulation keeps Gauss-Newton's Hessian (the exact one, ``solver.hessian``, is the
    lifted formulation's)."""
    if method in BASELINES and isinstance(config, PolishingConfig):
        return unsupported(with_solver(config, init=init), method, barrier, "the baselines solve gait configurations")
    if method in DDP_METHODS:
        return solve_baseline(with_solver(config, barrier=barrier, init=init), method)
    if method in BASELINES:
        return solve_baseline(config, method)
    try:
        hessian = None if method == "lifted" else "gauss-newton"
        prepared = prepare(config, formulation=method, barrier=barrier, backend=backend, init=init, hessian=hessian)
    except (ConfigError, ProblemError):
        raise
    except ValueError as e:  # the formulation does not take this OCP (ocp.backends: sliding friction, non-lifted)
        return unsupported(with_solver(config, barrier=barrier, init=init), method, barrier, str(e))
    return solve_prepared(*prepared)


def progress_line(s: dict) -> str:
    """One solve of a comparison on a line: gait, method, barrier, start, status, iterations, time
    (an unsupported one: why)."""
    head = f"{s['name']:>14} {s['formulation']:>9} barrier {s['barrier']:<7g} {s['init']:>11} {s['status']:>14}"
    if s["status"] == UNSUPPORTED:
        return f"{head}: {s['message']}"
    return f"{head} {s['iterations']:4d} iterations {s['solve_time_s']:8.2f} s"


def iteration_ratios(summaries) -> list:
    """Per summary of a formulation, lifted iterations / non-lifted iterations of its (gait,
    barrier, start), or ``None`` when the pair is incomplete or either run did not converge
    (and for the baselines)."""
    converged = {
        (s["name"], s["barrier"], s.get("init", "static"), s["formulation"]): s["iterations"]
        for s in summaries
        if s["status"] == "converged"
    }

    def ratio(s):
        if s["formulation"] not in FORMULATIONS:
            return None
        key = (s["name"], s["barrier"], s.get("init", "static"))
        lifted, nonlifted = converged.get((*key, "lifted")), converged.get((*key, "nonlifted"))
        return round(lifted / nonlifted, 2) if lifted is not None and nonlifted else None

    return [ratio(s) for s in summaries]


def rows(summaries) -> list:
    return [
        {
            "gait": s["name"],
            "formulation": s["formulation"],
            "barrier": s["barrier"],
            "init": s.get("init", "static"),
            "status": s["status"],
            "iterations": s["iterations"],
            "iteration_ratio": "" if ratio is None else ratio,
            "ms_per_iteration": round(1e3 * s["time_per_iteration_s"], 1),
            "total_s": round(s["solve_time_s"], 2),
            "cost": s["cost"],
            "kkt_error": s["kkt_error"],
            "max_violation": s["max_constraint_violation"],
            **{c: s.get(c, "") for c in FORCE_COLUMNS},
        }
        for s, ratio in zip(summaries, iteration_ratios(summaries))
    ]


def columns(table) -> tuple:
    """The table's columns: the force's too when a row is a polishing one."""
    return COLUMNS + (FORCE_COLUMNS if any(row["contact"] for row in table) else ())


def markdown(table) -> str:
    names = columns(table)
    lines = ["| " + " | ".join(names) + " |", "|" + "---|" * len(names)]
    for row in table:
        cells = [
            f"{row[c]:.6g}"
            if isinstance(row[c], float) and c not in ("iteration_ratio", "ms_per_iteration", "total_s")
            else str(row[c])
            for c in names
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _compared(path) -> dict:
    """The results file ``path`` of a comparison (:func:`problems.studies.runs.load_run`), its method
    and friction coefficient checked; :class:`problems.files.ReadError` if it is not one."""
    run = load_run(path)
    method = run["summary"]["formulation"]
    if method not in METHODS:
        raise ReadError(f"{path}: not a results file of a comparison (method {method!r})")
    section, keys = ("surface", ("force", "normal")) if _polishing(run) else ("contacts", ("friction",))
    values = run["config"].get(section)
    for key in keys:  # what the figures read
        value = values.get(key) if isinstance(values, dict) else None
        value = value if isinstance(value, list) else [value]
        if len(value) != (3 if key == "normal" else 1) or not all(
            isinstance(x, (int, float)) and not isinstance(x, bool) for x in value
        ):
            what = "a direction [x, y, z]" if key == "normal" else "a number"
            raise ReadError(f"{path}: not a readable liftoff results file (config.{section}.{key}: expected {what})")
    if _polishing(run) and TOOL_FRAME not in run["forces"]:
        raise ReadError(f"{path}: not a readable liftoff results file (missing force/{TOOL_FRAME})")
    return run


def _polishing(run) -> bool:
    return run["config"].get("task") == "polishing"


def report(out_dir) -> list:
    """Figures and tables from the results files in ``out_dir``; returns the summaries."""
    out_dir = Path(out_dir)
    if not out_dir.is_dir():
        raise FileNotFoundError(f"{out_dir}: {'not a folder' if out_dir.exists() else 'no such folder'}")
    runs = [_compared(p) for p in sorted(out_dir.glob("*.npz"))]
    if not runs:
        raise FileNotFoundError(f"no results files (*.npz) in {out_dir}")
    order = {name: i for i, name in enumerate(dict.fromkeys(r["summary"]["name"] for r in runs))}
    runs.sort(
        key=lambda r: (
            order[r["summary"]["name"]],
            -r["summary"]["barrier"],
            r["summary"].get("init", "static"),
            METHODS.index(r["summary"]["formulation"]),
        )
    )
    summaries = [r["summary"] for r in runs]
    table = rows(summaries)
    with atomic(out_dir / "table.md", "w") as f:
        f.write(markdown(table))
    with atomic(out_dir / "table.csv", "w") as f:
        writer = csv.DictWriter(f, fieldnames=columns(table), extrasaction="ignore")
        writer.writeheader()
        writer.writerows(table)
    with atomic(out_dir / "summary.json", "w") as f:
        f.write(json.dumps(summaries, indent=1))
    solved = [r for r in runs if r["summary"]["status"] != UNSUPPORTED]
    if solved:
        figures.kkt_figure(solved, out_dir / "kkt.png")
        figures.time_figure(solved, out_dir / "time.png")
    lifted = [  # each configuration's lifted run at its smallest barrier
        r
        for r in solved
        if r["summary"]["formulation"] == "lifted"
        and r["summary"]["barrier"]
        == min(x["barrier"] for x in summaries if x["name"] == r["summary"]["name"] and x["formulation"] == "lifted")
    ]
    for r in lifted:
        if not _polishing(r):
            figures.forces_figure(r, out_dir / f"forces_{r['summary']['name']}.png")
    if any(_polishing(r) for r in lifted):
        figures.normal_force_figure([r for r in lifted if _polishing(r)], out_dir / "normal_force.png")
    return summaries
