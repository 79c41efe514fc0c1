"""The MuJoCo plant's steps between two MPC updates in one call, the policy and the readings included.

Between two updates, the closed loop evaluates the policy on the latest measurement and steps
the plant, at the plant's rate. MuJoCo's step takes tens of microseconds; the Python around it
(the policy's call, the controls, the state's conversion, the readings, the divergence test)
took as long again. :class:`CompiledSteps` runs those steps in ``mujoco_steps.c``: per step the
compiled policy (:class:`problems.mpc.policy.CompiledPolicy`), the controls with the torque bias
and noise, ``mj_step``, the state in liftoff's coordinates and the contact readings
(``mujoco_readings.c``), stopping after a step whose state diverged (the test of
:class:`problems.mpc.loop.Divergence`). They are the operations of
:meth:`.mujoco_plant.MujocoPlant.step` in the same order: the same numbers, to the bit.

It is compiled against the headers of the installed MuJoCo and calls the functions of the
library its Python bindings loaded, as the readings do; without a C compiler, or with a MuJoCo
that ships no headers, the plant steps one at a time in Python.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np

from liftoff.dynamics.memory import address

from . import ROW, Steps
from .mujoco_readings import engine_library

_SOURCE = Path(__file__).with_name("mujoco_steps.c")
_P, _I, _L, _D = ctypes.c_void_p, ctypes.c_int, ctypes.c_long, ctypes.c_double


class _Robot(ctypes.Structure):  # mujoco_steps.c's robot_t
    _fields_ = [("nq", _I), ("nv", _I), ("ntau", _I), ("nu", _I), ("free", _I)] + [
        (name, _P) for name in ("qpos_index", "dof_index", "actuators", "activations")
    ]


class _Readings(ctypes.Structure):  # readings_args_t
    _fields_ = [("call", _P), ("n", _I)] + [(name, _P) for name in ("first", "names", "surface", "body", "offset")]


class _Policy(ctypes.Structure):  # policy_t
    _fields_ = [("batch", _P), ("x", _P), ("u", _P)] + [(name, _L) for name in ("q_at", "v_at", "tau_at")]
    _fields_ += [("t0", _D), ("rate", _D)]


_FUNCTIONS = {
    "liftoff_mujoco_steps": (_I, (_P, _P, _P, _P, _P, _L, _D, _I) + (_P,) * 14),
    "liftoff_mujoco_version": (_I, ()),
    "liftoff_set_mujoco": (None, (_P,)),
}
_MUJOCO_FUNCTIONS = ("mj_step", "mju_quat2Mat")


def compiled_steps(plant):
    """:class:`CompiledSteps` of ``plant`` (a :class:`.mujoco_plant.MujocoPlant`), or None when
    its readings or ``mujoco_steps.c`` are not compiled (after one warning line for the latter)."""
    if not plant.readings.compiled:
        return None
    library = engine_library(plant.mujoco, _SOURCE, _FUNCTIONS, _MUJOCO_FUNCTIONS, "the MuJoCo plant steps in Python")
    return None if library is None else CompiledSteps(plant, library)


class CompiledSteps:
    """The steps of ``plant``, whose readings are compiled, run by ``library`` (the compiled
    ``mujoco_steps.c``, :func:`compiled_steps`)."""

    def __init__(self, plant, library):
        self.plant, self._library, robot, mj = plant, library, plant.robot, plant.mj
        self.nq, self.nv, self.nu = robot.model.nq, robot.model.nv, len(robot.actuators)
        self.ntau = self.nu if robot.filtered else 0
        activations = mj.actuator_actadr[robot.actuators] if robot.filtered else np.zeros(0)
        indices = (robot.qpos_index, robot.dof_index, robot.actuators, activations)
        self._indices = [np.ascontiguousarray(a, dtype=np.dtype(_L)) for a in indices]  # C longs, kept alive
        sizes = (self.nq, self.nv, self.ntau, self.nu, int(robot.free))
        self._robot = _Robot(*sizes, *(a.ctypes.data for a in self._indices))
        call, tail = plant.readings.native()
        self._readings = _Readings(call, *tail)
        self._head = (mj._address, plant.data._address, ctypes.addressof(self._robot), ctypes.addressof(self._readings))

    def __call__(self, first, steps, policy, measurement, bias, noise, lower, upper) -> Steps:
        """The ``steps`` plant steps from step index ``first`` (time ``first * dt``) under
        ``policy`` (:meth:`problems.mpc.policy.CompiledPolicy.native`) from ``measurement``,
        with the actuators' ``bias (nu,)`` and ``noise (steps, nu)`` (or None), stopping after a
        step whose state is beyond ``lower, upper (nq,)`` or not finite: the :class:`Steps` done,
        checked."""
        nq, nv, nt, nu, n = self.nq, self.nv, self.ntau, self.nu, self.plant.readings.n
        tau = np.zeros(0) if measurement.tau is None else measurement.tau
        knots = [np.empty((steps + 1, k)) for k in (nq, nv, nt)]
        for x, start in zip(knots, (measurement.q, measurement.v, tau)):
            x[0] = start
        out = [x[1:] for x in knots] + [np.empty((steps, nu)), np.empty((steps, n, ROW)), np.empty((steps, 2))]
        inputs = [np.ascontiguousarray(x, dtype=float) for x in (measurement.q, measurement.v, tau, bias)]
        limits = [np.ascontiguousarray(x, dtype=float) for x in (lower, upper)]
        noise = None if noise is None else np.ascontiguousarray(noise, dtype=float)
        native, diverged = _Policy(*policy), ctypes.c_int(0)
        done = self._library.liftoff_mujoco_steps(
            *self._head,
            ctypes.addressof(native),
            first,
            self.plant.dt,
            steps,
            *map(address, inputs),
            None if noise is None else address(noise),
            *map(address, limits + out),
            ctypes.addressof(diverged),
        )
        if done < 0:
            raise FloatingPointError("kernel policy failed")
        t = (first + np.arange(done)) * self.plant.dt
        q, v, tau = (x[: done + 1] for x in knots)
        u, readings, seconds = (x[:done] for x in out[3:])
        return Steps(t, u, q, v, tau, readings, seconds, self.plant.index, True, bool(diverged.value))
