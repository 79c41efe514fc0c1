"""The interior-point loop: exact in one Newton step on a linear-quadratic OCP; the line
search and the decreasing barrier reach the fixed-barrier optimum."""

import numpy as np
import pytest
from test_ocp import lift_foot_problem

from liftoff import dynamics
from liftoff.ocp.costs import StateCost, VariableCost
from liftoff.ocp.formulation import Formulation
from liftoff.ocp.problem import OCP, ContactStage
from liftoff.solvers.ipm import Options, _centrality_barrier, solve

GANTRY = """<robot name="gantry">
  <link name="base"/>
  <link name="carriage"><inertial><mass value="2.0"/><origin xyz="0 0 0"/>
    <inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
  <link name="tool"><inertial><mass value="0.5"/><origin xyz="0.1 0 0"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
  <joint name="x" type="prismatic"><parent link="base"/><child link="carriage"/><axis xyz="1 0 0"/>
    <limit lower="-2" upper="2" effort="100" velocity="10"/></joint>
  <joint name="z" type="prismatic"><parent link="carriage"/><child link="tool"/><axis xyz="0 0 1"/>
    <limit lower="-2" upper="2" effort="100" velocity="10"/></joint>
</robot>"""


def gantry_problem(N=12):
    """A Cartesian gantry under gravity: constant mass matrix, no velocity terms, so the
    dynamics are linear and the quadratic costs make the OCP linear-quadratic."""
    model = dynamics.load_urdf_string(GANTRY)
    target = np.array([0.5, 0.3])
    costs = (
        StateCost(target, np.zeros(2), [10.0, 10.0, 1.0, 1.0]),
        VariableCost("u", np.zeros(2), 1e-2),
        VariableCost("a", np.zeros(2), 1e-3),
    )
    stages = tuple(ContactStage((), 0.05, costs) for _ in range(N))
    return OCP(
        model,
        np.zeros(2),
        np.zeros(2),
        stages,
        (StateCost(target, np.zeros(2), [100.0] * 4),),
        friction=None,
        limits=(),
    )


@pytest.mark.parametrize("formulation", ["lifted", "nonlifted"])
def test_one_newton_step_solves_a_linear_quadratic_ocp(formulation):
    result = solve(Formulation(gantry_problem(), formulation), Options(tol=1e-9))
    assert result.status == "converged"
    assert result.iterations == 1
    assert result.kkt_error < 1e-9
    assert result.history[0].kkt_error > 1.0  # the start was far from the optimum


def test_linear_quadratic_optimum_is_the_dense_one():
    """The optimum of the one step equals the dense least-squares solution of the same LQ
    problem written with the torques as the only unknowns (single shooting)."""
    problem = gantry_problem(N=6)
    form = Formulation(problem, "nonlifted")
    result = solve(form, Options(tol=1e-9))
    u = form.trajectories(result.iterate)["u"]
    model, dt, N = problem.model, 0.05, 6
    M = dynamics.crba(model, np.zeros(2))
    g = dynamics.generalized_gravity(model, np.zeros(2))

    def residuals(U):  # the weighted residuals of all costs for the torques U, rolled out
        q, v, out = np.zeros(2), np.zeros(2), []
        for k in range(N):
            a = np.linalg.solve(M, U[2 * k : 2 * k + 2] - g)
            out += [
                np.sqrt(10.0) * (q - [0.5, 0.3]),
                np.sqrt(1.0) * v,
                np.sqrt(1e-2) * U[2 * k : 2 * k + 2],
                np.sqrt(1e-3) * a,
            ]
            q, v = q + dt * v, v + dt * a
        out += [np.sqrt(100.0) * (q - [0.5, 0.3]), np.sqrt(100.0) * v]
        return np.concatenate(out)

    r0 = residuals(np.zeros(2 * N))
    Jr = np.stack([residuals(e) - r0 for e in np.eye(2 * N)], axis=1)  # linear: exact columns
    U = np.linalg.lstsq(Jr, -r0, rcond=None)[0]
    np.testing.assert_allclose(u.ravel(), U, rtol=1e-8, atol=1e-8)


