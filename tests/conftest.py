"""Shared fixtures of the dynamics tests: models paired with Pinocchio's, random states,
tolerances and the one finite-difference helper every derivative test uses; and the programs
beside Python that some tests run, which CI installs. The session's kernel cache, and the order
of the tests: those marked ``heavy`` first."""

from __future__ import annotations

import os
import shutil
import tempfile
from functools import lru_cache

import numpy as np
import pinocchio as pin
import pytest

from liftoff import dynamics
from liftoff.dynamics.robots import robot_urdf

ROBOTS = ["anymal", "talos", "solo12", "ur5"]
NSTATES = 50  # random states per oracle comparison
TOL = 1e-8  # oracle tolerance, relative to max(1, |reference|)


SESSION_CACHE = []  # the kernel cache this session made, removed at its end


def pytest_configure(config):
    """Compiled kernels go to a cache of this test session (unless LIFTOFF_CACHE says where):
    every session compiles what it uses once, leaves the user's cache alone, and removes its own
    when it ends. No optimized builds in the background (``dynamics.codegen``): the tests would
    wait for none of them, and they would compete with the tests for the processors."""
    os.environ["LIFTOFF_OPTIMIZE"] = "0"
    if "LIFTOFF_CACHE" not in os.environ:
        SESSION_CACHE.append(tempfile.mkdtemp(prefix="liftoff-test-kernels-"))
        os.environ["LIFTOFF_CACHE"] = SESSION_CACHE[0]


def pytest_collection_modifyitems(config, items):
    """The tests marked ``heavy`` first, the others in their order: pytest-xdist hands the tests
    out in this order, and a heavy test met last keeps one process running while the other
    waits."""
    items.sort(key=lambda item: item.get_closest_marker("heavy") is None)


def pytest_unconfigure(config):
    for folder in SESSION_CACHE:
        shutil.rmtree(folder, ignore_errors=True)


def required_program(names, why) -> str:
    """The path of the first of the programs ``names`` found on the PATH. Without any, the test
    fails in CI (``CI`` set, as ``.ci/run`` does, which installs them) and is skipped elsewhere,
    saying ``why``."""
    for name in names:
        path = shutil.which(name)
        if path:
            return path
    if os.environ.get("CI", "").lower() in ("", "0", "false", "no"):
        pytest.skip(why)
    pytest.fail(why)


# ----------------------------------------------------------------------------- models


def pin_model_from_urdf(path, floating_base):
    """Pinocchio's model of a URDF file, with a free-flyer root if ``floating_base``."""
    if floating_base:
        return pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer())
    return pin.buildModelFromUrdf(str(path))


@lru_cache(maxsize=None)
def load_pair(name):
    """``(our model, Pinocchio model)`` of a registry robot, built once per session."""
    model = dynamics.load(name)
    return model, pin_model_from_urdf(robot_urdf(name), model.has_free_flyer)


@pytest.fixture(params=ROBOTS)
def robot(request):
    """``(name, our model, Pinocchio model)`` for each robot of the oracle tests."""
    return (request.param, *load_pair(request.param))


@pytest.fixture
def tiny(tmp_path):
    """The path of the tests' smallest gait configuration (``test_cli_solve.TINY``) as a YAML file."""
    import yaml
    from test_cli_solve import TINY

    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(TINY))
    return str(path)


@pytest.fixture
def rng(request):
    """A generator seeded from the test's name: reproducible, different per test case."""
    return np.random.default_rng(list(request.node.nodeid.encode()))


def random_states(model, rng, n=NSTATES):
    """``n`` random ``(q, v, a)``: configurations within the limits, normal v and a."""
    q = dynamics.random_configuration(model, rng, n)
    return q, rng.standard_normal((n, model.nv)), rng.standard_normal((n, model.nv))


def regular_configurations(model, rng, n, contacts, min_eig=1e-3):
    """``n`` random configurations whose Delassus matrix ``J M^-1 J^T`` (of ``contacts``,
    whose targets if any have no batch axis) has its eigenvalues ``>= min_eig``: away from
    the kinematic singularities where the constrained dynamics is ill-posed and proximal
    iterations (``mu = 1e-4``) crawl."""
    kept = []
    while sum(len(x) for x in kept) < n:
        q = dynamics.random_configuration(model, rng, 2 * n)
        J = dynamics.contact_jacobian(model, q, contacts)
        D = J @ np.linalg.solve(dynamics.crba(model, q), np.swapaxes(J, -1, -2))
        kept.append(q[np.linalg.eigvalsh(D)[:, 0] >= min_eig])
    return np.concatenate(kept)[:n]


# ----------------------------------------------------------------------------- comparisons


def atol(reference, tol=TOL):
    """Absolute tolerance ``tol * max(1, |reference|)``: ``tol`` relative to large values."""
    return tol * max(1.0, float(np.max(np.abs(reference), initial=0.0)))


