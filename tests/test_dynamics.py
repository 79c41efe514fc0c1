"""Inverse and forward dynamics and their derivatives against Pinocchio and finite
differences, batched and unbatched, with broadcasting and reuse across calls."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from conftest import NSTATES, atol, finite_differences, load_pair, pin_fext, pin_loop, random_states, symmetrize_upper

from liftoff import dynamics
from liftoff.dynamics.kinematics import frame_positions


def with_fext(model, rng, n=NSTATES):
    """Random states and external forces ``(n, njoints, 6)``: ``(q, v, a_or_tau, fext)``."""
    return (*random_states(model, rng, n), rng.standard_normal((n, model.njoints, 6)))


# name -> (ours(model, q, v, u, fext), Pinocchio(pmodel, pdata, q, v, u, fext)); ``u`` is
# the acceleration for inverse dynamics and the torque for forward dynamics.
CASES = {
    "rnea": (
        lambda m, q, v, u, f: dynamics.rnea(m, q, v, u),
        lambda pm, pd, q, v, u, f: pin.rnea(pm, pd, q, v, u),
    ),
    "rnea_fext": (
        lambda m, q, v, u, f: dynamics.rnea(m, q, v, u, fext=f),
        lambda pm, pd, q, v, u, f: pin.rnea(pm, pd, q, v, u, pin_fext(pm, f)),
    ),
    "nonlinear_effects": (
        lambda m, q, v, u, f: dynamics.nonlinear_effects(m, q, v),
        lambda pm, pd, q, v, u, f: pin.nonLinearEffects(pm, pd, q, v),
    ),
    "generalized_gravity": (
        lambda m, q, v, u, f: dynamics.generalized_gravity(m, q),
        lambda pm, pd, q, v, u, f: pin.computeGeneralizedGravity(pm, pd, q),
    ),
    "crba": (
        lambda m, q, v, u, f: dynamics.crba(m, q),
        lambda pm, pd, q, v, u, f: symmetrize_upper(pin.crba(pm, pd, q)),
    ),
    "aba": (
        lambda m, q, v, u, f: dynamics.aba(m, q, v, u),
        lambda pm, pd, q, v, u, f: pin.aba(pm, pd, q, v, u),
    ),
    "aba_fext": (
        lambda m, q, v, u, f: dynamics.aba(m, q, v, u, fext=f),
        lambda pm, pd, q, v, u, f: pin.aba(pm, pd, q, v, u, pin_fext(pm, f)),
    ),
    "rnea_derivatives": (
        lambda m, q, v, u, f: np.stack(dynamics.rnea_derivatives(m, q, v, u), axis=-3),
        lambda pm, pd, q, v, u, f: _pin_rnea_derivatives(pm, pd, q, v, u),
    ),
    "rnea_derivatives_fext": (
        lambda m, q, v, u, f: np.stack(dynamics.rnea_derivatives(m, q, v, u, fext=f), axis=-3),
        lambda pm, pd, q, v, u, f: _pin_rnea_derivatives(pm, pd, q, v, u, pin_fext(pm, f)),
    ),
    "aba_derivatives": (
        lambda m, q, v, u, f: np.stack(dynamics.aba_derivatives(m, q, v, u), axis=-3),
        lambda pm, pd, q, v, u, f: _pin_aba_derivatives(pm, pd, q, v, u),
    ),
    "aba_derivatives_fext": (
        lambda m, q, v, u, f: np.stack(dynamics.aba_derivatives(m, q, v, u, fext=f), axis=-3),
        lambda pm, pd, q, v, u, f: _pin_aba_derivatives(pm, pd, q, v, u, pin_fext(pm, f)),
    ),
}


def _pin_rnea_derivatives(pm, pd, q, v, a, *fext):
    dq, dv, da = pin.computeRNEADerivatives(pm, pd, q, v, a, *fext)
    return np.stack((dq, dv, symmetrize_upper(da)))


def _pin_aba_derivatives(pm, pd, q, v, tau, *fext):
    dq, dv, Minv = pin.computeABADerivatives(pm, pd, q, v, tau, *fext)
    return np.stack((dq, dv, symmetrize_upper(Minv)))


@pytest.mark.parametrize("case", list(CASES))
def test_equals_pinocchio(robot, case, rng):
    """Batched (all states in one call) and single-state results equal Pinocchio's."""
    _, model, pmodel = robot
    ours, theirs = CASES[case]
    pdata = pmodel.createData()
    states = with_fext(model, rng)
    ref = pin_loop(lambda *x: theirs(pmodel, pdata, *x), *states)
    batched = ours(model, *states)
    assert batched.shape == ref.shape
    np.testing.assert_allclose(batched, ref, rtol=0, atol=atol(ref))
    for i in (0, 1):
        single = ours(model, *(x[i] for x in states))
        assert single.shape == ref[i].shape
        np.testing.assert_allclose(single, ref[i], rtol=0, atol=atol(ref[i]))


