"""The condensed LQR subproblem of one Newton step: what the OCP hands to the solvers.

Per stage ``dx_{i+1} = A dx_i + B du_i + b`` and the quadratic cost
``1/2 [dx; du]^T [[Qxx, Qxu], [Qxu^T, Quu]] [dx; du] + lx^T dx + lu^T du``; stages without
control (impulse stages) have ``nu = 0``. Containers only: the solvers read them, as a
:class:`LQR` of stacked arrays (one array per block, every stage at once).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from liftoff.dynamics.memory import address


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


@dataclass(frozen=True)
class LQR:
    """The stages stacked: ``A (N, nx, nx)``, ``B (N, nx, nm)``, ``b (N, nx)``, ``Qxx (N, nx, nx)``,
    ``Qxu (N, nx, nm)``, ``Quu (N, nm, nm)``, ``lx (N, nx)``, ``lu (N, nm)``; stage ``i`` has
    ``nu[i] <= nm`` controls, the leading columns (the others are zero)."""

    A: np.ndarray
    B: np.ndarray
    b: np.ndarray
    Qxx: np.ndarray
    Qxu: np.ndarray
    Quu: np.ndarray
    lx: np.ndarray
    lu: np.ndarray
    nu: np.ndarray

    def __len__(self) -> int:
        return len(self.A)

    @functools.cached_property
    def addresses(self) -> tuple:
        """The addresses of ``A, B, b, Qxx, Qxu, Quu, lx, lu`` (contiguous), for compiled code
        that writes them (the condensing of each group of a linearization)."""
        blocks = (self.A, self.B, self.b, self.Qxx, self.Qxu, self.Quu, self.lx, self.lu)
        if not all(x.flags.c_contiguous and x.dtype == float for x in blocks):
            raise ValueError("an LQR written by compiled code needs contiguous float blocks")
        return tuple(map(address, blocks))

    @classmethod
    def zeros(cls, N, nx, nm) -> "LQR":
        z = np.zeros
        return cls(
            z((N, nx, nx)),
            z((N, nx, nm)),
            z((N, nx)),
            z((N, nx, nx)),
            z((N, nx, nm)),
            z((N, nm, nm)),
            z((N, nx)),
            z((N, nm)),
            z(N, dtype=np.intc),
        )

    @classmethod
    def for_stages(cls, N, nx, nm) -> "LQR":
        """An LQR whose every stage the caller writes (a linearization condenses each stage
        into it): ``A, b, Qxx, lx`` left unset, the control blocks zero (a stage with fewer than
        ``nm`` controls writes its leading columns only)."""
        e, z = np.empty, np.zeros
        return cls(
            e((N, nx, nx)), z((N, nx, nm)), e((N, nx)), e((N, nx, nx)), z((N, nx, nm)), z((N, nm, nm)),
            e((N, nx)), z((N, nm)), z(N, dtype=np.intc),
        )  # fmt: skip

    @classmethod
    def from_stages(cls, stages) -> "LQR":
        stages = list(stages)
        nx, nm = stages[0].nx, max(s.nu for s in stages)
        out = cls.zeros(len(stages), nx, nm)
        for i, s in enumerate(stages):
            out.set(i, s.A, s.B, s.b, s.Qxx, s.Qxu, s.Quu, s.lx, s.lu)
        return out

    def set(self, index, A, B, b, Qxx, Qxu, Quu, lx, lu):
        """Fill the stages ``index`` (an index or an index array with the blocks stacked)."""
        nu = B.shape[-1]
        self.A[index], self.B[index, ..., :nu], self.b[index] = A, B, b
        self.Qxx[index], self.Qxu[index, ..., :nu], self.Quu[index, ..., :nu, :nu] = Qxx, Qxu, Quu
        self.lx[index], self.lu[index, ..., :nu], self.nu[index] = lx, lu, nu

    def set_joint(self, index, A, B, b, Q, l):
        """:meth:`set` from the joint cost blocks ``Q`` over ``(dx, du)`` and ``l``."""
        nx = A.shape[-1]
        self.set(index, A, B, b, Q[..., :nx, :nx], Q[..., :nx, nx:], Q[..., nx:, nx:], l[..., :nx], l[..., nx:])

    def stage(self, i) -> StageLQR:
        n = self.nu[i]
        return StageLQR(
            self.A[i],
            self.B[i, :, :n],
            self.b[i],
            self.Qxx[i],
            self.Qxu[i, :, :n],
            self.Quu[i, :n, :n],
            self.lx[i],
            self.lu[i, :n],
        )
