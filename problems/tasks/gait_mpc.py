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

from dataclasses import dataclass, field, replace

import numpy as np

from liftoff.ocp.costs import CenterOfMassCost, FramePositionCost, FrameVelocityCost, StateCost, VariableCost
from liftoff.ocp.problem import OCP, ContactStage, GroupNumbers, ImpulseStage, StageGroup, TermRows, knot_times

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
        return starts.searchsorted(np.asarray(times) + 1e-9, side="right") - 1


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
    """The controller's plan of one horizon of ``N`` contact stages ``dts[j]`` long, over the
    configuration's ``F`` feet (``contacts.feet``): per stage ``j`` and foot ``i``, whether it is on
    the ground (``stance (N, F)``) and where it stands (``footholds (N, F, 3)``), else its swing
    reference (``swing (N, F, 3)``), and whether it lands at the stage's start (``landing (N, F)``:
    an impulse stage before it; none at ``j = 0``); ``com[j]`` the CoM reference; per knot ``j``
    (``N + 1``), the configuration and velocity references ``q_ref[j], v_ref[j]``."""

    dts: np.ndarray
    stance: np.ndarray
    footholds: np.ndarray
    swing: np.ndarray
    landing: np.ndarray
    com: np.ndarray
    q_ref: np.ndarray
    v_ref: np.ndarray


def horizon_ocp(
    config: GaitMPCConfig, model, q, v, h: Horizon, parts: StageParts | None = None, knots=None, groups=None
) -> OCP:
    """The OCP of the horizon ``h`` from the measured state ``(q, v)`` (module docstring);
    ``parts``: the :class:`StageParts` of ``config`` and ``model`` that the horizons of one MPC
    share (default: made for this one); ``knots`` and ``groups``: its :func:`horizon_knots` and
    its groups' numbers of :func:`horizon_numbers`, if made. The stages
    are made group by group (:meth:`StageParts.label`): each group's cost terms stacked from the
    horizon's arrays, each stage's terms their rows."""
    parts = parts if parts is not None else StageParts(config, model.nv)
    dts = h.dts.tolist()
    contacts = _contact_runs(parts, h.stance, h.footholds)
    impulse_contacts = contacts
    if config.gait.impulse_contacts == "landing":  # an impulse stage holds its landing feet
        impulse_contacts = _contact_runs(parts, h.landing, h.footholds)
    knots = horizon_knots(parts, h) if knots is None else knots
    made = []
    for label, index, numbers in _group_numbers(parts, h, knots, groups):
        js = [knots[k][1] for k in index]
        if label[0] == "contact":
            stages = [ContactStage(contacts[j], dts[j], TermRows(numbers.costs, r)) for r, j in enumerate(js)]
        else:
            stages = [ImpulseStage(impulse_contacts[j], TermRows(numbers.costs, r)) for r, j in enumerate(js)]
        group = StageGroup.of_stacked(stages, index, numbers.costs, parts.keys.get(label), numbers.contacts)
        parts.keys[label] = group.key
        made.append(group)
    return OCP.of_groups(made, **_fields(config, model, q, v, terminal_costs(config, model, h)))


def horizon_numbers(parts: StageParts, h: Horizon, knots) -> tuple:
    """``(times, groups)`` of :func:`horizon_ocp`'s OCP of the horizon ``h`` (its stages
    ``knots``, :func:`horizon_knots`): the time of each of its knots from 0
    (:func:`horizon_times`) and the :class:`ocp.problem.GroupNumbers` of its groups, in
    first-stage order: that OCP's numbers without its stages."""
    return horizon_times(h, knots), tuple(numbers for _, _, numbers in _group_numbers(parts, h, knots))


def horizon_times(h: Horizon, knots) -> np.ndarray:
    """The time of each knot from 0 of :func:`horizon_ocp`'s OCP of the horizon ``h`` (its stages
    ``knots``): :meth:`ocp.problem.OCP.times`."""
    dts = h.dts.tolist()
    return knot_times([dts[j] if label[0] == "contact" else 0.0 for label, j in knots])


