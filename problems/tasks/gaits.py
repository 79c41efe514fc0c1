"""Legged-gait OCPs from a :class:`problems.tasks.config.GaitConfig`: ``build_problem(config) -> OCP``.

The gait is a contact schedule: phases, each with the feet in contact and a number of
contact stages. A foot that is not in contact in a phase swings: over the phase it moves
forward by the step length, along ``z = z_start + h profile(s)`` (``s`` from 0 to 1 over the
phase; ``h`` the step height; the profile ``4 s (1 - s)``, or ``1 - |2 s - 1|`` for
``gait.swing_profile: triangle``), and lands where the next phase that holds it begins. A
phase without contacts is a flight: every foot moves by the jump length and the CoM rises by
``h profile(s)`` with ``h`` the jump height. A landing is an impulse stage with every foot in
contact after it (or the landing feet only: ``gait.impulse_contacts: landing``); the landing
feet's contact position is a quadratic penalty there. ``costs.integrate_dt`` weighs the
contact stages' costs by the time step.

Costs per contact stage: state regularization toward the standing configuration (its base
moved with the feet), control, swing-foot positions and the CoM. The CoM reference moves with
the mean displacement of the planned feet (and rises in a flight) from an origin: the
standing CoM (``gait.com_reference: standing``) or the centroid of the feet in x, y at the
standing CoM height (``feet``, seed 004's code). The swing-foot and CoM costs act on the
stages of the phase kinds listed in ``costs.swing_foot_phases`` and ``costs.com_phases``
(:func:`phase_kind`). Contacts are 3D points with Baumgarte gains ``kp = beta^2``,
``kd = 2 alpha`` (seed 004 eq. 5) toward the planned footholds.
"""

from __future__ import annotations

import numpy as np

from liftoff import dynamics
from liftoff.dynamics import Contact
from liftoff.dynamics.model import close_names
from liftoff.ocp.costs import CenterOfMassCost, FramePositionCost, StateCost, VariableCost
from liftoff.ocp.problem import OCP, ContactStage, ImpulseStage

from .config import ProblemError

#: Named configurations (``initial_state.q``); ANYmal's is seed 004's initial state.
CONFIGURATIONS = {
    "anymal": {
        "standing": (0, 0, 0.4792, 0, 0, 0, 1, -0.1, 0.7, -1.0, -0.1, -0.7, 1.0, 0.1, 0.7, -1.0, 0.1, -0.7, 1.0)
    },
}


def initial_state(config, model):
    """``(q0, v0)`` from ``config.initial_state``."""
    q, v = config.initial_state.q, config.initial_state.v
    if isinstance(q, str):
        named = CONFIGURATIONS.get(config.robot, {})
        if q not in named:
            known = ", ".join(sorted(named)) or "none"
            raise ProblemError(
                f"initial_state.q: unknown configuration {q!r} for {config.robot} "
                f"(known: {known}; or give {model.nq} values)"
            )
        q = named[q]
    q = np.asarray(q, dtype=float)
    v = np.zeros(model.nv) if isinstance(v, str) else np.asarray(v, dtype=float)
    if q.shape != (model.nq,):
        raise ProblemError(f"initial_state.q: {config.robot} needs {model.nq} values, got {q.size}")
    if v.shape != (model.nv,):
        raise ProblemError(f"initial_state.v: {config.robot} needs {model.nv} values, got {v.size}")
    if model.has_free_flyer and not np.linalg.norm(q[3:7]) > 1e-9:
        raise ProblemError(f"initial_state.q: the base orientation q[3:7] is a zero quaternion, got {q[3:7].tolist()}")
    return dynamics.integrate(model, q, np.zeros(model.nv)), v  # normalizes the quaternion


def state_weights(w, nv):
    """The ``2 nv`` weights of :class:`ocp.costs.StateCost` from a ``StateWeights`` section."""
    joints = nv - 6
    return np.concatenate(
        (
            [w.base_position] * 3,
            [w.base_orientation] * 3,
            [w.joint_position] * joints,
            [w.base_velocity] * 6,
            [w.joint_velocity] * joints,
        )
    )


def _parabola(s):
    return 4.0 * s * (1.0 - s)


def _triangle(s):
    return 1.0 - np.abs(2.0 * s - 1.0)


PROFILES = {"parabola": _parabola, "triangle": _triangle}  # from 0 at s = 0 to 1 at s = 1/2 and back


def foot_plan(config, start):
    """Planned foot positions: ``(stance, swing)`` with ``stance[i][foot]`` the foothold of each
    foot in contact during phase ``i`` and ``swing[i][foot]`` the ``(knots, 3)`` references of
    each foot in the air."""
    gait = config.gait
    where = dict(start)
    stance, swing = [], []
    lift = PROFILES[gait.swing_profile]
    for phase in gait.phases:
        n = phase.knots
        s = np.arange(n)[:, None] / n
        flight = not phase.contact
        length = gait.jump_length if flight else (gait.step_length if phase.step_length is None else phase.step_length)
        height = gait.jump_height if flight else gait.step_height
        stance.append({f: where[f] for f in phase.contact})
        moving = {}
        for foot in config.contacts.feet:
            if foot in phase.contact:
                continue
            p0 = where[foot]
            moving[foot] = p0 + s * np.array([length, 0.0, 0.0]) + lift(s) * np.array([0.0, 0.0, height])
            where[foot] = p0 + np.array([length, 0.0, 0.0])
        swing.append(moving)
    return stance, swing


