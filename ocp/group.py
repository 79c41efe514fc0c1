"""A lifted group's linearization, and the expansion of its Newton step, each in one compiled
call (``group.c``).

:meth:`ocp.kernels.CompiledStages.evaluate`, :func:`ocp.interior.terms` and
:func:`ocp.condensing.condense` run a group's compiled steps one after the other from Python:
its rows of the iterate written into the stage kernel's input, the kernel, the scatter of its
nonzeros into the group's blocks, the interior-point terms and the condensing into the LQR;
:func:`ocp.condensing.expand` and :func:`ocp.interior.expand` expand its step.
:class:`GroupLinearization` runs the same compiled functions on the same arrays, the rows
gathered in C, their results bitwise those of the steps one by one, without the Python between
them. It is bound to one workspace of :mod:`ocp.kernels`: the addresses of its arrays, of the
kernel's batch function and of the other libraries' functions taken once.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np

from liftoff.dynamics import codegen
from liftoff.dynamics.memory import address, outputs

from . import condensing, interior, pdipm

_P, _I = ctypes.c_void_p, ctypes.c_int


class _Group(ctypes.Structure):
    """``group_t`` of ``group.c``."""

    _fields_ = [
        *((name, _I) for name in ("S", "n_in", "nq", "nv", "nu", "ntau", "m")),
        *((name, _I) for name in ("q", "v", "a", "u", "q_next", "v_next", "tau", "tau_next")),
        *((name, _P) for name in ("f", "x", "kernel", "outputs", "scatter")),
        ("blocks", _I),
        *((name, _P) for name in ("nnz", "size", "count", "src_index", "dst_index", "src", "dst", "interior")),
        *((name, _I) for name in ("ny", "nx", "nw", "ng", "nb", "nc")),
        *((name, _P) for name in ("bcol", "cols", "bsign", "g", "G", "gy", "c", "C", "b", "A", "H", "lam", "lam_next")),
        ("condense", _P),
        *((name, _I) for name in ("nzw", "nww", "nar", "nac")),
        *((name, _P) for name in ("zw", "ww", "ar", "ac", "expand", "interior_expand", "curvature", "H_kernel")),
        ("curvature_kernel", _P),
        ("curvature_n", _I),
        *((name, _P) for name in ("curvature_x", "curvature_out")),
        *((name, _I) for name in ("curvature_nnz", "curvature_width")),
        *((name, _P) for name in ("curvature_src", "curvature_dst", "curvature_f")),
    ]


class Exact:
    """What a group's call for the exact Hessian binds (a workspace's
    :class:`ocp.kernels.Curvature`): ``H``, the kernel's ``H`` block with the dense ``curvature
    (S, ny, ny)`` added, which the later steps read; for a fresh curvature, the address of its
    compiled ``kernel``'s batch function (None: the curvature is only reused), its input rows ``x``
    and output ``out``, the output's entries ``src`` written into the curvature's ``dst`` (per
    stage) and the input column ``f`` of each force's multiplier."""

    def __init__(self, H, curvature, kernel, x, out, src, dst, f):
        self.H, self.curvature, self.kernel, self.x, self.out = H, curvature, kernel, x, out
        self.src, self.dst, self.f = (np.ascontiguousarray(a, dtype=np.intc) for a in (src, dst, f))
        self._out = (_P * 1)(address(out))

    def fields(self, H_kernel) -> tuple:
        """The values of ``group_t``'s curvature fields, ``H_kernel`` the kernel's ``H`` block."""
        return (
            address(self.curvature), address(H_kernel), self.kernel, self.x.shape[1], address(self.x),
            ctypes.addressof(self._out), len(self.src), self.out.shape[1], *map(address, (self.src, self.dst, self.f)),
        )  # fmt: skip


_NO_CURVATURE = (None, None, None, 0, None, None, 0, 0, None, None, None)  # group_t's curvature fields, Gauss-Newton's


