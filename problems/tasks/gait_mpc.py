"""Gaits in a receding horizon: the configuration of a legged MPC, and the OCP of one horizon.

A ``task: gait_mpc`` configuration is a gait configuration (:class:`problems.tasks.config.GaitConfig`)
whose phases are a contact schedule played once up to ``mpc.cycle_start`` and then repeated,
with a command schedule (``mpc.command``: the base's forward and lateral velocity and yaw rate
from given times on), where the feet land (``mpc.footholds``), and the plant. The gait's
``step_length`` does not apply: the footholds follow from the command and the measured state
(:mod:`problems.mpc.locomotion`, which runs the schedule against the plant's contacts).

Each MPC update turns the controller's plan of the horizon (a :class:`Horizon`: per stage the
feet on the ground and where, the swing feet's references, the landings, the base and CoM
references) into an OCP (:func:`horizon_ocp`), whose stages are those of the gait builder
(:mod:`problems.tasks.gaits`): contact stages with state, control, CoM and swing-foot costs,
an impulse stage before each stage where feet land, with the landing feet's touchdown position
cost, and a terminal state cost. Three costs of the MPC's own: ``mpc.approach`` weighs the
accelerations in the stage before a landing (its explicit Euler step does not see a foot that
brakes within the stage, so a large acceleration there lands the foot off the plan; the other
contact stages carry the term at weight zero, so that a stance's stages form one group);
``mpc.tangential_force`` weighs the stance feet's forces along the ground (world x and y): forces
nearer the vertical, farther inside the cone, where a soft-friction engine such as MuJoCo lets a
loaded foot creep less; ``mpc.landing_velocity`` weighs the landing feet's horizontal velocity
(world x and y) at the impulse stage, before the impact (Crocoddyl's pseudo-impulse cost): a
foot that lands moving slides before a soft contact holds it, and a plan whose swing reference
stops above the foothold still lets the foot move with the base. :func:`layout_ocp` has every
contact and cost term a horizon can have: the kernels are built for it once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from liftoff.ocp.costs import CenterOfMassCost, FramePositionCost, FrameVelocityCost, StateCost, VariableCost
from liftoff.ocp.problem import OCP, ContactStage, ImpulseStage

from .config import (
    MPC_SCHEMES,
    GaitConfig,
    PlantBase,
    at_least,
    at_most,
    check,
    convert_fields,
    no_duplicates,
    one_of,
)
from .gaits import foot_contacts, state_weights

SCALES = 64  # the most cost scales a StageParts keeps (:meth:`StageParts._scaled`)


@dataclass(frozen=True, kw_only=True)
class Command:
    """The commanded base motion from time ``t`` until the next command: ``vx`` forward and
    ``vy`` to the left [m/s] in the base's heading frame, ``yaw_rate`` [rad/s] about the vertical."""

    t: float = 0.0  # in [0, 1e3]: when the command starts (s)
    vx: float = 0.0  # |.| <= 5 (m/s)
    vy: float = 0.0  # |.| <= 5 (m/s)
    yaw_rate: float = 0.0  # |.| <= 10 (rad/s)

    def __post_init__(self):
        convert_fields(self)
        at_least(self, ("t",), 0)
        at_most(self, ("t",), 1e3)
        at_most(self, ("vx", "vy"), 5.0, magnitude=True)
        at_most(self, ("yaw_rate",), 10.0, magnitude=True)


@dataclass(frozen=True, kw_only=True)
class Footholds:
    """Where a swing foot lands and how its swing ends (:mod:`problems.mpc.locomotion`)."""

    gain: float | None = None  # in [0, 1]: s, the capture-point gain on the velocity error; null: sqrt(h / g)
    max_step: float = 0.2  # in (0, 1]: the farthest a foothold lies from the foot's place under its hip (m)
    touchdown_depth: float = 0.01  # in [0, 0.1]: how far below the ground a swing's reference ends (m)
    late: float = 0.1  # in [0, 1]: how long the schedule waits for a foot that has not landed (s)
    vertical_landing: float = 0.0  # in [0, 0.5]: the last fraction of a swing in which the foot comes straight down

    def __post_init__(self):
        convert_fields(self)
        at_least(self, ("gain", "touchdown_depth", "late", "vertical_landing"), 0)
        at_least(self, ("max_step",), 0, strict=True)
        at_most(self, ("gain", "max_step", "late"), 1.0)
        at_most(self, ("touchdown_depth",), 0.1)
        at_most(self, ("vertical_landing",), 0.5)