def test_dtau_da_and_crba_are_the_mass_matrix(robot, rng):
    _, model, _ = robot
    q, v, a = random_states(model, rng, 10)
    M = dynamics.crba(model, q)
    np.testing.assert_array_equal(M, np.swapaxes(M, -1, -2))
    np.testing.assert_allclose(dynamics.rnea_derivatives(model, q, v, a)[2], M, rtol=0, atol=atol(M))
    Minv = dynamics.aba_derivatives(model, q, v, a)[2]
    np.testing.assert_allclose(Minv @ M, np.broadcast_to(np.eye(model.nv), M.shape), rtol=0, atol=1e-8)
    tau = dynamics.rnea(model, q, v, a)
    Ma = np.einsum("bij,bj->bi", M, a)
    np.testing.assert_allclose(tau - dynamics.nonlinear_effects(model, q, v), Ma, rtol=0, atol=atol(tau))


@pytest.mark.parametrize("fext", [False, True])
def test_aba_inverts_rnea(robot, fext, rng):
    _, model, _ = robot
    q, v, a, f = with_fext(model, rng)
    f = f if fext else None
    tau = dynamics.rnea(model, q, v, a, fext=f)
    np.testing.assert_allclose(dynamics.aba(model, q, v, tau, fext=f), a, rtol=0, atol=1e-8)
    np.testing.assert_allclose(
        dynamics.rnea(model, q, v, dynamics.aba(model, q, v, a, fext=f), fext=f), a, rtol=0, atol=atol(a)
    )


# ----------------------------------------------------------------------------- finite differences

FD_STATES = 4


@pytest.mark.parametrize("fext", [False, True])
def test_rnea_derivatives_equal_finite_differences(robot, fext, rng):
    _, model, _ = robot
    q, v, a, f = with_fext(model, rng, FD_STATES)
    f = f if fext else None
    dq, dv, da = dynamics.rnea_derivatives(model, q, v, a, fext=f)
    rnea = lambda q, v, a, f: dynamics.rnea(model, q, v, a, fext=f)  # noqa: E731
    fd_q = finite_differences(rnea, q, v, a, f, model=model, wrt="configuration")
    fd_v = finite_differences(lambda v, q, a, f: rnea(q, v, a, f), v, q, a, f)
    fd_a = finite_differences(lambda a, q, v, f: rnea(q, v, a, f), a, q, v, f)
    for ours, fd in ((dq, fd_q), (dv, fd_v), (da, fd_a)):
        np.testing.assert_allclose(ours, fd, rtol=0, atol=atol(fd, 1e-7))


@pytest.mark.parametrize("fext", [False, True])
def test_aba_derivatives_equal_finite_differences(robot, fext, rng):
    _, model, _ = robot
    q, v, a, f = with_fext(model, rng, FD_STATES)
    f = f if fext else None
    # torques of unit-scale accelerations: random torques accelerate Solo's light legs by
    # ~1e4, and the rounding errors of such outputs would swamp the differences
    tau = dynamics.rnea(model, q, v, a, fext=f)
    dq, dv, dtau = dynamics.aba_derivatives(model, q, v, tau, fext=f)
    aba = lambda q, v, tau, f: dynamics.aba(model, q, v, tau, fext=f)  # noqa: E731
    fd_q = finite_differences(aba, q, v, tau, f, model=model, wrt="configuration")
    fd_v = finite_differences(lambda v, q, tau, f: aba(q, v, tau, f), v, q, tau, f)
    fd_tau = finite_differences(lambda tau, q, v, f: aba(q, v, tau, f), tau, q, v, f)
    for ours, fd in ((dq, fd_q), (dv, fd_v), (dtau, fd_tau)):
        np.testing.assert_allclose(ours, fd, rtol=0, atol=atol(fd, 1e-6))  # M^-1 amplifies rounding errors


