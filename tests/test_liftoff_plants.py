"""liftoff's plants (``plant.engine: liftoff``) under their three contact models (``plant.contact``):
the keys and their errors; ANYmal standing on the unilateral plant with PD-held joints (the feet
carry the weight and do not slide, a lifted foot reads no contact); the polishing pad pressed on
the table (the force at rest, the soft contact's penetration, the unilateral contact that cannot
pull where the rigid bilateral idealization does, a push); a short closed loop of the polishing MPC
on the unilateral plant."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import yaml

from liftoff import dynamics
from liftoff.problems.cli import main
from liftoff.problems.mpc.disturbances import Push
from liftoff.problems.mpc.gait_run import make_plant as legged_plant
from liftoff.problems.mpc.locomotion import GaitController
from liftoff.problems.mpc.plants.ideal import IdealPlant
from liftoff.problems.mpc.plants.ideal_legged import IdealLeggedPlant
from liftoff.problems.mpc.plants.mujoco_model import PlantError
from liftoff.problems.mpc.plants.simulated import SimulatorPlant, urdf_spheres
from liftoff.problems.mpc.polishing_run import make_plant as polishing_plant
from liftoff.problems.mpc.polishing_run import measures, run
from liftoff.problems.tasks.config import ConfigError, load_config, parse_config
from liftoff.problems.tasks.gait_mpc import GaitMPCConfig
from liftoff.problems.tasks.polishing import TOOL_FRAME, PolishingConfig, make_task

CONFIGS = Path(__file__).resolve().parent.parent / "configs"
G0 = 9.81
PD = (300.0, 8.0)  # ANYmal's joints held around the standing posture [N m/rad, N m s/rad]
LIFTED = {"LF_HFE": 1.0, "LF_KFE": -1.6}  # the left front leg folded: its foot off the ground


# ----------------------------------------------------------------------------- the keys


def polishing_config(contact, **top):
    return parse_config({"task": "polishing", **top, "plant": {"engine": "liftoff", "contact": contact}}, "<config>",
                        PolishingConfig)  # fmt: skip


def test_plant_contact_reads_as_a_name_or_a_section_and_the_shipped_configurations_keep_the_idealization():
    assert polishing_config("unilateral").plant.contact == polishing_config({"model": "unilateral"}).plant.contact
    soft = polishing_config({"model": "soft", "stiffness": "2e4", "damping": 50, "slip": 0.1}).plant.contact
    assert (soft.model, soft.stiffness, soft.damping, soft.slip) == ("soft", 2e4, 50.0, 0.1)
    assert polishing_config("unilateral").plant.contact.solver == "pgs"  # ADMM stalls on the trot's touchdowns
    mujoco = polishing_config({"solref": [0.05, 1]}).plant.contact
    assert mujoco.model == "rigid_bilateral" and mujoco.solref == (0.05, 1.0)  # one section, both engines' keys
    for path in sorted(CONFIGS.glob("*_mpc.yaml")) + sorted(CONFIGS.glob("polishing_*.yaml")):
        schema = GaitMPCConfig if path.name.endswith("_mpc.yaml") else PolishingConfig
        contact = load_config(path, schema).plant.contact  # valid, as before the key
        if "contact" not in yaml.safe_load(path.read_text()).get("plant", {}):
            assert contact.model == "rigid_bilateral"  # the liftoff engine's default: the idealized plant, as before


@pytest.mark.parametrize(
    "contact, message",
    [
        ("sticky", "<config>: plant.contact: expected rigid_bilateral or unilateral or soft, got 'sticky'"),
        ({"model": "sticky"}, "<config>: plant.contact.model: expected rigid_bilateral or unilateral or soft, got "
                              "'sticky'"),
        ({"model": "soft", "stiffness": 0}, "<config>: plant.contact.stiffness: expected a number > 0, got 0.0"),
        ({"damping": -1}, "<config>: plant.contact.damping: expected a number >= 0, got -1.0"),
        (3, "<config>: plant.contact: expected a mapping or a string, got 3"),
        ({"solver": "newton"}, "<config>: plant.contact.solver: expected pgs or admm, got 'newton'"),
    ],
)  # fmt: skip
def test_a_bad_plant_contact_is_one_line_with_its_key_path(contact, message):
    with pytest.raises(ConfigError) as error:
        polishing_config(contact)
    assert str(error.value) == message


def test_liftoff_mpc_refuses_a_bad_plant_contact_in_one_line(tmp_path, capsys):
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump({"task": "polishing", "plant": {"engine": "liftoff", "contact": "soft-ish"}}))
    assert main(["mpc", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("plant.contact: expected rigid_bilateral or unilateral or soft, got 'soft-ish'")
    assert len(err.splitlines()) == 1


# ----------------------------------------------------------------------------- ANYmal


def anymal_config(contact):
    config = load_config(CONFIGS / "anymal_trot_mpc.yaml", GaitMPCConfig)
    return replace(config, plant=replace(config.plant, engine="liftoff", contact=contact))


@pytest.fixture(scope="module")
def standing():
    """ANYmal on the unilateral plant, its joints PD-held at the standing posture for 0.25 s,
    then its left front leg folded for 0.08 s: the controller, the plant, the ground, the
    measurements."""
    config = anymal_config("unilateral")
    controller = GaitController(config)
    plant, ground = legged_plant(config, controller)
    model, q0 = controller.model, controller.q0
    folded = q0.copy()
    for joint, value in LIFTED.items():
        folded[model.idx_q[model.joint_id(joint)]] = value
    measurements = [plant.reset(q0, np.zeros(model.nv))]
    for k in range(330):
        target, m = (q0 if k < 250 else folded), measurements[-1]
        measurements.append(plant.step(k * plant.dt, PD[0] * (target[7:] - m.q[7:]) - PD[1] * m.v[6:]))
    return controller, plant, ground, measurements


def test_the_unilateral_plant_stands_anymal_on_the_urdfs_foot_spheres(standing):
    controller, plant, ground, measurements = standing
    assert isinstance(plant, SimulatorPlant) and plant.engine == "liftoff" and "unilateral" in plant.description
    spheres = urdf_spheres("anymal", controller.feet)
    assert {s.radius for s in spheres.values()} == {0.031}  # the URDF's foot spheres, 2.3 cm above the foot frames
    np.testing.assert_allclose(spheres["LF_FOOT"].offset, [0.0, 0.0, 0.02325])
    mg = controller.model.mass * G0
    for k, m in enumerate(measurements[1:251], start=1):  # standing: from zero torques, the PD settles in 0.18 s
        assert all(r.active for r in m.contacts.values())
        normal = sum(r.force[2] for r in m.contacts.values())
        if k >= 180:
            assert abs(normal - mg) <= 0.01 * mg  # the feet carry the weight
        for r in m.contacts.values():
            assert np.linalg.norm(r.force[:2]) <= 0.5 * r.force[2] * (1 + 1e-9)  # in the cone (friction 0.5)
            assert r.depth < 1e-8
            if k >= 100:  # once the legs have stopped sinking, the feet's material points do not slide
                assert np.linalg.norm(r.velocity) < 1e-6
    travel = [np.linalg.norm(measurements[250].contacts[f].position - measurements[100].contacts[f].position)
              for f in controller.feet]  # fmt: skip
    assert max(travel) < 5e-5  # the contact points move only as the spheres roll a little
    assert measurements[249].q[2] - ground > 0.4  # it stands


def test_a_lifted_foot_reads_no_contact_and_its_frame_position(standing):
    controller, plant, ground, measurements = standing
    m = measurements[-1]
    lifted = m.contacts["LF_FOOT"]
    _, frame = dynamics.frame_placement(controller.model, m.q, "LF_FOOT")
    assert not lifted.active and np.all(lifted.force == 0) and lifted.depth == 0
    np.testing.assert_allclose(lifted.position, frame, atol=1e-12)
    assert frame[2] - ground > 0.02  # well off the ground
    assert all(m.contacts[f].active for f in ("LH_FOOT", "RF_FOOT", "RH_FOOT"))


def test_a_soft_plant_step_above_the_stability_bound_is_refused_in_one_line():
    """ANYmal's loaded feet have a small tangential effective mass: the explicit regularized friction
    (slip 0.01 m/s) is unstable at 1 kHz; the plant says so with its bound, before any step."""
    config = anymal_config("soft")
    with pytest.raises(PlantError) as error:
        legged_plant(config, GaitController(config))
    message = str(error.value)
    assert message.startswith("plant.dt 0.001 s is above the stability bound 7.68e-05 s of the soft contact (its ")
    assert "regularized friction, slip 0.01 m/s, under 74.7 N on an effective mass of 0.144 kg)" in message
    assert len(message.splitlines()) == 1
    slower = replace(config, plant=replace(config.plant, dt=5e-5))  # a step below the bound: accepted
    controller = GaitController(slower)
    plant, _ = legged_plant(slower, controller)
    assert plant.soft_time_step_bound(controller.q0, 74.7)[0] == pytest.approx(7.68e-5, rel=1e-3)


def test_the_rigid_bilateral_contact_is_the_idealized_plant_and_the_solver_is_chosen():
    config = anymal_config("rigid_bilateral")
    plant, ground = legged_plant(config, GaitController(config))
    assert type(plant) is IdealLeggedPlant and "idealized" in plant.description
    task = make_task(polishing_config("rigid_bilateral"))
    plant = polishing_plant(task.config, task)
    assert type(plant) is IdealPlant and "idealized" in plant.description
    task = make_task(polishing_config({"model": "unilateral", "solver": "admm"}))
    plant = polishing_plant(task.config, task)
    assert plant.sim.solver == "admm" and "ADMM" in plant.description


# ----------------------------------------------------------------------------- polishing


def pressed(contact, steps=300, pushes=(), **top):
    """The pad held pressing on the table (the torques that press 30 N at rest) for ``steps`` steps:
    the task, the plant, the last measurement."""
    task = make_task(polishing_config(contact, **top))
    plant = polishing_plant(task.config, task, pushes)
    filtered = task.config.torque_filter is not None
    m = plant.reset(task.q0, task.v0, task.u_pressing if filtered else None)
    for k in range(steps):
        m = plant.step(k * plant.dt, task.u_pressing)
    return task, plant, m


@pytest.mark.parametrize("contact", ["unilateral", "soft", "rigid_bilateral"])
def test_the_pad_pressed_with_30_n_reads_30_n_at_rest(contact):
    task, plant, m = pressed(contact)
    reading = m.contacts["tool"]
    assert reading.active
    tolerance = 0.1 if contact == "soft" else 1e-6  # the soft contact still rings at 0.3 s (damping ratio 0.1)
    np.testing.assert_allclose(reading.force, 30.0 * task.normal, atol=tolerance)
    if contact == "soft":  # its penetration is f / k
        np.testing.assert_allclose(reading.depth, 30.0 / task.config.plant.contact.stiffness, rtol=0.01)
    else:
        assert reading.depth < 1e-9


def test_a_push_into_the_table_is_carried_by_the_unilateral_contact():
    push = Push(TOOL_FRAME, (0.0, 0.0, -20.0), 0.2, 1.0)  # on the pad's contact point from 0.2 s on, into the table
    task, plant, m = pressed("unilateral", steps=250, pushes=[push])
    np.testing.assert_allclose(task.normal_force(m.contacts["tool"].force), 50.0, atol=1e-6)


def test_the_unilateral_contact_cannot_pull_and_the_rigid_bilateral_idealization_does():
    """Without the torque filter, from rest pressing, the arm pulls the pad 20 N off the table."""
    readings = {}
    for contact in ("unilateral", "rigid_bilateral"):
        task, plant, m = pressed(contact, steps=50, torque_filter=None)
        J = dynamics.frame_jacobian(task.model, task.q0, TOOL_FRAME, "LOCAL_WORLD_ALIGNED")[:3]
        pull = task.u_gravity + J.T @ (20.0 * task.normal)
        for k in range(50, 70):
            m = plant.step(k * plant.dt, pull)
            readings.setdefault(contact, []).append((m.contacts["tool"], m.q))
    for reading, q in readings["unilateral"]:
        _, frame = dynamics.frame_placement(task.model, q, TOOL_FRAME)
        assert not reading.active and np.all(reading.force == 0)
        np.testing.assert_allclose(reading.position, frame, atol=1e-12)
    assert frame @ task.normal - task.surface_point() @ task.normal > 1e-4  # the pad left the table
    for reading, _ in readings["rigid_bilateral"]:
        assert reading.active
        np.testing.assert_allclose(task.normal_force(reading.force), -20.0, atol=1e-6)  # pulled, as reported


def test_the_polishing_mpc_closes_the_loop_on_the_unilateral_plant():
    config = parse_config(
        {
            "task": "polishing",
            "costs": {"tool_position": 200.0},
            "plant": {"engine": "liftoff", "contact": "unilateral"},
        },
        schema=PolishingConfig,
    )
    r = run(config, duration=0.2, quiet=True)
    m = measures(r)
    assert m["status"] == "completed" and "unilateral" in m["plant"]["description"]
    assert m["plant"]["contact_solver_failures"] == 0  # every step's contact problem solved to 1e-10
    assert m["contact_lost_fraction"] == 0
    assert np.all(np.abs(r.arrays["force"][-50:] - 30.0) < 1.0)  # the last 50 ms within 1 N of the target
