"""The legged MPC on measured contacts: the schedule and its events (early and late touchdowns,
lift-off by the plan, stance anchored where the foot is measured), the footholds' rule, the
horizon's OCP (impulse stages where feet land, a shortened first stage), the command schedule
and its errors, the closed-loop measures, short closed loops on liftoff's idealized plant and on
MuJoCo, and ``liftoff mpc``."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import yaml

from liftoff import dynamics
from liftoff.dynamics import codegen
from liftoff.dynamics.codegen import CompileError
from liftoff.ocp import horizon
from liftoff.ocp.formulation import Formulation
from liftoff.ocp.problem import OCP, StageGroup, term_key
from liftoff.problems import viewer
from liftoff.problems.bench import legged
from liftoff.problems.cli import main
from liftoff.problems.mpc import controller
from liftoff.problems.mpc.controller import warm_start
from liftoff.problems.mpc.feet import FeetKinematics
from liftoff.problems.mpc.gait_run import Fallen, command_tracking, impact_speeds, measures, run, tilt_degrees
from liftoff.problems.mpc.locomotion import GaitController, Schedule
from liftoff.problems.mpc.plants import ContactReading, Measurement, Steps
from liftoff.problems.tasks.config import ConfigError, load_config, parse_config
from liftoff.problems.tasks.gait_mpc import GaitMPCConfig
from liftoff.problems.tasks.gaits import foot_contacts, state_weights

CONFIGS = Path(__file__).resolve().parent.parent / "configs"
TROT = CONFIGS / "anymal_trot_mpc.yaml"
FEET = ("LF_FOOT", "LH_FOOT", "RF_FOOT", "RH_FOOT")
SWINGING = ("LF_FOOT", "RH_FOOT")  # the trot's first pair in the air, from 0.2 s to 0.44 s


def trot_config(**mpc) -> GaitMPCConfig:
    config = load_config(TROT, GaitMPCConfig)
    return replace(config, mpc=replace(config.mpc, **mpc)) if mpc else config


@pytest.fixture(scope="module")
def controller_model():
    return GaitController(trot_config()).model


def fresh(controller_model, **mpc) -> GaitController:
    return GaitController(trot_config(**mpc), controller_model)


def feel(controller, t, touching) -> None:
    """Report one plant step at ``t`` to ``controller`` with the feet ``touching`` on the ground."""
    contacts = {f: ContactReading(f in touching, np.zeros(3), np.zeros(3)) for f in FEET}
    measurement = Measurement(controller.q0, np.zeros(controller.model.nv), None, contacts)
    controller.observe(Steps.one(measurement, t, np.zeros(12), measurement, (0.0, 0.0), FEET))


def step_to(controller, t_end, touching=FEET, q=None, period=0.005):
    """Run ``controller`` from its time to ``t_end``, updates every ``period``, the feet in
    ``touching`` reported on the ground at every 1 ms step; the last update's OCP."""
    q = controller.q0 if q is None else q
    v = np.zeros(controller.model.nv)
    t = controller.t if controller.clock is not None else 0.0
    ocp = controller(t, q, v) if controller.clock is None else None
    while t < t_end - 1e-9:
        for k in range(int(round(period / 1e-3))):
            feel(controller, t + k * 1e-3, touching(t + k * 1e-3) if callable(touching) else touching)
        t = round(t + period, 9)
        ocp = controller(t, q, v)
    return ocp


def test_the_compiled_feet_kinematics_are_the_reference(controller_model):
    """Feet positions and world velocities and the centre of mass from one compiled call equal
    dynamics' functions (which Pinocchio checks) at random states; the numpy backend runs those."""
    kinematics = FeetKinematics(controller_model, FEET)
    assert kinematics.kernel is not None
    rng = np.random.default_rng(3)
    for _ in range(5):
        q = np.concatenate((rng.normal(size=3), rng.normal(size=4), rng.uniform(-1, 1, 12)))
        q[3:7] /= np.linalg.norm(q[3:7])
        v = rng.normal(size=controller_model.nv)
        positions, velocities, com = kinematics(q, v)
        for i, foot in enumerate(FEET):
            np.testing.assert_allclose(positions[i], dynamics.frame_placement(controller_model, q, foot)[1], atol=1e-12)
            world = dynamics.frame_velocity(controller_model, q, v, foot, "LOCAL_WORLD_ALIGNED")[:3]
            np.testing.assert_allclose(velocities[i], world, atol=1e-12)
        np.testing.assert_allclose(com, dynamics.center_of_mass(controller_model, q), atol=1e-12)
    assert FeetKinematics(controller_model, FEET, backend="numpy").kernel is None


def test_feet_kinematics_without_a_compiler_run_in_numpy_with_one_warning(controller_model, monkeypatch, capsys):
    def no_compiler(*args, **kwargs):
        raise CompileError("no C compiler")

    q, v = GaitController(trot_config(), controller_model).q0, np.full(controller_model.nv, 0.1)
    capsys.readouterr()
    monkeypatch.setattr(codegen, "load", no_compiler)
    kinematics = FeetKinematics(controller_model, FEET)
    for got, expected in zip(kinematics(q, v), kinematics.reference(q, v)):
        np.testing.assert_array_equal(got, expected)
    err = capsys.readouterr().err
    assert kinematics.kernel is None and err.count("\n") == 1
    assert "no C compiler; the feet's kinematics run in numpy" in err


def contact_frames(stage) -> set:
    return {c.frame for c in stage.contacts}


