"""The interior-point terms of a lifted group's linearization, in one pass over its stages.

For stages with variables ``y = (dx, du, dw)``, inequalities ``g(y) >= 0``
(:class:`ocp.inequalities.Inequalities`, Jacobian ``G``) with slacks ``s`` and duals ``z``
(:mod:`ocp.pdipm`), the local equalities ``c`` (Jacobian ``C``, multipliers ``beta``) and the
state equation ``b`` (Jacobian ``A``, costate ``lam_next``; ``lam`` the costate of the stage's
own state):

    r_p = g - s,    r_c = s z - eps,    grad = L_y - G^T z,
    H <- H + G^T diag(z / s) G,    g_c = grad + G^T ((r_c + z r_p) / s),
    stationarity = grad + C^T beta + A^T lam_next - (lam, 0),

with ``L_y`` the cost's gradient; ``H`` and ``g_c`` are what the condensing eliminates ``dw``
from (:mod:`ocp.condensing`). The KKT residual's parts are summed on the way: ``squares`` (of
the stationarity, ``b``, ``c``, ``r_p``, ``r_c``), the largest ``violation`` (of ``b``, ``c``
and the inequalities) and the ``l1`` norm of ``(b, c, r_p)``.

After the Riccati recursion, :func:`expand` gives the group's slack and dual directions and
their fraction-to-boundary step sizes from its primal direction (:func:`ocp.pdipm.expand`,
:func:`ocp.pdipm.fraction_to_boundary`).

:func:`terms` and :func:`expand` compute them with numpy (the reference) or with ``interior.c``
(the compiled backend).
"""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import NamedTuple

import numpy as np

from liftoff.dynamics.memory import address, bound

from . import pdipm


class Terms(NamedTuple):
    """The terms of the module docstring, per stage but the three norms."""

    r_p: np.ndarray
    r_c: np.ndarray
    H: np.ndarray
    g: np.ndarray
    stationarity: np.ndarray
    squares: float
    violation: float
    l1: float


def terms(ev, s, z, eps, beta, lam, lam_next, backend="numpy") -> Terms:
    """The :class:`Terms` of the evaluated stages ``ev`` (:class:`ocp.stages.StageEval`, whose
    ``H`` receives the inequalities' terms in place) at slacks ``s``, duals ``z``, barrier
    ``eps``, multipliers ``beta`` and costates ``lam``, ``lam_next``."""
    library = _library() if backend == "compiled" else None
    if library is None:
        return _numpy(ev, s, z, eps, beta, lam, lam_next)
    return _compiled(library, ev, s, z, eps, beta, lam, lam_next)


def _numpy(ev, s, z, eps, beta, lam, lam_next) -> Terms:
    ineq = ev.ineq
    r_p, r_c = pdipm.residuals(ineq.g, s, z, eps)
    grad = ev.g - ineq.transpose_dot(z)
    H, g = pdipm.condense(ineq, s, z, r_p, r_c, ev.H, grad.copy())
    stationarity = grad + np.einsum("swy,sw->sy", ev.C, beta) + np.einsum("sxy,sx->sy", ev.A, lam_next)
    stationarity[:, : lam.shape[1]] -= lam
    return Terms(r_p, r_c, H, g, stationarity, *norms(stationarity, ev.b, ev.c, r_p, r_c, ineq.g))


def norms(stationarity, b, c, r_p, r_c, g) -> tuple:
    """``(squares, violation, l1)`` of the module docstring, from the residuals and the values
    ``g`` of the inequalities."""
    squares = sum(float(np.sum(x * x)) for x in (stationarity, b, c, r_p, r_c))
    violation = max(float(np.max(np.abs(x), initial=0.0)) for x in (b, c, np.minimum(g, 0.0)))
    l1 = sum(float(np.sum(np.abs(x))) for x in (b, c, r_p))
    return squares, violation, l1


def _compiled(library, ev, s, z, eps, beta, lam, lam_next) -> Terms:
    ineq = ev.ineq
    arrays = (ev.H, ev.g, ev.c, ev.C, ev.b, ev.A, ineq.g, ineq.G, ineq.bounds)
    return bound(ev.calls, "interior", arrays, lambda: _Interior(library, ev, arrays))(s, z, eps, beta, lam, lam_next)


