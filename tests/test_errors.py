"""Bad inputs give a clear error of the documented type, naming what is wrong."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import load_pair

from liftoff import dynamics
from liftoff.ocp.problem import OCP, ContactStage


def test_unknown_robot_lists_known_robots():
    with pytest.raises(dynamics.ModelError) as err:
        dynamics.load("anymall")
    message = str(err.value)
    assert "anymall" in message
    for name in ("anymal", "talos", "solo12", "ur5"):
        assert name in message
    assert isinstance(err.value, ValueError)


def test_robot_urdf_of_unknown_name():
    from liftoff.dynamics.robots import robot_urdf

    with pytest.raises(dynamics.ModelError, match="known robots"):
        robot_urdf("no_such_robot")


def test_malformed_urdf(tmp_path):
    path = tmp_path / "broken.urdf"
    path.write_text('<robot name="broken"><link name="a"></robot')
    with pytest.raises(dynamics.ModelError) as err:
        dynamics.load(path)
    assert "broken.urdf" in str(err.value)


@pytest.mark.parametrize(
    "body",
    [
        '<robot name="r"><link name="a"/><joint name="j" type="revolute"><parent link="a"/><child link="b"/>'
        '<axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>',  # unknown link
        '<robot name="r"><link name="a"/><link name="b"/><joint name="j" type="planar"><parent link="a"/>'
        '<child link="b"/></joint></robot>',  # unsupported joint type
        '<robot name="r"><link name="a"><inertial><mass value="one"/></inertial></link></robot>',  # not a number
        '<notarobot name="r"><link name="a"/></notarobot>',
    ],
)
def test_invalid_urdf_content(tmp_path, body):
    path = tmp_path / "invalid.urdf"
    path.write_text(body)
    with pytest.raises(dynamics.ModelError):
        dynamics.load(path)


def test_missing_urdf_path(tmp_path):
    path = tmp_path / "nowhere" / "robot.urdf"
    with pytest.raises(dynamics.ModelError) as err:
        dynamics.load(path)
    assert "robot.urdf" in str(err.value)
    with pytest.raises(dynamics.ModelError):
        dynamics.load(str(path))


@pytest.mark.parametrize(
    "call",
    [
        lambda m, q, v: dynamics.frame_placement(m, q, "LF_FOTO"),
        lambda m, q, v: dynamics.frame_jacobian(m, q, "LF_FOTO", "WORLD"),
        lambda m, q, v: dynamics.frame_velocity(m, q, v, "LF_FOTO", "LOCAL"),
        lambda m, q, v: m.frame_id("LF_FOTO"),
    ],
)
def test_unknown_frame(call):
    model, _ = load_pair("anymal")
    q, v = dynamics.neutral(model), np.zeros(model.nv)
    with pytest.raises(dynamics.UnknownNameError) as err:
        call(model, q, v)
    message = str(err.value)
    assert "LF_FOTO" in message
    assert "LF_FOOT" in message  # the near miss is suggested
    assert isinstance(err.value, KeyError)


@pytest.mark.parametrize(
    "contacts, error",
    [
        ([], ValueError),
        ([1.0], TypeError),
        ([dynamics.Contact("LF_FOTO")], dynamics.UnknownNameError),
        ([dynamics.Contact("LF_FOOT"), dynamics.Contact("LF_FOOT", frame2="RF_FOTO")], dynamics.UnknownNameError),
    ],
    ids=["empty", "not a contact", "unknown frame", "unknown second frame"],
)
def test_an_ocp_checks_its_contacts_as_binding_them_would(contacts, error):
    """An OCP checks its stages' contacts without binding them to the model: the same errors."""
    model, _ = load_pair("anymal")
    for call in (dynamics.contacts.check, dynamics.contacts.resolve):
        with pytest.raises(error):
            call(model, contacts)
    if contacts:
        stage = ContactStage(tuple(contacts), 0.01)
        with pytest.raises(error):
            OCP(model, dynamics.neutral(model), np.zeros(model.nv), (stage,))


