"""The condensed LQR subproblem of one Newton step: what the OCP hands to the solvers.

Per stage ``dx_{i+1} = A dx_i + B du_i + b`` and the quadratic cost
``1/2 [dx; du]^T [[Qxx, Qxu], [Qxu^T, Quu]] [dx; du] + lx^T dx + lu^T du``; stages without
control (impulse stages) have ``nu = 0``. Containers only: the solvers read them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class StageLQR:
    """One stage of the LQR: cost ``Qxx, Qxu, Quu, lx, lu`` and dynamics ``A, B, b``."""

    A: np.ndarray
    B: np.ndarray
    b: np.ndarray
    Qxx: np.ndarray
    Qxu: np.ndarray
    Quu: np.ndarray
    lx: np.ndarray
    lu: np.ndarray

    @property
    def nx(self) -> int:
        return self.A.shape[1]

    @property
    def nu(self) -> int:
        return self.B.shape[1]


@dataclass(frozen=True)
class TerminalLQR:
    Qxx: np.ndarray
    lx: np.ndarray


