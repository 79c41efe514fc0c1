"""The compiled integrate and difference (dynamics/manifold.c) against their numpy twin: free-flyer,
continuous-joint and fixed-base models, single configurations and batches, both sides of the
small-angle series, and the numpy twin in charge when the library cannot be compiled."""

from __future__ import annotations

import numpy as np
import pytest

from liftoff import dynamics
from liftoff.dynamics import codegen, manifold
from liftoff.dynamics.errors import DimensionError

MODELS = {name: dynamics.load(name) for name in ("anymal", "double_pendulum_continuous", "ur5")}


@pytest.fixture(autouse=True)
def compiled():
    """Every test here starts with the compiled library loaded."""
    assert manifold._library() is not None


def numpy_twin(monkeypatch, function, *args):
    """``function(*args)`` with the compiled library unavailable: the numpy twin's result."""
    with monkeypatch.context() as patch:
        patch.setattr(manifold, "_library", lambda: None)
        return function(*args)


def states(model, rng, size, scale=1.0):
    q0 = dynamics.random_configuration(model, rng, size)
    q1 = dynamics.random_configuration(model, rng, size)
    return q0, q1, scale * rng.standard_normal(q0.shape[:-1] + (model.nv,))


def assert_twins(monkeypatch, model, q0, q1, v):
    """integrate and difference, compiled and numpy, agree to 1e-13 with the same shapes."""
    out = dynamics.integrate(model, q0, v)
    ref = numpy_twin(monkeypatch, dynamics.integrate, model, q0, v)
    assert out.shape == ref.shape
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-13)
    out = dynamics.difference(model, q0, q1)
    ref = numpy_twin(monkeypatch, dynamics.difference, model, q0, q1)
    assert out.shape == ref.shape
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-13)


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("size", [None, 1, 7])
def test_compiled_equals_numpy(monkeypatch, rng, name, size):
    model = MODELS[name]
    q0, q1, v = states(model, rng, size)
    assert_twins(monkeypatch, model, q0, q1, v)
    assert dynamics.integrate(model, q0, v).shape == q0.shape
    assert dynamics.difference(model, q0, q1).shape == v.shape


@pytest.mark.parametrize("name", MODELS)
def test_compiled_equals_numpy_on_broadcast_and_converted_inputs(monkeypatch, rng, name):
    model = MODELS[name]
    q0, q1, v = states(model, rng, (2, 3))
    for args in (
        (q0[0, 0], q1, v),  # one configuration against a batch
        (q0[:, :1], q1[:1], v[0]),  # (2, 1) against (1, 3) and a single velocity
        (np.asfortranarray(q0[0]), q1[0].astype(">f8"), v[0].astype(np.float32)),  # layouts and dtypes
        (q0[0, 0].tolist(), q1[0, 0].tolist(), v[0, 0].tolist()),
        (q0[:, ::2], q1[:, ::2], v[:, ::2]),  # strided views
    ):
        assert_twins(monkeypatch, model, *args)
    assert dynamics.integrate(model, q0[0, 0], v).shape == (2, 3, model.nq)
    assert dynamics.difference(model, q0[:, :1], q1[:1]).shape == (2, 3, model.nv)
    empty = np.zeros((0, model.nq))
    assert dynamics.integrate(model, empty, np.zeros((0, model.nv))).shape == (0, model.nq)


