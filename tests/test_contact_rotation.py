"""A constant rotation ``R_c`` of a translational contact's axes (``Contact.rotation``): its rows
are ``R_c^T`` times the unrotated 3D rows, its force ``R_c^T`` times the unrotated force; its
derivatives against finite differences; Pinocchio's CONTACT_3D whose placement is turned by
``R_c``; the SX twin and the compiled kernels; friction cones, the initial guess and the
world forces of the OCP; and the validation of the rotation."""

from __future__ import annotations

import dataclasses

import casadi as ca
import numpy as np
import pinocchio as pin
import pytest
from conftest import atol, load_pair, random_states, regular_configurations
from test_contact_derivatives import (
    KD,
    KP,
    SOLVE,
    SOLVE_EPS,
    assert_derivatives,
    finite_difference_jacobians,
    split_rows,
)
from test_kernels import compare_groups

from liftoff import dynamics
from liftoff.dynamics import symbolic as sx
from liftoff.ocp import symbolic_stages as sym
from liftoff.ocp.costs import StateCost, VariableCost
from liftoff.ocp.formulation import Formulation
from liftoff.ocp.friction import friction_cones
from liftoff.ocp.kernels import CompiledStages
from liftoff.ocp.problem import OCP, ContactStage

FRAMES = {"anymal": ("LF_FOOT", "LH_FOOT", "RF_FOOT", "RH_FOOT"), "talos": ("left_sole_link", "right_sole_link")}
REFERENCES = ("LOCAL", "WORLD", "LOCAL_WORLD_ALIGNED")
KINDS = ("z", "3D")
N = 3  # random states per check

CASES = [(name, reference, kind) for name in FRAMES for reference in REFERENCES for kind in KINDS]


def case_id(case):
    return "-".join(case)


def rotations(rng, n):
    """``n`` random rotations, far from the identity."""
    return [pin.exp3(w) for w in 2.0 * rng.standard_normal((n, 3))]


def contacts(name, reference, kind, turns, targets=None):
    """A contact of ``kind`` on each frame of ``name``, its axes turned by ``turns`` (``None``:
    not turned), with Baumgarte gains and position targets ``(B, nframes, 3)`` if given."""
    out = []
    for i, (frame, R_c) in enumerate(zip(FRAMES[name], turns)):
        gains = {} if targets is None else dict(kp=KP, kd=KD, placement=targets[:, i])
        out.append(dynamics.Contact(frame, kind, reference, rotation=R_c, **gains))
    return out


def targets_near(model, name, q, rng):
    """Position targets ``(B, nframes, 3)`` ~0.1 m from the frames at ``q``."""
    p = np.stack([dynamics.frame_placement(model, q, f)[1] for f in FRAMES[name]], axis=1)
    return p + 0.1 * rng.standard_normal(p.shape)


def turned(rows, turns, kind):
    """The rows ``(B, 3 nc, ...)`` of unrotated 3D contacts turned into the axes ``R_c`` of each
    contact, keeping the rows of ``kind``: ``(R_c^T rows)[kind's rows]``."""
    sel = list(dynamics.Contact("f", kind).rows)
    blocks = [np.einsum("ji,bj...->bi...", R_c, rows[:, 3 * i : 3 * i + 3])[:, sel] for i, R_c in enumerate(turns)]
    return np.concatenate(blocks, axis=1)


def assert_close(got, expected, tol, what=""):
    assert got.shape == expected.shape, what
    np.testing.assert_allclose(got, expected, rtol=0, atol=atol(expected, tol), err_msg=what)


# ----------------------------------------------------------------------------- the rows and the forces


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_rows_are_the_unrotated_3d_rows_turned(case, rng):
    """Jacobian, velocity and acceleration rows (with kp, kd and a target): ``R_c^T`` times
    those of the unrotated 3D contact, the third row of it for a 1D ``"z"`` contact."""
    name, reference, kind = case
    model = load_pair(name)[0]
    q, v, a = random_states(model, rng, N)
    T = targets_near(model, name, q, rng)
    turns = rotations(rng, len(FRAMES[name]))
    plain = contacts(name, reference, "3D", [None] * len(turns), T)
    rotated = contacts(name, reference, kind, turns, T)
    pieces = {
        "J": lambda c: dynamics.contact_jacobian(model, q, c),
        "velocity": lambda c: dynamics.contact_velocity(model, q, v, c),
        "acceleration": lambda c: dynamics.contact_acceleration(model, q, v, a, c),
    }
    for what, fn in pieces.items():
        expected = turned(fn(plain), turns, kind)
        assert_close(fn(rotated), expected, 1e-12, what)
        assert np.max(np.abs(fn(rotated) - turned(fn(plain), [np.eye(3)] * len(turns), kind))) > 1e-3, what


def test_identity_rotation_changes_nothing(rng):
    """``rotation=None`` is the identity: an explicit identity gives the same rows."""
    model = load_pair("anymal")[0]
    q, v, a = random_states(model, rng, N)
    T = targets_near(model, "anymal", q, rng)
    for reference in REFERENCES:
        plain = contacts("anymal", reference, "3D", [None] * 4, T)
        identity = contacts("anymal", reference, "3D", [np.eye(3)] * 4, T)
        expected = dynamics.contact_acceleration(model, q, v, a, plain)
        np.testing.assert_array_equal(dynamics.contact_acceleration(model, q, v, a, identity), expected)


@pytest.mark.parametrize("reference", REFERENCES)
def test_constrained_dynamics_gives_the_same_motion_and_turned_forces(reference, rng):
    """Turning the axes of 3D contacts changes the forces' coordinates (``R_c^T f``), not the
    motion; with Baumgarte gains and targets too."""
    model = load_pair("anymal")[0]
    turns = rotations(rng, 4)
    q = regular_configurations(model, rng, N, contacts("anymal", reference, "3D", turns))
    _, v, tau = random_states(model, rng, N)
    T = targets_near(model, "anymal", q, rng)
    solve = lambda turns: dynamics.constrained_dynamics(  # noqa: E731
        model, q, v, tau, contacts("anymal", reference, "3D", turns, T), **SOLVE
    )
    (a, f), (a_rot, f_rot) = solve([None] * 4), solve(turns)
    assert_close(a_rot, a, 1e-9, "a")
    assert_close(f_rot, turned(f, turns, "3D"), 1e-9, "f")


# ----------------------------------------------------------------------------- derivatives


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_derivatives_equal_finite_differences(case, rng):
    """Contact velocity, acceleration and inverse dynamics derivatives (kp, kd and targets),
    constrained and impulse dynamics derivatives of rotated contacts."""
    name, reference, kind = case
    model = load_pair(name)[0]
    turns = rotations(rng, len(FRAMES[name]))
    q = regular_configurations(model, rng, N, contacts(name, reference, kind, turns))
    _, v, a = random_states(model, rng, N)
    T = targets_near(model, name, q, rng)
    held = lambda T: contacts(name, reference, kind, turns, T)  # noqa: E731
    f = 10 * rng.standard_normal((N, sum(c.dim for c in held(T))))

    ours = dynamics.contact_velocity_derivatives(model, q, v, held(T))
    fn = lambda q, v, T: dynamics.contact_velocity(model, q, v, held(T))  # noqa: E731
    fds = finite_difference_jacobians(fn, (q, v, T), model, 2)
    assert_derivatives(ours, fds, ("velocity d_dq", "velocity d_dv"))
    ours = dynamics.contact_acceleration_derivatives(model, q, v, a, held(T))
    fn = lambda q, v, a, T: dynamics.contact_acceleration(model, q, v, a, held(T))  # noqa: E731
    fds = finite_difference_jacobians(fn, (q, v, a, T), model, 3)
    assert_derivatives(ours, fds, ("acceleration d_dq", "acceleration d_dv", "acceleration d_da"))
    ours = dynamics.contact_inverse_dynamics_derivatives(model, q, v, a, f, held(T))
    fn = lambda q, v, a, f, T: dynamics.contact_inverse_dynamics(model, q, v, a, f, held(T))  # noqa: E731
    fds = finite_difference_jacobians(fn, (q, v, a, f, T), model, 4)
    assert_derivatives(ours, fds, ("ID d_dq", "ID d_dv", "ID d_da", "ID d_df"))

    tau = dynamics.rnea(model, q, v, a)
    ours = dynamics.constrained_dynamics_derivatives(model, q, v, tau, held(T), **SOLVE)

    def solve(q, v, tau, T):
        return np.concatenate(dynamics.constrained_dynamics(model, q, v, tau, held(T), **SOLVE), axis=-1)

    fds = split_rows(finite_difference_jacobians(solve, (q, v, tau, T), model, 3, SOLVE_EPS), model.nv)
    assert_derivatives(ours, fds, ("da_dq", "da_dv", "da_dtau", "df_dq", "df_dv", "df_dtau"))
    plain = held(None)  # impulses: no Baumgarte terms
    ours = dynamics.impulse_dynamics_derivatives(model, q, v, plain, **SOLVE)
    jump = lambda q, v: np.concatenate(dynamics.impulse_dynamics(model, q, v, plain, **SOLVE), axis=-1)  # noqa: E731
    fds = split_rows(finite_difference_jacobians(jump, (q, v), model, 2, SOLVE_EPS), model.nv)
    assert_derivatives(ours, fds, ("dvplus_dq", "dvplus_dv", "dimpulse_dq", "dimpulse_dv"))


# ----------------------------------------------------------------------------- Pinocchio


def pin_rotated_constraints(pmodel, contacts):
    """Pinocchio's CONTACT_3D in LOCAL of LOCAL 3D contacts, ``joint1_placement`` the frame's
    placement turned by the contact's rotation; the Baumgarte target (``joint2_placement``)
    is the contact's ``placement`` (one for all states)."""
    cml = pin.StdVec_RigidConstraintModel()
    for c in contacts:
        frame = pmodel.frames[pmodel.getFrameId(c.frame)]
        placement = pin.SE3(frame.placement.rotation @ c.rotation, frame.placement.translation)
        target = pin.SE3(np.eye(3), np.zeros(3) if c.placement is None else np.asarray(c.placement, dtype=float))
        cm = pin.RigidConstraintModel(
            pin.ContactType.CONTACT_3D, pmodel, frame.parentJoint, placement, 0, target, pin.LOCAL
        )
        gains = cm.m_baumgarte_parameters
        gains.Kp, gains.Kd = c.kp, c.kd
        cm.setBaumgarteCorrectorParameters(gains)
        cml.append(cm)
    return cml


@pytest.mark.parametrize("kp, kd", [(0.0, 0.0), (30.0, 5.0)])
def test_local_rotated_3d_contacts_equal_pinocchio(kp, kd, rng):
    """ANYmal on four LOCAL 3D contacts whose axes are turned by ``R_c``: accelerations, forces
    and their derivatives equal Pinocchio's with ``joint1_placement`` turned by ``R_c``."""
    model, pmodel = load_pair("anymal")
    turns = rotations(rng, 4)
    targets = [rng.standard_normal(3) if kp > 0 else None for _ in turns]
    held = [
        dynamics.Contact(f, "3D", "LOCAL", kp=kp, kd=kd, placement=p, rotation=R_c)
        for f, p, R_c in zip(FRAMES["anymal"], targets, turns)
    ]
    q = regular_configurations(model, rng, 5, held)
    _, v, tau = random_states(model, rng, 5)
    cml = pin_rotated_constraints(pmodel, held)
    settings = pin.ProximalSettings(1e-14, 1e-12, 50)
    ref = {key: [] for key in ("a", "f", "da_dq", "da_dv", "df_dq", "df_dv")}
    for qs, vs, taus in zip(q, v, tau):
        pdata, cdl = pmodel.createData(), pin.StdVec_RigidConstraintData()
        for cm in cml:
            cdl.append(cm.createData())
        pin.initConstraintDynamics(pmodel, pdata, cml, cdl)
        ref["a"].append(pin.constraintDynamics(pmodel, pdata, qs, vs, taus, cml, cdl, settings).copy())
        ref["f"].append(np.concatenate([cd.contact_force.linear for cd in cdl]))
        pin.computeConstraintDynamicsDerivatives(pmodel, pdata, cml, cdl, settings)
        for key, x in (("da_dq", pdata.ddq_dq), ("da_dv", pdata.ddq_dv)):
            ref[key].append(np.array(x))
        for key, x in (("df_dq", pdata.dlambda_dq), ("df_dv", pdata.dlambda_dv)):
            ref[key].append(np.array(x))
    ref = {key: np.array(x) for key, x in ref.items()}
    a, f = dynamics.constrained_dynamics(model, q, v, tau, held, tol=1e-12, max_iter=50)
    da_dq, da_dv, _, df_dq, df_dv, _ = dynamics.constrained_dynamics_derivatives(
        model, q, v, tau, held, tol=1e-12, max_iter=50
    )
    for key, x in zip(ref, (a, f, da_dq, da_dv, df_dq, df_dv)):
        assert_close(x, ref[key], 1e-8, key)


# ----------------------------------------------------------------------------- the SX twin


@pytest.mark.parametrize("case", [c for c in CASES if c[0] == "anymal"], ids=case_id)
def test_symbolic_rows_equal_numpy(case, rng):
    """The SX rows (velocity, Baumgarte acceleration) and ``J^T f`` of rotated contacts equal
    :mod:`dynamics.contacts`."""
    name, reference, kind = case
    model = load_pair(name)[0]
    turns = rotations(rng, len(FRAMES[name]))
    q, v, a = random_states(model, rng, N)
    T = targets_near(model, name, q, rng)
    qs, vs, as_, ts = (ca.SX.sym(n, k) for n, k in (("q", model.nq), ("v", model.nv), ("a", model.nv), ("t", 3)))
    kin = sx.forward(model, sx.configuration(model, qs), vs, as_)
    for i, frame in enumerate(FRAMES[name]):
        c = dynamics.Contact(frame, kind, reference, kp=KP, kd=KD, placement=T[:, i], rotation=turns[i])
        fs = ca.SX.sym("f", c.dim)
        rows = sx.contact_rows(model, kin, c, fs, ts)
        tau = sx.generalized_forces(model, sx.forward(model, sx.configuration(model, qs)), rows.wrenches)
        alpha = rows.acceleration + KD * rows.velocity + KP * rows.error
        fn = ca.Function("rows", [qs, vs, as_, fs, ts], [rows.velocity, alpha, tau])
        f = rng.standard_normal((N, c.dim))
        held = [c]
        J = dynamics.contact_jacobian(model, q, held)
        vel = dynamics.contact_velocity(model, q, v, held)
        acc = dynamics.contact_acceleration(model, q, v, a, held)
        for b in range(N):
            got = [np.asarray(x).ravel() for x in fn(q[b], v[b], a[b], f[b], T[b, i])]
            assert_close(got[0], vel[b], 1e-10, "velocity")
            assert_close(got[1], acc[b], 1e-9, "acceleration")
            assert_close(got[2], J[b].T @ f[b], 1e-10, "J^T f")


# ----------------------------------------------------------------------------- the OCP


def rotated_ocp(turns, reference="LOCAL_WORLD_ALIGNED"):
    """Solo12 on two stages: a 1D ``"z"`` contact on one foot and 3D contacts (with friction
    cones) on two others, their axes turned by ``turns`` (``None``: not turned)."""
    model = load_pair("solo12")[0]
    q0 = dynamics.neutral(model)
    q0[2] = 0.3
    held = (
        dynamics.Contact("FL_FOOT", "z", reference, kp=10.0, kd=2.0, placement=np.zeros(3), rotation=turns[0]),
        dynamics.Contact("FR_FOOT", "3D", reference, rotation=turns[1]),
        dynamics.Contact("HL_FOOT", "3D", "LOCAL", rotation=turns[2]),
    )
    nv = model.nv
    costs = (
        StateCost(q0, np.zeros(nv), np.ones(2 * nv), "state"),
        VariableCost("f", np.arange(7.0), 0.1, "force"),
    )
    stages = (ContactStage(held, 0.01, costs), ContactStage(held, 0.02, costs))
    return OCP(model, q0, np.zeros(nv), stages, (StateCost(q0, np.zeros(nv), np.ones(2 * nv), "state"),))


def test_compiled_kernels_equal_numpy_for_rotated_contacts(rng):
    """Every output of the compiled contact and forward kernels (rows, ``J^T f``, the cones of
    the turned 3D forces) equals numpy's; the kernels of rotated contacts are not those of
    unrotated ones."""
    turns = rotations(rng, 3)
    ocp = rotated_ocp(turns)
    compiled = CompiledStages(ocp, forward=True, quiet=True)
    assert compare_groups(ocp, compiled, rng) == ocp.K
    plain = rotated_ocp([None] * 3)
    assert sym.layout(plain).signature()["contacts"] != sym.layout(ocp).signature()["contacts"]
    with pytest.raises(ValueError, match="not slots of this formulation's kernels"):
        compiled.for_problem(plain, plain.groups())
    other = rotated_ocp([turns[0].T] + turns[1:])  # another rotation of the 1D contact
    with pytest.raises(ValueError, match="not slots of this formulation's kernels"):
        compiled.for_problem(other, other.groups())


@pytest.mark.parametrize("reference", REFERENCES)
def test_friction_cones_bound_the_world_force(reference, rng):
    """The cone of a rotated 3D contact is that of the unrotated contact with the force ``R_c f``:
    values and both derivatives."""
    model = load_pair("anymal")[0]
    q = dynamics.random_configuration(model, rng, N)
    f = 10 * rng.standard_normal((N, 3))
    (R_c,) = rotations(rng, 1)
    rotated = dynamics.Contact("LF_FOOT", "3D", reference, rotation=R_c)
    g, dg_dq, dg_df = friction_cones(model, q, f, [rotated], 0.7)
    g0, dg0_dq, dg0_df = friction_cones(model, q, f @ R_c.T, [dynamics.Contact("LF_FOOT", "3D", reference)], 0.7)
    assert_close(g, g0, 1e-12, "g")
    assert_close(dg_dq, dg0_dq, 1e-12, "dg_dq")
    assert_close(dg_df, dg0_df @ R_c, 1e-12, "dg_df")
    assert np.max(np.abs(g - friction_cones(model, q, f, [dataclasses.replace(rotated, rotation=None)], 0.7)[0])) > 1


def test_initial_weight_share_is_vertical_and_world_forces_are_turned():
    """The ``zero_torque`` start puts the weight share along the reference's z axis, whatever
    the contact's axes: the world force of the rotated 3D contact is vertical, and the 1D
    contact holds the component of it along its axis; the trajectories' world forces are
    ``R_c f`` (``R R_c f`` in LOCAL)."""
    turns = rotations(np.random.default_rng(3), 3)
    ocp = rotated_ocp(turns)
    formulation = Formulation(ocp, "lifted", "numpy", init="zero_torque")
    it = formulation.initial_iterate(0.1)
    model, nv = ocp.model, ocp.model.nv
    share = model.mass * np.linalg.norm(model.gravity) / 4
    f = it.groups[0].w[0, nv:]
    np.testing.assert_allclose(f[0], share * turns[0][2, 2], rtol=0, atol=1e-12)
    np.testing.assert_allclose(f[1:4], share * turns[1][2], rtol=0, atol=1e-12)
    forces = formulation.trajectories(it)["forces"]
    np.testing.assert_allclose(forces["FR_FOOT"], np.tile([0.0, 0.0, share], (ocp.K, 1)), rtol=0, atol=1e-12)
    np.testing.assert_allclose(forces["FL_FOOT"][0], share * turns[0][2, 2] * turns[0][:, 2], rtol=0, atol=1e-12)
    R, _ = dynamics.frame_placement(model, ocp.q0, "HL_FOOT")
    np.testing.assert_allclose(forces["HL_FOOT"][0], R @ turns[2] @ f[4:7], rtol=0, atol=1e-12)


# ----------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    "rotation, message",
    [
        (np.diag([1.0, 1.0, -1.0]), "orthonormal with determinant \\+1"),
        (np.eye(3) + 1e-6, "orthonormal with determinant \\+1"),
        (np.eye(2), "\\(3, 3\\) matrix, got shape \\(2, 2\\)"),
        (np.full((3, 3), np.nan), "must be finite"),
    ],
    ids=["reflection", "not-orthonormal", "shape", "nan"],
)
def test_a_rotation_must_be_a_rotation(rotation, message):
    with pytest.raises(ValueError, match=f"contact on 'LF_FOOT': rotation .*{message}"):
        dynamics.Contact("LF_FOOT", "z", rotation=rotation)


@pytest.mark.parametrize("kind", ["6D", "x y rz"])
def test_a_rotation_needs_a_translational_kind(kind):
    with pytest.raises(ValueError, match="contact on 'LF_FOOT': a rotation .* needs a translational kind"):
        dynamics.Contact("LF_FOOT", kind, rotation=np.eye(3))


def test_rotation_is_read_only_and_part_of_equality():
    R = pin.exp3(np.array([0.1, 0.2, 0.3]))
    c = dynamics.Contact("LF_FOOT", "z", rotation=R)
    with pytest.raises(ValueError):
        c.rotation[0, 0] = 2.0
    assert c == dynamics.Contact("LF_FOOT", "z", rotation=R.copy())
    assert hash(c) == hash(dynamics.Contact("LF_FOOT", "z", rotation=R.copy()))
    assert c != dynamics.Contact("LF_FOOT", "z") and c != dynamics.Contact("LF_FOOT", "z", rotation=R.T)
    assert sym.contact_key(c) != sym.contact_key(dynamics.Contact("LF_FOOT", "z"))
