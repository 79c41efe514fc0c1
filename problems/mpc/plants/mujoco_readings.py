"""The MuJoCo plant's contact readings, from MuJoCo's data after a step.

A named contact of the robot is a set of its geoms (a foot's sphere, the polishing pad). Its
reading sums MuJoCo's contacts between those geoms and the environment's surfaces, in MuJoCo's
order: the force on the robot (``mj_contactForce``, turned to the world axes), the contact
points and the velocities of the robot's material points there (``mj_objectVelocity`` of the
geom), both weighted by the normal force, the normal force, and the deepest penetration. A
reading is a row of :data:`ROW` numbers: touching (1 or 0), the force, the position (the mean
contact point or, not touching, the origin of the contact's frame after the step), the
penetration and the velocity (the mean, or zero).

:class:`Readings` computes them in Python (:meth:`Readings.reference`) or with
``mujoco_readings.c``, compiled against the headers of the installed MuJoCo and calling the
functions of the library its Python bindings loaded: a plant step's readings cost a few
microseconds instead of more than MuJoCo's step itself. Without a C compiler, or with a MuJoCo
that ships no headers, the readings run in Python after one warning line.
"""

from __future__ import annotations

import ctypes
import sys
from pathlib import Path

import numpy as np

from . import DEPTH, FORCE, POSITION, ROW, TOUCHING, VELOCITY

_SOURCE = Path(__file__).with_name("mujoco_readings.c")
_P, _I = ctypes.c_void_p, ctypes.c_int
_FUNCTIONS = {
    "liftoff_contact_readings": (None, (_P, _P, _I) + (_P,) * 6),
    "liftoff_mujoco_version": (_I, ()),
    "liftoff_set_mujoco": (None, (_P,)),
}
_MUJOCO_FUNCTIONS = ("mj_contactForce", "mj_objectVelocity", "mj_kinematics")
_COMPILED: dict = {}  # the compiled libraries by source and MuJoCo version, made once per process (None: could not be)


class Readings:
    """The readings of the named ``contacts`` of a robot in the MuJoCo model ``mj`` (a dict
    name -> (the MuJoCo body of the contact's frame, the frame's origin in it, the robot's geoms
    that make the contact)), against the geoms ``surfaces``; ``mujoco`` the module.
    ``compiled``: False keeps to Python."""

    def __init__(self, mujoco, mj, contacts, surfaces, compiled=True):
        self.mujoco, self.mj, self.n = mujoco, mj, len(contacts)
        self.surface = np.zeros(mj.ngeom, dtype=np.uint8)
        self.surface[list(surfaces)] = 1
        self.names_of = [[] for _ in range(mj.ngeom)]  # per geom, the named contacts it is part of
        for k, (_, _, geoms) in enumerate(contacts.values()):
            for g in geoms:
                self.names_of[g].append(k)
        self.body = np.array([body for body, _, _ in contacts.values()], dtype=np.intc)
        self.offset = np.array([np.asarray(p, dtype=float) for _, p, _ in contacts.values()]).reshape(self.n, 3)
        self._wrench, self._twist = np.zeros(6), np.zeros(6)  # MuJoCo's outputs for one contact
        self._library = _library(mujoco) if compiled else None
        first = np.cumsum([0] + [len(names) for names in self.names_of])
        names = [k for names in self.names_of for k in names]
        self._csr = tuple(np.ascontiguousarray(x, dtype=np.intc) for x in (first, names))  # names_of, flat
        self._tail = (self.n, *(a.ctypes.data for a in (*self._csr, self.surface, self.body, self.offset)))

    @property
    def compiled(self) -> bool:
        return self._library is not None

    def __call__(self, data) -> np.ndarray:
        """``(n, ROW)``: the readings after the step that left ``data`` (module docstring)."""
        if self._library is None:
            return self.reference(data)
        out = np.empty((self.n, ROW))
        self._library.liftoff_contact_readings(self.mj._address, data._address, *self._tail, out.ctypes.data)
        return out

    def native(self) -> tuple:
        """``(address, arguments)``: the compiled readings' function and its arguments after
        MuJoCo's model and data and before the output (for a compiled caller)."""
        return ctypes.cast(self._library.liftoff_contact_readings, ctypes.c_void_p).value, self._tail

    def reference(self, data) -> np.ndarray:
        """The readings in Python (module docstring)."""
        mujoco, m, d = self.mujoco, self.mj, data
        sums = [[0.0] * 11 for _ in range(self.n)]  # per name: force, moment, sliding, weight, depth
        c = d.contact
        surface, wrench, twist, geom = self.surface, self._wrench, self._twist, mujoco.mjtObj.mjOBJ_GEOM
        rows = zip(c.geom1.tolist(), c.geom2.tolist(), c.frame.tolist(), c.pos.tolist(), c.dist.tolist())
        for i, (g1, g2, frame, pos, dist) in enumerate(rows):
            robot = g2 if surface[g1] else g1
            if surface[g1] == surface[g2] or not self.names_of[robot]:
                continue
            mujoco.mj_contactForce(m, d, i, wrench)  # in the contact's frame: its rows, normal first
            mujoco.mj_objectVelocity(m, d, geom, robot, twist, 0)
            (fn, f1, f2), sign = wrench[:3].tolist(), 1.0 if surface[g1] else -1.0  # the force is on geom2
            force = [sign * (fn * frame[j] + f1 * frame[3 + j] + f2 * frame[6 + j]) for j in range(3)]
            (wx, wy, wz, vx, vy, vz), centre = twist.tolist(), d.geom_xpos[robot].tolist()
            x, y, z = pos[0] - centre[0], pos[1] - centre[1], pos[2] - centre[2]
            point = (vx + wy * z - wz * y, vy + wz * x - wx * z, vz + wx * y - wy * x)  # the material point's velocity
            normal = abs(fn)
            row = force + [normal * p for p in pos] + [normal * p for p in point] + [normal]
            for k in self.names_of[robot]:
                total = sums[k]
                for j in range(10):
                    total[j] += row[j]
                total[10] = max(total[10], -dist)
        out, placed = np.zeros((self.n, ROW)), False
        for k, total in enumerate(sums):
            weight = total[9]
            out[k, TOUCHING], out[k, FORCE], out[k, DEPTH] = weight > 0.0, total[0:3], total[10]
            if weight > 0.0:
                out[k, POSITION], out[k, VELOCITY] = np.array(total[3:6]) / weight, np.array(total[6:9]) / weight
                continue
            if not placed:  # the frame's origin after the step (mj_step left the kinematics of its start)
                mujoco.mj_kinematics(m, d)
                placed = True
            out[k, POSITION] = d.xpos[self.body[k]] + d.xmat[self.body[k]].reshape(3, 3) @ self.offset[k]
        return out


