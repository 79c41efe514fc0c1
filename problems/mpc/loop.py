"""The closed loop: an MPC against a plant, and the log of what happened.

:func:`closed_loop` starts the MPC from the plant's first measurement, then at the plant's rate
evaluates the policy on the latest measurement and steps the plant, and every MPC period
updates the MPC from the measurement. It ends after ``duration`` seconds, or earlier with a
status: ``diverged`` when the plant's state is not finite or a joint is more than
:data:`LIMIT_MARGIN` beyond its limits (a simulation that blew up), when the plant's dynamics
break down (a singular contact system), or when an MPC update fails; or the status that
``stop(measurement)`` returns (a legged robot that fell). Everything up to then is in the
:class:`Log`.

A plant that can (:meth:`.plants.mujoco_plant.MujocoPlant.run`,
:meth:`.plants.ideal_legged.IdealLeggedPlant.run`) runs a period's steps in one compiled call, the
policy included, testing each state for divergence; the loop steps the others one at a time into
the same arrays, testing each state as it comes. The log and the estimator take a period's steps
together, as arrays (:class:`.plants.Steps`).
"""

from __future__ import annotations

import gc
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from .controller import MPCError
from .plants import DEPTH, FORCE, POSITION, ROW, TOUCHING, VELOCITY, PlantFailure, Steps, reading_rows, within

LIMIT_MARGIN = 0.5  # rad (m for prismatic joints): a joint this far beyond its limits has diverged


@dataclass
class Log:
    """A closed-loop run at the plant's rate: its steps (:class:`.plants.Steps`, in order) as
    :meth:`arrays`: per step ``t``, the state ``q, v`` and the actuators' torques ``tau`` at its
    start (``tau`` empty without a filter), the command ``u``, and each named contact's reading
    during the step (``contact_active (n, k)``, ``contact_force, contact_position,
    contact_velocity (n, k, 3)``, ``contact_depth (n, k)``, contacts in ``contact_names`` order).
    ``ticks`` are the MPC's updates; ``control_seconds`` the wall time of the controller
    (updates, policy evaluations and the estimator's ``observe``), :attr:`policy_seconds` that
    of each policy evaluation, ``plant_seconds`` that of the plant, ``loop_seconds`` that of the
    whole loop after the MPC's start (the plant, the controller, the log and the divergence
    test); ``status`` ``completed``, ``diverged`` or a stop's status, at ``end_time`` [s], with a
    ``message``."""

    contact_names: tuple = ()
    steps: list = field(default_factory=list)
    ticks: list = field(default_factory=list)
    control_seconds: float = 0.0
    plant_seconds: float = 0.0
    loop_seconds: float = 0.0
    status: str = "completed"
    end_time: float = 0.0
    message: str = ""

    def record(self, steps: Steps):
        """Log ``steps``, their policy's seconds the controller's."""
        self.steps.append(steps)
        policy, plant = steps.seconds.sum(axis=0).tolist()
        self.control_seconds += policy
        self.plant_seconds += plant

    @property
    def t(self) -> np.ndarray:
        """The steps' times."""
        return np.concatenate([s.t for s in self.steps] + [np.zeros(0)])

    @property
    def policy_seconds(self) -> np.ndarray:
        """The seconds of each step's policy evaluation."""
        return np.concatenate([s.seconds[:, 0] for s in self.steps] + [np.zeros(0)])

    def arrays(self) -> dict:
        if not self.steps:
            return {k: np.zeros(0) for k in ("t", "q", "v", "tau", "u")} | _reading_arrays(
                np.zeros((0, len(self.contact_names), ROW))
            )
        out = {k: np.concatenate([getattr(s, k) for s in self.steps]) for k in ("t", "u")}
        out |= {k: np.concatenate([getattr(s, k)[:-1] for s in self.steps]) for k in ("q", "v", "tau")}
        return out | _reading_arrays(np.concatenate([s.readings for s in self.steps]))


def _reading_arrays(rows) -> dict:
    """The log's contact arrays (:class:`Log`) of the readings' ``rows (n, k, ROW)``."""
    return {
        "contact_active": rows[:, :, TOUCHING] > 0,
        "contact_force": rows[:, :, FORCE],
        "contact_position": rows[:, :, POSITION],
        "contact_depth": rows[:, :, DEPTH],
        "contact_velocity": rows[:, :, VELOCITY],
    }


