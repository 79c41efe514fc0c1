"""Condensing of lifted variables out of a Newton step, and their expansion (seed 004 III-A, B).

A lifted stage has, besides the state ``dx`` and control ``du``, variables ``dw`` (``(da, df)``
at contact stages, ``(ddv, dLambda)`` at impulse stages) fixed by as many local equalities

    Cx dx + Cu du + Cw dw + c = 0                          (seed 004 eq. 21, 32)

with ``Cw`` square and invertible (the matrix ``[[M, J^T], [J, 0]]`` of eq. 23, up to signs).
They also appear in the state equation ``dx_{i+1} = Ax dx + Au du + Aw dw + b`` and in the
cost ``1/2 y^T H y + g^T y`` with ``y = (dx, du, dw)``. Eliminating
``dw = Tx dx + Tu du + t`` (``T = -Cw^-1 C``, ``t = -Cw^-1 c``) leaves the LQR of
:mod:`ocp.lqr`. After the Riccati recursion, the expansion recovers ``dw`` and the multiplier
``beta`` of the local equalities from the stationarity in ``w`` (eq. 24-25, 33):

    H_wy y + g_w + Cw^T beta + Aw^T lam_{i+1} = 0

for the Lagrangian ``cost + beta^T (C y + c) + lam_{i+1}^T (A y + b - dx_{i+1})``.
All functions take arrays with a leading axis over the stages of one kind. The condensed blocks
are written into an :class:`ocp.lqr.LQR`, the whole problem's when the caller passes it with the
stages' indices (``into``), else one of the stages alone. With
``backend="compiled"``, :func:`condense` and :func:`expand` run the same equations as C loops
over the stages (``condensing.c``, ``T^T H_ww T`` by scipy's BLAS), which keep the LU factors of
``Cw`` for the expansion.

**Redundant contacts** (the same foot listed twice, or any set whose Jacobian ``J`` has rank
below its ``m`` rows) make ``Cw`` singular: ``(da, df) = (0, n)`` with ``J^T n = 0`` changes no
equality (the split of the forces between the redundant rows), and the rows ``(0, n)`` of the
contact equalities are combinations of the others. :func:`condense` with ``redundant=True``
(:func:`condense_redundant`) solves such stages as seed 000 makes the dynamics robust, in one
rank-revealing factorization instead of LU: the SVD of ``Cw`` gives its pseudo-inverse, whose
``dw = -Cw^+ (C_z dz + c)`` is the least-norm (least-squares if inconsistent) solution, the
limit of seed 000's proximal iterations (eq. 18) started from zero forces, which is what
:func:`dynamics.constrained_dynamics` computes; and the null space ``N`` of ``Cw``, along which
the lifted formulation minimizes the stage's cost (the friction cones' barrier terms on the
redundant forces): ``dw = dw_0 - N (N^T H_ww N)^+ N^T (H_wz dz + H_ww dw_0 + g_w)`` (no term of
the state equation: ``A_w N = 0``, the split moves no acceleration). That is the exact Newton
step of the lifted stage. Without a cost on the split, each step is least-norm, and so are the
forces when ``N`` does not move with the configuration (a contact listed twice, two points of
one body); when it does (a 3D contact on an elbow below a 6D hand), the steps add up to forces
slightly off the least-norm split, along ``N`` (2e-4 N on Talos in
``tests/test_talos_wall_ocp.py``, the motion that of the non-lifted formulation). The
non-lifted formulation (``lifted=False``) takes the least-norm derivative only: its forces are
the least-norm ones of the dynamics. Nothing changes for stages that are not redundant: the
LU path is taken unless asked, and this one costs an SVD of ``Cw`` per stage (numpy, for
either backend).
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from liftoff.dynamics.memory import address, bound

from .lqr import LQR, StageLQR


@dataclass(frozen=True)
class LiftedStages:
    """Linearized lifted stages, stacked over ``S`` stages: cost ``H (S, ny, ny)``, ``g (S, ny)``
    in ``y = (dx, du, dw)``; local equalities ``C (S, nw, ny)``, ``c (S, nw)``; state equation
    ``A (S, nx, ny)``, ``b (S, nx)``. ``calls``: where the compiled condensing keeps its call
    bound to ``H, C, c, A, b`` (:attr:`ocp.stages.StageEval.calls`), or None."""

    nx: int
    nu: int
    H: np.ndarray
    g: np.ndarray
    C: np.ndarray
    c: np.ndarray
    A: np.ndarray
    b: np.ndarray
    calls: dict | None = None

    @property
    def nw(self) -> int:
        return self.C.shape[1]


@dataclass(frozen=True)
class Condensed:
    """The eliminated stages: ``dw = T [dx; du] + t``, and the condensed LQR blocks, the stages
    ``index`` of ``lqr`` (copies read out: ``A (S, nx, nx)``, ``B (S, nx, nu)``, ``b (S, nx)``,
    ``Q (S, nx + nu, nx + nu)``, ``l (S, nx + nu)``)."""

    T: np.ndarray  # (S, nw, nx + nu)
    t: np.ndarray  # (S, nw)
    lqr: LQR
    index: np.ndarray
    factors: tuple | None = None  # LU factors and pivots of Cw (compiled condensing)
    pinv: np.ndarray | None = None  # (S, nw, nw) the pseudo-inverse of Cw (redundant stages)

    @property
    def _nu(self) -> int:
        return self.T.shape[2] - self.lqr.A.shape[1]

    @property
    def A(self) -> np.ndarray:
        return self.lqr.A[self.index]

    @property
    def B(self) -> np.ndarray:
        return self.lqr.B[self.index, :, : self._nu]

    @property
    def b(self) -> np.ndarray:
        return self.lqr.b[self.index]

    @property
    def Q(self) -> np.ndarray:
        lqr, i, nu = self.lqr, self.index, self._nu
        Qxu = lqr.Qxu[i, :, :nu]
        return np.block([[lqr.Qxx[i], Qxu], [np.swapaxes(Qxu, 1, 2), lqr.Quu[i, :nu, :nu]]])

    @property
    def l(self) -> np.ndarray:  # noqa: E743
        return np.concatenate((self.lqr.lx[self.index], self.lqr.lu[self.index, : self._nu]), axis=1)

    def stage(self, s: int, nx: int) -> StageLQR:
        return self.lqr.stage(int(self.index[s]))


def _support(X, axis):
    """Indices along ``axis`` (1: rows, 2: columns) of a stack ``X (S, m, n)`` where some
    entry is not zero."""
    return np.flatnonzero(np.any(X != 0, axis=(0, 3 - axis)))


def eliminate(H, g, A, b, nz, T, t, into=None) -> Condensed:
    """Substitute ``dw = T z + t`` (``z = (dx, du)``, the first ``nz`` entries of ``y``) into the
    cost ``H, g`` and state equation ``A, b``, the blocks written into ``into`` (``(lqr,
    index)``, module docstring). The non-lifted formulation calls it with the
    derivatives of the constrained dynamics as ``T`` and ``t = 0``.

    With ``y = (z, dw)`` the products are taken by blocks, ``Q = H_zz + H_zw T + (H_zw T)^T +
    T^T H_ww T``, each over the rows and columns of ``H_zw``, ``H_ww`` and ``A_w`` that are not
    zero at every stage (typically ``H_zw = 0``, ``H_ww`` on the forces of the friction cones
    only, ``A_w`` the ``dt`` block of the accelerations): no product with structural zeros."""
    Hzw, Hww, Aw = H[:, :nz, nz:], H[:, nz:, nz:], A[:, :, nz:]
    Q, l = H[:, :nz, :nz].copy(), g[:, :nz] + np.einsum("szw,sw->sz", np.swapaxes(T, 1, 2), g[:, nz:])
    cols = _support(Hzw, 2)
    if len(cols):
        HzwT = Hzw[:, :, cols] @ T[:, cols]
        Q += HzwT + np.swapaxes(HzwT, 1, 2)
        l += np.einsum("szw,sw->sz", Hzw[:, :, cols], t[:, cols])
    ww = _support(Hww, 1)
    if len(ww):
        Hs, Ts = Hww[:, ww[:, None], ww], T[:, ww]
        Q += np.swapaxes(Ts, 1, 2) @ (Hs @ Ts)
        l += np.einsum("swz,sw->sz", Ts, np.einsum("svw,sw->sv", Hs, t[:, ww]))
    rows, cols = _support(Aw, 1), _support(Aw, 2)
    A_full, b = A[:, :, :nz].copy(), b.copy()
    if len(rows) and len(cols):
        As = Aw[:, rows[:, None], cols]
        A_full[:, rows] += As @ T[:, cols]
        b[:, rows] += np.einsum("sxw,sw->sx", As, t[:, cols])
    nx = A.shape[1]
    lqr, index = _target(into, len(H), nx, nz - nx)
    lqr.set_joint(index, A_full[:, :, :nx], A_full[:, :, nx:], b, 0.5 * (Q + np.swapaxes(Q, 1, 2)), l)
    return Condensed(T, t, lqr, index)


def _target(into, S, nx, nu) -> tuple:
    """``(lqr, index)``: ``into``, or an LQR of the ``S`` stages alone."""
    return (LQR.for_stages(S, nx, nu), np.arange(S)) if into is None else into


def condense(
    stages: LiftedStages, backend="numpy", supports=None, redundant=False, lifted=True, into=None
) -> Condensed:
    """Eliminate ``dw`` from cost and state equation (one batched solve with ``Cw``), the blocks
    written into ``into``: ``(lqr, index)``, an :class:`ocp.lqr.LQR` and the stages' indices in it
    (None: an LQR of these stages alone).
    ``supports``: ``(zw, ww, ar, ac)``, the columns of ``H_zw``, the rows and columns of
    ``H_ww``, the rows and columns of ``A_w`` that may be nonzero (by default found from the
    values). ``redundant``: the stages have redundant contacts, ``Cw`` is singular
    (:func:`condense_redundant`, with ``lifted``)."""
    if redundant:
        return condense_redundant(stages, lifted, into)
    nz = stages.nx + stages.nu
    library = _library() if backend == "compiled" else None
    if library is not None:
        return _condense_compiled(library, stages, supports, into)
    Tt = -np.linalg.solve(stages.C[:, :, nz:], np.concatenate((stages.C[:, :, :nz], stages.c[..., None]), axis=2))
    return eliminate(stages.H, stages.g, stages.A, stages.b, nz, Tt[..., :nz], Tt[..., nz], into)


#: Singular values of ``Cw`` below this fraction of its largest are its null space (measured on
#: the duplicated-foot trot: the null ones below 2e-18 of the largest, the others above 3e-4).
RANK_RTOL = 1e-10


def condense_redundant(stages: LiftedStages, lifted=True, into=None) -> Condensed:
    """:func:`condense` for stages whose ``Cw`` may be singular (module docstring): ``dw`` the
    least-norm solution of the local equalities, plus, when ``lifted``, the step along the null
    space of ``Cw`` that minimizes the stage's cost. The pseudo-inverse is kept for
    :func:`expand`."""
    nz = stages.nx + stages.nu
    Cw, H = stages.C[:, :, nz:], stages.H
    U, sigma, Vt = np.linalg.svd(Cw)
    keep = sigma > RANK_RTOL * sigma[:, :1]
    inverse = np.where(keep, 1.0 / np.where(keep, sigma, 1.0), 0.0)
    V = np.swapaxes(Vt, 1, 2)
    pinv = (V * inverse[:, None, :]) @ np.swapaxes(U, 1, 2)
    Tt = -pinv @ np.concatenate((stages.C[:, :, :nz], stages.c[..., None]), axis=2)
    if lifted:
        N = V * ~keep[:, None, :]  # the null space of Cw (zero columns for the range)
        Hww = H[:, nz:, nz:]
        K = np.swapaxes(N, 1, 2) @ Hww @ N
        scale = np.linalg.norm(Hww, axis=(1, 2))[:, None, None]
        w, E = np.linalg.eigh(0.5 * (K + np.swapaxes(K, 1, 2)))
        big = w > 1e-12 * scale[:, :, 0]
        Kp = (E * np.where(big, 1.0 / np.where(big, w, 1.0), 0.0)[:, None, :]) @ np.swapaxes(E, 1, 2)
        P = N @ Kp @ np.swapaxes(N, 1, 2)  # N (N^T H_ww N)^+ N^T
        Hw = np.concatenate((H[:, nz:, :nz], stages.g[:, nz:, None]), axis=2)
        Tt = Tt - P @ (Hw + Hww @ Tt)
    return replace(eliminate(H, stages.g, stages.A, stages.b, nz, Tt[..., :nz], Tt[..., nz], into), pinv=pinv)


def expand(stages: LiftedStages, condensed: Condensed, z, lam_next):
    """``(dw, beta)`` of each stage from its ``z = (dx, du)`` ``(S, nx + nu)`` and the costate
    ``lam_next (S, nx)`` of its state equation."""
    nz = stages.nx + stages.nu
    if condensed.factors is not None:
        return _expand_compiled(_library(), stages, condensed, z, lam_next)
    dw = np.einsum("swz,sz->sw", condensed.T, z) + condensed.t
    y = np.concatenate((z, dw), axis=1)
    stationarity = np.einsum("swy,sy->sw", stages.H[:, nz:], y) + stages.g[:, nz:]
    stationarity += np.einsum("sxw,sx->sw", stages.A[:, :, nz:], lam_next)
    if condensed.pinv is not None:  # least squares: (Cw^T)^+ = (Cw^+)^T
        return dw, -np.einsum("svw,sv->sw", condensed.pinv, stationarity)
    beta = -np.linalg.solve(np.swapaxes(stages.C[:, :, nz:], 1, 2), stationarity[..., None])[..., 0]
    return dw, beta


_P, _I = ctypes.c_void_p, ctypes.c_int
_FUNCTIONS = {
    "liftoff_condense": (_I, (_I,) * 4 + (_P,) * 6 + (_I, _P) * 4 + (_P,) * 5 + (_I,) + (_P,) * 8),
    "liftoff_expand": (None, (_I,) * 4 + (_P,) * 11),
}


_SOURCE = Path(__file__).with_name("condensing.c")


def compile_condensing() -> bool:
    """Load (compiling on first use) the compiled condensing; False when it cannot be compiled."""
    return _library() is not None


def _library():
    from liftoff.dynamics.codegen import compiled_library

    return compiled_library(_SOURCE, _FUNCTIONS, blas=("dgemm",))


def _condense_compiled(library, st: LiftedStages, supports, into) -> Condensed:
    lqr, index = _target(into, len(st.H), st.nx, st.nu)
    if supports is None:  # found from the values: a call for these alone
        nz = st.nx + st.nu
        H, A = st.H, st.A
        supports = (
            _support(H[:, :nz, nz:], 2),
            _support(H[:, nz:, nz:], 1),
            _support(A[:, :, nz:], 1),
            _support(A[:, :, nz:], 2),
        )
        return _Condense(library, st, supports, ())(st.g, lqr, index)
    arrays = (st.H, st.C, st.c, st.A, st.b, *supports)
    return bound(st.calls, "condense", arrays, lambda: _Condense(library, st, supports, arrays))(st.g, lqr, index)


class _Condense:
    """``condensing.c`` on the blocks of one evaluation (``arrays``, kept from one evaluation to
    the next by the compiled backend) and their ``supports``: their addresses made once, the
    gradient, the LQR's blocks and fresh outputs per call."""

    def __init__(self, library, st: LiftedStages, supports, arrays):
        self.arrays, self.function = arrays, library.liftoff_condense
        self.S, self.nx, self.nu, self.nw = len(st.H), st.nx, st.nu, st.nw
        blocks = [np.ascontiguousarray(x, dtype=float) for x in (st.H, st.C, st.c, st.A, st.b)]
        supports = [np.ascontiguousarray(x, dtype=np.intc) for x in supports]
        self._alive = (blocks, supports)
        self._H, self._rest = address(blocks[0]), tuple(map(address, blocks[1:]))
        self._supports = tuple(x for sup in supports for x in (len(sup), address(sup)))

    def __call__(self, g, lqr, index) -> Condensed:
        S, nx, nu, nw = self.S, self.nx, self.nu, self.nw
        g = np.ascontiguousarray(g, dtype=float)
        LU, piv, T, t = (
            np.empty((S, nw, nw)),
            np.empty((S, nw), dtype=np.intc),
            np.empty((S, nw, nx + nu)),
            np.empty((S, nw)),
        )
        lqr.nu[index] = nu
        rows = np.ascontiguousarray(index, dtype=np.intc)
        status = self.function(
            S, nx, nu, nw, self._H, address(g), *self._rest, *self._supports,
            *map(address, (LU, piv, T, t, rows)), lqr.B.shape[2], *lqr.addresses,
        )  # fmt: skip
        if status < 0:
            raise MemoryError("condensing could not allocate its workspace")
        if status > 0:
            raise np.linalg.LinAlgError(f"the local equalities are singular (Cw) at stage {status - 1} of a group")
        return Condensed(T, t, lqr, index, (LU, piv))


def _expand_compiled(library, st: LiftedStages, cond: Condensed, z, lam_next):
    S, nw = len(st.H), st.nw
    H, g, A = (np.ascontiguousarray(x, dtype=float) for x in (st.H, st.g, st.A))
    z, lam_next = np.ascontiguousarray(z, dtype=float), np.ascontiguousarray(lam_next, dtype=float)
    dw, beta = np.empty((S, nw)), np.empty((S, nw))
    LU, piv = cond.factors
    arrays = (H, g, A, LU, piv, cond.T, cond.t, z, lam_next, dw, beta)
    library.liftoff_expand(S, st.nx, st.nu, nw, *map(address, arrays))
    return dw, beta
