"""Redundant contacts in the OCP, second case: Talos standing on its two soles (6D contacts)
with its right hand held on a vertical wall (a 6D contact), leaning toward the wall while a cost
pulls its CoM further toward it: the hand pushes on the wall.

Redundant variants hold the hand twice: its contact listed twice, or a 3D contact at a point of
the same body (the wrist's force-torque sensor frame), whose Jacobian ``J_w = A J_h`` is a
combination of the hand's rows. Both solve to the motion of the plain problem with the
least-norm forces of seed 000 (no component in the null space of ``J^T``): ``f_w = A f_h``,
equal halves for the duplicate, the pair's wrench ``f_h + A^T f_w`` at the hand the plain one.
A 3D contact on the elbow is rank deficient too, by one row: the elbow keeps its distance to the
wrist's centre, a point of the held hand. Its two other rows stop the arm's swivel, so its
motion is another; both formulations agree on it, the non-lifted forces least-norm, the
lifted ones off by 2e-4 N along the null space, which turns with the arm's joints.

The wall takes the arm's weight too: a bilateral 6D contact carries what lowers the torques
(measured: 52-59 N up, 17-34 N along the normal). The OCP's friction cones are world-z pyramids
on 3D contacts, not a wall's: they are off. The compiled backend is left out: its kernels for
Talos take minutes to compile."""

from __future__ import annotations

import dataclasses

import numpy as np
import pinocchio as pin
import pytest

from liftoff import dynamics
from liftoff.dynamics import Contact
from liftoff.ocp.costs import CenterOfMassCost, StateCost, VariableCost
from liftoff.ocp.formulation import Formulation
from liftoff.ocp.problem import OCP, ContactStage
from liftoff.problems.bench.common import pinocchio_model
from liftoff.problems.bench.constrained import ContactCase, PinConstrained
from liftoff.solvers.ipm import Options, solve

SOLES = ("left_sole_link", "right_sole_link")
HAND = "gripper_right_base_link"  # on the body of arm_right_7_joint, as WRIST
WRIST = "wrist_right_ft_link"
ELBOW = "arm_right_4_link"
NORMAL = np.array([0.0, 1.0, 0.0])  # the wall's, toward the robot: the wall is on its right
LEAN = 0.15  # the hip and ankle rolls [rad] that shift the pelvis toward the wall, the soles flat
POSTURE = {
    "arm_right_2_joint": -1.4,  # the right arm raised sideways
    "arm_right_4_joint": -0.2,  # the elbow almost straight
    "gripper_left_joint": -0.5,  # the grippers half closed, away from their limit at 0
    "gripper_right_joint": -0.5,
}
PULL = 0.01  # the CoM reference, that far beyond the initial CoM toward the wall [m]
KNOTS, DT = 10, 0.03
KP, KD = 625.0, 50.0  # Baumgarte gains (seed 004 eq. 5, alpha = beta = 25)
FORMULATIONS = ("lifted", "nonlifted")
PLAIN = (ContactCase((*SOLES, HAND), "6D", "LOCAL"),)  # Pinocchio's contacts of the plain problem
PROXIMAL = dict(mu=1e-2, max_iter=200, tol=1e-13)  # Pinocchio's; at mu = 1e-8 a duplicate's forces are 6e-4 N off


def leaning_posture(model):
    """Half-sitting, leaning toward the wall (``LEAN``), the right arm reaching for it; the base
    placed so that the soles' midpoint is at the origin."""
    named = dynamics.robots.named_configuration("talos", "half_sitting")
    named.update(POSTURE)
    for side in ("left", "right"):
        named[f"leg_{side}_2_joint"] = LEAN
        named[f"leg_{side}_6_joint"] = named[f"leg_{side}_6_joint"] - LEAN
    q = np.concatenate(([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0], [named.get(j, 0.0) for j in model.joint_names[1:]]))
    q[:3] -= np.mean([dynamics.frame_placement(model, q, s)[1] for s in SOLES], axis=0)
    return q


def held(model, q, frame, kind="6D"):
    """``frame`` held where it is at ``q``."""
    R, p = dynamics.frame_placement(model, q, frame)
    return Contact(frame, kind, "LOCAL", kp=KP, kd=KD, placement=(R, p) if kind == "6D" else p)


