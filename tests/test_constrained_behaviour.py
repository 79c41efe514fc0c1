"""Behaviour of constrained and impulse dynamics: what the solutions must satisfy physically.

Redundant contacts (seed 000 Sec. V-F), Baumgarte stabilization against its closed-form
error dynamics (seed 004 eq. 5-6), a loop closure simulated under gravity, inelastic
impacts, 1D contacts, batching and the error messages. Comparisons with Pinocchio and
finite differences live in test_constrained_oracle.py and test_contact_derivatives.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import atol, load_pair, regular_configurations

from liftoff import dynamics
from liftoff.dynamics import Contact
from liftoff.dynamics.sample_models import four_bar_closed_configuration, four_bar_linkage

PROXIMAL = ("proxLTL", "proxLTLs", "constrainedABA", "proxPV")

# ANYmal standing: base 0.4792 m high, feet within a few micrometres of z = 0.
ANYMAL_STANDING = np.array(
    [0, 0, 0.4792, 0, 0, 0, 1, -0.1, 0.7, -1.0, -0.1, -0.7, 1.0, 0.1, 0.7, -1.0, 0.1, -0.7, 1.0], dtype=float
)
ANYMAL_FEET = ("LF_FOOT", "LH_FOOT", "RF_FOOT", "RH_FOOT")
TALOS_FRAMES = ("left_sole_link", "right_sole_link", "arm_left_7_link")


def model_of(name):
    return load_pair(name)[0]


def feet_contacts(kind="3D", reference="LOCAL_WORLD_ALIGNED", **kwargs):
    return [Contact(foot, kind, reference, **kwargs) for foot in ANYMAL_FEET]


# ----------------------------------------------------------------------------- redundant constraints


def talos_redundant_problem(rng, n=4):
    """Talos with 6D contacts on both soles and the left wrist: ``(model, q, v, tau, contacts,
    the same contacts each listed twice)``; configurations away from singular ones."""
    model = model_of("talos")
    contacts = [Contact(frame, "6D", "LOCAL") for frame in TALOS_FRAMES]
    redundant = [c for c in contacts for _ in range(2)]  # m = 36, rank 18
    q = regular_configurations(model, rng, n, contacts)
    return model, q, rng.standard_normal((n, model.nv)), rng.standard_normal((n, model.nv)), contacts, redundant


@pytest.mark.parametrize("algorithm", PROXIMAL)
def test_redundant_contacts_give_the_non_redundant_solution(algorithm, rng):
    """Seed 000 Sec. V-F: duplicated contacts (a rank-deficient J) change neither the
    accelerations nor the total force of each contact; the proximal iterations started at
    f = 0 converge to the minimum-norm forces, which split each pair evenly."""
    model, q, v, tau, contacts, redundant = talos_redundant_problem(rng)
    a_ref, f_ref = dynamics.constrained_dynamics(model, q, v, tau, contacts, algorithm="kkt")
    sol = dynamics.constrained_dynamics(model, q, v, tau, redundant, algorithm=algorithm)
    a, f = sol
    assert f.shape == (len(q), 36)
    assert np.all(sol.converged)
    assert np.all(sol.residual <= 1e-9), sol.residual
    assert np.all(sol.iterations <= 10), sol.iterations
    np.testing.assert_allclose(a, a_ref, rtol=0, atol=atol(a_ref))
    pairs = f.reshape(len(q), len(contacts), 2, 6)
    np.testing.assert_allclose(pairs.sum(axis=2), f_ref.reshape(len(q), len(contacts), 6), rtol=0, atol=atol(f_ref))
    np.testing.assert_allclose(pairs[:, :, 0], pairs[:, :, 1], rtol=0, atol=atol(f_ref))


@pytest.mark.parametrize("algorithm", ("cABA-OSIM", "cABA-OSIMf", "proxPV"))
def test_damped_osim_of_redundant_contacts_equals_proxltls(algorithm, rng):
    """With 36 rows of rank 18 the damped Delassus matrix stays invertible: every algorithm
    gives the same damped OSIM."""
    model, q, _, _, _, redundant = talos_redundant_problem(rng)
    expected = dynamics.damped_osim(model, q, redundant, 1e-4, "proxLTL")
    osim = dynamics.damped_osim(model, q, redundant, 1e-4, algorithm)
    np.testing.assert_allclose(osim, expected, rtol=0, atol=atol(expected, 1e-9))


def test_damped_osim_of_a_loop_closure(rng):
    model, fa, fb, q0 = four_bar()
    held = closure(fa, fb)
    q = regular_configurations(model, rng, 4, held)
    expected = dynamics.damped_osim(model, q, held, 1e-3, "proxLTL")
    np.testing.assert_allclose(
        dynamics.damped_osim(model, q, held, 1e-3, "proxPV"), expected, atol=atol(expected, 1e-9)
    )
    with pytest.raises(ValueError, match="cABA-OSIM handles contacts with the world; use proxPV or proxLTL"):
        dynamics.damped_osim(model, q, held, 1e-3, "cABA-OSIM")
    with pytest.raises(ValueError, match="mu must be"):
        dynamics.damped_osim(model, q, held, 0.0, "proxPV")
    with pytest.raises(ValueError, match="unknown algorithm 'OSIMf'"):
        dynamics.damped_osim(model, q, held, 1e-3, "OSIMf")


def test_kkt_refuses_redundant_contacts(rng):
    """Three independent 6D contacts have rank 18 (the kkt solve of the non-redundant set
    succeeds); listed twice they give 36 rows of rank 18."""
    model, q, v, tau, contacts, redundant = talos_redundant_problem(rng, n=2)
    dynamics.constrained_dynamics(model, q, v, tau, contacts, algorithm="kkt")
    with pytest.raises(dynamics.SingularConstraintError, match=r"rank 18 < 36"):
        dynamics.constrained_dynamics(model, q, v, tau, redundant, algorithm="kkt")
    with pytest.raises(dynamics.SingularConstraintError, match=r"rank 18 < 36"):
        dynamics.impulse_dynamics(model, q, v, redundant, algorithm="kkt")
    assert issubclass(dynamics.SingularConstraintError, ValueError)


# ----------------------------------------------------------------------------- Baumgarte stabilization

ALPHA = 25.0  # 1/s: kp = alpha^2, kd = 2 alpha, critically damped (seed 004 Table I)
DT = 1e-3


def anymal_standing_torques(model):
    """Joint torques holding ANYmal still at ``ANYMAL_STANDING`` on its four feet (the
    minimum-norm ``(tau, f)`` with ``g(q) = S^T tau + J^T f``), for a joint PD to add to."""
    J = dynamics.contact_jacobian(model, ANYMAL_STANDING, feet_contacts())
    S_t = np.vstack((np.zeros((6, model.nv - 6)), np.eye(model.nv - 6)))
    x = np.linalg.lstsq(np.hstack((S_t, J.T)), dynamics.generalized_gravity(model, ANYMAL_STANDING), rcond=None)[0]
    return np.concatenate((np.zeros(6), x[: model.nv - 6]))


def simulate(model, q, contacts, steps, dt=DT, torque=None, algorithm="proxLTL"):
    """Semi-implicit Euler from rest: ``v += dt a``, ``q = integrate(q, dt v)``.

    Returns the trajectories ``q (steps + 1, ...)``, ``v`` and ``a (steps, ...)``; asserts that
    every solve converged."""
    v = np.zeros(q.shape[:-1] + (model.nv,))
    qs, vs, accs = [q], [v], []
    for _ in range(steps):
        tau = np.zeros_like(v) if torque is None else torque(q, v)
        sol = dynamics.constrained_dynamics(model, q, v, tau, contacts, algorithm=algorithm)
        assert np.all(sol.converged), sol.residual
        a = sol[0]
        v = v + dt * a
        q = dynamics.integrate(model, q, dt * v)
        qs.append(q), vs.append(v), accs.append(a)
    return np.array(qs), np.array(vs), np.array(accs)


def baumgarte_rollout(kp, kd, steps):
    """ANYmal from two perturbed standing states (base 2 cm down: the feet 2 cm into the
    ground; base moved 1-1.5 cm and turned by ~0.06 rad: errors in x, y and z), feet held
    by 3D contacts whose targets are the standing feet on the ground (z = 0).

    Returns the foot position errors ``(steps + 1, 2, 4 feet, 3)``."""
    model = model_of("anymal")
    targets = np.array([dynamics.frame_placement(model, ANYMAL_STANDING, foot)[1] * [1, 1, 0] for foot in ANYMAL_FEET])
    down = ANYMAL_STANDING.copy()
    down[2] -= 0.02
    moved = dynamics.integrate(model, ANYMAL_STANDING, np.r_[0.01, -0.01, 0.015, 0.03, -0.02, 0.05, np.zeros(12)])
    q0 = np.stack((down, moved))
    B = len(q0)
    # The targets are given with a batch axis: see test_placement_without_batch_axis.
    contacts = [
        Contact(foot, "3D", "LOCAL_WORLD_ALIGNED", kp=kp, kd=kd, placement=np.broadcast_to(p, (B, 3)))
        for foot, p in zip(ANYMAL_FEET, targets)
    ]
    tau_stand, q_joints = anymal_standing_torques(model), ANYMAL_STANDING[7:]

    def torque(q, v):  # standing torques plus a joint PD: keeps the robot (and its velocities) moderate
        return tau_stand + np.concatenate((np.zeros((B, 6)), 100.0 * (q_joints - q[:, 7:]) - 5.0 * v[:, 6:]), axis=1)

    qs, _, _ = simulate(model, q0, contacts, steps, torque=torque)
    return np.stack(
        [dynamics.frame_placement(model, qs, foot)[1] - p for foot, p in zip(ANYMAL_FEET, targets)], axis=-2
    )


def critically_damped(t):
    """``e(t) / e(0)`` of ``e'' + 2 alpha e' + alpha^2 e = 0`` from rest."""
    return (1 + ALPHA * t) * np.exp(-ALPHA * t)