def foot_contacts(config, holds) -> tuple:
    """The 3D point contacts of the feet in ``holds`` ``{foot: foothold}``, in ``contacts.feet``
    order, with the configuration's force frame and Baumgarte gains toward their footholds."""
    alpha, beta = config.contacts.baumgarte.alpha, config.contacts.baumgarte.beta
    return tuple(
        Contact(f, "3D", config.contacts.reference, kp=beta**2, kd=2 * alpha, placement=holds[f])
        for f in config.contacts.feet
        if f in holds
    )


def phase_kind(phases, feet, i: int, j: int) -> str:
    """The kind of knot ``j`` of phase ``i``: ``swing`` (some feet in the air), ``rising`` or
    ``falling`` (the first or second half of a flight), ``landed`` (every foot on the ground
    right after a flight) or ``stance`` (every foot on the ground otherwise)."""
    phase = phases[i]
    if not phase.contact:
        return "rising" if j < phase.knots / 2 else "falling"
    if len(phase.contact) < len(feet):
        return "swing"
    return "landed" if i > 0 and not phases[i - 1].contact else "stance"


def legged_model(config):
    """The model of ``config.robot`` with the joint friction ``config.joint_friction`` keeps;
    :class:`ProblemError` for a robot without a floating base or without one of the feet."""
    jf = config.joint_friction
    model = dynamics.keep_joint_friction(dynamics.load(config.robot), jf.damping, jf.coulomb)
    if not model.has_free_flyer:
        raise ProblemError(f"robot: gaits need a floating base; {config.robot} is fixed")
    for foot in config.contacts.feet:
        if foot not in model.frame_names:
            close = close_names(foot, model.frame_names, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise ProblemError(f"contacts.feet: {config.robot} has no frame {foot!r}{hint}")
    return model


def build_problem(config) -> OCP:
    """The OCP of ``config`` (module docstring)."""
    model = legged_model(config)
    jf = config.joint_friction
    q0, v0 = initial_state(config, model)
    nv, feet, gait, costs = model.nv, config.contacts.feet, config.gait, config.costs
    start = {f: dynamics.frame_placement(model, q0, f)[1] for f in feet}
    com0 = dynamics.center_of_mass(model, q0)
    if gait.com_reference == "feet":
        com0[:2] = np.mean([start[f][:2] for f in feet], axis=0)
    stance, swing = foot_plan(config, start)

    def references(i, j):
        """CoM and base references at knot ``j`` of phase ``i``: the mean foot displacement."""
        now = {**stance[i], **{f: p[j] for f, p in swing[i].items()}}
        shift = np.mean([now[f] - start[f] for f in feet], axis=0)
        flight = not gait.phases[i].contact
        lift = gait.jump_height * PROFILES[gait.swing_profile](j / gait.phases[i].knots) if flight else 0.0
        com = com0 + np.array([shift[0], shift[1], lift])
        q_ref = q0.copy()
        q_ref[:2] += shift[:2]
        return com, q_ref

    w_state, w_impulse = state_weights(costs.state, nv), state_weights(costs.impulse_state, nv)
    zero_v, zero_u = np.zeros(nv), np.zeros(nv - 6)
    scale = gait.dt if costs.integrate_dt else 1.0  # the contact stages' cost weights
    stages = []
    for i, phase in enumerate(gait.phases):
        if i > 0:
            landing = [f for f in phase.contact if f not in gait.phases[i - 1].contact]
            if landing:
                _, q_ref = references(i, 0)
                terms = (StateCost(q_ref, zero_v, w_impulse, "state"),) + tuple(
                    FramePositionCost(f, stance[i][f], costs.touchdown, f"touchdown_{f}") for f in landing
                )
                held = landing if gait.impulse_contacts == "landing" else list(stance[i])
                stages.append(ImpulseStage(foot_contacts(config, {f: stance[i][f] for f in held}), terms))
        for j in range(phase.knots):
            com, q_ref = references(i, j)
            terms = (
                StateCost(q_ref, zero_v, scale * w_state, "state"),
                VariableCost("u", zero_u, scale * costs.control, "control"),
            )
            kind = phase_kind(gait.phases, feet, i, j)
            if kind in costs.swing_foot_phases:
                swing_weight = scale * costs.swing_foot
                terms += tuple(FramePositionCost(f, p[j], swing_weight, f"swing_{f}") for f, p in swing[i].items())
            if kind in costs.com_phases:
                terms += (CenterOfMassCost(com, scale * costs.com, "com"),)
            stages.append(ContactStage(foot_contacts(config, stance[i]), gait.dt, terms))
    _, q_end = references(len(gait.phases) - 1, gait.phases[-1].knots - 1)
    terminal = (StateCost(q_end, zero_v, state_weights(costs.terminal_state, nv), "state"),)
    return OCP(
        model,
        q0,
        v0,
        tuple(stages),
        terminal,
        friction=config.contacts.friction,
        limits=tuple(config.limits),
        joint_friction_width=jf.width,
    )
