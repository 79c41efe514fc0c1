"""Lifted against non-lifted: every formulation on every configuration at every barrier, and
the baselines of ``methods`` (:mod:`problems.studies.baselines`): FDDP and iLQR at each barrier and
start, Ipopt and the OSQP SQP once on the exact problem (barrier 0).

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
from liftoff.problems.tasks.config import with_solver

from . import figures
from .baselines import BASELINES, DDP_METHODS, solve_baseline
from .runs import load_run, run_name, save_run, solve_config, summary

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
        if form in DDP_METHODS:
            run = solve_baseline(with_solver(config, barrier=eps, init=init), form)
        elif form in BASELINES:
            run = solve_baseline(config, form)
        else:
            run = solve_config(config, form, eps, backend=backend, init=init)
        save_run(run, path)
        if progress is not None:
            progress(summary(run))
    return report(out_dir)


def progress_line(s: dict) -> str:
    """One solve of a comparison on a line: gait, method, barrier, start, status, iterations, time."""
    return (
        f"{s['name']:>14} {s['formulation']:>9} barrier {s['barrier']:<7g} {s['init']:>11} {s['status']:>14} "
        f"{s['iterations']:4d} iterations {s['solve_time_s']:8.2f} s"
    )


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
        }
        for s, ratio in zip(summaries, iteration_ratios(summaries))
    ]


def markdown(table) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for row in table:
        cells = [
            f"{row[c]:.6g}"
            if isinstance(row[c], float) and c not in ("iteration_ratio", "ms_per_iteration", "total_s")
            else str(row[c])
            for c in COLUMNS
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
    contacts = run["config"].get("contacts")
    friction = contacts.get("friction") if isinstance(contacts, dict) else None
    if isinstance(friction, bool) or not isinstance(friction, (int, float)):
        raise ReadError(f"{path}: not a readable liftoff results file (config.contacts.friction: expected a number)")
    return run


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
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(table)
    with atomic(out_dir / "summary.json", "w") as f:
        f.write(json.dumps(summaries, indent=1))
    figures.kkt_figure(runs, out_dir / "kkt.png")
    figures.time_figure(runs, out_dir / "time.png")
    for r in runs:
        s = r["summary"]
        if s["formulation"] == "lifted" and s["barrier"] == min(
            x["barrier"] for x in summaries if x["name"] == s["name"] and x["formulation"] == "lifted"
        ):
            figures.forces_figure(r, out_dir / f"forces_{s['name']}.png")
    return summaries
