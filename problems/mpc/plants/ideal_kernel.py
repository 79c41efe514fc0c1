"""One step of liftoff's idealized plants, in numpy (the reference) and compiled.

A step of :class:`.ideal.IdealPlant` and :class:`.ideal_legged.IdealLeggedPlant` from ``(q, v)``
under the joint torques ``torque`` over ``h``: the accelerations ``a`` and forces ``f`` of
liftoff's proximal constrained dynamics (:func:`dynamics.constrained_dynamics`, proxLTL) with
the active contacts, or of the ABA without any, then the semi-implicit Euler scheme

    v+ = v + h a,    q+ = q (+) h v+,

and at ``(q+, v+)`` the world placement ``(R, p)`` of each contact's frame and the velocity of its
origin (world axes): what the plants' readings report. The contacts are ``slots`` fixed for the
plant (:class:`dynamics.Contact`, their placements unused), each active or not at a step, with
its Baumgarte target given per step. A touchdown needs two more pieces: ``positions``, the
frames' positions along a step with the accelerations held (where the step is cut), and
``impulse``, the velocity after the impact of the active slots (:func:`dynamics.impulse_dynamics`:
the same system with ``h = 0`` and ``r = -J v``, the slots without gains).

:class:`NumpyStep` calls the numpy dynamics. :class:`StepKernel` compiles the same equations
for a model and its slots (the SX twins of :mod:`dynamics.symbolic`): the mass matrix, the bias
and the contact rows of every slot, an inactive slot's rows zero (so that its force is zero);
the proximal steps of :func:`dynamics.constrained_dynamics` from zero forces,

    f+ = f + (J M^-1 J^T + mu 1)^-1 (r - J x(f)),    x(f) = M^-1 (h + J^T f),

with its stopping rule: the first pair whose residual ``|J x - r|_inf <= tol`` is kept, among
:data:`ITERATIONS` steps. A step or impact where none meets it (the least-squares or
iteration-limit cases of the numpy solver) is taken by :class:`NumpyStep`, so both give the same
results to rounding (``tests/test_ideal_plants.py`` holds them equal to 1e-10).
"""

from __future__ import annotations

import ctypes
import sys
from dataclasses import dataclass, replace

import casadi as ca
import numpy as np

from liftoff import dynamics
from liftoff.dynamics import codegen
from liftoff.dynamics import symbolic as sx
from liftoff.dynamics.contacts import resolve
from liftoff.dynamics.kinematics import forward, frame_placement_world, frame_positions
from liftoff.dynamics.memory import address
from liftoff.dynamics.spatial import shift_motion

ITERATIONS = 4  # proximal steps compiled: at mu = 1e-8 the residual meets tol after two
TOL = 1e-10  # the stopping tolerance of dynamics.constrained_dynamics
BACKENDS = ("compiled", "numpy")


@dataclass(frozen=True)
class StepResult:
    """A step's end state ``(q, v)``, its accelerations ``a``, the slots' forces ``f (m,)``
    (each slot's rows in its frame and components, zero when inactive), and per slot the world
    placement ``R (k, 3, 3)``, ``p (k, 3)`` of its frame and its origin's ``velocity (k, 3)``
    at the end state."""

    q: np.ndarray
    v: np.ndarray
    a: np.ndarray
    f: np.ndarray
    R: np.ndarray
    p: np.ndarray
    velocity: np.ndarray


def _target_size(slot) -> int:
    """The Baumgarte target's size: ``p`` (3) for translational kinds, ``(R, p)`` (12) otherwise."""
    return 3 if slot.translational else 12


