"""The polishing task (seed 001 Sec. IV) and its closed loop: the configuration's checks, the
reduced Talos and its tool frame, the OCP's contact along the surface's normal (a table, a board,
a tilted board) and its references, both formulations at one optimum, the MPC against liftoff's
idealized plant (force and circle tracking, a push, a heavier arm) and against MuJoCo, and
``liftoff mpc``."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
import yaml

from liftoff import dynamics
from liftoff.ocp.formulation import Formulation
from liftoff.problems.cli import main
from liftoff.problems.mpc import results
from liftoff.problems.mpc.disturbances import Push
from liftoff.problems.mpc.plants import mujoco_plant
from liftoff.problems.mpc.polishing_run import FORCE_BAND_N, measures, run
from liftoff.problems.tasks.config import ConfigError, ProblemError, parse_config
from liftoff.problems.tasks.polishing import PolishingConfig, build_ocp, make_task
from liftoff.solvers.ipm import Options, solve

SHORT = {"task": "polishing", "mpc": {"duration": 1.0}, "costs": {"tool_position": 200.0}}  # frictionless, MuJoCo
IDEAL = {"plant": {"engine": "liftoff"}}


def config(**changes):
    data = {**SHORT}
    for key, value in changes.items():
        section, name = key.split("__")
        data[section] = {**data.get(section, {}), name: value}
    return parse_config(data, schema=PolishingConfig)


@pytest.mark.parametrize("normal, unit", [([0, 0, -1e308], [0, 0, -1]), ([1e308] * 3, [3**-0.5] * 3)])
def test_a_normal_of_huge_components_is_its_direction(normal, unit):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow on the way
        np.testing.assert_allclose(config(surface__normal=normal).surface.normal, unit, rtol=1e-15)


@pytest.fixture(scope="module")
def table():
    return make_task(config())


@pytest.mark.parametrize(
    "data, path, message",
    [
        ({"surface": {"normal": "z"}}, "surface.normal", "expected a list of 3 finite numbers, got 'z'"),
        ({"surface": {"normal": [0, 0, 0]}}, "surface.normal", "expected a non-zero direction [x, y, z]"),
        ({"surface": {"normal": [0, 0, 1e-300]}}, "surface.normal", "expected a non-zero direction [x, y, z]"),
        ({"surface": {"normal": [0, 1]}}, "surface.normal", "expected a list of 3 finite numbers, got a list [0, 1]"),
        ({"tool": {"position": [0, 0]}}, "tool.position", "expected a list of 3 finite numbers"),
        ({"plant": {"contact": {"solimp": [0.9, 0.95, 0.001]}}}, "plant.contact.solimp", "a list of 5 finite numbers"),
        ({"surface": {"friction": -0.1}}, "surface.friction", "expected a number >= 0"),
        ({"mpc": {"period": 0.015}}, "mpc.period", "a multiple of mpc.dt = 0.01"),
        ({"plant": {"dt": 0.003}}, "plant.dt", "a divisor of mpc.period = 0.01"),
        ({"plant": {"engine": "bullet"}}, "plant.engine", "expected mujoco or liftoff"),
        (
            {"plant": {"contact": {"solref": [0.0, 1.0]}}},
            "plant.contact.solref",
            "expected a time constant > 0 and a damping ratio > 0",
        ),
        ({"plant": {"contact": {"solref": [0.001, 1.0]}}}, "plant.contact.solref", "a time constant >= 2 dt = 0.002"),
        ({"tool": {"radius": 0}}, "tool.radius", "a number > 0"),
        ({"costs": {"position_weights": [1, 2]}}, "costs.position_weights", "6 weights"),
        ({"task": "sanding"}, "task", "expected polishing"),
        ({"surface": {"force": -30}}, "surface.force", "a number > 0"),
        ({"mpc": {"scheme": "rtl"}}, "mpc.scheme", "expected newton or rti, got 'rtl'"),
    ],
)
def test_configuration_errors_name_the_key(data, path, message):
    with pytest.raises(ConfigError) as error:
        parse_config({**SHORT, **data}, "p.yaml", PolishingConfig)
    assert error.value.path == path and message in str(error.value)


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"tool": {"frame": "arm_right_9_link"}}, "tool.frame: talos has no frame 'arm_right_9_link'; did you mean"),
        ({"posture": "sitting"}, "talos has no configuration 'sitting' (known: half_sitting"),
        ({"plant": {"scaled_joints": ["leg_left_1_joint"]}}, "'leg_left_1_joint' is not a controlled joint"),
    ],
)
def test_names_the_robot_does_not_have_are_task_errors(changes, message):
    with pytest.raises(ProblemError, match=message.replace("(", r"\(")):
        make_task(parse_config({**SHORT, **changes}, schema=PolishingConfig))


def test_an_unknown_controlled_joint_is_named_before_the_weights_that_follow_its_length():
    data = {**SHORT, "controlled": ["torso_1_joint", "arm_rigth_1_joint"]}  # position_weights: another length
    with pytest.raises(ConfigError) as error:
        parse_config(data, "p.yaml", PolishingConfig)
    assert error.value.path == "controlled[1]"
    assert "talos has no joint 'arm_rigth_1_joint'; did you mean arm_right_1_joint" in str(error.value)


def test_the_reduced_talos_moves_the_controlled_joints_from_half_sitting(table):
    model = table.model
    assert (model.nq, model.nv, model.has_free_flyer) == (6, 6, False)
    assert model.joint_names == table.config.controlled
    np.testing.assert_allclose(table.q0, [0, 0.006761, -0.25847, -0.173046, 0.0002, -0.525366])
    full = dynamics.load("talos", floating_base=False)
    half_sitting = dynamics.robots.named_configuration("talos", "half_sitting")
    q_full = np.array([half_sitting.get(j, 0.0) for j in full.joint_names])
    R_wrist, p_wrist = dynamics.frame_placement(full, q_full, "arm_right_7_link")
    # the locked joints sit where the posture puts them; the tool frame is 28 cm along the wrist's -z
    np.testing.assert_allclose(table.p0, p_wrist + R_wrist @ [0.0, 0.0, -0.28], atol=1e-12)
    np.testing.assert_allclose(table.R0, R_wrist, atol=1e-12)


def stage_costs(ocp, k):
    return stage_costs_of(ocp.stages[k])


def test_the_ocp_presses_along_the_normal_and_follows_the_circle(table):
    ocp = build_ocp(table, t0=0.5)
    (contact,) = ocp.stages[3].contacts
    assert (contact.frame, contact.kind, contact.reference.name) == ("tool", "z", "LOCAL_WORLD_ALIGNED")
    np.testing.assert_allclose(contact.rotation[:, 2], [0.0, 0.0, 1.0])  # the contact's row: the table's normal
    np.testing.assert_allclose(contact.placement, table.p0)
    costs = stage_costs(ocp, 3)
    np.testing.assert_allclose(costs["force"].reference, [30.0])  # along the normal, toward the tool
    # knot 3 is at t = 0.53 s: the circle through p0 (start angle 0) in the x-y plane, radius 7 cm, 1 rad/s
    np.testing.assert_allclose(table.plane, [[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    angle = 0.53
    expected = table.p0 + 0.07 * np.array([np.cos(angle) - 1, np.sin(angle), 0.0])
    np.testing.assert_allclose(costs["tool"].reference, expected, atol=1e-12)
    np.testing.assert_allclose(costs["tool"].weights, [200.0, 200.0, 200.0])
    np.testing.assert_allclose(costs["orientation"].reference, table.R0)  # the wrist keeps its initial orientation
    np.testing.assert_allclose(costs["orientation"].weights, [0.1, 0.1, 0.1])
    # a board that pushes along +y; e1 = x, e2 = n x e1 = -z: the start angle pi/2 is the circle's bottom
    board = make_task(config(surface__normal=[0.0, 1.0, 0.0], circle__start_angle=np.pi / 2))
    ocp = build_ocp(board, t0=np.pi / 2)
    (contact,) = ocp.stages[0].contacts
    assert contact.kind == "z"
    np.testing.assert_allclose(contact.rotation[:, 2], [0.0, 1.0, 0.0])
    costs = stage_costs(ocp, 0)
    np.testing.assert_allclose(costs["force"].reference, [30.0])
    # a quarter turn from the bottom of a circle in the x-z plane: its -x side, r above the start
    np.testing.assert_allclose(costs["tool"].reference, board.p0 + [-0.07, 0.0, 0.07], atol=1e-12)


def test_overlapping_horizons_share_their_stages_and_keep_their_references():
    """A stage is made once per start time (the MPC's horizons overlap): the later horizon holds
    the earlier one's stages from its start on, and its references are those of a task that never
    built the earlier one."""
    task, fresh = make_task(config(surface__friction=0.3)), make_task(config(surface__friction=0.3))
    first, later = build_ocp(task, t0=0.5), build_ocp(task, t0=0.52)
    assert all(a is b for a, b in zip(later.stages, first.stages[2:]))
    alone = build_ocp(fresh, t0=0.52)
    for a, b in zip(later.stages, alone.stages):
        assert a is not b and a.dt == b.dt
        # their start times agree to the last bits (0.5 + 0.02 against 0.52)
        np.testing.assert_allclose(stage_costs_of(a)["tool"].reference, stage_costs_of(b)["tool"].reference, atol=1e-15)
        np.testing.assert_allclose(a.sliding[0].direction, b.sliding[0].direction, atol=1e-15)
    assert [g.key for g in later.groups()] == [g.key for g in alone.groups()]


def stage_costs_of(stage):
    return {term.name: term for term in stage.costs}


def test_a_tilted_board_is_pressed_along_its_normal_and_circled_in_its_plane():
    normal = np.array([0.0, 0.5, 1.0]) / np.linalg.norm([0.0, 0.5, 1.0])
    tilted = make_task(config(surface__normal=[0.0, 0.5, 1.0], circle__start_angle=0.3))
    np.testing.assert_allclose(tilted.normal, normal, atol=1e-15)
    ocp = build_ocp(tilted, t0=0.2)
    (contact,) = ocp.stages[0].contacts
    R = np.asarray(contact.rotation)
    np.testing.assert_allclose(R[:, 2], normal, atol=1e-15)
    np.testing.assert_allclose(R.T @ R, np.eye(3), atol=1e-15)  # a rotation: the plane's axes, then the normal
    np.testing.assert_allclose(R[:, :2], tilted.plane, atol=1e-15)
    assert tilted.normal_force(R @ [0.0, 0.0, 30.0]) == pytest.approx(30.0)
    references = np.array([stage_costs(ocp, k)["tool"].reference for k in range(ocp.K)])
    offsets = references - tilted.surface_point()
    np.testing.assert_allclose(offsets @ normal, 0.0, atol=1e-12)  # in the board's plane
    start = 0.07 * (np.cos(0.3) * R[:, 0] + np.sin(0.3) * R[:, 1])  # from the circle's centre to the start
    np.testing.assert_allclose(np.linalg.norm(offsets + start, axis=1), 0.07, atol=1e-12)  # on the circle
    assert np.ptp(offsets @ R[:, 1]) > 0.02  # along the tilted in-plane axis too (0.5 s of the circle)


@pytest.mark.parametrize("torque_filter", [5.0, None], ids=["torque state", "torque control"])
def test_both_formulations_reach_one_optimum_with_the_force_tracked(torque_filter):
    table = make_task(parse_config({**SHORT, "torque_filter": torque_filter}, schema=PolishingConfig))
    ocp = build_ocp(table)
    assert ocp.nx == (18 if torque_filter else 12) and table.sliding(0.0) == ()  # a frictionless table
    results = {name: solve(Formulation(ocp, name), Options(barrier=1e-3)) for name in ("lifted", "nonlifted")}
    assert all(r.converged for r in results.values())
    assert results["lifted"].cost == pytest.approx(results["nonlifted"].cost, rel=1e-6)
    np.testing.assert_allclose(results["lifted"].iterate.q, results["nonlifted"].iterate.q, atol=1e-6)
    trajectory = Formulation(ocp, "lifted").trajectories(results["lifted"].iterate)
    force = table.normal_force(trajectory["forces"]["tool"])
    np.testing.assert_allclose(force, 30.0, atol=0.05)


def test_sliding_friction_needs_the_lifted_formulation():
    rough = make_task(config(surface__friction=0.3))
    (sliding,) = rough.sliding(0.0)  # against the circle's direction at its start (+y): the force is -mu f_n y
    assert sliding.mu == 0.3
    np.testing.assert_allclose(sliding.direction, [0.0, 1.0, 0.0], atol=1e-15)
    assert make_task(config(surface__friction=0.3, surface__model_friction=False)).sliding(0.0) == ()
    with pytest.raises(ValueError, match="sliding friction needs the lifted formulation"):
        Formulation(build_ocp(rough), "nonlifted")


@pytest.fixture(scope="module")
def closed_loop_runs():
    """One second on a frictionless table against liftoff's idealized plant: undisturbed (with
    the torque filter and without), pushed up 20 N for 0.1 s at 0.4 s, heavier arm."""
    cfg = parse_config({**SHORT, **IDEAL}, schema=PolishingConfig)
    unfiltered = parse_config({**SHORT, **IDEAL, "torque_filter": None}, schema=PolishingConfig)
    return {
        "plain": run(cfg, quiet=True),
        "unfiltered": run(unfiltered, quiet=True),
        "push": run(cfg, pushes=[Push("arm_right_7_link", (0.0, 0.0, 20.0), 0.4, 0.1)], quiet=True),
        "heavier": run(cfg, mass_scale=1.1, quiet=True),
    }


@pytest.mark.parametrize("case", ["plain", "unfiltered"])
def test_the_mpc_tracks_the_force_and_the_circle(closed_loop_runs, case):
    m = measures(closed_loop_runs[case])
    assert m["status"] == "completed" and m["plant"]["engine"] == "liftoff"
    assert m["force_rms_error_N"] < 0.5 and m["force_step_rms_error_N"] < 0.5
    assert m["circle_rms_error_m"] < 0.005
    assert m["contact_lost_fraction"] == 0 and m["contact_lost_periods_fraction"] == 0
    assert m["min_normal_force_N"] > 25
    assert m["updates"] == 100 and m["update_iterations"] == 99  # the first solve, then one iteration per update


def test_the_force_returns_after_a_push_and_with_a_heavier_arm(closed_loop_runs):
    pushed = closed_loop_runs["push"]
    a = pushed.arrays
    onset = (a["t"] >= 0.4) & (a["t"] < 0.41)
    assert np.all(a["force"][onset] < 20.5)  # the push lifts the tool: the surface holds less
    late = (a["t"] >= 0.45) & (a["t"] < 0.5)
    assert np.all(np.abs(a["force"][late] - 30.0) < FORCE_BAND_N)  # the observer takes the push as a disturbance
    m = measures(pushed)
    assert m["contact_lost_fraction"] == 0 and m["force_settling_s"] <= 0.5
    assert m["disturbances"]["pushes"][0]["start"] == 0.4
    heavier, plain = closed_loop_runs["heavier"], closed_loop_runs["plain"]
    assert np.max(np.abs(heavier.arrays["u"] - plain.arrays["u"])) > 0.1  # the mismatch shows in the commands
    m = measures(heavier)
    assert m["disturbances"]["mass_scale"] == 1.1
    assert m["contact_lost_fraction"] == 0 and m["force_settling_s"] <= 0.5
    assert m["force_max_error_N"] < FORCE_BAND_N and m["force_rms_error_N"] < 0.5  # within the band, offset-free


def test_the_mpc_tracks_the_force_and_the_circle_on_mujoco():
    m = measures(run(config(), quiet=True))  # a frictionless table
    assert m["status"] == "completed" and m["plant"]["engine"] == "mujoco"
    assert m["force_rms_error_N"] < 1.5 and m["circle_rms_error_m"] < 0.005
    assert m["contact_lost_periods_fraction"] == 0


@pytest.mark.parametrize(
    "argv, engine, scheme",
    [([], "mujoco", "newton"), (["--plant", "liftoff"], "liftoff", "newton"), (["--scheme", "rti"], "mujoco", "rti")],
    ids=["default plant", "--plant liftoff", "--scheme rti"],
)
def test_liftoff_mpc_writes_the_results_and_prints_the_measures(tmp_path, capsys, argv, engine, scheme):
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump({**SHORT, "mpc": {"horizon": 20, "duration": 0.3}}), encoding="utf-8")
    assert main(["mpc", str(path), "--out", str(tmp_path / "out"), "--json", *argv]) == 0
    m = json.loads(capsys.readouterr().out)
    keys = ("force_rms_error_N", "force_max_error_N", "force_step_rms_error_N", "circle_rms_error_m",
            "min_normal_force_N", "contact_lost_fraction", "contact_lost_periods_fraction", "force_settling_s",
            "tick_ms_median", "tick_ms_p95", "real_time_factor")  # fmt: skip
    assert all(k in m for k in keys) and m["status"] == "completed"
    assert m["plant"]["engine"] == engine
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["force.png", "path.png", "run.npz", "ticks.png"]
    assert results.load(tmp_path / "out" / "run.npz")["config"]["mpc"]["scheme"] == scheme


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--push", "arm_right_7_link:0,0:1:0.1"], "push force: expected 3 finite numbers"),
        (["--push", "arm_right_7_link:0,0,1"], "expected FRAME:FX,FY,FZ:T0:DT"),
        (["--push", "hand:0,0,1:1:0.1"], "hand"),
        (["--push", "arm_right_7_link:0,0,1:1:-2"], "a duration > 0"),
    ],
)
def test_bad_mpc_options_are_one_line(tmp_path, capsys, monkeypatch, argv, message):
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(SHORT), encoding="utf-8")

    def readings(*args, **kwargs):
        pytest.fail("the plant's readings compiled before its pushes' frames were checked")

    monkeypatch.setattr(mujoco_plant, "Readings", readings)
    assert main(["mpc", str(path), "--out", str(tmp_path / "out"), *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("liftoff: error:") and err.count("\n") == 1 and message in err


def test_a_gait_configuration_is_not_an_mpc_task(tmp_path, capsys):
    assert main(["mpc", "configs/anymal_trot.yaml", "--out", str(tmp_path)]) == 2
    assert "expected an MPC task (task: polishing or task: gait_mpc)" in capsys.readouterr().err


def test_an_unknown_task_names_the_mpc_tasks(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text("task: sanding\n", encoding="utf-8")
    assert main(["mpc", str(path), "--out", str(tmp_path / "out")]) == 2
    assert "expected an MPC task (task: polishing or task: gait_mpc)" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["mpc", "solve", "compare"])
def test_a_task_that_is_not_a_name_is_one_error_line(tmp_path, capsys, command):
    path = tmp_path / "s.yaml"
    path.write_text("task: [0.0, 1.0]\n", encoding="utf-8")
    assert main([command, str(path)]) == 2
    err = capsys.readouterr().err
    assert err == f"liftoff: error: {path}: task: expected a task's name, got a list [0.0, 1.0]\n"