def wall_ocp():
    """The plain problem: the soles and the hand held, ``KNOTS`` stages of ``DT``; costs:
    the state toward the initial one, the CoM toward the wall, the torques toward zero."""
    model = dynamics.load("talos")
    q0, v0, nv = leaning_posture(model), np.zeros(model.nv), model.nv
    contacts = tuple(held(model, q0, frame) for frame in (*SOLES, HAND))
    weights = np.concatenate(([10.0] * 6, [1.0] * (nv - 6), [1.0] * 6, [0.1] * (nv - 6)))
    com = CenterOfMassCost(dynamics.center_of_mass(model, q0) - PULL * NORMAL, 1e3 * NORMAL, "com")
    costs = (StateCost(q0, v0, weights, "state"), com, VariableCost("u", np.zeros(nv - 6), 1e-3, "control"))
    stages = tuple(ContactStage(contacts, DT, costs) for _ in range(KNOTS))
    terminal = (StateCost(q0, v0, 10 * weights, "state"), com)
    return OCP(model, q0, v0, stages, terminal, friction=None)


def variant(ocp, name):
    """``ocp`` with a redundant contact added to every stage: ``twice`` the hand's listed again,
    ``wrist`` a 3D contact at WRIST, ``elbow`` one at ELBOW; and its contacts for Pinocchio."""
    frame, kind = {"twice": (HAND, "6D"), "wrist": (WRIST, "3D"), "elbow": (ELBOW, "3D")}[name]
    extra = held(ocp.model, ocp.q0, frame, kind)
    stages = tuple(dataclasses.replace(s, contacts=s.contacts + (extra,)) for s in ocp.stages)
    return dataclasses.replace(ocp, stages=stages), PLAIN + (ContactCase((frame,), kind, "LOCAL"),)


def solved(ocp, name):
    form = Formulation(ocp, name, "numpy")
    result = solve(form, Options())
    assert result.status == "converged", result.message
    trajectories = form.trajectories(result.iterate)
    return form, result, trajectories, np.array(trajectories["f"])


def hand_point(model, q):
    """``A (K, 3, 6)``: the velocity of WRIST in its axes from the hand's LOCAL velocity, at each
    ``q``; ``A^T f`` is the wrench at the hand of a force ``f`` at WRIST."""
    R_h, p_h = dynamics.frame_placement(model, q, HAND)
    R_w, p_w = dynamics.frame_placement(model, q, WRIST)
    R = np.swapaxes(R_h, 1, 2) @ R_w  # the wrist's axes in the hand's
    r = np.einsum("sji,sj->si", R_h, p_w - p_h)  # the wrist's origin in the hand's axes
    cross = np.zeros(r.shape + (3,))
    cross[:, 0, 1], cross[:, 0, 2], cross[:, 1, 2] = -r[:, 2], r[:, 1], -r[:, 0]
    cross = cross - np.swapaxes(cross, 1, 2)
    return np.swapaxes(R, 1, 2) @ np.concatenate((np.broadcast_to(np.eye(3), R.shape), -cross), axis=2)


def split(ocp, q, f):
    """The forces ``f (K, m)`` of the stages at ``q (K, nq)`` as ``(range part, null part)``: their
    components in the range of ``J(q)`` and in the null space of ``J(q)^T``, which moves nothing."""
    contacts = tuple(dataclasses.replace(c, placement=None, kp=0.0, kd=0.0) for c in ocp.stages[0].contacts)
    U, sigma, _ = np.linalg.svd(dynamics.contact_jacobian(ocp.model, q, contacts))
    null = U * (sigma < 1e-9 * sigma[:, :1])[:, None, :]
    part = np.einsum("smn,sn->sm", null, np.einsum("smn,sm->sn", null, f))
    return f - part, part


def pinocchio_first_stage(ocp, form, trajectories, cases):
    """Pinocchio's ``(a, f)`` at the first stage's solved state and torques."""
    model = ocp.model
    reference = PinConstrained(pin, pinocchio_model(pin, model, "talos"), cases, PROXIMAL)
    q, v = trajectories["q"][:1], trajectories["v"][:1]
    tau = form.S @ trajectories["u"][0] + dynamics.passive_torque(model, v[0], ocp.joint_friction_width)
    a, f = reference.values(q, v, tau[None], derivatives=False)["constrained_dynamics"]
    return a[0], f[0]