def random_iterate(formulation, rng):
    """An iterate of ``formulation`` with every number drawn at random: each one traceable."""
    start = formulation.initial_iterate(1e-3)
    return type(start)(
        *(rng.random(x.shape) for x in (start.q, start.v, start.lam)),
        tuple(type(gv)(*(rng.random(x.shape) for x in vars(gv).values())) for gv in start.groups),
        rng.random(start.tau.shape),
    )


def stage_row(formulation, iterate, k):
    """Stage ``k``'s group in ``formulation``, that group's variables in ``iterate`` and the stage's row there."""
    g = next(g for g, group in enumerate(formulation.groups) if k in group.index)
    return formulation.groups[g], iterate.groups[g], int(np.flatnonzero(formulation.groups[g].index == k)[0])


# ----------------------------------------------------------------------------- the schedule


def test_the_schedule_plays_its_prefix_once_then_repeats_its_cycle():
    config = trot_config()
    s = Schedule(config.gait.phases, config.mpc.cycle_start, FEET)
    assert s.prefix == 10 and s.cycle == 24
    assert s.stands(0).all() and s.stands(9).all()
    assert list(s.stands(10)) == [False, True, True, False]  # LF and RH swing first
    assert list(s.stands(22)) == [True, False, False, True]
    np.testing.assert_array_equal(s.stands(10 + 24 * 7 + 5), s.stands(15))  # the cycle, not the prefix
    assert s.next(0, 0, False) == 10 and s.next(0, 10, True) == 22 and s.next(1, 10, False) == 22


def structure(ocp) -> list:
    """Each stage's kind and feet, and the groups' sizes: what fixes a compiled horizon."""
    return [(s.kind, frozenset(contact_frames(s))) for s in ocp.stages] + [g.size for g in ocp.groups()]


def test_the_rehearsal_gives_the_horizons_of_each_knot_of_the_schedule_kept_on_time(controller_model):
    controller, rehearsed = fresh(controller_model), fresh(controller_model)
    ocps = [numbers.ocp() for numbers in rehearsed.rehearsal(0.0, rehearsed.q0, np.zeros(rehearsed.model.nv))]
    assert len(ocps) == 10 + 24  # the standing prefix, then one cycle
    assert rehearsed.clock is None and rehearsed.feet_state == []  # left as it was
    dt = controller.dt
    schedule = controller.schedule

    def on_time(t):  # the feet the schedule holds one MPC period on: a landing foot touches before its knot
        return {f for f, on in zip(FEET, schedule.stands(int(np.floor((t + 0.005) / dt + 1e-9)))) if on}

    for knot, ocp in enumerate(ocps):
        assert structure(step_to(controller, knot * dt, on_time)) == structure(ocp), knot
    assert len({tuple(structure(ocp)) for ocp in ocps}) > 20  # the horizons' structures change knot by knot


# ----------------------------------------------------------------------------- events


def test_the_first_horizon_stands_then_lands_the_first_pair_with_an_impulse(controller_model):
    ocp = step_to(fresh(controller_model), 0.0)
    kinds = [s.kind for s in ocp.stages]
    assert kinds.count("contact") == 25
    first_impulse = kinds.index("impulse")
    assert sum(k == "contact" for k in kinds[:first_impulse]) == 22  # 10 knots standing, LF and RH swing 12
    landing = ocp.stages[first_impulse]
    assert contact_frames(landing) == set(SWINGING)  # LH and RF lift off as they land
    assert {t.name for t in landing.costs} == {"state", "touchdown_LF_FOOT", "touchdown_RH_FOOT"}
    approach = [next(t.weights for t in s.costs if t.name == "approach") for s in ocp.stages if s.kind == "contact"]
    assert np.flatnonzero(approach).tolist() == [21]  # the stage before a touchdown keeps its velocity
    stances = [frozenset(c.frame for c in g.contacts) for g in ocp.groups() if g.kind == "contact"]
    assert len(stances) == len(set(stances)) == 3  # one group per stance: all feet, LH and RF, LF and RH
    assert contact_frames(ocp.stages[10]) == {"LH_FOOT", "RF_FOOT"}
    assert {t.name for t in ocp.stages[10].costs} >= {"swing_LF_FOOT", "swing_RH_FOOT", "tangential_force"}


def test_the_landing_feet_velocity_cost_sits_at_their_impulse(controller_model):
    """``mpc.landing_velocity`` w: at each impulse stage, the landing feet's world velocity before
    the impact toward zero along the ground (weights w, w, 0); a slot of the kernels' layout."""
    c = fresh(controller_model, landing_velocity=300.0)
    ocp = step_to(c, 0.0)
    landing = next(s for s in ocp.stages if s.kind == "impulse")
    terms = {t.name: t for t in landing.costs}
    assert set(terms) == {"state", "touchdown_LF_FOOT", "touchdown_RH_FOOT", "landing_LF_FOOT", "landing_RH_FOOT"}
    term = terms["landing_RH_FOOT"]
    assert term.frame == "RH_FOOT" and np.all(term.reference == 0)
    np.testing.assert_array_equal(term.weights, [300.0, 300.0, 0.0])
    impulse = next(s for s in c.layout.stages if s.kind == "impulse")
    assert {term_key(t) for t in landing.costs} <= {term_key(t) for t in impulse.costs}


def test_the_first_stage_is_shortened_to_the_next_knot(controller_model):
    c = fresh(controller_model)
    ocp = step_to(c, 0.005)
    dts = [s.dt for s in ocp.stages if s.kind == "contact"]
    assert dts[0] == pytest.approx(0.015) and dts[1:] == pytest.approx([0.02] * 24)
    starts = 0.005 + ocp.times()[1:]
    on_grid = [round(x / 0.02, 6) % 1 == 0 for x, s in zip(starts, ocp.stages[1:]) if s.kind == "contact"]
    assert all(on_grid)  # the later stages start on the schedule's 20 ms grid


