"""Frame kinematics and the centre of mass against Pinocchio and finite differences.

Frames per robot: a foot or end effector, a frame of the root body or of the universe
(``base_link`` of the UR5 and ``universe`` are attached to the universe), and a JOINT frame.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from conftest import ROBOTS, atol, finite_differences, load_pair, pin_loop, random_states, se3_difference

from liftoff import dynamics
from liftoff.dynamics import ReferenceFrame

FRAMES = {
    "anymal": ["LF_FOOT", "base", "universe", "RH_KFE"],
    "talos": ["left_sole_link", "base_link", "arm_right_4_joint"],
    "solo12": ["FL_FOOT", "base_link", "HR_KFE"],
    "ur5": ["tool0", "base_link", "elbow_joint"],
}
ROBOT_FRAMES = [(name, frame) for name in ROBOTS for frame in FRAMES[name]]
REFERENCES = ["LOCAL", "WORLD", "LOCAL_WORLD_ALIGNED"]
PIN_REFERENCE = {"LOCAL": pin.LOCAL, "WORLD": pin.WORLD, "LOCAL_WORLD_ALIGNED": pin.LOCAL_WORLD_ALIGNED}


def test_frames_cover_every_kind():
    """Each robot's frames include a JOINT frame and one on the root body or the universe."""
    for name, frames in FRAMES.items():
        model, pmodel = load_pair(name)
        assert pin.FrameType.JOINT in [pmodel.frames[pmodel.getFrameId(f)].type for f in frames]
        root = 0 if model.has_free_flyer else -1
        assert any(model.frame_parent[model.frame_id(f)] in (-1, root) for f in frames)
    ur5, _ = load_pair("ur5")
    anymal, _ = load_pair("anymal")
    assert ur5.frame_parent[ur5.frame_id("base_link")] == -1
    assert anymal.frame_parent[anymal.frame_id("universe")] == -1


def pin_frame_kinematics(pmodel, pdata, fid, rf, q, v, a):
    """Pinocchio's placement, velocity, accelerations, Jacobian and its time variation."""
    pin.forwardKinematics(pmodel, pdata, q, v, a)
    pin.updateFramePlacements(pmodel, pdata)
    M = pdata.oMf[fid]
    out = dict(
        R=M.rotation.copy(),
        p=M.translation.copy(),
        velocity=pin.getFrameVelocity(pmodel, pdata, fid, rf).vector,
        acceleration=pin.getFrameAcceleration(pmodel, pdata, fid, rf).vector,
        classical=pin.getFrameClassicalAcceleration(pmodel, pdata, fid, rf).vector,
    )
    pin.computeJointJacobiansTimeVariation(pmodel, pdata, q, v)
    pin.updateFramePlacements(pmodel, pdata)
    out["jacobian"] = pin.getFrameJacobian(pmodel, pdata, fid, rf)
    out["time_variation"] = pin.getFrameJacobianTimeVariation(pmodel, pdata, fid, rf)
    return out


def our_frame_kinematics(model, frame, reference, q, v, a):
    R, p = dynamics.frame_placement(model, q, frame)
    return dict(
        R=R,
        p=p,
        velocity=dynamics.frame_velocity(model, q, v, frame, reference),
        acceleration=dynamics.frame_acceleration(model, q, v, a, frame, reference),
        classical=dynamics.frame_acceleration(model, q, v, a, frame, reference, classical=True),
        jacobian=dynamics.frame_jacobian(model, q, frame, reference),
        time_variation=dynamics.frame_jacobian_time_variation(model, q, v, frame, reference),
    )


@pytest.mark.parametrize("reference", REFERENCES)
@pytest.mark.parametrize("name, frame", ROBOT_FRAMES)
def test_frame_kinematics_equal_pinocchio(name, frame, reference, rng):
    model, pmodel = load_pair(name)
    pdata = pmodel.createData()
    fid = pmodel.getFrameId(frame)
    q, v, a = random_states(model, rng)
    refs = [pin_frame_kinematics(pmodel, pdata, fid, PIN_REFERENCE[reference], *x) for x in zip(q, v, a)]
    batched = our_frame_kinematics(model, frame, reference, q, v, a)
    for key, ours in batched.items():
        ref = np.array([r[key] for r in refs])
        assert ours.shape == ref.shape, key
        np.testing.assert_allclose(ours, ref, rtol=0, atol=atol(ref), err_msg=key)
    # single states, the reference given as the enum
    for i in range(2):
        single = our_frame_kinematics(model, frame, ReferenceFrame(reference), q[i], v[i], a[i])
        for key, ours in single.items():
            ref = refs[i][key]
            assert ours.shape == ref.shape, key
            np.testing.assert_allclose(ours, ref, rtol=0, atol=atol(ref), err_msg=key)


