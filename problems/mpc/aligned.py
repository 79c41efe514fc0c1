"""A compiled horizon renumbered in place: the updates of an MPC that meet a horizon structure
again, without an OCP or a formulation made per update.

A builder whose updates meet the same horizon structures again (the same stages, one group per
structure; a legged MPC's, between two knots and from one gait cycle to the next) may say so
with a method ``build.numbers(t, q, v, tau)`` that returns the horizon at ``t`` as its
:class:`HorizonNumbers` instead of its OCP: its ``structure`` (equal for horizons whose OCPs have
the same groups), its plan (the numbers the rest is made of) with each group's numbers made of it
(:class:`ocp.problem.GroupNumbers`: its cost terms and contacts stacked, its time steps), the
initial state, the terminal cost terms and the knots' times. An :class:`AlignedHorizon`, made
once per structure from an update that built its OCP:

- writes each group's constant inputs, the terminal cost's and the initial state into the arrays
  of the compiled Newton step (:class:`.in_place.HorizonInPlace`): the inputs gathered from the
  plan where the structure has a row gather (:mod:`.row_gather`, made at its first renumbering
  or before the loop, :meth:`.controller.MPC.start`), else made from the group's numbers
  (:meth:`ocp.kernels.CompiledStages.static_inputs`);
- runs the compiled Newton steps from the iterate the last update reached, where the horizon
  moved within its first stage (:meth:`AlignedHorizon.renumber`: its knots start as the last
  horizon's but the first, which starts within the last horizon's first stage,
  :func:`within_first_stage`; the warm start of :func:`.controller.warm_start` is then the last
  iterate itself); or from a start the MPC loads (:meth:`.in_place.HorizonInPlace.load`), where
  it returns to a structure met before with the stages it had then, its first stage of any
  length (:meth:`AlignedHorizon.renumber_at`).

The numbers are those of the update that builds the OCP, its formulation and its warm start,
bitwise. The OCP itself is made when asked (:meth:`AlignedHorizon.ocp`).
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .in_place import HorizonInPlace
from .row_gather import RowGather, inputs


@dataclass(frozen=True)
class HorizonNumbers:
    """The horizon of an update (module docstring): its ``structure`` (hashable; equal for
    horizons whose OCPs have the same groups), the time of each knot from its start ``times (K +
    1,)`` (:meth:`ocp.problem.OCP.times`), the initial state ``q0, v0, tau0`` (``tau0`` empty
    without a torque filter), the builder's ``plan`` (a vector of the numbers the groups' are
    made of) and ``numbers_of(plan)``, which makes them: per group in first-stage order its
    :class:`ocp.problem.GroupNumbers`, and the terminal cost terms (:attr:`groups`,
    :attr:`terminal`: those of ``plan``, made when first read); the OCP's ``disturbance (nv,)``
    (None: zero) and ``make()``, which makes its OCP. ``numbers_of`` is a function of the plan and
    the structure alone: the numbers of two horizons of one structure with one plan are one (what
    a structure's row gather, :mod:`.row_gather`, is found from)."""

    structure: object
    times: np.ndarray
    q0: np.ndarray
    v0: np.ndarray
    tau0: np.ndarray
    plan: np.ndarray
    numbers_of: Callable
    disturbance: np.ndarray | None
    make: Callable

    @functools.cached_property
    def _numbers(self) -> tuple:
        return self.numbers_of(self.plan)

    @property
    def groups(self) -> tuple:
        return self._numbers[0]

    @property
    def terminal(self) -> tuple:
        return self._numbers[1]

    def ocp(self):
        """The OCP of these numbers."""
        return self.make()


def within_first_stage(old_times, new_times, kind, dt) -> bool:
    """Whether the knots of a horizon at the times ``new_times`` start as those at ``old_times``
    (to the nanosecond) but the first, which starts when old's does or, old's first stage a
    contact stage (``kind``) of time step ``dt``, within it: a horizon moved within its first stage."""
    if len(old_times) != len(new_times):
        return False
    if len(old_times) > 2 and abs(float(old_times[1]) - float(new_times[1])) > 1e-9:
        return False  # times over 1e-9 apart never round alike: the next test fails here (a horizon moved by a stage)
    old_rounded, new_rounded = old_times[:-1].round(9), new_times[:-1].round(9)
    if not (old_rounded[1:] == new_rounded[1:]).all():
        return False
    return bool(
        old_rounded[0] == new_rounded[0]
        or (kind == "contact" and old_times[0] < new_times[0] < old_times[0] + dt - 1e-9)
    )


def _after_first(times) -> np.ndarray:
    """The times of the knots after the first from the end of the first stage, to the nanosecond."""
    return (times[1:] - times[1]).round(9)


class AlignedHorizon(HorizonInPlace):
    """The horizon of ``formulation``, its OCP starting at time ``t``, from its iterate ``it``
    (:meth:`of`; module docstring): each group's constant inputs (:class:`ocp.kernels.HeldRows`),
    the times of its knots, and the arrays of the compiled Newton step, its own from then on.
    ``structure``: that of the numbers of its OCP (:attr:`HorizonNumbers.structure`; None:
    unknown, no numbers renumber it)."""

    @classmethod
    def of(cls, formulation, it, t, scratch, structure, gathers) -> AlignedHorizon | None:
        """The aligned horizon of ``formulation`` from ``it``, its calls' blocks taken from
        ``scratch`` (:class:`.in_place.Scratch`), or None without a compiled horizon.
        ``gathers``: the :class:`.row_gather.RowGather` of each structure (None: none), a dict
        the horizons of one MPC share, where the first renumbering of a structure without one
        makes it."""
        horizon = formulation.compiled_horizon()
        return None if horizon is None else cls(formulation, horizon, it, t, scratch, structure, gathers)

    def __init__(self, formulation, horizon, it, t, scratch, structure, gathers):
        rows = tuple(formulation.stages.held_rows(g) for g in formulation.groups)
        super().__init__(formulation, horizon, it, rows, scratch)
        ocp = formulation.ocp
        first = ocp.stages[0]
        self.structure, self.gathers, self._made_times = structure, gathers, _after_first(ocp.times())
        self.times, self.kind, self.dt, self.last = t + ocp.times(), first.kind, first.dt, None

    def renumber(self, t, numbers: HorizonNumbers) -> bool:
        """Write the ``numbers`` of the horizon at time ``t`` (module docstring); False, nothing
        written, for numbers of another structure, knots that do not start as this horizon's
        within its first stage, or an initial state of other sizes or not finite."""
        times = t + numbers.times
        if numbers.structure != self.structure or not within_first_stage(self.times, times, self.kind, self.dt):
            return False
        return self._write(times, numbers)

    def knots_as(self, numbers: HorizonNumbers) -> bool:
        """Whether ``numbers`` are of this horizon's structure, their knots' times from the end
        of the first stage those of the OCP this horizon was made of (to the nanosecond): the same
        stages after a first contact stage of any length, whose time step is an input."""
        if numbers.structure != self.structure or self.kind != "contact":
            return False
        return np.array_equal(_after_first(numbers.times), self._made_times)

    def renumber_at(self, t, numbers: HorizonNumbers) -> bool:
        """Write the ``numbers`` of the horizon at time ``t``, whose start is then loaded: False,
        nothing written, for numbers that are not :meth:`knots_as` this horizon's, or an initial
        state of other sizes or not finite."""
        return self.knots_as(numbers) and self._write(t + numbers.times, numbers)

    def _write(self, times, numbers) -> bool:
        """The numbers written, the knots at ``times`` (:meth:`renumber`); False, nothing written,
        for an initial state of other sizes or not finite."""
        if not all(np.isfinite(x).all() for x in (numbers.q0, numbers.v0, numbers.tau0)):
            return False
        if not self.write_state(numbers.q0, numbers.v0, numbers.tau0):
            return False
        *own, terminal = self._inputs(numbers)
        for rows, x in zip(self.rows, own):
            rows.set(x)
        self._terminal[:] = terminal[0]
        self.times, self.dt, self.last = times, float(numbers.times[1] - numbers.times[0]), numbers
        return True

    def _inputs(self, numbers) -> list:
        """The constant inputs of ``numbers``: each group's, then the terminal cost's ``(1, n)``;
        by the structure's row gather where it has one (made here the first time, for numbers
        without a disturbance), else made the general way."""
        gathered = numbers.disturbance is None and self.structure is not None
        gather = self.gathers.get(self.structure, False) if gathered else None
        if gather:
            return gather(numbers.plan)
        f = self.formulation
        own = inputs(f.stages, f.groups, numbers)
        if gather is False:  # none tried for this structure yet
            self.gathers[self.structure] = RowGather.of(f.stages, f.groups, numbers, own)
        return own

    def gather_from(self, numbers):
        """Find the row gather of this horizon's structure from ``numbers``, those of the OCP it
        was made of, before any renumbering: their inputs are the rows it holds."""
        f = self.formulation
        own = [rows.rows for rows in self.rows] + [self._terminal[None].copy()]
        self.gathers[self.structure] = RowGather.of(f.stages, f.groups, numbers, own)

    def warm_start(self):
        """The iterate the last update reached: the next Newton step's start (that of
        :func:`.controller.warm_start` for a horizon moved within its first stage)."""
        self._moved = None
        self._start_from_step()

    def ocp(self):
        """The OCP of the horizon now."""
        return self.formulation.ocp if self.last is None else self.last.ocp()

    def retimed(self):
        """The formulation of this horizon's structure and knots, for what reads no other
        number of its OCP (the matching of :func:`.controller.warm_start`, and
        :meth:`ocp.formulation.Formulation.for_problem`): the first update's, its first stage
        of this horizon's time step. Its OCP's knots start when this horizon's do, to rounding
        (its other stages' time steps are the first update's), without making this OCP."""
        f = copy.copy(self.formulation)
        f.ocp = f.ocp.retimed(self.dt)
        return f
