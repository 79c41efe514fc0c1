"""The MuJoCo model generated from the URDF the controller reads, held against liftoff's model:
mass, joint-space inertia, generalized gravity and frame placements at random configurations;
the conventions converted in one place (quaternion order, the free joint's velocity frames,
MuJoCo's ``qacc``); the plant's readings, pushes and model mismatch; its errors."""

from __future__ import annotations

import sys
import types

import mujoco
import numpy as np
import pytest
from conftest import HeldPolicy

from liftoff import dynamics
from liftoff.dynamics.robots import named_configuration
from liftoff.problems.mpc.disturbances import Disturbances, Push, scaled_model
from liftoff.problems.mpc.loop import Divergence, closed_loop
from liftoff.problems.mpc.plants import ROW, mujoco_readings
from liftoff.problems.mpc.plants import mujoco_model as mm
from liftoff.problems.mpc.plants.mujoco_plant import MujocoPlant
from liftoff.problems.mpc.policy import Policy, PolicyKernel

RELATIVE = 1e-6  # the tolerance; the placeholder inertias repaired are 1e-6 of the model's


def talos_arm():
    """The polishing task's reduced Talos: the torso and right arm, the rest locked at half sitting."""
    posture = named_configuration("talos", "half_sitting")
    full = dynamics.load("talos", floating_base=False)
    controlled = ("torso_1_joint", "torso_2_joint", "arm_right_1_joint", "arm_right_2_joint")
    locked = {j: posture.get(j, 0.0) for j in full.joint_names if j not in controlled}
    return "talos", dynamics.load("talos", floating_base=False, locked_joints=locked), locked


CASES = {
    "anymal": lambda: ("anymal", dynamics.load("anymal"), None),
    "talos": lambda: ("talos", dynamics.load("talos"), None),
    "talos arm": talos_arm,
}


@pytest.fixture(scope="module", params=sorted(CASES))
def generated(request):
    robot, model, locked = CASES[request.param]()
    return model, mm.build(robot, model, locked)


def velocity_map(robot, q) -> np.ndarray:
    """``T (mj.nv, nv)``: MuJoCo's velocities of liftoff's, ``qvel = T v`` (the free joint's linear
    velocity turned to the world)."""
    T = np.zeros((robot.mj.nv, robot.model.nv))
    T[robot.dof_index, np.arange(robot.model.nv)] = 1.0
    if robot.free:
        T[:3, :3] = dynamics.spatial.quat_to_rotation(q[3:7][:, None])[:, :, 0]
    return T


def test_the_generated_model_is_liftoffs(generated):
    model, robot = generated
    mj, data, rng = robot.mj, mujoco.MjData(robot.mj), np.random.default_rng(0)
    moving = [b for b in range(1, mj.nbody) if mj.body_weldid[b] != 0]
    assert sum(mj.body_mass[moving]) == pytest.approx(model.mass, rel=RELATIVE)
    bodies = [name for name, kind in zip(model.frame_names, model.frame_types) if kind == "body"]
    for q in dynamics.random_configuration(model, rng, 5):
        data.qpos[:], data.qvel[:] = robot.to_mujoco(q, np.zeros(model.nv))
        mujoco.mj_forward(mj, data)
        M = np.zeros((mj.nv, mj.nv))
        mujoco.mj_fullM(mj, data, M)
        T = velocity_map(robot, q)
        reference = dynamics.crba(model, q)
        np.testing.assert_allclose(T.T @ M @ T, reference, atol=RELATIVE * np.abs(reference).max())
        gravity = dynamics.generalized_gravity(model, q)
        np.testing.assert_allclose(T.T @ data.qfrc_bias, gravity, atol=RELATIVE * np.abs(gravity).max())
        for name in bodies:
            R, p = dynamics.frame_placement(model, q, name)
            b = mj.body(name).id
            np.testing.assert_allclose(data.xpos[b], p, atol=1e-12)
            np.testing.assert_allclose(data.xmat[b].reshape(3, 3), R, atol=1e-12)