def pin_loop(fn, *arrays):
    """``fn`` applied to each row of the batched ``arrays``, results stacked."""
    return np.array([np.array(fn(*row)) for row in zip(*arrays)])


def symmetrize_upper(X):
    """The symmetric matrix whose upper triangle is that of ``X`` (Pinocchio fills only it)."""
    X = np.asarray(X)
    return np.triu(X) + np.triu(X, 1).T


def pin_fext(pmodel, f):
    """Pinocchio's external forces: the universe's zero force, then one per joint (rows of ``f``)."""
    assert len(f) == pmodel.njoints - 1
    return [pin.Force.Zero()] + [pin.Force(np.asarray(row)) for row in f]


# ----------------------------------------------------------------------------- finite differences


def se3_difference(y0, y1):
    """``log6(M0^-1 M1)`` of placements packed as ``(..., 12)``: flattened R then p.

    The LOCAL tangent between two placements; used to finite-difference frame placements.
    """
    R0, p0 = y0[..., :9].reshape(y0.shape[:-1] + (3, 3)), y0[..., 9:]
    R1, p1 = y1[..., :9].reshape(y1.shape[:-1] + (3, 3)), y1[..., 9:]
    R = np.swapaxes(R0, -1, -2) @ R1
    p = np.einsum("...ji,...j->...i", R0, p1 - p0)
    cos = np.clip((np.trace(R, axis1=-2, axis2=-1) - 1) / 2, -1.0, 1.0)
    theta = np.arccos(cos)
    axial = np.stack([R[..., 2, 1] - R[..., 1, 2], R[..., 0, 2] - R[..., 2, 0], R[..., 1, 0] - R[..., 0, 1]], -1)
    small = theta < 1e-4
    sin = np.where(small, 1.0, np.sin(theta))
    w = np.where(small, 0.5 + theta**2 / 12, theta / (2 * sin))[..., None] * axial
    W = np.zeros(w.shape[:-1] + (3, 3))
    W[..., 0, 1], W[..., 0, 2], W[..., 1, 2] = -w[..., 2], w[..., 1], -w[..., 0]
    W = W - np.swapaxes(W, -1, -2)
    t = np.where(small, 1.0, theta)
    c = np.where(small, 1 / 12 + theta**2 / 720, (1 - t * np.sin(t) / (2 * (1 - np.cos(t)))) / t**2)
    V_inv = np.eye(3) - 0.5 * W + c[..., None, None] * (W @ W)
    return np.concatenate((np.einsum("...ij,...j->...i", V_inv, p), w), axis=-1)


def finite_differences(f, x, *fixed, model=None, wrt="vector", out="vector", eps=3e-6):
    """Central-difference Jacobian of ``f(x, *fixed)`` at each of the states ``x (S, n)``.

    ``wrt="configuration"``: ``x`` is a configuration of ``model``, perturbed in its tangent
    space through ``dynamics.integrate`` (``nv`` directions); otherwise perturbed by
    addition. ``out``: how outputs ``(B, ...)`` are compared: ``"vector"`` (subtraction),
    ``"configuration"`` (``dynamics.difference``), or a callable ``(y0, y1) -> tangent``.
    The step is ``eps * max(1, |x|)`` per state, and all ``2 * ndx`` perturbations of all
    states are evaluated in ONE batched call of ``f``; ``fixed`` arguments ``(S, m)`` are
    repeated to match. Returns ``(S, *tangent_shape_of_output, ndx)``.
    """
    x = np.atleast_2d(np.asarray(x, dtype=float))
    S, n = x.shape
    ndx = model.nv if wrt == "configuration" else n
    h = eps * np.maximum(1.0, np.linalg.norm(x, axis=-1))  # (S,)
    steps = np.concatenate((np.eye(ndx), -np.eye(ndx)))[None] * h[:, None, None]  # (S, 2 ndx, ndx)
    x_rep = np.repeat(x[:, None], 2 * ndx, axis=1)
    if wrt == "configuration":
        xs = dynamics.integrate(model, x_rep.reshape(-1, n), steps.reshape(-1, ndx))
    else:
        xs = (x_rep + steps).reshape(-1, n)
    args = [np.repeat(np.atleast_2d(a), 2 * ndx, axis=0) if np.ndim(a) > 1 else a for a in fixed]
    y = np.asarray(f(xs, *args))
    y = y.reshape((S, 2, ndx) + y.shape[1:])
    plus, minus = y[:, 0], y[:, 1]
    if out == "vector":
        dy = plus - minus
    elif out == "configuration":
        dy = dynamics.difference(model, minus, plus)
    else:
        dy = out(minus, plus)
    J = dy / (2 * h.reshape((S,) + (1,) * (dy.ndim - 1)))  # (S, ndx, *tangent)
    return np.moveaxis(J, 1, -1)


class HeldPolicy:
    """An MPC whose every update gives the same policy (a closed loop's plant under test)."""

    def __init__(self, policy):
        self.policy, self.ticks = policy, []

    def start(self, t, q, v, tau=None):
        return self.policy

    update = start
