"""The closed loop: an MPC against a plant, and the log of what happened.

:func:`closed_loop` starts the MPC from the plant's first measurement, then at the plant's rate
evaluates the policy on the latest measurement and steps the plant, and every MPC period
updates the MPC from the measurement. It ends after ``duration`` seconds, or earlier with a
status: ``diverged`` when the plant's state is not finite or a joint is more than
:data:`LIMIT_MARGIN` beyond its limits (a simulation that blew up), when the plant's dynamics
break down (a singular contact system), or when an MPC update fails; or the status that
``stop(measurement)`` returns (a legged robot that fell). Everything up to then is in the
:class:`Log`.

A plant that can (:meth:`.plants.mujoco_plant.MujocoPlant.run`) runs a period's steps in one
compiled call, the policy included; the loop then logs them and tests them as it would one at a
time. The estimator sees a period's steps together in either case.
"""

from __future__ import annotations

import gc
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from .controller import MPCError
from .plants import DEPTH, FORCE, POSITION, ROW, TOUCHING, VELOCITY, ContactReadings, reading_row

LIMIT_MARGIN = 0.5  # rad (m for prismatic joints): a joint this far beyond its limits has diverged


@dataclass
class Log:
    """A closed-loop run at the plant's rate: per step ``t``, the state ``q, v`` and the
    actuators' torques ``tau`` at its start (``tau`` empty without a filter), the command ``u``,
    and each named contact's reading during the step (``contact_active (n, k)``,
    ``contact_force, contact_position, contact_velocity (n, k, 3)``, ``contact_depth (n, k)``, contacts in
    ``contact_names`` order). ``ticks`` are the MPC's updates; ``control_seconds`` the wall time
    of the controller (updates, policy evaluations and the estimator's ``observe``),
    ``policy_seconds`` that of each policy evaluation, ``plant_seconds`` that of the plant,
    ``loop_seconds`` that of the whole loop after the MPC's start (the plant, the controller,
    the log and the divergence test); ``status``
    ``completed``, ``diverged`` or a stop's status, at ``end_time`` [s], with a ``message``."""

    contact_names: tuple = ()
    t: list = field(default_factory=list)
    q: list = field(default_factory=list)
    v: list = field(default_factory=list)
    tau: list = field(default_factory=list)
    u: list = field(default_factory=list)
    readings: list = field(default_factory=list)
    ticks: list = field(default_factory=list)
    policy_seconds: list = field(default_factory=list)
    control_seconds: float = 0.0
    plant_seconds: float = 0.0
    loop_seconds: float = 0.0
    status: str = "completed"
    end_time: float = 0.0
    message: str = ""

    def record(self, t, measurement, u, readings):
        self.t.append(t)
        self.q.append(measurement.q)
        self.v.append(measurement.v)
        self.tau.append(np.zeros(0) if measurement.tau is None else measurement.tau)
        self.u.append(np.asarray(u, dtype=float))
        if isinstance(readings, ContactReadings) and tuple(readings.index) == self.contact_names:
            self.readings.append(readings.rows)
        else:
            self.readings.append([reading_row(readings[name]) for name in self.contact_names])

    def arrays(self) -> dict:
        out = {k: np.asarray(getattr(self, k)) for k in ("t", "q", "v", "tau", "u")}
        rows = np.array(self.readings, dtype=float).reshape(len(self.t), len(self.contact_names), ROW)
        out["contact_active"] = rows[:, :, TOUCHING] > 0
        out["contact_force"], out["contact_position"] = rows[:, :, FORCE], rows[:, :, POSITION]
        out["contact_depth"], out["contact_velocity"] = rows[:, :, DEPTH], rows[:, :, VELOCITY]
        return out


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
        if np.isfinite(q).all() and np.isfinite(v).all() and (q >= self.lower).all() and (q <= self.upper).all():
            return None  # the common case in four passes
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
    ``stop(measurement)`` a status that ends the run, or None; ``observe(times, befores,
    commands, afters)`` sees every step (a controller's estimator): lists of the steps' times,
    the measurements before and after each and its command, a period's steps at once, after
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
        steps_seen = []  # the period's steps: (measurement before, row)
        try:
            for rows in _blocks(plant, policy, measurement, k * steps, steps, diverged):
                status, message, rows = _until_the_end(rows, diverged, stop)
                befores = [measurement] + [row[2] for row in rows[:-1]]
                for before, (t, u, after, policy_seconds, plant_seconds, _) in zip(befores, rows):
                    log.plant_seconds += plant_seconds
                    log.control_seconds += policy_seconds
                    log.policy_seconds.append(policy_seconds)
                    log.record(t, before, u, after.contacts)
                measurement = rows[-1][2]
                steps_seen += zip(befores, rows)
                if status is not None:
                    _observe(observe, steps_seen, log)
                    return _ended(log, mpc, status, rows[-1][0] + plant.dt, message)
        except PlantFailure as e:
            _observe(observe, steps_seen, log)
            return _ended(log, mpc, "diverged", e.t, str(e))
        _observe(observe, steps_seen, log)
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


def _observe(observe, steps, log):
    """Show the ``steps`` (``(measurement before, row)``, rows as :func:`_blocks`'s) to the
    estimator ``observe`` (or None) in one call, counted in the controller's time."""
    if observe is not None and steps:
        begin = time.perf_counter()
        befores, rows = zip(*steps)
        observe([row[0] for row in rows], list(befores), [row[1] for row in rows], [row[2] for row in rows])
        log.control_seconds += time.perf_counter() - begin


def _blocks(plant, policy, measurement, first, n, diverged):
    """The plant's ``n`` steps from step index ``first`` under ``policy``, from ``measurement``,
    as lists of rows ``(t, command, measurement after the step, policy seconds, plant seconds,
    checked)``, ``checked`` when the plant found that the state after it has not diverged
    (``diverged``'s test): one list of them all where the plant runs them in one call (the
    MuJoCo plant's compiled steps), else a list per step, each stepped when the loop asks for it."""
    run = getattr(plant, "run", None)
    rows = None if run is None else run(first, n, policy, measurement, diverged.lower, diverged.upper)
    if rows is not None:
        yield rows
        return
    for j in range(n):
        t = (first + j) * plant.dt
        begin = time.perf_counter()
        u = policy(t, measurement.q, measurement.v, measurement.tau)
        middle = time.perf_counter()
        try:
            measurement = plant.step(t, u)
        except (np.linalg.LinAlgError, FloatingPointError) as e:  # the plant's dynamics broke down
            raise PlantFailure(t, f"the plant failed at t = {t:.3f} s: {e}") from None
        yield [(t, u, measurement, middle - begin, time.perf_counter() - middle, False)]


def _until_the_end(rows, diverged, stop) -> tuple:
    """``(status, message, rows)``: the first of ``rows`` whose state diverged (``diverged``'s
    test, unless checked) or that ``stop`` ends, its status and why, and the rows up to it; or
    ``(None, "", rows)``."""
    for i, (_, _, after, _, _, checked) in enumerate(rows):
        why = None if checked else diverged(after)
        status = "diverged" if why else None if stop is None else stop(after)
        if status is not None:
            return status, why or "", rows[: i + 1]
    return None, "", rows


class PlantFailure(RuntimeError):
    """A plant whose dynamics broke down at time ``t`` (a singular contact system)."""

    def __init__(self, t, message):
        super().__init__(message)
        self.t = t


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
