"""A compiled horizon that recedes by a stage per update, in place: the updates of an MPC whose
builder says that its horizons recede (:mod:`.controller`), without an OCP, a formulation or a
warm start made per update.

Its horizons are one group of contact stages of one time step ``dt`` on a compiled lifted
horizon (:meth:`ocp.formulation.Formulation.compiled_horizon`), the horizon at ``t + dt`` that at
``t`` without its first stage and with one more at its end, with the same terminal cost. A
:class:`RecedingHorizon` keeps, from one update to the next, the arrays the compiled Newton step
reads (:meth:`ocp.horizon.CompiledHorizon.call_newton`) and the blocks it writes. An update one
stage later:

- moves the group's constant inputs by a stage (:meth:`RecedingHorizon.move`,
  :class:`ocp.kernels.MovingRows`: the new last stage's row made as its OCP's would be, the
  disturbance written on every row) and writes the measured state;
- moves the iterate the last update reached as :func:`.controller.warm_start` moves it to the
  horizon a stage later (:meth:`RecedingHorizon.warm_start`): stage ``k`` and knot ``k`` take
  those of ``k + 1``, the last stage and the last two knots keep their own;
- runs the compiled Newton steps of :class:`.in_place.HorizonInPlace` on those arrays.

The numbers are those of the update that builds the OCP, its formulation and its warm start,
bitwise.
"""

from __future__ import annotations

import dataclasses
from collections import deque

import numpy as np

from .in_place import HorizonInPlace


class RecedingHorizon(HorizonInPlace):
    """The horizon of ``formulation`` (:meth:`of`) from its stepped iterate ``it`` (the next
    update's start before it moves): its stages, initial state and disturbance, its constant
    inputs (:attr:`moving`), and the arrays of the compiled Newton step (module docstring), its
    own from then on. The formulation's maps keep the rows of its own problem."""

    @classmethod
    def of(cls, formulation, it) -> RecedingHorizon | None:
        """The receding horizon of ``formulation`` from ``it``, or None where its horizon does not
        recede in place (module docstring): not one group of contact stages of one time step, or
        no compiled horizon."""
        ocp, groups = formulation.ocp, formulation.groups
        if len(groups) != 1 or groups[0].kind != "contact" or len({s.dt for s in ocp.stages}) != 1:
            return None
        horizon = formulation.compiled_horizon()
        return None if horizon is None else cls(formulation, horizon, it)

    def __init__(self, formulation, horizon, it):
        ocp = formulation.ocp
        self.moving = formulation.stages.moving_rows(formulation.groups[0])
        super().__init__(formulation, horizon, it, (self.moving,))
        self.K, self.dt = ocp.K, ocp.stages[0].dt
        self.stages = deque(ocp.stages, maxlen=ocp.K)  # the horizon's stages, in order
        self.disturbance = ocp.disturbance

    def move(self, stage, q0, v0, tau0, disturbance):
        """Move the horizon's stages and constant inputs by one stage (module docstring):
        ``stage`` its new last one, ``(q0, v0, tau0)`` the initial state (``tau0`` empty without a
        torque filter), ``disturbance`` the OCP's (or None). ``ValueError``, nothing moved, for a
        stage of another kind, time step or structure, or a state of other sizes."""
        if stage.kind != "contact" or stage.dt != self.dt:
            raise ValueError(f"a receding horizon's stages are contact stages of dt = {self.dt}")
        after = self.moving.group.after(stage)  # ValueError for a stage of another structure
        if not self.write_state(q0, v0, tau0):
            raise ValueError("the initial state's sizes are not the horizon's")
        self.moving.move(after, disturbance)
        self.stages.append(stage)
        self.disturbance = None if disturbance is None else np.array(disturbance, dtype=float)

    def warm_start(self):
        """The iterate the last update reached moved by one stage (module docstring): the next
        Newton step's start."""
        self._moved = None
        last = self.K - 1
        for x, stepped in self._knots:
            x[:last], x[last:] = stepped[1 : last + 1], stepped[last:]
        for x, stepped in self._groups[0]:
            x[:last], x[last] = stepped[1:], stepped[last]

    def ocp(self):
        """The OCP of the horizon now: the first one's with this horizon's stages, initial state
        and disturbance."""
        q0, v0, tau0 = (x.copy() for x in self._state0)
        first = self.formulation.ocp
        return dataclasses.replace(
            first, q0=q0, v0=v0, tau0=tau0, stages=tuple(self.stages), disturbance=self.disturbance
        )