def critically_damped_euler(steps):
    """The same ODE integrated by semi-implicit Euler with step ``DT``: what the simulation
    should follow up to the O(dt^2) per-step effects of the nonlinear kinematics."""
    e, de, out = 1.0, 0.0, [1.0]
    for _ in range(steps):
        de += DT * (-(ALPHA**2) * e - 2 * ALPHA * de)
        e += DT * de
        out.append(e)
    return np.array(out)


def test_baumgarte_error_decays_critically_damped():
    """Every component of the foot position error obeys e'' = -kp e - kd e' (the contact
    rows' acceleration is their Baumgarte target), so with kp = alpha^2, kd = 2 alpha and
    e'(0) = 0 it follows e0 (1 + alpha t) exp(-alpha t)."""
    steps = 600
    E = baumgarte_rollout(ALPHA**2, 2 * ALPHA, steps)
    e0 = E[0]
    scale = np.abs(e0).max(axis=(-2, -1))  # per state
    assert np.all(scale > 0.015)  # a few centimetres to correct
    t = np.arange(steps + 1) * DT
    continuous, euler = critically_damped(t), critically_damped_euler(steps)
    dt_gap = np.abs(euler - continuous).max()  # O(alpha dt) = 0.008: semi-implicit Euler's own error
    for k in (20, 50, 100, 200, 300):
        np.testing.assert_allclose(E[k], euler[k] * e0, rtol=0, atol=1e-3 * scale.max(), err_msg=f"t = {t[k]}")
        np.testing.assert_allclose(
            E[k], continuous[k] * e0, rtol=0, atol=(dt_gap + 1e-3) * scale.max(), err_msg=f"t = {t[k]}"
        )
    final = np.abs(E[-1]).max(axis=(-2, -1))
    assert np.all(final <= 1e-4 * scale), final / scale


