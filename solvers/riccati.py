"""Riccati recursion for the condensed LQR subproblem (seed 004 Sec. III-C).

After condensing, each Newton step of the OCP is the equality-constrained LQR

    min  sum_i 1/2 [dx; du]^T [[Qxx, Qxu], [Qxu^T, Quu]] [dx; du] + lx^T dx + lu^T du
         + 1/2 dx_N^T Qxx_N dx_N + lx_N^T dx_N
    s.t. dx_0 = dx0,   dx_{i+1} = A_i dx_i + B_i du_i + b_i

(stages without control, like impulse stages, have ``nu = 0``). With costates ``lam``, the
multipliers of ``dx_{i+1} = ...`` (and ``lam_0`` of the initial equality), its KKT system is
solved in O(N) by the backward recursion of the cost-to-go ``1/2 dx^T P dx + p^T dx``

    G = Quu + B^T P B,   H = Qxu + A^T P B,   K = -G^-1 H^T,   k = -G^-1 (lu + B^T (P b + p))
    P <- Qxx + A^T P A + H K,   p <- lx + A^T (P b + p) + H k

and the forward rollout ``du_i = K_i dx_i + k_i``, ``lam_i = P_i dx_i + p_i``. The solver
reads only these containers; it knows nothing of robots. ``backend="compiled"`` runs the same
recursion as a C loop over the stacked arrays (``riccati.c``, compiled on first use by
:func:`dynamics.codegen.load_library`, its products vector loops), numpy without a C compiler.
"""

from __future__ import annotations

import ctypes
import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from liftoff.dynamics.memory import address, outputs
from liftoff.ocp.lqr import LQR, TerminalLQR

BACKENDS = ("compiled", "numpy")


@dataclass(frozen=True)
class RiccatiSolution:
    """The LQR solution: ``dx (N+1, nx)``, costates ``lam (N+1, nx)``, the cost-to-go ``P (N+1,
    nx, nx)``, ``p (N+1, nx)``, and per stage its ``nu`` controls ``controls (N, nm)``, feedback
    gains ``gains (N, nm, nx)`` and ``feedforward (N, nm)`` (``du = K dx + k``), each stage's
    first ``nu[i]`` rows (the rest zero: ``nm`` is the largest ``nu``). ``du``, ``K`` and ``k``
    are the same per stage, trimmed to its ``nu``."""

    dx: np.ndarray
    lam: np.ndarray
    P: np.ndarray
    p: np.ndarray
    nu: np.ndarray
    controls: np.ndarray
    gains: np.ndarray
    feedforward: np.ndarray

    @functools.cached_property
    def du(self) -> list:
        return [x[:n] for x, n in zip(self.controls, self.nu.tolist())]

    @functools.cached_property
    def K(self) -> list:
        return [x[:n] for x, n in zip(self.gains, self.nu.tolist())]

    @functools.cached_property
    def k(self) -> list:
        return [x[:n] for x, n in zip(self.feedforward, self.nu.tolist())]


class RiccatiError(np.linalg.LinAlgError):
    """``Quu + B^T P B`` is not positive definite at some stage (the LQR is not convex there)."""