@dataclass(frozen=True, kw_only=True)
class GaitMPCSettings:
    horizon: int = 25  # in [1, 1e3]: contact stages per horizon
    period: float = 0.02  # in (0, 1]: time between MPC updates (s), a multiple of gait.dt
    iterations: int = 1  # in [1, 100]: Newton iterations per update
    first_iterations: int = 10  # in [1, 1e4]: Newton iterations of the first solve
    scheme: str = "newton"  # newton | rti: the policy from a linearization after the iterations, or from the last one
    duration: float = 5.0  # in (0, 1e3]: simulated time (s)
    cycle_start: int = 1  # in [0, 1e3]: the first phase of the repeated cycle (those before it are played once)
    command: tuple[Command, ...] = (Command(),)  # the command schedule, in time order, the first at t = 0
    footholds: Footholds = field(default_factory=Footholds)
    approach: float = 1.0  # in [0, 1e6]: weight of the accelerations in the stage before a touchdown
    tangential_force: float = 0.0  # in [0, 1e6]: weight of the feet's forces along the ground (toward vertical forces)
    landing_velocity: float = 0.0  # in [0, 1e6]: weight of a landing foot's horizontal velocity at its touchdown

    def __post_init__(self):
        convert_fields(self)
        at_least(self, ("period", "duration"), 0, strict=True)
        at_least(self, ("horizon", "iterations", "first_iterations"), 1)
        one_of(self.scheme, MPC_SCHEMES, "scheme")
        at_least(self, ("cycle_start",), 0)
        at_most(self, ("period",), 1.0)
        at_most(self, ("duration",), 1e3)
        at_most(self, ("horizon", "cycle_start"), 1000)
        at_most(self, ("iterations",), 100)
        at_most(self, ("first_iterations",), 10_000)
        at_least(self, ("approach", "tangential_force", "landing_velocity"), 0)
        at_most(self, ("approach", "tangential_force", "landing_velocity"), 1e6)
        check(len(self.command) > 0, "command", "a non-empty list of commands", self.command)
        check(self.command[0].t == 0, "command[0].t", "0 (the first command starts the run)", self.command[0].t)
        for i in range(1, len(self.command)):
            earlier = self.command[i - 1].t
            check(self.command[i].t > earlier, f"command[{i}].t", f"a time after {earlier:g} s", self.command[i].t)

    def command_at(self, t) -> Command:
        """The command in force at time ``t``."""
        return [c for c in self.command if c.t <= t + 1e-9][-1]

    def command_index(self, times) -> np.ndarray:
        """The index in ``command`` of the command in force at each of ``times`` (:meth:`command_at`)."""
        starts = np.array([c.t for c in self.command])
        return np.searchsorted(starts, np.asarray(times) + 1e-9, side="right") - 1


@dataclass(frozen=True, kw_only=True)
class LeggedPlantSettings(PlantBase):
    """The simulated plant (:mod:`problems.mpc.plants`)."""

    friction: float = 0.5  # in (0, 10]: the ground's friction coefficient (MuJoCo, liftoff's unilateral and soft)
    kp: float = 0.0  # in [0, 1e6]: liftoff's rigid_bilateral plant: Baumgarte position gain holding the feet
    kd: float = 0.0  # in [0, 1e4]: liftoff's rigid_bilateral plant: Baumgarte velocity gain
    scaled_joints: tuple[str, ...] = ("root_joint",)  # the bodies whose mass --mass-scale multiplies (the base's)

    def __post_init__(self):
        super().__post_init__()
        at_least(self, ("friction",), 0, strict=True)
        at_least(self, ("kp", "kd"), 0)
        at_most(self, ("friction",), 10.0)
        at_most(self, ("kp",), 1e6)
        at_most(self, ("kd",), 1e4)
        no_duplicates(self.scaled_joints, "scaled_joints")


@dataclass(frozen=True, kw_only=True)
class GaitMPCConfig(GaitConfig):
    task: str  # required: gait_mpc
    mpc: GaitMPCSettings = field(default_factory=GaitMPCSettings)
    plant: LeggedPlantSettings = field(default_factory=LeggedPlantSettings)

    def __post_init__(self):
        super().__post_init__()
        one_of(self.task, ("gait_mpc",), "task")
        n = len(self.gait.phases)
        check(self.mpc.cycle_start < n, "mpc.cycle_start", f"a phase index < {n}", self.mpc.cycle_start)
        ratio = max(self.mpc.period / self.gait.dt, self.gait.dt / self.mpc.period)
        ok = abs(ratio - round(ratio)) < 1e-9 * ratio
        check(ok, "mpc.period", f"a multiple or a divisor of gait.dt = {self.gait.dt:g}", self.mpc.period)
        steps = self.mpc.period / self.plant.dt
        ok = abs(steps - round(steps)) < 1e-9 * steps
        check(ok, "plant.dt", f"a divisor of mpc.period = {self.mpc.period:g}", self.plant.dt)
        cycle = self.gait.phases[self.mpc.cycle_start :]
        flights = [i + self.mpc.cycle_start for i, p in enumerate(cycle) if not p.contact]
        where = f"gait.phases[{flights[0] if flights else 0}]"
        check(
            not flights, where, "a phase with a foot on the ground (the MPC plays no flights)", "a flight", show=False
        )