# ----------------------------------------------------------------------------- batches


def _all_outputs(model, q, v, u, f):
    """Every dynamics function on one set of inputs, as a dict of arrays."""
    return {case: ours(model, q, v, u, f) for case, (ours, _) in CASES.items()}


def test_dirty_data(rng):
    """Calls with different batch sizes, states, functions and robots in sequence give what a
    fresh model gives; each state's result does not depend on the rest of its batch."""
    talos, _ = load_pair("talos")
    anymal, _ = load_pair("anymal")
    states = {"talos": with_fext(talos, rng, 20), "anymal": with_fext(anymal, rng, 20)}
    sequence = [
        ("talos", slice(0, 20)),
        ("talos", 3),
        ("anymal", slice(5, 12)),
        ("talos", slice(2, 9)),
        ("talos", slice(0, 1)),
        ("anymal", 0),
        ("talos", slice(0, 20)),
    ]
    results = []
    for name, index in sequence:
        model = talos if name == "talos" else anymal
        results.append(_all_outputs(model, *(x[index] for x in states[name])))
    for (name, index), got in zip(sequence, results):
        fresh = dynamics.load(name)
        expected = _all_outputs(fresh, *(x[index] for x in states[name]))
        for case in CASES:
            np.testing.assert_allclose(
                got[case], expected[case], rtol=0, atol=atol(expected[case], 1e-13), err_msg=case
            )
    # the same states alone and inside a batch
    whole = results[0]
    for case in CASES:
        np.testing.assert_allclose(
            results[1][case], whole[case][3], rtol=0, atol=atol(whole[case], 1e-12), err_msg=case
        )
        np.testing.assert_allclose(
            results[3][case], whole[case][2:9], rtol=0, atol=atol(whole[case], 1e-12), err_msg=case
        )
        np.testing.assert_array_equal(results[6][case], whole[case], err_msg=case)


@pytest.mark.parametrize("name", ["solo12", "ur5"])
def test_batch_broadcasting(name, rng):
    """A single state broadcasts against a batch in every argument position."""
    model, _ = load_pair(name)
    q, v, u, f = with_fext(model, rng, 6)
    tile = lambda x: np.broadcast_to(x, (6,) + x.shape)  # noqa: E731
    expected = _all_outputs(model, q, tile(v[0]), u, f)
    got = _all_outputs(model, q, v[0], u, f)  # q batched, v single
    for case in CASES:
        assert got[case].shape == expected[case].shape, case
        np.testing.assert_allclose(got[case], expected[case], rtol=0, atol=atol(expected[case], 1e-12), err_msg=case)
    expected = _all_outputs(model, tile(q[0]), v, u, tile(f[0]))
    got = _all_outputs(model, q[0], v, u, f[0])  # q and fext single, v and u batched
    for case in CASES:
        if case in ("generalized_gravity", "crba"):  # functions of q alone: one state
            assert got[case].shape == expected[case].shape[1:], case
            expected[case] = expected[case][0]
        np.testing.assert_allclose(got[case], expected[case], rtol=0, atol=atol(expected[case], 1e-12), err_msg=case)
    # the manifold and kinematics broadcast too
    np.testing.assert_allclose(
        dynamics.integrate(model, q[0], v), dynamics.integrate(model, tile(q[0]), v), rtol=0, atol=1e-14
    )
    np.testing.assert_allclose(
        dynamics.frame_velocity(model, q, v[0], model.frame_names[-1], "WORLD"),
        dynamics.frame_velocity(model, q, tile(v[0]), model.frame_names[-1], "WORLD"),
        rtol=0,
        atol=1e-12,
    )


def test_frame_positions_are_the_frames_placements_in_one_pass():
    model = dynamics.load("anymal")
    q = dynamics.random_configuration(model, 7, size=3)
    frames = ["LF_FOOT", "RH_FOOT", "base"]
    positions = frame_positions(model, q, frames)
    assert positions.shape == (3, 3, 3) and frame_positions(model, q[0], frames).shape == (3, 3)
    for i, frame in enumerate(frames):
        np.testing.assert_array_equal(positions[:, i], dynamics.frame_placement(model, q, frame)[1])