def riccati(stages, terminal: TerminalLQR, dx0, backend="numpy") -> RiccatiSolution:
    """Solve the LQR of ``stages`` (an :class:`ocp.lqr.LQR`, or a sequence of
    :class:`ocp.lqr.StageLQR`) from ``dx0``, by the ``numpy`` or the ``compiled`` recursion."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; expected one of {BACKENDS}")
    lqr = stages if isinstance(stages, LQR) else LQR.from_stages(stages)
    dx0 = np.asarray(dx0, dtype=float)
    if backend == "compiled":
        library = _library()
        if library is not None:
            return _compiled(library, lqr, terminal, dx0)
    return _numpy(lqr, terminal, dx0)


def _numpy(lqr: LQR, terminal, dx0) -> RiccatiSolution:
    N = len(lqr)
    P, p = [None] * (N + 1), [None] * (N + 1)
    K, k = [None] * N, [None] * N
    P[N], p[N] = terminal.Qxx, terminal.lx
    for i in range(N - 1, -1, -1):
        s = lqr.stage(i)
        PA, PB = P[i + 1] @ s.A, P[i + 1] @ s.B
        co = P[i + 1] @ s.b + p[i + 1]
        G = s.Quu + s.B.T @ PB
        H = s.Qxu + s.A.T @ PB
        if s.nu:
            try:
                L = np.linalg.cholesky(G)
            except np.linalg.LinAlgError:
                raise RiccatiError(f"stage {i}: Quu + B^T P B is not positive definite") from None
            K[i] = -_cho_solve(L, H.T)
            k[i] = -_cho_solve(L, s.lu + s.B.T @ co)
        else:
            K[i], k[i] = np.zeros((0, s.nx)), np.zeros(0)
        P[i] = s.Qxx + s.A.T @ PA + H @ K[i]
        P[i] = 0.5 * (P[i] + P[i].T)
        p[i] = s.lx + s.A.T @ co + H @ k[i]
    dx, du = [dx0], []
    for i in range(N):
        s = lqr.stage(i)
        du.append(K[i] @ dx[i] + k[i])
        dx.append(s.A @ dx[i] + s.B @ du[i] + s.b)
    lam = [P[i] @ dx[i] + p[i] for i in range(N + 1)]
    nm, nx = lqr.B.shape[2], lqr.A.shape[1]
    controls, gains, feedforward = np.zeros((N, nm)), np.zeros((N, nm, nx)), np.zeros((N, nm))
    for i, n in enumerate(lqr.nu.tolist()):
        controls[i, :n], gains[i, :n], feedforward[i, :n] = du[i], K[i], k[i]
    return RiccatiSolution(np.array(dx), np.array(lam), np.array(P), np.array(p), lqr.nu, controls, gains, feedforward)


def _cho_solve(L, X):
    return np.linalg.solve(L.T, np.linalg.solve(L, X))


_SOURCE = Path(__file__).with_name("riccati.c")
OUTPUTS = ("P", "p", "K", "k", "dx", "du", "lam")  # liftoff_riccati's outputs, in its order
_FUNCTIONS = {"liftoff_riccati": (ctypes.c_int, (ctypes.c_int,) * 3 + (ctypes.c_void_p,) * 19)}


def compile_riccati() -> bool:
    """Load (compiling on first use) the compiled recursion; False when it cannot be compiled."""
    return _library() is not None


def compiled_address() -> int | None:
    """The address of the compiled recursion (``liftoff_riccati``), for compiled code that calls
    it (:meth:`ocp.formulation.Formulation.newton_step`); None when it cannot be compiled."""
    if not _ADDRESS:  # looked up once: an MPC asks at every update
        library = _library()
        _ADDRESS.append(None if library is None else ctypes.cast(library.liftoff_riccati, ctypes.c_void_p).value)
    return _ADDRESS[0]


_ADDRESS: list = []  # compiled_address(), once known


def solution_of(arrays: dict, nu) -> RiccatiSolution:
    """The :class:`RiccatiSolution` of the compiled recursion's outputs ``arrays`` (by their
    names, :data:`OUTPUTS`) for stages of ``nu`` controls."""
    a = arrays
    return RiccatiSolution(a["dx"], a["lam"], a["P"], a["p"], nu, a["du"], a["K"], a["k"])


def _library():
    from liftoff.dynamics.codegen import compiled_library

    return compiled_library(_SOURCE, _FUNCTIONS)


def _compiled(library, lqr: LQR, terminal, dx0) -> RiccatiSolution:
    N, nx, nm = lqr.B.shape
    c = np.ascontiguousarray
    try:
        stages = lqr.addresses  # an LQR that compiled condensing wrote: its blocks' addresses, kept
    except ValueError:  # other arrays: contiguous copies, alive until the call returns
        copies = [c(x, dtype=float) for x in (lqr.A, lqr.B, lqr.b, lqr.Qxx, lqr.Qxu, lqr.Quu, lqr.lx, lqr.lu)]
        stages = tuple(map(address, copies))
    terminal_inputs = [c(x, dtype=float) for x in (terminal.Qxx, terminal.lx, dx0)]
    nu = c(lqr.nu, dtype=np.intc)
    shapes = ((N + 1, nx, nx), (N + 1, nx), (N, nm, nx), (N, nm), (N + 1, nx), (N, nm), (N + 1, nx))
    arrays, addresses = outputs(*shapes)
    status = library.liftoff_riccati(N, nx, nm, address(nu), *stages, *map(address, terminal_inputs), *addresses)
    if status < 0:
        raise MemoryError("the Riccati recursion could not allocate its workspace")
    if status > 0:
        raise RiccatiError(f"stage {status - 1}: Quu + B^T P B is not positive definite")
    return solution_of(dict(zip(OUTPUTS, arrays)), lqr.nu)
