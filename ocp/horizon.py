"""A lifted horizon's Newton step in two compiled calls (``group.c``): every group's
linearization, the terminal cost and the initial state's residual in one
(:meth:`CompiledHorizon.linearize`); every group's expansion and the step at the
fraction-to-boundary sizes in the other (:meth:`CompiledHorizon.step`). Or all of it in one
call, the Riccati recursion between them (:meth:`CompiledHorizon.newton_step`: a real-time
iteration's update). An exact Hessian's linearization is one call too, on the groups' calls
bound to the curvature their workspaces keep (:mod:`ocp.group`), which a fresh one computes
first with the compiled curvature kernels, with the terminal cost's curvature.

:meth:`ocp.formulation.Formulation.linearize`, ``direction`` and ``step`` otherwise go group by
group from Python (each group's compiled steps in one call, :mod:`ocp.group`) and make each
group's Python objects. A :class:`CompiledHorizon` runs the same compiled functions on the same
arrays, its sums in numpy's order: its results are theirs, bitwise. Its order differs in one
way: the groups' stage kernels all run first, those of one kernel one after the other (a
kernel's code, hundreds of kilobytes, stays in the caches from one group to the next). Each call's
outputs are views of one allocation; what does not change between calls (the groups'
``group_t``, the offsets of every output) is a :class:`Structure`, made once per sequence of
groups' workspaces and kept by the formulation's copies: an MPC's updates of a recurring horizon
pass only their arrays and knots.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from liftoff.dynamics import manifold
from liftoff.dynamics.memory import address, layout

from . import group, pdipm
from .lqr import LQR

_P, _I = ctypes.c_void_p, ctypes.c_int
# the arrays of a call's block in the order of group.c's offsets (L_..., S_...); a group's (D_...): in the
# linearization's block, then (after its pivots, in the int block) in the step's
_GROUP_LINEAR = ("r_p", "r_c", "gc", "stationarity", "norms", "LU", "T", "t", "seconds")
_GROUP_STEP = ("y", "dw", "beta", "ds", "dz", "steps", "u", "w", "beta_new", "s", "z")
_LINEAR = ("A", "B", "b", "Qxx", "Qxu", "Quu", "lx", "lu", "H_T", "g_T", "cost_T", "dx0", "scalars", "scratch")
_STEP = ("q", "v", "tau", "lam", "dq", "alpha")
_SOLUTION = ("P", "p", "K", "k", "dx", "du", "lam")  # liftoff_riccati's outputs, in its order
SCALARS = ("kkt_error", "cost", "violation", "l1", "log_slacks", "seconds")
KEPT = 1000  # the most horizon structures a formulation and its copies keep


class _Horizon(ctypes.Structure):
    """``horizon_t`` of ``group.c``."""

    _fields_ = [
        *((name, _I) for name in ("G", "K", "nq", "nv", "ntau", "nx", "nm")),
        *((name, _P) for name in ("groups", "desc", "at", "terminal")),
        ("terminal_n", _I),
        *((name, _P) for name in ("terminal_x", "integrate", "difference", "layout", "terminal_curvature")),
        ("fresh", _I),
    ]


class Structure:
    """What the calls of horizons of ``K`` stages share: their groups' compiled linearizations
    ``calls`` (:class:`ocp.group.GroupLinearization`, in order), the terminal ``kernel``, the
    ``model`` (``ntau`` torque states, ``nm`` controls per stage at most); the shapes of the
    outputs of each call and their offsets (``horizon_t``). The groups' workspaces are distinct
    (an OCP has one group per key): the linearization runs every group's kernel before the
    steps that read its outputs."""

    def __init__(self, calls, K, model, ntau, nm, kernel):
        if len({id(c.x) for c in calls}) < len(calls):
            raise ValueError("the groups of a compiled horizon must have workspaces of their own")
        nq, nv = model.nq, model.nv
        nx = 2 * nv + ntau
        self.calls, self.K, self.nx, self.nm = calls, K, nx, nm
        scratch = max([nx] + [c.S * c.ni for c in calls])
        shapes = [(K, nx, nx), (K, nx, nm), (K, nx), (K, nx, nx), (K, nx, nm), (K, nm, nm), (K, nx), (K, nm)]
        shapes += [(nx, nx), (nx,), (1,), (nx,), (len(SCALARS),), (scratch,)]
        linear = dict(zip(_LINEAR, shapes))
        step = dict(zip(_STEP, [(K + 1, nq), (K + 1, nv), (K + 1, ntau), (K + 1, nx), (K + 1, nv), (2,)]))
        pivots, ints = [], K  # the int block: the LQR's nu, then each group's pivots
        for i, c in enumerate(calls):
            S, nz, nw, ni = c.S, nx + c.nu, c.nw, c.ni
            shapes = [(S, ni), (S, ni), (S, c.ny), (S, c.ny), (3,), (S, nw, nw), (S, nw, nz), (S, nw), (1,)]
            linear.update(((i, name), shape) for name, shape in zip(_GROUP_LINEAR, shapes))
            shapes = [(S, nz), (S, nw), (S, nw), (S, ni), (S, ni), (2,), (S, c.nu), (S, nw), (S, nw), (S, ni), (S, ni)]
            step.update(((i, name), shape) for name, shape in zip(_GROUP_STEP, shapes))
            pivots.append(ints)
            ints += S * nw
        self.linear, self.step, self.ints, self.pivots = _Block(linear), _Block(step), ints, pivots
        shapes = [(K + 1, nx, nx), (K + 1, nx), (K, nm, nx), (K, nm), (K + 1, nx), (K, nm), (K + 1, nx)]
        self.solution = _Block(dict(zip(_SOLUTION, shapes)))
        desc = []
        for i, c in enumerate(calls):
            desc += [*(self.linear.start((i, name)) for name in _GROUP_LINEAR), pivots[i]]
            desc += [*(self.step.start((i, name)) for name in _GROUP_STEP), c.ni]
        self._desc = np.array(desc, dtype=np.intc)
        starts = [*map(self.linear.start, _LINEAR), 0, *map(self.step.start, _STEP)]  # 0: nu in the int block
        self._at = np.array(starts, dtype=np.intc)
        self._groups = (_P * len(calls))(*(ctypes.addressof(c._group) for c in calls))
        self.library = group._library()  # the calls' library: the groups' calls exist, so it is compiled
        self.terminal_x = np.zeros(kernel.n_in)
        integrate, difference, layout = manifold.compiled(model)
        self.horizon = _Horizon(
            len(calls), K, nq, nv, ntau, nx, nm, ctypes.addressof(self._groups), address(self._desc),
            address(self._at), ctypes.cast(kernel._batch, _P).value, kernel.n_in, address(self.terminal_x),
            integrate, difference, layout,
        )  # fmt: skip
        self._knots: dict = {}  # knots(): the groups' knot arrays met, by value

    def knots(self, indices) -> tuple:
        """The groups' knot ``indices`` (index arrays, in the calls' order) as ``int`` arrays and
        the array of their addresses, kept by value: an MPC's horizons of one structure repeat
        them. The calls fix each group's number of stages, so the indices' bytes one after the
        other tell them apart."""
        key = b"".join(k.tobytes() for k in indices)
        kept = self._knots.get(key)
        if kept is None:
            if len(self._knots) >= KEPT:  # knots that do not recur: start over
                self._knots.clear()
            arrays = [np.ascontiguousarray(k, dtype=np.intc) for k in indices]
            kept = self._knots[key] = (arrays, addresses(arrays))
        return kept


class _Block:
    """One allocation of named arrays of ``shapes`` (``{name: shape}``): where each starts (in
    doubles) and its view in a block."""

    def __init__(self, shapes: dict):
        self.size, parts, _ = layout(tuple(shapes.values()))
        self.parts = dict(zip(shapes, parts))

    def start(self, name) -> int:
        return self.parts[name][0]

    def view(self, block, name) -> np.ndarray:
        start, end, shape = self.parts[name]
        return block[start:end].reshape(shape)


class HorizonLinearization(NamedTuple):
    """A :meth:`CompiledHorizon.linearize`: the LQR, the terminal ``H_T, g_T``, ``dx0``, the
    scalars (``kkt_error, cost, violation, l1, log_slacks, seconds``), the call's blocks and its
    ``inputs``: the iterate, the arrays of it that the call read and their addresses' array."""

    lqr: LQR
    H_T: np.ndarray
    g_T: np.ndarray
    dx0: np.ndarray
    scalars: dict
    block: np.ndarray
    ints: np.ndarray
    inputs: tuple


