"""Gait-optimization runs described in YAML, loaded into frozen, validated dataclasses.

    robot: anymal
    contacts: {feet: [LF_FOOT, LH_FOOT, RF_FOOT, RH_FOOT]}
    gait:
      dt: 0.02
      horizon: 40
      step_length: 0.15
      step_height: 0.1
      phases:
        - {contact: [LF_FOOT, LH_FOOT, RF_FOOT, RH_FOOT], knots: 10}
        - {contact: [LH_FOOT, RF_FOOT], duration: 0.2}     # LF and RH swing
        - {contact: [LF_FOOT, RH_FOOT], knots: 10}         # LH and RF swing
        - {contact: [LF_FOOT, LH_FOOT, RF_FOOT, RH_FOOT], knots: 10}
    solver: {barrier: 1e-3, max_iterations: 50}

The dataclasses below are the schema: each field's type, default and meaning are written
next to it, and nowhere else. A section or key left out takes its default (``costs:
{control: 0.2}`` keeps the other cost weights); keys without a default are required.

Validation happens when a section is constructed, whether from YAML (:func:`load_config`),
from a dict (:func:`parse_config`) or in Python (``Solver(barrier=0)`` raises too): every
field is converted to its declared type by one generic function (:func:`_convert`), then
each class's ``__post_init__`` checks its values. Conversions: lists become tuples, an int
is accepted for a float (a bool is not), and a string is accepted for a float if
``float()`` reads it (PyYAML reads ``1e-4``, without a dot, as a string); floats must be
finite. Unknown keys are rejected. Every failure is one :class:`ConfigError` line naming
the source, the key path and what was expected::

    configs/trot.yaml: gait.phases[2].knots: expected an integer >= 1, got -3
"""

from __future__ import annotations

import dataclasses
import functools
import math
import numbers
import types
import typing
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import yaml

from liftoff import dynamics
from liftoff.dynamics.simulator import CONTACT_MODELS, SOLVERS  # the liftoff engine's plant.contact
from liftoff.solvers.ipm import BARRIER_UPDATES, HESSIANS, Options

REFERENCES = ("LOCAL", "WORLD", "LOCAL_WORLD_ALIGNED")
LIMITS = ("position", "velocity", "torque")
FORMULATIONS = ("lifted", "nonlifted")
BACKENDS = ("compiled", "numpy")
INITS = ("static", "zero_torque")
ENGINES = ("mujoco", "liftoff")
SWING_PROFILES = ("parabola", "triangle")
COM_REFERENCES = ("standing", "feet")
PHASE_KINDS = ("stance", "swing", "rising", "falling", "landed")  # problems.tasks.gaits.phase_kind
MPC_SCHEMES = ("newton", "rti")  # problems.mpc.controller.SCHEMES
RELATIVE_TOL = 1e-9  # a phase duration must be this close (relative) to a multiple of gait.dt


class ProblemError(ValueError):
    """A configuration that is valid YAML but does not fit the robot."""


@contextmanager
def naming(source):
    """Problem errors raised in the block name the file ``source`` they come from."""
    try:
        yield
    except ProblemError as err:
        raise ProblemError(f"{source}: {err}") from None


class ConfigError(ValueError):
    """An invalid configuration: ``source: key.path: problem``, on one line.

    ``source`` is the file (or ``"<config>"``), ``path`` the dotted key path with list
    indices (``gait.phases[2].knots``, empty for the whole document), ``problem`` what was
    expected and what was found.
    """

    def __init__(self, problem: str, path: str = "", source: str = ""):
        self.problem, self.path, self.source = problem, path, source
        super().__init__(": ".join(part for part in (source, path, problem) if part))

    def within(self, prefix: str) -> ConfigError:
        """The same error for a key path under ``prefix``."""
        return ConfigError(self.problem, _join(prefix, self.path), self.source)

    def at(self, source: str) -> ConfigError:
        """The same error read from ``source``."""
        return ConfigError(self.problem, self.path, str(source))


# ----------------------------------------------------------------------------- schema


