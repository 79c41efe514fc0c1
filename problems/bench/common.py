"""What every benchmark against Pinocchio shares: Pinocchio's model of the same URDF, random
states, the check that both agree before anything is timed (a benchmark never times a wrong
computation), the timer and the progress lines.

Absolute times are noisy on shared machines; the ratio ``ours / pin`` measured in the same run
is the number to read (DESIGN.md, Speed).
"""

from __future__ import annotations

import platform
import sys
import timeit
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from liftoff import dynamics

TOLERANCE = 1e-8  # |ours - pin| <= TOLERANCE * (1 + |pin|), entry by entry


class BenchError(RuntimeError):
    """The benchmark cannot run: Pinocchio is missing or disagrees with liftoff."""


@contextmanager
def one_blas_thread():
    """BLAS (numpy's, scipy's, Pinocchio's) on one thread within the block: speed is measured on one core."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        raise BenchError(
            'the benchmarks limit BLAS to one thread with threadpoolctl; install it with: pip install -e ".[bench]"'
        ) from None
    with threadpool_limits(1):
        yield


def import_pinocchio():
    try:
        import pinocchio
    except ImportError:
        raise BenchError(
            "the dynamics benchmark times Pinocchio in the same run as the reference, but it is "
            'not installed; install it with: pip install -e ".[bench]"'
        ) from None
    return pinocchio


def _urdf_path(robot: str) -> Path:
    return dynamics.robot_urdf(robot) if robot in dynamics.ROBOTS else Path(robot)


def pinocchio_model(pin, model: dynamics.Model, robot: str):
    """Pinocchio's model of the same URDF, checked to have our joint order and dimensions."""
    path = str(_urdf_path(robot))
    pmodel = (
        pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
        if model.has_free_flyer
        else pin.buildModelFromUrdf(path)
    )
    names = tuple(pmodel.names)[1:]  # without the universe
    if (pmodel.nq, pmodel.nv) != (model.nq, model.nv) or names != model.joint_names:
        raise BenchError(
            f"Pinocchio's model of {robot!r} does not match liftoff's: nq, nv = {pmodel.nq}, {pmodel.nv} vs "
            f"{model.nq}, {model.nv}; joints {names} vs {model.joint_names}"
        )
    return pmodel


def random_states(model, size: int, seed: int):
    """``size`` states ``(q, v, a, tau)``: q uniform within the limits, the others standard normal."""
    rng = np.random.default_rng(seed)
    q = dynamics.random_configuration(model, rng, size=size)
    v, a, tau = (rng.standard_normal((size, model.nv)) for _ in range(3))
    return q, v, a, tau


MAX_CONDITION = 1e4  # of the Delassus matrix: states away from singular configurations


def regular_states(model, contacts, size, seed, max_condition=MAX_CONDITION):
    """``(q, v, tau)`` of ``size`` random states whose Delassus matrix has a condition number
    below ``max_condition`` (drawn in rounds of ``4 size`` until there are enough)."""
    kept, round_ = [], 0
    while sum(len(k[0]) for k in kept) < size:
        q, v, _, tau = random_states(model, 4 * size, seed + round_)
        regular = np.linalg.cond(dynamics.delassus(model, q, contacts)[0]) < max_condition
        kept.append((q[regular], v[regular], tau[regular]))
        round_ += 1
    return tuple(np.concatenate(parts)[:size] for parts in zip(*kept))


def check_against_pinocchio(ours: dict, pins: dict, names, what="", per_entry=True) -> dict:
    """Max absolute error per quantity of ``names``; raise :class:`BenchError` beyond the tolerance.

    ``ours[name]()`` returns an array or a tuple of arrays, ``pins[name]`` a tuple of arrays.
    The tolerance is ``TOLERANCE (1 + |pin|)`` per entry, or relative to the largest
    ``|pin|`` of the output with ``per_entry=False``.
    """
    errors, failures = {}, []
    for name in names:
        mine = ours[name]()
        mine = mine if isinstance(mine, tuple) else (mine,)
        worst = 0.0
        for part, (x, y) in enumerate(zip(mine, pins[name])):
            x = np.asarray(x)
            if x.shape != y.shape:
                raise BenchError(f"{name}: output {part} has shape {x.shape}, Pinocchio's has {y.shape}")
            diff = np.abs(x - y)
            err = float(np.max(diff)) if x.size else 0.0
            scale = np.abs(y) if per_entry else np.max(np.abs(y), initial=0.0)
            if not np.all(diff <= TOLERANCE * (1.0 + scale)):  # also catches NaN
                failures.append(f"{name} (output {part}): max |ours - pin| = {err:.3g}")
            worst = max(worst, err)
        errors[name] = worst
    if failures:
        raise BenchError(
            f"liftoff disagrees with Pinocchio{what} beyond {TOLERANCE:g} * (1 + |pin|{'' if per_entry else '_max'}); "
            f"refusing to time a wrong computation: {'; '.join(failures)}"
        )
    return errors


def seconds_per_call(fn, repeat: int) -> float:
    """Best of ``repeat`` runs of ``number`` calls, ``number`` chosen so a run lasts >= 0.2 s."""
    timer = timeit.Timer(fn)
    number, _ = timer.autorange()
    return min(timer.repeat(repeat, number)) / number


def stderr_progress(line: str) -> None:
    print(f"liftoff: {line}", file=sys.stderr, flush=True)


def run_facts(pin, repeat: int, retained=None) -> dict:
    """What a benchmark's result records of how it ran: the repetitions and the timer, the
    tolerance of the check against Pinocchio, the versions, whether freed memory is retained
    (:func:`dynamics.retain_freed_memory`) and the machine."""
    return dict(
        repeat=repeat,
        timer="best of `repeat` runs of n calls, n set so one run lasts >= 0.2 s; time per state = time per call / B",
        tolerance=TOLERANCE,
        versions=dict(python=platform.python_version(), numpy=np.__version__, pinocchio=pin.__version__),
        retained_freed_memory=retained,
        machine=f"{platform.machine()} {platform.system()}",
    )