def test_without_baumgarte_the_error_stays():
    """kp = kd = 0: the contacts only hold the acceleration, the initial offset stays."""
    steps = 300
    E = baumgarte_rollout(0.0, 0.0, steps)
    scale = np.abs(E[0]).max()
    np.testing.assert_allclose(E[1:], np.broadcast_to(E[0], E[1:].shape), rtol=0, atol=1e-4 * scale)
    assert critically_damped(steps * DT) < 0.01  # the stabilized error would have dropped by 100


@pytest.mark.parametrize("kind", ("3D", "6D"))
def test_placement_without_batch_axis(kind, rng):
    """The documented unbatched target ``placement=p (3,)`` (or ``(R, p)``) serves every
    state: same solution as the target repeated along a batch axis. Three states, so that
    a batch axis confused with the coordinate axis (both of length 3) shows."""
    model = model_of("anymal")
    q = dynamics.random_configuration(model, rng, 3)
    v, tau = rng.standard_normal((2, 3, model.nv))
    p, R = np.array([0.3, 0.2, 0.0]), np.eye(3)
    unbatched = (R, p) if kind == "6D" else p
    batched = (
        (np.broadcast_to(R, (3, 3, 3)), np.broadcast_to(p, (3, 3))) if kind == "6D" else np.broadcast_to(p, (3, 3))
    )

    def contacts(placement):
        return [Contact("LF_FOOT", kind, "LOCAL", kp=100.0, kd=20.0, placement=placement)]

    a_ref, f_ref = dynamics.constrained_dynamics(model, q, v, tau, contacts(batched))
    a, f = dynamics.constrained_dynamics(model, q, v, tau, contacts(unbatched))
    np.testing.assert_allclose(a, a_ref, rtol=0, atol=atol(a_ref))
    np.testing.assert_allclose(f, f_ref, rtol=0, atol=atol(f_ref))
    a, f = dynamics.constrained_dynamics(model, q[0], v[0], tau[0], contacts(unbatched))
    np.testing.assert_allclose(a, a_ref[0], rtol=0, atol=atol(a_ref))


