"""The model built from a URDF equals Pinocchio's: tree, joint placements, inertias, frames,
for full robots, reduced (locked-joint) robots and every supported joint type."""

from __future__ import annotations

import dataclasses

import numpy as np
import pinocchio as pin
import pytest
from conftest import NSTATES, ROBOTS, atol, load_pair, pin_loop, pin_model_from_urdf, random_states, symmetrize_upper

from liftoff import dynamics
from liftoff.dynamics.robots import robot_urdf

TALOS_KEPT = ["torso_1_joint", "torso_2_joint"] + [f"arm_right_{i}_joint" for i in range(1, 8)]

# A chain base -revolute (unaligned axis)-> l1 -prismatic-> l2 -fixed-> l3 -continuous-> l4,
# plus a revolute branch off the base, with offsets and rotations in every origin.
TINY_URDF = """<?xml version="1.0"?>
<robot name="tiny">
  <link name="base">
    <inertial><origin xyz="0.01 0.02 0.03" rpy="0 0 0"/><mass value="2.0"/>
      <inertia ixx="0.02" ixy="0.001" ixz="0" iyy="0.03" iyz="0.002" izz="0.04"/></inertial>
  </link>
  <link name="l1">
    <inertial><origin xyz="0.1 0 0.05" rpy="0.1 0.2 0.3"/><mass value="1.0"/>
      <inertia ixx="0.01" ixy="0" ixz="0.001" iyy="0.02" iyz="0" izz="0.015"/></inertial>
  </link>
  <link name="l2">
    <inertial><origin xyz="0 0.1 0" rpy="0 0 0"/><mass value="0.5"/>
      <inertia ixx="0.005" ixy="0" ixz="0" iyy="0.004" iyz="0" izz="0.003"/></inertial>
  </link>
  <link name="l3">
    <inertial><origin xyz="0.05 0 0" rpy="0 0.4 0"/><mass value="0.3"/>
      <inertia ixx="0.002" ixy="0" ixz="0" iyy="0.003" iyz="0.0005" izz="0.002"/></inertial>
  </link>
  <link name="l4">
    <inertial><origin xyz="0 0 0.2" rpy="0 0 0"/><mass value="0.7"/>
      <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.002"/></inertial>
  </link>
  <link name="side">
    <inertial><origin xyz="0 0.05 0" rpy="0 0 0"/><mass value="0.4"/>
      <inertia ixx="0.001" ixy="0" ixz="0" iyy="0.002" iyz="0" izz="0.001"/></inertial>
  </link>
  <joint name="j_rev" type="revolute">
    <parent link="base"/><child link="l1"/>
    <origin xyz="0.1 0.2 0.3" rpy="0.3 -0.2 0.1"/><axis xyz="0 0.6 0.8"/>
    <limit lower="-2.0" upper="1.5" effort="10" velocity="3"/>
  </joint>
  <joint name="j_pri" type="prismatic">
    <parent link="l1"/><child link="l2"/>
    <origin xyz="0.2 0 0" rpy="0 0.5 0"/><axis xyz="1 0 0"/>
    <limit lower="-0.5" upper="0.5" effort="20" velocity="1"/>
  </joint>
  <joint name="j_fix" type="fixed">
    <parent link="l2"/><child link="l3"/>
    <origin xyz="0 0.1 0.05" rpy="0.7 0 -0.3"/>
  </joint>
  <joint name="j_cont" type="continuous">
    <parent link="l3"/><child link="l4"/>
    <origin xyz="0 0 0.1" rpy="0 0 0.2"/><axis xyz="0 1 0"/>
    <limit effort="5" velocity="4"/>
  </joint>
  <joint name="j_side" type="revolute">
    <parent link="base"/><child link="side"/>
    <origin xyz="-0.1 0 0" rpy="0 0 1.0"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="3" velocity="2"/>
  </joint>
</robot>
"""