@pytest.fixture(scope="module")
def plain():
    ocp = wall_ocp()
    return ocp, {name: solved(ocp, name) for name in FORMULATIONS}


def test_both_formulations_reach_one_optimum(plain):
    """Measured: 10 (lifted) and 11 iterations, costs equal to 2e-8 (of 20.9), q to 2.5e-8,
    v to 8e-7, u to 2e-6, the forces to 2.1e-5 (of 567 N): the solver's tolerance."""
    ocp, runs = plain
    (form, lifted, a, f_a), (_, nonlifted, b, f_b) = runs["lifted"], runs["nonlifted"]
    assert not any(form.redundant(g) for g in form.groups)
    assert lifted.iterations <= 15 and nonlifted.iterations <= 15
    np.testing.assert_allclose(nonlifted.cost, lifted.cost, rtol=1e-7)
    np.testing.assert_allclose(b["q"], a["q"], rtol=0, atol=3e-6)
    np.testing.assert_allclose(b["v"], a["v"], rtol=0, atol=1e-4)
    np.testing.assert_allclose(b["u"], a["u"], rtol=0, atol=2e-4)
    np.testing.assert_allclose(f_b, f_a, rtol=0, atol=2e-3)
    assert np.max(np.abs(a["v"])) > 1e-2  # the robot moves


@pytest.mark.parametrize("name", FORMULATIONS)
def test_first_stage_is_pinocchio_constrained_dynamics(plain, name):
    """Measured: a to 2e-12 (lifted) and 3e-10, f to 2e-13 and 9e-10 N."""
    ocp, runs = plain
    form, _, got, f = runs[name]
    a_pin, f_pin = pinocchio_first_stage(ocp, form, got, PLAIN)
    np.testing.assert_allclose(got["a"][0], a_pin, rtol=0, atol=1e-7)
    np.testing.assert_allclose(f[0], f_pin, rtol=0, atol=1e-7)
    assert np.max(np.abs(f_pin)) > 100.0


def test_the_hand_pushes_on_the_wall(plain):
    """The wall's force on the hand along its normal, toward the robot: measured 17 to 34 N
    over the stages, while the CoM moves 2.7 mm toward the wall."""
    ocp, runs = plain
    _, _, got, f = runs["lifted"]
    R, _ = dynamics.frame_placement(ocp.model, got["q"][:-1], HAND)
    normal = np.einsum("sij,sj->si", R, f[:, 12:15]) @ NORMAL
    assert np.all(normal > 10.0), normal
    com = dynamics.center_of_mass(ocp.model, got["q"]) @ NORMAL
    assert com[-1] < com[0] - 2e-3
    assert np.all(np.diff(com) <= 1e-12)


@pytest.mark.parametrize("kind", ["twice", "wrist"])
@pytest.mark.parametrize("name", FORMULATIONS)
def test_a_redundant_hand_reaches_the_plain_optimum(plain, kind, name):
    """Measured (each case): the plain number of iterations, costs equal to 1.3e-8, q to 1e-8,
    v to 3e-7, u to 1.5e-6, the soles' forces to 1e-5 N, the pair's wrench to 7e-6; the split
    least-norm to 1.5e-12 (lifted) and 6e-10 (N, Nm); the first stage Pinocchio's to 5e-10."""
    ocp, runs = plain
    _, reference, ref, f_ref = runs[name]
    redundant, cases = variant(ocp, kind)
    form, result, got, f = solved(redundant, name)
    assert all(form.redundant(g) for g in form.groups)
    assert result.iterations == reference.iterations
    np.testing.assert_allclose(result.cost, reference.cost, rtol=1e-7)
    np.testing.assert_allclose(got["q"], ref["q"], rtol=0, atol=1e-6)
    np.testing.assert_allclose(got["v"], ref["v"], rtol=0, atol=3e-5)
    np.testing.assert_allclose(got["u"], ref["u"], rtol=0, atol=2e-4)
    np.testing.assert_allclose(f[:, :12], f_ref[:, :12], rtol=0, atol=1e-3)
    f_h, f_x = f[:, 12:18], f[:, 18:]
    A = np.broadcast_to(np.eye(6), (KNOTS, 6, 6)) if kind == "twice" else hand_point(ocp.model, got["q"][:-1])
    np.testing.assert_allclose(f_h + np.einsum("sji,sj->si", A, f_x), f_ref[:, 12:18], rtol=0, atol=1e-3)
    np.testing.assert_allclose(f_x, np.einsum("sij,sj->si", A, f_h), rtol=0, atol=1e-7)  # least-norm
    assert np.max(np.abs(f_x)) > 10.0  # the second copy carries its share
    np.testing.assert_allclose(split(redundant, got["q"][:-1], f)[1], 0.0, rtol=0, atol=1e-7)
    a_pin, f_pin = pinocchio_first_stage(redundant, form, got, cases)
    np.testing.assert_allclose(got["a"][0], a_pin, rtol=0, atol=1e-7)
    np.testing.assert_allclose(f[0], f_pin, rtol=0, atol=1e-7)


