"""Polishing with Talos (seed 001 Sec. IV): the task's configuration and its OCP.

The upper body of Talos in MPC: the ``controlled`` joints (torso_1, torso_2, arm_right_1..4
by default, ``nq = nv = 6``) move, every other joint is locked at the SRDF ``posture``
(``half_sitting``; joints the posture does not name at 0) and the base is fixed. The gripper
of the right wrist (``tool.frame``, ``arm_right_7_link``) holds a pad, a sphere of
``tool.radius``; the OCP's contact frame ``tool`` is the pad's contact point, ``tool.position``
in the wrist's frame. It presses on a flat surface of outward normal ``surface.normal`` (any
world direction: ``[0, 0, 1]`` a horizontal table, ``[0, 1, 0]`` a vertical board, a tilted
board between) through a 1D contact along that normal in LOCAL_WORLD_ALIGNED (the world axes
centred on the tool, seed 001's heart frame), its axes turned so that its third is the
normal (:class:`dynamics.Contact`'s ``rotation``). The surface passes through the tool's
initial position (moved by ``surface.offset`` along the normal); in the OCP the contact is
bilateral with Baumgarte gains ``kp, kd`` toward it (``contacts.model: rigid``, the default),
or soft (``contacts.model: soft``, :class:`ContactModel`): a spring-damper force of the state
(:class:`dynamics.SoftContact`, seed 002) with the surface's friction, regularized, in place
of the sliding friction below. The surface's Coulomb friction
``surface.friction`` resists the pad's sliding: the OCP models it as the force ``-mu f_n d``,
``d`` the direction of the circle at each stage (:class:`ocp.problem.SlidingFriction`, lifted
formulation), unless ``surface.model_friction`` is false.

The cost of each stage (seed 001 eq. 50, without its barrier penalties, which are left to
the exact limits below):

- state regularization toward the initial state, ``costs.state`` times the per-joint
  ``position_weights`` and ``velocity_weight``; at the terminal stage ``costs.terminal_state``;
- normal-force tracking of ``surface.force`` newtons, weight ``costs.force``; with a soft
  contact, whose force is no variable, a cost on the penetration instead
  (:class:`ocp.costs.PlaneDistanceCost`): toward the penetration ``d*`` whose force at rest is
  ``surface.force`` (:meth:`Polishing.penetration`), weight ``costs.force (df_n/dd)^2`` at
  ``d*`` (the force cost to first order), the circle's normal coordinate moved to ``d*`` too;
- tool position tracking of a circle in the surface plane, weight ``costs.tool_position``
  (on every axis: the contact holds the normal one): radius ``circle.radius``, angular
  velocity ``circle.angular_velocity``, starting at the tool's initial position;
- tool orientation toward its initial one (the SO(3) logarithm of the error),
  ``costs.tool_orientation``;
- control regularization around the gravity torques of the initial configuration,
  ``costs.control``.

With ``torque_filter`` (the cut-off frequency ``f_c``, 5 Hz by default; seed 001 eq. 46-49)
the joint torques ``tau`` are part of the state, ``(q, v, tau)``, and the control is the
unfiltered torque ``w`` of the filter ``tau_dot = 2 pi f_c (w - tau)``: the MPC reads the
measured torques and commands ``w``. ``tau`` is then regularized around gravity compensation
too (``costs.torque``). With ``torque_filter: null`` the state is ``(q, v)`` and the control
the torques.

The joint position, velocity and torque limits (``limits``; the torque limits bound ``tau``
with a filter) are exact inequalities of the interior point; ``w`` has no limits, only its
regularization. The joints' damping and Coulomb friction are the URDF's (``joint_friction``).

Offset-free MPC: each horizon takes the generalized force its model misses as the plant's
measurements show it (:mod:`problems.mpc.observer`, filtered over ``observer.time_constant``;
``build_ocp``'s ``disturbance``): what a model error (a heavier arm, a joint's stiction) would
leave as a constant force error, the MPC compensates.

The MPC's builder is :class:`Horizons`: a stage depends on its start time only, so its horizons
recede stage by stage, and its updates move a compiled horizon in place
(:mod:`problems.mpc.controller`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from liftoff import dynamics
from liftoff.dynamics import Contact, SoftContact
from liftoff.dynamics.model import close_names
from liftoff.dynamics.robots import named_configuration
from liftoff.dynamics.soft_contact import LAWS, normal_force
from liftoff.ocp.costs import FramePositionCost, FrameRotationCost, PlaneDistanceCost, StateCost, VariableCost
from liftoff.ocp.problem import OCP, ContactStage, SlidingFriction

from .config import (
    LIMITS,
    MPC_SCHEMES,
    ConfigError,
    JointFriction,
    PlantBase,
    ProblemError,
    Solver,
    at_least,
    at_most,
    check,
    convert_fields,
    no_duplicates,
    one_of,
)

TOOL_FRAME = "tool"  # the OCP's contact frame, added to the model at the pad's contact point
CONTACT_MODELS = ("rigid", "soft")  # the OCP's models of the pad's contact (contacts.model)
UPPER_BODY = (
    "torso_1_joint",
    "torso_2_joint",
    "arm_right_1_joint",
    "arm_right_2_joint",
    "arm_right_3_joint",
    "arm_right_4_joint",
)


@dataclass(frozen=True, kw_only=True)
class Surface:
    normal: tuple[float, float, float] = (
        0.0,
        0.0,
        1.0,
    )  # the outward normal (world axes; normalized): the direction of its force on the tool
    force: float = 30.0  # in (0, 1e3]: the normal force to exert (N)
    offset: float = 0.0  # |.| <= 1: the surface's distance from the tool's initial position along the normal (m)
    friction: float = 0.0  # in [0, 2]: the Coulomb coefficient between the pad and the surface
    model_friction: bool = True  # the OCP models the pad's sliding friction (lifted formulation)
    kp: float = 5.0  # in [0, 1e4]: Baumgarte position gain of the contact
    kd: float = 10.0  # in [0, 1e4]: Baumgarte velocity gain

    def __post_init__(self):
        convert_fields(self)
        n = np.asarray(self.normal, dtype=float)
        scale = float(np.abs(n).max()) if np.all(np.isfinite(n)) else 0.0
        length = scale * float(np.linalg.norm(n / scale)) if scale > 0 else 0.0
        check(length > 1e-9, "normal", "a non-zero direction [x, y, z]", self.normal)
        if scale > 1e150:  # its squares overflow: normalized from n / scale
            n = n / scale
        object.__setattr__(self, "normal", tuple(float(x) for x in n / np.linalg.norm(n)))
        at_least(self, ("force",), 0, strict=True)
        at_least(self, ("kp", "kd", "friction"), 0)
        at_most(self, ("force",), 1e3)
        at_most(self, ("kp", "kd"), 1e4)
        at_most(self, ("friction",), 2.0)
        at_most(self, ("offset",), 1.0, magnitude=True)

    @functools.cached_property
    def axes(self) -> np.ndarray:
        """``(e1, e2, n)`` as the columns of a rotation: the surface plane's axes, then the normal.
        ``e1`` is the world axis least aligned with the normal, projected on the plane (x for a
        table, x for a board facing y), ``e2 = n x e1``."""
        n = np.asarray(self.normal)
        e1 = np.eye(3)[int(np.argmin(np.abs(n)))]
        e1 = e1 - (e1 @ n) * n
        e1 = e1 / np.linalg.norm(e1)
        return np.column_stack((e1, np.cross(n, e1), n))


@dataclass(frozen=True, kw_only=True)
class ContactModel:
    """How the OCP models the pad's contact with the surface: ``rigid``, a bilateral 1D
    constraint along the normal with the Baumgarte gains ``surface.kp, kd``, its force a
    variable; or ``soft``, a spring-damper force of the state (:class:`dynamics.SoftContact`,
    seed 002), ``stiffness`` and ``damping`` on the penetration ``d`` of the contact point into
    the surface plane, by the ``law`` ``linear`` (``k d + c d_dot``) or ``hunt_crossley`` (``k
    d^e (1 + c d_dot)``), no pull, its kinks smoothed over ``depth_width`` and ``force_width``,
    the surface's friction regularized Coulomb over ``slip_width``: an approximation that gives
    ``0.57 mu f_n`` at the circle's 7 cm/s with the default 0.1 m/s. Sharper widths make the
    Newton iterations oscillate (their Gauss-Newton Hessian leaves out the friction's curvature):
    at 0.03 m/s a 20-stage horizon does not converge in 100 iterations, at 0.1 m/s in 14."""

    model: str = "rigid"  # rigid | soft
    law: str = "linear"  # soft: linear | hunt_crossley
    stiffness: float = 1e4  # in (0, 1e8]: soft: k (N/m; hunt_crossley N/m^e)
    damping: float = 300.0  # in (0, 1e6]: soft: c (N s/m; hunt_crossley s/m)
    exponent: float = 1.5  # in [1, 3]: hunt_crossley: e
    depth_width: float = 1e-4  # in (0, 0.01]: soft: the smoothing of the contact's switch at d = 0 (m)
    force_width: float = 0.1  # in (0, 100]: soft: the smoothing of the no-pull clamp (N)
    slip_width: float = 0.1  # in (0, 1]: soft: the regularization of the Coulomb friction (m/s; module docstring)

    def __post_init__(self):
        convert_fields(self)
        one_of(self.model, CONTACT_MODELS, "model")
        one_of(self.law, LAWS, "law")
        at_least(self, ("stiffness", "damping", "depth_width", "force_width", "slip_width"), 0, strict=True)
        at_least(self, ("exponent",), 1)
        at_most(self, ("stiffness",), 1e8)
        at_most(self, ("damping",), 1e6)
        at_most(self, ("exponent",), 3)
        at_most(self, ("depth_width",), 0.01)
        at_most(self, ("force_width",), 100)
        at_most(self, ("slip_width",), 1)


@dataclass(frozen=True, kw_only=True)
class Tool:
    frame: str = "arm_right_7_link"  # the link that holds the pad
    position: tuple[float, float, float] = (0.0, 0.0, -0.28)  # the pad's contact point in that link's frame (m)
    radius: float = (
        0.03  # in (0, 0.2]: the pad, a sphere (m) whose centre is that far from the contact point along the normal
    )

    def __post_init__(self):
        convert_fields(self)
        at_least(self, ("radius",), 0, strict=True)
        at_most(self, ("radius",), 0.2)
        check(all(abs(x) <= 1 for x in self.position), "position", "coordinates within 1 m", self.position)


@dataclass(frozen=True, kw_only=True)
class Observer:
    time_constant: float = 0.02  # in [0, 1]: the disturbance observer's filter (s); 0: no observer

    def __post_init__(self):
        convert_fields(self)
        at_least(self, ("time_constant",), 0)
        at_most(self, ("time_constant",), 1.0)


@dataclass(frozen=True, kw_only=True)
class Circle:
    radius: float = 0.07  # in [0, 1]: of the circle the tool draws on the surface (m)
    angular_velocity: float = 1.0  # |.| <= 20: along the circle (rad/s)
    start_angle: float = 0.0  # |.| <= 2 pi: the angle of the tool's initial position on the circle (rad)

    def __post_init__(self):
        convert_fields(self)
        at_least(self, ("radius",), 0)
        at_most(self, ("radius",), 1.0)
        at_most(self, ("angular_velocity",), 20.0, magnitude=True)
        at_most(self, ("start_angle",), 2 * np.pi, magnitude=True)


@dataclass(frozen=True, kw_only=True)
class PolishingCosts:
    """Cost weights (all in [0, 1e12])."""

    state: float = 0.01  # state regularization toward the initial state
    position_weights: tuple[float, ...] = (20.0, 20.0, 10.0, 10.0, 10.0, 10.0)  # per controlled joint
    velocity_weight: float = 1.0  # per joint velocity
    terminal_state: float = 1.0  # the state regularization's weight at the terminal stage
    force: float = 10.0  # normal-force tracking
    tool_position: float = 20.0  # circle tracking, on the two in-plane axes
    tool_orientation: float = 0.1  # the tool's orientation toward its initial one (1.0 costs 12 mm of circle)
    control: float = 1e-4  # the control (torques, or the filter's input w), around gravity compensation
    torque: float = 1e-4  # the torque state tau (with a torque filter), around gravity compensation

    def __post_init__(self):
        convert_fields(self)
        names = (
            "state",
            "velocity_weight",
            "terminal_state",
            "force",
            "tool_position",
            "tool_orientation",
            "control",
            "torque",
        )
        at_least(self, names, 0)
        at_most(self, names, 1e12)
        check(
            all(0 <= w <= 1e12 for w in self.position_weights),
            "position_weights",
            "weights in [0, 1e12]",
            self.position_weights,
        )


@dataclass(frozen=True, kw_only=True)
class MPCSettings:
    dt: float = 0.01  # in (0, 1]: the OCP's time step (s)
    horizon: int = 50  # in [1, 1e4]: stages of the OCP
    period: float = 0.01  # in (0, 1]: time between MPC updates (s), a multiple of dt
    iterations: int = 1  # in [1, 100]: Newton iterations per update
    first_iterations: int = 100  # in [1, 1e4]: Newton iterations of the first solve
    scheme: str = "newton"  # newton | rti: the policy from a linearization after the iterations, or from the last one
    duration: float = 10.0  # in (0, 1e4]: simulated time (s)

    def __post_init__(self):
        convert_fields(self)
        at_least(self, ("dt", "period", "duration"), 0, strict=True)
        at_least(self, ("horizon", "iterations", "first_iterations"), 1)
        one_of(self.scheme, MPC_SCHEMES, "scheme")
        at_most(self, ("dt", "period"), 1.0)
        at_most(self, ("duration",), 1e4)
        at_most(self, ("horizon", "first_iterations"), 10_000)
        at_most(self, ("iterations",), 100)
        shift = self.period / self.dt
        check(abs(shift - round(shift)) < 1e-9 * shift, "period", f"a multiple of mpc.dt = {self.dt:g}", self.period)


@dataclass(frozen=True, kw_only=True)
class PlantSettings(PlantBase):
    """The simulated plant (:mod:`problems.mpc.plants`)."""

    scaled_joints: tuple[str, ...] = UPPER_BODY[2:]  # the bodies whose mass --mass-scale multiplies (the arm's)

    def __post_init__(self):
        super().__post_init__()
        no_duplicates(self.scaled_joints, "scaled_joints")


@dataclass(frozen=True, kw_only=True)
class PolishingConfig:
    name: str = ""  # label for plots; the file stem if empty
    task: str  # required: polishing
    robot: str = "talos"  # a robot of dynamics.ROBOTS with named configurations
    controlled: tuple[str, ...] = UPPER_BODY  # the joints in MPC; the others are locked
    posture: str = "half_sitting"  # the SRDF configuration of the locked joints and the initial state
    tool: Tool = field(default_factory=Tool)
    torque_filter: float | None = 5.0  # in (0, 1e3]: cut-off frequency of the torque filter (Hz); null: none
    surface: Surface = field(default_factory=Surface)
    contacts: ContactModel = field(default_factory=ContactModel)
    circle: Circle = field(default_factory=Circle)
    costs: PolishingCosts = field(default_factory=PolishingCosts)
    limits: tuple[str, ...] = LIMITS  # imposed exactly: a subset of position, velocity, torque
    joint_friction: JointFriction = field(default_factory=JointFriction)
    observer: Observer = field(default_factory=Observer)
    solver: Solver = field(default_factory=Solver)
    mpc: MPCSettings = field(default_factory=MPCSettings)
    plant: PlantSettings = field(default_factory=PlantSettings)

    def __post_init__(self):
        convert_fields(self)
        one_of(self.task, ("polishing",), "task")
        at_least(self, ("torque_filter",), 0, strict=True)
        at_most(self, ("torque_filter",), 1e3)
        one_of(self.robot, tuple(dynamics.ROBOTS), "robot", what="robot")
        check(len(self.controlled) > 0, "controlled", "a non-empty list of joint names", self.controlled)
        no_duplicates(self.controlled, "controlled")
        joints = dynamics.load(self.robot, floating_base=False).joint_names
        for i, joint in enumerate(self.controlled):  # before the lists whose lengths follow them
            if joint not in joints:
                close = close_names(joint, joints, n=3)
                hint = f"; did you mean {', '.join(close)}?" if close else ""
                raise ConfigError(f"{self.robot} has no joint {joint!r}{hint}", f"controlled[{i}]")
        for i, limit in enumerate(self.limits):
            one_of(limit, LIMITS, f"limits[{i}]", what="limit")
        no_duplicates(self.limits, "limits")
        steps = self.mpc.period / self.plant.dt
        ok = abs(steps - round(steps)) < 1e-9 * steps
        check(ok, "plant.dt", f"a divisor of mpc.period = {self.mpc.period:g}", self.plant.dt)
        n = len(self.controlled)
        check(
            len(self.costs.position_weights) == n,
            "costs.position_weights",
            f"{n} weights (one per controlled joint)",
            self.costs.position_weights,
        )


@dataclass(frozen=True)
class SharedTerms:
    """What every stage of the polishing OCP shares: its ``contacts`` and ``soft`` contacts, the
    cost terms ``before`` and ``after`` the tool's (the tool's reference is the stage's), the
    tool's ``tool_weights``, the ``depth`` of its reference below the surface (a soft contact's
    penetration at the target force, else 0), and the ``terminal`` cost."""

    contacts: tuple
    soft: tuple
    before: tuple
    after: tuple
    tool_weights: np.ndarray
    depth: float
    terminal: tuple


@dataclass(frozen=True)
class Polishing:
    """The task made concrete: the reduced ``model`` (with the contact frame ``tool``), the
    ``locked`` joints and their values, the initial state ``(q0, v0)``, the tool's initial
    position ``p0`` and rotation ``R0``, the gravity torques ``u_gravity`` at ``q0`` and the
    torques ``u_pressing`` that hold ``q0`` still while pressing with the target force (the
    initial torques with a torque filter)."""

    config: PolishingConfig
    model: object
    locked: dict
    q0: np.ndarray
    v0: np.ndarray
    p0: np.ndarray
    R0: np.ndarray
    u_gravity: np.ndarray
    u_pressing: np.ndarray
    _stages: dict = field(default_factory=dict, compare=False, repr=False)  # by start time (:meth:`stages`)

    @functools.cached_property
    def normal(self) -> np.ndarray:
        return np.asarray(self.config.surface.normal)

    @functools.cached_property
    def plane(self) -> np.ndarray:
        """``(3, 2)``: the surface plane's axes ``e1, e2`` (the circle's first and second)."""
        return self.config.surface.axes[:, :2]

    def surface_point(self) -> np.ndarray:
        s = self.config.surface
        return self.p0 + s.offset * self.normal

    def circle(self, t) -> np.ndarray:
        """The tool's reference positions ``(len(t), 3)`` at times ``t``: on the circle in the
        surface plane through ``p0``, where it starts at ``t = 0`` at the angle ``start_angle``
        from the first in-plane axis ``e1`` toward the second ``e2``; the normal coordinate
        that of the surface."""
        return self._on_circle(*self._angles(t))

    def _angles(self, t) -> tuple:
        """``(sin, cos)`` ``(len(t), 1)`` of the circle's angle at times ``t``."""
        c = self.config.circle
        angle = c.start_angle + c.angular_velocity * np.asarray(t, dtype=float).reshape(-1, 1)
        return np.sin(angle), np.cos(angle)

    def _on_circle(self, sin, cos) -> np.ndarray:
        """:meth:`circle` at the angles of sines and cosines ``(n, 1)``."""
        e1, e2, start, center = self._circle_frame
        return center + self.config.circle.radius * (cos * e1 + sin * e2 - start)

    @functools.cached_property
    def _circle_frame(self) -> tuple:
        """``(e1, e2, start, center)``: the plane's axes, the circle's start on them (unit) and the
        surface point the circle is drawn around."""
        a = self.config.circle.start_angle
        e1, e2 = self.plane.T
        return e1, e2, np.cos(a) * e1 + np.sin(a) * e2, self.surface_point()

    def contact(self) -> Contact:
        """The OCP's contact: the tool held along the normal (the third of the surface's axes)."""
        s = self.config.surface
        return Contact(
            TOOL_FRAME, "z", "LOCAL_WORLD_ALIGNED", kp=s.kp, kd=s.kd, placement=self.surface_point(), rotation=s.axes
        )

    @property
    def soft(self) -> bool:
        """Whether the OCP's contact is soft (``contacts.model``)."""
        return self.config.contacts.model == "soft"

    def soft_contact(self) -> SoftContact:
        """The OCP's soft contact (``contacts.model: soft``): the tool's contact point against the
        surface plane, with the surface's friction when the OCP models it."""
        s, m = self.config.surface, self.config.contacts
        mu = s.friction if s.model_friction else 0.0
        return SoftContact(
            TOOL_FRAME,
            self.surface_point(),
            s.normal,
            m.stiffness,
            m.damping,
            m.law,
            m.exponent,
            mu,
            m.depth_width,
            m.force_width,
            m.slip_width,
        )

    def penetration(self) -> tuple:
        """``(d*, df_n/dd at d*)``: the penetration at rest (``d_dot = 0``) whose soft normal force
        is ``surface.force``, by Newton's method on the smoothed law from the exact one's
        ``(F/k)^(1/e)`` (``e = 1``: linear), and the force's stiffness there."""
        contact, force = self.soft_contact(), self.config.surface.force
        d = (force / contact.stiffness) ** (1.0 / (1.0 if contact.law == "linear" else contact.exponent))
        for _ in range(20):
            f, df_dd, _ = normal_force(contact, np.array(d), np.array(0.0))
            d = d - (f - force) / df_dd
            if abs(f - force) <= 1e-12 * force:
                break
        return float(d), float(normal_force(contact, np.array(d), np.array(0.0))[1])

    def sliding(self, t) -> tuple:
        """The sliding friction the OCP models at time ``t``: opposite to the circle's velocity
        (none on a frictionless surface or a circle that does not move; with a soft contact, its
        own regularized Coulomb friction)."""
        return self.slidings(np.array([t]))[0]

    def slidings(self, times) -> list:
        """:meth:`sliding` at each of ``times``."""
        return self._slidings(*self._angles(times))

    def _slidings(self, sin, cos) -> list:
        """:meth:`slidings` at the circle's angles of sines and cosines ``(n, 1)``."""
        if not self.slides:
            return [()] * len(sin)
        mu = self.config.surface.friction
        return [(SlidingFriction(0, mu, tangent),) for tangent in self._tangents(sin, cos)]

    @functools.cached_property
    def slides(self) -> bool:
        """Whether the OCP models a sliding friction (:meth:`sliding`)."""
        s, c = self.config.surface, self.config.circle
        return bool(s.friction and s.model_friction and c.radius and c.angular_velocity and not self.soft)

    def tangents(self, times) -> np.ndarray:
        """The circle's unit tangents ``(len(times), 3)`` in the direction it runs at ``times``."""
        return self._tangents(*self._angles(times))

    def _tangents(self, sin, cos) -> np.ndarray:
        """:meth:`tangents` at the circle's angles of sines and cosines."""
        across, along = self._tangent_axes
        return sin * across + cos * along

    @functools.cached_property
    def _tangent_axes(self) -> tuple:
        """``(-e1, e2)`` in the direction the circle runs: the tangent at the angle ``a`` is
        ``sin(a)`` times the first plus ``cos(a)`` times the second."""
        e1, e2 = np.sign(self.config.circle.angular_velocity) * self.plane.T
        return -e1, e2

    def modelled_forces(self, times, forces, points, q, v) -> tuple:
        """The forces the OCP's contact model gives for the pad's measured world ``forces (S, 3)``
        at ``points (S, 3)`` over steps at ``times (S,)`` that end at the states ``q (S, nq)``,
        ``v (S, nv)``: their normal components and the sliding friction at those normal forces
        (for a disturbance observer, :mod:`problems.mpc.observer`). ``(points, forces)`` ``(S, 1,
        3)``: one point force, at the pad's frame."""
        normal = self.normal_force(forces)
        modelled = normal[:, None] * self.normal
        if self.slides:
            modelled = modelled - (normal * self.config.surface.friction)[:, None] * self.tangents(times)
        if self.soft:  # the soft contact's friction at the measured velocity and normal force, where it presses
            contact, n = self.soft_contact(), self.normal
            J = dynamics.frame_jacobian(self.model, np.asarray(q), TOOL_FRAME, "LOCAL_WORLD_ALIGNED")[:, :3]
            v_t = np.einsum("sij,sj->si", J, np.asarray(v))
            v_t = v_t - (v_t @ n)[:, None] * n
            friction = (contact.friction * np.maximum(normal, 0.0))[:, None] * v_t
            modelled = modelled - friction / np.sqrt(np.sum(v_t * v_t, axis=1) + contact.slip_width**2)[:, None]
        return np.asarray(points, dtype=float)[:, None], modelled[:, None]

    def stages(self, t0) -> tuple:
        """The OCP's ``mpc.horizon`` contact stages of ``mpc.dt`` from time ``t0`` (module
        docstring). A stage depends on its start time only: each is made once, and kept while a
        later horizon may still hold it (an MPC's horizons share all but their last stages)."""
        dt, n = self.config.mpc.dt, self.config.mpc.horizon
        times = t0 + dt * np.arange(n)
        keys = times.round(9).tolist()  # the start times to the nanosecond
        stages = list(map(self._stages.get, keys))
        missing = [j for j, stage in enumerate(stages) if stage is None]  # by identity: no stage is compared
        if missing:
            for key in [key for key in self._stages if key < keys[0]]:  # before this horizon: no later one holds it
                del self._stages[key]
            s = self.shared_terms
            sin, cos = self._angles(times[missing])
            references = self._on_circle(sin, cos) - s.depth * self.normal
            for j, reference, sliding in zip(missing, references, self._slidings(sin, cos)):
                tool = FramePositionCost(TOOL_FRAME, reference, s.tool_weights, "tool")
                stage = ContactStage(s.contacts, dt, s.before + (tool,) + s.after, sliding, s.soft)
                stages[j] = self._stages[keys[j]] = stage
        return tuple(stages)

    @functools.cached_property
    def shared_terms(self) -> SharedTerms:
        """What the OCP's stages share (:class:`SharedTerms`), made once."""
        cfg, model = self.config, self.model
        c = cfg.costs
        state_weights = np.concatenate((c.position_weights, np.full(model.nv, c.velocity_weight)))
        zero_v = np.zeros(model.nv)
        depth = 0.0
        if self.soft:  # the force is the state's: its cost is one on the penetration that gives it
            depth, stiffness = self.penetration()
            offset = np.array([self.normal @ self.surface_point() - depth])
            weight = np.array([c.force * stiffness**2])
            force = PlaneDistanceCost(TOOL_FRAME, self.normal, offset, weight, "penetration")
            contacts, soft = (), (self.soft_contact(),)
        else:
            force = VariableCost("f", np.array([cfg.surface.force]), np.array([c.force]), "force")
            contacts, soft = (self.contact(),), ()
        filtered = cfg.torque_filter is not None
        torque = (VariableCost("tau", self.u_gravity, c.torque * np.ones(model.nv), "torque"),) if filtered else ()
        state = StateCost(self.q0, zero_v, c.state * state_weights, "state")
        orientation = FrameRotationCost(TOOL_FRAME, self.R0, c.tool_orientation * np.ones(3), "orientation")
        control = VariableCost("u", self.u_gravity, c.control * np.ones(model.nv), "control")
        terminal = (StateCost(self.q0, zero_v, c.terminal_state * state_weights, "state"),)
        after, tool_weights = (orientation, control) + torque, np.full(3, c.tool_position)
        return SharedTerms(contacts, soft, (state, force), after, tool_weights, depth, terminal)

    def normal_force(self, force) -> np.ndarray:
        """The force the surface applies along its outward normal, from world forces ``(..., 3)``."""
        return np.asarray(force) @ self.normal