# ----------------------------------------------------------------------------- loop closure


def four_bar():
    model, frame_a, frame_b = four_bar_linkage()
    return model, frame_a, frame_b, four_bar_closed_configuration()


def closure(frame_a, frame_b, kind="xz", **kwargs):
    """The four-bar is planar (x-z plane, every joint axis along y): both frames move only in
    that plane, so the y row of a 3D point constraint is identically zero. "xz" in world
    axes (LOCAL_WORLD_ALIGNED) keeps the two independent rows: a full-rank constraint."""
    return [Contact(frame_a, kind, "LOCAL_WORLD_ALIGNED", frame2=frame_b, **kwargs)]


def test_planar_closure_rank():
    model, fa, fb, q = four_bar()
    rng = np.random.default_rng(3)
    qs = q + 0.05 * rng.standard_normal((4, 3))  # near the closed loop: full rank in x, z
    v, tau = rng.standard_normal((2, 4, 3))
    J3 = dynamics.contact_jacobian(model, qs, closure(fa, fb, "3D"))
    np.testing.assert_array_equal(J3[:, 1], 0.0)
    assert np.all(np.linalg.matrix_rank(dynamics.contact_jacobian(model, qs, closure(fa, fb))) == 2)
    with pytest.raises(dynamics.SingularConstraintError, match=r"rank 2 < 3"):
        dynamics.constrained_dynamics(model, qs, v, tau, closure(fa, fb, "3D"), algorithm="kkt")
    a_ref, f_ref = dynamics.constrained_dynamics(model, qs, v, tau, closure(fa, fb), algorithm="kkt")
    for algorithm in ("proxLTL", "proxLTLs"):  # the redundant y row changes nothing
        sol = dynamics.constrained_dynamics(model, qs, v, tau, closure(fa, fb, "3D"), algorithm=algorithm)
        assert np.all(sol.converged)
        np.testing.assert_allclose(sol[0], a_ref, rtol=0, atol=atol(a_ref))
        np.testing.assert_allclose(sol[1][:, [0, 2]], f_ref, rtol=0, atol=atol(f_ref))
        np.testing.assert_allclose(sol[1][:, 1], 0.0, rtol=0, atol=atol(f_ref))