@pytest.fixture(scope="module")
def anymal():
    return dynamics.load("anymal")


@pytest.mark.heavy
def test_line_search_and_decreasing_barriers_reach_the_same_optimum(anymal):
    problem = lift_foot_problem(anymal, n_stance=2, n_swing=3, n_land=2)
    reference = solve(Formulation(problem), Options(barrier=1e-4, tol=3e-6))
    searched = solve(Formulation(problem), Options(barrier=1e-4, tol=3e-6, line_search=True))
    decreasing = {
        update: solve(Formulation(problem), Options(barrier=1e-1, barrier_update=update, barrier_min=1e-4, tol=3e-6))
        for update in ("monotone", "adaptive")
    }
    from_one = solve(
        Formulation(problem), Options(barrier=1.0, barrier_update="adaptive", barrier_min=1e-4, tol=3e-6)
    )  # the solve benchmark's start
    adaptive_searched = solve(
        Formulation(problem), Options(barrier=1e-1, barrier_update="adaptive", tol=3e-6, line_search=True)
    )
    for result in (reference, searched, adaptive_searched, from_one, *decreasing.values()):
        assert result.status == "converged", result.message
    for result in (adaptive_searched, from_one, *decreasing.values()):
        assert result.barrier == pytest.approx(1e-4)
        assert result.history[0].barrier == pytest.approx(1.0 if result is from_one else 1e-1)
        assert all(a.barrier >= b.barrier for a, b in zip(result.history, result.history[1:]))  # never raised
    for result in (searched, adaptive_searched, from_one, *decreasing.values()):
        np.testing.assert_allclose(result.iterate.q, reference.iterate.q, atol=1e-7)
        assert result.cost == pytest.approx(reference.cost, rel=1e-9)
    assert decreasing["adaptive"].iterations < reference.iterations  # the point of following the complementarity


def test_the_adaptive_barrier_is_loqos_centrality_rule():
    products = np.array([1e-2, 2e-2, 3e-2])  # mean 2e-2, xi = 0.5
    sigma = 0.1 * min(0.05 * 0.5 / 0.5, 2.0) ** 3
    assert _centrality_barrier(products, 1.0, 1e-9) == pytest.approx(sigma * 2e-2)
    assert _centrality_barrier(products, 1e-8, 1e-9) == 1e-8  # never above the previous barrier
    assert _centrality_barrier(np.full(4, 1e-3), 1.0, 1e-5) == 1e-5  # centred: down to the floor
    assert _centrality_barrier(np.array([1e-12, 1.0]), 1.0, 1e-9) == pytest.approx(0.8 * 0.5)  # off-centre: sigma 0.8
    with pytest.raises(ValueError, match="barrier_update must be one of fixed, monotone, adaptive"):
        Options(barrier_update="mehrotra")
    with pytest.raises(ValueError, match="barrier_min 0.01 exceeds barrier 0.001"):
        Options(barrier=1e-3, barrier_update="adaptive", barrier_min=1e-2)
    with pytest.raises(ValueError, match="hessian must be one of gauss-newton, exact"):
        Options(hessian="bfgs")


def test_the_adaptive_barrier_falls_no_faster_than_a_short_step_brought_the_products_down():
    centred = np.full(4, 1e-2)  # LOQO's sigma alone: 0, the floor
    assert _centrality_barrier(centred, 1.0, 1e-9, 1.0, 1.0) == 1e-9  # a full step: LOQO's rule
    assert _centrality_barrier(centred, 1.0, 1e-9, 0.5, 1.0) == pytest.approx(0.5**3 * 1e-2)
    assert _centrality_barrier(centred, 1.0, 1e-9, 1.0, 0.9) == pytest.approx(0.1**3 * 1e-2)  # the smaller size
    assert _centrality_barrier(centred, 1e-3, 1e-9, 0.01, 0.01) == 1e-3  # never above the previous barrier
    products = np.array([1e-2, 2e-2, 3e-2])  # LOQO's sigma 1.25e-5 wins over a near-full step's 1e-6
    assert _centrality_barrier(products, 1.0, 1e-9, 0.99, 1.0) == pytest.approx(0.1 * 0.05**3 * 2e-2)