PLAN = ("dts", "footholds", "swing", "com", "q_ref", "v_ref")  # the numbers of a Horizon (the rest: its structure)


def plan_vector(h: Horizon) -> np.ndarray:
    """The numbers of the horizon ``h`` (its fields :data:`PLAN`) in one vector."""
    return np.concatenate([getattr(h, name).ravel() for name in PLAN])


def plan_horizon(h: Horizon, plan) -> Horizon:
    """The horizon of ``h``'s structure (which feet stand and land where) with the numbers
    ``plan`` (:func:`plan_vector`'s)."""
    fields, start = {}, 0
    for name in PLAN:
        x = getattr(h, name)
        fields[name] = plan[start : start + x.size].reshape(x.shape)
        start += x.size
    return replace(h, **fields)


def terminal_costs(config: GaitMPCConfig, model, h: Horizon) -> tuple:
    """The terminal cost terms of the horizon ``h``: its last knot's state reference."""
    return (StateCost(h.q_ref[-1], h.v_ref[-1], state_weights(config.costs.terminal_state, model.nv), "state"),)


def horizon_knots(parts: StageParts, h: Horizon) -> tuple:
    """Per stage of the horizon ``h``'s OCP, in time order: its label (:meth:`StageParts.label`)
    and its contact stage in ``h`` (an impulse stage before the contact stage where feet land).
    OCPs of equal labels in the same order have the same groups. Made once per pattern of
    ``h``'s stances and landings (kept in ``parts``, at most :data:`PATTERNS`)."""
    key = (h.stance.shape, h.stance.tobytes(), h.landing.tobytes())
    knots = parts.knots.get(key)
    if knots is None:
        if len(parts.knots) >= PATTERNS:
            parts.knots.clear()
        knots = parts.knots[key] = _knots(parts, h)
    return knots


PATTERNS = 1000  # the patterns of stances and landings whose knots a StageParts keeps (patterns that do not recur)


def _knots(parts: StageParts, h: Horizon) -> tuple:
    """:func:`horizon_knots`, made."""
    held = h.landing if parts.config.gait.impulse_contacts == "landing" else h.stance  # an impulse stage's feet
    bits = 1 << np.arange(h.stance.shape[1])
    standing, holding, landing = ((x @ bits).tolist() for x in (h.stance, held, h.landing))  # per stage, bit masks
    knots = []
    for j, (stands, holds, lands) in enumerate(zip(standing, holding, landing)):
        if lands:
            knots.append((parts.label("impulse", holds, lands), j))
        knots.append((parts.label("contact", stands), j))
    return tuple(knots)


def _group_numbers(parts: StageParts, h: Horizon, knots, made=None):
    """Per group of the stages ``knots`` (:func:`horizon_knots`) of the horizon ``h``, in first-stage
    order: its label, its knot indices and its :class:`ocp.problem.GroupNumbers` (the cost terms
    and contacts stacked from ``h``'s arrays; ``made``: those of every group, if made)."""
    by_label: dict = {}
    for k, (label, _) in enumerate(knots):
        by_label.setdefault(label, []).append(k)
    for i, (label, index) in enumerate(by_label.items()):
        if made is not None:
            yield label, index, made[i]
            continue
        rows = np.array([knots[k][1] for k in index])
        if label[0] == "contact":
            terms, dt = parts.contact_terms(h, rows, label), h.dts[rows]
        else:
            terms, dt = parts.impulse_terms(h, rows, label), None
        yield label, index, GroupNumbers(terms, parts.stacked_contacts(h, rows, label[1]), dt)


