"""SDF loading (Cassie and its loop closures) against Pinocchio, and a short constrained simulation.

The installed Pinocchio is built without SDFormat (``pin.WITH_SDFORMAT`` is False): the oracle
model is built here with Pinocchio's own API from the raw SDF text, by the rules of Pinocchio's
SDF parser (``parsers/sdf/model.hxx``: a joint at its child link's pose times the joint's pose,
the link's body at the inverse of the joint pose in it, depth first in file order, the first
parent joint of a link in the file building the tree); the ball joints close the loops as
Pinocchio CONTACT_3D constraints between the two frames at the joint.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from functools import lru_cache

import numpy as np
import pinocchio as pin
import pytest
from conftest import atol, pin_loop, symmetrize_upper

from liftoff import dynamics
from liftoff.dynamics.robots import robots_dir
from liftoff.dynamics.sdf import load_sdf
from liftoff.problems.bench.constrained import cassie_simulation

CASSIE = robots_dir() / "cassie_description/robots/cassie_v2.sdf"
NSTATES = 20


def _se3(text):
    x = np.array([float(t) for t in (text or "0 0 0 0 0 0").split()])
    return pin.SE3(pin.rpy.rpyToMatrix(*x[3:]), x[:3])


@lru_cache(maxsize=1)
def pinocchio_cassie():
    """Pinocchio's model of cassie_v2.sdf (free-flyer root at the pelvis) and its loop
    closures as ``(joint name, parent link, child link, pose of the joint in the child)``."""
    sdf = ET.parse(CASSIE).getroot().find("model")
    links = {e.get("name"): e for e in sdf.findall("link")}
    joints = sdf.findall("joint")
    pose = {name: _se3(e.findtext("pose")) for name, e in links.items()}
    first_parent = {}
    for j in joints:
        first_parent.setdefault(j.findtext("child").strip(), j.get("name"))
    pmodel = pin.Model()
    joint_frame = {"pelvis": pose["pelvis"]}  # world placement of each link's joint frame
    joint_id = {"pelvis": pmodel.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), "root_joint")}

    def inertia(link):
        inertial = links[link].find("inertial")
        I = {k: float(inertial.findtext(f"inertia/{k}")) for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")}
        M = np.array([[I["ixx"], I["ixy"], I["ixz"]], [I["ixy"], I["iyy"], I["iyz"]], [I["ixz"], I["iyz"], I["izz"]]])
        c = _se3(inertial.findtext("pose"))
        return pin.Inertia(float(inertial.findtext("mass")), c.translation, c.rotation @ M @ c.rotation.T)

    pmodel.addJointFrame(joint_id["pelvis"], 0)
    pmodel.appendBodyToJoint(joint_id["pelvis"], inertia("pelvis"), pin.SE3.Identity())
    pmodel.addBodyFrame("pelvis", joint_id["pelvis"], pin.SE3.Identity(), 0)
    closures = []

    def visit(link):
        for j in joints:
            if j.findtext("parent").strip() != link:
                continue
            name, child = j.get("name"), j.findtext("child").strip()
            cMj = _se3(j.findtext("pose"))
            if first_parent[child] != name:
                closures.append((name, link, child, cMj))
                continue
            joint_frame[child] = pose[child] * cMj
            axis = np.array([float(t) for t in j.findtext("axis/xyz").split()])
            kind = pin.JointModelRevoluteUnaligned if j.get("type") == "revolute" else pin.JointModelPrismaticUnaligned
            placement = joint_frame[link].inverse() * joint_frame[child]
            joint_id[child] = pmodel.addJoint(joint_id[link], kind(axis / np.linalg.norm(axis)), placement, name)
            pmodel.addJointFrame(joint_id[child], 0)
            pmodel.appendBodyToJoint(joint_id[child], inertia(child), cMj.inverse())
            pmodel.addBodyFrame(child, joint_id[child], cMj.inverse(), 0)
            visit(child)

    visit("pelvis")
    for name, parent, child, cMj in closures:
        on_parent = joint_frame[parent].inverse() * pose[child] * cMj
        pmodel.addFrame(pin.Frame(name, joint_id[parent], on_parent, pin.FrameType.OP_FRAME))
        on_child = joint_frame[child].inverse() * pose[child] * cMj
        pmodel.addFrame(pin.Frame(f"{child}_{name}", joint_id[child], on_child, pin.FrameType.OP_FRAME))
    return pmodel, closures


@lru_cache(maxsize=1)
def cassie():
    return load_sdf(CASSIE, root="pelvis")


def random_states(model, rng, n=NSTATES):
    """Configurations within the limits (joints the SDF leaves unbounded within +-pi), normal v, a."""
    lo = np.where(np.isfinite(model.lower_position_limit), model.lower_position_limit, -np.pi)
    hi = np.where(np.isfinite(model.upper_position_limit), model.upper_position_limit, np.pi)
    q = rng.uniform(lo, hi, (n, model.nq))
    quat = rng.standard_normal((n, 4))
    q[:, 3:7] = quat / np.linalg.norm(quat, axis=-1, keepdims=True)
    return q, rng.standard_normal((n, model.nv)), rng.standard_normal((n, model.nv))


def test_tree_and_closures_match_pinocchio():
    model, closures = cassie()
    pmodel, pclosures = pinocchio_cassie()
    assert model.joint_names == tuple(pmodel.names)[1:]
    assert (model.nq, model.nv) == (pmodel.nq, pmodel.nv) == (29, 28)
    assert [(c.frame, c.frame2, c.kind) for c in closures] == [(n, f"{ch}_{n}", "3D") for n, _, ch, _ in pclosures]
    assert len(closures) == 4  # two ball joints per leg: achilles rod - hip, plantar rod - foot
    masses = [float(e.findtext("inertial/mass")) for e in ET.parse(CASSIE).getroot().iter("link")]
    np.testing.assert_allclose(model.mass, sum(masses), rtol=0, atol=1e-12)
    np.testing.assert_allclose(model.mass, sum(y.mass for y in pmodel.inertias), rtol=0, atol=1e-12)


def _placement(model, q, frame):
    R, p = dynamics.frame_placement(model, q, frame)
    return R, p[..., None]


@pytest.mark.parametrize("quantity", ["crba", "rnea", "frames"])
def test_dynamics_match_pinocchio(quantity, rng):
    model, _ = cassie()
    pmodel, _ = pinocchio_cassie()
    pdata = pmodel.createData()
    q, v, a = random_states(model, rng)
    if quantity == "crba":
        ours, ref = dynamics.crba(model, q), pin_loop(lambda q: symmetrize_upper(pin.crba(pmodel, pdata, q)), q)
    elif quantity == "rnea":
        ours, ref = dynamics.rnea(model, q, v, a), pin_loop(lambda *x: pin.rnea(pmodel, pdata, *x), q, v, a)
    else:
        names = [f.name for f in pmodel.frames if f.name != "universe"]
        ours = np.stack([np.concatenate(_placement(model, q, n), axis=-1) for n in names], 1)

        def placements(q):
            pin.framesForwardKinematics(pmodel, pdata, q)
            M = [pdata.oMf[pmodel.getFrameId(n)] for n in names]
            return np.stack([np.concatenate((m.rotation, m.translation[:, None]), axis=-1) for m in M])

        ref = pin_loop(placements, q)
        assert len(names) == 2 * 23 + 8  # joint and body frames of 23 joints (root included), 4 x 2 closure frames
    np.testing.assert_allclose(ours, ref, rtol=0, atol=atol(ref))


def test_loading_by_name_and_bad_files(tmp_path):
    model, closures = load_sdf("cassie")
    assert model.name == "cassie" and closures == cassie()[1]
    np.testing.assert_array_equal(model.frame_translation, cassie()[0].frame_translation)
    with pytest.raises(dynamics.ModelError, match="SDF file not found"):
        load_sdf(tmp_path / "missing.sdf")
    with pytest.raises(dynamics.ModelError, match="joint left-pitch-rod-joint of type 'ball' in the tree"):
        load_sdf(CASSIE.with_name("cassie.sdf"), root="pelvis")  # no spherical joint in liftoff's tree
    (tmp_path / "bad.sdf").write_text("<sdf><model name='m'><link name='a'><pose>0 0</pose></link></model></sdf>")
    with pytest.raises(dynamics.ModelError, match="link a/pose: expected 6 finite numbers"):
        load_sdf(tmp_path / "bad.sdf")


def test_closures_hold_at_neutral_as_the_file_poses_the_links():
    """At ``q = neutral`` every link is at its SDF pose (pelvis at the origin) and the loops close."""
    model, closures = cassie()
    q = dynamics.neutral(model)
    sdf = ET.parse(CASSIE).getroot().find("model")
    pelvis = _se3(sdf.find("link").findtext("pose")).inverse()
    for e in sdf.findall("link"):
        R, p = dynamics.frame_placement(model, q, e.get("name"))
        M = pelvis * _se3(e.findtext("pose"))
        np.testing.assert_allclose(np.c_[R, p], np.c_[M.rotation, M.translation], rtol=0, atol=1e-12)
    for c in closures:
        gap = dynamics.frame_placement(model, q, c.frame)[1] - dynamics.frame_placement(model, q, c.frame2)[1]
        np.testing.assert_allclose(gap, 0.0, rtol=0, atol=1e-8)


def test_loop_constrained_dynamics_matches_pinocchio(rng):
    """Free (no ground) Cassie with its four loop closures: liftoff's proximal solve against
    Pinocchio's constraintDynamics with CONTACT_3D loop constraints, at random states, to 1e-8
    relative (measured 5e-13). The 12 rows have rank 10 (each foot's planar four-bar has a
    redundant out-of-plane row): both return the least-norm forces."""
    model, closures = cassie()
    pmodel, _ = pinocchio_cassie()
    cml, cdl = pin.StdVec_RigidConstraintModel(), pin.StdVec_RigidConstraintData()
    for c in closures:
        f1, f2 = pmodel.frames[pmodel.getFrameId(c.frame)], pmodel.frames[pmodel.getFrameId(c.frame2)]
        cm = pin.RigidConstraintModel(
            pin.ContactType.CONTACT_3D, pmodel, f1.parentJoint, f1.placement, f2.parentJoint, f2.placement, pin.LOCAL
        )
        cml.append(cm)
        cdl.append(cm.createData())
    pdata = pmodel.createData()
    pin.initConstraintDynamics(pmodel, pdata, cml, cdl)
    settings = pin.ProximalSettings(1e-14, 1e-12, 50)
    q, v, tau = random_states(model, rng, 10)
    ref_a, ref_f = [], []
    for row in zip(q, v, tau):
        ref_a.append(pin.constraintDynamics(pmodel, pdata, *row, cml, cdl, settings).copy())
        ref_f.append(np.concatenate([cd.contact_force.linear for cd in cdl]))
    a, f = dynamics.constrained_dynamics(model, q, v, tau, closures, mu=1e-12, max_iter=50)
    np.testing.assert_allclose(a, ref_a, rtol=0, atol=atol(ref_a))
    np.testing.assert_allclose(f, ref_f, rtol=0, atol=atol(ref_f))


def test_short_simulation_keeps_the_loops_closed():
    """0.1 s at 1 kHz of seed 000's Cassie simulation (PD at the posture of the file until 0.05 s,
    then limp; feet held at heel and toe). Measured: the largest loop gap 2.6e-7 m with Baumgarte
    (the first steps' transient, semi-implicit Euler's O(dt^2) error on accelerations of ~10 m/s^2
    before the 100 rad/s correction acts), 7.6e-8 m at 0.1 s against 7.4e-7 m without Baumgarte.
    Bounds: 1e-6 m (4x the measure), and Baumgarte at least 4x below the uncorrected run."""
    run = cassie_simulation(duration=0.1, release=0.05, baumgarte=True)
    free = cassie_simulation(duration=0.1, release=0.05, baumgarte=False)
    assert np.all(np.isfinite(run["q"])) and run["q"].shape == (101, 29)
    assert run["drift"].max() < 1e-6
    assert run["drift"][-1] < 0.25 * free["drift"][-1]
