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
- runs compiled Newton steps on those arrays (:meth:`RecedingHorizon.newton_step`), each from
  where the last one reached (:meth:`RecedingHorizon.advance`), as :func:`solvers.ipm.solve`
  runs them at a fixed barrier: each call linearizes, runs the Riccati recursion and steps, and
  the linearization decides whether its step is taken. An ``rti`` update ends at the last step
  (the next update's start), a ``newton`` update at the iterate of the last linearization
  (:meth:`RecedingHorizon.hold`).

The numbers are those of the update that builds the OCP, its formulation and its warm start,
bitwise. What an update does not make, the horizon makes when asked: its OCP (:meth:`ocp`), the
iterate reached (:meth:`stepped`) and the update's start (:meth:`start`).
"""

from __future__ import annotations

import dataclasses
from collections import deque

import numpy as np

from liftoff.ocp.formulation import GroupVariables, Iterate
from liftoff.ocp.horizon import SCALARS, addresses

_KNOTS = ("q", "v", "tau", "lam")  # the compiled step's names of the knots, then of a group's stepped variables
_VARIABLES = ("u", "w", "beta_new", "s", "z")


class RecedingHorizon:
    """The horizon of ``formulation`` (:meth:`of`) from its stepped iterate ``it`` (the next
    update's start before it moves): its stages, initial state and disturbance, its constant
    inputs (:attr:`rows`), and the arrays of the compiled Newton step (module docstring), its own
    from then on. The formulation's maps keep the rows of its own problem."""

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
        self.formulation, self.horizon, self.K, self.dt = formulation, horizon, ocp.K, ocp.stages[0].dt
        self.rows = formulation.stages.moving_rows(formulation.groups[0])
        self.stages = deque(ocp.stages, maxlen=ocp.K)  # the horizon's stages, in order
        self.disturbance = ocp.disturbance
        s = horizon.structure
        self._arrays = [x.copy() for x in horizon.input_arrays(it)]  # the calls' inputs, kept alive
        self._x = addresses(self._arrays)
        self.block, self.ints = np.empty(s.linear.size), np.empty(s.ints, dtype=np.intc)
        self.solution, self.step = np.empty(s.solution.size), np.empty(s.step.size)
        knots = [s.step.view(self.step, name) for name in _KNOTS]
        variables = [s.step.view(self.step, (0, name)) for name in _VARIABLES]
        q, v, tau, lam, *self._state0, _, u, w, beta, slacks, duals = self._arrays
        self._moves = (tuple(zip((q, v, tau, lam), knots)), tuple(zip((u, w, beta, slacks, duals), variables)))
        self._pairs = self._moves[0] + self._moves[1]  # (start, step) of every array, knots first
        for x, y in zip(knots + variables, (it.q, it.v, it.tau, it.lam, *vars(it.groups[0]).values())):
            x[:] = y  # as if the last step had reached it
        self._moved = None  # the update's start, copied once a Newton step advances from it (advance)
        self._scalars = s.linear.view(self.block, "scalars")
        self.gains, self.feedforward = (s.solution.view(self.solution, name)[0] for name in ("K", "k"))

    def move(self, stage, q0, v0, tau0, disturbance):
        """Move the horizon's stages and constant inputs by one stage (module docstring):
        ``stage`` its new last one, ``(q0, v0, tau0)`` the initial state (``tau0`` empty without a
        torque filter), ``disturbance`` the OCP's (or None). ``ValueError``, nothing moved, for a
        stage of another kind, time step or structure, or a state of other sizes."""
        if stage.kind != "contact" or stage.dt != self.dt:
            raise ValueError(f"a receding horizon's stages are contact stages of dt = {self.dt}")
        state = [np.asarray(x, dtype=float) for x in (q0, v0, tau0)]
        if any(x.shape != y.shape for x, y in zip(state, self._state0)):
            raise ValueError("the initial state's sizes are not the horizon's")
        self.rows.move(self.rows.group.after(stage), disturbance)
        self.stages.append(stage)
        self.disturbance = None if disturbance is None else np.array(disturbance, dtype=float)
        for x, y in zip(self._state0, state):
            x[:] = y

    def warm_start(self):
        """The iterate the last update reached moved by one stage (module docstring): the next
        Newton step's start."""
        self._moved = None
        last = self.K - 1
        knots, variables = self._moves
        for x, stepped in knots:
            x[:last], x[last:] = stepped[1 : last + 1], stepped[last:]
        for x, stepped in variables:
            x[:last], x[last] = stepped[1:], stepped[last]

    def newton_step(self, eps, recursion) -> int:
        """The compiled Newton step at the barrier ``eps`` (``recursion``: the Riccati recursion's
        address) from the iterate the horizon holds: the call's status (0 made; 1 where the steps
        run one by one; 2 where the LQR is not convex, :meth:`ocp.horizon.CompiledHorizon.
        call_newton`). Made, :meth:`numbers` are the linearization's, :attr:`gains` and
        :attr:`feedforward` the first stage's, and :meth:`stepped` the iterate reached."""
        self.rows.write()
        status = self.horizon.call_newton(self._x, eps, recursion, self.block, self.ints, self.solution, self.step)
        if status == 0:
            self.formulation.stages.kernel_seconds += self.numbers()["seconds"]
        return status

    def advance(self):
        """The next Newton step starts from the iterate the last one reached (the update's start
        kept for :meth:`start`)."""
        if self._moved is None:
            self._moved = self._copy(0)
        for x, stepped in self._pairs:
            x[:] = stepped

    def hold(self):
        """The update ends at the iterate its last Newton step started from (``newton``: that of
        the policy's linearization): the next update's start, before it moves."""
        for x, stepped in self._pairs:
            stepped[:] = x

    def numbers(self) -> dict:
        """The last linearization's numbers by name (:data:`ocp.horizon.SCALARS`)."""
        return dict(zip(SCALARS, self._scalars.tolist()))

    def first_stage(self) -> tuple:
        """``(q, v, tau, u, K)``: the first two knots of the iterate the last step started from,
        its first control plus the step's (``u_lin + k_0``) and the first stage's gains ``K_0``
        (new arrays)."""
        (q, _), (v, _), (tau, _), _ = self._moves[0]
        u = self._moves[1][0][0]
        return q[:2].copy(), v[:2].copy(), tau[:2].copy(), u[0] + self.feedforward, self.gains.copy()

    def ocp(self):
        """The OCP of the horizon now: the first one's with this horizon's stages, initial state
        and disturbance."""
        q0, v0, tau0 = (x.copy() for x in self._state0)
        first = self.formulation.ocp
        return dataclasses.replace(
            first, q0=q0, v0=v0, tau0=tau0, stages=tuple(self.stages), disturbance=self.disturbance
        )

    def start(self) -> Iterate:
        """A copy of the update's start: the moved iterate its first Newton step started from."""
        return self._copy(0) if self._moved is None else self._moved

    def stepped(self) -> Iterate:
        """A copy of the iterate the last update reached (the next update's start before it moves)."""
        return self._copy(1)

    def _copy(self, j) -> Iterate:
        """A copy of the start (``j = 0``) or of the step (1)."""
        q, v, tau, lam, *variables = (pair[j].copy() for pair in self._pairs)
        return Iterate(q, v, lam, (GroupVariables(*variables),), tau)
