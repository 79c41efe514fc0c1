"""Friction cones: the admitted set, and derivatives by finite differences on the manifold."""

import numpy as np
import pytest

from liftoff import dynamics
from liftoff.dynamics import Contact
from liftoff.ocp.friction import friction_cones

FEET = ("LF_FOOT", "LH_FOOT", "RF_FOOT", "RH_FOOT")


@pytest.fixture(scope="module")
def anymal():
    return dynamics.load("anymal")


@pytest.mark.parametrize("reference", ["LOCAL", "LOCAL_WORLD_ALIGNED", "WORLD"])
def test_derivatives_match_finite_differences(anymal, reference):
    rng = np.random.default_rng(0)
    contacts = [Contact(f, "3D", reference) for f in FEET]
    S, nv = 3, anymal.nv
    q, f = dynamics.random_configuration(anymal, rng, S), 50 * rng.standard_normal((S, 12))
    g, dg_dq, dg_df = friction_cones(anymal, q, f, contacts, 0.7)
    h = 1e-6
    fd_q = np.stack(
        [
            (
                friction_cones(anymal, dynamics.integrate(anymal, q, h * e), f, contacts, 0.7)[0]
                - friction_cones(anymal, dynamics.integrate(anymal, q, -h * e), f, contacts, 0.7)[0]
            )
            / (2 * h)
            for e in np.eye(nv)
        ],
        axis=-1,
    )
    fd_f = np.stack(
        [
            (
                friction_cones(anymal, q, f + h * e, contacts, 0.7)[0]
                - friction_cones(anymal, q, f - h * e, contacts, 0.7)[0]
            )
            / (2 * h)
            for e in np.eye(12)
        ],
        axis=-1,
    )
    np.testing.assert_allclose(dg_dq, fd_q, atol=1e-6 * max(1, np.abs(fd_q).max()))
    np.testing.assert_allclose(dg_df, fd_f, atol=1e-8)


def test_cone_admits_exactly_the_inscribed_pyramid(anymal):
    q = dynamics.neutral(anymal)[None]
    contacts = [Contact("LF_FOOT", "3D", "LOCAL_WORLD_ALIGNED")]
    mu = 0.7
    inside = np.array([[0.3, -0.2, 1.0]])  # |fx|, |fy| < mu fz / sqrt(2) = 0.495
    outside_x = np.array([[0.5, 0.0, 1.0]])
    pulling = np.array([[0.0, 0.0, -1.0]])
    assert np.all(friction_cones(anymal, q, inside, contacts, mu)[0] > 0)
    assert friction_cones(anymal, q, outside_x, contacts, mu)[0][0, 1] < 0
    assert friction_cones(anymal, q, pulling, contacts, mu)[0][0, 0] < 0


def test_user_errors(anymal):
    q, f = dynamics.neutral(anymal)[None], np.zeros((1, 3))
    with pytest.raises(ValueError, match="friction coefficient"):
        friction_cones(anymal, q, f, [Contact("LF_FOOT")], 0.0)
    with pytest.raises(ValueError, match="needs a 3D contact"):
        friction_cones(anymal, q, np.zeros((1, 6)), [Contact("LF_FOOT", "6D")], 0.7)