def test_costs_integrated_over_a_shortened_first_stage_weigh_by_its_length(controller_model):
    """With costs.integrate_dt each contact stage's terms are weighted by its own time step: the
    first stage, shortened to the next knot, by its length, the later ones by the gait's dt."""
    config = trot_config()
    c = GaitController(replace(config, costs=replace(config.costs, integrate_dt=True)), controller_model)
    ocp = step_to(c, 1.505)
    contact = [s for s in ocp.stages if s.kind == "contact"]
    assert contact[0].dt == pytest.approx(0.015) and contact[1].dt == pytest.approx(0.02)
    for stage in contact[:2]:
        terms = {t.name: t for t in stage.costs}
        assert terms["control"].weights == pytest.approx(stage.dt * config.costs.control)
        np.testing.assert_allclose(terms["state"].weights, stage.dt * state_weights(config.costs.state, c.model.nv))


def test_feet_lift_off_when_the_schedule_says_touching_or_not(controller_model):
    c = fresh(controller_model)
    step_to(c, 0.2)
    swinging = {f for f, st in zip(FEET, c.feet_state) if not st.stance}
    assert swinging == set(SWINGING)
    lf = c.feet_state[0]
    assert lf.lift == pytest.approx(0.2) and lf.planned == pytest.approx(0.44)


def test_an_early_touchdown_is_a_stance_at_once_where_the_foot_is(controller_model):
    c = fresh(controller_model)
    step_to(c, 0.2)
    q = c.q0.copy()
    q[0] += 0.03  # the base (and the feet) measured 3 cm on
    # LF touches at 0.36 s, 80 ms early (after the swing's middle)
    ocp = step_to(c, 0.37, lambda t: {"LH_FOOT", "RF_FOOT"} | ({"LF_FOOT"} if t >= 0.36 else set()), q=q)
    lf = c.feet_state[0]
    assert lf.stance and lf.change == 34  # it stands until the plan lifts it again (knot 34)
    where = dynamics.frame_placement(c.model, q, "LF_FOOT")[1]
    first = ocp.stages[0]
    assert contact_frames(first) == {"LF_FOOT", "LH_FOOT", "RF_FOOT"}
    placement = next(x.placement for x in first.contacts if x.frame == "LF_FOOT")
    np.testing.assert_allclose(placement, where, atol=1e-12)  # anchored where it is measured
    landing = next(s for s in ocp.stages if s.kind == "impulse")
    assert {t.name for t in landing.costs} == {"state", "touchdown_RH_FOOT"}  # only RH lands later
    assert [(x.measured, x.planned) for x in c.touchdowns] == [(pytest.approx(0.36), pytest.approx(0.44))]


def test_a_late_foot_holds_the_schedule_then_stands_where_it_was_to_land(controller_model):
    c = fresh(controller_model)
    q = c.q0.copy()
    q[9] -= 0.3  # LF's knee bent: its foot 3 cm above the ground, where it stays
    height = dynamics.frame_placement(c.model, q, "LF_FOOT")[1][2] - c.ground
    assert height > 0.02
    v, late = np.zeros(18), c.config.mpc.footholds.late
    step_to(c, 0.2, q=q)
    t, impulses = 0.2, []
    while t < 0.44 + late - 0.005:  # LF due at 0.44 s; RH lands on time
        for k in range(5):
            feel(c, t + k * 1e-3, {"LH_FOOT", "RF_FOOT"} | ({"RH_FOOT"} if t >= 0.44 else set()))
        t = round(t + 0.005, 9)
        ocp = c(t, q, v)
        lands = [
            j
            for j, s in enumerate(ocp.stages)
            if s.kind == "impulse" and "touchdown_LF_FOOT" in {x.name for x in s.costs}
        ]
        impulses.append(sum(s.kind == "contact" for s in ocp.stages[: lands[0]]))
    lf = c.feet_state[0]
    assert not lf.stance and c.clock < 0.44  # still in the air: the schedule waits for it
    assert min(impulses) >= 2  # its touchdown never planned within the stage it cannot move it in
    step_to(c, t + 0.025, {"LH_FOOT", "RF_FOOT", "RH_FOOT"}, q=q)
    assert lf.stance  # waited ``late`` seconds: the schedule moves on and it stands where it was to land
    np.testing.assert_allclose(lf.anchor, [*lf.target[:2], c.floor])


def test_a_stance_foot_is_anchored_where_it_is_measured_at_each_update(controller_model):
    c = fresh(controller_model)
    step_to(c, 0.05)
    q = c.q0.copy()
    q[1] += 0.01  # the robot slid 1 cm to the left
    ocp = step_to(c, 0.06, q=q)
    for contact in ocp.stages[0].contacts:
        np.testing.assert_allclose(contact.placement, dynamics.frame_placement(c.model, q, contact.frame)[1])


# ----------------------------------------------------------------------------- footholds and references