@dataclass(frozen=True)
class Horizon:
    """The controller's plan of one horizon of ``N`` contact stages ``dts[j]`` long: per stage ``j``,
    ``stance[j]`` the feet on the ground and where they stand ``{foot: (3,)}``, ``swing[j]`` the
    references of the feet in the air, ``landings[j]`` the feet that land at its start (an
    impulse stage before it; none at ``j = 0``) and ``com[j]`` the CoM reference; per knot ``j``
    (``N + 1``), the configuration and velocity references ``q_ref[j], v_ref[j]``."""

    dts: tuple
    stance: tuple
    swing: tuple
    landings: tuple
    com: np.ndarray
    q_ref: np.ndarray
    v_ref: np.ndarray


def horizon_ocp(config: GaitMPCConfig, model, q, v, h: Horizon, parts: StageParts | None = None) -> OCP:
    """The OCP of the horizon ``h`` from the measured state ``(q, v)`` (module docstring);
    ``parts``: the :class:`StageParts` of ``config`` and ``model`` that the horizons of one MPC
    share (default: made for this one)."""
    parts = parts if parts is not None else StageParts(config, model.nv)
    contacts = _contact_sets(parts)
    stages = []
    for j, (dt, stance, swing, landing) in enumerate(zip(h.dts, h.stance, h.swing, h.landings)):
        if landing:
            held = {f: stance[f] for f in landing} if config.gait.impulse_contacts == "landing" else stance
            stages.append(ImpulseStage(contacts(held), parts.impulse(h, j, stance, landing)))
        after = h.landings[j + 1] if j + 1 < len(h.landings) else ()
        stages.append(ContactStage(contacts(stance), dt, parts.contact(h, j, dt, stance, swing, after)))
    terminal = (StateCost(h.q_ref[-1], h.v_ref[-1], state_weights(config.costs.terminal_state, model.nv), "state"),)
    return _ocp(config, model, q, v, stages, terminal)


def _contact_sets(parts: StageParts):
    """``contacts(holds)``: the contacts of the feet in ``holds`` ``{foot: foothold}``
    (:meth:`StageParts.contacts`), made once per set of footholds, the stances repeating over
    the stages: found by the footholds' arrays (those of one horizon, alive while it is built),
    else by their values."""
    by_value, by_array = {}, {}

    def contacts(holds):
        arrays = tuple((f, id(p)) for f, p in holds.items())
        if arrays not in by_array:
            key = tuple((f, tuple(holds[f])) for f in sorted(holds))
            if key not in by_value:
                by_value[key] = parts.contacts(holds)
            by_array[arrays] = by_value[key]
        return by_array[arrays]

    return contacts


