"""A disturbance observer: the generalized force the controller's model misses, estimated from
the plant's measurements, for offset-free MPC.

Over a plant step at time ``t`` from ``(q_k, v_k)`` to ``v_{k+1}``, with the joint torques
``tau_k`` applied (the actuators' measured torques with a torque filter, else the command), the
model's equation of motion leaves the residual

    d_k = M(q_k) a_k + h(q_k, v_k) - S tau_k - tau_p(v_k) - sum J_p(q_k)^T F_k,    a_k = (v_{k+1} - v_k) / dt

(``tau_p`` the model's joint damping and friction), ``F_k`` the contact forces the controller's
own contact model gives for what the plant measured (``contact_forces(steps)``: a polishing
pad's measured normal force, with the sliding friction the OCP models at that force),
``J_p`` the Jacobian of each force's point, moving with its frame. So ``d_k`` is what the model
gets wrong: the joints' unmodelled friction (stiction), a heavier link, a push, the friction the
contact model misses. Its estimate follows ``d_k`` through a first-order filter of time constant
``T``; the MPC takes it as the constant disturbance of each horizon (:class:`ocp.problem.OCP`'s
``disturbance``), so that a constant model error leaves no constant tracking error.

The residual runs at the plant's rate. :meth:`DisturbanceObserver.reference_residual` evaluates
it with :mod:`dynamics`' functions (numpy, the reference); :class:`ResidualKernel` compiles the
same equations (:mod:`dynamics.symbolic`: the inverse dynamics, and each point force as the
world wrench ``(F, point x F)`` about the origin on its frame's supporting joints) into one C
call for the steps the closed loop shows together (a period's), as the
stages are (the compiled backend; numpy when no C compiler is found, with a warning).
"""

from __future__ import annotations

import math
import sys

import casadi as ca
import numpy as np

from liftoff import dynamics
from liftoff.dynamics import codegen
from liftoff.dynamics import symbolic as sx
from liftoff.ocp.lifted import actuation


class DisturbanceObserver:
    """The estimate (module docstring) for ``model``, plant step ``dt``, filter time constant
    ``time_constant`` [s], the joints' Coulomb friction smoothed over ``width``, and
    ``contact_forces(steps) -> (points, forces)``, the point forces during the plant's ``steps``
    (:class:`.plants.Steps`): world points and forces ``(steps.size, k, 3)``, one at each of the
    ``k`` ``frames`` in that order. The residual runs in the ``backend``
    ``compiled`` or ``numpy`` (``quiet``: no message while compiling)."""

    def __init__(self, model, dt, time_constant, width, contact_forces, frames=(), backend="compiled", quiet=False):
        self.model, self.dt, self.width, self.contact_forces = model, dt, width, contact_forces
        self.frames = tuple(frames)
        self.gain = dt / (time_constant + dt)
        self.S = actuation(model)
        self.estimate = np.zeros(model.nv)
        self.kernel = None
        if backend == "compiled":
            try:
                self.kernel = ResidualKernel(model, dt, width, self.frames, quiet)
            except codegen.CompileError as e:
                print(f"liftoff: warning: {e}; the disturbance observer runs in numpy", file=sys.stderr)

    def observe(self, steps) -> None:
        """The plant's ``steps`` (:class:`.plants.Steps`; :func:`problems.mpc.loop.closed_loop`'s
        hook), in order."""
        taus = steps.tau[:-1] if steps.tau.shape[1] else steps.u  # the measured torques, else the commands
        points, forces = self.contact_forces(steps)  # the forces during the steps
        states = (steps.q[:-1], steps.v[:-1], steps.v[1:], taus, points, forces)
        if self.kernel is None:
            residuals = [self.reference_residual(*step) for step in zip(*states)]
        else:
            residuals = self.kernel(*states)
        estimate, gain = self.estimate.tolist(), self.gain  # the filter in floats: a handful of entries per step
        for residual in np.asarray(residuals).tolist():
            if math.isfinite(sum(residual)):  # every entry finite
                estimate = [e + gain * (r - e) for e, r in zip(estimate, residual)]
        self.estimate = np.array(estimate)

    def reference_residual(self, q, v, v_next, tau, points, forces) -> np.ndarray:
        """``d_k`` (module docstring) of the step from ``(q, v)`` to ``v_next`` under the joint
        torques ``tau`` and the world ``forces (k, 3)`` at the world ``points (k, 3)``, one at
        each of the observer's frames, with numpy."""
        model = self.model
        a = (v_next - v) / self.dt
        residual = dynamics.rnea(model, q, v, a) - self.S @ np.asarray(tau, dtype=float)
        residual = residual - dynamics.passive_torque(model, v, self.width)
        for frame, point, force in zip(self.frames, points, forces):
            _, p = dynamics.frame_placement(model, q, frame)
            J = dynamics.frame_jacobian(model, q, frame, "LOCAL_WORLD_ALIGNED")
            residual = residual - J[:3].T @ force - J[3:].T @ np.cross(np.asarray(point) - p, force)
        return residual