@dataclass(frozen=True, kw_only=True)
class InitialState:
    q: str | tuple[float, ...] = "standing"  # a named configuration of the robot, or its nq values
    v: str | tuple[float, ...] = "zero"  # "zero", or the nv values

    def __post_init__(self):
        convert_fields(self)
        check(self.q != "" and self.q != (), "q", "a configuration name or the nq values", self.q)
        check(self.v == "zero" or isinstance(self.v, tuple), "v", "'zero' or the nv values", self.v)


@dataclass(frozen=True, kw_only=True)
class Baumgarte:
    """Contact-acceleration target ``-2 alpha pdot - beta^2 p`` (seed 004 eq. 5)."""

    alpha: float = 25.0  # in [0, 1e3], velocity gain
    beta: float = 25.0  # in [0, 1e3], square root of the position gain

    def __post_init__(self):
        convert_fields(self)
        at_least(self, ("alpha", "beta"), 0)
        at_most(self, ("alpha", "beta"), 1e3)


@dataclass(frozen=True, kw_only=True)
class Contacts:
    feet: tuple[str, ...]  # required, non-empty, no duplicates: the contact frames (URDF frame names)
    reference: str = "LOCAL_WORLD_ALIGNED"  # LOCAL | WORLD | LOCAL_WORLD_ALIGNED: frame of the contact force variables
    friction: float = 0.7  # in (0, 10], coefficient of the polyhedral friction cones
    baumgarte: Baumgarte = field(default_factory=Baumgarte)  # contact stabilization gains

    def __post_init__(self):
        convert_fields(self)
        check(len(self.feet) > 0, "feet", "a non-empty list of frame names", self.feet)
        no_duplicates(self.feet, "feet")
        one_of(self.reference, REFERENCES, "reference")
        at_least(self, ("friction",), 0, strict=True)
        at_most(self, ("friction",), 10)


@dataclass(frozen=True, kw_only=True)
class Phase:
    """A phase of the contact schedule. Give exactly one of ``knots`` and ``duration``;
    once the phase is part of a :class:`Gait`, ``knots`` is always set (converted from
    ``duration`` with ``gait.dt``) and ``duration`` is kept as written (``None`` if the
    phase gave knots). A phase built in Python with both must have them agree."""

    contact: tuple[str, ...]  # required (may be empty: a flight phase): the feet in contact, each one of contacts.feet
    knots: int | None = None  # in [1, 1e5], number of contact stages of the phase
    duration: float | None = None  # in (0, 1e3], or its duration in seconds: round(duration / gait.dt) knots
    step_length: float | None = None  # |.| <= 2, overrides gait.step_length for the feet that swing in this phase

    _exactly_one_of: ClassVar = ("knots", "duration")  # checked on the keys given in YAML or a dict

    def __post_init__(self):
        convert_fields(self)
        no_duplicates(self.contact, "contact")
        given = self.knots is not None or self.duration is not None
        check(given, "", "exactly one of 'knots' or 'duration'", "neither", show=False)
        at_least(self, ("knots",), 1)
        at_least(self, ("duration",), 0, strict=True)
        at_most(self, ("knots",), 100_000)
        at_most(self, ("duration",), 1e3)
        at_most(self, ("step_length",), 2.0, magnitude=True)