class _Interior:
    """``interior.c`` on the arrays of one evaluation (``arrays``, kept from one evaluation to the
    next by the compiled backend): their addresses and the bounds' columns made once, the
    iterate's arrays and fresh outputs per call."""

    def __init__(self, library, ev, arrays):
        ineq = ev.ineq
        self.arrays, self.function = arrays, library.liftoff_interior
        self.S, self.ny = ev.g.shape
        nx, nw, ng = ev.A.shape[1], ev.C.shape[1], ineq.ng
        bcol, bsign = _bound_columns(ineq.bounds)
        cols = _cone_columns(ineq)
        self.H = ev.H if ev.H.flags.c_contiguous else np.ascontiguousarray(ev.H)  # the terms are added in place
        fixed = [np.ascontiguousarray(x, dtype=float) for x in (ineq.g, ineq.G, ev.g, ev.c, ev.C, ev.b, ev.A)]
        self._alive = (bcol, bsign, cols, fixed)
        g_ineq, G, g, c, C, b, A = map(address, fixed)
        heads = (self.S, self.ny, nx, nw, ng, len(bcol), address(bcol), address(bsign), len(cols), address(cols))
        self._head = (*heads, g_ineq, G)
        self._constraints, self._dynamics, self._out = (g, c, C), (b, A), address(self.H)
        self.rows = ineq.g.shape[1]  # the cones' and the bounds'

    def __call__(self, s, z, eps, beta, lam, lam_next) -> Terms:
        s, z, beta, lam, lam_next = (np.ascontiguousarray(x, dtype=float) for x in (s, z, beta, lam, lam_next))
        S, ny = self.S, self.ny
        r_p, r_c = np.empty((S, self.rows)), np.empty((S, self.rows))
        g, stationarity, sums = np.empty((S, ny)), np.empty((S, ny)), np.empty(3)
        status = self.function(
            *self._head, address(s), address(z), float(eps), *self._constraints, address(beta), *self._dynamics,
            address(lam), address(lam_next), self._out, *map(address, (r_p, r_c, g, stationarity, sums)),
        )  # fmt: skip
        if status < 0:
            raise MemoryError("the interior-point terms could not allocate their workspace")
        squares, violation, l1 = sums.tolist()
        return Terms(r_p, r_c, self.H, g, stationarity, squares, violation, l1)


def expand(ineq, dxu, dw, s, z, r_p, r_c, backend="numpy", calls=None) -> tuple:
    """``(ds, dz, (primal, dual))``: the slack and dual directions of the stages of a group with
    the inequalities ``ineq`` (:class:`ocp.inequalities.Inequalities`) at slacks ``s`` and duals
    ``z`` (their residuals ``r_p``, ``r_c`` at the linearization), for the primal direction
    ``dy = (dxu, dw)``, and the fraction-to-boundary step sizes of the slacks and of the duals.
    ``calls``: the dict that keeps the compiled call for the arrays of ``ineq``
    (:func:`dynamics.memory.bound`), or None."""
    if not ineq.g.shape[1]:  # no inequalities (impulse stages)
        return ineq.g, ineq.g, (1.0, 1.0)
    library = _library() if backend == "compiled" else None
    if library is None:
        ds, dz = pdipm.expand(ineq, np.concatenate((dxu, dw), axis=1), s, z, r_p, r_c)
        return ds, dz, (pdipm.fraction_to_boundary(s, ds), pdipm.fraction_to_boundary(z, dz))
    return bound(calls, "expand", (ineq.G, ineq.bounds), lambda: _Expand(library, ineq))(dxu, dw, s, z, r_p, r_c)


class _Expand:
    """``interior.c``'s expansion for the inequalities of one evaluation: the addresses of their
    Jacobian and the bounds' columns made once, the direction's arrays and fresh outputs per call."""

    def __init__(self, library, ineq):
        G, cols = np.ascontiguousarray(ineq.G, dtype=float), _cone_columns(ineq)
        bcol, bsign = _bound_columns(ineq.bounds)
        self.arrays, self.function = (ineq.G, ineq.bounds), library.liftoff_interior_expand
        self._alive, (self.S, self.rows), self.ny = (G, bcol, bsign, cols), ineq.g.shape, G.shape[2]
        self._head = (G.shape[1], len(bcol), address(bcol), address(bsign), len(cols), address(cols), address(G))

    def __call__(self, dxu, dw, s, z, r_p, r_c) -> tuple:
        dxu, dw, s, z, r_p, r_c = (np.ascontiguousarray(x, dtype=float) for x in (dxu, dw, s, z, r_p, r_c))
        ds, dz, steps = np.empty((self.S, self.rows)), np.empty((self.S, self.rows)), np.empty(2)
        self.function(
            self.S, self.ny, dxu.shape[1], *self._head, *map(address, (dxu, dw, s, z, r_p, r_c)),
            pdipm.FRACTION_TO_BOUNDARY, address(ds), address(dz), address(steps),
        )  # fmt: skip
        return ds, dz, tuple(steps.tolist())


def _bound_columns(bounds) -> tuple:
    """``(bcol, bsign)``: the column of ``y`` and the sign of each of the signed one-hot rows ``bounds``."""
    bcol = np.ascontiguousarray(np.argmax(np.abs(bounds), axis=1), dtype=np.intc)
    return bcol, np.ascontiguousarray(bounds[np.arange(len(bcol)), bcol])


def _cone_columns(ineq) -> np.ndarray:
    """The columns of ``y`` where the cones' Jacobian ``G`` can be nonzero, as C integers."""
    columns = np.arange(ineq.G.shape[2]) if ineq.columns is None else ineq.columns
    return np.ascontiguousarray(columns, dtype=np.intc)


_SOURCE = Path(__file__).with_name("interior.c")
_P, _I = ctypes.c_void_p, ctypes.c_int
_FUNCTIONS = {
    "liftoff_interior": (_I, (_I,) * 6 + (_P, _P, _I) + (_P,) * 5 + (ctypes.c_double,) + (_P,) * 14),
    "liftoff_interior_expand": (None, (_I,) * 5 + (_P, _P, _I) + (_P,) * 8 + (ctypes.c_double,) + (_P,) * 3),
}


def _library():
    from liftoff.dynamics.codegen import compiled_library

    return compiled_library(_SOURCE, _FUNCTIONS)