class NumpyStep:
    """The step (module docstring) of ``model`` with its contact ``slots`` and proximal damping
    ``mu``, by the numpy dynamics: the reference."""

    def __init__(self, model, slots, mu):
        self.model, self.slots, self.mu = model, tuple(slots), mu
        self._frames = [(r.frame, r.joint) for r in resolve(model, self.slots)] if self.slots else []
        self._offsets = np.cumsum([0] + [s.dim for s in self.slots])

    def __call__(self, q, v, torque, h, targets) -> StepResult:
        """The step over ``h`` with ``targets``: per slot its target placement, None when inactive."""
        model = self.model
        active = [i for i, target in enumerate(targets) if target is not None]
        f = np.zeros(self._offsets[-1])
        if active:
            contacts = [replace(self.slots[i], placement=targets[i]) for i in active]
            a, forces = dynamics.constrained_dynamics(model, q, v, torque, contacts, mu=self.mu)[:2]
            rows = np.concatenate([np.arange(self._offsets[i], self._offsets[i + 1]) for i in active])
            f[rows] = forces
        else:
            a = dynamics.aba(model, q, v, torque)
        v1 = v + h * a
        q1 = dynamics.integrate(model, q, h * v1)
        kin = forward(model, q1[None], v1[None])
        k = len(self.slots)
        R, p, velocity = np.zeros((k, 3, 3)), np.zeros((k, 3)), np.zeros((k, 3))
        for i, (frame, joint) in enumerate(self._frames):
            Ri, pi = frame_placement_world(model, kin, frame, joint)
            R[i], p[i] = Ri[..., 0], pi[:, 0]
            if joint >= 0:
                velocity[i] = shift_motion(kin.ov[:, joint], pi)[:3, 0]
        return StepResult(q1, v1, a, f, R, p, velocity)

    def positions(self, q, v, a, h) -> np.ndarray:
        """The slots' frame positions ``(S, k, 3)`` after steps ``h (S,)`` from ``(q, v)`` with the
        accelerations ``a`` held: at ``q (+) h (v + h a)``."""
        h = np.asarray(h, dtype=float)[:, None]
        q1 = dynamics.integrate(self.model, np.broadcast_to(q, (len(h), len(q))), h * (v + h * a))
        return frame_positions(self.model, q1, [s.frame for s in self.slots])

    def impulse(self, q, v, targets) -> np.ndarray:
        """The velocity ``v+`` after the impact of the active slots (``targets`` not None) at
        ``(q, v)``: :func:`dynamics.impulse_dynamics`, the slots without their gains."""
        contacts = [replace(s, kp=0.0, kd=0.0, placement=t) for s, t in zip(self.slots, targets) if t is not None]
        return dynamics.impulse_dynamics(self.model, q, v, contacts, mu=self.mu)[0]


