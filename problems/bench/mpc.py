"""``liftoff bench mpc``: how fast the MPC loops run, on one core.

Each task (:data:`TASKS`: the polishing MPC on the horizontal table, the ANYmal trot) runs its
closed loop from its configuration for ``duration`` simulated seconds in each MPC scheme
(:data:`SCHEMES`, :mod:`problems.mpc.controller`: the configurations' ``newton``, and the
real-time iteration ``rti``), one run after the other in this process with BLAS on one thread,
against the MuJoCo plant (or the configuration's ``plant``); with ``repeat`` rounds of them, each
task and scheme's runs pooled. Reported per task and scheme, the first solve of each run left
out:

- the updates' CPU time: median, 95th percentile and maximum (pooled), the fastest run's
  median (the machine's speed drifts between minutes: what an update costs on its fastest
  stretch), the 95th percentile over the median within a run (the median over the runs), the
  median of each of their steps
  (:data:`problems.mpc.controller.PARTS`: building the horizon's OCP, regrouping its stages for
  the kernels, matching the warm start, the Newton iterations, the policy's gains; in ``rti``
  on compiled kernels the solve holds the linearization, the policy's recursion and the step
  that warm-starts the next update, one compiled call) and the Newton steps per update;
- the policy's time per call between updates, the plant's per step;
- the real-time factors of the whole loop (simulated time over its wall time: plant, updates,
  policy, estimator, log) and of the controller alone, against the update rate the task asks for.

No reference implementation of these loops runs in the same process: robotoc (whose ANYmal trot
MPC updates every 2.5 ms on 4 threads) is not on PyPI. The targets are absolute: an update
within its period is real time.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import numpy as np

from .common import one_blas_thread

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
TASKS = {"polishing": "polishing_horizontal.yaml", "trot": "anymal_trot_mpc.yaml"}
SCHEMES = ("newton", "rti")


def run_task(name: str, duration: float, engine=None, scheme=None, repeat=1) -> dict:
    """The speed of the closed loop of task ``name`` (module docstring) over ``duration``
    seconds, in the MPC ``scheme`` (default: the configuration's); ``repeat`` runs pooled."""
    return summary(*_runs(name, duration, engine, scheme, repeat))


def _runs(name, duration, engine, scheme, repeat) -> tuple:
    """``(name, config, runs)``: ``repeat`` closed-loop runs of task ``name``."""
    from liftoff.problems.mpc.tasks import load_task

    task, config = load_task(CONFIGS / TASKS[name], engine, scheme)
    return name, config, [task.run(config, duration, quiet=True) for _ in range(repeat)]


def summary(name, config, runs) -> dict:
    """The measures of task ``name``'s ``runs`` of ``config`` (module docstring), their updates
    and steps pooled: medians and percentiles over all of them, real-time factors of the total
    times (:func:`problems.mpc.results.timing`)."""
    from liftoff.problems.mpc.controller import PARTS
    from liftoff.problems.mpc.results import timing

    logs = [run.log for run in runs]
    ticks = [tick for log in logs for tick in log.ticks[1:]]
    simulated = sum(log.end_time for log in logs)
    parts = {part: 1e3 * statistics.median(t.parts[part] for t in ticks) for part in PARTS} if ticks else {}
    failed = [log for log in logs if log.status != "completed"]
    return {
        "task": name,
        "config": f"configs/{TASKS[name]}",
        "plant": config.plant.engine,
        "scheme": config.mpc.scheme,
        "runs": len(logs),
        "status": failed[0].status if failed else "completed",
        "simulated_s": simulated,
        "period_ms": 1e3 * config.mpc.period,
        "iterations_per_update": float(np.mean([t.iterations for t in ticks])) if ticks else float("nan"),
        "update_parts_ms_median": parts,
        **timing(logs, simulated),
    }


def mpc_benchmark(tasks=tuple(TASKS), duration=2.0, engine=None, progress=None, schemes=SCHEMES, repeat=1) -> dict:
    """The speed of each task's loop in each scheme (module docstring), on one BLAS thread;
    with ``repeat`` rounds, each round runs every task and scheme once (the machine's speed
    drifting between minutes, each configuration meets the same stretches), their runs pooled."""
    say = progress or (lambda line: None)
    runs = {(name, scheme): [] for name in tasks for scheme in schemes}
    configs = {}
    with one_blas_thread():
        for round_ in range(repeat):
            for name, scheme in runs:
                _, configs[name, scheme], (run,) = _runs(name, duration, engine, scheme, 1)
                runs[name, scheme].append(run)
                ticks = [1e3 * tick.seconds for tick in run.log.ticks[1:]] or [float("nan")]
                say(f"{name}, {scheme} (round {round_ + 1} of {repeat}): update median {np.median(ticks):.2f} ms")
    results = [summary(name, configs[name, scheme], done) for (name, scheme), done in runs.items()]
    return {"duration_s": duration, "repeat": repeat, "tasks": results}


def format_table(result: dict) -> str:
    """The benchmark's results as Markdown tables."""
    lines = [
        f"MPC loops, {result.get('repeat', 1)} x {result['duration_s']:g} s simulated each, one BLAS thread "
        "(CPU time of the updates):",
        "",
        "| task | scheme | plant | updates | iterations | update median | fastest run's median | p95 | max "
        "| p95 / median in a run | period | policy | plant step | real-time factor | controller only |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["tasks"]:
        lines.append(
            f"| {r['task']} | {r['scheme']} | {r['plant']} | {r['updates']} | {r['iterations_per_update']:.1f} "
            f"| {r['tick_ms_median']:.2f} ms | {r['tick_ms_fastest_run']:.2f} ms | {r['tick_ms_p95']:.2f} ms "
            f"| {r['tick_ms_max']:.2f} ms "
            f"| {r['tick_p95_ratio']:.2f} | {r['period_ms']:g} ms | {r['policy_us_median']:.1f} µs "
            f"| {r['plant_ms_per_step']:.3f} ms "
            f"| {r['real_time_factor']:.2f} | {r['controller_real_time_factor']:.2f} |"
        )
    parts = [r for r in result["tasks"] if r["update_parts_ms_median"]]
    if parts:
        names = list(parts[0]["update_parts_ms_median"])
        lines += ["", "Where an update goes (medians, ms):", "", "| task | scheme | " + " | ".join(names) + " |"]
        lines.append("|---|---|" + "---|" * len(names))
        for r in parts:
            cells = " | ".join(f"{r['update_parts_ms_median'][n]:.2f}" for n in names)
            lines.append(f"| {r['task']} | {r['scheme']} | {cells} |")
    failed = [r for r in result["tasks"] if r["status"] != "completed"]
    for r in failed:
        lines.append(f"\n{r['task']}, {r['scheme']}: the loop ended early ({r['status']} at {r['simulated_s']:.2f} s)")
    return "\n".join(lines)
