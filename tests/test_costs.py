"""Cost terms: residual Jacobians by finite differences on the manifold; the Gauss-Newton
gradient is the exact gradient of the cost."""

import numpy as np
import pytest

from liftoff import dynamics
from liftoff.dynamics.spatial import quat_to_rotation
from liftoff.ocp.costs import (
    CenterOfMassCost,
    CostSum,
    FramePositionCost,
    FrameRotationCost,
    FrameVelocityCost,
    StageVariables,
    StateCost,
    VariableCost,
)


@pytest.fixture(scope="module")
def setting():
    model = dynamics.load("anymal")
    rng = np.random.default_rng(0)
    S, nv = 3, model.nv
    z = StageVariables(
        q=dynamics.random_configuration(model, rng, S),
        v=rng.standard_normal((S, nv)),
        u=rng.standard_normal((S, 12)),
        a=rng.standard_normal((S, nv)),
        f=rng.standard_normal((S, 12)),
        tau=rng.standard_normal((S, 12)),
    )
    terms = (
        StateCost(
            dynamics.random_configuration(model, rng, S), rng.standard_normal((S, nv)), rng.uniform(0.5, 2, 2 * nv)
        ),
        VariableCost("u", rng.standard_normal(12), 0.1, "control"),
        VariableCost("tau", rng.standard_normal(12), 0.3, "torque state"),
        VariableCost("a", np.zeros(nv), 1e-3, "acceleration"),
        VariableCost("f", rng.standard_normal((S, 12)), 1e-2, "force"),
        FramePositionCost("LF_FOOT", rng.standard_normal(3), [1.0, 2.0, 3.0], "swing foot"),
        CenterOfMassCost(rng.standard_normal((S, 3)), 10.0),
        FrameRotationCost("LF_FOOT", rotations_near(model, z.q, "LF_FOOT", rng), [1.0, 2.0, 3.0], "foot orientation"),
        FrameVelocityCost("RH_FOOT", rng.standard_normal((S, 3)), [1.0, 2.0, 0.5], "landing foot"),
    )
    return model, z, terms


def rotations_near(model, q, frame, rng):
    """The frame's rotations at ``q`` turned by up to about 0.6 rad: references with a
    rotation error that is neither zero nor near pi."""
    R, _ = dynamics.frame_placement(model, q, frame)
    w = 0.3 * rng.standard_normal((3, len(q)))
    turn = quat_to_rotation(dynamics.manifold.exp6(np.concatenate((np.zeros_like(w), w)))[0])
    return R @ turn.transpose(2, 0, 1)


def perturbed(model, z, y):
    """``z (+) y`` with ``y = (dq, dv, dtau, du, da, df)``."""
    dq, dv, dtau, du, da, df = np.split(y, np.cumsum(z.sizes)[:-1], axis=1)
    return StageVariables(dynamics.integrate(model, z.q, dq), z.v + dv, z.u + du, z.a + da, z.f + df, z.tau + dtau)


def test_residual_jacobians_match_finite_differences(setting):
    model, z, terms = setting
    ny, h = int(np.sum(z.sizes)), 1e-6
    for term in terms:
        r, R = term.residual(model, z)
        fd = np.stack(
            [
                (
                    term.residual(model, perturbed(model, z, h * np.broadcast_to(e, (3, ny))))[0]
                    - term.residual(model, perturbed(model, z, -h * np.broadcast_to(e, (3, ny))))[0]
                )
                / (2 * h)
                for e in np.eye(ny)
            ],
            axis=-1,
        )
        np.testing.assert_allclose(R, fd, atol=1e-6 * max(1, np.abs(fd).max()), err_msg=term.name)


def test_gauss_newton_gradient_is_the_cost_gradient(setting):
    model, z, terms = setting
    costs = CostSum(terms)
    H, g = costs.gauss_newton(model, z)
    ny, h = int(np.sum(z.sizes)), 1e-6
    total = lambda zz: sum(costs.evaluate(model, zz).values())  # noqa: E731
    fd = np.stack(
        [
            (
                total(perturbed(model, z, h * np.broadcast_to(e, (3, ny))))
                - total(perturbed(model, z, -h * np.broadcast_to(e, (3, ny))))
            )
            / (2 * h)
            for e in np.eye(ny)
        ],
        axis=-1,
    )
    np.testing.assert_allclose(g, fd, atol=1e-5 * max(1, np.abs(fd).max()))
    np.testing.assert_allclose(H, np.swapaxes(H, 1, 2), rtol=0, atol=1e-12 * np.abs(H).max())
    assert np.all(np.linalg.eigvalsh(H) > -1e-9)
    assert set(costs.evaluate(model, z)) == {
        "state",
        "control",
        "torque state",
        "acceleration",
        "force",
        "swing foot",
        "com",
        "foot orientation",
        "landing foot",
    }


def test_negative_weights_are_rejected(setting):
    model, z, _ = setting
    with pytest.raises(ValueError, match="weights"):
        CostSum((VariableCost("u", 0.0, -1.0, "control"),)).gauss_newton(model, z)