def _contact_runs(parts: StageParts, held, footholds) -> list:
    """Per stage, the contacts (:meth:`StageParts.contacts`) of its feet ``held (N, F)`` at their
    ``footholds (N, F, 3)``: made once per run of stages on the same footholds, and once per set
    of footholds, the stances repeating over the horizon."""
    N = len(held)
    where = np.where(held[..., None], footholds, 0.0).reshape(N, -1)
    new = np.empty(N, dtype=bool)
    new[0], new[1:] = True, (held[1:] != held[:-1]).any(axis=1) | (where[1:] != where[:-1]).any(axis=1)
    by_value, out = {}, []
    for j in range(N):
        if new[j]:
            key = (held[j].tobytes(), where[j].tobytes())
            if key not in by_value:
                feet = held[j].nonzero()[0].tolist()
                by_value[key] = parts.contacts({parts.names[i]: footholds[j, i] for i in feet})
            run = by_value[key]
        out.append(run)
    return out


class StageParts:
    """The contacts and cost terms of the stages of the horizons of ``config`` (module
    docstring), for a model of ``nv`` velocities. A horizon's stages of one structure (their
    :meth:`label`) form one group, whose terms are made at once, stacked over its stages
    (:meth:`contact_terms`, :meth:`impulse_terms`); the groups' keys are kept by label
    (``keys``). The feet's contacts are made once and moved to each foothold."""

    def __init__(self, config: GaitMPCConfig, nv):
        self.config, self.costs, self.mpc = config, config.costs, config.mpc
        self.feet = foot_contacts(config, {f: np.zeros(3) for f in config.contacts.feet})
        costs, one = self.costs, np.ones(1)
        self.rows = {  # the rows the terms' stacks repeat (:meth:`_rows`)
            "state": state_weights(costs.state, nv),
            "impulse_state": state_weights(costs.impulse_state, nv),
            "control": costs.control * one,
            "swing_foot": costs.swing_foot * one,
            "com": costs.com * one,
            "touchdown": costs.touchdown * one,
            "landing_velocity": self.mpc.landing_velocity * np.array([1.0, 1.0, 0.0]),
            "zero_u": np.zeros(nv - 6),
            "zero_a": np.zeros(nv),
            "zero3": np.zeros(3),
        }
        for n in range(1, len(self.feet) + 1):  # the forces along the ground of n feet on it
            self.rows[f"zero_f{n}"] = np.zeros(3 * n)
            self.rows[f"tangential_force{n}"] = np.tile([1.0, 1.0, 0.0], n) * self.mpc.tangential_force
        self.repeated: dict = {}  # the rows repeated, by name and number of stages
        self.lowered = np.array([0.0, 0.0, self.mpc.footholds.touchdown_depth])  # a touchdown's reference
        self.keys: dict = {}  # the group key of each label met
        self.labels: dict = {}  # the labels by kind and feet (:meth:`label`)
        self.knots: dict = {}  # the knots of each pattern of stances and landings met (:func:`horizon_knots`)
        self.names = tuple(config.contacts.feet)

    def contacts(self, holds) -> tuple:
        """:func:`foot_contacts` of the feet in ``holds`` ``{foot: foothold}``."""
        return tuple(c.with_placement(holds[c.frame]) for c in self.feet if c.frame in holds)

    def stacked_contacts(self, h: Horizon, js, on) -> tuple:
        """The contacts of the feet ``on`` (names, a label's held feet) at the stages ``js`` of
        ``h``, their targets the footholds stacked: those of :meth:`contacts` at each stage, as a
        group stacks them. ``js``: an index array."""
        footholds = h.footholds[js]
        return tuple(c.with_placement(footholds[:, self.names.index(c.frame)]) for c in self.feet if c.frame in on)

    def label(self, kind, held, landing=0) -> tuple:
        """What fixes the contacts and cost terms of a stage of ``kind``, from the feet ``held`` on
        the ground (a bit mask over ``contacts.feet``): a contact stage's feet held, and those of
        its feet in the air whose swing it weighs and whether it weighs the CoM; an impulse
        stage's feet ``held`` and those ``landing`` (a bit mask). Stages of one label have one
        group key, stages of two labels two. Made once per kind and masks."""
        key = (kind, held, landing)
        label = self.labels.get(key)
        if label is None:
            on = [f for i, f in enumerate(self.names) if held >> i & 1]
            if kind == "impulse":
                label = (kind, tuple(on), tuple(f for i, f in enumerate(self.names) if landing >> i & 1))
            else:
                moving = tuple(f for f in self.names if f not in on)
                phase = "swing" if moving else "stance"
                swings = moving if phase in self.costs.swing_foot_phases else ()
                label = (kind, tuple(on), swings, phase in self.costs.com_phases)
            self.labels[key] = label
        return label

    def contact_terms(self, h: Horizon, js, label) -> tuple:
        """The terms of the contact stages ``js`` of ``h`` of one ``label``, stacked: the state,
        the control, the accelerations (weighted before a landing only, so that a stance's stages
        form one group), the forces along the ground, the swing feet's positions and the CoM.
        ``js``: an index array."""
        costs, mpc, S = self.costs, self.mpc, len(js)
        _, stance, swings, com = label
        scale = h.dts[js][:, None] if costs.integrate_dt else None

        def scaled(name):  # the weights of costs.<name>, times each stage's dt with costs.integrate_dt
            return self._rows(name, S) if scale is None else scale * self.rows[name]

        terms = [
            StateCost(h.q_ref[js], h.v_ref[js], scaled("state"), "state"),
            VariableCost("u", self._rows("zero_u", S), scaled("control"), "control"),
        ]
        if mpc.approach > 0:
            before = np.zeros(len(h.landing), dtype=bool)  # a landing at the next stage's start
            before[:-1] = h.landing[1:].any(axis=1)
            w = before[js].astype(float)[:, None] * mpc.approach
            terms.append(VariableCost("a", self._rows("zero_a", S), w, "approach"))
        if mpc.tangential_force > 0 and stance:
            n = len(stance)
            w = self._rows(f"tangential_force{n}", S)
            terms.append(VariableCost("f", self._rows(f"zero_f{n}", S), w, "tangential_force"))
        for f in swings:
            p = h.swing[js, self.names.index(f)]
            terms.append(FramePositionCost(f, p, scaled("swing_foot"), f"swing_{f}"))
        if com:
            terms.append(CenterOfMassCost(h.com[js], scaled("com"), "com"))
        return tuple(terms)

    def impulse_terms(self, h: Horizon, js, label) -> tuple:
        """The terms of the impulse stages before the contact stages ``js`` of ``h`` of one
        ``label``, stacked: the state, the landing feet's touchdown positions and their
        horizontal velocity. ``js``: an index array."""
        S, landing = len(js), label[2]
        terms = [StateCost(h.q_ref[js], h.v_ref[js], self._rows("impulse_state", S), "state")]
        for f in landing:
            p = h.footholds[js, self.names.index(f)] - self.lowered
            terms.append(FramePositionCost(f, p, self._rows("touchdown", S), f"touchdown_{f}"))
        if self.mpc.landing_velocity > 0:
            w = self._rows("landing_velocity", S)
            terms += [FrameVelocityCost(f, self._rows("zero3", S), w, f"landing_{f}") for f in landing]
        return tuple(terms)

    def _rows(self, name, S) -> np.ndarray:
        """The row ``rows[name]`` repeated over ``S`` stages: read-only, no copy, made once per size."""
        key = (name, S)
        if key not in self.repeated:
            row = self.rows[name]
            self.repeated[key] = np.broadcast_to(row, (S, len(row)))
        return self.repeated[key]


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
    return OCP(stages=(contact, impulse, contact), **_fields(config, model, q0, np.zeros(nv), (state,)))


def _fields(config, model, q, v, terminal) -> dict:
    """The fields of a horizon's OCP but its stages."""
    return dict(
        model=model,
        q0=np.asarray(q, dtype=float),
        v0=np.asarray(v, dtype=float),
        terminal_costs=terminal,
        friction=config.contacts.friction,
        limits=tuple(config.limits),
        joint_friction_width=config.joint_friction.width,
    )
