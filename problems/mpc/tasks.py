"""The MPC tasks by the ``task`` key of their configuration file, and a run of one from its
file (``liftoff mpc``): the configuration loaded and checked, the run, its results file
(:mod:`.results`) and its figures (:mod:`.figures`) in the output folder."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from liftoff.problems.files import check_output
from liftoff.problems.tasks.config import ConfigError, load_config, naming, task_of
from liftoff.problems.tasks.gait_mpc import GaitMPCConfig
from liftoff.problems.tasks.polishing import PolishingConfig

from . import figures, gait_run, polishing_run, results


@dataclass(frozen=True)
class MPCTask:
    """What a task's closed loop is made of: its configuration ``schema``; ``run(config,
    duration, pushes, mass_scale, formulation, progress, quiet)``; ``measures(run) -> dict``;
    ``figures(results, out_dir) -> paths``; ``lines(measures)``, what a person reads first; and
    ``failed(measures)``, whether the run failed."""

    schema: type
    run: Callable
    measures: Callable
    figures: Callable
    lines: Callable
    failed: Callable


TASKS = {
    "polishing": MPCTask(
        PolishingConfig,
        polishing_run.run,
        polishing_run.measures,
        figures.polishing_figures,
        polishing_run.summary_lines,
        lambda m: m["status"] != "completed" or m["contact_lost_periods_fraction"] > 0,
    ),
    "gait_mpc": MPCTask(
        GaitMPCConfig,
        gait_run.run,
        gait_run.measures,
        figures.gait_figures,
        gait_run.summary_lines,
        lambda m: m["status"] != "completed",
    ),
}


@dataclass(frozen=True)
class Outcome:
    """A finished run: its ``config``, ``measures``, results file and figures, whether it
    ``failed``, and the measures' summary ``lines``."""

    config: object
    measures: dict
    results: Path
    figures: list
    failed: bool
    lines: tuple


def task_of_file(path) -> MPCTask:
    """The task of the configuration file ``path``; :class:`ConfigError` for a file without one."""
    task = TASKS.get(task_of(path))
    if task is None:
        raise ConfigError(f"expected an MPC task (task: {' or task: '.join(TASKS)})", source=str(path))
    return task


def load_task(path, engine=None, scheme=None) -> tuple:
    """``(task, config)`` of the configuration file ``path``, ``engine`` overriding its
    ``plant.engine`` and ``scheme`` its ``mpc.scheme``."""
    task = task_of_file(path)
    config = load_config(path, task.schema)
    if engine is not None:
        config = replace(config, plant=replace(config.plant, engine=engine))
    if scheme is not None:
        config = replace(config, mpc=replace(config.mpc, scheme=scheme))
    return task, config


def run_file(
    path,
    duration=None,
    pushes=(),
    mass_scale=1.0,
    formulation=None,
    out_dir=None,
    progress=None,
    quiet=False,
    engine=None,
    scheme=None,
):
    """Run the MPC of the configuration file ``path`` (:class:`.disturbances.Push` ``pushes``, the
    plant's scaled bodies times ``mass_scale``, ``formulation`` and ``duration`` overriding the
    file's, ``engine`` its ``plant.engine`` and ``scheme`` its ``mpc.scheme``) and write its
    results file and figures to ``out_dir`` (default ``results/NAME_mpc``), checked before the
    run. ``progress(t, duration)`` follows the simulated time."""
    task, config = load_task(path, engine, scheme)
    out_dir = Path(out_dir or Path("results") / f"{config.name}_mpc")
    target = check_output(out_dir / "run.npz")  # before the run, not after
    duration = config.mpc.duration if duration is None else duration
    with naming(path):
        follow = None if progress is None else (lambda t: progress(t, duration))
        run = task.run(config, duration, pushes, mass_scale, formulation, progress=follow, quiet=quiet)
    m = task.measures(run)
    results.save(target, run.arrays, run.log.ticks, m, config)
    drawn = task.figures(results.load(target), out_dir)
    return Outcome(config, m, target, drawn, task.failed(m), task.lines(m))