def test_footholds_follow_the_command_and_the_velocity_error(controller_model):
    c = fresh(controller_model)
    step_to(c, 0.2)  # LF in the air, landing at 0.44 s for a stance of 0.24 s
    q, v = c.q0.copy(), np.zeros(18)
    c(0.205, q, v)
    still = c.feet_state[0].target.copy()
    hip = q[:2] + c.hips[0]
    travel = 0.3 * (0.44 - 0.205)  # the base reference moves on at the command until the touchdown
    expected = hip + [travel + 0.5 * 0.24 * 0.3 - c.gain * 0.3, 0.0]  # the robot stands: 0.3 m/s slower than asked
    np.testing.assert_allclose(still[:2], expected, atol=1e-9)
    assert still[2] == pytest.approx(c.floor)
    v[1] = 0.4  # pushed to the left: the foot steps 0.4 gain to the left
    c(0.21, q, v)
    assert c.feet_state[0].target[1] - still[1] == pytest.approx(c.gain * 0.4, rel=1e-6)
    v[1] = 5.0  # a step beyond reach is clipped at max_step from the hip
    c(0.215, q, v)
    hip_then = q[:2] + c.hips[0] + [0.3 * (0.44 - 0.215), 0.0]
    assert np.linalg.norm(c.feet_state[0].target[:2] - hip_then) == pytest.approx(c.config.mpc.footholds.max_step)


def test_footholds_of_a_turn_lead_by_the_hips_velocity(controller_model):
    c = fresh(controller_model, command=({"t": 0.0, "yaw_rate": 0.5},))
    step_to(c, 0.2)  # LF in the air, landing at 0.44 s for a stance of 0.24 s
    c(0.205, c.q0, np.zeros(18))
    yaw = 0.5 * 0.44  # the reference yaw at the touchdown (the measured one stays 0, within YAW_LEAD)
    hip = np.array([[np.cos(yaw), -np.sin(yaw)], [np.sin(yaw), np.cos(yaw)]]) @ c.hips[0]
    hip_velocity = 0.5 * np.array([-hip[1], hip[0]])  # turning in place: the hip moves about the base
    np.testing.assert_allclose(c.feet_state[0].target[:2], c.q0[:2] + hip + 0.5 * 0.24 * hip_velocity, atol=1e-9)


def test_a_vertical_landing_ends_the_swing_above_the_foothold(controller_model):
    """With ``footholds.vertical_landing`` l, the swing reference reaches the foothold's (x, y)
    at 1 - l of the swing and comes straight down; without it, it gets there at the end only."""
    lift, land = 0.2, 0.44
    p_lift, p_land = np.array([0.3, 0.2, 0.0]), np.array([0.4, 0.25, 0.0])
    plain = fresh(controller_model)
    vertical = fresh(controller_model, footholds={"vertical_landing": 0.25})
    late = [lift + s * (land - lift) for s in (0.75, 0.8, 0.9, 1.0)]
    for t in late:
        np.testing.assert_allclose(vertical._swing(p_lift, p_land, lift, land, t)[:2], p_land[:2], atol=1e-12)
        assert vertical._swing(p_lift, p_land, lift, land, t)[2] == plain._swing(p_lift, p_land, lift, land, t)[2]
    assert np.linalg.norm(plain._swing(p_lift, p_land, lift, land, late[2])[:2] - p_land[:2]) > 1e-3
    half = vertical._swing(p_lift, p_land, lift, land, lift + 0.375 * (land - lift))  # s' = 1/2: half way
    np.testing.assert_allclose(half[:2], 0.5 * (p_lift + p_land)[:2], atol=1e-12)


def test_swings_evaluated_together_are_each_swing_alone(controller_model):
    """The horizon's swing references are evaluated in one call: row by row, the one-swing call."""
    c, rng = fresh(controller_model), np.random.default_rng(3)
    p_lift, p_land = rng.uniform(-0.5, 0.5, (6, 3)), rng.uniform(-0.5, 0.5, (6, 3))
    lift = rng.uniform(0.0, 0.3, 6)
    land = lift + rng.uniform(0.1, 0.3, 6)
    t = np.concatenate((lift[:2] - 0.05, land[2:4] + 0.05, 0.5 * (lift + land)[4:]))  # before, after, within
    together = c._swing(p_lift, p_land, lift, land, t)
    for i in range(6):
        np.testing.assert_array_equal(together[i], c._swing(p_lift[i], p_land[i], lift[i], land[i], t[i]))


def test_the_horizons_contacts_are_the_feet_contacts_at_their_footholds(controller_model):
    ocp = step_to(fresh(controller_model), 0.3)
    config, fields = trot_config(), [f.name for f in dataclasses.fields(dynamics.Contact) if f.name != "placement"]
    for stage in ocp.stages:
        made = foot_contacts(config, {c.frame: c.placement for c in stage.contacts})
        for moved, fresh_contact in zip(stage.contacts, made, strict=True):
            assert [getattr(moved, f) for f in fields] == [getattr(fresh_contact, f) for f in fields]
            assert moved.placement is fresh_contact.placement
    contact = made[0]
    with pytest.raises(ValueError, match="kp > 0 needs a target placement"):
        contact.with_placement(None)


