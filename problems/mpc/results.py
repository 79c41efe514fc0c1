"""A closed-loop MPC run as a file, and the measures every run shares.

A results file (``.npz``) holds the plant-rate arrays of the run (the log's ``t, q, v, tau, u``
and contact readings, and the task's own), the per-update ``tick_t, tick_ms, tick_iterations,
tick_kkt, tick_regularization`` (the ``mu`` of the policy's recursion, 0 when it needed none:
:mod:`problems.mpc.controller`), and the run's measures and configuration as JSON strings. A run's
measures begin with its :func:`outcome`; :func:`timing` gives those of the loop's speed:

- ``tick_ms_median``, ``tick_ms_p95``, ``tick_ms_max``: the MPC updates' CPU time (the first
  solve left out), and ``tick_p95_ratio``, the p95 over the median within a run (of several
  runs, the median of theirs: a machine whose speed drifts between runs widens pooled
  percentiles that no run has), and ``tick_ms_fastest_run``, the lowest of the runs' medians
  (of several runs, what an update costs on the machine's fastest stretch; of one, its median);
- ``policy_us_median``: one evaluation of the policy between updates (wall time, which the
  loop reads anyway: reading the CPU clock too would add 0.4 µs to a call of a few);
- ``plant_ms_per_step``: one step of the plant (wall time);
- ``real_time_factor``: simulated time over the wall time of the whole loop (the plant, the
  controller, the log, the divergence test; the first solve not counted), and
  ``controller_real_time_factor``: over the controller's alone (updates, policy, estimator);
- ``updates`` and ``update_iterations`` (Newton iterations after the first solve).
"""

from __future__ import annotations

import json
import zipfile

import numpy as np

from liftoff.problems.files import ReadError, atomic
from liftoff.problems.tasks.config import to_dict


def outcome(run, duration) -> dict:
    """The measures every run begins with: its log's ``status``, ``end_time_s`` and ``message``,
    its ``formulation``, ``backend`` and ``plant``, and the ``duration_s`` it was to run."""
    log = run.log
    return {
        "status": log.status,
        "end_time_s": log.end_time,
        "message": log.message,
        "formulation": run.formulation,
        "backend": run.backend,
        "plant": run.plant,
        "duration_s": float(duration),
    }


def timing(log, duration) -> dict:
    """The loop's speed over ``duration`` simulated seconds of ``log`` (module docstring), or of
    a list of logs pooled (their updates and steps together, ``duration`` their total)."""
    logs = log if isinstance(log, (list, tuple)) else [log]
    ticks = [tick for one in logs for tick in one.ticks[1:]]
    per_run = [[tick.seconds for tick in one.ticks[1:]] for one in logs]
    ticks_ms = 1e3 * np.array([seconds for run in per_run for seconds in run] or [np.nan])
    ratios = [_p95_ratio(seconds) for seconds in per_run]
    medians = [1e3 * float(np.median(seconds)) for seconds in per_run if seconds]
    policy = [s for one in logs for s in one.policy_seconds]
    steps = max(sum(len(one.t) for one in logs), 1)
    return {
        "tick_ms_median": float(np.median(ticks_ms)),
        "tick_ms_p95": float(np.percentile(ticks_ms, 95)),
        "tick_ms_max": float(np.max(ticks_ms)),
        "tick_p95_ratio": float(np.median(ratios)),
        "tick_ms_fastest_run": min(medians, default=float("nan")),
        "policy_us_median": 1e6 * float(np.median(policy)) if policy else float("nan"),
        "plant_ms_per_step": 1e3 * sum(one.plant_seconds for one in logs) / steps,
        "real_time_factor": float(duration / max(sum(one.loop_seconds for one in logs), 1e-12)),
        "controller_real_time_factor": float(duration / max(sum(one.control_seconds for one in logs), 1e-12)),
        "updates": sum(len(one.ticks) for one in logs),  # the first solves included
        "update_iterations": int(sum(tick.iterations for tick in ticks)),
    }


def _p95_ratio(seconds) -> float:
    median = float(np.median(seconds)) if seconds else 0.0
    return float(np.percentile(seconds, 95)) / median if median > 0 else float("nan")  # none, or too fast to time


def save(path, arrays, ticks, measures, config) -> None:
    """Write the results file ``path`` whole (module docstring)."""
    columns = {
        "tick_t": [x.t for x in ticks],
        "tick_ms": [1e3 * x.seconds for x in ticks],
        "tick_iterations": [x.iterations for x in ticks],
        "tick_kkt": [x.kkt_error for x in ticks],
        "tick_regularization": [x.regularization for x in ticks],
    }
    with atomic(path) as out:
        np.savez_compressed(
            out,
            **arrays,
            **{k: np.asarray(v) for k, v in columns.items()},
            measures=json.dumps(measures),
            config=json.dumps(to_dict(config)),
        )


def load(path) -> dict:
    """A results file as a dict of arrays, with ``measures`` and ``config`` as dicts;
    :class:`problems.files.ReadError` for a file that is not one."""
    try:
        with np.load(path, allow_pickle=False) as data:
            out = {k: data[k] for k in data.files if k not in ("measures", "config")}
            out["measures"], out["config"] = json.loads(str(data["measures"])), json.loads(str(data["config"]))
    except (OSError, KeyError, ValueError, EOFError, zipfile.BadZipFile) as e:
        raise ReadError(f"{path}: not a readable liftoff MPC results file ({e})") from None
    return out
