"""The OCP in both formulations on a small ANYmal problem: the KKT residual is the gradient of
the Lagrangian, both formulations reach the same optimum with friction cones active, and
failures come back as a status."""

import dataclasses
import pickle

import numpy as np
import pytest

from liftoff import dynamics
from liftoff.dynamics import Contact
from liftoff.ocp.costs import (
    CenterOfMassCost,
    FramePositionCost,
    StageVariables,
    StateCost,
    VariableCost,
)
from liftoff.ocp.formulation import Formulation
from liftoff.ocp.friction import friction_cones
from liftoff.ocp.problem import OCP, ContactStage, ImpulseStage, TermRows
from liftoff.solvers.ipm import Options, solve

FEET = ("LF_FOOT", "LH_FOOT", "RF_FOOT", "RH_FOOT")
Q_STAND = np.array([0, 0, 0.4792, 0, 0, 0, 1, -0.1, 0.7, -1.0, -0.1, -0.7, 1.0, 0.1, 0.7, -1.0, 0.1, -0.7, 1.0])
MU = 0.4


@pytest.fixture(scope="module")
def anymal():
    return dynamics.load("anymal")


def lift_foot_problem(model, reference="LOCAL_WORLD_ALIGNED", n_stance=3, n_swing=5, n_land=3):
    """Stand, lift LF_FOOT 4 cm while the CoM moves 6 cm sideways (which the friction of the
    feet has to push: the cones become active), put it down (an impulse), stand."""
    feet_at = {f: dynamics.frame_placement(model, Q_STAND, f)[1] for f in FEET}
    com0 = dynamics.center_of_mass(model, Q_STAND)
    weights = np.concatenate(([0.0] * 3, [2.5e5] * 3, [1e-4] * 12, [100.0] * 6, [1.0] * 12))

    def contacts(feet):
        return tuple(Contact(f, "3D", reference, kp=625.0, kd=50.0, placement=feet_at[f]) for f in feet)

    def regularization():
        return (StateCost(Q_STAND, np.zeros(18), weights, "state"), VariableCost("u", np.zeros(12), 0.1, "control"))

    def com(k):
        return CenterOfMassCost(com0 + np.array([0.0, -0.06 * min(k / n_stance, 1.0), 0.0]), 1e5, "com")

    stages, k = [], 0
    for _ in range(n_stance):
        stages.append(ContactStage(contacts(FEET), 0.02, regularization() + (com(k),)))
        k += 1
    for j in range(n_swing):
        lift = feet_at["LF_FOOT"] + np.array([0, 0, 0.04 * np.sin(np.pi * j / n_swing)])
        stages.append(
            ContactStage(
                contacts(FEET[1:]), 0.02, regularization() + (com(k), FramePositionCost("LF_FOOT", lift, 1e5, "swing"))
            )
        )
        k += 1
    impulse_weights = np.concatenate(([1.0] * 6, [100.0] * 12, [100.0] * 18))
    touchdown = FramePositionCost("LF_FOOT", feet_at["LF_FOOT"], 1e5, "touchdown")
    stages.append(ImpulseStage(contacts(FEET), (StateCost(Q_STAND, np.zeros(18), impulse_weights, "state"), touchdown)))
    for _ in range(n_land):
        stages.append(ContactStage(contacts(FEET), 0.02, regularization() + (com(k),)))
        k += 1
    return OCP(model, Q_STAND, np.zeros(18), tuple(stages), terminal_costs=regularization()[:1], friction=MU)


# ------------------------------------------------------------------ the Lagrangian, independently