class StepKernel:
    """The step, the positions and the impulse (module docstring) of ``model`` with its contact
    ``slots`` and proximal damping ``mu`` compiled, one kernel each; ``quiet``: no message while
    compiling. Raises :class:`dynamics.codegen.CompileError` without a compiler.

    The step kernel's input is ``(q, v, torque, h, active (k,), targets)``, the targets per slot
    as ``p`` or ``(R row by row, p)``, its outputs ``q+, v+, a, f, converged, R (row by row), p,
    velocity``; the positions kernel's input ``(q, v, a, h)``; the impulse kernel's ``(q, v,
    active)``, its outputs ``v+, converged``."""

    def __init__(self, model, slots, mu, quiet=True):
        self.model, self.slots, self.mu = model, tuple(slots), float(mu)
        self.reference = NumpyStep(model, slots, mu)
        structure = [(s.frame, s.kind, s.reference.name, s.kp, s.kd, s.rotation_key) for s in self.slots]
        key = {"model": codegen.model_key(model), "slots": structure, "mu": self.mu, "iterations": ITERATIONS}
        key["tol"], key["source"] = TOL, codegen.source_digest(sys.modules[__name__])
        k = len(self.slots)
        self._sizes = (model.nq, model.nv, model.nv, 1, k, sum(_target_size(s) for s in self.slots))
        self._starts = np.cumsum((0,) + self._sizes)
        builds = {"step": self._step_function, "positions": self._positions_function, "impulse": self._impulse_function}
        requests = [(f"plant_{name}_{model.name}", key, build, False) for name, build in builds.items()]
        step, self._positions, self._impulse = codegen.load_all(requests, quiet)
        self._x = np.zeros((1, step.n_in))
        ends = np.cumsum(step.sizes).tolist()
        self._parts = [slice(end - n, end) for n, end in zip(step.sizes, ends)]  # the outputs in one buffer
        self._out = np.zeros(ends[-1])
        self._call = step.bind(self._x, [self._out[None, part] for part in self._parts])
        self._batch = step.address
        ends = (self._starts[5] + np.cumsum([0] + [_target_size(s) for s in self.slots])).tolist()
        self._target_rows = [  # per slot: its entry of ``active``, its target's rows, whether a point
            (self._starts[4] + i, slice(start, end), s.translational)
            for i, (s, start, end) in enumerate(zip(self.slots, ends, ends[1:]))
        ]

    def _step_function(self) -> ca.Function:
        m, slots = self.model, self.slots
        x = ca.SX.sym("x", sum(self._sizes))
        q, v, torque, h, active, targets = ca.vertsplit(x, list(self._starts))
        M, b, J, _, r = self._equations(q, v, active, targets)
        a, f, converged = _proximal_steps(M, torque - b, J, r, self.mu)
        v1 = v + h * a
        q1 = _integrate(m, q, h * v1)
        end = sx.forward(m, sx.configuration(m, q1), v1)
        placements = [sx.frame_placement(m, end, s.frame) for s in slots]
        R = ca.vertcat(ca.SX.zeros(0), *[ca.vec(Ri.T) for Ri, _ in placements])
        p = ca.vertcat(ca.SX.zeros(0), *[pi for _, pi in placements])
        velocity = ca.vertcat(ca.SX.zeros(0), *[sx.frame_velocity(m, end, s.frame) for s in slots])
        return ca.Function("plant_step", [x], [q1, v1, a, f, converged, R, p, velocity])

    def _positions_function(self) -> ca.Function:
        m = self.model
        x = ca.SX.sym("x", m.nq + 2 * m.nv + 1)
        q, v, a, h = ca.vertsplit(x, list(np.cumsum((0, m.nq, m.nv, m.nv, 1))))
        kin = sx.forward(m, sx.configuration(m, _integrate(m, q, h * (v + h * a))))
        p = ca.vertcat(ca.SX.zeros(0), *[sx.frame_placement(m, kin, s.frame)[1] for s in self.slots])
        return ca.Function("plant_positions", [x], [p])

    def _impulse_function(self) -> ca.Function:
        m = self.model
        x = ca.SX.sym("x", m.nq + m.nv + len(self.slots))
        q, v, active = ca.vertsplit(x, list(np.cumsum((0, m.nq, m.nv, len(self.slots)))))
        M, _, J, velocity, _ = self._equations(q, v, active)
        dv, _, converged = _proximal_steps(M, ca.SX.zeros(m.nv), J, -velocity, self.mu)
        return ca.Function("plant_impulse", [x], [v + dv, converged])

    def _equations(self, q, v, active, targets=None):
        """``(M, b, J, J v, alpha* - drift)`` at ``(q, v)``: the mass matrix, the bias (gravity
        included) and the slots' rows, each inactive slot's rows zero; without ``targets``, the
        last without the position errors."""
        m = self.model
        acc = ca.SX.sym("a", m.nv)
        kin = sx.forward(m, sx.configuration(m, q), v, acc)
        joint_forces = sx.rnea(m, kin)  # M a + b
        J, velocity, r, offset = [ca.SX.zeros(0, m.nv)], [ca.SX.zeros(0)], [ca.SX.zeros(0)], 0
        for i, slot in enumerate(self.slots):
            t = None if targets is None else targets[offset : offset + _target_size(slot)]
            offset += _target_size(slot)
            if t is not None and not slot.translational:
                t = (ca.reshape(t[:9], 3, 3).T, t[9:])
            contact = sx.contact_rows(m, kin, slot, ca.SX.zeros(slot.dim), t)
            drift = ca.substitute(contact.acceleration, acc, ca.SX.zeros(m.nv))
            alpha = -slot.kd * contact.velocity
            if slot.kp > 0 and t is not None:
                alpha = alpha - slot.kp * contact.error
            J.append(active[i] * ca.jacobian(contact.acceleration, acc))
            velocity.append(active[i] * contact.velocity)
            r.append(active[i] * (alpha - drift))
        M, b = ca.jacobian(joint_forces, acc), ca.substitute(joint_forces, acc, ca.SX.zeros(m.nv))
        return M, b, ca.vertcat(*J), ca.vertcat(*velocity), ca.vertcat(*r)

    def __call__(self, q, v, torque, h, targets) -> StepResult:
        """The step over ``h`` with ``targets`` (as :meth:`NumpyStep.__call__`); by numpy where the
        compiled proximal steps do not meet the tolerance."""
        x, s = self._x[0], self._starts
        x[s[0] : s[1]], x[s[1] : s[2]], x[s[2] : s[3]], x[s[3]] = q, v, torque, h
        for (active, rows, point), target in zip(self._target_rows, targets):
            x[active] = target is not None
            if target is not None:
                x[rows] = target if point else np.concatenate([np.ravel(t) for t in target])
        self._call()
        out = self._out.copy()
        q1, v1, a, f, converged, R, p, velocity = (out[part] for part in self._parts)
        if not converged[0]:
            return self.reference(q, v, torque, h, targets)
        k = len(self.slots)
        return StepResult(q1, v1, a, f, R.reshape(k, 3, 3), p.reshape(k, 3), velocity.reshape(k, 3))

    def native(self) -> tuple:
        """The step as compiled code calls it (``ideal_steps.c``): the address of its kernel's
        batch function, that of its input row, and its outputs' addresses (a ctypes array, to be
        kept alive)."""
        outputs = (ctypes.c_void_p * len(self._parts))(*(address(self._out[part]) for part in self._parts))
        return self._batch, address(self._x), outputs

    def positions(self, q, v, a, h) -> np.ndarray:
        """As :meth:`NumpyStep.positions`, in one call."""
        h = np.asarray(h, dtype=float)
        return self._positions(_input_rows(q, v, a, h[:, None]))[0].reshape(len(h), len(self.slots), 3)

    def impulse(self, q, v, targets) -> np.ndarray:
        """As :meth:`NumpyStep.impulse`; by numpy where the compiled proximal steps do not meet
        the tolerance."""
        v_plus, converged = self._impulse(_input_rows(q, v, [[t is not None for t in targets]]))
        return v_plus[0] if converged[0, 0] else self.reference.impulse(q, v, targets)


