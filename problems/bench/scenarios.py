"""What the closed-loop benchmarks share: configurations changed by nested YAML keys, and
scenarios run on a pool of processes with one BLAS thread each."""

from __future__ import annotations

import copy
import os
from concurrent.futures import ProcessPoolExecutor


def merge(base: dict, changes: dict) -> dict:
    """``base`` (a YAML document) with the nested keys of ``changes`` replaced."""
    out = copy.deepcopy(base)
    for key, value in changes.items():
        out[key] = merge(out.get(key, {}), value) if isinstance(value, dict) else value
    return out


def _one_thread(job):
    run, scenario, duration = job
    os.environ.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    return run(scenario, duration)


def run_all(run, scenarios, duration, workers=None, say=None) -> list:
    """``run(scenario, duration)`` of every scenario on ``workers`` processes (default: the
    cores), in order; ``say(result)`` after each."""
    results = []
    with ProcessPoolExecutor(max_workers=workers or os.cpu_count()) as pool:
        for result in pool.map(_one_thread, [(run, s, duration) for s in scenarios]):
            if say is not None:
                say(result)
            results.append(result)
    return results
