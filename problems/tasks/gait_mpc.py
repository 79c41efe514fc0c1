"""Gaits in a receding horizon: a gait configuration played periodically by MPC against a plant
(:mod:`problems.mpc.gait_run`).

A ``task: gait_mpc`` configuration is a gait configuration (:class:`problems.tasks.config.GaitConfig`)
whose phases are played once up to ``mpc.cycle_start`` and then repeated: the whole run's OCP
is built once by the gait builder (:func:`problems.tasks.gaits.build_problem`, its footholds and
references moving at the gait's speed), and each MPC update takes the window of it that
starts at the update's time: ``mpc.horizon`` contact stages and the impulse stages among them,
with the state regularization of the stage that follows as the terminal cost
(:func:`window`). The contact schedule thus moves with time, impulse stages included. The
commanded velocity is that of the references: the feet's mean displacement per cycle over the
cycle's duration.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from liftoff import dynamics
from liftoff.ocp.costs import StateCost
from liftoff.ocp.problem import OCP

from .config import GaitConfig, PlantBase, at_least, at_most, check, convert_fields, no_duplicates, one_of
from .gaits import build_problem, state_weights


@dataclass(frozen=True, kw_only=True)
class GaitMPCSettings:
    horizon: int = 25  # in [1, 1e3]: contact stages per horizon
    period: float = 0.02  # in (0, 1]: time between MPC updates (s), a multiple of gait.dt
    iterations: int = 1  # in [1, 100]: Newton iterations per update
    first_iterations: int = 10  # in [1, 1e4]: Newton iterations of the first solve
    duration: float = 5.0  # in (0, 1e3]: simulated time (s)
    cycle_start: int = 1  # in [0, 1e3]: the first phase of the repeated cycle (those before it are played once)

    def __post_init__(self):
        convert_fields(self)
        at_least(self, ("period", "duration"), 0, strict=True)
        at_least(self, ("horizon", "iterations", "first_iterations"), 1)
        at_least(self, ("cycle_start",), 0)
        at_most(self, ("period",), 1.0)
        at_most(self, ("duration",), 1e3)
        at_most(self, ("horizon", "cycle_start"), 1000)
        at_most(self, ("iterations",), 100)
        at_most(self, ("first_iterations",), 10_000)


@dataclass(frozen=True, kw_only=True)
class LeggedPlantSettings(PlantBase):
    """The simulated plant (:mod:`problems.mpc.plants`)."""

    kp: float = 0.0  # in [0, 1e6]: liftoff's plant: Baumgarte position gain holding the feet in contact
    kd: float = 0.0  # in [0, 1e4]: liftoff's plant: Baumgarte velocity gain
    scaled_joints: tuple[str, ...] = ("root_joint",)  # the bodies whose mass --mass-scale multiplies (the base's)

    def __post_init__(self):
        super().__post_init__()
        at_least(self, ("kp", "kd"), 0)
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
        ratio = self.mpc.period / self.gait.dt
        ok = abs(ratio - round(ratio)) < 1e-9 * ratio
        check(ok, "mpc.period", f"a multiple of gait.dt = {self.gait.dt:g}", self.mpc.period)
        steps = self.mpc.period / self.plant.dt
        ok = abs(steps - round(steps)) < 1e-9 * steps
        check(ok, "plant.dt", f"a divisor of mpc.period = {self.mpc.period:g}", self.plant.dt)


@dataclass(frozen=True)
class GaitRun:
    """The whole run made concrete: its configuration, model, OCP over the run (and a horizon
    more), the contact-stage indices of that OCP, the feet and their ground height."""

    config: GaitMPCConfig
    model: object
    ocp: OCP
    contact_stages: np.ndarray
    feet: tuple
    ground: float

    @property
    def dt(self) -> float:
        return self.config.gait.dt

    def stage_at(self, t) -> int:
        """The index of the contact stage running at time ``t``."""
        return int(self.contact_stages[min(int(np.floor(t / self.dt + 1e-9)), len(self.contact_stages) - 1)])

    def schedule(self, t) -> set:
        """The feet the plan holds on the ground at time ``t``."""
        return {c.frame for c in self.ocp.stages[self.stage_at(t)].contacts}

    def command_velocity(self) -> float:
        """The forward speed of the references over the repeated cycles: the base reference's
        displacement from the cycles' start to the run's end over that time."""
        start = sum(p.knots for p in self.config.gait.phases[: self.config.mpc.cycle_start]) * self.dt
        times = self.ocp.times()[self.contact_stages]
        first, last = int(np.searchsorted(times, start - 1e-9)), len(times) - 1
        refs = [
            next(term for term in self.ocp.stages[self.contact_stages[k]].costs if term.name == "state").q_ref
            for k in (first, last)
        ]
        return float((refs[1][0] - refs[0][0]) / (times[last] - times[first]))


def make_run(config: GaitMPCConfig) -> GaitRun:
    """The OCP of the whole run: the phases up to ``mpc.cycle_start``, then the cycle repeated
    until the run and one more horizon are covered."""
    gait, m = config.gait, config.mpc
    prefix, cycle = list(gait.phases[: m.cycle_start]), list(gait.phases[m.cycle_start :])
    phases, knots = list(prefix), sum(p.knots for p in prefix)
    while knots * gait.dt < m.duration + (m.horizon + 2) * gait.dt:
        phases += cycle
        knots += sum(p.knots for p in cycle)
    whole = dataclasses.replace(gait, phases=tuple(phases), horizon=knots)
    base = {f.name: getattr(config, f.name) for f in dataclasses.fields(GaitConfig)}
    ocp = build_problem(GaitConfig(**{**base, "gait": whole}))
    contact_stages = np.array([k for k, s in enumerate(ocp.stages) if s.kind == "contact"])
    feet = config.contacts.feet
    ground = float(np.mean([dynamics.frame_placement(ocp.model, ocp.q0, f)[1][2] for f in feet]))
    return GaitRun(config, ocp.model, ocp, contact_stages, feet, ground)


def window(run: GaitRun, t, q, v) -> OCP:
    """The OCP of the horizon starting at time ``t`` from the measured ``(q, v)``: the run's
    stages from the contact stage at ``t``, ``mpc.horizon`` contact stages and the impulses
    among them, and the terminal state regularization toward the following stage's reference."""
    cfg, n = run.config, run.config.mpc.horizon
    first = int(np.floor(t / run.dt + 1e-9))
    start, end = run.contact_stages[first], run.contact_stages[first + n]
    state = next(term for term in run.ocp.stages[end].costs if term.name == "state")
    weights = state_weights(cfg.costs.terminal_state, run.model.nv)
    terminal = (StateCost(state.q_ref, state.v_ref, weights, "state"),)
    return dataclasses.replace(run.ocp, q0=q, v0=v, stages=run.ocp.stages[start:end], terminal_costs=terminal)