def _input_rows(*parts) -> np.ndarray:
    """The kernel input rows ``(S, n)`` of ``parts`` (each a vector or ``(S, .)``)."""
    parts = [np.atleast_2d(np.asarray(x, dtype=float)) for x in parts]
    count = max(len(x) for x in parts)
    return np.concatenate([np.broadcast_to(x, (count, x.shape[1])) for x in parts], axis=1)


def _integrate(model, q, dq):
    """``q (+) dq`` as :func:`dynamics.integrate` computes it: :func:`dynamics.symbolic.integrate`,
    the free flyer's quaternion then normalized and kept in the half-space of ``q``'s."""
    out = sx.integrate(model, q, dq)
    if not model.tree.free_flyer:
        return out
    quat = out[3:7] / ca.norm_2(out[3:7])
    quat = ca.if_else(ca.dot(quat, q[3:7]) < 0, -quat, quat)
    return ca.vertcat(out[:3], quat, out[7:])


def _proximal_steps(M, h, J, r, mu):
    """``(x, f, converged)``: the proximal steps from zero forces (module docstring), the first
    pair whose residual meets :data:`TOL` kept (the last if none, ``converged`` 0)."""
    m = J.shape[0]
    if m == 0:
        return ca.solve(M, h), ca.SX.zeros(0), ca.SX(1)
    solved = ca.solve(M, ca.horzcat(h, J.T))
    w, Y = solved[:, 0], solved[:, 1:]  # M^-1 h, M^-1 J^T
    osim = ca.solve(J @ Y + mu * ca.SX.eye(m), ca.SX.eye(m))  # the damped OSIM
    f = ca.SX.zeros(m)
    residual = r - J @ w
    pairs = []
    for _ in range(ITERATIONS):
        f = f + osim @ residual
        x = w + Y @ f
        residual = r - J @ x
        pairs.append((x, f, ca.norm_inf(residual) <= TOL))
    x, f, converged = pairs[-1]
    for x_k, f_k, met in reversed(pairs[:-1]):
        x, f, converged = ca.if_else(met, x_k, x), ca.if_else(met, f_k, f), ca.if_else(met, 1, converged)
    return x, f, converged


def step_backend(model, slots, mu, backend="compiled"):
    """The step of ``model`` with its contact ``slots``: :class:`StepKernel` for ``"compiled"``
    (:class:`NumpyStep` after one warning line when it cannot compile), :class:`NumpyStep` for
    ``"numpy"``."""
    if backend == "compiled":
        try:
            return StepKernel(model, slots, mu)
        except codegen.CompileError as e:
            print(f"liftoff: warning: {e}; the plant steps in numpy", file=sys.stderr)
    return NumpyStep(model, slots, mu)