class Divergence:
    """The test of a simulation that blew up (module docstring) for the controller's ``model``:
    called on a measurement, why its state has diverged, or None. The joints' limits widened by
    :data:`LIMIT_MARGIN` are made once (the free flyer's coordinates unbounded)."""

    def __init__(self, model):
        free = 7 if model.has_free_flyer else 0
        self.lower = np.concatenate((np.full(free, -np.inf), model.lower_position_limit[free:] - LIMIT_MARGIN))
        self.upper = np.concatenate((np.full(free, np.inf), model.upper_position_limit[free:] + LIMIT_MARGIN))

    def __call__(self, measurement) -> str | None:
        q, v = measurement.q, measurement.v
        if within(q, v, self.lower, self.upper):
            return None
        if not (np.all(np.isfinite(q)) and np.all(np.isfinite(v))):
            return "the simulated state is not finite"
        beyond = np.maximum(self.lower - q, q - self.upper)
        i = int(np.argmax(beyond))
        return f"configuration coordinate {i} is {beyond[i] + LIMIT_MARGIN:.2f} beyond its limit"


def closed_loop(mpc, plant, model, q0, v0, duration, period, progress=None, tau0=None, stop=None, observe=None) -> Log:
    """Run ``mpc`` (started here) against ``plant`` from ``(q0, v0)`` (and the actuators'
    torques ``tau0`` with a torque filter) for ``duration`` seconds (module docstring):
    ``model`` is the controller's (for the divergence test), ``period`` the time between MPC
    updates (a multiple of the plant's step), ``progress(t)`` called after each update,
    ``stop(measurement)`` a status that ends the run, or None; ``observe(steps)`` sees every
    step (a controller's estimator): a period's steps at once (:class:`.plants.Steps`), after
    the last of them (its estimate serves the next update)."""
    steps = int(round(period / plant.dt))
    if steps < 1 or abs(steps * plant.dt - period) > 1e-9 * period:
        raise ValueError(f"the MPC period {period!r} is not a multiple of the plant's step {plant.dt!r}")
    log = Log(tuple(plant.contact_names))
    measurement = plant.reset(q0, v0, tau0)
    policy = mpc.start(0.0, measurement.q, measurement.v, measurement.tau)  # not counted in the controller's time
    with np.errstate(all="ignore"), _collector_frozen():  # a plant that blows up is a status, not a flood of warnings
        begin = time.perf_counter()
        try:
            return _run(log, mpc, policy, plant, model, measurement, duration, period, progress, stop, observe)
        finally:
            log.loop_seconds = time.perf_counter() - begin


def _run(log, mpc, policy, plant, model, measurement, duration, period, progress, stop, observe) -> Log:
    """The loop of :func:`closed_loop` after the MPC's start."""
    steps = int(round(period / plant.dt))
    updates = int(round(duration / period))
    diverged = Divergence(model)
    for k in range(updates):
        seen = []  # the period's steps, in blocks
        try:
            for block in _blocks(plant, policy, measurement, k * steps, steps, diverged):
                status, message, block = _until_the_end(block, diverged, stop)
                log.record(block)
                seen.append(block)
                measurement = block.after(block.size - 1)
                if status is not None:
                    _observe(observe, seen, log)
                    return _ended(log, mpc, status, float(block.t[-1]) + plant.dt, message)
        except PlantFailure as e:
            _observe(observe, seen, log)
            return _ended(log, mpc, "diverged", e.t, str(e))
        _observe(observe, seen, log)
        t = (k + 1) * period
        if k + 1 < updates:  # no update after the last period
            begin = time.perf_counter()
            try:
                policy = mpc.update(t, measurement.q, measurement.v, measurement.tau)
            except MPCError as e:
                return _ended(log, mpc, "diverged", t, str(e))
            log.control_seconds += time.perf_counter() - begin
        if progress is not None:
            progress(t)
    return _ended(log, mpc, "completed", updates * period, "")


def _observe(observe, blocks, log):
    """Show the steps of ``blocks`` to the estimator ``observe`` (or None) in one call, counted in
    the controller's time."""
    if observe is not None and blocks:
        begin = time.perf_counter()
        observe(Steps.joined(blocks))
        log.control_seconds += time.perf_counter() - begin