def test_unknown_frame_without_near_miss():
    model, _ = load_pair("ur5")
    with pytest.raises(dynamics.UnknownNameError, match="qwertyuiop"):
        model.frame_id("qwertyuiop")


def test_unknown_joint():
    model, _ = load_pair("talos")
    with pytest.raises(dynamics.UnknownNameError) as err:
        model.joint_id("arm_right_8_joint")
    assert "arm_right_8_joint" in str(err.value)
    assert any(f"arm_right_{i}_joint" in str(err.value) for i in range(1, 8))  # near misses


@pytest.mark.parametrize("locked", [["torso_1_joint", "arm_rigth_1_joint"], {"arm_rigth_1_joint": 0.3}])
def test_unknown_locked_joint(locked):
    with pytest.raises(dynamics.UnknownNameError) as err:
        dynamics.load("talos", locked_joints=locked)
    assert "arm_rigth_1_joint" in str(err.value)
    assert "arm_right_1_joint" in str(err.value)


@pytest.mark.parametrize(
    "call",
    [
        lambda m, q, x: dynamics.rnea(m, q, x, x),
        lambda m, q, x: dynamics.crba(m, q),
        lambda m, q, x: dynamics.aba(m, q, x, x),
        lambda m, q, x: dynamics.rnea_derivatives(m, q, x, x),
        lambda m, q, x: dynamics.aba_derivatives(m, q, x, x),
        lambda m, q, x: dynamics.frame_placement(m, q, "LF_FOOT"),
        lambda m, q, x: dynamics.frame_jacobian(m, q, "LF_FOOT", "LOCAL"),
        lambda m, q, x: dynamics.center_of_mass(m, q),
        lambda m, q, x: dynamics.integrate(m, q, x),
        lambda m, q, x: dynamics.difference(m, q, q),
    ],
)
@pytest.mark.parametrize("bad_shape", [(18,), (3, 20), ()])
def test_wrong_configuration_shape(call, bad_shape):
    model, _ = load_pair("anymal")
    q = np.zeros(bad_shape)
    with pytest.raises(dynamics.DimensionError) as err:
        call(model, q, np.zeros(model.nv))
    message = str(err.value)
    assert "expected" in message
    assert "19" in message  # the expected size
    assert str(bad_shape) in message  # the shape given
    assert isinstance(err.value, ValueError)


def test_wrong_velocity_and_force_shapes():
    model, _ = load_pair("anymal")
    q = dynamics.neutral(model)
    with pytest.raises(dynamics.DimensionError, match=r"expected.*18.*\(19,\)"):
        dynamics.rnea(model, q, np.zeros(19), np.zeros(18))
    with pytest.raises(dynamics.DimensionError, match=r"expected.*\(5, 6\)"):
        dynamics.rnea(model, q, np.zeros(18), np.zeros(18), fext=np.zeros((5, 6)))
    # batches that do not broadcast
    with pytest.raises(dynamics.DimensionError, match=r"\(4, 19\).*\(3, 18\)"):
        dynamics.rnea(model, np.tile(q, (4, 1)), np.zeros((3, 18)), np.zeros(18))


@pytest.mark.parametrize("reference", ["GLOBAL", "local_world", ""])
def test_unknown_reference_frame(reference):
    model, _ = load_pair("ur5")
    q = dynamics.neutral(model)
    with pytest.raises(ValueError) as err:
        dynamics.frame_jacobian(model, q, "tool0", reference)
    assert "LOCAL_WORLD_ALIGNED" in str(err.value)
    with pytest.raises(ValueError):
        dynamics.frame_velocity(model, q, np.zeros(model.nv), "tool0", reference)
    with pytest.raises(ValueError):
        dynamics.frame_acceleration(model, q, np.zeros(model.nv), np.zeros(model.nv), "tool0", reference)