@dataclass(frozen=True, kw_only=True)
class Gait:
    dt: float  # required, in (0, 1]: time step of the contact stages (s)
    horizon: int  # required, in [1, 1e5]: number N of contact stages; the phases' knots sum to it
    phases: tuple[Phase, ...]  # required, non-empty: the contact schedule, in order
    step_length: float = 0.0  # |.| <= 2, forward (x) displacement of a foot over each of its swings (m)
    step_height: float = 0.0  # in [0, 1], apex of a swing foot above its start (m)
    jump_length: float = 0.0  # |.| <= 5, forward displacement of every foot over a flight phase (m)
    jump_height: float = 0.0  # in [0, 2], apex of the CoM above its start during a flight phase (m)
    swing_profile: str = "parabola"  # parabola | triangle: the height of a swing foot over its phase
    impulse_contacts: str = "all"  # all | landing: the contacts of an impulse stage (seed 004's code: landing)
    com_reference: str = "standing"  # standing | feet: the CoM reference's origin (problems.tasks.gaits.build_problem)

    def __post_init__(self):
        convert_fields(self)
        one_of(self.swing_profile, SWING_PROFILES, "swing_profile")
        one_of(self.com_reference, COM_REFERENCES, "com_reference")
        one_of(self.impulse_contacts, ("all", "landing"), "impulse_contacts")
        at_least(self, ("dt",), 0, strict=True)
        at_least(self, ("horizon",), 1)
        at_least(self, ("step_height", "jump_height"), 0)
        at_most(self, ("dt", "step_height"), 1.0)
        at_most(self, ("horizon",), 100_000)
        at_most(self, ("jump_height",), 2.0)
        at_most(self, ("step_length",), 2.0, magnitude=True)
        at_most(self, ("jump_length",), 5.0, magnitude=True)
        check(len(self.phases) > 0, "phases", "a non-empty list of phases", self.phases)
        phases = tuple(_with_knots(phase, self.dt, f"phases[{i}]") for i, phase in enumerate(self.phases))
        object.__setattr__(self, "phases", phases)
        knots = [phase.knots for phase in phases]
        total = " + ".join(map(str, knots))
        check(
            sum(knots) == self.horizon,
            "phases",
            f"knots summing to gait.horizon = {self.horizon}",
            f"{total} = {sum(knots)}",
            show=False,
        )


@dataclass(frozen=True, kw_only=True)
class StateWeights:
    """Weights of the state regularization, per block of the state error (all in [0, 1e12])."""

    base_position: float = 0.0
    base_orientation: float = 2.5e5
    joint_position: float = 1e-4
    base_velocity: float = 100.0
    joint_velocity: float = 1.0

    def __post_init__(self):
        convert_fields(self)
        at_least(self, [f.name for f in dataclasses.fields(self)], 0)
        at_most(self, [f.name for f in dataclasses.fields(self)], 1e12)


def _impulse_state_weights() -> StateWeights:
    return StateWeights(
        base_position=1.0, base_orientation=1.0, joint_position=100.0, base_velocity=100.0, joint_velocity=100.0
    )


@dataclass(frozen=True, kw_only=True)
class Costs:
    """Cost weights (all in [0, 1e12])."""

    state: StateWeights = field(default_factory=StateWeights)  # at the contact stages
    terminal_state: StateWeights = field(default_factory=StateWeights)  # at the terminal stage
    impulse_state: StateWeights = field(
        default_factory=_impulse_state_weights
    )  # at the impulse stages: 1, 1, 100, 100, 100
    control: float = 0.1  # joint torques
    swing_foot: float = 1e6  # swing-foot position tracking
    com: float = 1e6  # centre-of-mass tracking
    touchdown: float = 1e6  # contact position of the landing feet at impulse stages (quadratic penalty)
    integrate_dt: bool = False  # weigh the contact stages' costs by dt (1/2 dt w r^2, seed 004's code); not impulses
    com_phases: tuple[str, ...] = PHASE_KINDS  # the kinds of phase whose contact stages carry the CoM cost
    swing_foot_phases: tuple[str, ...] = PHASE_KINDS  # ... the swing-foot costs (a foot in the air has one)

    def __post_init__(self):
        convert_fields(self)
        for name in ("com_phases", "swing_foot_phases"):
            for i, kind in enumerate(getattr(self, name)):
                one_of(kind, PHASE_KINDS, f"{name}[{i}]", what="phase kind")
            no_duplicates(getattr(self, name), name)
        at_least(self, ("control", "swing_foot", "com", "touchdown"), 0)
        at_most(self, ("control", "swing_foot", "com", "touchdown"), 1e12)