def make_task(config: PolishingConfig) -> Polishing:
    """The reduced model and the initial state of ``config``; :class:`ProblemError` for names
    the robot does not have."""
    try:
        posture = named_configuration(config.robot, config.posture)
    except dynamics.ModelError as e:
        raise ProblemError(f"posture: {e}") from None
    full = dynamics.load(config.robot, floating_base=False)
    for joint in config.controlled:
        if joint not in full.joint_names:
            close = close_names(joint, full.joint_names, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise ProblemError(f"controlled: {config.robot} has no joint {joint!r}{hint}")
    for joint in config.plant.scaled_joints:
        if joint not in config.controlled:
            raise ProblemError(f"plant.scaled_joints: {joint!r} is not a controlled joint (the others are locked)")
    locked = {j: posture.get(j, 0.0) for j in full.joint_names if j not in config.controlled}
    jf = config.joint_friction
    model = dynamics.keep_joint_friction(
        dynamics.load(config.robot, floating_base=False, locked_joints=locked), jf.damping, jf.coulomb
    )
    tool = config.tool
    if tool.frame not in model.frame_names:
        close = close_names(tool.frame, model.frame_names, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise ProblemError(f"tool.frame: {config.robot} has no frame {tool.frame!r}{hint}")
    model = dynamics.add_frame(model, TOOL_FRAME, tool.frame, translation=tool.position)
    q0 = np.array([posture.get(j, 0.0) for j in model.joint_names])
    v0 = np.zeros(model.nv)
    R0, p0 = dynamics.frame_placement(model, q0, TOOL_FRAME)
    u_gravity = dynamics.rnea(model, q0, v0, v0)
    J = dynamics.frame_jacobian(model, q0, TOOL_FRAME, "LOCAL_WORLD_ALIGNED")[:3]
    s = config.surface
    u_pressing = u_gravity - J.T @ (s.force * np.asarray(s.normal))  # the surface's force on the tool
    return Polishing(config, model, locked, q0, v0, np.asarray(p0), np.asarray(R0), u_gravity, u_pressing)


def build_ocp(task: Polishing, t0=0.0, q0=None, v0=None, tau0=None, disturbance=None) -> OCP:
    """The OCP of the horizon starting at time ``t0`` from ``(q0, v0)`` and the torques ``tau0``
    with a filter (default: the task's initial state, pressing): ``mpc.horizon`` contact stages
    of ``mpc.dt`` (module docstring, :meth:`Polishing.stages`); ``disturbance (nv,)``: the
    generalized force the model misses, as the controller estimates it (:class:`ocp.problem.OCP`)."""
    cfg = task.config
    filtered = cfg.torque_filter is not None
    q0 = task.q0 if q0 is None else q0
    v0 = task.v0 if v0 is None else v0
    tau0 = (task.u_pressing if tau0 is None else tau0) if filtered else None
    width = cfg.joint_friction.width
    stages, terminal = task.stages(t0), task.shared_terms.terminal
    return OCP(task.model, q0, v0, stages, terminal, None, cfg.limits, cfg.torque_filter, tau0, width, disturbance)


@dataclass(frozen=True)
class Horizons:
    """The polishing MPC's problem builder (:class:`problems.mpc.controller.MPC`): ``(t, q, v,
    tau) -> OCP``, :func:`build_ocp` with the disturbance ``estimate()`` (None: none). Its
    horizons recede stage by stage (:meth:`next_stage`)."""

    task: Polishing
    estimate: Callable = lambda: None

    def __call__(self, t, q, v, tau=None) -> OCP:
        return build_ocp(self.task, t, q, v, tau, self.estimate())

    def next_stage(self, t) -> tuple:
        """The last stage of the horizon at ``t``, and the disturbance of its OCP."""
        return self.task.stages(t)[-1], self.estimate()