def test_the_state_and_the_acceleration_convert_in_one_place():
    """Round trips, MuJoCo's quaternion order and world-frame linear velocity, and ``qacc``: a
    free fall under random torques gives liftoff's ABA."""
    model = dynamics.load("anymal")
    robot = mm.build("anymal", model, joint_friction=False)
    rng = np.random.default_rng(1)
    q = dynamics.random_configuration(model, rng)
    v, tau = rng.standard_normal(model.nv), rng.standard_normal(model.nv - 6)
    qpos, qvel = robot.to_mujoco(q, v)
    np.testing.assert_allclose(qpos[3:7], np.roll(q[3:7], 1) / np.linalg.norm(q[3:7]))
    R = dynamics.spatial.quat_to_rotation(q[3:7][:, None])[:, :, 0]
    np.testing.assert_allclose(qvel[:3], R @ v[:3], atol=1e-14)
    q_back, v_back = robot.from_mujoco(qpos, qvel)
    np.testing.assert_allclose(q_back, q / np.r_[1, 1, 1, [np.linalg.norm(q[3:7])] * 4, np.ones(12)], atol=1e-14)
    np.testing.assert_allclose(v_back, v, atol=1e-14)
    data = mujoco.MjData(robot.mj)
    data.qpos[:], data.qvel[:] = qpos, qvel
    data.ctrl[robot.actuators] = tau
    mujoco.mj_forward(robot.mj, data)
    *_, a = robot.from_mujoco(data.qpos, data.qvel, data.qacc)
    expected = dynamics.aba(model, q_back, v, np.concatenate((np.zeros(6), tau)))
    np.testing.assert_allclose(a, expected, atol=1e-6 * np.abs(expected).max())


def test_placeholder_inertias_are_repaired_in_one_place():
    import xml.etree.ElementTree as ET

    from liftoff.dynamics.robots import robot_urdf

    root = ET.parse(robot_urdf("anymal")).getroot()
    assert mm.repair_inertias(root) == ["base"]  # 1e-6 in every entry: not positive definite
    inertia = next(link for link in root.iter("link") if link.get("name") == "base").find("inertial/inertia")
    assert [float(inertia.get(k)) for k in ("ixy", "ixz", "iyz")] == [0.0, 0.0, 0.0]


def test_the_urdfs_damping_and_friction_and_effort_limits_are_in():
    robot, model, locked = talos_arm()
    generated = mm.build(robot, model, locked)
    dofs = generated.dof_index
    np.testing.assert_array_equal(generated.mj.dof_damping[dofs], model.damping)
    np.testing.assert_array_equal(generated.mj.dof_frictionloss[dofs], model.friction)
    np.testing.assert_array_equal(generated.mj.actuator_ctrlrange[generated.actuators, 1], model.effort_limit)
    off = mm.build(robot, model, locked, joint_friction=False)
    assert not np.any(off.mj.dof_damping) and not np.any(off.mj.dof_frictionloss)
    filtered = mm.build(robot, model, locked, torque_filter=5.0)
    assert filtered.filtered and np.allclose(filtered.mj.actuator_dynprm[:, 0], 1 / (2 * np.pi * 5.0))


def standing_anymal(surfaces_friction=0.7, **kw):
    model = dynamics.load("anymal")
    q = np.array([0, 0, 0.4792, 0, 0, 0, 1, -0.1, 0.7, -1.0, -0.1, -0.7, 1.0, 0.1, 0.7, -1.0, 0.1, -0.7, 1.0])
    feet = ("LF_FOOT", "LH_FOOT", "RF_FOOT", "RH_FOOT")
    bare = mm.build("anymal", model)
    ground = mm.lowest_point(bare, q, [g for f in feet for g in mm.body_geoms(bare, f)])
    robot = mm.build(
        "anymal",
        model,
        surfaces=(mm.Surface("ground", "plane", np.array([0, 0, ground]), friction=surfaces_friction),),
        **kw,
    )
    return model, q, feet, robot


def test_standing_feet_carry_the_weight_and_report_where():
    model, q0, feet, robot = standing_anymal()
    plant = MujocoPlant(robot, {f: (f, mm.body_geoms(robot, f)) for f in feet})
    measurement = plant.reset(q0, np.zeros(model.nv))
    for k in range(1000):  # PD-held joints, 1 s
        measurement = plant.step(k * plant.dt, 80 * (q0[7:] - measurement.q[7:]) - 2 * measurement.v[6:])
    readings = measurement.contacts
    assert all(r.active for r in readings.values())
    total = sum(r.force for r in readings.values())
    assert total[2] == pytest.approx(model.mass * 9.81, rel=0.05)  # the adapters' cylinders may touch too
    for foot, reading in readings.items():
        _, p = dynamics.frame_placement(model, measurement.q, foot)
        assert np.linalg.norm(reading.position[:2] - p[:2]) < 0.03 and reading.depth < 0.01  # the sphere and the leg