@dataclass(frozen=True, kw_only=True)
class Solver:
    formulation: str = "lifted"  # lifted | nonlifted
    backend: str = "compiled"  # compiled | numpy: how stages are evaluated (compiled kernels, or numpy; same results)
    init: str = "static"  # static | zero_torque: the initial guess (ocp.formulation.Formulation.initial_iterate)
    barrier: float = 0.1  # in (0, 1e3], interior-point barrier parameter (where a decreasing one starts)
    barrier_update: str = "fixed"  # fixed | monotone | adaptive: the barrier's course (solvers/ipm.py)
    barrier_min: float = 1e-4  # in (0, 1e3], the smallest barrier when it decreases
    max_iterations: int = 100  # in [0, 1e6]
    tol: float = 1e-5  # in (0, 1e3], on the KKT residual's l2 norm, above its round-off (walk 2e-7, jump 4e-5)
    line_search: bool = False  # filter line search (else full Newton steps)
    hessian: str = "gauss-newton"  # gauss-newton | exact (where Gauss-Newton is slow): stage Hessians, solvers/ipm.py
    relaxation: float = 0.0  # in [0, 1e3], fddp/ilqr's relaxed barrier; 0: the largest that keeps the solution feasible

    def __post_init__(self):
        convert_fields(self)
        one_of(self.formulation, FORMULATIONS, "formulation")
        one_of(self.backend, BACKENDS, "backend")
        one_of(self.init, INITS, "init")
        one_of(self.barrier_update, BARRIER_UPDATES, "barrier_update")
        one_of(self.hessian, HESSIANS, "hessian")
        check(
            self.hessian == "gauss-newton" or (self.formulation, self.backend) == ("lifted", "compiled"),
            "hessian",
            "gauss-newton unless the formulation is lifted and the backend compiled",
            self.hessian,
        )
        at_least(self, ("barrier", "barrier_min", "tol"), 0, strict=True)
        at_least(self, ("max_iterations", "relaxation"), 0)
        at_most(self, ("barrier", "barrier_min", "tol", "relaxation"), 1e3)
        at_most(self, ("max_iterations",), 1_000_000)
        decreasing = self.barrier_update != "fixed"
        check(
            not decreasing or self.barrier_min <= self.barrier,
            "barrier_min",
            f"at most barrier ({self.barrier:g}) for a decreasing barrier",
            self.barrier_min,
        )

    def options(self) -> Options:
        """The interior point's :class:`solvers.ipm.Options`: every field but the formulation, the
        backend and the start, which belong to the problem, and the DDP baselines' relaxation."""
        problem = ("formulation", "backend", "init", "relaxation")
        return Options(**{k: v for k, v in dataclasses.asdict(self).items() if k not in problem})


@dataclass(frozen=True, kw_only=True)
class JointFriction:
    """The URDF's joint damping and Coulomb friction in the controller's model
    (:mod:`dynamics.joint_friction`); switch them off to measure what they are worth."""

    damping: bool = True  # the viscous damping torque -D v
    coulomb: bool = True  # the Coulomb friction torque, smoothed: -F tanh(v / width)
    width: float = 0.5  # in (0, 10]: the smoothing width of the Coulomb friction (rad/s)

    def __post_init__(self):
        convert_fields(self)
        at_least(self, ("width",), 0, strict=True)
        at_most(self, ("width",), 10.0)


