"""What a baseline solver of an NLP (:mod:`solvers.ipopt`, :mod:`solvers.sqp`) returns."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class NLPResult:
    """``status``: ``converged`` or why not (the solver's words); ``message``; ``iterations``;
    the final ``cost``, constraint ``violation`` and ``measure`` (the method's own convergence
    measure); the wall time; the solution ``x``; ``history``: per iteration ``measure`` (and
    what else the method records)."""

    status: str
    message: str
    iterations: int
    cost: float
    violation: float
    measure: float
    solve_time_s: float
    x: np.ndarray
    history: dict = field(default_factory=dict)

    @property
    def converged(self) -> bool:
        return self.status == "converged"