@pytest.mark.parametrize(
    "costs",
    [{}, {"integrate_dt": True}, {"com_phases": ("swing",), "swing_foot_phases": ("stance",)}],
    ids=["plain", "integrate_dt", "phases"],
)
def test_a_horizon_built_group_by_group_is_the_horizon_its_stages_make(controller_model, costs):
    """The horizon's stages are made group by group, each group's terms stacked and each stage's
    terms their rows: the groups are those the stages' own keys make, the stacked terms those
    their rows stack to, the stacked contacts those of the stages, and the kernels' inputs
    written from the stacked terms equal those written stage by stage (``integrate_dt``: weights
    that differ between the stages; the CoM weighed in swing phases only, no swing foot weighed)."""
    config = trot_config(landing_velocity=300.0, tangential_force=0.01)
    config = replace(config, costs=replace(config.costs, **costs))
    c = GaitController(config, controller_model)
    ocp = step_to(c, 0.105)
    plain = replace(ocp)  # the same stages, grouped by their keys
    built, found = ocp.groups(), plain.groups()
    assert len(built) == 4 and {g.kind for g in built} == {"contact", "impulse"}
    assert [g.index.tolist() for g in built] == [g.index.tolist() for g in found]
    assert all(a.key is b.key and a.stacked and not b.stacked for a, b in zip(built, found))
    for a, b in zip(built, found):
        assert [term_key(t) for t in a.costs.terms] == [term_key(t) for t in b.costs.terms]
        for s, t in zip(a.costs.terms, b.costs.terms):
            for name in ("q_ref", "v_ref", "reference", "weights"):
                if hasattr(s, name):
                    np.testing.assert_array_equal(getattr(s, name), getattr(t, name))
        assert "contacts" in a.__dict__ and "contacts" not in b.__dict__  # the builder's, and stacked on reading
        assert [x.frame for x in a.contacts] == [x.frame for x in b.contacts]
        for x, y in zip(a.contacts, b.contacts):
            np.testing.assert_array_equal(x.target()[1], y.target()[1])
    formulation = Formulation(c.layout, "lifted", "compiled", quiet=True)
    written, by_stage = formulation.for_problem(ocp).stages.maps, formulation.for_problem(plain).stages.maps
    assert written.keys() == by_stage.keys()
    for k in written:
        np.testing.assert_array_equal(written[k].static, by_stage[k].static)


def test_a_negative_weight_at_one_stage_of_a_stacked_group_is_refused(controller_model):
    """The kernels' inputs written from a group's stacked terms check every stage's weights."""
    c = GaitController(trot_config(), controller_model)
    ocp = step_to(c, 0.105)
    groups = list(ocp.groups())
    group = groups[0]
    terms = list(group.costs.terms)
    i = next(i for i, t in enumerate(terms) if np.ndim(t.weights) >= 1)
    weights = np.array(np.broadcast_to(terms[i].weights, (group.size, np.shape(terms[i].weights)[-1])))
    weights[-1, 0] = -1.0  # the last stage's
    terms[i] = replace(terms[i], weights=weights)
    groups[0] = StageGroup.of_stacked(group.stages, group.index, tuple(terms), group.key)
    fields = {f.name: getattr(ocp, f.name) for f in dataclasses.fields(ocp) if f.name != "stages"}
    formulation = Formulation(c.layout, "lifted", "compiled", quiet=True)
    with pytest.raises(ValueError, match="cost weights must be finite and >= 0"):
        formulation.for_problem(OCP.of_groups(groups, **fields))


def test_the_references_integrate_the_command(controller_model):
    c = GaitController(trot_config(command=({"t": 0.0, "vx": 0.2, "yaw_rate": 0.5},)), controller_model)
    ocp = step_to(c, 0.0)
    state = [next(t for t in s.costs if t.name == "state") for s in ocp.stages if s.kind == "contact"]
    yaw = [2 * np.arctan2(x.q_ref[5], x.q_ref[6]) for x in state]
    np.testing.assert_allclose(np.diff(yaw), 0.5 * 0.02, atol=1e-12)
    np.testing.assert_allclose(state[3].v_ref[[0, 1, 5]], [0.2, 0.0, 0.5])
    heading = np.diff([x.q_ref[:2] for x in state], axis=0) / 0.02
    np.testing.assert_allclose(heading, 0.2 * np.column_stack((np.cos(yaw[:-1]), np.sin(yaw[:-1]))), atol=1e-12)


# ----------------------------------------------------------------------------- configuration errors


def document(**mpc):
    data = yaml.safe_load(TROT.read_text())
    data["mpc"] = {**data["mpc"], **mpc}
    return data


@pytest.mark.parametrize(
    "change, path, message",
    [
        ({"cycle_start": 9}, "mpc.cycle_start", "a phase index < 3"),
        ({"period": 0.03}, "mpc.period", "a multiple or a divisor of gait.dt = 0.02"),
        ({"command": [{"t": 0.0, "vx": 0.3}, {"t": 2.0}, {"t": 1.0, "vx": 0.1}]}, "mpc.command[2].t", "after 2 s"),
        ({"command": [{"t": 1.0, "vx": 0.3}]}, "mpc.command[0].t", "0 (the first command starts the run)"),
        ({"command": [{"t": 0.0, "speed": 0.3}]}, "mpc.command[0]", "unknown key 'speed'"),
        ({"footholds": {"vertical_landing": 0.6}}, "mpc.footholds.vertical_landing", "0.5"),
        ({"landing_velocity": -1.0}, "mpc.landing_velocity", "a number >= 0"),
        ({"scheme": "sqp"}, "mpc.scheme", "expected newton or rti, got 'sqp'"),
    ],
)
def test_mpc_settings_errors_name_the_key(change, path, message):
    with pytest.raises(ConfigError) as error:
        parse_config(document(**change), "t.yaml", GaitMPCConfig)
    assert error.value.path == path and message in str(error.value)


def test_a_command_beyond_the_gaits_reach_is_refused(controller_model):
    config = parse_config(document(command=[{"t": 0.0, "vx": 0.3}, {"t": 3.0, "vx": 2.5}]), "t.yaml", GaitMPCConfig)
    with pytest.raises(ConfigError) as error:
        GaitController(config, controller_model)
    assert error.value.path == "mpc.command[1]" and "beyond mpc.footholds.max_step = 0.2 m" in str(error.value)


