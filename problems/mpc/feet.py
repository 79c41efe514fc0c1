"""A legged plan's kinematics at the measured state, in one call: where each foot is, how fast it
moves (world axes) and where the centre of mass is.

:class:`FeetKinematics` evaluates them with :mod:`dynamics`' functions (numpy, the reference:
one pass of forward kinematics each) or with one compiled kernel of the same equations from
:mod:`dynamics.symbolic` (the compiled backend, as the stages; numpy when no C compiler is
found, with a warning).
"""

from __future__ import annotations

import sys

import casadi as ca
import numpy as np

from liftoff import dynamics
from liftoff.dynamics import codegen
from liftoff.dynamics import symbolic as sx
from liftoff.dynamics.kinematics import frame_positions


class FeetKinematics:
    """The kinematics of ``feet`` (frame names of ``model``) in the ``backend`` ``compiled``
    or ``numpy``; ``quiet``: no message while compiling."""

    def __init__(self, model, feet, backend="compiled", quiet=False):
        self.model, self.feet = model, tuple(feet)
        self.kernel = None
        if backend == "compiled":
            key = {"model": codegen.model_key(model), "feet": self.feet}
            key["source"] = codegen.source_digest(sys.modules[__name__])
            try:
                self.kernel = codegen.load(f"feet_{model.name}", key, self._function, quiet)
            except codegen.CompileError as e:
                print(f"liftoff: warning: {e}; the feet's kinematics run in numpy", file=sys.stderr)

    def _function(self) -> ca.Function:
        m = self.model
        x = ca.SX.sym("x", m.nq + m.nv)
        kin = sx.forward(m, sx.configuration(m, x[: m.nq]), x[m.nq :])
        positions = [sx.frame_placement(m, kin, f)[1] for f in self.feet]
        velocities = [sx.frame_velocity(m, kin, f) for f in self.feet]
        return ca.Function("feet", [x], [ca.vertcat(*positions), ca.vertcat(*velocities), sx.center_of_mass(m, kin)])

    def __call__(self, q, v) -> tuple:
        """``(positions (n, 3), velocities (n, 3), centre of mass (3,))`` at the state ``(q, v)``."""
        if self.kernel is None:
            return self.reference(q, v)
        positions, velocities, com = self.kernel(np.concatenate((q, v))[None])
        return positions.reshape(-1, 3), velocities.reshape(-1, 3), com[0]

    def reference(self, q, v) -> tuple:
        """The same with numpy."""
        m = self.model
        velocities = [dynamics.frame_velocity(m, q, v, f, "LOCAL_WORLD_ALIGNED")[:3] for f in self.feet]
        return frame_positions(m, q, self.feet), np.array(velocities), dynamics.center_of_mass(m, q)
