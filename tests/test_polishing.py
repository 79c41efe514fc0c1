"""The polishing task (seed 001 Sec. IV) and its closed loop: the configuration's checks, the
reduced Talos, the OCP's contact and references, both formulations at one optimum, the MPC
against the plant (force and circle tracking, a push, a heavier arm), and ``liftoff mpc``."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml

from liftoff import dynamics
from liftoff.ocp.formulation import Formulation
from liftoff.problems.cli import main
from liftoff.problems.mpc.plant import Push
from liftoff.problems.mpc.polishing_run import measures, run
from liftoff.problems.tasks.config import ConfigError, ProblemError, parse_config
from liftoff.problems.tasks.polishing import PolishingConfig, build_ocp, make_task
from liftoff.solvers.ipm import Options, solve

SHORT = {"task": "polishing", "mpc": {"duration": 1.0}, "costs": {"tool_position": 200.0}}


def config(**changes):
    data = {**SHORT}
    for key, value in changes.items():
        section, name = key.split("__")
        data[section] = {**data.get(section, {}), name: value}
    return parse_config(data, schema=PolishingConfig)


@pytest.fixture(scope="module")
def table():
    return make_task(config())


@pytest.mark.parametrize(
    "data, path, message",
    [
        ({"surface": {"normal": "up"}}, "surface.normal", "expected x or y or z"),
        ({"mpc": {"period": 0.015}}, "mpc.period", "a multiple of mpc.dt = 0.01"),
        ({"plant": {"dt": 0.003}}, "plant.dt", "a divisor of mpc.period = 0.01"),
        ({"costs": {"position_weights": [1, 2]}}, "costs.position_weights", "6 weights"),
        ({"task": "sanding"}, "task", "expected polishing"),
        ({"surface": {"force": -30}}, "surface.force", "a number > 0"),
    ],
)
def test_configuration_errors_name_the_key(data, path, message):
    with pytest.raises(ConfigError) as error:
        parse_config({**SHORT, **data}, "p.yaml", PolishingConfig)
    assert error.value.path == path and message in str(error.value)


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"controlled": ["torso_1_joint", "arm_rigth_1_joint"]}, "no joint 'arm_rigth_1_joint'; did you mean"),
        ({"tool": "arm_right_9_link"}, "tool: talos has no frame 'arm_right_9_link'; did you mean"),
        ({"posture": "sitting"}, "talos has no configuration 'sitting' (known: half_sitting"),
        ({"plant": {"scaled_joints": ["leg_left_1_joint"]}}, "'leg_left_1_joint' is not a controlled joint"),
    ],
)
def test_names_the_robot_does_not_have_are_task_errors(changes, message):
    data = {**SHORT, **changes}
    if "controlled" in changes:
        data["costs"] = {**SHORT["costs"], "position_weights": [1.0, 1.0]}
    with pytest.raises(ProblemError, match=message.replace("(", r"\(")):
        make_task(parse_config(data, schema=PolishingConfig))


def test_the_reduced_talos_moves_the_controlled_joints_from_half_sitting(table):
    model = table.model
    assert (model.nq, model.nv, model.has_free_flyer) == (6, 6, False)
    assert model.joint_names == table.config.controlled
    np.testing.assert_allclose(table.q0, [0, 0.006761, -0.25847, -0.173046, 0.0002, -0.525366])
    full = dynamics.load("talos", floating_base=False)
    half_sitting = dynamics.robots.named_configuration("talos", "half_sitting")
    q_full = np.array([half_sitting.get(j, 0.0) for j in full.joint_names])
    _, p_full = dynamics.frame_placement(full, q_full, "arm_right_7_link")
    np.testing.assert_allclose(table.p0, p_full, atol=1e-12)  # the locked joints sit where the posture puts them


def test_the_ocp_presses_along_the_normal_and_follows_the_circle(table):
    ocp = build_ocp(table, t0=0.5)
    stage = ocp.stages[3]
    (contact,) = stage.contacts
    assert (contact.frame, contact.kind, contact.reference.name) == ("arm_right_7_link", "z", "LOCAL_WORLD_ALIGNED")
    np.testing.assert_allclose(contact.placement, table.p0)
    costs = {t.name: t for t in stage.costs}
    np.testing.assert_allclose(costs["force"].reference, [30.0])
    # knot 3 is at t = 0.53 s: the circle through p0 (start angle 0) in the x-y plane, radius 7 cm, 1 rad/s
    angle = 0.53
    expected = table.p0 + 0.07 * np.array([np.cos(angle) - 1, np.sin(angle), 0.0])
    np.testing.assert_allclose(costs["tool"].reference, expected, atol=1e-12)
    np.testing.assert_allclose(costs["tool"].weights, [200.0, 200.0, 0.0])
    np.testing.assert_allclose(costs["orientation"].reference, table.R0)  # the wrist keeps its initial orientation
    np.testing.assert_allclose(costs["orientation"].weights, [0.1, 0.1, 0.1])
    vertical = make_task(config(surface__normal="-y", circle__start_angle=-np.pi / 2))
    (contact,) = build_ocp(vertical).stages[0].contacts
    assert contact.kind == "y"
    costs = {t.name: t for t in build_ocp(vertical, t0=np.pi / 2).stages[0].costs}
    np.testing.assert_allclose(costs["force"].reference, [-30.0])  # the board pushes along -y
    # a quarter turn from the bottom of a circle in the x-z plane: its +x side, r above the start
    np.testing.assert_allclose(costs["tool"].reference, vertical.p0 + [0.07, 0.0, 0.07], atol=1e-12)


@pytest.mark.parametrize("torque_filter", [5.0, None], ids=["torque state", "torque control"])
def test_both_formulations_reach_one_optimum_with_the_force_tracked(torque_filter):
    table = make_task(parse_config({**SHORT, "torque_filter": torque_filter}, schema=PolishingConfig))
    ocp = build_ocp(table)
    assert ocp.nx == (18 if torque_filter else 12)
    results = {name: solve(Formulation(ocp, name), Options(barrier=1e-3)) for name in ("lifted", "nonlifted")}
    assert all(r.converged for r in results.values())
    assert results["lifted"].cost == pytest.approx(results["nonlifted"].cost, rel=1e-6)
    np.testing.assert_allclose(results["lifted"].iterate.q, results["nonlifted"].iterate.q, atol=1e-6)
    trajectory = Formulation(ocp, "lifted").trajectories(results["lifted"].iterate)
    force = table.normal_force(np.array(trajectory["f"]))
    np.testing.assert_allclose(force, 30.0, atol=0.05)


@pytest.fixture(scope="module")
def closed_loop_runs():
    """One second on the table: undisturbed (with the torque filter and without), pushed up
    20 N for 0.1 s at 0.4 s, heavier arm."""
    cfg = config()
    return {
        "plain": run(cfg, quiet=True),
        "unfiltered": run(parse_config({**SHORT, "torque_filter": None}, schema=PolishingConfig), quiet=True),
        "push": run(cfg, pushes=[Push("arm_right_7_link", (0.0, 0.0, 20.0), 0.4, 0.1)], quiet=True),
        "heavier": run(cfg, mass_scale=1.1, quiet=True),
    }


@pytest.mark.parametrize("case", ["plain", "unfiltered"])
def test_the_mpc_tracks_the_force_and_the_circle(closed_loop_runs, case):
    m = measures(closed_loop_runs[case])
    assert m["force_rms_error_N"] < 0.5
    assert m["circle_rms_error_m"] < 0.005
    assert not m["contact_lost"] and m["min_normal_force_N"] > 25
    assert m["updates"] == 100 and m["update_iterations"] == 99  # the first solve, then one iteration per update


def test_the_force_returns_after_a_push_and_with_a_heavier_arm(closed_loop_runs):
    pushed = closed_loop_runs["push"]
    a = pushed.arrays
    during = (a["t"] >= 0.4) & (a["t"] < 0.5)
    assert np.all(a["force"][during] < 20.5)  # the push lifts the tool: the surface holds less
    m = measures(pushed)
    assert not m["contact_lost"] and m["force_settling_s"] <= 0.5
    heavier = measures(closed_loop_runs["heavier"])
    assert not heavier["contact_lost"] and heavier["force_settling_s"] <= 0.5
    assert 0.5 < heavier["force_rms_error_N"] < 5.0  # the mismatch shows, within the band


def test_liftoff_mpc_writes_the_results_and_prints_the_measures(tmp_path, capsys):
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump({**SHORT, "mpc": {"horizon": 20, "duration": 0.3}}), encoding="utf-8")
    assert main(["mpc", str(path), "--out", str(tmp_path / "out"), "--json"]) == 0
    m = json.loads(capsys.readouterr().out)
    keys = ("force_rms_error_N", "circle_rms_error_m", "min_normal_force_N", "contact_lost", "tick_ms_median",
            "tick_ms_p95", "real_time_factor")  # fmt: skip
    assert all(k in m for k in keys) and m["status"] == "completed"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["force.png", "path.png", "run.npz", "ticks.png"]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--push", "arm_right_7_link:0,0:1:0.1"], "push force: expected 3 finite numbers"),
        (["--push", "arm_right_7_link:0,0,1"], "expected FRAME:FX,FY,FZ:T0:DT"),
        (["--push", "hand:0,0,1:1:0.1"], "hand"),
        (["--push", "arm_right_7_link:0,0,1:1:-2"], "a duration > 0"),
    ],
)
def test_bad_mpc_options_are_one_line(tmp_path, capsys, argv, message):
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(SHORT), encoding="utf-8")
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
