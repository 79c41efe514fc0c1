"""A compiled horizon kept from one MPC update to the next: the arrays its compiled Newton step
reads and the blocks it writes (:meth:`ocp.horizon.CompiledHorizon.call_newton`), so that an
update that keeps the horizon's structure makes no OCP, formulation or warm start.

:class:`HorizonInPlace` holds those arrays for the groups of one formulation's compiled horizon,
from an iterate: the knots ``q, v, tau, lam``, the initial state, the terminal cost's constant
inputs and each group's ``u, w, beta, s, z``. Its updates (:mod:`.receding`: a horizon moved by a
stage; :mod:`.aligned`: a horizon renumbered) write their numbers into them (and a start, where
they load one: :meth:`HorizonInPlace.load`), then run compiled Newton steps
(:meth:`HorizonInPlace.newton_step`), each from where the last one reached
(:meth:`HorizonInPlace.advance`), as :func:`solvers.ipm.solve` runs them at a fixed barrier. An
``rti`` update ends at the last step (the next update's start), a ``newton`` update at the
iterate of the last linearization (:meth:`HorizonInPlace.hold`). What an update does not make,
the horizon makes when asked: its OCP (:meth:`HorizonInPlace.ocp`), the iterate reached
(:meth:`HorizonInPlace.stepped`) and the update's start (:meth:`HorizonInPlace.start`).
"""

from __future__ import annotations

import numpy as np

from liftoff.ocp.formulation import GroupVariables, Iterate
from liftoff.ocp.horizon import SCALARS, addresses

_KNOTS = ("q", "v", "tau", "lam")  # the compiled step's names of the knots, then of a group's stepped variables
_VARIABLES = ("u", "w", "beta_new", "s", "z")
_SECONDS = SCALARS.index("seconds")


class Scratch:
    """The blocks that the compiled Newton steps of horizons in place write, for one horizon in
    use at a time: the linearization's, the Riccati recursion's and the step's, each a view of
    one buffer per kind (a larger one made when a horizon needs it). An MPC's horizons then run
    their calls on the same memory, warm in the processor's caches (about 2 MB for a legged
    horizon). A horizon's step is read before the next horizon's call writes its own: the next
    update's start, or its copy."""

    def __init__(self):
        self._buffers: dict = {}

    def take(self, name, size, dtype=float) -> np.ndarray:
        """``size`` entries of the buffer ``name``."""
        buffer = self._buffers.get(name)
        if buffer is None or buffer.size < size:
            buffer = self._buffers[name] = np.empty(size, dtype)
        return buffer[:size]


