"""The mechanisms built in code (dynamics.sample_models) equal Pinocchio's models of the same
URDF text, have plausible inertias, and the four-bar's closed configuration closes its loop."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from conftest import atol, pin_loop, symmetrize_upper

from liftoff import dynamics
from liftoff.dynamics import sample_models

TOL = 1e-10

# (name, model builder, URDF text builder, floating base)
CASES = {
    "chain_1": (lambda: sample_models.serial_chain(1), lambda: sample_models.serial_chain_urdf(1), False),
    "chain_7": (lambda: sample_models.serial_chain(7), lambda: sample_models.serial_chain_urdf(7), False),
    "chain_7_floating": (
        lambda: sample_models.serial_chain(7, floating_base=True),
        lambda: sample_models.serial_chain_urdf(7),
        True,
    ),
    "tree_3": (lambda: sample_models.binary_tree(3), lambda: sample_models.binary_tree_urdf(3), False),
    "tree_21": (lambda: sample_models.binary_tree(21), lambda: sample_models.binary_tree_urdf(21), False),
    "four_bar": (lambda: sample_models.four_bar_linkage()[0], sample_models.four_bar_urdf, False),
}


@pytest.fixture(params=list(CASES))
def pair(request):
    """``(our model, Pinocchio's model of the same URDF text)``."""
    build, text, floating = CASES[request.param]
    pmodel = pin.buildModelFromXML(text(), pin.JointModelFreeFlyer()) if floating else pin.buildModelFromXML(text())
    return build(), pmodel


def test_same_model_as_pinocchio(pair):
    model, pmodel = pair
    assert (model.nq, model.nv) == (pmodel.nq, pmodel.nv)
    assert list(model.joint_names) == list(pmodel.names)[1:]
    assert list(model.frame_names) == [f.name for f in pmodel.frames]
    np.testing.assert_allclose(model.mass, sum(I.mass for I in list(pmodel.inertias)[1:]), rtol=1e-14)


def test_rnea_and_crba_equal_pinocchio(pair, rng):
    model, pmodel = pair
    pdata = pmodel.createData()
    q = dynamics.random_configuration(model, rng, 4)
    v, a = rng.standard_normal((2, 4, model.nv))
    tau_pin = pin_loop(lambda qi, vi, ai: pin.rnea(pmodel, pdata, qi, vi, ai), q, v, a)
    np.testing.assert_allclose(dynamics.rnea(model, q, v, a), tau_pin, rtol=0, atol=atol(tau_pin, TOL))
    M_pin = pin_loop(lambda qi: symmetrize_upper(pin.crba(pmodel, pdata, qi)), q)
    np.testing.assert_allclose(dynamics.crba(model, q), M_pin, rtol=0, atol=atol(M_pin, TOL))


def test_links_have_plausible_inertias(pair):
    """About 1 kg per moving link, positive-definite rotational inertia obeying the triangle
    inequality, centre of mass off the joint axis."""
    model, pmodel = pair
    for inertia in list(pmodel.inertias)[2 if model.has_free_flyer else 1 :]:
        assert 0.5 <= inertia.mass <= 1.5
        principal = np.linalg.eigvalsh(inertia.inertia)
        assert principal[0] > 0
        assert principal[0] + principal[1] >= principal[2]
        assert np.linalg.norm(inertia.lever) > 0.05


def test_joint_axes_vary():
    model = sample_models.serial_chain(6)
    axes = {tuple(np.round(a, 12)) for a in np.asarray(model.axis).reshape(model.njoints, -1)}
    assert len(axes) >= 3


def test_models_are_deterministic():
    assert sample_models.serial_chain_urdf(5) == sample_models.serial_chain_urdf(5)
    assert sample_models.binary_tree_urdf(9) == sample_models.binary_tree_urdf(9)
    np.testing.assert_array_equal(
        sample_models.four_bar_closed_configuration(), sample_models.four_bar_closed_configuration()
    )


def test_serial_chain_ends_with_the_end_effector_frame():
    model = sample_models.serial_chain(5)
    assert model.njoints == 5
    assert model.frame_parent[model.frame_id("end_effector")] == model.njoints - 1


@pytest.mark.parametrize("n", sample_models.binary_tree_sizes(200))
def test_binary_tree_leaves(n):
    model = sample_models.binary_tree(n)
    leaves = sample_models.leaf_frames(model)
    assert model.nv == n
    assert leaves == [f"leaf_{i}" for i in range(n // 6 + 1)]
    # each leaf hangs from a different joint at depth (number of branches on its path) * 3
    joints = [model.frame_parent[model.frame_id(leaf)] for leaf in leaves]
    assert len(set(joints)) == len(leaves)
    depth = lambda j: 0 if j < 0 else 1 + depth(model.parents[j])  # noqa: E731
    assert {depth(j) for j in joints} == {3 * (len(sample_models.binary_tree_sizes(n)))}


@pytest.mark.parametrize("n", [0, 1, 2, 4, 10, 20, 22, 3.0])
def test_binary_tree_rejects_sizes_that_are_not_balanced(n):
    with pytest.raises(ValueError, match="binary_tree"):
        sample_models.binary_tree(n)


@pytest.mark.parametrize("crank_angle", [-2.5, 0.0, 0.5, 2.0])
def test_four_bar_closed_configuration_closes_the_loop(crank_angle):
    model, frame1, frame2 = sample_models.four_bar_linkage()
    q = sample_models.four_bar_closed_configuration(crank_angle)
    assert q[0] == crank_angle
    assert np.all(np.abs(q) <= np.pi)
    np.testing.assert_allclose(
        dynamics.frame_placement(model, q, frame1)[1], dynamics.frame_placement(model, q, frame2)[1], rtol=0, atol=TOL
    )
    # the same in Pinocchio's model of the same text
    pmodel = pin.buildModelFromXML(sample_models.four_bar_urdf())
    pdata = pmodel.createData()
    pin.framesForwardKinematics(pmodel, pdata, q)
    p1, p2 = (pdata.oMf[pmodel.getFrameId(f)].translation for f in (frame1, frame2))
    np.testing.assert_allclose(p1, p2, rtol=0, atol=TOL)
    # the closure is a proper loop: its constraint Jacobian has rank 2 (the planar rows)
    J = dynamics.frame_jacobian(model, q, frame1, "LOCAL_WORLD_ALIGNED") - dynamics.frame_jacobian(
        model, q, frame2, "LOCAL_WORLD_ALIGNED"
    )
    assert np.linalg.matrix_rank(J[:3], tol=1e-9) == 2
