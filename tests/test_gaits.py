"""Gaits from YAML: the structure ``build_problem`` gives a contact schedule and its options,
and the physics of the solved ANYmal gaits (configs/anymal_*.yaml and seed 004's bound and
jump, lifted, barrier 0.1): cones, limits, still stance feet, impacts that stop the landing
feet, swing clearance, the jump's flight, forward progress; results files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from liftoff import dynamics
from liftoff.ocp.problem import ContactStage, ImpulseStage
from liftoff.problems.studies.runs import load_run, save_run, solve_config, summary
from liftoff.problems.tasks.config import load_config, parse_config
from liftoff.problems.tasks.gaits import build_problem, foot_plan, phase_kind

CONFIGS = Path(__file__).resolve().parent.parent / "configs"
GAITS = ("walk", "trot", "pace", "bound", "jump")
SOLVED = [f"anymal_{g}" for g in GAITS] + ["seed004/anymal_bound", "seed004/anymal_jump"]
FEET = ("LF_FOOT", "LH_FOOT", "RF_FOOT", "RH_FOOT")
WORLD = "LOCAL_WORLD_ALIGNED"

# Measured (lifted, barrier 0.1): the largest stance-foot speed is 0.040 m/s on the trot and
# 0.17 m/s on the jump, at the knots after a touchdown (the Baumgarte position term pulls the
# foot from where it landed, up to 1 cm off, onto the planned foothold); swing feet reach
# 1.3-1.4 m/s on the trot. The bounds keep a margin over the worst gait.
STANCE_SPEED = 0.25  # m/s
STANCE_DRIFT = 0.02  # m, from the planned foothold (the bound lands 1.0 cm off)


# ----------------------------------------------------------------------------- structure


def small_config(phases, horizon=6, **gait):
    return parse_config(
        {
            "robot": "anymal",
            "contacts": {"feet": list(FEET)},
            "gait": {"dt": 0.02, "horizon": horizon, "step_length": 0.1, "step_height": 0.05, **gait, "phases": phases},
        }
    )


def frames(stage):
    return [c.frame for c in stage.contacts]


ALL = list(FEET)


@pytest.mark.parametrize(
    "phases, kinds, impulse_contacts",
    [
        # stance 2, LF and RH swing 2, stance 2: one touchdown, of LF and RH, all feet after it
        (
            [
                {"contact": ALL, "knots": 2},
                {"contact": ["LH_FOOT", "RF_FOOT"], "knots": 2},
                {"contact": ALL, "knots": 2},
            ],
            "ccccicc",
            [ALL],
        ),
        # stance 1, LF+RH swing 2, LH+RF swing 2, stance 1: the diagonal pairs swap at once
        (
            [
                {"contact": ALL, "knots": 1},
                {"contact": ["LH_FOOT", "RF_FOOT"], "knots": 2},
                {"contact": ["LF_FOOT", "RH_FOOT"], "knots": 2},
                {"contact": ALL, "knots": 1},
            ],
            "ccciccic",
            [["LF_FOOT", "RH_FOOT"], ALL],
        ),
    ],
)
def test_build_problem_puts_an_impulse_at_each_touchdown(phases, kinds, impulse_contacts):
    config = small_config(phases)
    ocp = build_problem(config)
    assert "".join(s.kind[0] for s in ocp.stages) == kinds
    assert sum(isinstance(s, ContactStage) for s in ocp.stages) == config.gait.horizon
    impulses = [s for s in ocp.stages if isinstance(s, ImpulseStage)]
    assert [frames(s) for s in impulses] == impulse_contacts
    # contact stages hold the feet of their phase
    contact_stages = iter(s for s in ocp.stages if s.kind == "contact")
    for phase in config.gait.phases:
        for _ in range(phase.knots):
            assert frames(next(contact_stages)) == list(phase.contact)
    times = ocp.times()
    assert len(times) == ocp.K + 1
    np.testing.assert_allclose(times[-1], config.gait.horizon * config.gait.dt, rtol=1e-12)
    np.testing.assert_allclose(
        np.diff(times)[[k for k, s in enumerate(ocp.stages) if s.kind == "impulse"]], 0.0, atol=0
    )


def test_flight_phase_has_no_contacts_and_lands_on_all_feet():
    config = small_config(
        [{"contact": ALL, "knots": 2}, {"contact": [], "knots": 2}, {"contact": ALL, "knots": 2}],
        jump_length=0.1,
        jump_height=0.05,
    )
    ocp = build_problem(config)
    assert "".join(s.kind[0] for s in ocp.stages) == "ccccicc"
    flight = ocp.stages[2:4]
    assert all(isinstance(s, ContactStage) and s.contacts == () for s in flight)
    assert frames(ocp.stages[4]) == ALL
    # every foot lands jump_length ahead of where it took off
    landing = {c.frame: c.placement for c in ocp.stages[5].contacts}
    takeoff = {c.frame: c.placement for c in ocp.stages[0].contacts}
    for foot in FEET:
        np.testing.assert_allclose(landing[foot] - takeoff[foot], [0.1, 0.0, 0.0], atol=1e-12)


def test_foot_plan_moves_swing_feet_by_one_step_along_a_parabola():
    config = small_config(
        [{"contact": ALL, "knots": 2}, {"contact": ["LH_FOOT", "RF_FOOT"], "knots": 4}, {"contact": ALL, "knots": 2}],
        horizon=8,
    )
    start = {f: np.array([i, 0.1 * i, 0.0]) for i, f in enumerate(FEET)}
    stance, swing = foot_plan(config, start)
    assert [sorted(s) for s in stance] == [sorted(FEET), ["LH_FOOT", "RF_FOOT"], sorted(FEET)]
    assert [sorted(s) for s in swing] == [[], ["LF_FOOT", "RH_FOOT"], []]
    s = np.arange(4) / 4
    for foot in ("LF_FOOT", "RH_FOOT"):
        expected = start[foot] + np.stack([0.1 * s, 0 * s, 4 * 0.05 * s * (1 - s)], axis=1)
        np.testing.assert_allclose(swing[1][foot], expected, atol=1e-15)
        np.testing.assert_allclose(stance[2][foot], start[foot] + [0.1, 0.0, 0.0], atol=1e-15)
    for foot in ("LH_FOOT", "RF_FOOT"):
        np.testing.assert_allclose(stance[2][foot], start[foot], atol=0)
    # the contacts of the OCP sit at the planned footholds of the standing configuration
    ocp = build_problem(config)
    standing = {f: dynamics.frame_placement(ocp.model, ocp.q0, f)[1] for f in FEET}
    planned, _ = foot_plan(config, standing)
    last = {c.frame: c.placement for c in ocp.stages[-1].contacts}
    for foot in FEET:
        np.testing.assert_allclose(last[foot], planned[2][foot], atol=1e-15)


SWING = [{"contact": ALL, "knots": 2}, {"contact": ["LH_FOOT", "RF_FOOT"], "knots": 4}, {"contact": ALL, "knots": 2}]


def test_triangular_swing_profile():
    """Up then down linearly: half the step height at a quarter of the swing, where the
    parabola is at three quarters."""
    start = {f: np.zeros(3) for f in FEET}
    heights = {}
    for profile in ("parabola", "triangle"):
        _, swing = foot_plan(small_config(SWING, horizon=8, swing_profile=profile), start)
        heights[profile] = swing[1]["LF_FOOT"][:, 2]
    np.testing.assert_allclose(heights["triangle"], 0.05 * np.array([0.0, 0.5, 1.0, 0.5]), atol=1e-15)
    np.testing.assert_allclose(heights["parabola"], 0.05 * np.array([0.0, 0.75, 1.0, 0.75]), atol=1e-15)


def test_impulse_stages_hold_all_feet_or_the_landing_ones():
    for held, expected in (("all", ALL), ("landing", ["LF_FOOT", "RH_FOOT"])):
        ocp = build_problem(small_config(SWING, horizon=8, impulse_contacts=held))
        (impulse,) = [s for s in ocp.stages if s.kind == "impulse"]
        assert sorted(frames(impulse)) == sorted(expected)
        assert sorted(t.name for t in impulse.costs) == ["state", "touchdown_LF_FOOT", "touchdown_RH_FOOT"]


def test_costs_integrated_with_dt_weigh_the_contact_stages_only():
    data = {"robot": "anymal", "contacts": {"feet": list(FEET)}}
    gait = {"dt": 0.02, "horizon": 8, "step_length": 0.1, "step_height": 0.05, "phases": SWING}
    plain, integrated = (
        build_problem(parse_config({**data, "gait": gait, "costs": {"integrate_dt": flag}})) for flag in (False, True)
    )
    for a, b in zip(plain.stages, integrated.stages):
        factor = 0.02 if a.kind == "contact" else 1.0
        for ta, tb in zip(a.costs, b.costs):
            expected = factor * np.asarray(ta.weights)
            np.testing.assert_allclose(np.asarray(tb.weights), expected, rtol=1e-15, err_msg=ta.name)
    np.testing.assert_array_equal(plain.terminal_costs[0].weights, integrated.terminal_costs[0].weights)


JUMP = [
    {"contact": ALL, "knots": 2},
    {"contact": ["LH_FOOT", "RF_FOOT"], "knots": 2},
    {"contact": ALL, "knots": 1},
    {"contact": [], "knots": 4},
    {"contact": ALL, "knots": 2},
]
JUMP_KINDS = ["stance"] * 2 + ["swing"] * 2 + ["stance"] + ["rising"] * 2 + ["falling"] * 2 + ["landed"] * 2


def test_phase_kinds_of_a_schedule():
    phases = small_config(JUMP, horizon=11).gait.phases
    kinds = [phase_kind(phases, FEET, i, j) for i, phase in enumerate(phases) for j in range(phase.knots)]
    assert kinds == JUMP_KINDS


def cost_names(ocp):
    """Per contact stage, the sorted names of its cost terms."""
    return [sorted(t.name for t in s.costs) for s in ocp.stages if s.kind == "contact"]


@pytest.mark.parametrize("com", [["swing"], ["rising", "landed"], []])
@pytest.mark.parametrize("swing_foot", [["swing", "rising", "falling"], ["swing"], []])
def test_com_and_swing_foot_costs_act_on_the_chosen_phase_kinds(com, swing_foot):
    config = parse_config(
        {
            "robot": "anymal",
            "contacts": {"feet": list(FEET)},
            "gait": {
                "dt": 0.02,
                "horizon": 11,
                "step_length": 0.1,
                "step_height": 0.05,
                "jump_length": 0.2,
                "jump_height": 0.1,
                "phases": JUMP,
            },
            "costs": {"com_phases": com, "swing_foot_phases": swing_foot},
        }
    )
    every = [f"swing_{f}" for f in FEET]
    airborne = {
        "stance": [],
        "swing": ["swing_LF_FOOT", "swing_RH_FOOT"],
        "rising": every,
        "falling": every,
        "landed": [],
    }
    expected = [
        sorted(["control", "state"] + (["com"] if kind in com else []) + (airborne[kind] if kind in swing_foot else []))
        for kind in JUMP_KINDS
    ]
    assert cost_names(build_problem(config)) == expected


def com_references(config):
    return [
        next(t.reference for t in s.costs if t.name == "com")
        for s in build_problem(config).stages
        if s.kind == "contact"
    ]


def test_com_reference_from_the_standing_com_or_the_feet_centroid():
    """Both origins move with the mean planned foot displacement and rise by the jump
    height's profile in a flight; ``feet`` starts from the feet's centroid in x, y."""
    configs = {
        origin: small_config(
            JUMP, horizon=11, jump_length=0.2, jump_height=0.1, com_reference=origin, swing_profile="triangle"
        )
        for origin in ("standing", "feet")
    }
    ocp = build_problem(configs["feet"])
    standing_com = dynamics.center_of_mass(ocp.model, ocp.q0)
    centroid = np.mean([dynamics.frame_placement(ocp.model, ocp.q0, f)[1] for f in FEET], axis=0)
    assert abs(standing_com[0] - centroid[0]) > 1e-3  # the two origins differ
    # hand-computed displacement per knot: two of four feet move 0.1 s over the swing (s = j/2),
    # then every foot 0.2 s over the flight (s = j/4) while the CoM rises 0.1 (1 - |2 s - 1|)
    dx = [0, 0, 0, 0.025, 0.05, 0.05, 0.1, 0.15, 0.2, 0.25, 0.25]
    dz = [0, 0, 0, 0, 0, 0, 0.05, 0.1, 0.05, 0, 0]
    for origin, start in (("standing", standing_com), ("feet", np.array([*centroid[:2], standing_com[2]]))):
        expected = start + np.stack([dx, np.zeros(11), dz], axis=1)
        np.testing.assert_allclose(com_references(configs[origin]), expected, atol=1e-12, err_msg=origin)


# ----------------------------------------------------------------------------- the solved trot


@pytest.fixture(scope="module", params=SOLVED)
def trot(request):
    """``(config, ocp, run, feet)``: a solved gait with each foot's world position and
    velocity at every knot, ``feet[frame] = (p (K+1, 3), v (K+1, 3))``."""
    config = load_config(CONFIGS / f"{request.param}.yaml")
    run = solve_config(config)
    ocp = build_problem(run.config)
    q, v = run.trajectories["q"], run.trajectories["v"]
    feet = {}
    for foot in config.contacts.feet:
        _, p = dynamics.frame_placement(ocp.model, q, foot)
        feet[foot] = (p, dynamics.frame_velocity(ocp.model, q, v, foot, WORLD)[:, :3])
    return config, ocp, run, feet


def in_contact(stage, foot):
    return any(c.frame == foot for c in stage.contacts)


def test_trot_converges(trot):
    config, _, run, _ = trot
    assert run.config.solver.formulation == "lifted" and run.config.solver.barrier == 0.1
    assert run.result.status == "converged", run.result.message
    assert run.result.kkt_error <= config.solver.tol
    assert run.result.max_constraint_violation < 1e-8


def test_trot_forces_lie_in_the_friction_cones(trot):
    config, ocp, run, _ = trot
    forces, mu = run.trajectories["forces"], config.contacts.friction
    assert sorted(forces) == sorted(FEET)
    checked = 0
    for k, stage in enumerate(ocp.stages):
        if stage.kind != "contact":
            continue  # impulses are not cone-constrained
        for foot in FEET:
            f = forces[foot][k]
            if in_contact(stage, foot):
                assert f[2] >= -1e-9, (k, foot, f)
                assert np.all(np.abs(f[:2]) <= mu / np.sqrt(2) * f[2] + 1e-9), (k, foot, f)
                checked += 1
            else:
                np.testing.assert_allclose(f, 0.0, atol=0, err_msg=f"{foot} in the air at stage {k}")
    assert checked == sum(len(s.contacts) for s in ocp.stages if s.kind == "contact") > 0


def test_trot_respects_the_joint_limits(trot):
    _, ocp, run, _ = trot
    model, t = ocp.model, run.trajectories
    q, v, u = t["q"][:, 7:], t["v"][:, 6:], t["u"]
    assert np.all(q >= model.lower_position_limit[7:])
    assert np.all(q <= model.upper_position_limit[7:])
    assert np.all(np.abs(v) <= model.velocity_limit[6:])
    assert np.all(np.abs(u) <= model.effort_limit[6:])
    assert np.abs(u).max() > 1.0  # the robot does carry its weight


def test_trot_stance_feet_stay_on_their_footholds(trot):
    _, ocp, _, feet = trot
    speeds, drifts, swing_speed = [], [], 0.0
    for k, stage in enumerate(ocp.stages):
        if stage.kind != "contact":
            continue
        holds = {c.frame: c.placement for c in stage.contacts}
        for foot, (p, v) in feet.items():
            if foot in holds:
                speeds.append(np.linalg.norm(v[k]))
                drifts.append(np.linalg.norm(p[k] - holds[foot]))
            else:
                swing_speed = max(swing_speed, np.linalg.norm(v[k]))
    assert len(speeds) > 100
    assert max(speeds) < STANCE_SPEED
    assert max(drifts) < STANCE_DRIFT
    assert swing_speed > 4 * max(speeds)  # stance feet are much slower than swinging ones


def test_trot_impacts_stop_the_landing_feet(trot):
    _, ocp, run, feet = trot
    t = run.trajectories
    impulses = [k for k, s in enumerate(ocp.stages) if s.kind == "impulse"]
    assert len(impulses) >= 1
    for k in impulses:
        np.testing.assert_allclose(t["q"][k + 1], t["q"][k], atol=0)
        np.testing.assert_allclose(t["v"][k + 1], t["v"][k] + t["a"][k], atol=1e-12)
        landing = [f for f in FEET if in_contact(ocp.stages[k], f) and not in_contact(ocp.stages[k - 1], f)]
        assert len(landing) >= 1
        for foot in FEET:
            if in_contact(ocp.stages[k], foot):
                np.testing.assert_allclose(
                    feet[foot][1][k + 1], 0.0, atol=1e-8, err_msg=f"{foot} after the impact at {k}"
                )
        for foot in landing:
            assert np.linalg.norm(feet[foot][1][k]) > 1e-2, (k, foot)


def swings(ocp, foot):
    """``(first, last)`` knots of each swing of ``foot``: from its first contact stage in the
    air to the knot where it lands."""
    out, first = [], None
    for k, stage in enumerate(ocp.stages):
        if stage.kind == "impulse":
            continue  # it may hold the landing feet only
        air = not in_contact(stage, foot)
        if air and first is None:
            first = k
        if not air and first is not None:
            out.append((first, k))
            first = None
    if first is not None:
        out.append((first, ocp.K))
    return out


def test_trot_swing_feet_clear_the_ground(trot):
    config, ocp, _, feet = trot
    count = 0
    for foot in FEET:
        p = feet[foot][0]
        for first, last in swings(ocp, foot):
            flight = not ocp.stages[first].contacts
            height = config.gait.jump_height if flight else config.gait.step_height
            apex = p[first : last + 1, 2].max()
            assert apex - p[first, 2] >= 0.5 * height, (foot, first, last, apex)
            count += 1
    assert count >= 4  # each foot swings


def test_jump_has_a_flight_with_every_foot_off_the_ground(trot):
    config, ocp, _, feet = trot
    flight = [k for k, s in enumerate(ocp.stages) if s.kind == "contact" and not s.contacts]
    if all(phase.contact for phase in config.gait.phases):
        assert not flight
        return
    assert len(flight) == 30
    inside = flight[3:-3]  # away from take-off and landing
    for foot, (p, _) in feet.items():
        assert np.all(p[inside, 2] > p[0, 2] + 0.01), foot


def test_trot_base_moves_forward_with_the_feet(trot):
    """The base ends near the mean displacement of the planned footholds."""
    _, ocp, run, feet = trot
    q = run.trajectories["q"]
    planned = np.mean([feet[f][0][-1, 0] - feet[f][0][0, 0] for f in FEET])
    assert planned > 0.1
    np.testing.assert_allclose(q[-1, 0] - q[0, 0], planned, rtol=0.3)


def test_results_file_round_trip(trot, tmp_path):
    _, _, run, _ = trot
    path = save_run(run, tmp_path / "sub" / "trot.npz")
    assert path.is_file()
    back = load_run(path)
    t = run.trajectories
    np.testing.assert_array_equal(back["times"], run.times)
    for key in ("q", "v", "u", "a", "kinds"):
        np.testing.assert_array_equal(back[key], t[key], err_msg=key)
    for kind in ("forces", "impulses"):
        assert sorted(back[kind]) == sorted(t[kind]) == sorted(FEET)
        for foot, value in t[kind].items():
            np.testing.assert_array_equal(back[kind][foot], value, err_msg=f"{kind} {foot}")
    assert back["summary"] == summary(run)
    assert back["summary"]["status"] == "converged"
    assert parse_config(back["config"]) == run.config


def test_forces_and_impulses_are_kept_apart(trot):
    """Forces [N] at the contact stages only, impulses [N s] at the impulse stages only."""
    _, _, run, _ = trot
    t = run.trajectories
    impulse = t["kinds"] == "impulse"
    for foot in FEET:
        assert not np.any(t["forces"][foot][impulse]) and not np.any(t["impulses"][foot][~impulse])
    assert max(np.abs(t["impulses"][foot][impulse]).max() for foot in FEET) > 0  # the landing feet
    assert min(t["forces"][foot][~impulse, 2].max() for foot in FEET) > 50  # every foot carries weight