def _blocks(plant, policy, measurement, first, n, diverged):
    """The plant's ``n`` steps from step index ``first`` under ``policy``, from ``measurement``,
    as one block of :class:`.plants.Steps`, checked: run by the plant in one call where it can
    (the MuJoCo plant's and the idealized legged plant's compiled steps), else stepped here one at
    a time (:func:`_stepped`)."""
    run = getattr(plant, "run", None)
    try:
        block = None if run is None else run(first, n, policy, measurement, diverged.lower, diverged.upper)
    except PlantFailure as e:  # after the steps it did
        if e.steps is not None and e.steps.size:
            yield e.steps
        raise
    yield from (block,) if block is not None else _stepped(plant, policy, measurement, first, n, diverged)


def _stepped(plant, policy, measurement, first, n, diverged):
    """:func:`_blocks`' steps one at a time: per step the policy on the latest measurement, the
    plant's step, the step's rows written and its state tested by ``diverged``, stopping after
    the first that diverged. A plant whose dynamics break down ends them: the steps done are
    yielded, then :class:`PlantFailure` raised."""
    names, nt = plant.contact_names, 0 if measurement.tau is None else len(measurement.tau)
    q, v, tau = (np.empty((n + 1, k)) for k in (len(measurement.q), len(measurement.v), nt))
    q[0], v[0], tau[0] = measurement.q, measurement.v, np.zeros(0) if measurement.tau is None else measurement.tau
    t = (first + np.arange(n)) * plant.dt
    readings, seconds, u = np.empty((n, len(names), ROW)), np.empty((n, 2)), None
    index = {name: k for k, name in enumerate(names)}
    done, why, failure = 0, None, None
    for j, tj in enumerate(t.tolist()):
        begin = time.perf_counter()
        command = policy(tj, measurement.q, measurement.v, measurement.tau)
        middle = time.perf_counter()
        try:
            measurement = plant.step(tj, command)
        except PlantFailure.CAUGHT as e:
            failure = PlantFailure.at(tj, e)
            break
        seconds[j] = middle - begin, time.perf_counter() - middle
        u = np.empty((n, len(command))) if u is None else u
        u[j], q[j + 1], v[j + 1] = command, measurement.q, measurement.v
        readings[j] = reading_rows(measurement.contacts, names)
        if nt:
            tau[j + 1] = measurement.tau
        done, why = j + 1, diverged(measurement)
        if why is not None:
            break
    if done:
        yield Steps(t, u, q, v, tau, readings, seconds, index, True).head(done)._replace(diverged=why is not None)
    if failure is not None:
        raise failure


def _until_the_end(steps: Steps, diverged, stop) -> tuple:
    """``(status, message, steps)``: the first of ``steps`` whose state diverged (``diverged``'s
    test, unless checked) or that ``stop`` ends, its status and why, and the steps up to it; or
    ``(None, "", steps)``. A ``stop`` with a method ``anywhere(q)`` (whether it ends the run at any
    of the configurations ``q (n, nq)``) is asked once per block, and then step by step only
    where it ends the run."""
    if steps.checked and not steps.diverged and (stop is None or not _anywhere(stop, steps)):
        return None, "", steps
    for j in range(steps.size):
        after = steps.after(j)
        checked = steps.checked and not (steps.diverged and j == steps.size - 1)
        why = None if checked else diverged(after)
        status = "diverged" if why else None if stop is None else stop(after)
        if status is not None:
            return status, why or "", steps.head(j + 1)
    return None, "", steps


def _anywhere(stop, steps: Steps) -> bool:
    """Whether ``stop`` may end the run at one of ``steps`` (True where it tests one step at a time)."""
    anywhere = getattr(stop, "anywhere", None)
    return True if anywhere is None else anywhere(steps.q[1:])


def _ended(log, mpc, status, t, message) -> Log:
    log.ticks, log.status, log.end_time, log.message = list(mpc.ticks), status, float(t), message
    return log


@contextmanager
def _collector_frozen():
    """Python's cyclic garbage collector leaves out the objects that exist now (the models, the
    kernels, the first solve): its full collections, which scan every tracked object, would
    otherwise stop an update for tens of milliseconds now and then. Collected and frozen on
    entry, unfrozen on exit."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