def reading_by_contact(plant, geoms):
    """One named contact's reading summed contact by contact over MuJoCo's list: the force on
    ``geoms`` from the ground, its normal-weighted contact point and material-point velocity, the
    deepest penetration (the oracle of the plant's vectorized sums)."""
    m, d = plant.mj, plant.data
    force, moment, sliding, weight, depth = np.zeros(3), np.zeros(3), np.zeros(3), 0.0, 0.0
    for i in range(d.ncon):
        c = d.contact[i]
        g1, g2 = int(c.geom1), int(c.geom2)
        if g1 not in plant.surfaces or g2 not in geoms:  # the generated models list the ground first
            assert g1 not in geoms
            continue
        wrench, twist = np.zeros(6), np.zeros(6)
        mujoco.mj_contactForce(m, d, i, wrench)
        mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_GEOM, g2, twist, 0)
        normal = abs(wrench[0])
        force += c.frame.reshape(3, 3).T @ wrench[:3]
        moment += normal * c.pos
        sliding += normal * (twist[3:] + np.cross(twist[:3], c.pos - d.geom_xpos[g2]))
        weight, depth = weight + normal, max(depth, -float(c.dist))
    return force, moment / weight, sliding / weight, depth


def test_the_readings_sum_mujocos_contacts_of_each_foot():
    model, q0, feet, robot = standing_anymal()
    contacts = {f: (f, mm.body_geoms(robot, f)) for f in feet}
    plant = MujocoPlant(robot, contacts)
    v0 = np.zeros(model.nv)
    v0[:2] = (0.8, -0.5)  # the feet slide
    measurement = plant.reset(q0, v0)
    for k in range(30):
        measurement = plant.step(k * plant.dt, 80 * (q0[7:] - measurement.q[7:]) - 2 * measurement.v[6:])
        for foot, reading in measurement.contacts.items():
            if not reading.active:
                continue
            force, position, velocity, depth = reading_by_contact(plant, set(contacts[foot][1]))
            np.testing.assert_allclose(reading.force, force, rtol=1e-12, atol=1e-9)
            np.testing.assert_allclose(reading.position, position, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(reading.velocity, velocity, rtol=1e-12, atol=1e-12)
            assert reading.depth == pytest.approx(depth, rel=1e-12)
    assert np.linalg.norm(measurement.contacts["LF_FOOT"].velocity[:2]) > 0.05  # sliding readings were compared


def test_the_compiled_readings_are_the_references():
    """mujoco_readings.c against the readings in Python at every step of a landing with sliding
    feet: feet in the air (their frames after the step), touching, several geoms per foot."""
    model, q0, feet, robot = standing_anymal()
    plant = MujocoPlant(robot, {f: (f, mm.body_geoms(robot, f)) for f in feet})
    assert plant.readings.compiled
    up, v0 = q0.copy(), np.zeros(model.nv)
    up[2], v0[:2] = up[2] + 0.03, (0.8, -0.5)
    measurement, states = plant.reset(up, v0), set()
    for k in range(120):
        measurement = plant.step(k * plant.dt, 80 * (q0[7:] - measurement.q[7:]) - 2 * measurement.v[6:])
        compiled, reference = plant.readings(plant.data), plant.readings.reference(plant.data)
        np.testing.assert_allclose(compiled, reference, rtol=1e-14, atol=1e-14)
        states |= set(compiled[:, 0].tolist())
    assert states == {0.0, 1.0}  # both kinds of reading were compared


def landing_plants(filtered, disturbances, n=2):
    """``n`` plants of ANYmal (with a torque filter if ``filtered``) dropped 3 cm with sliding
    feet, their first measurements, and a compiled PD policy about the standing configuration."""
    model, q0, feet, robot = standing_anymal(torque_filter=40.0 if filtered else None)
    plants = [MujocoPlant(robot, {f: (f, mm.body_geoms(robot, f)) for f in feet}, disturbances) for _ in range(n)]
    up, v0, nu = q0.copy(), np.zeros(model.nv), model.nv - 6
    up[2], v0[:2] = up[2] + 0.03, (0.8, -0.5)
    ntau, gravity = (nu, 5.0) if filtered else (0, 0.0)
    measurements = [p.reset(up, v0, np.full(ntau, gravity)) for p in plants]
    K = np.zeros((nu, 2 * model.nv + ntau))
    K[:, 6:18], K[:, 24:36] = -80 * np.eye(nu), -2 * np.eye(nu)
    plan = (np.stack([q0, q0]), np.zeros((2, model.nv)), np.zeros((2, ntau)))
    policy = PolicyKernel(model, nu, ntau, quiet=True).bind(Policy(model, 0.0, 0.004, *plan, np.full(nu, 1.0), K))
    return model, up, plants, measurements, policy


@pytest.mark.parametrize("filtered", [False, True])
def test_compiled_steps_are_the_plant_s_steps_one_at_a_time(filtered):
    """MujocoPlant.run (mujoco_steps.c) against the policy and plant.step at each step of a
    landing with sliding feet: commands with the torque bias and noise, states on the free flyer's
    manifold, the filter's torques and the readings, equal to the bit; stopped after the step whose
    state crosses a limit, which it reports as not checked."""
    disturbances = Disturbances(torque_noise=0.5, torque_bias=np.linspace(-1.0, 1.0, 12), seed=4)
    model, up, (compiled, stepped), (start, measurement), policy = landing_plants(filtered, disturbances)
    divergence = Divergence(model)
    steps = compiled.run(0, 120, policy, start, divergence.lower, divergence.upper)
    assert steps.size == 120 and steps.checked and not steps.diverged
    np.testing.assert_array_equal(steps.q[0], start.q)
    touching = set()
    for j in range(steps.size):
        t, after = steps.t[j], steps.after(j)
        assert t == j * compiled.dt and np.all(steps.seconds[j] > 0)  # the policy's and the plant's
        command = policy(t, measurement.q, measurement.v, measurement.tau)
        measurement = stepped.step(t, command)
        np.testing.assert_array_equal(steps.u[j], command)
        for got, expected in ((after.q, measurement.q), (after.v, measurement.v), (after.tau, measurement.tau)):
            np.testing.assert_array_equal(got, expected)
        for name, reading in measurement.contacts.items():
            other = after.contacts[name]
            assert (other.active, other.depth) == (reading.active, reading.depth)
            for field in ("force", "position", "velocity"):
                np.testing.assert_array_equal(getattr(other, field), getattr(reading, field))
            touching.add(reading.active)
    assert touching == {False, True} and (after.tau is not None) == filtered
    lower = divergence.lower.copy()
    lower[2] = up[2] - 0.01  # the base falls below it within the period
    _, _, (plant,), (start,), _ = landing_plants(filtered, disturbances, 1)
    steps = plant.run(0, 200, policy, start, lower, divergence.upper)
    assert 0 < steps.size < 200 and steps.checked and steps.diverged
    assert steps.q[-1, 2] < lower[2] <= steps.q[-2, 2]


def test_compiled_steps_of_a_fixed_base_arm_without_contacts_are_its_steps():
    """The Talos arm (no free joint, no named contact, a torque filter) under a PD policy with
    torque noise: the compiled steps' rows equal the policy and plant.step to the bit."""
    name, model, locked = talos_arm()
    robot = mm.build(name, model, locked, torque_filter=20.0)
    disturbances = Disturbances(torque_noise=0.2, torque_bias=0.5, seed=1)
    compiled, stepped = (MujocoPlant(robot, {}, disturbances) for _ in range(2))
    q0, v0, tau0 = dynamics.neutral(model), np.full(model.nv, 0.3), np.full(model.nv, 1.0)
    start, measurement = compiled.reset(q0, v0, tau0), stepped.reset(q0, v0, tau0)
    K = np.hstack((-30 * np.eye(model.nv), -3 * np.eye(model.nv), np.zeros((model.nv, model.nv))))
    plan = (np.stack([q0, q0]), np.zeros((2, model.nv)), np.stack([tau0, tau0]))
    policy = PolicyKernel(model, model.nv, model.nv, quiet=True).bind(Policy(model, 0.0, 0.01, *plan, tau0, K))
    divergence = Divergence(model)
    steps = compiled.run(0, 50, policy, start, divergence.lower, divergence.upper)
    assert steps.size == 50 and steps.checked and not steps.diverged and steps.readings.shape == (50, 0, ROW)
    for j, t in enumerate(steps.t):
        command = policy(t, measurement.q, measurement.v, measurement.tau)
        measurement = stepped.step(t, command)
        after = steps.after(j)
        assert not after.contacts and np.array_equal(steps.u[j], command)
        for got, expected in ((after.q, measurement.q), (after.v, measurement.v), (after.tau, measurement.tau)):
            np.testing.assert_array_equal(got, expected)
    assert np.max(np.abs(after.q - q0)) > 1e-3  # it moved


@pytest.mark.parametrize("height", [None, 0.02])
def test_a_closed_loop_on_compiled_steps_is_the_loop_one_step_at_a_time(height):
    """The log, what the estimator sees (a period's steps in one call) and how the run ends, with
    the periods' steps in one call each and one at a time: the same, to the bit; a run stopped
    within a period (the base lower than ``height`` above its start) ends at the same step."""
    disturbances = Disturbances(torque_noise=0.3, seed=2)
    model, up, plants, (start, _), policy = landing_plants(True, disturbances)
    plants[1]._steps = None  # one step at a time
    runs = []
    for plant in plants:
        seen = []
        stop = None if height is None else (lambda m: "fell" if m.q[2] < up[2] - height else None)
        log = closed_loop(
            HeldPolicy(policy), plant, model, start.q, start.v, 0.15, 0.01, tau0=start.tau, stop=stop,
            observe=seen.append,
        )  # fmt: skip
        runs.append((log, seen))
    (compiled, seen), (stepped, seen_stepped) = runs
    assert (compiled.status, compiled.end_time) == (stepped.status, stepped.end_time)
    assert compiled.status == ("completed" if height is None else "fell")
    assert height is None or 0.2 < compiled.end_time / 0.01 % 1 < 0.8  # within a period
    for name, array in compiled.arrays().items():
        np.testing.assert_array_equal(array, stepped.arrays()[name])
    assert len(seen) == len(seen_stepped) == -(-len(compiled.t) // 10)  # a call per period, either way
    for steps, steps_ in zip(seen, seen_stepped):
        assert steps.index == steps_.index
        for name in ("t", "u", "q", "v", "tau", "readings"):
            np.testing.assert_array_equal(getattr(steps, name), getattr(steps_, name))
    assert sum(steps.size for steps in seen) == len(compiled.t)


def test_steps_with_a_push_or_a_policy_in_numpy_are_left_to_the_loop():
    push = Push("base", (0.0, 50.0, 0.0), 0.012, 0.1)
    model, _, (plant,), (start,), policy = landing_plants(False, Disturbances(pushes=(push,)), 1)
    limits = Divergence(model).lower, Divergence(model).upper
    assert plant.run(10, 5, policy.policy, start, *limits) is None  # the numpy policy
    assert plant.run(10, 5, policy, start, *limits) is None  # the push starts within
    assert plant.run(0, 12, policy, start, *limits).size == 12  # it starts after


def test_without_mujocos_headers_the_readings_run_in_python(tmp_path, capsys):
    elsewhere = types.SimpleNamespace(__file__=str(tmp_path / "__init__.py"), __version__="0", mj_version=lambda: 0)
    assert mujoco_readings._library(elsewhere) is None
    assert capsys.readouterr().err.count("\n") == 1
    assert not mujoco_readings.Readings(mujoco, mujoco.MjModel.from_xml_string("<mujoco/>"), {}, (), False).compiled


def test_a_foot_in_the_air_reports_its_frame_after_the_step():
    model, q0, feet, robot = standing_anymal()
    plant = MujocoPlant(robot, {f: (f, mm.body_geoms(robot, f)) for f in feet})
    up = q0.copy()
    up[2] += 0.3  # every foot in the air, falling and swinging
    measurement = plant.reset(up, np.r_[0.3, -0.2, 0.1, 0.5, -0.4, 0.3, np.linspace(-2, 2, model.nv - 6)])
    for k in range(5):
        measurement = plant.step(k * plant.dt, np.zeros(model.nv - 6))
    for foot, reading in measurement.contacts.items():
        assert not reading.active
        np.testing.assert_allclose(reading.position, dynamics.frame_placement(model, measurement.q, foot)[1], atol=1e-9)


def test_a_push_acts_at_its_frame_and_a_heavier_plant_weighs_more():
    model, q0, feet, robot = standing_anymal()
    push = Push("LF_FOOT", (3.0, -2.0, 5.0), 0.0, 1.0)
    plant = MujocoPlant(robot, {}, Disturbances(pushes=(push,)))
    plant.reset(q0, np.zeros(model.nv))
    plant.step(0.0, np.zeros(model.nv - 6))
    data = plant.data
    generalized = np.zeros(robot.mj.nv)
    body = robot.mj.body("LF_FOOT").id
    mujoco.mj_applyFT(
        robot.mj, data, data.xfrc_applied[body, :3], data.xfrc_applied[body, 3:], data.xipos[body], body, generalized
    )
    J = dynamics.frame_jacobian(model, q0, "LF_FOOT", "LOCAL_WORLD_ALIGNED")[:3]
    T = velocity_map(robot, q0)
    np.testing.assert_allclose(T.T @ generalized, J.T @ np.array(push.force), atol=1e-9)
    plant.step(0.5, np.zeros(model.nv - 6))  # still pushed: the push's force, not added to the last step's
    np.testing.assert_array_equal(data.xfrc_applied[body, :3], push.force)
    assert np.count_nonzero(data.xfrc_applied) == 6
    plant.step(1.0, np.zeros(model.nv - 6))  # the push is over: no wrench left
    assert not data.xfrc_applied.any()
    heavy = mm.build("anymal", model, scaled=(["root_joint"], 1.1))
    expected = scaled_model(model, ["root_joint"], 1.1).mass
    assert sum(heavy.mj.body_mass) == pytest.approx(expected, rel=1e-12)


def test_a_frictionless_surface_is_a_frictionless_contact_and_surfaces_decide():
    _, _, _, robot = standing_anymal(surfaces_friction=0.0)
    ground = robot.mj.geom("ground")
    assert ground.condim[0] == 1 and ground.priority[0] == 1
    assert robot.mj.opt.cone == mujoco.mjtCone.mjCONE_ELLIPTIC
    robot_geoms = [g for g in range(robot.mj.ngeom) if g != ground.id]
    assert not np.any(robot.mj.geom_conaffinity[robot_geoms])  # no self-collision


def test_what_mujoco_cannot_do_is_one_line(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "mujoco", None)
    with pytest.raises(mm.PlantError, match="pip install mujoco"):
        mm.import_mujoco()
    monkeypatch.undo()
    bad = tmp_path / "bad.urdf"
    # an inertia liftoff reads but MuJoCo refuses (it breaks the triangle inequality A + B >= C)
    link = '<link name="a"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="3"/></inertial></link>'
    bad.write_text(f'<robot name="r">{link}</robot>')
    monkeypatch.setattr(mm, "robot_urdf", lambda robot: bad)
    with pytest.raises(mm.PlantError) as error:
        mm.build("bad", dynamics.load_urdf_string(bad.read_text()))
    assert "\n" not in str(error.value) and "bad" in str(error.value) and "A + B >= C" in str(error.value)


def _sliding_sphere_lift_off(mass, friction, speed, steps=1000) -> float:
    """The share of steps in which a sphere of ``mass`` kg, pressed on a plane with 30 N and kept
    sliding at ``speed`` m/s (a force of ``friction`` times the load plus a velocity loop), touches
    nothing: MuJoCo's default contact parameters, elliptic cones, 1 ms steps (the plants')."""
    condim = 3 if friction > 0 else 1
    xml = f"""<mujoco><option timestep="0.001" cone="elliptic"/><worldbody>
      <geom type="plane" size="1 1 0.1" friction="{friction} 0.005 0.0001" condim="{condim}"/>
      <body pos="0 0 0.03"><joint type="slide" axis="1 0 0"/><joint type="slide" axis="0 0 1"/>
        <geom type="sphere" size="0.03" mass="{mass}" friction="{friction} 0.005 0.0001" condim="{condim}"/>
      </body></worldbody></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    d.qfrc_applied[:] = (0.0, -30.0)
    mujoco.mj_step(m, d, 300)  # settled
    d.qvel[0], lost, wrench = speed, 0, np.zeros(6)
    for _ in range(steps):
        d.qfrc_applied[0] = friction * (30.0 + 9.81 * mass) + 2000.0 * (speed - d.qvel[0])
        mujoco.mj_step(m, d)
        normal = 0.0
        for i in range(d.ncon):
            mujoco.mj_contactForce(m, d, i, wrench)
            normal += wrench[0]
        lost += normal <= 0.0
    return lost / steps


def test_mujoco_lets_a_body_sliding_under_load_lose_contact():
    """What the polishing benchmark meets at friction 0.3, shown without a controller: MuJoCo's
    convex contact model (no complementarity, unlike an LCP) makes a sliding body hop now and
    then, the more so the heavier and faster it slides; frictionless or light, it stays down."""
    assert _sliding_sphere_lift_off(10.0, 0.3, 0.07) > 0.02
    assert _sliding_sphere_lift_off(10.0, 0.3, 0.3) > 0.2
    assert _sliding_sphere_lift_off(10.0, 0.0, 0.07) == 0.0
    assert _sliding_sphere_lift_off(3.0, 0.3, 0.07) == 0.0
