"""Gaits in a receding horizon: the windows of the whole run's OCP (the schedule shifted with
time, impulses included), the legged plant's touchdown (located within its step, one impulse
that stops the foot) and lift-off, a 1 s closed-loop trot that stays up, and ``liftoff mpc``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from liftoff import dynamics
from liftoff.problems import viewer
from liftoff.problems.cli import main
from liftoff.problems.files import ReadError
from liftoff.problems.mpc.gait_run import measures, run
from liftoff.problems.mpc.legged_plant import LeggedPlant
from liftoff.problems.tasks.config import ConfigError, load_config, parse_config
from liftoff.problems.tasks.gait_mpc import GaitMPCConfig, make_run, window
from liftoff.problems.tasks.polishing import PolishingConfig

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


def test_a_touchdown_is_located_in_its_step_and_stops_the_foot_once():
    model = dynamics.load("anymal")
    q = trot_q0()
    ground = float(np.mean([dynamics.frame_placement(model, q, f)[1][2] for f in FEET])) - 3e-4
    plant = LeggedPlant(model, FEET, ground, 0.7, lambda t: set(FEET), dt=1e-3)
    plant.start(q)  # the feet stand 0.3 mm above this ground: held where they are
    del plant.stance["LF_FOOT"]  # LF in the air, moving down at 0.5 m/s: it lands 0.6 ms into the step
    J = dynamics.frame_jacobian(model, q, "LF_FOOT", "LOCAL_WORLD_ALIGNED")[:3, 6:9]
    v = np.zeros(18)
    v[6:9] = np.linalg.solve(J, [0.0, 0.0, -0.5])
    tau = dynamics.rnea(model, q, np.zeros(18), np.zeros(18))[6:]
    q1, v1, f, _ = plant.step(0.0, q, v, tau)
    assert plant.touchdowns == 1 and "LF_FOOT" in plant.stance
    assert plant.stance["LF_FOOT"][2] == pytest.approx(ground, abs=1e-8)  # the event, not the step's end
    foot_velocity = dynamics.frame_velocity(model, q1, v1, "LF_FOOT", "LOCAL_WORLD_ALIGNED")[:3]
    assert np.linalg.norm(foot_velocity) < 1e-3  # the impulse stopped it (to the step's first order)
    assert f[2] > 0  # LF pushes on the ground after landing
    plant.step(1e-3, q1, v1, tau)
    assert plant.touchdowns == 1  # once
    plant.schedule = lambda t: set(FEET) - {"RH_FOOT"}
    plant.step(2e-3, q1, v1, tau)
    assert "RH_FOOT" not in plant.stance  # released by the plan


def trot_q0():
    return make_run(load_config(TROT, GaitMPCConfig)).ocp.q0


def test_a_one_second_trot_stays_up_and_moves_forward():
    config = load_config(TROT, GaitMPCConfig)
    m = measures(run(config, duration=1.0, quiet=True))
    assert not m["fell"]
    assert m["mean_forward_velocity_mps"] > 0.1  # 0.2 s standing, a half step, then 0.3 m/s
    assert m["max_foot_slip_m"] < 0.02 and m["touchdowns"] >= 6
    assert m["updates"] == 50 and m["update_iterations"] == 49


def test_liftoff_mpc_runs_a_gait(tmp_path, capsys):
    assert main(["mpc", str(TROT), "--duration", "0.2", "--out", str(tmp_path), "--json"]) == 0
    m = json.loads(capsys.readouterr().out)
    for key in ("fell", "mean_forward_velocity_mps", "max_cone_violation", "max_foot_slip_m", "tick_ms_median"):
        assert key in m
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == ["forces.png", "height.png", "run.npz", "ticks.png", "velocity.png"]
    shown = viewer.load(tmp_path / "run.npz")  # the viewer plays the run every 20 ms
    assert len(shown["times"]) == 10 and shown["q"].shape == (10, 19) and shown["forces"]["LF_FOOT"].shape == (9, 3)
    assert main(["view", str(tmp_path / "run.npz"), "--html", str(tmp_path / "run.html")]) == 0
    assert "<title>liftoff: anymal_trot_mpc</title>" in (tmp_path / "run.html").read_text()


def test_the_viewer_refuses_a_polishing_run(tmp_path):
    from liftoff.problems.mpc.results import save

    save(tmp_path / "p.npz", {"t": np.zeros(2)}, [], {}, parse_config({"task": "polishing"}, schema=PolishingConfig))
    with pytest.raises(ReadError, match="plays gait solves and gait MPC runs"):
        viewer.load(tmp_path / "p.npz")