@pytest.mark.parametrize(
    "command, expected",
    [
        ([{"t": 0.0, "vx": 0.3}, {"t": 1.0, "vx": 0.1}, {"t": 0.5}], "mpc.command[2].t: expected a time after 1 s"),
        ([{"t": 0.0, "vx": 3.0}], "mpc.command[0]: the gait cannot reach this command"),
    ],
)
def test_liftoff_mpc_refuses_a_bad_command_schedule_in_one_line(tmp_path, capsys, command, expected):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(document(command=command)))
    assert main(["mpc", str(path), "--duration", "0.1", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and expected in err and "Traceback" not in err
    assert not (tmp_path / "out" / "run.npz").exists()


# ----------------------------------------------------------------------------- measures


def test_command_tracking_measures_each_command_and_the_stop():
    config = trot_config(command=({"t": 0.0, "vx": 0.3}, {"t": 2.0}, {"t": 3.0, "yaw_rate": 0.4}))
    t = np.arange(0.0, 4.0, 0.001)
    q, v = np.zeros((len(t), 19)), np.zeros((len(t), 18))
    yaw = np.where(t < 3.0, 0.7, 0.7 + 0.4 * (t - 3.0))
    q[:, 5], q[:, 6] = np.sin(yaw / 2), np.cos(yaw / 2)
    v[:, 0] = np.where(t < 2.0, 0.3, np.where(t < 2.4, 0.3 * (2.4 - t) / 0.4, 0.0))  # stopped at 2.4 s
    v[:, 5] = np.where(t < 3.0, 0.0, 0.4)
    out = command_tracking(config, t, q, v, 4.0)
    assert [c["t"] for c in out] == [0.0, 2.0, 3.0] and out[2]["until"] == 4.0
    assert out[0]["measured"]["vx"] == pytest.approx(0.3) and out[0]["measured"]["vy"] == pytest.approx(0.0, abs=1e-12)
    assert out[2]["measured"]["yaw_rate"] == pytest.approx(0.4)
    # its speed is below 0.05 m/s from 2.333 s and zero from 2.4 s; averaged over the 0.48 s
    # cycle centred on each instant, below 0.05 m/s from 2.387 s (a trailing average: 2.72 s)
    assert 0.385 < out[1]["stop_time_s"] < 0.39
    assert "stop_time_s" not in out[0] and "stop_time_s" not in out[2]


def test_command_tracking_averages_over_whole_gait_cycles():
    """A turn whose rate swings with the gait (the trot's cycle: 0.48 s) is measured at its mean
    rate, not at the mean over a window that ends mid-cycle."""
    config = trot_config(command=({"t": 0.0, "yaw_rate": 0.4},))
    t = np.arange(0.0, 4.0, 0.001)
    rate = 0.4 + 0.3 * np.sin(2 * np.pi * t / 0.48)
    yaw = np.concatenate(([0.0], np.cumsum(rate[:-1]) * 0.001))
    q, v = np.zeros((len(t), 19)), np.zeros((len(t), 18))
    q[:, 5], q[:, 6], v[:, 5] = np.sin(yaw / 2), np.cos(yaw / 2), rate
    (out,) = command_tracking(config, t, q, v, 4.0)
    assert out["measured"]["yaw_rate"] == pytest.approx(0.4, abs=1e-9)
    settled = rate[t >= 1.0].mean()  # from SETTLE_S on: 6.25 cycles
    assert abs(settled - 0.4) > 1e-3


def test_the_benchmarks_read_configurations_that_exist():
    from liftoff.problems.bench import polishing, solve

    paths = [legged.CONFIGS / name for name in legged.GAITS.values()]
    paths += [polishing.CONFIGS / name for name in polishing.SURFACES.values()]
    paths += [solve.CONFIGS / f"anymal_{gait}.yaml" for gait in solve.GAITS]
    assert [p for p in paths if not p.is_file()] == []


def test_the_legged_benchmark_pushes_at_eight_phases_of_each_cycle():
    pushes = legged.scenarios(("pushes",), ("trot",))
    assert len(pushes) == 2 * 2 * 8
    starts = sorted({float(s.pushes[0].split(":")[2]) for s in pushes})
    np.testing.assert_allclose(np.diff(starts), 0.48 / 8)
    fell = {(direction, 100.0, 3) for direction in legged.DIRECTIONS}  # 100 N at phase 3 topples it
    fake = [
        {
            "group": "pushes",
            "gait": "trot",
            "push": s.push,
            "measures": {
                "fell": tuple(s.push.values()) in fell,
                "status": "completed",
                "impact_speed_mps": {"max": 0.5 + s.push["phase"] + (s.push["direction"] == "forward")},
                "max_penetration_m": 1e-3 * (s.push["force"] / 10 + s.push["phase"]),
            },
        }
        for s in pushes
    ]
    summary = legged.largest_pushes(fake)
    assert {p["direction"]: p["largest_N"] for p in summary} == {"lateral": 50.0, "forward": 50.0}
    table = legged.format_table(json.loads(json.dumps({"results": [], "largest_pushes": summary})))  # as --json has it
    assert "| trot | lateral | 50 N | 8, 7 | 10 of 16 | 7.50 m/s | 17.0 mm |" in table  # the worst of all 16 runs
    assert "| trot | forward | 50 N | 8, 7 | 12 of 16 | 8.50 m/s | 17.0 mm |" in table


def test_the_legged_benchmark_reports_each_measure_with_its_worst_case():
    m = {
        "status": "completed",
        "fell": False,
        "command_velocity_mps": 0.3,
        "mean_forward_velocity_mps": 0.2941,
        "slip_per_stance_m": {"median": 0.0044, "max": 0.0729},
        "touchdown_error_ms": {"median": 6.0, "max": 46.0, "count": 120},
        "impact_speed_mps": {"median": 1.12, "max": 13.21, "count": 194},
        "touchdowns": 120,
        "max_penetration_m": 0.0564,
        "tick_ms_median": 3.61,
        "real_time_factor": 1.244,
    }
    table = legged.format_table({"results": [{"name": "bound", "group": "gaits", "measures": m}], "largest_pushes": []})
    row = "| bound | completed | 0.30 m/s | 0.294 m/s | 4.4 mm, 72.9 mm | 6.0 ms, 46.0 ms | 1.12 m/s, 13.21 m/s"
    assert table.splitlines()[2] == row + " | 194 / 120 | 56.4 mm | 3.6 ms | 1.24 |"


# ----------------------------------------------------------------------------- closed loops


def engine(config, name):
    return replace(config, plant=replace(config.plant, engine=name))


def test_a_one_second_trot_on_the_idealized_plant_lands_on_time():
    m = measures(run(engine(trot_config(), "liftoff"), duration=1.0, quiet=True))
    assert m["status"] == "completed" and not m["fell"] and m["plant"]["engine"] == "liftoff"
    assert m["touchdowns"] >= 6 and m["touchdown_error_ms"]["median"] < 40.0
    assert m["slip_per_stance_m"]["max"] < 1e-3  # the idealized feet stick
    assert m["max_cone_violation"] > 0  # ... pulling beyond the friction cone, which MuJoCo's feet cannot


def test_a_one_second_trot_on_mujoco_stands_then_steps_on_time(controller_model):
    r = run(trot_config(), duration=1.0, quiet=True)
    m = measures(r)
    assert m["status"] == "completed" and not m["fell"] and m["plant"]["engine"] == "mujoco"
    a = r.arrays
    standing = (a["t"] >= 0.05) & (a["t"] < 0.2)  # the first 0.2 s stand, once the feet have settled
    assert np.all(a["contact_active"][standing])
    vertical = a["contact_force"][standing][..., 2].sum(axis=1)
    assert np.mean(vertical) == pytest.approx(controller_model.mass * 9.81, rel=0.15)
    sliding = np.linalg.norm(a["contact_velocity"][standing][..., :2], axis=-1)
    assert np.median(sliding) < 0.02  # the feet standing barely creep
    assert m["touchdowns"] >= 6 and m["touchdown_error_ms"]["median"] < 20.0
    assert m["max_cone_violation"] <= 1e-6  # MuJoCo's feet slip rather than pull beyond the cone
    impacts = m["impact_speed_mps"]
    assert impacts["count"] >= m["touchdowns"] and impacts["max"] < 1.0  # the swings end gently


def test_the_updates_meet_the_rehearsed_horizons_made_and_solve_them_alike(monkeypatch):
    made, updating = [], []
    structure_init, update = horizon.Structure.__init__, controller.MPC.update

    def counted(self, *args):
        made.append(bool(updating))
        structure_init(self, *args)

    def in_update(self, *args):
        updating.append(True)
        try:
            return update(self, *args)
        finally:
            updating.pop()

    monkeypatch.setattr(horizon.Structure, "__init__", counted)
    monkeypatch.setattr(controller.MPC, "update", in_update)
    config = engine(trot_config(), "liftoff")
    rehearsed = run(config, duration=0.25, quiet=True)  # standing, then the first pair lifting off
    assert made and not any(made)  # every structure the updates met was made at the start
    made.clear()
    monkeypatch.delattr(GaitController, "rehearsal")
    plain = run(config, duration=0.25, quiet=True)
    assert sum(made) >= 10  # without the rehearsal: a new structure at each knot of the stand
    for name, x in plain.arrays.items():
        np.testing.assert_array_equal(rehearsed.arrays[name], x, err_msg=name)


def test_impacts_are_the_steps_at_which_a_contact_begins():
    active = np.array([[0, 1], [0, 1], [1, 1], [1, 1], [0, 1], [1, 0]], dtype=bool)  # foot 0 lands, bounces, lands
    velocity = np.zeros((6, 2, 3))
    velocity[2, 0], velocity[5, 0] = (0.0, 0.0, -3.0), (0.3, 0.0, -0.4)
    velocity[0, 1] = (9.0, 9.0, 9.0)  # foot 1 stands from the first step on: no impact
    np.testing.assert_allclose(impact_speeds(active, velocity), [3.0, 0.5])


def test_liftoff_mpc_runs_a_gait(tmp_path, capsys):
    argv = ["mpc", str(TROT), "--duration", "0.2", "--plant", "liftoff", "--out", str(tmp_path), "--json"]
    assert main(argv) == 0
    m = json.loads(capsys.readouterr().out)
    keys = ("fell", "mean_forward_velocity_mps", "max_cone_violation", "slip_per_stance_m", "touchdown_error_ms")
    assert all(key in m for key in (*keys, "commands", "touchdowns", "tick_ms_median"))
    assert m["status"] == "completed" and m["plant"]["engine"] == "liftoff"
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == ["forces.png", "height.png", "run.npz", "ticks.png", "velocity.png"]
    motion = viewer.load(tmp_path / "run.npz")  # the viewer plays the run every 20 ms, on its ground
    assert len(motion.times) == 10 and motion.q.shape == (10, 19) and motion.forces["LF_FOOT"][1].shape == (10, 3)
    assert motion.ground == pytest.approx(m["ground_m"])
    assert main(["view", str(tmp_path / "run.npz"), "--html", str(tmp_path / "run.html")]) == 0
    assert "<title>liftoff: anymal_trot_mpc</title>" in (tmp_path / "run.html").read_text()


def test_a_legged_run_falls_with_its_base_low_or_tilted_beyond_45_degrees():
    """Each configuration, and a block of steps at once (:meth:`Fallen.anywhere`: any of them)."""
    stop, q, seen = Fallen(0.1), np.r_[0.0, 0.0, 0.5, 0.0, 0.0, 0.0, 1.0, np.zeros(12)], []
    for height, axis, degrees, status in [
        (0.5, (1, 0, 0), 44.0, None),
        (0.36, (0, 1, 0), 0.0, None),
        (0.34, (0, 0, 1), 0.0, "fell"),
        (0.5, (1, 0, 0), 46.0, "fell"),
        (0.5, (0.6, 0.8, 0), -46.0, "fell"),
        (0.5, (0, 0, 1), 170.0, None),  # a turn about the vertical is not a tilt
    ]:
        half = np.radians(degrees) / 2
        q[2], q[3:7] = height, (*(np.sin(half) * np.array(axis, dtype=float)), np.cos(half))
        assert stop(Measurement(q, np.zeros(18))) == status
        assert stop.anywhere(q[None]) == (status == "fell")
        assert (tilt_degrees(q[None])[0] > 45.0) == (status == "fell" and height > 0.35)
        seen.append((q.copy(), status))
    upright = np.array([x for x, status in seen if status is None])
    assert not stop.anywhere(upright) and stop.anywhere(np.array([x for x, _ in seen]))


def test_a_warm_start_stage_on_other_feet_keeps_its_motion_and_starts_its_forces_afresh(controller_model, rng):
    """A touchdown moved between two horizons: the stage at a time held one diagonal in the
    previous horizon and holds the other in the new one. It keeps its match's state, controls
    and accelerations; its forces and their multipliers are the initial guess's (static support
    on its own feet), not the other feet's; the stages on the same feet keep their own."""
    ocp = step_to(fresh(controller_model), 0.2)
    j = 3
    other = next(s for s in ocp.stages if s.kind == "contact" and contact_frames(s) != contact_frames(ocp.stages[j]))
    moved_touchdown = replace(
        ocp, stages=(*ocp.stages[:j], replace(ocp.stages[j], contacts=other.contacts), *ocp.stages[j + 1 :])
    )
    old = Formulation(ocp, "lifted", "numpy")
    new = old.for_problem(moved_touchdown)
    it = random_iterate(old, rng)
    warm = warm_start(old, 0.0, it, new, 0.0)
    nv = controller_model.nv
    group, gv, r = stage_row(new, warm, j)
    _, was, r_old = stage_row(old, it, j)
    np.testing.assert_array_equal(warm.q[j], it.q[j])
    np.testing.assert_array_equal(gv.u[r], was.u[r_old])
    np.testing.assert_array_equal(gv.w[r, :nv], was.w[r_old, :nv])
    fresh_start = new.initial_variables(group, controller._barrier(it))
    np.testing.assert_array_equal(gv.w[r, nv:], fresh_start.w[0, nv:])  # static support on its own feet
    np.testing.assert_array_equal(gv.beta[r], fresh_start.beta[0])
    np.testing.assert_array_equal(gv.s[r], fresh_start.s[0])
    for k in (j - 1, j + 1):  # its neighbours, on the same feet as before, keep their own variables
        (_, gv, r), (_, was, r_old) = stage_row(new, warm, k), stage_row(old, it, k)
        np.testing.assert_array_equal(gv.w[r], was.w[r_old])
        np.testing.assert_array_equal(gv.s[r], was.s[r_old])


def test_a_warm_start_impulse_moved_by_a_held_schedule_keeps_its_touchdown(controller_model, rng):
    """A schedule held for a late foot moves its touchdown by an update's period between two
    horizons: the impulse stage starts 5 ms later. It takes the state and variables of the
    previous horizon's impulse of that touchdown, not those of the horizon's last impulse (the
    other diagonal's touchdown, a half cycle later, in another posture)."""
    ocp = step_to(fresh(controller_model), 0.2)
    impulses = [k for k, s in enumerate(ocp.stages) if s.kind == "impulse"]
    assert len(impulses) == 2 and contact_frames(ocp.stages[impulses[0]]) != contact_frames(ocp.stages[impulses[1]])
    j = impulses[0]
    before, after = ocp.stages[j - 1], ocp.stages[j + 1]
    held = replace(
        ocp,
        stages=(
            *ocp.stages[: j - 1],
            replace(before, dt=before.dt + 0.005),
            ocp.stages[j],
            replace(after, dt=after.dt - 0.005),
            *ocp.stages[j + 2 :],
        ),
    )
    old = Formulation(ocp, "lifted", "numpy")
    new = old.for_problem(held)
    it = random_iterate(old, rng)
    warm = warm_start(old, 0.0, it, new, 0.0)
    np.testing.assert_array_equal(warm.q[j], it.q[j])
    np.testing.assert_array_equal(warm.v[j], it.v[j])
    (_, gv, r), (_, was, r_old) = stage_row(new, warm, j), stage_row(old, it, j)
    for now, then in zip(controller._group_arrays(gv), controller._group_arrays(was)):
        np.testing.assert_array_equal(now[r], then[r_old])