class GroupLinearization:
    """``group.c`` on a workspace of a group of ``S`` stages: its kernel's input ``x`` (the
    variables' ``columns`` in it, the forces' ``f_columns``), the kernel's ``outputs``, the
    group's ``blocks`` (cost, gradient, ``H``, ``c``, ``C``, ``b``, ``A``) and the :class:`Blocks`
    map ``scatter`` between them, its inequalities ``ineq`` (on the blocks' arrays) and the
    condensing's ``supports``; ``nu`` controls (0 at impulse stages), ``nx`` the state's tangent.
    ``exact``: None, or an :class:`Exact` for the exact Hessian (:meth:`ocp.kernels.CompiledStages.curvature`):
    its dense curvature added to the kernel's ``H`` block into another ``H``, which the later
    steps read (``supports`` then those of both). None (:func:`bind`) without a compiled kernel
    or library."""

    def __init__(
        self, library, functions, x, columns, f_columns, outputs, blocks, scatter, ineq, supports, nx, nu, exact=None
    ):
        _, gy, H_kernel, c, C, b, A = blocks[:7]
        H = H_kernel if exact is None else exact.H
        S, ny, nw = len(x), gy.shape[1], c.shape[1]
        self.S, self.nx, self.nu, self.nw, self.ny, self.ni = S, nx, nu, nw, ny, ineq.g.shape[1]
        self.H, self.x, self.function = H, x, library.liftoff_linearize_group
        bcol, bsign = interior._bound_columns(ineq.bounds)
        cols = interior._cone_columns(ineq)
        g, G = (np.ascontiguousarray(a, dtype=float) for a in (ineq.g, ineq.G))
        f = np.ascontiguousarray(f_columns, dtype=np.intc)
        lam, lam_next = np.empty((S, nx)), np.empty((S, nx))
        src = (_P * len(blocks))(*map(address, outputs[: len(blocks)]))
        dst = (_P * len(blocks))(*map(address, blocks))
        out = (_P * len(outputs))(*map(address, outputs))
        self._alive = (bcol, bsign, cols, g, G, f, lam, lam_next, src, dst, out, scatter, supports, blocks, x, exact)
        sizes = {name: (at.start, at.stop - at.start) for name, at in columns.items() if name != "static"}
        zw, ww, ar, ac = supports
        batch, scatter_function, interior_function, condense_function, *expansions = functions
        self._group = _Group(
            S, x.shape[1], sizes["q"][1], sizes["v"][1], nu, sizes["tau"][1], len(f),
            sizes["q"][0], sizes["v"][0], sizes["a"][0], sizes["u"][0] if nu else -1, sizes["q_next"][0],
            sizes["v_next"][0], sizes["tau"][0], sizes["tau_next"][0],
            address(f), address(x), batch, ctypes.addressof(out), scatter_function,
            len(blocks), *map(address, (scatter.nnz, scatter.sizes, scatter.counts)),
            address(scatter.src_index), address(scatter.dst_index), ctypes.addressof(src), ctypes.addressof(dst),
            interior_function,
            ny, nx, nw, G.shape[1], len(bcol), len(cols), address(bcol), address(cols), address(bsign),
            *map(address, (g, G, gy, c, C, b, A, H, lam, lam_next)),
            condense_function,
            len(zw), len(ww), len(ar), len(ac), *map(address, supports), *expansions,
            *(_NO_CURVATURE if exact is None else exact.fields(H_kernel)),
        )  # fmt: skip
        self.fresh = exact is not None and exact.kernel is not None  # whether it can compute its curvature
        self.expand_function = library.liftoff_expand_group

    def __call__(self, index, q, v, tau, u, w, s, z, eps, beta, lam, lqr) -> tuple:
        """``(terms, condensed, seconds)`` of the group's stages at knots ``index`` of the iterate
        ``(q, v, tau, lam)`` (every knot) with the group's variables ``(u, w, s, z, beta)``, the
        barrier ``eps``, condensed into ``lqr``: the :class:`ocp.interior.Terms`, the
        :class:`ocp.condensing.Condensed` (None where ``Cw`` is singular) and the kernel's time."""
        S, nw, ny, ni, nz = self.S, self.nw, self.ny, self.ni, self.nx + self.nu
        rows = np.ascontiguousarray(index, dtype=np.intc)
        shapes = ((S, ni), (S, ni), (S, ny), (S, ny), (3,), (S, nw, nw), (S, nw, nz), (S, nw), (1,))
        (r_p, r_c, gc, st, norms, LU, T, t, seconds), at = outputs(*shapes)
        piv = np.empty((S, nw), dtype=np.intc)
        variables = [np.ascontiguousarray(x, dtype=float) for x in (q, v, tau, u, w, s, z)]
        beta, lam = (np.ascontiguousarray(x, dtype=float) for x in (beta, lam))
        lqr.nu[rows] = self.nu
        at_rows = address(rows)
        status = self.function(
            ctypes.byref(self._group), at_rows, *map(address, variables), float(eps), address(beta), address(lam),
            *at[:6], address(piv), *at[6:8], at_rows, lqr.B.shape[2], (_P * 8)(*lqr.addresses), 0, at[8],
        )  # fmt: skip
        if status == -1:
            raise MemoryError("the group's linearization could not allocate its workspace")
        if status == -2:
            raise FloatingPointError("the stage kernel failed")
        squares, violation, l1 = norms.tolist()
        terms = interior.Terms(r_p, r_c, self.H, gc, st, squares, violation, l1)
        condensed = None if status > 0 else condensing.Condensed(T, t, lqr, index, (LU, piv))
        return terms, condensed, float(seconds[0])

    def expand(self, index, dx, controls, lam, gc, condensed, s, z, r_p, r_c) -> tuple:
        """``(du, dw, beta, ds, dz, (primal, dual))``: the expansion of the Newton step ``(dx, du)``
        (every knot's ``dx``, every stage's ``controls (K, nm)``, the costates ``lam`` of every
        knot) at the group's stages at knots ``index``, linearized with the gradient ``gc`` and
        ``condensed`` (its LU factors) at slacks ``s`` and duals ``z`` with residuals ``r_p``,
        ``r_c``: :func:`ocp.condensing.expand` and :func:`ocp.interior.expand`, bitwise."""
        S, nw, ni, nx = self.S, self.nw, self.ni, self.nx
        rows = np.ascontiguousarray(index, dtype=np.intc)
        (y, dw, beta, ds, dz, steps), at = outputs((S, nx + self.nu), (S, nw), (S, nw), (S, ni), (S, ni), (2,))
        LU, piv = condensed.factors
        arrays = [np.ascontiguousarray(x) for x in (dx, controls, lam, gc, LU, piv, condensed.T, condensed.t)]
        arrays += [np.ascontiguousarray(x, dtype=float) for x in (s, z, r_p, r_c)]
        self.expand_function(
            ctypes.byref(self._group), address(rows), *map(address, arrays[:2]), controls.shape[1],
            *map(address, arrays[2:]), pdipm.FRACTION_TO_BOUNDARY, *at,
        )  # fmt: skip
        return y[:, nx:], dw, beta, ds, dz, tuple(steps.tolist())


