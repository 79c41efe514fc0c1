"""A legged MPC's horizon plan in one compiled call.

:meth:`.locomotion.GaitController.reference_plan` makes an update's plan (its
:class:`problems.tasks.gait_mpc.Horizon`) with numpy and Python: a hundred small operations, the
largest part of a legged update's Python. :class:`CompiledPlan` runs the same operations in the
same order in ``plan.c``: the same numbers to the bit. Without a C compiler the controller plans
with the reference (after one warning line).
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np

from liftoff.dynamics.codegen import compiled_library
from liftoff.dynamics.memory import address
from liftoff.problems.tasks.config import SWING_PROFILES
from liftoff.problems.tasks.gait_mpc import Horizon

_SOURCE = Path(__file__).with_name("plan.c")
_P, _I, _L, _D = ctypes.c_void_p, ctypes.c_int, ctypes.c_long, ctypes.c_double
_SIZES = ("N", "F", "M", "L", "prefix", "cycle", "commands", "nq", "nv", "profile")
_NUMBERS = ("dt", "gain", "max_step", "vertical_landing", "depth", "height", "com_height")
_ARRAYS = ("waits", "starts", "rows", "hips", "q0", "times", "yaw", "xy", "cmd")


class _Plan(ctypes.Structure):  # plan.c's plan_t
    _fields_ = [(name, _I) for name in _SIZES] + [(name, _D) for name in _NUMBERS] + [(name, _P) for name in _ARRAYS]


_FUNCTIONS = {"liftoff_plan": (None, (_P, _P, _D, _D, _L, _D, _D) + (_P,) * 12)}
_FOOT = 7  # plan.c's foot_t: stance, anchor (3), change, lift, planned


class CompiledPlan:
    """The plans of ``controller`` (a :class:`.locomotion.GaitController`) in ``plan.c``
    (:meth:`of`); called as the controller's reference plan is, from its schedule and feet now."""

    @classmethod
    def of(cls, controller) -> CompiledPlan | None:
        """The compiled plan of ``controller``, or None when ``plan.c`` cannot be compiled."""
        library = compiled_library(_SOURCE, _FUNCTIONS)
        return None if library is None else cls(controller, library)

    def __init__(self, controller, library):
        c, schedule, fh = controller.config, controller.schedule, controller.config.mpc.footholds
        self.N, self.F, self.nq, self.nv = c.mpc.horizon, len(controller.feet), controller.model.nq, controller.model.nv
        M, L = self.N + schedule.cycle + 1, len(schedule.table)
        waits = [[[-1 if w is None else w for w in foot] for foot in schedule.waits[s]] for s in (False, True)]
        self._arrays = {  # kept alive: plan_t points into them
            "waits": np.array(waits, dtype=np.intc).reshape(2, self.F, L),
            "starts": np.array([command.t for command in c.mpc.command], dtype=float),
            "rows": np.ascontiguousarray(controller.commands, dtype=float),
            "hips": np.ascontiguousarray(controller.hips, dtype=float),
            "q0": np.ascontiguousarray(controller.q0, dtype=float),
            "times": np.zeros(M),
            "yaw": np.zeros(M),
            "xy": np.zeros((M, 2)),
            "cmd": np.zeros((M, 3)),
        }
        sizes = (self.N, self.F, M, L, schedule.prefix, schedule.cycle, len(c.mpc.command), self.nq, self.nv)
        numbers = (controller.dt, controller.gain, fh.max_step, fh.vertical_landing, fh.touchdown_depth)
        numbers += (c.gait.step_height, controller.com_height)
        profile = SWING_PROFILES.index(c.gait.swing_profile)  # plan.c's: 0 parabola, 1 triangle
        self._plan = _Plan(*sizes, profile, *numbers, *(address(self._arrays[name]) for name in _ARRAYS))
        self._feet = np.zeros((self.F, _FOOT))
        self._call = library.liftoff_plan

    def __call__(self, controller, t, q, error, com_now) -> Horizon:
        """The plan of ``controller`` at time ``t`` from the measured configuration ``q``, the
        velocity error ``error (2,)`` and CoM ``com_now`` (:meth:`.locomotion.GaitController.
        reference_plan`); the targets of the feet in the air at the start set, as it sets them."""
        N, F, feet = self.N, self.F, self._feet
        for row, st in zip(feet, controller.feet_state):
            row[0], row[1:4], row[4:] = st.stance, st.anchor, (st.change, st.lift, st.planned)
        dts, com = np.empty(N), np.empty((N, 3))
        stance, landing = np.zeros((N, F), dtype=bool), np.zeros((N, F), dtype=bool)
        footholds, swing, targets = np.zeros((N, F, 3)), np.zeros((N, F, 3)), np.zeros((F, 3))
        q_ref, v_ref = np.empty((N + 1, self.nq)), np.zeros((N + 1, self.nv))
        inputs = [np.ascontiguousarray(x, dtype=float) for x in (q, error, com_now)]
        outputs = (dts, stance, footholds, swing, landing, com, q_ref, v_ref, targets)
        self._call(
            ctypes.addressof(self._plan), address(feet), t, controller.clock, controller.knot, controller.yaw_ref,
            controller.floor, *map(address, inputs), *map(address, outputs),
        )  # fmt: skip
        for st, target in zip(controller.feet_state, targets):
            if not st.stance:
                st.target = target
        return Horizon(dts, stance, footholds, swing, landing, com, q_ref, v_ref)