def closure_distance(model, qs, fa, fb):
    return np.linalg.norm(
        dynamics.frame_placement(model, qs, fa)[1] - dynamics.frame_placement(model, qs, fb)[1], axis=-1
    )


def mechanical_energy(model, q, v):
    kinetic = 0.5 * np.einsum("...i,...ij,...j->...", v, dynamics.crba(model, q), v)
    return kinetic - model.mass * dynamics.center_of_mass(model, q) @ model.gravity[:3], kinetic


def test_loop_closure_under_gravity():
    """The four-bar released at rest swings under gravity (crank up to ~11 rad/s) for 0.5 s.

    Without Baumgarte the closure drifts only through the integrator: semi-implicit Euler
    steps the positions with the end-of-step velocity, an O(dt) bias, so halving dt halves
    the drift (a wrong constraint acceleration would give an O(1) drift growing like t^2).
    The ideal constraint does no work: the mechanical energy is conserved up to the same
    O(dt) error. Baumgarte (alpha = 50) pulls the frames back together; its residual gap
    ~ (kd / kp) (dt / 2) |p''| is the same integrator bias, not a solver error, which is why
    the distance is bounded in mm and not to 1e-6."""
    model, fa, fb, q0 = four_bar()
    assert closure_distance(model, q0, fa, fb) <= 1e-12
    free = closure(fa, fb)
    qs, vs, accs = simulate(model, q0, free, 500)
    np.testing.assert_allclose(
        dynamics.contact_acceleration(model, qs[:-1], vs[:-1], accs, free), 0.0, rtol=0, atol=1e-10
    )
    assert np.abs(vs).max() > 5.0  # it really moves
    drift = closure_distance(model, qs, fa, fb)
    assert 1e-4 <= drift[-1] <= 1e-2, drift[-1]
    assert np.all(np.diff(drift[::50]) > 0)  # it grows
    energy, kinetic = mechanical_energy(model, qs, vs)
    assert np.abs(energy - energy[0]).max() <= 0.03 * kinetic.max()

    half, _, _ = simulate(model, q0, free, 500, dt=DT / 2)  # 0.25 s
    ratio = drift[250] / closure_distance(model, half[-1], fa, fb)
    assert 1.8 <= ratio <= 2.2, ratio

    held = closure(fa, fb, kp=2500.0, kd=100.0)
    qs, vs, accs = simulate(model, q0, held, 500)
    np.testing.assert_allclose(
        dynamics.contact_acceleration(model, qs[:-1], vs[:-1], accs, held), 0.0, rtol=0, atol=1e-10
    )
    distance = closure_distance(model, qs, fa, fb)
    assert distance.max() <= 1e-3, distance.max()
    assert distance[-1] <= 0.15 * drift[-1], (distance[-1], drift[-1])

    # proxLTLs (dense Cholesky for loop closures) and proxPV agree with proxLTL along the trajectory
    tau = np.zeros_like(vs[:-1])
    for algorithm in ("proxLTLs", "proxPV"):
        sol = dynamics.constrained_dynamics(model, qs[:-1], vs[:-1], tau, held, algorithm=algorithm)
        assert np.all(sol.converged)
        np.testing.assert_allclose(sol[0], accs, rtol=0, atol=atol(accs), err_msg=algorithm)
    with pytest.raises(ValueError, match=r"constrainedABA.*loop closures"):
        dynamics.constrained_dynamics(model, qs[0], vs[0], tau[0], held, algorithm="constrainedABA")


# ----------------------------------------------------------------------------- impulses


def impulse_cases():
    """``(name, model, contacts)``: ANYmal's feet (3D and 1D), Talos' soles (6D), the four-bar."""
    model, fa, fb, _ = four_bar()
    return {
        "anymal-3D": (model_of("anymal"), feet_contacts()),
        "anymal-z-LOCAL": (model_of("anymal"), feet_contacts("z", "LOCAL")),
        "talos-6D": (model_of("talos"), [Contact(f, "6D", "LOCAL") for f in TALOS_FRAMES[:2]]),
        "four-bar": (model, closure(fa, fb)),
    }