def lagrangian(form, it, lam_tilde, eps):
    """The Lagrangian of module ocp.formulation at ``it`` with its duals, written from the
    problem's definition: costs, -z^T (g - s), beta^T (local equalities), lam~^T F with the
    unpremultiplied state equation F, and -lam_0^T (x_0 (-) x0bar)."""
    model, ocp, nv = form.model, form.ocp, form.model.nv
    total = 0.0
    for group, gv in zip(form.groups, it.groups):
        idx = group.index
        q, v, qn, vn = it.q[idx], it.v[idx], it.q[idx + 1], it.v[idx + 1]
        w = form.stages.dynamics(group, q, v, gv.u) if form.name == "nonlifted" else gv.w
        a, f = w[:, :nv], w[:, nv:]
        total += sum(np.sum(c) for c in group.costs.evaluate(model, StageVariables(q, v, gv.u, a, f)).values())
        g = form.stages.inequalities(group, q, v, gv.u, f).g
        total -= np.sum(gv.z * (g - gv.s))
        if group.kind == "contact":
            F = np.concatenate(
                (dynamics.difference(model, qn, q) + group.dt[:, None] * v, v + group.dt[:, None] * a - vn), axis=1
            )
            if form.name == "lifted":
                local = np.concatenate(
                    (
                        dynamics.contact_inverse_dynamics(model, q, v, a, f, group.contacts) - gv.u @ form.S.T,
                        dynamics.contact_acceleration(model, q, v, a, group.contacts),
                    ),
                    axis=1,
                )
                total += np.sum(gv.beta * local)
        else:
            F = np.concatenate((dynamics.difference(model, qn, q), v + a - vn), axis=1)
            if form.name == "lifted":
                local = np.concatenate(
                    (
                        dynamics.impulse_inverse_dynamics(model, q, a, f, group.contacts),
                        dynamics.contact_velocity(model, q, v + a, group.contacts),
                    ),
                    axis=1,
                )
                total += np.sum(gv.beta * local)
        total += np.sum(lam_tilde[idx + 1] * F)
    zT = StageVariables(it.q[-1:], it.v[-1:], *(np.zeros((1, 0)),) * 3)
    total += sum(np.sum(c) for c in form.ocp.terminal().evaluate(model, zT).values())
    x0_error = np.concatenate((dynamics.difference(model, ocp.q0, it.q[0]), it.v[0] - ocp.v0))
    return total - it.lam[0] @ x0_error


def perturbed_iterate(form, rng, eps):
    """A point away from feasibility and optimality, with random positive slacks and duals."""
    it = form.initial_iterate(eps)
    model = form.model
    q = dynamics.integrate(model, it.q, 0.05 * rng.standard_normal(it.v.shape))
    q[0] = it.q[0]
    groups = tuple(
        dataclasses.replace(
            gv,
            u=gv.u + rng.standard_normal(gv.u.shape),
            w=gv.w + rng.standard_normal(gv.w.shape),
            beta=rng.standard_normal(gv.w.shape),
            s=gv.s * rng.uniform(0.5, 2.0, gv.s.shape),
            z=rng.uniform(0.1, 2.0, gv.z.shape),
        )
        for gv in it.groups
    )
    return dataclasses.replace(
        it, q=q, v=0.3 * rng.standard_normal(it.v.shape), lam=rng.standard_normal(it.lam.shape), groups=groups
    )


def costates_on_unpremultiplied(form, it):
    """lam~ with lam~^T F = lam^T (premultiplied F): lam~_q = -D^-T lam_q at the point."""
    model, nv = form.model, form.model.nv
    lam_tilde = it.lam.copy()
    D, _ = dynamics.difference_jacobians(model, it.q[1:], it.q[:-1])
    lam_tilde[1:, :nv] = -np.einsum("sji,sj->si", np.linalg.inv(D), it.lam[1:, :nv])
    return lam_tilde


@pytest.mark.parametrize("backend", ["compiled", "numpy"])
@pytest.mark.parametrize("formulation", ["lifted", "nonlifted"])
@pytest.mark.parametrize("reference", ["LOCAL_WORLD_ALIGNED", "LOCAL"])
def test_kkt_stationarity_is_the_gradient_of_the_lagrangian(anymal, formulation, reference, backend):
    """Directional derivatives of the Lagrangian (central differences, q moved through
    integrate) equal the stationarity residual the solver reports, on a perturbed point."""
    model, eps = anymal, 1e-2
    form = Formulation(lift_foot_problem(model, reference, n_stance=2, n_swing=2, n_land=1), formulation, backend)
    assert form.backend == backend
    rng = np.random.default_rng(7)
    it = perturbed_iterate(form, rng, eps)
    lin, it = form.linearize(it, eps)
    lam_tilde = costates_on_unpremultiplied(form, it)
    nv, K = model.nv, form.ocp.K
    dq, dv = rng.standard_normal((K + 1, nv)), rng.standard_normal((K + 1, nv))
    directions = [(rng.standard_normal(gv.u.shape), rng.standard_normal(gv.w.shape)) for gv in it.groups]

    def moved(h):
        groups = tuple(
            dataclasses.replace(gv, u=gv.u + h * du, w=gv.w + h * dw) for gv, (du, dw) in zip(it.groups, directions)
        )
        return dataclasses.replace(it, q=dynamics.integrate(model, it.q, h * dq), v=it.v + h * dv, groups=groups)

    h = 1e-6
    numeric = (lagrangian(form, moved(h), lam_tilde, eps) - lagrangian(form, moved(-h), lam_tilde, eps)) / (2 * h)
    analytic = 0.0
    for group, step, (du, dw) in zip(form.groups, lin.groups, directions):
        parts = [dq[group.index], dv[group.index], du] + ([dw] if formulation == "lifted" else [])
        analytic += np.sum(step.residual["stationarity"] * np.concatenate(parts, axis=1))
    zT = StageVariables(it.q[-1:], it.v[-1:], *(np.zeros((1, 0)),) * 3)
    _, g_T = form.ocp.terminal().gauss_newton(model, zT)
    analytic += (g_T[0] - it.lam[K]) @ np.concatenate((dq[K], dv[K]))
    np.testing.assert_allclose(analytic, numeric, rtol=1e-6)