@dataclass(frozen=True, kw_only=True)
class PlantContact:
    """The contacts of the plant with its environment, one section for both engines: ``model``,
    ``solver``, ``stiffness``, ``damping`` and ``slip`` are read by liftoff's engine, ``solref`` and ``solimp`` by
    MuJoCo's (each engine ignores the other's keys, so that ``--plant`` can switch engines).
    ``plant.contact: unilateral`` is short for ``plant.contact: {model: unilateral}``.

    liftoff's ``model`` (:mod:`dynamics.simulator`, seed 002): ``rigid_bilateral``, the
    idealization of liftoff's first plants (contacts held rigid by Baumgarte gains, pulling as
    well as pushing, never sliding: a reference for debugging a controller, not evidence);
    ``unilateral``, time stepping with rigid contacts that push only and Coulomb friction (the
    Signorini-Coulomb problem on the Delassus matrix, by projected Gauss-Seidel, or ADMM: faster,
    but on the trot's touchdowns it stops above its tolerance), the feet and the pad as spheres
    against the ground or the surface plane; ``soft``, the same spheres on a spring-damper ``k d + c d_dot``
    on the penetration ``d`` (no pull) with Coulomb friction regularized over ``slip`` (a loaded
    contact creeps at a speed of that order), both explicit: a plant step above their stability
    bound at the initial state (``4 / (c/m + sqrt((c/m)^2 + 4 k/m))`` on the contact's effective
    mass ``m``, and ``2 slip m_t / (mu f_n)`` for the friction) is refused with the bound.

    MuJoCo's soft-contact parameters, null keeping MuJoCo's default: ``solref``, the time
    constant (s) and damping ratio of the contact's spring-damper, (0.02, 1) by default; stiffer
    with a smaller time constant (at least two plant steps). ``solimp``: the impedance (d0,
    d_width, width (m), midpoint, power), (0.9, 0.95, 0.001, 0.5, 2) by default: how much of the
    contact's penetration it resists, from d0 at no penetration to d_width at ``width``."""

    model: str = "rigid_bilateral"  # liftoff engine: rigid_bilateral (idealized) | unilateral | soft
    stiffness: float = 1e5  # in (0, 1e9]: liftoff's soft contact: the spring k (N/m)
    damping: float = 100.0  # in [0, 1e6]: liftoff's soft contact: the damper c (N s/m)
    slip: float = 0.01  # in (0, 10]: liftoff's soft contact: the friction's regularization (m/s), a creep
    solver: str = "pgs"  # liftoff's unilateral contact: pgs (projected Gauss-Seidel) | admm
    solref: tuple[float, float] | None = None  # MuJoCo: (time constant > 0, damping ratio > 0)
    solimp: tuple[float, float, float, float, float] | None = (
        None  # MuJoCo: d0, d_width in (0, 1); width > 0; midpoint in [0, 1]; power >= 1
    )

    def __post_init__(self):
        convert_fields(self)
        one_of(self.model, CONTACT_MODELS, "model")
        one_of(self.solver, tuple(SOLVERS), "solver")
        at_least(self, ("stiffness", "slip"), 0, strict=True)
        at_least(self, ("damping",), 0)
        at_most(self, ("stiffness",), 1e9)
        at_most(self, ("slip",), 10.0)
        at_most(self, ("damping",), 1e6)
        if self.solref is not None:
            check(all(x > 0 for x in self.solref), "solref", "a time constant > 0 and a damping ratio > 0", self.solref)
        if self.solimp is not None:
            d0, dwidth, width, midpoint, power = self.solimp
            ok = 0 < d0 < 1 and 0 < dwidth < 1 and width > 0 and 0 <= midpoint <= 1 and power >= 1
            check(ok, "solimp", "d0, d_width in (0, 1), width > 0, midpoint in [0, 1], power >= 1", self.solimp)


@dataclass(frozen=True, kw_only=True)
class PlantBase:
    """What every simulated plant shares: its engine, time step, contacts, the disturbances drawn in it."""

    engine: str = "mujoco"  # mujoco | liftoff: MuJoCo, or liftoff's own plant (its contact: contact.model)
    dt: float = 0.001  # in (0, 0.1]: its time step (s), a divisor of mpc.period
    contact: PlantContact | str = field(default_factory=PlantContact)  # or short: rigid_bilateral | unilateral | soft
    joint_friction: bool = True  # MuJoCo applies the URDF's joint damping and friction
    torque_noise: float = 0.0  # in [0, 1e3]: standard deviation of the torque noise (N m)
    torque_bias: float = 0.0  # |.| <= 1e3: added to every torque (N m)
    seed: int = 0  # of the noise

    def __post_init__(self):
        convert_fields(self)
        if isinstance(self.contact, str):  # the short form: the liftoff engine's contact model
            one_of(self.contact, CONTACT_MODELS, "contact")
            object.__setattr__(self, "contact", PlantContact(model=self.contact))
        one_of(self.engine, ENGINES, "engine")
        at_least(self, ("dt",), 0, strict=True)
        at_least(self, ("torque_noise",), 0)
        at_most(self, ("dt",), 0.1)
        at_most(self, ("torque_noise",), 1e3)
        at_most(self, ("torque_bias",), 1e3, magnitude=True)
        if self.contact.solref is not None:
            ok = self.contact.solref[0] >= 2 * self.dt
            check(ok, "contact.solref", f"a time constant >= 2 dt = {2 * self.dt:g} s", self.contact.solref)


