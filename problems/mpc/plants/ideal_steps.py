"""liftoff's idealized legged plant's steps between two MPC updates in one call, the policy included.

Between two updates the closed loop evaluates the policy and steps the plant at the plant's rate.
The compiled step of :class:`.ideal_legged.IdealLeggedPlant` takes about a quarter of its time;
the Python around it (the torques, the schedule's feet, the lift-offs, the readings, the policy's
call, the divergence test) the rest. :class:`LeggedSteps` runs those steps in
``ideal_steps.c``: per step the compiled policy, the joint torques, the lift-offs, the step
kernel of :class:`.ideal_kernel.StepKernel` and the readings: the operations of
:meth:`.ideal_legged.IdealLeggedPlant.step` in the same order, the same numbers to the bit. A
step with a touchdown, or one that the compiled proximal steps do not converge in, is left to
the plant's :meth:`~.ideal_legged.IdealLeggedPlant.step` in Python.

It runs where the plant's actuation selects joints, its joints have no damping or friction and
the step is compiled; without a C compiler the plant steps one at a time in Python.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np

from liftoff.dynamics.codegen import compiled_library
from liftoff.dynamics.memory import address

_SOURCE = Path(__file__).with_name("ideal_steps.c")
_P, _I, _L, _D = ctypes.c_void_p, ctypes.c_int, ctypes.c_long, ctypes.c_double


class _Legged(ctypes.Structure):  # ideal_steps.c's legged_t
    _fields_ = [("kernel", _P), ("x", _P), ("out", _P)] + [(name, _I) for name in ("nq", "nv", "nu", "k")]
    _fields_ += [("actuated", _P), ("ground", _D)]


class _Policy(ctypes.Structure):  # steps.h's policy_t
    _fields_ = [("batch", _P), ("x", _P), ("u", _P)] + [(name, _L) for name in ("q_at", "v_at", "tau_at")]
    _fields_ += [("t0", _D), ("rate", _D)]


_FUNCTIONS = {"liftoff_legged_steps": (_I, (_P, _P, _L, _D, _I) + (_P,) * 16)}

DONE, DIVERGED, EVENT = 0, 1, 2  # how the compiled steps ended (ideal_steps.c)


def legged_steps(plant, actuated):
    """:class:`LeggedSteps` of ``plant`` (an :class:`.ideal_legged.IdealLeggedPlant` whose step is
    compiled, ``actuated`` the velocity rows its actuation selects), or None when
    ``ideal_steps.c`` cannot be compiled (after one warning line)."""
    library = compiled_library(_SOURCE, _FUNCTIONS)
    return None if library is None else LeggedSteps(plant, actuated, library)


class LeggedSteps:
    """The steps of ``plant``, run by ``library`` (the compiled ``ideal_steps.c``)."""

    def __init__(self, plant, actuated, library):
        kernel, model = plant._step, plant.model
        self.nq, self.nv, self.nu, self.k = model.nq, model.nv, len(actuated), len(plant.feet)
        self.dt = plant.dt
        self._actuated = np.ascontiguousarray(actuated, dtype=np.dtype(_L))  # C longs, kept alive
        batch, x, outputs = kernel.native()
        self._outputs = outputs  # kept alive
        sizes = (self.nq, self.nv, self.nu, self.k)
        self._legged = _Legged(batch, x, ctypes.addressof(outputs), *sizes, self._actuated.ctypes.data, plant.ground)
        self._call = library.liftoff_legged_steps

    def __call__(self, first, steps, policy, q0, v0, bias, noise, released, held, stance, points, lower, upper, out):
        """From step index ``first`` (time ``first * dt``) and the state ``(q0, v0)``, at most
        ``steps`` steps under ``policy`` (:meth:`problems.mpc.policy.CompiledPolicy.native`), the
        actuated joints' ``bias (nu,)`` and ``noise (steps, nu)`` (or None); per step the feet
        ``released (steps, k)`` at its start and ``held (steps, k)`` at its end (0 or 1);
        ``stance (k,)`` (0 or 1, updated) and the touchdown ``points (k, 3)``; the limits ``lower,
        upper (nq,)`` of the divergence test. ``out``: C-contiguous float arrays of at least
        ``steps`` rows that the steps' rows are written into, the states ``q, v`` after each step,
        the commands ``u``, the ``readings`` and the ``seconds``. Returns ``(done, how)``: the
        steps done and how they ended (:data:`DONE`, :data:`DIVERGED`, or :data:`EVENT`: the
        next step is left to Python)."""
        inputs = [np.ascontiguousarray(x, dtype=float) for x in (q0, v0, bias)]
        flags = [np.ascontiguousarray(x, dtype=np.uint8) for x in (released, held)]
        floats = [np.ascontiguousarray(x, dtype=float) for x in (points, lower, upper)]
        noise = None if noise is None else np.ascontiguousarray(noise, dtype=float)
        native, how = _Policy(*policy), ctypes.c_int(0)
        done = self._call(
            ctypes.addressof(self._legged),
            ctypes.addressof(native),
            first,
            self.dt,
            steps,
            *map(address, inputs),
            None if noise is None else address(noise),
            *map(address, flags),
            address(stance),
            *map(address, floats),
            *map(address, out),
            ctypes.addressof(how),
        )
        if done < 0:
            raise FloatingPointError("kernel policy failed")
        return done, how.value