def test_lagrangian_check_can_fail(anymal):
    """The same check sees a wrong costate mapping (lam~ = lam instead of -D^-T lam)."""
    model, eps = anymal, 1e-2
    form = Formulation(lift_foot_problem(model, n_stance=2, n_swing=2, n_land=1), "lifted")
    rng = np.random.default_rng(7)
    it = perturbed_iterate(form, rng, eps)
    lin, it = form.linearize(it, eps)
    dq = rng.standard_normal(it.v.shape)
    h = 1e-6

    def at(x):
        return lagrangian(form, dataclasses.replace(it, q=dynamics.integrate(model, it.q, x * dq)), it.lam, eps)

    numeric = (at(h) - at(-h)) / (2 * h)
    analytic = sum(
        np.sum(step.residual["stationarity"][:, :18] * dq[g.index]) for g, step in zip(form.groups, lin.groups)
    )
    analytic += -it.lam[-1, :18] @ dq[-1]
    assert abs(analytic - numeric) > 1e-3 * abs(numeric)


# ------------------------------------------------------------------ optimum


@pytest.fixture(scope="module")
def solutions(anymal):
    problem = lift_foot_problem(anymal)
    options = Options(barrier=1e-4, tol=1e-6, max_iterations=60)
    return {
        name: (Formulation(problem, name), solve(Formulation(problem, name), options))
        for name in ("lifted", "nonlifted")
    }


def test_both_formulations_converge(solutions):
    for name, (_, result) in solutions.items():
        assert result.status == "converged", (name, result.message)
        assert result.kkt_error <= 1e-6
        assert result.max_constraint_violation < 1e-8


def test_lifted_and_nonlifted_reach_the_same_optimum(solutions):
    (fl, rl), (fn, rn) = solutions["lifted"], solutions["nonlifted"]
    tl, tn = fl.trajectories(rl.iterate), fn.trajectories(rn.iterate)
    np.testing.assert_allclose(tl["q"], tn["q"], atol=1e-6)
    np.testing.assert_allclose(tl["v"], tn["v"], atol=1e-6)
    np.testing.assert_allclose(tl["u"], tn["u"], atol=1e-6 * np.abs(tl["u"]).max())
    for fa, fb in zip(tl["f"], tn["f"]):
        np.testing.assert_allclose(fa, fb, atol=1e-6 * np.abs(fa).max())
    assert rl.cost == pytest.approx(rn.cost, rel=1e-9)


def test_friction_cones_are_active_and_hold(solutions, anymal):
    """Some cone facets are at their boundary (slack of the order of the barrier), none is
    violated."""
    form, result = solutions["lifted"]
    t = form.trajectories(result.iterate)
    g_min = []
    for k, stage in enumerate(form.ocp.stages):
        if stage.kind == "contact":
            g, _, _ = friction_cones(anymal, t["q"][k : k + 1], t["f"][k][None], stage.contacts, MU)
            g_min.append(g.min() / t["f"][k][2::3].max())
    assert min(g_min) > -1e-9
    assert min(g_min) < 1e-4  # active: the relative margin is at the barrier's scale


def test_impulse_zeroes_the_landing_foot_velocity(solutions, anymal):
    form, result = solutions["lifted"]
    t = form.trajectories(result.iterate)
    k = next(k for k, s in enumerate(form.ocp.stages) if s.kind == "impulse")
    velocity = dynamics.frame_velocity(anymal, t["q"][k + 1], t["v"][k + 1], "LF_FOOT", "LOCAL_WORLD_ALIGNED")[:3]
    np.testing.assert_allclose(velocity, 0.0, atol=1e-8)
    before = dynamics.frame_velocity(anymal, t["q"][k], t["v"][k], "LF_FOOT", "LOCAL_WORLD_ALIGNED")[:3]
    assert np.linalg.norm(before) > 1e-2  # the foot was moving: the impulse did something