class HorizonInPlace:
    """The arrays of the compiled Newton step of ``formulation``'s compiled ``horizon`` from its
    iterate ``it`` (module docstring), its own from then on; ``rows``: per group, an object whose
    ``write()`` puts the group's constant inputs into its workspace before a call; ``scratch``:
    the :class:`Scratch` its calls' blocks are taken from (None: its own)."""

    def __init__(self, formulation, horizon, it, rows, scratch=None):
        self.formulation, self.horizon, self.rows = formulation, horizon, rows
        s, scratch = horizon.structure, scratch or Scratch()
        self._arrays, self._iterate = _one_buffer(horizon.input_arrays(it))  # the calls' inputs, kept alive
        self._x = addresses(self._arrays)
        self.block, self.ints = scratch.take("linear", s.linear.size), scratch.take("ints", s.ints, np.intc)
        self.solution, self.step = scratch.take("solution", s.solution.size), scratch.take("step", s.step.size)
        q, v, tau, lam, *self._state0, self._terminal = self._arrays[:8]
        knots = [s.step.view(self.step, name) for name in _KNOTS]
        self._knots = tuple(zip((q, v, tau, lam), knots))  # (start, step) pairs
        self._groups = []  # per group, its (start, step) pairs of u, w, beta, s, z
        for i in range(len(it.groups)):
            starts = self._arrays[8 + 5 * i : 13 + 5 * i]
            self._groups.append(tuple(zip(starts, [s.step.view(self.step, (i, name)) for name in _VARIABLES])))
        self._pairs = self._knots + sum(self._groups, ())  # (start, step) of every array, knots first
        self._stepped = StepGather(entries(self.step_positions()))  # the last step's iterate, in the buffer's order
        self._reach(it)  # as if the last step had reached it
        self._moved = None  # the update's start, copied once a Newton step advances from it (advance)
        self._scalars = s.linear.view(self.block, "scalars")
        self.gains, self.feedforward = (s.solution.view(self.solution, name)[0] for name in ("K", "k"))

    def write_state(self, q0, v0, tau0) -> bool:
        """Write the initial state ``(q0, v0, tau0)`` (``tau0`` empty without a torque filter);
        False, nothing written, for a state of other sizes."""
        state = [np.asarray(x, dtype=float) for x in (q0, v0, tau0)]
        if any(x.shape != y.shape for x, y in zip(state, self._state0)):
            return False
        for x, y in zip(self._state0, state):
            x[:] = y
        return True

    def newton_step(self, eps, recursion) -> int:
        """The compiled Newton step at the barrier ``eps`` (``recursion``: the Riccati recursion's
        address) from the iterate the horizon holds: the call's status (0 made; 1 where the steps
        run one by one; 2 where the LQR is not convex, :meth:`ocp.horizon.CompiledHorizon.
        call_newton`). Made, :meth:`numbers` are the linearization's, :attr:`gains` and
        :attr:`feedforward` the first stage's, and :meth:`stepped` the iterate reached."""
        for rows in self.rows:
            rows.write()
        status = self.horizon.call_newton(self._x, eps, recursion, self.block, self.ints, self.solution, self.step)
        if status == 0:
            self.formulation.stages.kernel_seconds += float(self._scalars[_SECONDS])
        return status

    def advance(self):
        """The next Newton step starts from the iterate the last one reached (the update's start
        kept for :meth:`start`)."""
        if self._moved is None:
            self._moved = self._copy(0)
        self._start_from_step()

    def load(self, it):
        """The next Newton step starts from the iterate ``it`` of this horizon's structure, as if
        the last step had reached it (an update's warm start)."""
        self._reach(it)
        self._moved = None
        self._start_from_step()

    def gather_start(self, source, gather: StepGather):
        """The next Newton step starts from the entries of the step block of the horizon
        ``source`` (whose last step reached the iterate there) that ``gather`` takes, in the order
        of this horizon's iterate (of :meth:`step_positions`, :func:`.controller.warm_start`'s
        copies): :meth:`load` of an iterate whose entries are all copies, without making it. The
        step block is left to the next call."""
        gather(source.step, self._iterate)
        self._moved = None

    def step_positions(self) -> Iterate:
        """The iterate whose entries are the positions of the last step's in the step block (as
        floats, exact)."""
        q, v, tau, lam = (_positions(self.step, stepped) for _, stepped in self._knots)
        groups = tuple(GroupVariables(*(_positions(self.step, x) for _, x in pairs)) for pairs in self._groups)
        return Iterate(q, v, lam, groups, tau)

    def _reach(self, it):
        """``it`` written where the last step's iterate is."""
        arrays = (it.q, it.v, it.tau, it.lam, *(x for gv in it.groups for x in vars(gv).values()))
        for (_, stepped), x in zip(self._pairs, arrays, strict=True):
            stepped[:] = x

    def _start_from_step(self):
        """The iterate the last step reached into the arrays the next call starts from."""
        self._stepped(self.step, self._iterate)

    def hold(self):
        """The update ends at the iterate its last Newton step started from (``newton``: that of
        the policy's linearization): the next update's start."""
        for x, stepped in self._pairs:
            stepped[:] = x

    def numbers(self) -> dict:
        """The last linearization's numbers by name (:data:`ocp.horizon.SCALARS`)."""
        return dict(zip(SCALARS, self._scalars.tolist()))

    def first_stage(self) -> tuple:
        """``(q, v, tau, u, K)``: the first two knots of the iterate the last step started from,
        its first control plus the step's (``u_lin + k_0``) and the first stage's gains ``K_0``
        (new arrays; the first group holds the first stage)."""
        (q, _), (v, _), (tau, _), _ = self._knots
        u = self._groups[0][0][0]
        return q[:2].copy(), v[:2].copy(), tau[:2].copy(), u[0] + self.feedforward, self.gains.copy()

    def ocp(self):
        """The OCP of the horizon now."""
        raise NotImplementedError

    def start(self) -> Iterate:
        """A copy of the update's start: the iterate its first Newton step started from."""
        return self._copy(0) if self._moved is None else self._moved

    def stepped(self) -> Iterate:
        """A copy of the iterate the last update reached (the next update's start)."""
        return self._copy(1)

    def _copy(self, j) -> Iterate:
        """A copy of the start (``j = 0``) or of the step (1)."""
        q, v, tau, lam = (pair[j].copy() for pair in self._knots)
        groups = tuple(GroupVariables(*(pair[j].copy() for pair in pairs)) for pairs in self._groups)
        return Iterate(q, v, lam, groups, tau)