@pytest.mark.parametrize("algorithm", dynamics.ALGORITHMS)
@pytest.mark.parametrize("case", ("anymal-3D", "anymal-z-LOCAL", "talos-6D", "four-bar"))
def test_impulse_stops_the_contacts(case, algorithm, rng):
    """After a fully inelastic impact the contact velocity is zero and the velocity jump is
    the impulse's: M (v+ - v) = J^T Lambda. v+ is then the M-orthogonal projection of v on
    the contacts' null space: the kinetic energy drops by that of v - v+."""
    model, contacts = impulse_cases()[case]
    q = regular_configurations(model, rng, 5, contacts)
    if case == "four-bar" and algorithm == "constrainedABA":  # contacts with the world only
        with pytest.raises(ValueError, match="loop closures"):
            dynamics.impulse_dynamics(model, q, np.zeros((len(q), model.nv)), contacts, algorithm=algorithm)
        return
    v = 2.0 * rng.standard_normal((len(q), model.nv))
    sol = dynamics.impulse_dynamics(model, q, v, contacts, algorithm=algorithm)
    v_plus, impulse = sol
    assert np.all(sol.converged)
    assert impulse.shape == (len(q), sum(c.dim for c in contacts))
    np.testing.assert_allclose(
        dynamics.contact_velocity(model, q, v_plus, contacts), 0.0, rtol=0, atol=1e-9 * max(1.0, np.abs(v).max())
    )
    M, J = dynamics.crba(model, q), dynamics.contact_jacobian(model, q, contacts)
    lhs = np.einsum("bij,bj->bi", M, v_plus - v)
    np.testing.assert_allclose(lhs, np.einsum("bmi,bm->bi", J, impulse), rtol=0, atol=atol(lhs))

    def energy(x):
        return 0.5 * np.einsum("bi,bij,bj->b", x, M, x)

    np.testing.assert_allclose(energy(v) - energy(v_plus), energy(v - v_plus), rtol=0, atol=atol(energy(v)))
    assert np.all(energy(v - v_plus) > 0)


# ----------------------------------------------------------------------------- 1D contacts


@pytest.mark.parametrize("algorithm", dynamics.ALGORITHMS)
def test_normal_contacts_hold_only_the_normal(algorithm, rng):
    model = model_of("anymal")
    contacts = feet_contacts("z")
    q = regular_configurations(model, rng, 6, contacts)
    v, tau = rng.standard_normal((2, len(q), model.nv))
    sol = dynamics.constrained_dynamics(model, q, v, tau, contacts, algorithm=algorithm)
    a, f = sol
    assert f.shape == (len(q), len(ANYMAL_FEET))
    assert np.all(sol.converged)
    for foot in ANYMAL_FEET:
        acc = dynamics.frame_acceleration(model, q, v, a, foot, "LOCAL_WORLD_ALIGNED", classical=True)
        np.testing.assert_allclose(acc[:, 2], 0.0, rtol=0, atol=1e-9 * max(1.0, np.abs(a).max()))
        assert np.abs(acc[:, :2]).max() > 1e-2  # the tangential directions are free
    # the force is the world z component of the 3D force on the same rows: J_z^T f moves only z
    J3 = dynamics.contact_jacobian(model, q, feet_contacts())
    J1 = dynamics.contact_jacobian(model, q, contacts)
    np.testing.assert_array_equal(J1, J3[:, 2::3])


# ----------------------------------------------------------------------------- errors


def anymal_inputs():
    model = model_of("anymal")
    return model, dynamics.neutral(model), np.zeros(model.nv), np.zeros(model.nv)