def test_frame_and_joint_ids_are_pinocchios():
    """Every frame name's index is Pinocchio's (``getFrameId``), every joint name's Pinocchio's
    but for its universe joint; a frame added to a model is found in the new model, the old one
    keeps its frames."""
    for name in ROBOTS:
        model, pmodel = load_pair(name)
        assert [model.frame_id(f) for f in model.frame_names] == [pmodel.getFrameId(f) for f in model.frame_names]
        assert [model.joint_id(j) + 1 for j in model.joint_names] == [pmodel.getJointId(j) for j in model.joint_names]
        tool = dynamics.add_frame(model, "tool_tip", model.frame_names[-1], translation=[0.0, 0.0, 0.1])
        assert tool.frame_id("tool_tip") == model.nframes and tool.frame_id(model.frame_names[0]) == 0
        with pytest.raises(dynamics.UnknownNameError, match="unknown frame 'tool_tip'"):
            model.frame_id("tool_tip")


def test_frame_id_accepted(rng):
    """A frame given by index gives the same results as by name."""
    model, _ = load_pair("solo12")
    q, v, a = random_states(model, rng, 5)
    fid = model.frame_id("FL_FOOT")
    by_name = dynamics.frame_jacobian(model, q, "FL_FOOT", "WORLD")
    np.testing.assert_array_equal(dynamics.frame_jacobian(model, q, fid, "WORLD"), by_name)


def test_center_of_mass_equals_pinocchio(robot, rng):
    _, model, pmodel = robot
    pdata = pmodel.createData()
    q, _, _ = random_states(model, rng)
    com = pin_loop(lambda x: pin.centerOfMass(pmodel, pdata, x).copy(), q)
    Jcom = pin_loop(lambda x: pin.jacobianCenterOfMass(pmodel, pdata, x).copy(), q)
    np.testing.assert_allclose(dynamics.center_of_mass(model, q), com, rtol=0, atol=atol(com))
    np.testing.assert_allclose(dynamics.com_jacobian(model, q), Jcom, rtol=0, atol=atol(Jcom))
    np.testing.assert_allclose(dynamics.center_of_mass(model, q[0]), com[0], rtol=0, atol=atol(com))
    np.testing.assert_allclose(dynamics.com_jacobian(model, q[0]), Jcom[0], rtol=0, atol=atol(Jcom))


def test_com_jacobian_equals_finite_differences(robot, rng):
    _, model, _ = robot
    q, _, _ = random_states(model, rng, 5)
    fd = finite_differences(lambda x: dynamics.center_of_mass(model, x), q, model=model, wrt="configuration")
    np.testing.assert_allclose(dynamics.com_jacobian(model, q), fd, rtol=0, atol=atol(fd))


def _placement12(model, frame):
    """Frame placement packed as ``(B, 12)`` (R flattened, p) for :func:`se3_difference`."""

    def f(q):
        R, p = dynamics.frame_placement(model, q, frame)
        return np.concatenate((R.reshape(len(q), 9), p), axis=-1)

    return f


def _from_local(J, R, p, reference):
    """A LOCAL Jacobian ``(S, 6, nv)`` of the frame ``(R, p)`` expressed in ``reference``."""
    if reference == "LOCAL":
        return J
    lin = R @ J[:, :3]
    ang = R @ J[:, 3:]
    if reference == "WORLD":
        lin = lin + np.cross(p[:, None, :], ang, axisa=-1, axisb=-2, axisc=-2)
    return np.concatenate((lin, ang), axis=1)


@pytest.mark.parametrize("reference", REFERENCES)
@pytest.mark.parametrize("name, frame", ROBOT_FRAMES)
def test_frame_jacobian_equals_finite_differences(name, frame, reference, rng):
    """The Jacobian is the derivative of the placement on SE(3); dJ/dt the derivative of J along v."""
    model, _ = load_pair(name)
    q, v, _ = random_states(model, rng, 5)
    local = finite_differences(_placement12(model, frame), q, model=model, wrt="configuration", out=se3_difference)
    R, p = dynamics.frame_placement(model, q, frame)
    J = dynamics.frame_jacobian(model, q, frame, reference)
    np.testing.assert_allclose(J, _from_local(local, R, p, reference), rtol=0, atol=atol(J))
    dJ_dq = finite_differences(
        lambda x: dynamics.frame_jacobian(model, x, frame, reference), q, model=model, wrt="configuration"
    )
    dJ = np.einsum("sijk,sk->sij", dJ_dq, v)
    dJ_ours = dynamics.frame_jacobian_time_variation(model, q, v, frame, reference)
    np.testing.assert_allclose(dJ_ours, dJ, rtol=0, atol=atol(dJ, 1e-7))