def test_compiled_equals_numpy_on_both_sides_of_the_small_angle_series(monkeypatch, rng):
    """Rotations of 0, 1e-6, 1 and 4 rad, from and to quaternions with negative w: at 1e-6 rad the
    closed forms lose ~1e-10 to cancellation, so a missing Taylor branch would show; beyond pi
    the product quaternion is flipped to q0's side."""
    model = MODELS["anymal"]
    q0, _, v = states(model, rng, 7)
    q0[:, 3:7] *= -np.sign(q0[:, 6:7])  # the same orientations, w < 0
    assert np.all(q0[:, 6] < 0)
    axis = rng.standard_normal((7, 3))
    axis /= np.linalg.norm(axis, axis=1, keepdims=True)
    for angle in (0.0, 1e-6, 1.0, 4.0):
        v[:, 3:6] = angle * axis
        q1 = dynamics.integrate(model, q0, v)
        flipped = q1.copy()
        flipped[:, 3:7] *= -np.sign(flipped[:, 6:7])  # w < 0: log6 flips it back
        for target in (q1, flipped):
            assert_twins(monkeypatch, model, q0, target, v)
            if angle < np.pi:  # beyond, the logarithm goes the short way round
                np.testing.assert_allclose(dynamics.difference(model, q0, target), v, rtol=0, atol=1e-10)
        # the integrated quaternion stays on the side of q0's
        assert np.all(np.sum(q1[:, 3:7] * q0[:, 3:7], axis=1) >= 0)
        np.testing.assert_allclose(np.linalg.norm(q1[:, 3:7], axis=1), 1.0, rtol=0, atol=1e-15)


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("size", [None, 7])
def test_difference_inverts_integrate(rng, name, size):
    model = MODELS[name]
    q0, _, v = states(model, rng, size, scale=0.5)  # rotations below pi: the logarithm inverts exp
    np.testing.assert_allclose(dynamics.difference(model, q0, dynamics.integrate(model, q0, v)), v, rtol=0, atol=1e-10)


def test_numpy_twin_runs_when_the_library_cannot_be_compiled(monkeypatch, rng):
    model = MODELS["anymal"]
    q0, q1, v = states(model, rng, 7)
    expected = dynamics.integrate(model, q0, v), dynamics.difference(model, q0, q1)
    calls = []

    def spy(function):
        def wrapped(*args):
            calls.append(function.__name__)
            return function(*args)

        return wrapped

    monkeypatch.setattr(manifold, "_integrate_numpy", spy(manifold._integrate_numpy))
    monkeypatch.setattr(manifold, "_difference_numpy", spy(manifold._difference_numpy))
    dynamics.integrate(model, q0, v), dynamics.difference(model, q0, q1)
    assert calls == []  # the library is loaded: numpy stays out of it
    monkeypatch.setattr(codegen, "compiled_library", lambda path, functions: None)
    monkeypatch.setattr(manifold, "_LIBRARY", [])  # load again, through the patched loader
    got = dynamics.integrate(model, q0, v), dynamics.difference(model, q0, q1)
    assert calls == ["_integrate_numpy", "_difference_numpy"]
    assert manifold._LIBRARY == [None]
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-13)


@pytest.mark.parametrize("compiled_backend", [True, False])
def test_errors_name_the_argument(monkeypatch, compiled_backend):
    model = MODELS["anymal"]
    if not compiled_backend:
        monkeypatch.setattr(manifold, "_library", lambda: None)
    q, v = dynamics.neutral(model), np.zeros(model.nv)
    with pytest.raises(DimensionError, match=r"v: expected shape \(18,\) or \(B, 18\), got \(19,\)"):
        dynamics.integrate(model, q, q)
    with pytest.raises(DimensionError, match=r"q1: expected shape \(19,\) or \(B, 19\), got \(18,\)"):
        dynamics.difference(model, q, v)
    with pytest.raises(DimensionError, match=r"batch shapes do not match: q \(2, 19\), v \(3, 18\)"):
        dynamics.integrate(model, np.tile(q, (2, 1)), np.zeros((3, model.nv)))
    with pytest.raises(DimensionError, match="q0: expected an array of 19 numbers, got str"):
        dynamics.difference(model, "q", q)


def test_one_layout_per_model():
    a, b = dynamics.load("anymal"), dynamics.load("anymal")
    assert manifold._layout(a) is manifold._layout(a)
    assert manifold._layout(a) is not manifold._layout(b)
    layout = manifold._layout(MODELS["double_pendulum_continuous"])
    np.testing.assert_array_equal(layout.array, [0, 0, 2, 0, 2, 0, 1])