@dataclass(frozen=True, kw_only=True)
class GaitConfig:
    name: str = ""  # label for plots and tables; load_config uses the file stem if empty
    robot: str  # required, a name of dynamics.ROBOTS
    initial_state: InitialState = field(default_factory=InitialState)
    contacts: Contacts  # required
    gait: Gait  # required
    costs: Costs = field(default_factory=Costs)
    limits: tuple[str, ...] = LIMITS  # the limits imposed: a subset of position, velocity, torque
    joint_friction: JointFriction = field(default_factory=JointFriction)
    solver: Solver = field(default_factory=Solver)

    def __post_init__(self):
        convert_fields(self)
        one_of(self.robot, tuple(dynamics.ROBOTS), "robot", what="robot")
        for i, limit in enumerate(self.limits):
            one_of(limit, LIMITS, f"limits[{i}]", what="limit")
        no_duplicates(self.limits, "limits")
        for i, phase in enumerate(self.gait.phases):
            for foot in phase.contact:
                one_of(foot, self.contacts.feet, f"gait.phases[{i}].contact", what="foot", hint="contacts.feet")

    @property
    def phase_knots(self) -> tuple[int, ...]:
        """Contact stages per phase (durations converted with ``gait.dt``); they sum to ``gait.horizon``."""
        return tuple(phase.knots for phase in self.gait.phases)


# ----------------------------------------------------------------------------- public functions


def parse_config(data: dict, source: str = "<config>", schema=None) -> GaitConfig:
    """The configuration (a :class:`GaitConfig`, or an instance of the dataclass ``schema``) of
    a dict as read from YAML; errors name ``source``."""
    try:
        return _convert(schema or GaitConfig, data, "")
    except ConfigError as error:
        raise error.at(source) from None


def load_config(path, schema=None) -> GaitConfig:
    """The configuration (a :class:`GaitConfig`, or an instance of ``schema``) of a YAML
    file; ``name`` defaults to the file's stem.

    A missing or unreadable file, invalid YAML (duplicate keys included) and an empty
    document are :class:`ConfigError` too.
    """
    config = parse_config(_document(path), str(path), schema)
    return config if config.name else dataclasses.replace(config, name=Path(path).stem)


def load_gait_config(path) -> GaitConfig:
    """The gait configuration of the YAML file ``path``; a task's configuration (one with a
    ``task`` key) is refused with the command that runs it."""
    task = task_of(path)
    if task is not None:
        raise ConfigError(f"a task: {task} configuration runs with liftoff mpc", source=str(path))
    return load_config(path)


def task_of(path):
    """The ``task`` key of the YAML file ``path``, None without one (a gait configuration);
    :class:`ConfigError` if the file does not read as YAML or its task is not a name."""
    data = _document(path)
    task = data.get("task") if isinstance(data, dict) else None
    if task is not None and not isinstance(task, str):
        raise ConfigError(f"expected a task's name, got {_show(task)}", "task", str(path))
    return task