class ResidualKernel:
    """The observer's residual (module docstring) compiled for ``model``, plant step ``dt``,
    friction width ``width`` and point forces at ``frames``; ``quiet``: no message while
    compiling. Raises :class:`dynamics.codegen.CompileError` without a compiler.

    Its input is ``(q, v, v_next, tau, point_1, force_1, ...)``; a call evaluates the steps of a
    period together, one row each."""

    def __init__(self, model, dt, width, frames, quiet=False):
        self.model, self.dt, self.width, self.frames = model, float(dt), float(width), tuple(frames)
        self.nu = actuation(model).shape[1]
        key = {"model": codegen.model_key(model), "dt": self.dt, "width": self.width, "frames": self.frames}
        key["source"] = codegen.source_digest(sys.modules[__name__])
        sizes = (model.nq, model.nv, model.nv, self.nu, 6 * len(self.frames))
        self._offsets = np.cumsum((0,) + sizes).tolist()  # of q, v, v_next, tau, the points and forces
        self.kernel = codegen.load(f"observer_{model.name}", key, self._function, quiet)

    def _function(self) -> ca.Function:
        m = self.model
        x = ca.SX.sym("x", self._offsets[-1])
        q, v, v_next, tau, loads = ca.vertsplit(x, self._offsets)
        kin = sx.forward(m, sx.configuration(m, q), v, (v_next - v) / self.dt)
        residual = sx.rnea(m, kin) - sx.const(actuation(m)) @ tau - sx.passive_torque(m, v, self.width)
        wrenches = []
        for i, frame in enumerate(self.frames):
            point, force = loads[6 * i : 6 * i + 3], loads[6 * i + 3 : 6 * i + 6]
            wrenches.append((int(m.frame_parent[m.frame_id(frame)]), ca.vertcat(force, sx.cross(point, force))))
        if wrenches:
            residual = residual - sx.generalized_forces(m, kin, wrenches)
        return ca.Function("observer", [x], [residual])

    def __call__(self, q, v, v_next, tau, points, forces) -> np.ndarray:
        """The residuals ``(S, nv)`` of ``S`` steps: their ``q, v, v_next, tau``, one row per step
        (arrays, or sequences of rows), and the world ``points`` and ``forces`` ``(S, k, 3)``, one
        at each of this kernel's ``k`` frames in their order (``ValueError`` for other shapes);
        one C call."""
        S, k = len(q), len(self.frames)
        points, forces = np.asarray(points, dtype=float), np.asarray(forces, dtype=float)
        if points.shape != (S, k, 3) or forces.shape != (S, k, 3):
            raise ValueError(
                f"the contact points and forces have shapes {points.shape} and {forces.shape}; the observer was "
                f"made for ({S}, {k}, 3): forces at {self.frames}"
            )
        x, (q0, v0, n0, t0, f0, _) = np.empty((S, self.kernel.n_in)), self._offsets
        x[:, q0:v0], x[:, v0:n0], x[:, n0:t0], x[:, t0:f0] = q, v, v_next, tau
        x[:, f0:] = np.concatenate((points, forces), axis=2).reshape(S, 6 * k)  # per frame, its point and force
        return self.kernel(x)[0]
