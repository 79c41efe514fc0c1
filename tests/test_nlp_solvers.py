"""The baselines on the OCP as one NLP (ocp.nlp): Ipopt through CasADi and the Gauss-Newton
SQP with OSQP subproblems reach the optimum that liftoff's interior point reaches as its
barrier goes to zero; the NLP is the OCP at a point."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from test_cli_solve import TINY

from liftoff.ocp.costs import FrameVelocityCost
from liftoff.ocp.formulation import Formulation
from liftoff.ocp.nlp import build_nlp
from liftoff.problems.studies.baselines import nlp_guess
from liftoff.problems.tasks.config import parse_config
from liftoff.problems.tasks.gaits import build_problem
from liftoff.solvers.ipm import Options, solve
from liftoff.solvers.ipopt import IpoptOptions, solve_ipopt
from liftoff.solvers.sqp import SQPOptions, solve_sqp


@pytest.fixture(scope="module")
def tiny():
    """The short trot (two stance phases around a diagonal swing, one impulse): cones and
    limits, a touchdown penalty."""
    return build_problem(parse_config(TINY))


@pytest.fixture(scope="module")
def interior_point(tiny):
    form = Formulation(tiny, "lifted", quiet=True)
    result = solve(
        form, Options(barrier=1e-1, barrier_update="monotone", barrier_min=1e-9, tol=1e-9, max_iterations=200)
    )
    assert result.converged
    return form.trajectories(result.iterate), result


def test_ipopt_reaches_the_interior_points_optimum(tiny, interior_point):
    trajectory, result = interior_point
    nlp = build_nlp(tiny)
    ipopt = solve_ipopt(nlp)
    assert ipopt.converged and ipopt.violation < 1e-8 and ipopt.measure < 1e-6
    assert ipopt.cost == pytest.approx(result.cost, rel=1e-7)
    solution = nlp.unpack(ipopt.x)
    np.testing.assert_allclose(solution["q"], trajectory["q"], atol=1e-6)
    np.testing.assert_allclose(solution["v"], trajectory["v"], atol=1e-5)
    for k, (u, w) in enumerate(zip(solution["u"], solution["w"])):
        np.testing.assert_allclose(u, trajectory["u"][k][: u.size], atol=1e-3, err_msg=f"stage {k}")
        np.testing.assert_allclose(w[18:], trajectory["f"][k], atol=1e-3, err_msg=f"stage {k}")


def test_the_nlp_is_the_ocp_at_a_point(tiny, interior_point):
    """At the interior point's solution the NLP's cost is the OCP's and its equalities hold."""
    import casadi as ca

    trajectory, result = interior_point
    nlp = build_nlp(tiny, guess=nlp_guess(tiny, trajectory))
    values = ca.Function("nlp", [nlp.problem["x"]], [nlp.problem["f"], nlp.problem["g"]])(nlp.x0)
    assert float(values[0]) == pytest.approx(result.cost, rel=1e-9)
    g = np.array(values[1]).ravel()
    equal = nlp.lbg == nlp.ubg
    assert np.abs(g[equal]).max() < 1e-7
    assert np.all(g[~equal] >= nlp.lbg[~equal] - 1e-9) and np.all(g[~equal] <= nlp.ubg[~equal] + 1e-9)


def test_the_nlp_has_the_ocps_frame_velocity_costs(tiny):
    """A landing foot's velocity cost at every stage: the NLP's cost at an iterate is the OCP's."""
    import casadi as ca

    term = FrameVelocityCost("LF_FOOT", np.array([0.1, 0.0, -0.2]), [1.0, 2.0, 3.0], "landing")
    ocp = replace(tiny, stages=tuple(replace(s, costs=tuple(s.costs) + (term,)) for s in tiny.stages))
    form = Formulation(ocp, "lifted", quiet=True)
    result = solve(form, Options(barrier=1e-1, max_iterations=3))
    nlp = build_nlp(ocp, guess=nlp_guess(ocp, form.trajectories(result.iterate)))
    cost = float(ca.Function("nlp", [nlp.problem["x"]], [nlp.problem["f"]])(nlp.x0))
    assert cost == pytest.approx(result.cost, rel=1e-9)


def test_a_torque_filter_has_no_nlp(tiny):
    with pytest.raises(ValueError, match="torque filter"):
        build_nlp(replace(tiny, torque_filter=5.0, tau0=None))


def test_ipopt_reports_an_iteration_limit(tiny):
    result = solve_ipopt(build_nlp(tiny), IpoptOptions(max_iterations=2))
    assert not result.converged and result.iterations == 2 and "Maximum_Iterations" in result.status


def test_the_osqp_sqp_reaches_the_interior_points_optimum(tiny, interior_point):
    trajectory, result = interior_point
    nlp = build_nlp(tiny)
    sqp = solve_sqp(nlp)
    assert sqp.converged and sqp.violation < 1e-6 and sqp.iterations <= 20
    assert sqp.cost == pytest.approx(result.cost, rel=1e-7)
    np.testing.assert_allclose(nlp.unpack(sqp.x)["q"], trajectory["q"], atol=1e-5)
    costs = sqp.history["cost"]
    assert costs[0] > costs[-1]  # from the initial guess down to the optimum


def test_the_sqp_reports_an_iteration_limit(tiny):
    result = solve_sqp(build_nlp(tiny), SQPOptions(max_iterations=1))
    assert result.status == "max_iterations" and result.iterations == 1


def test_an_infeasible_subproblem_ends_the_sqp_with_osqps_status():
    """x in [0, 1]^2 with x0 + x1 = 10: the linearized constraints cannot hold."""
    import casadi as ca

    from liftoff.ocp.nlp import NLP

    x = ca.SX.sym("x", 2)
    residual = x - ca.DM([1.0, 2.0])
    problem = {"x": x, "f": 0.5 * ca.dot(residual, residual), "g": x[0] + x[1]}
    nlp = NLP(
        problem, residual, np.ones(2), np.zeros(2), np.ones(2), np.array([10.0]), np.array([10.0]), np.zeros(2), None
    )
    result = solve_sqp(nlp)
    assert result.status == "qp_failed"
    assert result.message.startswith("OSQP: primal infeasible after ") and "at SQP iteration 0" in result.message


def test_the_sqp_takes_inexact_steps_that_descend(tiny, interior_point):
    """OSQP stopped after 100 iterations: its steps are not exact, but they decrease the merit."""
    _, result = interior_point
    sqp = solve_sqp(build_nlp(tiny), SQPOptions(qp_max_iterations=100))
    stopped = [qp for qp in sqp.history["qp"] if qp["status"] != "solved"]
    assert len(stopped) > sqp.iterations / 2
    assert sqp.converged and sqp.cost == pytest.approx(result.cost, rel=1e-7)