def _document(path):
    """The YAML document of the file ``path``, not empty; :class:`ConfigError` if it does not read."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError("file not found", source=source) from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"cannot read the file ({error})", source=source) from None
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)
    except yaml.YAMLError as error:
        raise ConfigError(_yaml_problem(error), source=source) from None
    if data is None:
        raise ConfigError("expected a mapping at the top level, got an empty document", source=source)
    return data


def with_solver(config: GaitConfig, **changes) -> GaitConfig:
    """A copy of ``config`` with fields of ``config.solver`` replaced, validated like YAML:
    ``with_solver(config, formulation="nonlifted", barrier=1e-3)``."""
    current = {f.name: getattr(config.solver, f.name) for f in dataclasses.fields(Solver)}
    return dataclasses.replace(config, solver=_convert(Solver, {**current, **changes}, "solver"))


def to_dict(config) -> dict:
    """Plain data (dicts, lists, str, float, int, bool, None) that :func:`parse_config` maps
    back to an equal config; a phase given by duration is written by its duration alone."""
    if dataclasses.is_dataclass(config):
        out = {f.name: to_dict(getattr(config, f.name)) for f in dataclasses.fields(config)}
        if isinstance(config, Phase) and config.duration is not None:
            del out["knots"]
        return out
    if isinstance(config, (tuple, list)):
        return [to_dict(item) for item in config]
    return config


# ----------------------------------------------------------------------------- conversion


def _convert(tp, value, path: str):
    """``value`` converted to the type ``tp`` (a field's type hint), or ConfigError at ``path``."""
    if dataclasses.is_dataclass(tp):
        return value if isinstance(value, tp) else _section(tp, value, path)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        arms = [arm for arm in args if arm is not type(None) and _shape(arm) == _shape(value)]
        if len(arms) == 1 and _shape(value) != "scalar":  # the list (mapping) arm: its errors are precise
            return _convert(arms[0], value, path)
        for arm in arms:
            try:
                return _convert(arm, value, path)
            except ConfigError:
                pass
        raise ConfigError(f"expected {_describe(tp)}, got {_show(value)}", path)
    if origin is tuple:
        fixed = len(args) != 2 or args[1] is not Ellipsis  # tuple[float, float, float]: exactly three
        if not isinstance(value, (list, tuple)) or (fixed and len(value) != len(args)):
            raise ConfigError(f"expected {_describe(tp)}, got {_show(value)}", path)
        return tuple(_convert(args[0], item, f"{path}[{i}]") for i, item in enumerate(value))
    if tp is float:
        number = value
        if isinstance(value, str):
            try:
                number = float(value)
            except ValueError:
                pass
        if isinstance(number, numbers.Real) and not isinstance(number, bool) and math.isfinite(number):
            return float(number)
    elif tp is int:
        if isinstance(value, numbers.Integral) and not isinstance(value, bool):
            return int(value)
    elif tp in (bool, str):
        if isinstance(value, tp):
            return value
    else:
        raise TypeError(f"unsupported type {tp!r} in the configuration schema")
    raise ConfigError(f"expected {_describe(tp)}, got {_show(value)}", path)


def _section(cls, data, path: str):
    """An instance of the dataclass ``cls`` from the mapping ``data``."""
    if not isinstance(data, dict):
        raise ConfigError(f"expected a mapping, got {_show(data)}", path)
    fields = dataclasses.fields(cls)
    names = [f.name for f in fields]
    for key in data:
        if key not in names:
            raise ConfigError(f"unknown key {key!r} (expected one of: {', '.join(names)})", path)
    for f in fields:
        if f.name not in data and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise ConfigError(f"missing required key {f.name!r}", path)
    exclusive = getattr(cls, "_exactly_one_of", ())
    given = [key for key in exclusive if data.get(key) is not None]
    if exclusive and len(given) != 1:
        found = "both" if given else "neither"
        raise ConfigError(f"expected exactly one of {' or '.join(map(repr, exclusive))}, got {found}", path)
    try:
        return cls(**data)
    except ConfigError as error:
        raise error.within(path) from None


def convert_fields(obj) -> None:
    """Convert each field of the frozen dataclass ``obj`` in place to its declared type."""
    hints = _hints(type(obj))
    for f in dataclasses.fields(obj):
        object.__setattr__(obj, f.name, _convert(hints[f.name], getattr(obj, f.name), f.name))


@functools.cache
def _hints(cls) -> dict:
    return typing.get_type_hints(cls)


def _shape(x) -> str:
    """``"list"``, ``"mapping"`` or ``"scalar"``: of a type hint or of a value."""
    if typing.get_origin(x) is tuple or isinstance(x, (list, tuple)):
        return "list"
    if dataclasses.is_dataclass(x) or isinstance(x, dict):
        return "mapping"
    return "scalar"


_NAMES = {
    float: ("a finite number", "finite numbers"),
    int: ("an integer", "integers"),
    bool: ("true or false", "booleans"),
    str: ("a string", "strings"),
}


def _describe(tp, plural: bool = False) -> str:
    """What the type hint ``tp`` expects, in words: ``a list of numbers``."""
    if dataclasses.is_dataclass(tp):
        return "mappings" if plural else "a mapping"
    if tp is type(None):
        return "null"
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_describe(arm, plural) for arm in args)
    if origin is tuple:
        count = "" if len(args) == 2 and args[1] is Ellipsis else f"{len(args)} "
        return "lists" if plural else f"a list of {count}{_describe(args[0], plural=True)}"
    return _NAMES[tp][plural]


