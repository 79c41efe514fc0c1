"""Gaits in a receding horizon: the windows of the whole run's OCP (the schedule shifted with
time, impulses included), liftoff's idealized legged plant's touchdown (located within its step,
one impulse that stops the foot) and lift-off, a 1 s closed-loop trot on it that stays up, the
trot's stand on MuJoCo (the feet carry the robot's weight), and ``liftoff mpc``."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from liftoff import dynamics
from liftoff.problems import viewer
from liftoff.problems.cli import main
from liftoff.problems.mpc.gait_run import measures, run
from liftoff.problems.mpc.plants.ideal_legged import IdealLeggedPlant
from liftoff.problems.tasks.config import ConfigError, load_config, parse_config
from liftoff.problems.tasks.gait_mpc import GaitMPCConfig, make_run, window

TROT = Path(__file__).resolve().parent.parent / "configs" / "anymal_trot_mpc.yaml"
FEET = ("LF_FOOT", "LH_FOOT", "RF_FOOT", "RH_FOOT")


@pytest.fixture(scope="module")
def trot():
    return make_run(load_config(TROT, GaitMPCConfig))


def test_the_command_is_half_a_step_per_swing(trot):
    assert trot.command_velocity() == pytest.approx(0.5 * 0.144 / 0.24, rel=1e-9)


@pytest.mark.parametrize("t", [0.0, 0.2, 0.26, 0.5, 1.24])
def test_a_window_is_the_run_from_the_contact_stage_at_its_time(trot, t):
    q, v = trot.ocp.q0 + 0.0, np.full(18, 0.1)
    ocp = window(trot, t, q, v)
    first = trot.contact_stages[round(t / 0.02)]
    assert ocp.stages[0] is trot.ocp.stages[first] and ocp.stages[0].kind == "contact"
    assert sum(s.kind == "contact" for s in ocp.stages) == 25
    assert ocp.stages == trot.ocp.stages[first : first + ocp.K]
    following = trot.ocp.stages[first + ocp.K]
    assert following.kind == "contact"  # the window ends before the next contact stage
    reference = next(term for term in following.costs if term.name == "state")
    np.testing.assert_array_equal(ocp.terminal_costs[0].q_ref, reference.q_ref)
    np.testing.assert_array_equal(ocp.v0, v)
    assert trot.schedule(t + 1e-4) == {c.frame for c in ocp.stages[0].contacts}


def test_the_schedule_moves_with_time_and_impulses_with_it(trot):
    """The run stands 0.2 s, then the diagonal pairs swing 0.24 s each; a window 20 ms later is
    the same stages one contact stage on, its touchdown impulse one stage earlier."""
    assert trot.schedule(0.1) == set(FEET)
    assert trot.schedule(0.3) == {"LH_FOOT", "RF_FOOT"}
    assert trot.schedule(0.5) == {"LF_FOOT", "RH_FOOT"}
    a, b = (window(trot, t, trot.ocp.q0, trot.ocp.v0) for t in (0.3, 0.32))
    impulses = [[k for k, s in enumerate(w.stages) if s.kind == "impulse"] for w in (a, b)]
    assert impulses[1] == [k - 1 for k in impulses[0]]
    assert a.stages[1:][: b.K - 1] == b.stages[: b.K - 1]


@pytest.mark.parametrize(
    "change, path, message",
    [
        ({"cycle_start": 9}, "mpc.cycle_start", "a phase index < 4"),
        ({"period": 0.03}, "mpc.period", "a multiple of gait.dt = 0.02"),
    ],
)
def test_mpc_settings_errors_name_the_key(change, path, message):
    import yaml

    data = yaml.safe_load(TROT.read_text())
    data["mpc"] = {**data["mpc"], **change}
    with pytest.raises(ConfigError) as error:
        parse_config(data, "t.yaml", GaitMPCConfig)
    assert error.value.path == path and message in str(error.value)


def test_a_touchdown_is_located_in_its_step_and_stops_the_foot_once(trot):
    model, q = trot.model, trot.ocp.q0
    ground = float(np.mean([dynamics.frame_placement(model, q, f)[1][2] for f in FEET])) - 3e-4
    plant = IdealLeggedPlant(model, FEET, ground, lambda t: set(FEET), dt=1e-3)
    v = np.zeros(18)
    plant.reset(q, v)  # the feet stand 0.3 mm above this ground: held where they are
    assert set(plant.stance) == set(FEET)
    del plant.stance["LF_FOOT"]  # LF in the air, moving down at 0.5 m/s: it lands 0.6 ms into the step
    J = dynamics.frame_jacobian(model, q, "LF_FOOT", "LOCAL_WORLD_ALIGNED")[:3, 6:9]
    v[6:9] = np.linalg.solve(J, [0.0, 0.0, -0.5])
    plant.v = v
    tau = dynamics.rnea(model, q, np.zeros(18), np.zeros(18))[6:]
    m = plant.step(0.0, tau)
    assert "LF_FOOT" in plant.stance
    landed = plant.stance["LF_FOOT"].copy()
    assert landed[2] == pytest.approx(ground, abs=1e-8)  # the event, not the step's end
    foot_velocity = dynamics.frame_velocity(model, m.q, m.v, "LF_FOOT", "LOCAL_WORLD_ALIGNED")[:3]
    assert np.linalg.norm(foot_velocity) < 1e-3  # the impulse stopped it (to the step's first order)
    reading = m.contacts["LF_FOOT"]
    assert reading.active and reading.force[2] > 0  # LF pushes on the ground after landing
    plant.step(1e-3, tau)
    np.testing.assert_array_equal(plant.stance["LF_FOOT"], landed)  # once: it stays where it landed
    plant.schedule = lambda t: set(FEET) - {"RH_FOOT"}
    m = plant.step(2e-3, tau)
    assert "RH_FOOT" not in plant.stance  # released by the plan
    assert not m.contacts["RH_FOOT"].active and not np.any(m.contacts["RH_FOOT"].force)


def engine(config, name):
    return replace(config, plant=replace(config.plant, engine=name))


def test_a_one_second_trot_on_the_idealized_plant_stays_up_and_moves_forward():
    m = measures(run(engine(load_config(TROT, GaitMPCConfig), "liftoff"), duration=1.0, quiet=True))
    assert m["status"] == "completed" and not m["fell"] and m["plant"]["engine"] == "liftoff"
    assert m["mean_forward_velocity_mps"] > 0.1  # 0.2 s standing, a half step, then 0.3 m/s
    assert m["command_velocity_mps"] == pytest.approx(0.3, rel=1e-9)
    # the plan puts two feet down at 0.44, 0.68 and 0.92 s: each lands within half a 20 ms knot of it
    assert m["touchdowns"] == m["touchdown_error_ms"]["count"] == 6
    assert m["touchdown_error_ms"]["max"] < 10.0
    assert m["slip_per_stance_m"]["max"] < 1e-3  # the idealized feet stick: they drift by the Baumgarte error only
    assert m["max_penetration_m"] < 1e-3
    assert m["updates"] == 50 and m["update_iterations"] == 49


def test_the_trot_stands_on_mujoco_with_the_feet_carrying_its_weight(trot):
    r = run(load_config(TROT, GaitMPCConfig), duration=0.3, quiet=True)
    m = measures(r)
    assert m["status"] == "completed" and not m["fell"] and m["plant"]["engine"] == "mujoco"
    a = r.arrays
    standing = (a["t"] >= 0.05) & (a["t"] < 0.2)  # the first 0.2 s stand, once the feet have settled
    assert np.all(a["contact_active"][standing])  # the four feet touch
    vertical = a["contact_force"][standing][..., 2].sum(axis=1)
    assert np.mean(vertical) == pytest.approx(trot.model.mass * 9.81, rel=0.15)
    numbers = [v for v in m.values() if isinstance(v, float)]
    numbers += [*m["slip_per_stance_m"].values(), *m["touchdown_error_ms"].values()]
    assert len(numbers) > 15 and np.all(np.isfinite(numbers))


def test_liftoff_mpc_runs_a_gait(tmp_path, capsys):
    argv = ["mpc", str(TROT), "--duration", "0.2", "--plant", "liftoff", "--out", str(tmp_path), "--json"]
    assert main(argv) == 0
    m = json.loads(capsys.readouterr().out)
    keys = ("fell", "mean_forward_velocity_mps", "max_cone_violation", "slip_per_stance_m", "touchdown_error_ms")
    assert all(key in m for key in (*keys, "touchdowns", "tick_ms_median"))
    assert m["status"] == "completed" and m["plant"]["engine"] == "liftoff"
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == ["forces.png", "height.png", "run.npz", "ticks.png", "velocity.png"]
    motion = viewer.load(tmp_path / "run.npz")  # the viewer plays the run every 20 ms, on its ground
    assert len(motion.times) == 10 and motion.q.shape == (10, 19) and motion.forces["LF_FOOT"][1].shape == (10, 3)
    assert motion.ground == pytest.approx(m["ground_m"])
    assert main(["view", str(tmp_path / "run.npz"), "--html", str(tmp_path / "run.html")]) == 0
    assert "<title>liftoff: anymal_trot_mpc</title>" in (tmp_path / "run.html").read_text()