class StepGather:
    """``dst[:] = block[positions]`` for a step ``block``, as the copies of the runs of consecutive
    positions: an iterate's arrays lie in a step block one after the other (a horizon's own step:
    a run for the knots and one per group; a kept horizon's start from another's: a few per
    group), where a gather of each entry takes three times as long."""

    def __init__(self, positions):
        positions = np.asarray(positions, dtype=np.intp)
        ends = np.flatnonzero(np.diff(positions) != 1).tolist() + [len(positions) - 1]
        starts = [0] + [e + 1 for e in ends[:-1]]
        first = positions[starts].tolist() if len(positions) else []
        self._runs = [(a, b + 1, p, p + b + 1 - a) for a, b, p in zip(starts, ends, first)]

    def __call__(self, block, dst):
        for a, b, p, e in self._runs:
            dst[a:b] = block[p:e]


def entries(it: Iterate) -> np.ndarray:
    """The entries of ``it`` one after the other, in the order of a horizon's iterate in its
    buffer (:func:`_one_buffer`): the knots' ``q, v, tau, lam``, then each group's ``u, w, beta, s, z``."""
    arrays = [it.q, it.v, it.tau, it.lam, *(x for gv in it.groups for x in (gv.u, gv.w, gv.beta, gv.s, gv.z))]
    return np.concatenate([np.ravel(x) for x in arrays])


def _one_buffer(arrays) -> tuple:
    """Copies of a compiled horizon's input ``arrays`` (:meth:`ocp.horizon.CompiledHorizon.
    input_arrays`), in their order, as views of one buffer that holds the iterate's first (the
    knots', then each group's): ``(copies, the iterate's part of the buffer)``."""
    order = [0, 1, 2, 3, *range(8, len(arrays)), 4, 5, 6, 7]  # q0, v0, tau0 and the terminal inputs last
    buffer = np.empty(sum(x.size for x in arrays))
    views, at = [None] * len(arrays), 0
    for i in order:
        views[i] = buffer[at : at + arrays[i].size].reshape(arrays[i].shape)
        views[i][...] = arrays[i]
        at += arrays[i].size
    return views, buffer[: at - sum(arrays[i].size for i in range(4, 8))]


def _positions(block, x) -> np.ndarray:
    """The positions in ``block`` of the entries of its view ``x`` (contiguous), as floats (exact),
    in ``x``'s shape."""
    first = (x.__array_interface__["data"][0] - block.__array_interface__["data"][0]) // x.itemsize
    return np.arange(first, first + x.size, dtype=float).reshape(x.shape)
