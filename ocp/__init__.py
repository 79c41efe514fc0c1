"""The optimal control problem: stages, costs, constraints, lifted and non-lifted formulations."""

from .lqr import StageLQR, TerminalLQR