def _show(value) -> str:
    """A found value as the message shows it: YAML spelling for null and booleans."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        text = repr(list(value))
        return f"a list {text}" if len(text) <= 40 else f"a list of {len(value)} items"
    return repr(value)


def _join(prefix: str, path: str) -> str:
    if not prefix or not path:
        return prefix or path
    return prefix + path if path.startswith("[") else f"{prefix}.{path}"


# ----------------------------------------------------------------------------- checks


def check(ok: bool, path: str, expected: str, got, show: bool = True) -> None:
    if not ok:
        raise ConfigError(f"expected {expected}, got {_show(got) if show else got}", path)


def at_least(obj, names, bound: float, strict: bool = False) -> None:
    """Each field of ``names`` (unless None) is ``> bound`` if ``strict``, else ``>= bound``."""
    for name in names:
        value = getattr(obj, name)
        if value is not None:
            kind = "an integer" if isinstance(value, int) else "a number"
            check(
                value > bound if strict else value >= bound, name, f"{kind} {'>' if strict else '>='} {bound:g}", value
            )


def at_most(obj, names, bound: float, magnitude: bool = False) -> None:
    """Each field of ``names`` (unless None) is ``<= bound`` (in absolute value if ``magnitude``):
    values beyond any physical use, which would pass as numbers and end as a divergence."""
    for name in names:
        value = getattr(obj, name)
        if value is not None:
            kind = "an integer" if isinstance(value, int) else "a number"
            ok = abs(value) <= bound if magnitude else value <= bound
            check(ok, name, f"{kind} {'of magnitude ' if magnitude else ''}<= {bound:g}", value)


def one_of(value: str, allowed, path: str, what: str = "", hint: str = "") -> None:
    if value not in allowed:
        if what:
            among = f"one of {hint}" if hint else "one of"
            raise ConfigError(f"unknown {what} {value!r} (expected {among}: {', '.join(allowed)})", path)
        raise ConfigError(f"expected {' or '.join(allowed)}, got {value!r}", path)


def no_duplicates(items: tuple, path: str) -> None:
    for i, item in enumerate(items):
        if item in items[:i]:
            raise ConfigError(f"expected no duplicates, got {item!r} twice", f"{path}[{i}]")


def _with_knots(phase: Phase, dt: float, path: str) -> Phase:
    """``phase`` with ``knots`` set from its duration (or checked against it if both are set)."""
    if phase.duration is None:
        return phase
    ratio = phase.duration / dt
    knots = round(ratio)
    where = _join(path, "duration")
    check(knots >= 1, where, f"at least gait.dt = {dt:g}", phase.duration)
    check(abs(ratio - knots) <= RELATIVE_TOL * ratio, where, f"a multiple of gait.dt = {dt:g}", phase.duration)
    if phase.knots is None:
        return dataclasses.replace(phase, knots=knots)
    check(phase.knots == knots, _join(path, "knots"), f"duration / gait.dt = {knots} as duration is given", phase.knots)
    return phase


# ----------------------------------------------------------------------------- YAML


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a key given twice in a mapping (it keeps the last)."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *anchor` may be overridden
                    continue
                key = self.construct_object(key_node, deep=deep)
                if isinstance(key, typing.Hashable):  # else the base class reports it
                    if key in seen:
                        raise yaml.constructor.ConstructorError(
                            None, None, f"duplicate key {key!r}", key_node.start_mark
                        )
                    seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _yaml_problem(error: yaml.YAMLError) -> str:
    """One line from a PyYAML error: ``invalid YAML at line 3, column 7: <problem>``."""
    mark = getattr(error, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    problem = getattr(error, "problem", None) or str(error)
    context = getattr(error, "context", None)
    text = f"{problem} ({context})" if context else problem
    return f"invalid YAML{where}: {' '.join(text.split())}"