def assert_same_model(model, pmodel):
    """Every structural quantity of ``model`` equals Pinocchio's (which has the universe as joint 0)."""
    assert (model.nq, model.nv, model.njoints) == (pmodel.nq, pmodel.nv, pmodel.njoints - 1)
    assert list(model.joint_names) == list(pmodel.names)[1:]
    np.testing.assert_array_equal(model.parents, np.array(pmodel.parents[1:]) - 1)
    np.testing.assert_array_equal(model.idx_q, pmodel.idx_qs[1:])
    np.testing.assert_array_equal(model.idx_v, pmodel.idx_vs[1:])
    np.testing.assert_array_equal(model.nqs, pmodel.nqs[1:])
    np.testing.assert_array_equal(model.nvs, pmodel.nvs[1:])
    placements = pmodel.jointPlacements[1:]
    np.testing.assert_allclose(model.joint_rotation, [M.rotation for M in placements], rtol=0, atol=1e-12)
    np.testing.assert_allclose(model.joint_translation, [M.translation for M in placements], rtol=0, atol=1e-12)
    inertias = pmodel.inertias[1:]
    np.testing.assert_allclose(model.body_mass, [I.mass for I in inertias], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(model.body_com, [I.lever for I in inertias], rtol=0, atol=1e-10)
    np.testing.assert_allclose(model.body_inertia, [I.inertia for I in inertias], rtol=0, atol=1e-10)
    np.testing.assert_allclose(model.mass, pin.computeTotalMass(pmodel), rtol=1e-12)
    assert list(model.frame_names) == [f.name for f in pmodel.frames]
    assert list(model.frame_types) == [str(f.type).lower() for f in pmodel.frames]
    np.testing.assert_array_equal(model.frame_parent, [f.parentJoint - 1 for f in pmodel.frames])
    np.testing.assert_allclose(model.frame_rotation, [f.placement.rotation for f in pmodel.frames], rtol=0, atol=1e-12)
    np.testing.assert_allclose(
        model.frame_translation, [f.placement.translation for f in pmodel.frames], rtol=0, atol=1e-12
    )
    # limits of revolute and prismatic joints (Pinocchio bounds a free flyer and (cos, sin)
    # of a continuous joint differently: +-inf and +-1.01)
    iq, iv = model.idx_q[model.nqs == 1], model.idx_v[model.nvs == 1]
    np.testing.assert_allclose(model.lower_position_limit[iq], pmodel.lowerPositionLimit[iq], rtol=1e-12)
    np.testing.assert_allclose(model.upper_position_limit[iq], pmodel.upperPositionLimit[iq], rtol=1e-12)
    np.testing.assert_allclose(model.velocity_limit[iv], pmodel.velocityLimit[iv], rtol=1e-12)
    np.testing.assert_allclose(model.effort_limit[iv], pmodel.effortLimit[iv], rtol=1e-12)
    np.testing.assert_allclose(model.gravity, pmodel.gravity.linear, rtol=1e-12)
    for i, name in enumerate(model.joint_names):
        assert model.joint_id(name) == pmodel.getJointId(name) - 1 == i
    for frame in pmodel.frames:
        assert model.frame_id(frame.name) == pmodel.getFrameId(frame.name)


def assert_same_dynamics(model, pmodel, rng):
    """Torques, mass matrix and a frame placement equal Pinocchio's on random states."""
    pdata = pmodel.createData()
    q, v, a = random_states(model, rng)
    tau = pin_loop(lambda *x: pin.rnea(pmodel, pdata, *x), q, v, a)
    np.testing.assert_allclose(dynamics.rnea(model, q, v, a), tau, rtol=0, atol=atol(tau))
    M = pin_loop(lambda x: symmetrize_upper(pin.crba(pmodel, pdata, x)), q)
    np.testing.assert_allclose(dynamics.crba(model, q), M, rtol=0, atol=atol(M))
    frame = model.frame_names[-1]
    fid = pmodel.getFrameId(frame)

    def placement(x):
        pin.framesForwardKinematics(pmodel, pdata, x)
        return pdata.oMf[fid].homogeneous

    H = pin_loop(placement, q)
    R, p = dynamics.frame_placement(model, q, frame)
    np.testing.assert_allclose(R, H[:, :3, :3], rtol=0, atol=1e-12)
    np.testing.assert_allclose(p, H[:, :3, 3], rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", ROBOTS)
def test_model_equals_pinocchio(name):
    model, pmodel = load_pair(name)
    assert_same_model(model, pmodel)
    assert model.has_free_flyer == (name != "ur5")


@pytest.mark.parametrize("name", ["ur5", "anymal"])
def test_floating_base_option(name, rng):
    """``floating_base`` overrides the registry's default, for arms and legged robots alike."""
    default, _ = load_pair(name)
    model = dynamics.load(name, floating_base=not default.has_free_flyer)
    assert model.has_free_flyer == (not default.has_free_flyer)
    pmodel = pin_model_from_urdf(robot_urdf(name), model.has_free_flyer)
    assert_same_model(model, pmodel)
    assert_same_dynamics(model, pmodel, rng)


def _pin_reduced_talos(floating_base, values):
    """Pinocchio's Talos with every joint but the torso and right arm locked at ``values``."""
    pmodel = pin_model_from_urdf(robot_urdf("talos"), floating_base)
    qref = pin.neutral(pmodel)
    for name, value in values.items():
        qref[pmodel.idx_qs[pmodel.getJointId(name)]] = value
    return pin.buildReducedModel(pmodel, [pmodel.getJointId(n) for n in values], qref)


def _talos_locked():
    full, _ = load_pair("talos")
    return [n for n in full.joint_names if n != "root_joint" and n not in TALOS_KEPT]


def test_reduced_talos_locked_by_list(rng):
    locked = _talos_locked()
    model = dynamics.load("talos", floating_base=True, locked_joints=locked)
    pmodel = _pin_reduced_talos(True, {n: 0.0 for n in locked})
    assert list(model.joint_names) == ["root_joint"] + TALOS_KEPT
    assert (model.nq, model.nv) == (7 + 9, 6 + 9)
    assert_same_model(model, pmodel)
    assert_same_dynamics(model, pmodel, rng)


def test_reduced_talos_locked_by_dict_with_values(rng):
    full, _ = load_pair("talos")
    values = {}
    for n in _talos_locked():
        i = full.idx_q[full.joint_id(n)]
        values[n] = float(rng.uniform(full.lower_position_limit[i], full.upper_position_limit[i]))
    assert min(abs(x) for x in values.values()) > 0
    model = dynamics.load("talos", floating_base=False, locked_joints=values)
    pmodel = _pin_reduced_talos(False, values)
    assert list(model.joint_names) == TALOS_KEPT
    assert (model.nq, model.nv) == (9, 9)
    assert_same_model(model, pmodel)
    assert_same_dynamics(model, pmodel, rng)


def test_continuous_joint_robot(rng):
    model, pmodel = load_pair("double_pendulum_continuous")
    assert (model.nq, model.nv) == (4, 2)
    assert_same_model(model, pmodel)
    assert_same_dynamics(model, pmodel, rng)


@pytest.mark.parametrize("floating_base", [False, True])
def test_every_joint_type(tmp_path, rng, floating_base):
    path = tmp_path / "tiny.urdf"
    path.write_text(TINY_URDF)
    model = dynamics.load(path, floating_base=floating_base)
    pmodel = pin_model_from_urdf(path, floating_base)
    ff = 7 if floating_base else 0
    assert (model.nq, model.nv) == (ff + 5, ff - bool(floating_base) + 4)
    assert_same_model(model, pmodel)
    assert_same_dynamics(model, pmodel, rng)
    # the prismatic joint stays within its limits, the continuous one on the unit circle
    q = dynamics.random_configuration(model, rng, NSTATES)
    pri = model.idx_q[model.joint_id("j_pri")]
    assert np.all(np.abs(q[:, pri]) <= 0.5)
    cont = model.idx_q[model.joint_id("j_cont")]
    np.testing.assert_allclose(np.hypot(q[:, cont], q[:, cont + 1]), 1.0, rtol=1e-12)


def test_load_by_path_string_equals_by_name():
    model, _ = load_pair("solo12")
    by_path = dynamics.load(str(robot_urdf("solo12")), floating_base=True)
    assert by_path.joint_names == model.joint_names
    assert by_path.frame_names == model.frame_names
    np.testing.assert_array_equal(by_path.body_mass, model.body_mass)
    assert set(dynamics.ROBOTS) >= set(ROBOTS) | {"double_pendulum_continuous", "panda"}


ARRAYS = [
    "parents", "idx_q", "idx_v", "nqs", "nvs", "joint_rotation", "joint_translation", "axis",
    "body_mass", "body_com", "body_inertia", "frame_parent", "frame_rotation", "frame_translation",
    "lower_position_limit", "upper_position_limit", "velocity_limit", "effort_limit", "gravity",
]  # fmt: skip


@pytest.mark.parametrize("name", ["talos", "ur5"])
def test_model_is_immutable(name):
    model, _ = load_pair(name)
    for attr in ARRAYS:
        array = getattr(model, attr)
        assert isinstance(array, np.ndarray), attr
        assert not array.flags.writeable, attr
        with pytest.raises(ValueError):
            array[...] = 0
    with pytest.raises(dataclasses.FrozenInstanceError):
        model.nq = 3
    with pytest.raises(dataclasses.FrozenInstanceError):
        model.body_mass = np.zeros(model.njoints)
    # results are fresh arrays: changing one leaves the model (and later results) intact
    q = dynamics.neutral(model)
    q0 = q.copy()
    q[:] = 5.0
    np.testing.assert_array_equal(dynamics.neutral(model), q0)