def _library(mujoco):
    """``mujoco_readings.c`` compiled against ``mujoco``'s headers, given its functions; None,
    after one warning line, when it cannot be."""
    fallback = "the MuJoCo plant's contact readings run in Python"
    return engine_library(mujoco, _SOURCE, _FUNCTIONS, _MUJOCO_FUNCTIONS, fallback)


def engine_library(mujoco, source, functions, engine_functions, fallback):
    """The C file ``source`` compiled against ``mujoco``'s headers (its ``functions`` typed, as
    :func:`liftoff.dynamics.codegen.compiled_library`), its ``liftoff_set_mujoco`` given the
    addresses of ``engine_functions`` in the library the bindings loaded, once per process; None,
    after one warning line that ends with ``fallback``, when it cannot be (no compiler, no
    headers or shared library, headers of another version)."""
    key = (str(source), mujoco.__version__)
    if key not in _COMPILED:
        _COMPILED[key] = _compiled(mujoco, source, functions, engine_functions, fallback)
    return _COMPILED[key]


def _compiled(mujoco, source, functions, engine_functions, fallback):
    from liftoff.dynamics.codegen import compiled_library

    folder = Path(mujoco.__file__).parent
    headers, binaries = folder / "include", sorted(folder.glob("libmujoco.so*"))
    if not (headers / "mujoco" / "mujoco.h").exists() or not binaries:
        why = "this MuJoCo ships no C headers or no shared library"
    else:
        lib = compiled_library(source, functions, include=(headers, mujoco.__version__))
        if lib is None:  # compiled_library said why
            return None
        if lib.liftoff_mujoco_version() == mujoco.mj_version():
            engine = ctypes.CDLL(str(binaries[-1]))  # the library the bindings loaded
            addresses = [ctypes.cast(getattr(engine, f), ctypes.c_void_p).value for f in engine_functions]
            lib.liftoff_set_mujoco((ctypes.c_void_p * len(addresses))(*addresses))
            return lib
        why = f"MuJoCo's headers ({lib.liftoff_mujoco_version()}) are not its library's ({mujoco.mj_version()})"
    print(f"liftoff: warning: {why}; {fallback}", file=sys.stderr)
    return None