def test_warm_start_from_the_solution_converges_at_once(solutions):
    form, result = solutions["lifted"]
    again = solve(form, Options(barrier=1e-4, tol=1e-6), warm_start=result)
    assert again.status == "converged" and again.iterations <= 1


# ------------------------------------------------------------------ failures as a status


def test_non_finite_warm_start_reports_stage_and_quantity(anymal):
    form = Formulation(lift_foot_problem(anymal, n_stance=2, n_swing=2, n_land=1), "lifted")
    it = form.initial_iterate(1e-1)
    q = it.q.copy()
    q[3, 2] = np.nan
    result = solve(form, Options(), warm_start=dataclasses.replace(it, q=q))
    assert result.status == "diverged"
    assert result.message == "configuration q is not finite at knot 3"


def test_nonlifted_dynamics_failure_is_a_status(anymal):
    form = Formulation(lift_foot_problem(anymal, n_stance=2, n_swing=2, n_land=1), "nonlifted")
    it = form.initial_iterate(1e-1)
    groups = list(it.groups)
    groups[1] = dataclasses.replace(groups[1], u=np.full_like(groups[1].u, np.inf))
    result = solve(form, Options(), warm_start=dataclasses.replace(it, groups=tuple(groups)))
    assert result.status == "diverged"
    assert "contact dynamics" in result.message and "stage 2" in result.message


def test_singular_newton_system_is_a_status(anymal):
    """No cost at all and no inequalities, from a moving start: the control Hessian is zero."""
    problem = lift_foot_problem(anymal, n_stance=2, n_swing=2, n_land=1)
    bare = dataclasses.replace(
        problem,
        v0=np.full(18, 0.1),
        stages=tuple(dataclasses.replace(s, costs=()) for s in problem.stages),
        terminal_costs=(),
        friction=None,
        limits=(),
    )
    result = solve(Formulation(bare, "lifted", "numpy"), Options())  # a layout no other test compiles
    assert result.status == "diverged"
    assert "Riccati" in result.message and "stage" in result.message


def test_divergence_threshold_is_a_status(anymal):
    result = solve(Formulation(lift_foot_problem(anymal, n_stance=2, n_swing=2, n_land=1)), Options(divergence=1.0))
    assert result.status == "diverged" and "exceeds" in result.message


def test_iteration_limit_is_a_status(anymal):
    result = solve(Formulation(lift_foot_problem(anymal, n_stance=2, n_swing=2, n_land=1)), Options(max_iterations=2))
    assert result.status == "max_iterations" and result.iterations == 2 and len(result.history) == 2


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(q0=np.zeros(5)), "q0 must have shape"),
        (dict(v0=np.full(18, np.nan)), "v0 must be finite"),
        (dict(stages=()), "at least one stage"),
        (dict(friction=-1.0), "friction"),
        (dict(limits=("torques",)), "unknown limits"),
    ],
)
def test_bad_problem_input_is_a_clear_error(anymal, change, message):
    problem = lift_foot_problem(anymal, n_stance=1, n_swing=1, n_land=1)
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(problem, **change)


def test_bad_stage_input_is_a_clear_error(anymal):
    problem = lift_foot_problem(anymal, n_stance=1, n_swing=1, n_land=1)
    with pytest.raises(ValueError, match="stage 0: the time step must be > 0"):
        dataclasses.replace(problem, stages=(dataclasses.replace(problem.stages[0], dt=-0.01),) + problem.stages[1:])
    with pytest.raises(KeyError, match="NOT_A_FOOT"):
        dataclasses.replace(problem, stages=(ContactStage((Contact("NOT_A_FOOT"),), 0.02),))
    with pytest.raises(ValueError, match="unknown formulation"):
        Formulation(problem, "condensed")
    with pytest.raises(ValueError, match="unknown backend 'gpu'"):
        Formulation(problem, "lifted", "gpu")
    with pytest.raises(ValueError, match="barrier must be"):
        Options(barrier=0.0)