class StageParts:
    """The contacts and cost terms of the stages of the horizons of ``config`` (module
    docstring), for a model of ``nv`` velocities. The terms several stages have alike (the
    control's, the accelerations', the tangential forces', the landing velocities') are made
    once and shared, cost terms being immutable: by the stages of a horizon, and by the horizons
    of an MPC (the kernels' inputs of a term a group's stages share are written once for them
    all). The feet's contacts are made once and moved to each foothold."""

    def __init__(self, config: GaitMPCConfig, nv):
        self.config, self.costs, self.mpc = config, config.costs, config.mpc
        self.feet = foot_contacts(config, {f: np.zeros(3) for f in config.contacts.feet})
        self.w_state, self.w_impulse = state_weights(self.costs.state, nv), state_weights(self.costs.impulse_state, nv)
        self.zero_u, self.zero_a = np.zeros(nv - 6), np.zeros(nv)
        self.lowered = np.array([0.0, 0.0, self.mpc.footholds.touchdown_depth])  # a touchdown's reference
        self.scaled, self.approaches, self.forces, self.landing = {}, {}, {}, {}

    def contacts(self, holds) -> tuple:
        """:func:`foot_contacts` of the feet in ``holds`` ``{foot: foothold}``."""
        return tuple(c.with_placement(holds[c.frame]) for c in self.feet if c.frame in holds)

    def contact(self, h: Horizon, j, dt, stance, swing, after) -> tuple:
        """The terms of contact stage ``j`` of ``h``, ``dt`` long, with the feet of ``stance`` on
        the ground, those of ``swing`` in the air, before the landings ``after``."""
        costs, mpc = self.costs, self.mpc
        scale = dt if costs.integrate_dt else 1.0
        w_state, control = self._scaled(scale)
        terms = (StateCost(h.q_ref[j], h.v_ref[j], w_state, "state"), control)
        if mpc.approach > 0:  # on every contact stage, weighted before a landing: one group per stance
            terms += (self._approach(bool(after)),)
        if mpc.tangential_force > 0 and stance:
            terms += (self._tangential_force(len(stance)),)
        kind = "swing" if swing else "stance"
        if kind in costs.swing_foot_phases:
            terms += tuple(FramePositionCost(f, p, scale * costs.swing_foot, f"swing_{f}") for f, p in swing.items())
        if kind in costs.com_phases:
            terms += (CenterOfMassCost(h.com[j], scale * costs.com, "com"),)
        return terms

    def impulse(self, h: Horizon, j, stance, landing) -> tuple:
        """The terms of the impulse stage before contact stage ``j`` of ``h``, where the feet
        ``landing`` land."""
        terms = (StateCost(h.q_ref[j], h.v_ref[j], self.w_impulse, "state"),) + tuple(
            FramePositionCost(f, stance[f] - self.lowered, self.costs.touchdown, f"touchdown_{f}") for f in landing
        )
        if self.mpc.landing_velocity > 0:
            terms += tuple(self._landing_velocity(f) for f in landing)
        return terms

    def _scaled(self, scale) -> tuple:
        """The state weights and the control term of the contact stages whose costs ``scale`` weighs
        (kept for at most :data:`SCALES` scales)."""
        if scale not in self.scaled:
            if len(self.scaled) >= SCALES:  # with costs.integrate_dt, a first stage shortened to the grid takes a
                self.scaled.clear()  # scale of its own at most updates (the clock's round-off): start over
            control = VariableCost("u", self.zero_u, scale * self.costs.control, "control")
            self.scaled[scale] = (scale * self.w_state, control)
        return self.scaled[scale]

    def _approach(self, landing: bool) -> VariableCost:
        """The accelerations' term of a contact stage, weighted before a ``landing`` only."""
        if landing not in self.approaches:
            weight = self.mpc.approach if landing else 0.0
            self.approaches[landing] = VariableCost("a", self.zero_a, weight, "approach")
        return self.approaches[landing]

    def _tangential_force(self, n) -> VariableCost:
        """The forces' term along the ground of ``n`` feet on it."""
        if n not in self.forces:
            w = np.tile([1.0, 1.0, 0.0], n) * self.mpc.tangential_force
            self.forces[n] = VariableCost("f", np.zeros(3 * n), w, "tangential_force")
        return self.forces[n]

    def _landing_velocity(self, foot) -> FrameVelocityCost:
        """The horizontal velocity's term of ``foot`` landing."""
        if foot not in self.landing:
            w = self.mpc.landing_velocity * np.array([1.0, 1.0, 0.0])
            self.landing[foot] = FrameVelocityCost(foot, np.zeros(3), w, f"landing_{foot}")
        return self.landing[foot]


def layout_ocp(config: GaitMPCConfig, model, q0) -> OCP:
    """An OCP with every contact and cost term of the horizons of ``config``: a contact stage
    with every foot on the ground and every foot's swing cost, an impulse stage with every
    foot's touchdown cost, and the terminal state cost."""
    feet, nv, zero = config.contacts.feet, model.nv, np.zeros(3)
    everywhere = {f: zero for f in feet}
    w = np.ones(2 * nv)
    state = StateCost(q0, np.zeros(nv), w, "state")
    contact = ContactStage(
        foot_contacts(config, everywhere),
        config.gait.dt,
        (
            state,
            VariableCost("u", np.zeros(nv - 6), 1.0, "control"),
            CenterOfMassCost(zero, 1.0, "com"),
            VariableCost("a", np.zeros(nv), 1.0, "approach"),
            VariableCost("f", np.zeros(3 * len(feet)), 1.0, "tangential_force"),
        )
        + tuple(FramePositionCost(f, zero, 1.0, f"swing_{f}") for f in feet),
    )
    impulse = ImpulseStage(
        foot_contacts(config, everywhere),
        (state,)
        + tuple(FramePositionCost(f, zero, 1.0, f"touchdown_{f}") for f in feet)
        + tuple(FrameVelocityCost(f, zero, 1.0, f"landing_{f}") for f in feet),
    )
    return _ocp(config, model, q0, np.zeros(nv), [contact, impulse, contact], (state,))


def _ocp(config, model, q, v, stages, terminal) -> OCP:
    return OCP(
        model,
        np.asarray(q, dtype=float),
        np.asarray(v, dtype=float),
        tuple(stages),
        terminal,
        friction=config.contacts.friction,
        limits=tuple(config.limits),
        joint_friction_width=config.joint_friction.width,
    )