def bind(kernel, scatter_library, x, columns, f_columns, outputs, blocks, scatter, ineq, supports, nx, nu, exact=None):
    """The :class:`GroupLinearization` of a workspace (its arguments; ``scatter_library``: that of
    ``scatter.c``), or None when the kernel is interpreted or a library is not compiled (the
    steps then run one by one)."""
    batch = getattr(kernel, "_batch", None)
    library, interior_library, condensing_library = _library(), interior._library(), condensing._library()
    if batch is None or any(lib is None for lib in (library, scatter_library, interior_library, condensing_library)):
        return None
    functions = (
        ctypes.cast(batch, _P).value,
        _function(scatter_library, "liftoff_scatter"),
        _function(interior_library, "liftoff_interior"),
        _function(condensing_library, "liftoff_condense"),
        _function(condensing_library, "liftoff_expand"),
        _function(interior_library, "liftoff_interior_expand"),
    )
    arrays = (x, columns, f_columns, outputs, blocks, scatter, ineq, supports)
    return GroupLinearization(library, functions, *arrays, nx, nu, exact)


def _function(library, name) -> int:
    return ctypes.cast(getattr(library, name), _P).value


_SOURCE = Path(__file__).with_name("group.c")
_FUNCTIONS = {
    "liftoff_linearize_group": (_I, (_P,) * 9 + (ctypes.c_double,) + (_P,) * 12 + (_I, _P, _I, _P)),
    "liftoff_expand_group": (None, (_P,) * 4 + (_I,) + (_P,) * 10 + (ctypes.c_double,) + (_P,) * 6),
    "liftoff_linearize_horizon": (_I, (_P, _P, _P, ctypes.c_double, _P, _P)),
    "liftoff_step_horizon": (None, (_P,) * 8 + (ctypes.c_double, _P)),
    "liftoff_newton_horizon": (_I, (_P, _P, _P, ctypes.c_double, _P, _P, _P, _P, ctypes.c_double, _P)),
}


def _library():
    return codegen.compiled_library(_SOURCE, _FUNCTIONS)