def test_zero_torque_start(anymal):
    """seed 004's start: no torque, no acceleration, a quarter of the weight on each foot in
    contact, no impulse; the non-lifted formulation then sees the robot falling."""
    problem = lift_foot_problem(anymal, n_stance=2, n_swing=2, n_land=1)
    weight = anymal.mass * 9.81
    form = Formulation(problem, "lifted", "numpy", init="zero_torque")
    for group, gv in zip(form.groups, form.initial_iterate(0.1).groups):
        assert not np.any(gv.u) and not np.any(gv.w[:, :18])
        f = gv.w[:, 18:].reshape(group.size, -1, 3)
        np.testing.assert_allclose(f[:, :, 2], weight / 4 if group.kind == "contact" else 0.0)
        np.testing.assert_allclose(f[:, :, :2], 0.0)
    form = Formulation(problem, "nonlifted", "numpy", init="zero_torque")
    it = form.initial_iterate(0.1)
    stance = next(gv for group, gv in zip(form.groups, it.groups) if group.kind == "contact")
    assert not np.any(stance.u) and np.all(stance.w[:, 2] < -1.0)  # the base accelerates downwards
    assert np.all(stance.s >= np.sqrt(0.1))  # slacks from the cones the dynamics' forces violate
    with pytest.raises(ValueError, match="unknown initial guess 'random'"):
        Formulation(problem, "lifted", "numpy", init="random")


def test_an_ocp_of_groups_keeps_them_and_refuses_groups_that_do_not_partition_its_stages(anymal):
    problem = lift_foot_problem(anymal)
    groups = problem.groups()
    fields = {f.name: getattr(problem, f.name) for f in dataclasses.fields(problem) if f.name != "stages"}
    again = OCP.of_groups(groups[::-1], **fields)
    assert all(a is b for a, b in zip(again.stages, problem.stages, strict=True))
    assert all(a is b for a, b in zip(again.groups(), groups, strict=True))  # in first-stage order
    assert dataclasses.replace(again).groups() is not again.groups()  # a copy groups its stages again
    first = groups[0]
    for bad in (groups[1:], groups + (first,), (first.subset([0]),) + groups[1:]):
        with pytest.raises(ValueError, match="partition the stages, one group per key"):
            OCP.of_groups(bad, **fields)


def test_a_retimed_ocp_is_the_ocp_with_its_first_stage_of_that_time_step(anymal):
    problem = lift_foot_problem(anymal)
    problem.groups(), problem.times()  # kept by the original, made again by the copy
    retimed = problem.retimed(0.004)
    first = dataclasses.replace(problem.stages[0], dt=0.004)
    made = dataclasses.replace(problem, stages=(first, *problem.stages[1:]))
    assert retimed.stages[0] == first and all(a is b for a, b in zip(retimed.stages[1:], problem.stages[1:]))
    np.testing.assert_array_equal(retimed.times(), made.times())
    assert retimed.times()[1] == 0.004 and problem.times()[1] != 0.004
    assert [g.index.tolist() for g in retimed.groups()] == [g.index.tolist() for g in made.groups()]
    assert retimed.groups()[0].stages[0] is retimed.stages[0]
    for name in ("q0", "v0", "terminal_costs", "friction", "limits", "torque_filter", "tau0"):
        assert getattr(retimed, name) is getattr(problem, name)
    for dt in (0.0, -0.01, float("nan")):
        with pytest.raises(ValueError, match="retimed to a time step > 0"):
            problem.retimed(dt)
    impulse_first = dataclasses.replace(problem, stages=(ImpulseStage(problem.stages[0].contacts), *problem.stages))
    with pytest.raises(ValueError, match="not a first impulse stage"):
        impulse_first.retimed(0.01)


def test_a_stage_s_terms_as_rows_of_its_group_s_stacked_terms_are_its_terms(anymal):
    """:class:`TermRows`: row r of a group's stacked terms reads, slices, adds and pickles as the
    tuple of stage r's terms."""
    group = lift_foot_problem(anymal).groups()[1]
    rows, own = TermRows(group.costs.terms, 2), group.stages[2].costs
    assert len(rows) == len(own) == 4
    for a, b in zip(rows, own, strict=True):
        assert type(a) is type(b) and a.name == b.name
        np.testing.assert_array_equal(np.ravel(a.weights), np.ravel(b.weights))
    np.testing.assert_array_equal(rows[-1].reference, own[-1].reference)  # the swing foot's, of this stage
    assert [t.name for t in rows[1:]] == [t.name for t in own[1:]]
    extra = VariableCost("a", np.zeros(18), 1.0, "extra")
    assert (rows + (extra,))[-1] is extra and ((extra,) + rows)[0] is extra
    copied = pickle.loads(pickle.dumps(rows))
    assert type(copied) is tuple and [t.name for t in copied] == [t.name for t in own]
    assert rows == tuple(rows)