class HorizonStep(NamedTuple):
    """A :meth:`CompiledHorizon.step`: per group its direction ``(du, dw, beta, ds, dz)``
    (:class:`Directions`) and its stepped variables ``(u, w, beta, s, z)``; the stepped knots ``q,
    v, tau, lam``; the step sizes."""

    directions: Sequence
    variables: tuple
    q: np.ndarray
    v: np.ndarray
    tau: np.ndarray
    lam: np.ndarray
    steps: tuple


class Directions(Sequence):
    """Per group of a :class:`Structure` its direction ``(du, dw, beta, ds, dz)`` in a step's
    ``block``, made when read (the step itself reads them in C)."""

    def __init__(self, structure: Structure, block):
        self.structure, self.block = structure, block

    def __len__(self) -> int:
        return len(self.structure.calls)

    def __getitem__(self, i) -> tuple:
        s, i = self.structure, range(len(self))[i]
        y, *rest = (s.step.view(self.block, (i, name)) for name in _GROUP_STEP[:5])
        return (y[:, s.nx :], *rest)


class CompiledHorizon:
    """The two calls (module docstring) for the OCP ``ocp`` of the :class:`Structure`
    ``structure``, its groups at ``knots`` (index arrays), their constant inputs written by
    ``prepare()`` before each linearization."""

    def __init__(self, structure: Structure, ocp, knots, constants, prepare):
        self.structure, self.ocp, self.prepare = structure, ocp, prepare
        self._knot_arrays, self._knots = structure.knots(knots)  # the arrays kept alive with their addresses
        self._constants = np.ascontiguousarray(constants, dtype=float)
        self._state0 = [np.ascontiguousarray(x, dtype=float) for x in (ocp.q0, ocp.v0, ocp.tau0)]

    def input_arrays(self, it) -> list:
        """The arrays the calls read at ``it``, contiguous, in their order: the knots ``q, v,
        tau, lam``, the initial state ``q0, v0, tau0``, the terminal cost's constant inputs,
        then each group's ``u, w, beta, s, z``."""
        arrays = [np.ascontiguousarray(x, dtype=float) for x in (it.q, it.v, it.tau, it.lam)]
        arrays += [*self._state0, self._constants]
        for gv in it.groups:
            arrays += [np.ascontiguousarray(x, dtype=float) for x in (gv.u, gv.w, gv.beta, gv.s, gv.z)]
        return arrays

    def _inputs(self, it) -> tuple:
        """The arrays of ``it`` the calls read (:meth:`input_arrays`), and their addresses' array."""
        arrays = self.input_arrays(it)
        return arrays, addresses(arrays)

    def _start(self, it, terminal_curvature=None, fresh=False) -> tuple:
        """Before a linearization at ``it`` (adding ``terminal_curvature`` to the terminal cost's
        Hessian, if given; ``fresh``: the groups' curvatures computed): its constant inputs
        written; the arrays of ``it`` it reads and their addresses' array (:meth:`_inputs`), and
        its blocks ``(block, ints)``."""
        s = self.structure
        self.prepare()
        s.horizon.terminal_curvature = None if terminal_curvature is None else address(terminal_curvature)
        s.horizon.fresh = fresh
        return (*self._inputs(it), np.empty(s.linear.size), np.empty(s.ints, dtype=np.intc))

    def linearize(self, it, eps, terminal_curvature=None, fresh=False) -> HorizonLinearization | None:
        """Every group's linearization at ``it`` for the barrier ``eps``, the terminal cost and
        ``dx0`` (:meth:`ocp.formulation.Formulation.linearize`), or None where that method's
        steps are to run (a singular ``Cw``, a value not finite: they say where). An exact
        Hessian's (the groups' calls bound to their curvature, :mod:`ocp.group`) adds
        ``terminal_curvature (nx, nx)`` to the terminal cost's, and the groups' curvatures kept
        or, ``fresh``, computed at ``it``."""
        s = self.structure
        arrays, x, block, ints = self._start(it, terminal_curvature, fresh)  # arrays: alive through the call and step
        status = s.library.liftoff_linearize_horizon(
            ctypes.byref(s.horizon), self._knots, x, float(eps), address(block), address(ints)
        )
        return None if _failed(status) else self._linearization(block, ints, (it, arrays, x))

    def _linearization(self, block, ints, inputs) -> HorizonLinearization:
        """The :class:`HorizonLinearization` of a linearization's ``block`` and ``ints`` made
        from ``inputs``."""
        s = self.structure
        view = s.linear.view
        lqr = LQR(*(view(block, name) for name in _LINEAR[:8]), ints[: s.K])
        scalars = dict(zip(SCALARS, view(block, "scalars").tolist()))
        terminal = (view(block, "H_T"), view(block, "g_T"), view(block, "dx0"))
        return HorizonLinearization(lqr, *terminal, scalars, block, ints, inputs)

    def group_outputs(self, lin: HorizonLinearization, i) -> dict:
        """The outputs of group ``i`` in ``lin`` (its residuals ``r_p, r_c``, condensed gradient
        ``gc``, ``stationarity``, ``norms``, LU factors ``LU`` and pivots ``piv``, ``T, t``, the
        kernel's ``seconds``), by name."""
        s, c = self.structure, self.structure.calls[i]
        out = {name: s.linear.view(lin.block, (i, name)) for name in _GROUP_LINEAR}
        start = s.pivots[i]
        out["piv"] = lin.ints[start : start + c.S * c.nw].reshape(c.S, c.nw)
        return out

    def step(self, it, lin: HorizonLinearization, dx, controls, lam) -> HorizonStep:
        """The expansion of the Riccati solution ``(dx, controls, lam)`` of ``lin`` (made at
        ``it``) in every group, and the step from ``it`` at the fraction-to-boundary sizes
        (:meth:`ocp.formulation.Formulation.direction`, ``max_steps`` and ``step``)."""
        s = self.structure
        arrays, x = lin.inputs[1:] if lin.inputs[0] is it else self._inputs(it)  # arrays: alive through the call
        solution = [np.ascontiguousarray(a, dtype=float) for a in (dx, controls, lam)]
        block = np.empty(s.step.size)
        s.library.liftoff_step_horizon(
            ctypes.byref(s.horizon), self._knots, x, address(lin.block), address(lin.ints), *map(address, solution),
            pdipm.FRACTION_TO_BOUNDARY, address(block),
        )  # fmt: skip
        return self._step(block)

    def _step(self, block) -> HorizonStep:
        """The :class:`HorizonStep` of a step's ``block``."""
        s = self.structure
        view = s.step.view
        variables = tuple(tuple(view(block, (i, name)) for name in _GROUP_STEP[6:]) for i in range(len(s.calls)))
        knots = (view(block, name) for name in _STEP[:4])
        return HorizonStep(Directions(s, block), variables, *knots, tuple(view(block, "alpha").tolist()))

    def newton_step(self, it, eps, recursion) -> tuple | None:
        """:meth:`linearize` at ``it``, the Riccati recursion of its LQR (``recursion``: the
        address of a compiled function of ``liftoff_riccati``'s signature, ``solvers/riccati.c``)
        and :meth:`step` from its solution, in one call: ``(linearization, solution, step)``,
        ``solution`` the recursion's outputs by name (``P, p, K, k, dx, du, lam``); ``(linearization,
        None, None)`` where the recursion finds the LQR not convex; None as :meth:`linearize`."""
        s = self.structure
        arrays, x, block, ints = self._start(it)  # arrays: alive through the call
        solution, step = np.empty(s.solution.size), np.empty(s.step.size)
        status = self.call_newton(x, eps, recursion, block, ints, solution, step)
        if status == 1:
            return None
        lin = self._linearization(block, ints, (it, arrays, x))
        if status == 2:
            return lin, None, None
        return lin, {name: s.solution.view(solution, name) for name in _SOLUTION}, self._step(step)

    def call_newton(self, x, eps, recursion, block, ints, solution, step) -> int:
        """The compiled call of :meth:`newton_step` on the inputs at the addresses ``x`` (those of
        :meth:`input_arrays`, the constant inputs written), into the blocks ``block, ints,
        solution, step`` (of the structure's sizes): 0 made, 1 where :meth:`linearize`'s steps are
        to run, 2 where the recursion finds the LQR not convex (the linearization made)."""
        s = self.structure
        status = s.library.liftoff_newton_horizon(
            ctypes.byref(s.horizon), self._knots, x, float(eps), address(block), address(ints), recursion,
            address(solution), pdipm.FRACTION_TO_BOUNDARY, address(step),
        )  # fmt: skip
        if status == -3:
            raise MemoryError("the Riccati recursion could not allocate its workspace")
        return status if status == 2 else int(_failed(status))


def addresses(arrays) -> ctypes.Array:
    """The addresses of ``arrays`` (contiguous), as the calls read them."""
    return (_P * len(arrays))(*map(address, arrays))


def _failed(status) -> bool:
    """Whether a linearization's ``status`` sends it group by group (True) or made it (False);
    raises for the statuses that are errors."""
    if status == -1:
        raise MemoryError("the group's linearization could not allocate its workspace")
    if status == -2:
        raise FloatingPointError("the stage kernel failed")
    return bool(status)