def test_the_wrist_point_is_the_hand_seen_elsewhere(plain):
    """``A`` maps the hand's LOCAL Jacobian onto the wrist point's."""
    ocp, _ = plain
    q = ocp.q0[None]
    J_h = dynamics.frame_jacobian(ocp.model, q, HAND, "LOCAL")
    J_w = dynamics.frame_jacobian(ocp.model, q, WRIST, "LOCAL")[:, :3]
    np.testing.assert_allclose(hand_point(ocp.model, q) @ J_h, J_w, rtol=0, atol=1e-12)


def test_an_elbow_contact_is_redundant_by_one_row(plain):
    """The elbow held too: another motion, at a lower cost (measured: 14.75, the plain one 20.89;
    q 0.11 apart), on which both formulations agree in 13 iterations (measured: q to 1.3e-9, v to
    1.6e-8, u to 1.5e-7). The forces agree up to the null space of ``J^T`` (measured: 4.4e-6 N);
    the non-lifted ones are least-norm (1e-11 N), the lifted ones 2.2e-4 N from it: the null
    space turns with the arm's joints, and the lifted steps are least-norm, not the forces. The
    first stage is Pinocchio's (a to 2e-12, f to 1e-11 N)."""
    ocp, runs = plain
    redundant, cases = variant(ocp, "elbow")
    contacts = tuple(dataclasses.replace(c, placement=None, kp=0.0, kd=0.0) for c in redundant.stages[0].contacts)
    sigma = np.linalg.svd(dynamics.contact_jacobian(ocp.model, ocp.q0[None], contacts)[0], compute_uv=False)
    assert np.sum(sigma < 1e-9 * sigma[0]) == 1
    (form, lifted, a, f_a), (_, nonlifted, b, f_b) = (solved(redundant, name) for name in FORMULATIONS)
    assert all(form.redundant(g) for g in form.groups)
    assert lifted.iterations <= 20 and nonlifted.iterations <= 20
    np.testing.assert_allclose(nonlifted.cost, lifted.cost, rtol=1e-7)
    assert lifted.cost < runs["lifted"][1].cost - 1.0
    assert np.max(np.abs(a["q"] - runs["lifted"][2]["q"])) > 1e-2
    np.testing.assert_allclose(b["q"], a["q"], rtol=0, atol=2e-7)
    np.testing.assert_allclose(b["v"], a["v"], rtol=0, atol=2e-6)
    np.testing.assert_allclose(b["u"], a["u"], rtol=0, atol=2e-5)
    (range_a, null_a), (range_b, null_b) = split(redundant, a["q"][:-1], f_a), split(redundant, b["q"][:-1], f_b)
    np.testing.assert_allclose(range_b, range_a, rtol=0, atol=5e-4)
    np.testing.assert_allclose(null_b, 0.0, rtol=0, atol=1e-9)
    np.testing.assert_allclose(null_a, 0.0, rtol=0, atol=1e-2)
    a_pin, f_pin = pinocchio_first_stage(redundant, form, a, cases)
    np.testing.assert_allclose(a["a"][0], a_pin, rtol=0, atol=1e-7)
    np.testing.assert_allclose(f_a[0], f_pin, rtol=0, atol=1e-7)
