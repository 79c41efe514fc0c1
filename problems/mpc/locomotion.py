"""A legged robot's MPC on its measured contacts: the schedule, the footholds, the horizon's plan.

:class:`GaitController` is the problem builder of a gait MPC (the ``build`` of
:class:`.controller.MPC`): at each update it reads the plant's contacts (:meth:`observe`, which
the closed loop calls at every plant step), moves the contact schedule, and plans the horizon
(:class:`problems.tasks.gait_mpc.Horizon`, made an OCP by
:func:`problems.tasks.gait_mpc.horizon_ocp`).

**The schedule** is the gait's phases (those before ``mpc.cycle_start`` once, then the cycle
repeated) as a sequence of knots of ``gait.dt``, each with the feet it holds on the ground.
Its clock advances by one MPC period per update; the feet follow it as the plant's contacts say:

- a foot in the air that touches the ground in the second half of its swing is in stance at
  once (an early touchdown);
- a foot the schedule puts down that has not touched, or that will not reach the ground within
  the first stage, holds the clock (the whole schedule waits: that swing is extended, the other
  feet stand on) for at most ``footholds.late`` seconds, its swing reference reaching on down;
  its touchdown goes a stage past the knot the clock holds at, so that a foot due to lift off
  at that knot lifts off a stage before it lands; after ``late`` it is in stance where it was
  to land;
- a foot lifts off when the schedule says, touching or not.

A foot in stance is anchored where it is measured (its contact frame, read again at each
update while it touches): the horizon's stance constraints hold it there, not at a planned
foothold it slid from. The impulse stage of a landing sits at the knot of its touchdown as the
(possibly shifted) schedule has it; a touchdown already measured has none.

**Footholds** (Raibert's rule with a capture-point gain): a foot that lands at ``t_D`` and then
stands ``T_st`` lands at

    p = p_hip(t_D) + (T_st / 2) v_hip(t_D) + k (v - v_cmd),

``p_hip(t_D)`` its place under the hip (that of the standing configuration) on the base's
reference at ``t_D``, ``v_hip = v_cmd + omega_cmd x (p_hip - p_base)`` the hip's horizontal
velocity under the command (its turn included), ``v`` the measured horizontal base velocity and
``v_cmd`` the command's (world axes), ``k = sqrt(h / g)`` with ``h`` the standing CoM height (the capture point's
time constant) unless ``footholds.gain`` is set; the offset from ``p_hip`` is clipped at
``footholds.max_step``. A push shows in ``v - v_cmd`` and is absorbed by stepping along it. A
command whose stepping would go beyond ``max_step`` is refused (:class:`ConfigError`).

**References**: the base's horizontal position integrates the command (rotated by the
reference yaw) from the measured position; the reference yaw integrates the yaw rate over the
run, kept within ``YAW_LEAD`` of the measured yaw; roll and pitch zero, the standing height
and joints; the velocity reference is the command in the base frame. The CoM's moves with the
base's from the measured CoM, at the standing CoM height. A swing from ``p_L`` at lift-off
``t_L`` to the foothold ``p_D`` at ``t_D``: with ``s = (t - t_L) / (t_D - t_L)`` (at most 1)
and ``b(s) = (1 - cos(pi s)) / 2``,

    (x, y) = p_L + b(s') (p_D - p_L),   z = z_L + s (z_D - d - z_L) + h P(s),

``s' = min(s / (1 - l), 1)`` with ``l`` the ``footholds.vertical_landing`` fraction (the foot
above its foothold from ``s = 1 - l`` on, coming straight down, so that one landing early by
up to ``l`` of its swing does not land moving), ``d`` the touchdown depth, ``h`` the step height
and ``P`` the gait's swing profile
(:data:`problems.tasks.gaits.PROFILES`): the foot leaves and lands without horizontal velocity,
comes down at a steady pace (the stages' explicit Euler step follows it: a foot that brakes
within the 20 ms before touchdown is not where the plan has it) and reaches ``d`` below the
ground at the planned touchdown, where a late foot's reference stays.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import numpy as np

from liftoff import dynamics
from liftoff.problems.tasks.config import ConfigError
from liftoff.problems.tasks.gait_mpc import (
    GaitMPCConfig,
    Horizon,
    StageParts,
    horizon_knots,
    horizon_numbers,
    horizon_ocp,
    horizon_times,
    layout_ocp,
    plan_horizon,
    plan_vector,
    terminal_costs,
)
from liftoff.problems.tasks.gaits import PROFILES, initial_state, legged_model

from .aligned import HorizonNumbers
from .feet import FeetKinematics
from .plan import CompiledPlan
from .plants import TOUCHING

GRAVITY = 9.81
TOUCH_S = 0.005  # a foot whose contact the plant reported this recently touches
LAND_TOLERANCE = 0.002  # m: a foot predicted this high above the ground at its touchdown knot is late
YAW_LEAD = 0.3  # rad: the farthest the reference yaw runs ahead of the measured yaw
NEVER = 10**9  # the knot of a change that never comes (a foot the cycle never lifts)


class Schedule:
    """The contact schedule of ``phases`` (:class:`problems.tasks.config.Phase`, those before
    ``cycle_start`` once, then the others repeated) for ``feet``, knot by knot."""

    def __init__(self, phases, cycle_start, feet):
        self.table = np.array([[f in p.contact for f in feet] for p in phases for _ in range(p.knots)], dtype=bool)
        self.prefix = sum(p.knots for p in phases[:cycle_start])
        self.cycle = len(self.table) - self.prefix
        self.waits = {standing: self._waits(standing) for standing in (False, True)}

    def stands(self, k) -> np.ndarray:
        """Which feet the schedule holds on the ground at knot ``k``."""
        return self.table[self._within(k)]

    def next(self, i, k, standing) -> int:
        """The first knot from ``k`` on at which foot ``i`` stands (``standing``) or is in the air."""
        wait = self.waits[standing][i][self._within(k)]
        return NEVER if wait is None else k + wait

    def _within(self, k) -> int:
        """The knot of the table that plays at knot ``k``: from the end of the table on, the cycle's."""
        return k if k < len(self.table) else self.prefix + (k - self.prefix) % self.cycle

    def _waits(self, standing) -> list:
        """Per foot and knot of the table, the knots from there to the first at which the foot
        stands (``standing``) or is in the air, None if it never does: the schedule from a knot
        beyond the table is that of the table's knot that plays there."""
        span = len(self.table) + self.cycle
        return [
            [next((d for d in range(span) if self.stands(k + d)[i] == standing), None) for k in range(len(self.table))]
            for i in range(self.table.shape[1])
        ]


