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
reads only these containers; it knows nothing of robots.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ocp.lqr import StageLQR, TerminalLQR


@dataclass(frozen=True)
class RiccatiSolution:
    """The LQR solution: ``dx (N+1)``, ``du (N)``, costates ``lam (N+1)`` and the feedback
    gains ``K, k`` (``du = K dx + k``) with the cost-to-go ``P, p`` per stage."""

    dx: list
    du: list
    lam: list
    K: list
    k: list
    P: list
    p: list


class RiccatiError(np.linalg.LinAlgError):
    """``Quu + B^T P B`` is not positive definite at some stage (the LQR is not convex there)."""


def riccati(stages: "list[StageLQR]", terminal: TerminalLQR, dx0) -> RiccatiSolution:
    """Solve the LQR of ``stages`` (a sequence of :class:`StageLQR`) from ``dx0``."""
    N = len(stages)
    P, p = [None] * (N + 1), [None] * (N + 1)
    K, k = [None] * N, [None] * N
    P[N], p[N] = terminal.Qxx, terminal.lx
    for i in range(N - 1, -1, -1):
        s = stages[i]
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
    dx, du, lam = [np.asarray(dx0, dtype=float)], [], []
    for i, s in enumerate(stages):
        du.append(K[i] @ dx[i] + k[i])
        dx.append(s.A @ dx[i] + s.B @ du[i] + s.b)
    lam = [P[i] @ dx[i] + p[i] for i in range(N + 1)]
    return RiccatiSolution(dx, du, lam, K, k, P, p)


def _cho_solve(L, X):
    return np.linalg.solve(L.T, np.linalg.solve(L, X))