@pytest.mark.parametrize(
    "call, error, pattern",
    [
        (lambda m, q, v, t: dynamics.constrained_dynamics(m, q, v, t, []), ValueError, "empty"),
        (lambda m, q, v, t: dynamics.impulse_dynamics(m, q, v, []), ValueError, "empty"),
        (
            lambda m, q, v, t: dynamics.constrained_dynamics(m, q, v, t, [Contact("LF_FOOT"), Contact("LF_TOE")]),
            dynamics.UnknownNameError,
            "LF_TOE",
        ),
        (lambda m, q, v, t: dynamics.contact_velocity(m, q, v, [Contact("NOSE")]), dynamics.UnknownNameError, "NOSE"),
        (lambda m, q, v, t: dynamics.constrained_dynamics(m, q, v, t, feet_contacts(), mu=0.0), ValueError, "mu"),
        (lambda m, q, v, t: dynamics.constrained_dynamics(m, q, v, t, feet_contacts(), mu=-1e-4), ValueError, "mu"),
        (
            lambda m, q, v, t: dynamics.constrained_dynamics(m, q, v, t, feet_contacts(), mu=float("nan")),
            ValueError,
            "mu",
        ),
        (lambda m, q, v, t: dynamics.impulse_dynamics(m, q, v, feet_contacts(), mu=0.0), ValueError, "mu"),
        (
            lambda m, q, v, t: dynamics.constrained_dynamics(m, q, v, t, feet_contacts(), algorithm="ABA"),
            ValueError,
            "proxLTL, proxLTLs, constrainedABA, proxPV, kkt",
        ),
        (lambda m, q, v, t: Contact("LF_FOOT", "4D"), ValueError, "4D"),
        (lambda m, q, v, t: Contact("LF_FOOT", "zz"), ValueError, "distinct"),
        (lambda m, q, v, t: Contact("LF_FOOT", kp=10.0), ValueError, "placement"),
        (lambda m, q, v, t: Contact("LF_FOOT", kd=-1.0), ValueError, "kd"),
        (lambda m, q, v, t: Contact("LF_FOOT", "6D", frame2="RF_FOOT"), ValueError, "LOCAL or WORLD"),
        (lambda m, q, v, t: Contact("LF_FOOT", "6D", "LOCAL", frame2="RF_FOOT", kp=1.0), ValueError, "translational"),
        (
            lambda m, q, v, t: dynamics.constrained_dynamics(m, q, v, t[:12], feet_contacts()),
            dynamics.DimensionError,
            "tau",
        ),
        (lambda m, q, v, t: dynamics.impulse_dynamics(m, q, v[:-1], feet_contacts()), dynamics.DimensionError, "v"),
    ],
    ids=[
        "empty",
        "empty-impulse",
        "unknown-frame",
        "unknown-frame-velocity",
        "mu-zero",
        "mu-negative",
        "mu-nan",
        "mu-impulse",
        "algorithm",
        "kind-4D",
        "kind-repeated",
        "kp-without-placement",
        "negative-kd",
        "6D-loop-closure-aligned",
        "6D-loop-closure-kp",
        "tau-shape",
        "v-shape",
    ],
)
def test_errors(call, error, pattern):
    with pytest.raises(error, match=pattern):
        call(*anymal_inputs())


# ----------------------------------------------------------------------------- batches


@pytest.mark.parametrize("algorithm", dynamics.ALGORITHMS)
def test_batch_equals_single_calls(algorithm, rng):
    """B states in one call give the B single-state solutions, with per-state reports."""
    model = model_of("anymal")
    contacts = feet_contacts("3D", "LOCAL")
    B = 5
    q = regular_configurations(model, rng, B, contacts)
    v, tau = rng.standard_normal((2, B, model.nv))
    for solve, args in (
        (dynamics.constrained_dynamics, lambda b: (q[b], v[b], tau[b])),
        (dynamics.impulse_dynamics, lambda b: (q[b], v[b])),
    ):
        batch = solve(model, *args(slice(None)), contacts, algorithm=algorithm)
        for name in ("iterations", "residual", "converged"):
            assert np.shape(getattr(batch, name)) == (B,), name
        for b in range(B):
            single = solve(model, *args(b), contacts, algorithm=algorithm)
            assert single[0].shape == (model.nv,) and single[1].shape == (12,)
            assert np.shape(single.iterations) == np.shape(single.residual) == ()
            assert single.iterations == batch.iterations[b]
            assert single.converged and batch.converged[b]
            for x, y in zip(batch, single):
                np.testing.assert_allclose(x[b], y, rtol=0, atol=atol(y, 1e-9))