@dataclass
class Foot:
    """One foot as the controller runs it: in ``stance`` or not; ``anchor``, where it stands
    (or lifted off); ``change``, the knot of its next lift-off (or planned touchdown); the
    swing's ``lift`` time, the touchdown time ``planned`` at lift-off, its foothold ``target``,
    and when it ``touched`` (None before)."""

    stance: bool
    anchor: np.ndarray
    change: int
    lift: float = 0.0
    planned: float = 0.0
    target: np.ndarray | None = None
    touched: float | None = None

    def progress(self, t) -> float:
        """How far the swing is at time ``t``, from 0 at lift-off to 1 at the planned touchdown."""
        return (t - self.lift) / max(self.planned - self.lift, 1e-9)


@dataclass(frozen=True)
class Touchdown:
    """A measured touchdown of ``foot``: when the plan put it down at lift-off, and when it touched."""

    foot: str
    planned: float
    measured: float


class GaitController:
    """The MPC's problem builder for the gait MPC ``config`` (module docstring); ``model`` the
    controller's (default: the configuration's robot with its joint friction). The feet's
    kinematics at each update run in the configuration's ``solver.backend``
    (:class:`.feet.FeetKinematics`; ``quiet``: no message while compiling), and so does the
    horizon's plan (:class:`.plan.CompiledPlan`, or :meth:`reference_plan` with numpy)."""

    def __init__(self, config: GaitMPCConfig, model=None, quiet=False):
        self.config, self.model = config, model if model is not None else legged_model(config)
        self.q0, _ = initial_state(config, self.model)
        self.feet, self.dt = tuple(config.contacts.feet), config.gait.dt
        self.schedule = Schedule(config.gait.phases, config.mpc.cycle_start, self.feet)
        self.kinematics = FeetKinematics(self.model, self.feet, config.solver.backend, quiet)
        self.commands = np.array([(c.vx, c.vy, c.yaw_rate) for c in config.mpc.command])  # mpc.command's rows
        feet = np.array([dynamics.frame_placement(self.model, self.q0, f)[1] for f in self.feet])
        self.hips = (feet[:, :2] - self.q0[:2]) @ _rotation(_yaw(self.q0))  # under the hips, in the heading frame
        self.ground = float(np.mean(feet[:, 2]))  # the feet's contact frames standing
        self.floor = self.ground  # the foot's height at the last touchdown: the footholds' height
        self.com_height = float(dynamics.center_of_mass(self.model, self.q0)[2])
        self.profile = PROFILES[config.gait.swing_profile]
        fh = config.mpc.footholds
        self.gain = fh.gain if fh.gain is not None else float(np.sqrt((self.com_height - self.ground) / GRAVITY))
        self.layout = layout_ocp(config, self.model, self.q0)
        self._compiled = CompiledPlan.of(self) if config.solver.backend == "compiled" else None
        self.parts = StageParts(config, self.model.nv)  # the contacts and terms every horizon shares
        self._check_reach()
        self.feet_state: list = []
        self.clock, self.knot, self.yaw_ref, self.t = None, 0, 0.0, 0.0
        self.last_contact = {f: -np.inf for f in self.feet}
        self.touchdowns: list = []

    # ------------------------------------------------------------------ the plant's side

    def observe(self, steps) -> None:
        """Read the contacts of the plant's ``steps`` (:class:`.plants.Steps`;
        :func:`.loop.closed_loop`'s hook): a contact during a step is dated its time."""
        touching = steps.readings[:, [steps.index[f] for f in self.feet], TOUCHING] != 0
        times, landed = steps.t.tolist(), []
        for i in touching.any(axis=0).nonzero()[0].tolist():
            st, when = self.feet_state[i], touching[:, i].nonzero()[0].tolist()
            self.last_contact[self.feet[i]] = times[when[-1]]
            if st.touched is None and st.planned > st.lift:
                landed += [(j, i) for j in when if st.progress(times[j]) >= 0.5][:1]
        for j, i in sorted(landed):  # by step, then by foot
            f, st = self.feet[i], self.feet_state[i]
            st.touched = times[j]
            self.touchdowns.append(Touchdown(f, st.planned, st.touched))
            self.floor = float(dynamics.frame_placement(self.model, steps.q[j + 1], f)[1][2])

    def holds(self, t) -> set:
        """The feet the controller expects on the ground at time ``t``: those in stance and those
        in the second half of their swing (for liftoff's idealized plant, which catches them)."""
        return {f for f, st in zip(self.feet, self.feet_state) if st.stance or st.progress(t) >= 0.5}

    # ------------------------------------------------------------------ the MPC's side

    def __call__(self, t, q, v, tau=None):
        """The OCP of the horizon from time ``t`` and the measured state ``(q, v)``."""
        h = self._horizon(t, q, v)
        return horizon_ocp(self.config, self.model, q, v, h, self.parts, horizon_knots(self.parts, h))

    def numbers(self, t, q, v, tau=None) -> HorizonNumbers:
        """The horizon from time ``t`` and the measured state ``(q, v)`` (:meth:`__call__`) as its
        :class:`.aligned.HorizonNumbers`, its OCP made when asked."""
        return self._numbers(q, v, self._horizon(t, q, v))

    def _numbers(self, q, v, h: Horizon) -> HorizonNumbers:
        """The :class:`.aligned.HorizonNumbers` of the plan ``h`` from the measured state ``(q, v)``:
        its structure the labels of its stages (:func:`problems.tasks.gait_mpc.horizon_knots`:
        equal labels, the same groups), its plan the numbers of ``h``
        (:func:`problems.tasks.gait_mpc.plan_vector`)."""
        knots = horizon_knots(self.parts, h)
        q, v = np.array(q, dtype=float), np.array(v, dtype=float)

        def numbers_of(plan):
            other = plan_horizon(h, plan)
            return horizon_numbers(self.parts, other, knots)[1], terminal_costs(self.config, self.model, other)

        def make():
            return horizon_ocp(self.config, self.model, q, v, h, self.parts, knots)

        structure = tuple(label for label, _ in knots)
        times = horizon_times(h, knots)
        return HorizonNumbers(structure, times, q, v, np.zeros(0), plan_vector(h), numbers_of, None, make)

    def rehearsal(self, t, q, v, tau=None):
        """The numbers (:meth:`numbers`) of the horizons that the updates from time ``t`` and the measured state
        ``(q, v)`` meet at the schedule's knots, the feet following it on time: one per knot of
        its phases played once and of one cycle (their structures; the plan's numbers are those of
        a schedule started at each knot). For :meth:`.controller.MPC.start`, which prepares their
        compiled horizons before the loop. The controller's schedule and feet are left as they
        are; the group keys of the labels met are kept, as an update keeps them."""
        positions, _, com = self.kinematics(q, v)
        ghost = copy.copy(self)  # the schedule's clock and feet of each knot; the rest shared
        ghost.yaw_ref = _yaw(q)
        for knot in range(self.schedule.prefix + self.schedule.cycle):
            ghost.clock, ghost.knot = knot * self.dt, knot
            ghost.feet_state = ghost._feet_at(t, knot, positions)
            yield ghost._numbers(q, v, ghost._plan(t, q, v, com))

    def _horizon(self, t, q, v) -> Horizon:
        """The schedule and the feet moved to the update at ``t`` (the first: started), and the plan of its horizon."""
        positions, velocities, com = self.kinematics(q, v)
        if self.clock is None:
            self._start(t, q, positions)
        else:
            self._advance(t, q, positions, velocities)
        return self._plan(t, q, v, com)

    def _start(self, t, q, positions):
        self.clock, self.knot, self.yaw_ref, self.t = 0.0, 0, _yaw(q), t
        self.feet_state = self._feet_at(t, 0, positions)

    def _feet_at(self, t, knot, positions) -> list:
        """The feet at time ``t`` on the schedule's ``knot`` (the clock there): those it holds on
        the ground standing at ``positions``, the others lifting off from there."""
        stands = self.schedule.stands(knot)
        return [
            Foot(True, positions[i], self.schedule.next(i, knot, False)) if stands[i]
            else self._lift(i, t, knot, positions[i])
            for i in range(len(self.feet))
        ]  # fmt: skip

    def _lift(self, i, t, knot, where) -> Foot:
        change = self.schedule.next(i, knot, True)
        return Foot(False, where, change, lift=t, planned=self._when(change, t))

    def _when(self, k, t):
        """The time at which knot ``k`` (after the clock's; or each of the knots ``k``) starts, at
        the update of time ``t``."""
        return t + k * self.dt - self.clock

    def _advance(self, t, q, positions, velocities):
        """Move the schedule and the feet to the update at ``t`` (module docstring), the feet at
        ``positions`` moving at ``velocities``."""
        fh = self.config.mpc.footholds
        period = self.config.mpc.period
        cmd = self.config.mpc.command_at(self.t)
        self.yaw_ref += cmd.yaw_rate * (t - self.t)
        lead = _wrap(self.yaw_ref - _yaw(q))
        self.yaw_ref -= lead - min(max(lead, -YAW_LEAD), YAW_LEAD)
        self.t = t
        touching = [self.last_contact[f] >= t - TOUCH_S for f in self.feet]
        clock = self.clock + period
        knot = _floor(clock / self.dt)
        first = (knot + 1) * self.dt - clock  # the first stage's length
        waiting = [
            st
            for i, (st, touches) in enumerate(zip(self.feet_state, touching))
            if not st.stance
            and not touches
            and t - st.planned < fh.late - 1e-9
            and (st.change <= knot or (st.change == knot + 1 and self._short(positions[i], velocities[i], first)))
        ]
        if waiting:  # the schedule holds for the late feet, their touchdowns a full stage on
            clock, knot = self.clock, self.knot
            for st in waiting:
                st.change = max(st.change, knot + 2)
        self.clock, self.knot = clock, knot
        for i, (st, touches) in enumerate(zip(self.feet_state, touching)):
            if st.stance and knot >= st.change:
                self.feet_state[i] = self._lift(i, t, knot, positions[i])
            elif st.stance and touches:
                st.anchor = positions[i]
            elif not st.stance and touches and st.progress(t) >= 0.5:  # landed (early or on time)
                self._land(st, i, knot, positions[i])
            elif not st.stance and knot >= st.change:  # waited long enough: stands where it was to land
                self._land(st, i, knot, np.array([*st.target[:2], self.floor]))

    def _short(self, where, velocity, h) -> bool:
        """Whether a foot at ``where`` stops short of the ground at the end of the first stage
        (of length ``h``) as the stages' explicit Euler step moves it (by its ``velocity`` now):
        its touchdown then needs a stage more, for the torques of the swing stage before it to
        move it (they do not move it within their own stage)."""
        return where[2] + h * velocity[2] - self.floor > LAND_TOLERANCE

    def _land(self, st, i, knot, where):
        st.stance, st.anchor = True, where
        st.change = self.schedule.next(i, max(knot, st.change), False)

    def _plan(self, t, q, v, com_now) -> Horizon:
        """The plan of the horizon from time ``t``, the measured state ``(q, v)`` and CoM
        ``com_now`` (:meth:`reference_plan`), in one compiled call where it can be
        (:class:`.plan.CompiledPlan`: the same numbers)."""
        if self._compiled is None:
            return self.reference_plan(t, q, v, com_now)
        return self._compiled(self, t, q, self._velocity_error(t, q, v), com_now)

    def _velocity_error(self, t, q, v) -> np.ndarray:
        """The measured horizontal base velocity minus the command's at time ``t`` (world axes,
        the command turned by the reference yaw)."""
        velocity = (_base_rotation(q) @ v[:3])[:2]
        return velocity - _rotation(self.yaw_ref) @ self.commands[self.config.mpc.command_index(t), :2]

    def reference_plan(self, t, q, v, com_now) -> Horizon:
        """The plan of the horizon from time ``t`` (module docstring) with numpy: the schedule's
        knots' times and commands, the base's path, each foot's runs of stages (:meth:`_segments`)
        and the references; the targets of the feet in the air at the start set."""
        N, nf = self.config.mpc.horizon, len(self.feet)
        times = self._when(self.knot + np.arange(N + self.schedule.cycle + 1), t)
        times[0] = t
        commands = self.commands[self.config.mpc.command_index(times)]
        xy, yaw = self._base_path(q, commands, times[1:] - times[:-1])
        error = self._velocity_error(t, q, v)
        stance, footholds = np.zeros((N, nf), dtype=bool), np.zeros((N, nf, 3))
        landing, swing = np.zeros((N, nf), dtype=bool), np.zeros((N, nf, 3))
        swings = []  # per swing run: its foot, first and end stages and the arguments of _swing
        for i, st in enumerate(self.feet_state):
            for kind, first, end, where in self._segments(i, st, N, t, times, xy, yaw, commands, error):
                if kind == "land":
                    landing[first, i] = True
                elif kind == "stand":
                    stance[first:end, i], footholds[first:end, i] = True, where
                else:
                    swings.append((i, first, end, where))
        if swings:  # every swing stage's reference at once
            feet, firsts, ends, where = zip(*swings)
            counts = np.subtract(ends, firsts)
            stages = np.concatenate([np.arange(a, b) for a, b in zip(firsts, ends)])
            feet = np.array(feet).repeat(counts)
            p_lift, p_land, lift, land = (np.array(x).repeat(counts, axis=0) for x in zip(*where))
            swing[stages, feet] = self._swing(p_lift, p_land, lift, land, times[stages])
        q_ref = self.q0[None].repeat(N + 1, axis=0)
        q_ref[:, :2] = xy[: N + 1]
        q_ref[:, 3:5] = 0.0
        q_ref[:, 5], q_ref[:, 6] = np.sin(0.5 * yaw[: N + 1]), np.cos(0.5 * yaw[: N + 1])
        v_ref = np.zeros((N + 1, self.model.nv))
        v_ref[:, [0, 1, 5]] = commands[: N + 1]
        com = np.empty((N, 3))
        com[:, :2], com[:, 2] = com_now[:2] + xy[:N] - xy[0], self.com_height
        return Horizon(times[1 : N + 1] - times[:N], stance, footholds, swing, landing, com, q_ref, v_ref)

    def _segments(self, i, st, N, t, times, xy, yaw, commands, error):
        """Foot ``i`` (its state ``st``) over the ``N`` stages of the horizon, as runs of stages
        ``(kind, first, end, where)`` from ``first`` to before ``end``: ``stand`` on ``where`` (its
        foothold), or ``swing`` with ``where`` the arguments of :meth:`_swing` before the times; and
        ``("land", j, j, None)`` for a landing at the start of stage ``j``. ``error`` is the
        measured horizontal base velocity minus the command's."""
        standing, anchor, change = st.stance, st.anchor, st.change
        lift, p_lift, t_land, target = st.lift, st.anchor, 0.0, None
        if not standing:  # its reference keeps the planned touchdown time: a late foot reaches on down
            t_land = st.planned
            target = st.target = self._foothold(i, change - self.knot, xy, yaw, commands, error)
        j = 0
        while j < N:
            k = self.knot + j
            if standing and k >= change:
                standing, lift, p_lift = False, times[j], anchor
                change = self.schedule.next(i, k, True)
                t_land = self._when(change, t)
                target = self._foothold(i, change - self.knot, xy, yaw, commands, error)
            elif not standing and k >= change:
                standing, anchor = True, target
                change = self.schedule.next(i, k, False)
                yield "land", j, j, None
            end = min(max(change - self.knot, j + 1), N)  # the next change, at least a stage on
            yield ("stand", j, end, anchor) if standing else ("swing", j, end, (p_lift, target, lift, t_land))
            j = end

    def _base_path(self, q, commands, steps):
        """The base's horizontal reference and yaw at each stage start (module docstring), the
        stages ``steps`` long under ``commands`` (per stage ``vx, vy, yaw_rate``)."""
        yaw = np.add.accumulate(np.concatenate(([self.yaw_ref], steps * commands[:-1, 2])))
        c, s, (vx, vy) = np.cos(yaw[:-1]), np.sin(yaw[:-1]), commands[:-1, :2].T
        xy = np.empty((len(yaw), 2))
        xy[0] = q[:2]
        xy[1:, 0], xy[1:, 1] = steps * (c * vx - s * vy), steps * (s * vx + c * vy)  # the command turned by the yaw
        return np.add.accumulate(xy), yaw

    def _foothold(self, i, j, xy, yaw, commands, error) -> np.ndarray:
        """Where foot ``i`` lands at knot ``j`` of the horizon (module docstring); ``error`` the
        measured horizontal base velocity minus the command's."""
        j = min(j, len(xy) - 1)
        c, s = math.cos(yaw[j]), math.sin(yaw[j])
        stance = min(self.schedule.next(i, self.knot + j, False) - self.knot - j, self.schedule.cycle)
        vx, vy, yaw_rate = commands[j].tolist()
        hx, hy = self.hips[i].tolist()
        hx, hy = c * hx - s * hy, s * hx + c * hy  # the hip's offset, turned to the heading
        half = 0.5 * stance * self.dt
        ox = half * (c * vx - s * vy - yaw_rate * hy) + self.gain * error[0]
        oy = half * (s * vx + c * vy + yaw_rate * hx) + self.gain * error[1]
        reach, max_step = math.sqrt(ox * ox + oy * oy), self.config.mpc.footholds.max_step
        if reach > max_step:
            ox, oy = ox * max_step / reach, oy * max_step / reach
        return np.array([xy[j, 0] + hx + ox, xy[j, 1] + hy + oy, self.floor])

    def _swing(self, p_lift, p_land, lift, land, t) -> np.ndarray:
        """The swing reference at time ``t`` (module docstring) of the swing from ``p_lift (3,)``
        at ``lift`` to ``p_land`` at ``land``: ``(3,)``; or ``(n, 3)`` at ``n`` times, of one
        swing or of ``n`` swings (their arguments stacked: ``(n, 3)`` and ``(n,)``)."""
        fh = self.config.mpc.footholds
        s = ((np.asarray(t) - lift) / np.maximum(np.subtract(land, lift), 1e-9)).clip(0.0, 1.0)
        b = 0.5 * (1.0 - np.cos(np.pi * np.minimum(s / (1.0 - fh.vertical_landing), 1.0)))
        depth, height = fh.touchdown_depth, self.config.gait.step_height
        out = p_lift + b[..., None] * (p_land - p_lift)
        z_lift = p_lift[..., 2]
        out[..., 2] = z_lift + s * (p_land[..., 2] - depth - z_lift) + height * self.profile(s)
        return out

    def _check_reach(self):
        """:class:`ConfigError` for a command whose footholds would lie beyond ``max_step``."""
        longest = max(
            (
                self.schedule.next(i, k, False) - k
                for i in range(len(self.feet))
                for k in range(len(self.schedule.table))
                if self.schedule.stands(k)[i] and (k == 0 or not self.schedule.stands(k - 1)[i])
            ),
            default=0,
        )
        longest = min(longest, self.schedule.cycle)
        radius = float(np.max(np.linalg.norm(self.hips, axis=1)))
        max_step = self.config.mpc.footholds.max_step
        for n, c in enumerate(self.config.mpc.command):
            reach = 0.5 * longest * self.dt * (np.hypot(c.vx, c.vy) + abs(c.yaw_rate) * radius)
            if reach > max_step:
                raise ConfigError(
                    f"the gait cannot reach this command: stances of {longest * self.dt:g} s need footholds "
                    f"{reach:.3f} m from the hips, beyond mpc.footholds.max_step = {max_step:g} m",
                    f"mpc.command[{n}]",
                )


def _floor(x) -> int:
    """``floor(x)``, ``x`` a multiple of a ratio of periods up to rounding."""
    return int(np.floor(x + 1e-9))


def _yaw(q) -> float:
    x, y, z, w = q[3:7].tolist()  # Python floats: numpy's arithmetic, without its scalars' cost
    return float(np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z)))


def _wrap(angle) -> float:
    return float((angle + np.pi) % (2 * np.pi) - np.pi)


def _rotation(yaw) -> np.ndarray:
    """The planar rotation ``(2, 2)`` of the angle ``yaw``."""
    c, s = math.cos(yaw), math.sin(yaw)
    return np.array([[c, -s], [s, c]])


def _base_rotation(q) -> np.ndarray:
    x, y, z, w = q[3:7].tolist()
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )
