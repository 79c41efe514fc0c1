"""Constrained and impulse dynamics and their derivatives against Pinocchio's proximal
contact dynamics (``constraintDynamics``, ``impulseDynamics`` and their derivatives), the
algorithms against each other, and the Delassus matrix against a dense computation.

Pinocchio runs with ``mu = 1e-12`` (``mu = 0`` for impulses, see ``pinocchio_reference``);
ours with the default ``mu = 1e-4`` and enough iterations to converge, on configurations
away from kinematic singularities (a 6D contact on the 6-dof UR5 is square and ill-posed
near them, where proximal steps crawl: hundreds of iterations)."""

from __future__ import annotations

from collections import namedtuple

import numpy as np
import pinocchio as pin
import pytest
from conftest import NSTATES, atol, load_pair, regular_configurations

from liftoff import dynamics

FEET = ["LF_FOOT", "LH_FOOT", "RF_FOOT", "RH_FOOT"]
SOLES = ["left_sole_link", "right_sole_link"]
CONTACT_SETS = {"anymal": (FEET, "3D"), "talos": (SOLES, "6D"), "ur5": (["tool0"], "6D")}
REFERENCES = ["LOCAL", "LOCAL_WORLD_ALIGNED"]  # Pinocchio refuses WORLD contacts
SETTINGS = dict(tol=1e-12, max_iter=50)
NSTATES_ORACLE = min(NSTATES, 20)
DERIVATIVES = ("da_dq", "da_dv", "da_dtau", "df_dq", "df_dv", "df_dtau")
IMPULSE_DERIVATIVES = ("dvplus_dq", "dvplus_dv", "dimpulse_dq", "dimpulse_dv")

Case = namedtuple("Case", "model pmodel contacts q v tau")


def make_contacts(name, reference, kp=0.0, kd=0.0, placements=None):
    frames, kind = CONTACT_SETS[name]
    placements = placements or [None] * len(frames)
    return [dynamics.Contact(f, kind, reference, kp=kp, kd=kd, placement=p) for f, p in zip(frames, placements)]


def random_case(name, reference, rng, contacts=None):
    model, pmodel = load_pair(name)
    q = regular_configurations(model, rng, NSTATES_ORACLE, make_contacts(name, reference))
    v, tau = rng.standard_normal((2, NSTATES_ORACLE, model.nv))
    return Case(model, pmodel, contacts or make_contacts(name, reference), q, v, tau)


@pytest.fixture(params=[(n, r) for n in CONTACT_SETS for r in REFERENCES], ids=lambda p: "-".join(p))
def case(request, rng):
    """A robot with its contact set in one reference, and random states."""
    return random_case(*request.param, rng)


# ----------------------------------------------------------------------------- Pinocchio


def pin_constraints(pmodel, contacts):
    """Pinocchio's constraint models and datas of world contacts ("3D" or "6D"); a
    Baumgarte target is the first of the (batched) placements."""
    cml, cdl = pin.StdVec_RigidConstraintModel(), pin.StdVec_RigidConstraintData()
    for c in contacts:
        frame = pmodel.frames[pmodel.getFrameId(c.frame)]
        ctype = pin.ContactType.CONTACT_3D if c.kind == "3D" else pin.ContactType.CONTACT_6D
        reference = getattr(pin, c.reference.name)
        if c.placement is None:
            cm = pin.RigidConstraintModel(ctype, pmodel, frame.parentJoint, frame.placement, reference)
        else:
            R, p = c.placement if isinstance(c.placement, tuple) else (np.eye(3), c.placement)
            target = pin.SE3(np.reshape(R, (-1, 3, 3))[0], np.reshape(p, (-1, 3))[0])
            cm = pin.RigidConstraintModel(ctype, pmodel, frame.parentJoint, frame.placement, 0, target, reference)
        gains = cm.m_baumgarte_parameters
        gains.Kp, gains.Kd = c.kp, c.kd
        cm.setBaumgarteCorrectorParameters(gains)
        cml.append(cm)
        cdl.append(cm.createData())
    return cml, cdl


def pinocchio_reference(case):
    """Pinocchio's constrained and impulse dynamics and derivatives of every state, by name.

    Each state gets fresh datas: ``computeImpulseDynamicsDerivatives`` reads stale data of
    earlier calls (after ``impulseDynamics`` at another state its ``ddq_dq`` is off by O(1)).
    ``impulseDynamics`` makes no proximal iterations, so its error is O(mu): it runs with
    ``mu = 0`` (a plain solve; the constraints here have full rank)."""
    pmodel, contacts = case.pmodel, case.contacts
    cml, _ = pin_constraints(pmodel, contacts)
    settings, impulse_settings = pin.ProximalSettings(1e-14, 1e-12, 50), pin.ProximalSettings(1e-14, 0.0, 1)

    def fresh():
        pdata, cdl = pmodel.createData(), pin.StdVec_RigidConstraintData()
        for cm in cml:
            cdl.append(cm.createData())
        pin.initConstraintDynamics(pmodel, pdata, cml, cdl)
        return pdata, cdl

    def forces(cdl):
        return np.concatenate([cd.contact_force.vector[: c.dim] for c, cd in zip(contacts, cdl)])

    out = {}
    for q, v, tau in zip(case.q, case.v, case.tau):
        pdata, cdl = fresh()
        row = {"a": pin.constraintDynamics(pmodel, pdata, q, v, tau, cml, cdl, settings).copy(), "f": forces(cdl)}
        pin.computeConstraintDynamicsDerivatives(pmodel, pdata, cml, cdl, settings)
        derivatives = (
            pdata.ddq_dq,
            pdata.ddq_dv,
            pdata.ddq_dtau,
            pdata.dlambda_dq,
            pdata.dlambda_dv,
            pdata.dlambda_dtau,
        )
        row.update((key, np.array(x)) for key, x in zip(DERIVATIVES, derivatives))
        pdata, cdl = fresh()
        row["v_plus"] = pin.impulseDynamics(pmodel, pdata, q, v, cml, cdl, 0.0, impulse_settings).copy()
        row["impulse"] = forces(cdl)
        pin.computeImpulseDynamicsDerivatives(pmodel, pdata, cml, cdl, 0.0, impulse_settings)
        # Pinocchio's ddq_dv is d(dv)/dv; ours is d(v + dv)/dv
        derivatives = (pdata.ddq_dq, np.eye(pmodel.nv) + pdata.ddq_dv, pdata.dlambda_dq, pdata.dlambda_dv)
        row.update((key, np.array(x)) for key, x in zip(IMPULSE_DERIVATIVES, derivatives))
        for key, x in row.items():
            out.setdefault(key, []).append(x)
    return {key: np.array(x) for key, x in out.items()}


def assert_equal_outputs(ours, ref, keys, tol=1e-8):
    for key, x in zip(keys, ours):
        assert x.shape == ref[key].shape, key
        np.testing.assert_allclose(x, ref[key], rtol=0, atol=atol(ref[key], tol), err_msg=key)


def assert_converged(sol):
    """The reported constraint residual is ``tol`` relative to the solution's scale (a plain
    ``converged`` flag would fail at rounding level: ``tol = 1e-12`` is near the floor of
    ``|J x - r|`` for ``|x| ~ 1e3``)."""
    np.testing.assert_array_less(sol.residual, atol(sol[0], SETTINGS["tol"]))


# ----------------------------------------------------------------------------- dynamics


@pytest.mark.parametrize("algorithm", dynamics.ALGORITHMS)
def test_constrained_dynamics_equals_pinocchio(case, algorithm):
    """Batched and single-state accelerations and forces equal Pinocchio's."""
    ref = pinocchio_reference(case)
    model, contacts = case.model, case.contacts
    sol = dynamics.constrained_dynamics(model, case.q, case.v, case.tau, contacts, algorithm=algorithm, **SETTINGS)
    assert_converged(sol)
    assert_equal_outputs(sol, ref, ("a", "f"))
    single = dynamics.constrained_dynamics(
        model, case.q[0], case.v[0], case.tau[0], contacts, algorithm=algorithm, **SETTINGS
    )
    assert_equal_outputs(single, {k: ref[k][0] for k in ("a", "f")}, ("a", "f"))


@pytest.mark.parametrize("algorithm", dynamics.ALGORITHMS)
def test_impulse_dynamics_equals_pinocchio(case, algorithm):
    ref = pinocchio_reference(case)
    sol = dynamics.impulse_dynamics(case.model, case.q, case.v, case.contacts, algorithm=algorithm, **SETTINGS)
    assert_converged(sol)
    assert_equal_outputs(sol, ref, ("v_plus", "impulse"))


def test_constrained_dynamics_derivatives_equal_pinocchio(case):
    ref = pinocchio_reference(case)
    ours = dynamics.constrained_dynamics_derivatives(case.model, case.q, case.v, case.tau, case.contacts, **SETTINGS)
    assert_equal_outputs(ours, ref, DERIVATIVES)


def test_impulse_dynamics_derivatives_equal_pinocchio(case):
    ref = pinocchio_reference(case)
    ours = dynamics.impulse_dynamics_derivatives(case.model, case.q, case.v, case.contacts, **SETTINGS)
    assert_equal_outputs(ours, ref, IMPULSE_DERIVATIVES)


def test_algorithms_agree(case):
    """proxLTLs, constrainedABA and the plain KKT solve give proxLTL's solution to 1e-9."""
    model, q, v, tau, contacts = case.model, case.q, case.v, case.tau, case.contacts
    solve = lambda alg: dynamics.constrained_dynamics(model, q, v, tau, contacts, algorithm=alg, **SETTINGS)  # noqa: E731
    jump = lambda alg: dynamics.impulse_dynamics(model, q, v, contacts, algorithm=alg, **SETTINGS)  # noqa: E731
    for run in (solve, jump):
        expected = run("proxLTL")
        for alg in dynamics.ALGORITHMS[1:]:
            for x, y in zip(run(alg), expected):
                np.testing.assert_allclose(x, y, rtol=0, atol=atol(y, 1e-9), err_msg=alg)


# ----------------------------------------------------------------------------- Baumgarte


# Pinocchio has no WORLD contacts: the finite differences of test_contact_derivatives.py
# cover the kp and kd terms there. For 6D LOCAL_WORLD_ALIGNED contacts with kp > 0,
# Pinocchio 4.1's computeConstraintDynamicsDerivatives disagrees with finite differences of
# its own constraintDynamics (ddq_dq off by ~37% on Talos; LOCAL agrees to 4e-8): there the
# forward dynamics are compared, the derivatives are left to the finite differences.
BAUMGARTE = [
    ("anymal", "LOCAL", 30.0, 5.0, True),
    ("anymal", "LOCAL_WORLD_ALIGNED", 30.0, 5.0, True),
    ("talos", "LOCAL", 30.0, 5.0, True),
    ("talos", "LOCAL_WORLD_ALIGNED", 30.0, 5.0, False),
    ("talos", "LOCAL_WORLD_ALIGNED", 0.0, 5.0, True),
    ("ur5", "LOCAL", 30.0, 5.0, True),
    ("ur5", "LOCAL_WORLD_ALIGNED", 30.0, 5.0, False),
]


@pytest.mark.parametrize("name, reference, kp, kd, compare_derivatives", BAUMGARTE, ids=lambda x: str(x))
def test_baumgarte_equals_pinocchio(name, reference, kp, kd, compare_derivatives, rng):
    """``alpha* = -kp e - kd J v`` as Pinocchio's corrector (target placement ``joint2_placement``),
    in the dynamics and their derivatives."""
    frames, kind = CONTACT_SETS[name]
    placements = []
    for _ in frames:  # one target per contact, without batch axis: the same for all states
        R, p = pin.exp3(rng.standard_normal(3)), rng.standard_normal(3)
        placements.append(p if kind == "3D" else (R, p))
    contacts = make_contacts(name, reference, kp, kd, placements)
    case = random_case(name, reference, rng, contacts)
    ref = pinocchio_reference(case)
    sol = dynamics.constrained_dynamics(case.model, case.q, case.v, case.tau, contacts, **SETTINGS)
    assert_equal_outputs(sol, ref, ("a", "f"))
    if compare_derivatives:
        ours = dynamics.constrained_dynamics_derivatives(case.model, case.q, case.v, case.tau, contacts, **SETTINGS)
        assert_equal_outputs(ours, ref, DERIVATIVES)


# ----------------------------------------------------------------------------- Delassus


@pytest.mark.parametrize("mu", [0.0, 1e-4])
def test_delassus_is_dense_osim_inverse(case, mu):
    """``delassus`` returns ``J M^-1 J^T + mu 1`` (dense, from crba and contact_jacobian) and its inverse."""
    model, q, contacts = case.model, case.q, case.contacts
    J = dynamics.contact_jacobian(model, q, contacts)
    expected = J @ np.linalg.solve(dynamics.crba(model, q), np.swapaxes(J, 1, 2)) + mu * np.eye(J.shape[1])
    D, D_inv = dynamics.delassus(model, q, contacts, mu)
    assert D.shape == D_inv.shape == expected.shape
    np.testing.assert_allclose(D, expected, rtol=0, atol=atol(expected, 1e-10))
    identity = np.broadcast_to(np.eye(J.shape[1]), D.shape)
    np.testing.assert_allclose(D_inv @ expected, identity, rtol=0, atol=1e-8)
    np.testing.assert_allclose(D_inv, np.swapaxes(D_inv, 1, 2), rtol=0, atol=atol(D_inv, 1e-12))
    single, single_inv = dynamics.delassus(model, q[0], contacts, mu)
    np.testing.assert_allclose(single, expected[0], rtol=0, atol=atol(expected[0], 1e-10))
    np.testing.assert_allclose(single_inv, D_inv[0], rtol=0, atol=atol(D_inv[0], 1e-10))


@pytest.mark.parametrize("algorithm", dynamics.OSIM_ALGORITHMS)
def test_damped_osim_inverts_the_damped_delassus_matrix(case, algorithm):
    """cABA-OSIM (matrix inversion lemma over the augmented inertias), cABA-OSIMf (floating
    bases), proxPV and proxLTL give ``(J M^-1 J^T + mu 1)^-1`` of the dense oracle (crba and
    contact_jacobian)."""
    model, q, contacts = case.model, case.q, case.contacts
    if algorithm == "cABA-OSIMf" and not model.has_free_flyer:
        with pytest.raises(ValueError, match="floating base; use cABA-OSIM"):
            dynamics.damped_osim(model, q, contacts, 1e-4, algorithm)
        return
    J = dynamics.contact_jacobian(model, q, contacts)
    mu = 1e-4
    expected = np.linalg.inv(
        J @ np.linalg.solve(dynamics.crba(model, q), np.swapaxes(J, 1, 2)) + mu * np.eye(J.shape[1])
    )
    osim = dynamics.damped_osim(model, q, contacts, mu, algorithm)
    np.testing.assert_allclose(osim, expected, rtol=0, atol=atol(expected, 1e-9))
    np.testing.assert_allclose(dynamics.damped_osim(model, q[0], contacts, mu, algorithm), osim[0], atol=1e-9)


SEED003_ROBOTS = {  # seed 003's benchmark robots as liftoff's bench constrained --tables has them
    "panda": (["panda_hand"], "6D", "LOCAL"),
    "solo12": (["FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"], "3D", "LOCAL_WORLD_ALIGNED"),
    "talos": (["left_sole_link", "right_sole_link", "arm_left_7_link", "arm_right_7_link"], "6D", "LOCAL"),
}


@pytest.mark.parametrize("robot", SEED003_ROBOTS)
def test_proxpv_and_the_osims_equal_pinocchio_on_seed003_robots(robot, rng):
    """proxPV against ``constraintDynamics``, every damped-OSIM algorithm against the OSIM of
    Pinocchio's contact Cholesky factorization, on regular random states."""
    model, pmodel = load_pair(robot)
    frames, kind, reference = SEED003_ROBOTS[robot]
    contacts = [dynamics.Contact(f, kind, reference) for f in frames]
    q = regular_configurations(model, rng, 4, contacts)
    v, tau = rng.standard_normal((2, 4, model.nv))
    mu = 1e-4
    sol = dynamics.constrained_dynamics(model, q, v, tau, contacts, algorithm="proxPV", **SETTINGS)
    algorithms = [a for a in dynamics.OSIM_ALGORITHMS if model.has_free_flyer or a != "cABA-OSIMf"]
    damping = 1e-2  # cABA-OSIM's rho 1 - rho^2 J M_rho^-1 J^T cancels digits like rho / |OSIM| (rho = 1/mu)
    osims = {a: dynamics.damped_osim(model, q, contacts, damping, a) for a in algorithms}
    cml, cdl = pin_constraints(pmodel, contacts)
    for b in range(len(q)):
        pdata = pmodel.createData()
        pin.initConstraintDynamics(pmodel, pdata, cml, cdl)
        a = pin.constraintDynamics(pmodel, pdata, q[b], v[b], tau[b], cml, cdl, pin.ProximalSettings(1e-14, mu, 50))
        np.testing.assert_allclose(sol[0][b], a, rtol=0, atol=atol(a, 1e-9))
        chol = pin.ContactCholeskyDecomposition(pmodel, pdata, cml, cdl)
        chol.compute(pmodel, pdata, cml, cdl, damping)
        expected = chol.getOperationalSpaceInertiaMatrix()
        for name, osim in osims.items():
            np.testing.assert_allclose(osim[b], expected, rtol=0, atol=atol(expected, 1e-9), err_msg=name)


# ----------------------------------------------------------------------------- 6D loop closures

HANDS = ("arm_left_7_link", "arm_right_7_link")


def welded_hands(reference="LOCAL", kd=0.0):
    """Talos standing on both soles with its hands welded together (a 6D loop closure)."""
    soles = [dynamics.Contact(f, "6D", "LOCAL") for f in SOLES]
    return [dynamics.Contact(HANDS[0], "6D", reference, kd=kd, frame2=HANDS[1])] + soles


@pytest.mark.parametrize("reference", ["LOCAL", "WORLD"])
def test_6d_loop_acceleration_rows_are_the_time_derivative_of_its_velocity_rows(reference, rng):
    model = load_pair("talos")[0]
    loop = welded_hands(reference, kd=3.0)[:1]
    q = regular_configurations(model, rng, 3, loop)
    v, a = rng.standard_normal((2, 3, model.nv))
    h = 1e-6

    def velocity(t):
        return dynamics.contact_velocity(model, dynamics.integrate(model, q, t * v), v + t * a, loop)

    derivative = (velocity(h) - velocity(-h)) / (2 * h)
    rows = dynamics.contact_acceleration(model, q, v, a, loop) - 3.0 * velocity(0.0)  # + alpha* = -kd J v
    np.testing.assert_allclose(rows, derivative, rtol=0, atol=atol(derivative, 1e-7))


@pytest.mark.parametrize("algorithm", [a for a in dynamics.ALGORITHMS if a != "constrainedABA"])
def test_6d_loop_closure_equals_pinocchio(algorithm, rng):
    """Talos' welded hands as Pinocchio's CONTACT_6D between two joints (LOCAL), with 6D soles."""
    model, pmodel = load_pair("talos")
    contacts = welded_hands()
    q = regular_configurations(model, rng, 4, contacts)
    v, tau = rng.standard_normal((2, 4, model.nv))
    ours = dynamics.constrained_dynamics(model, q, v, tau, contacts, algorithm=algorithm, **SETTINGS)
    frames = [pmodel.frames[pmodel.getFrameId(f)] for f in HANDS]
    cml, _ = pin_constraints(pmodel, contacts[1:])
    loop = pin.RigidConstraintModel(
        pin.ContactType.CONTACT_6D, pmodel, *(x for f in frames for x in (f.parentJoint, f.placement)), pin.LOCAL
    )
    cml = pin.StdVec_RigidConstraintModel([loop, *cml])
    for b in range(len(q)):
        pdata, cdl = pmodel.createData(), pin.StdVec_RigidConstraintData([cm.createData() for cm in cml])
        pin.initConstraintDynamics(pmodel, pdata, cml, cdl)
        a = pin.constraintDynamics(pmodel, pdata, q[b], v[b], tau[b], cml, cdl, pin.ProximalSettings(1e-14, 1e-12, 50))
        f = np.concatenate([cd.contact_force.vector for cd in cdl])
        tolerance = 1e-7 if algorithm == "proxLTLs" else 1e-9  # its rounding grows like 1/mu
        np.testing.assert_allclose(ours[0][b], a, rtol=0, atol=atol(a, tolerance))
        np.testing.assert_allclose(ours[1][b], f, rtol=0, atol=atol(f, tolerance))


def test_6d_loop_closure_impulse_redundancy_and_osim(rng):
    """The impact stops the loop's relative motion; the loop listed twice (rank-deficient)
    gives the same accelerations by proxPV and proxLTL; the damped OSIM by proxPV equals
    proxLTL's; cABA-OSIM and constrainedABA refuse the loop in one line."""
    model = load_pair("talos")[0]
    contacts = welded_hands()
    q = regular_configurations(model, rng, 3, contacts)
    v, tau = rng.standard_normal((2, 3, model.nv))
    for algorithm in ("proxLTL", "proxPV"):
        v_plus, _ = dynamics.impulse_dynamics(model, q, v, contacts, algorithm=algorithm, **SETTINGS)
        np.testing.assert_allclose(dynamics.contact_velocity(model, q, v_plus, contacts), 0.0, atol=1e-9)
    twice = contacts[:1] + contacts
    expected = dynamics.constrained_dynamics(model, q, v, tau, contacts, **SETTINGS)[0]
    for algorithm in ("proxLTL", "proxPV"):
        a = dynamics.constrained_dynamics(model, q, v, tau, twice, algorithm=algorithm, **SETTINGS)[0]
        np.testing.assert_allclose(a, expected, rtol=0, atol=atol(expected, 1e-9), err_msg=algorithm)
    osim = dynamics.damped_osim(model, q, contacts, 1e-4, "proxLTL")
    np.testing.assert_allclose(dynamics.damped_osim(model, q, contacts, 1e-4, "proxPV"), osim, atol=atol(osim, 1e-9))
    for call, message in (
        (lambda: dynamics.damped_osim(model, q, contacts, 1e-4, "cABA-OSIM"), "use proxPV or proxLTL"),
        (lambda: dynamics.constrained_dynamics(model, q, v, tau, contacts, algorithm="constrainedABA"), "loop"),
    ):
        with pytest.raises(ValueError, match=message):
            call()


# ----------------------------------------------------------------------------- batches


def test_dirty_data(rng):
    """Calls with other robots, contact sets and batch sizes in between give what a fresh
    model gives; a state's result does not depend on the rest of its batch."""
    cases = {name: random_case(name, "LOCAL", rng) for name in ("anymal", "talos")}

    def run(model, case, index):
        args = (case.q[index], case.v[index], case.tau[index], case.contacts)
        return (
            *dynamics.constrained_dynamics(model, *args, **SETTINGS),
            *dynamics.constrained_dynamics_derivatives(model, *args, **SETTINGS),
            *dynamics.impulse_dynamics(model, *args[:2], case.contacts, **SETTINGS),
        )

    sequence = [
        ("anymal", slice(0, 20)),
        ("talos", 3),
        ("anymal", slice(5, 12)),
        ("talos", slice(0, 20)),
        ("anymal", 7),
    ]
    results = [run(cases[name].model, cases[name], index) for name, index in sequence]
    for (name, index), got in zip(sequence, results):
        expected = run(dynamics.load(name), cases[name], index)
        for x, y in zip(got, expected):
            np.testing.assert_allclose(x, y, rtol=0, atol=atol(y, 1e-12))
    for (name, index), got in zip(sequence[1:], results[1:]):
        whole = results[0] if name == "anymal" else results[3]
        for x, y in zip(got, whole):
            np.testing.assert_allclose(x, y[index], rtol=0, atol=atol(y[index], 1e-10))
