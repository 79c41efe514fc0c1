"""The exact stage Hessian (:meth:`ocp.kernels.CompiledStages.curvature`) against central
differences of the numpy reference's stationarity, on random contact sets and every kind of
cost term; and what it does to a solve's tail (:mod:`solvers.ipm`)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from test_cli_solve import TINY, write
from test_config import edit
from test_kernels import assert_close, random_ocp, random_point

from liftoff import dynamics
from liftoff.dynamics import codegen
from liftoff.ocp import backends, kernels
from liftoff.ocp.formulation import Formulation
from liftoff.ocp.kernels import CompiledStages
from liftoff.ocp.stages import NumpyStages
from liftoff.problems.cli import main
from liftoff.problems.studies.runs import load_run
from liftoff.problems.tasks.config import load_config
from liftoff.problems.tasks.gaits import build_problem
from liftoff.solvers import ipm
from liftoff.solvers.riccati import RiccatiError

STEP = 1e-6  # central differences: their error is about 1e-9 of the Hessian's largest entries here


def differences(stages, group, variables, beta, lam_next, model) -> np.ndarray:
    """``(S, ny, ny)``: the symmetric part of the central differences of the stationarity ``g +
    C^T beta + A^T lam_next`` (its terms of the stage's own variables) along each column of ``y =
    (dq, dv, dtau, du, dw)``, ``q`` moved by the exponential map: the Hessian of the stage's
    Lagrangian in the tangent coordinates (the antisymmetric terms of moving along two
    directions in turn cancel). Every displaced point is a stage of one batch."""
    q, v, u, w, q_next, v_next, tau, tau_next = variables
    S, nv = len(q), model.nv
    named = {"q": q, "v": v, "tau": np.zeros((S, 0)) if tau is None else tau, "u": u, "w": w}
    ny = nv + sum(x.shape[1] for k, x in named.items() if k != "q")
    moved = {k: np.repeat(x[None], 2 * ny, axis=0) for k, x in named.items()}  # (2 ny, S, n): +h, -h per column
    column = 0
    for name, x in named.items():
        n = nv if name == "q" else x.shape[1]
        for k in range(n):
            for side, sign in ((2 * column, 1.0), (2 * column + 1, -1.0)):
                if name == "q":
                    step = np.zeros((S, nv))
                    step[:, k] = sign * STEP
                    moved["q"][side] = dynamics.integrate(model, q, step)
                else:
                    moved[name][side][:, k] += sign * STEP
            column += 1
    flat = {k: x.reshape(2 * ny * S, -1) for k, x in moved.items()}
    tile = lambda x: None if x is None else np.tile(x, (2 * ny, 1))  # noqa: E731
    batch = group.subset(np.tile(np.arange(S), 2 * ny))
    taus = (None, None) if tau is None else (flat["tau"], tile(tau_next))
    ev = stages.evaluate(batch, flat["q"], flat["v"], flat["u"], flat["w"], tile(q_next), tile(v_next), *taus)
    gradient = ev.g + np.einsum("swy,sw->sy", ev.C, tile(beta)) + np.einsum("sxy,sx->sy", ev.A, tile(lam_next))
    gradient = gradient.reshape(ny, 2, S, ny)
    jacobian = np.moveaxis((gradient[:, 0] - gradient[:, 1]) / (2 * STEP), 0, 2)  # (S, ny, ny), columns last
    return 0.5 * (jacobian + np.swapaxes(jacobian, 1, 2))


def terminal_differences(stages, q, v, tau, model) -> np.ndarray:
    """``(nx, nx)``: the symmetric part of the central differences of the terminal cost's
    gradient along ``(dq, dv, dtau)``, ``q`` moved by the exponential map."""
    x = {"q": q, "v": v, "tau": np.zeros(0) if tau is None else tau}
    columns = []
    for name, n in (("q", model.nv), ("v", model.nv), ("tau", len(x["tau"]))):
        for k in range(n):
            sides = []
            for sign in (1.0, -1.0):
                moved = dict(x)
                step = np.zeros(n)
                step[k] = sign * STEP
                moved[name] = dynamics.integrate(model, q, step) if name == "q" else x[name] + step
                sides.append(stages.terminal(moved["q"], moved["v"], None if tau is None else moved["tau"])[2])
            columns.append((sides[0] - sides[1]) / (2 * STEP))
    jacobian = np.stack(columns, axis=1)
    return 0.5 * (jacobian + jacobian.T)


@pytest.mark.parametrize(("name", "torque_filter"), [("anymal", None), ("solo12", None), ("anymal", 5.0)])
def test_curvature_is_the_hessian_of_the_costs_and_local_equalities(name, torque_filter):
    """At random points and multipliers of contact stages (3D, 6D, 1D and planar contacts in
    every reference frame, a flight), an impulse and the terminal cost: ``H`` with the curvature
    is the Gauss-Newton ``H`` plus the second derivatives of the residuals, of ``beta^T c`` and of
    the state equation's ``A^T lam_next``, which the central differences of ``g + C^T beta + A^T
    lam_next`` give (``g = R^T W r``: its derivative is ``R^T W R`` plus the residuals'
    curvature)."""
    rng = np.random.default_rng([11, len(name), torque_filter is None])
    ocp = random_ocp(name, rng, torque_filter)
    compiled, reference = CompiledStages(ocp, compile=False), NumpyStages(ocp)
    q, v = random_point(ocp, rng)
    tau = 10 * rng.standard_normal((ocp.K + 1, ocp.ntau))
    nv, kinds = ocp.model.nv, set()
    for group in ocp.groups():
        idx, S = group.index, group.size
        m = sum(c.dim for c in group.contacts)
        nu = ocp.nu if group.kind == "contact" else 0
        u, w = 10 * rng.standard_normal((S, nu)), 10 * rng.standard_normal((S, nv + m))
        taus = (tau[idx], tau[idx + 1]) if ocp.ntau else (None, None)
        variables = (q[idx], v[idx], u, w, q[idx + 1], v[idx + 1], *taus)
        beta, lam_next = 10 * rng.standard_normal((S, nv + m)), 10 * rng.standard_normal((S, ocp.nx))
        ev = compiled.evaluate(group, *variables)
        gauss_newton = ev.H.copy()
        exact = compiled.curvature(group, ev, beta, lam_next).H
        np.testing.assert_array_equal(ev.H, gauss_newton)  # the evaluation's own H is left as it was
        expected = differences(reference, group, variables, beta, lam_next, ocp.model)
        expected -= reference.evaluate(group, *variables).H
        assert np.abs(expected).max() > 1.0  # curvature there is
        assert_close(expected, exact - gauss_newton, tol=1e-6, what=f"{group.kind} stage {idx[0]}")
        kinds.add(group.kind)
    assert kinds == {"contact", "impulse"}
    x_K = (q[-1], v[-1], tau[-1] if ocp.ntau else None)
    gauss_newton, exact = compiled.terminal(*x_K)[1], compiled.terminal(*x_K, curvature=True)[1]
    expected = terminal_differences(reference, *x_K, ocp.model) - reference.terminal(*x_K)[1]
    assert np.abs(expected).max() > 0.01
    assert_close(expected, exact - gauss_newton, tol=1e-6, what="terminal")


def test_a_reused_curvature_is_that_of_the_last_fresh_evaluation():
    """Not fresh, the curvature added to a group's (and the terminal cost's) Gauss-Newton ``H`` is
    the one computed at the last fresh call, at its point and multipliers; a problem whose
    workspaces hold another problem's curvature (an MPC's next horizon) computes its own."""
    rng = np.random.default_rng(5)
    ocp = random_ocp("anymal", rng)
    compiled = CompiledStages(ocp, compile=False)
    points = [random_point(ocp, rng) for _ in range(2)]
    nv, curvatures = ocp.model.nv, {}
    for group in ocp.groups():
        idx, S = group.index, group.size
        m = sum(c.dim for c in group.contacts)
        nu = ocp.nu if group.kind == "contact" else 0
        evaluations = []
        for fresh, (q, v) in zip((True, False), points):
            u, w = rng.standard_normal((S, nu)), rng.standard_normal((S, nv + m))
            beta, lam_next = 10 * rng.standard_normal((S, nv + m)), 10 * rng.standard_normal((S, ocp.nx))
            ev = compiled.evaluate(group, q[idx], v[idx], u, w, q[idx + 1], v[idx + 1])
            gauss_newton = ev.H.copy()
            exact = compiled.curvature(group, ev, beta, lam_next, fresh=fresh).H.copy()
            evaluations.append((gauss_newton, exact, ev, beta, lam_next))
        (gn1, exact1, *_), (gn2, exact2, ev2, beta2, lam2) = evaluations
        assert np.abs(exact1 - gn1).max() > 1.0
        np.testing.assert_allclose(exact2, gn2 + (exact1 - gn1), rtol=0, atol=1e-12 * np.abs(exact1).max())
        own = compiled.curvature(group, ev2, beta2, lam2).H - gn2
        assert np.abs(own - (exact1 - gn1)).max() > 1e-3  # the curvature moves with the point
        curvatures[int(idx[0])] = own
    (q1, v1), (q2, v2) = points
    gn1, exact1 = compiled.terminal(q1[-1], v1[-1])[1], compiled.terminal(q1[-1], v1[-1], curvature=True)[1]
    gn2, exact2 = (
        compiled.terminal(q2[-1], v2[-1])[1],
        compiled.terminal(q2[-1], v2[-1], curvature=True, fresh=False)[1],
    )
    np.testing.assert_allclose(exact2, gn2 + (exact1 - gn1), rtol=0, atol=1e-12 * np.abs(exact1).max())
    next_horizon = dataclasses.replace(ocp)  # another problem of the same structure
    other = compiled.for_problem(next_horizon, next_horizon.groups())  # the same workspaces
    for group in next_horizon.groups():
        idx, S = group.index, group.size
        m = sum(c.dim for c in group.contacts)
        nu = ocp.nu if group.kind == "contact" else 0
        u, w = rng.standard_normal((S, nu)), rng.standard_normal((S, nv + m))
        beta, lam_next = 10 * rng.standard_normal((S, nv + m)), 10 * rng.standard_normal((S, ocp.nx))
        ev = other.evaluate(group, q2[idx], v2[idx], u, w, q2[idx + 1], v2[idx + 1])
        gauss_newton = ev.H.copy()
        reused = other.curvature(group, ev, beta, lam_next, fresh=False).H - gauss_newton
        np.testing.assert_allclose(reused, other.curvature(group, ev, beta, lam_next).H - gauss_newton, atol=1e-12)
    terminal = other.terminal(q2[-1], v2[-1], curvature=True, fresh=False)[1]
    np.testing.assert_array_equal(terminal, other.terminal(q2[-1], v2[-1], curvature=True)[1])


# ----------------------------------------------------------------------------- solves

# TINY with longer, higher steps and a heavy CoM cost: Gauss-Newton's tail is slow (a KKT error divided by about 5
# per iteration)
BENT = edit(edit(edit(TINY, "gait.step_length", 0.15), "gait.step_height", 0.08), "costs.com", 1e4)


@pytest.fixture(scope="module")
def bent(tmp_path_factory):
    """A formulation of :data:`BENT` on compiled kernels, the curvature's interpreted (no compile
    for it), and its solver options."""
    config = load_config(write(tmp_path_factory.mktemp("bent"), BENT))
    form = Formulation(build_problem(config), quiet=True)
    form.stages.compile = False
    return form, config.solver.options()


def test_the_exact_hessian_shortens_the_tail(bent, monkeypatch):
    """From the same start and at the same barrier, the exact Hessian takes fewer iterations to
    the same solution; its iterations start once the steps are full and shrink the KKT error
    faster than Gauss-Newton's ever do, all but the first with its curvature; the default options
    never take it. (This tail is not slow enough to call for it: it is taken after any full step
    here.)"""
    form, options = bent
    monkeypatch.setattr(ipm, "SLOW", 0.0)
    gauss_newton = ipm.solve(form, options)
    exact = ipm.solve(form, dataclasses.replace(options, hessian="exact"))
    assert gauss_newton.converged and exact.converged
    assert not any(h.exact for h in gauss_newton.history)
    assert exact.iterations <= gauss_newton.iterations - 4
    assert exact.cost == pytest.approx(gauss_newton.cost, rel=1e-8)
    tail = [h for h in exact.history if h.exact]
    assert len(tail) >= 4 and exact.history[-1].exact
    assert [h.fresh for h in tail] == [True] + [False] * (len(tail) - 1)
    kkt = [h.kkt_error for h in exact.history] + [exact.kkt_error]
    first = exact.history.index(tail[0])
    assert exact.history[first - 1].alpha_primal == exact.history[first - 1].alpha_dual == 1.0
    exact_rates = [kkt[k + 1] / kkt[k] for k in range(first, len(kkt) - 1)]
    kkt = [h.kkt_error for h in gauss_newton.history] + [gauss_newton.kkt_error]
    gauss_newton_rates = [kkt[k + 1] / kkt[k] for k in range(len(kkt) - 6, len(kkt) - 1)]
    assert max(exact_rates[1:]) < 0.1 < min(gauss_newton_rates)


def test_a_non_convex_exact_system_falls_back_to_gauss_newton(bent, monkeypatch):
    """When the Riccati recursion finds the exact LQR not convex, the iteration takes Gauss-Newton's
    system at the same iterate: the solve is Gauss-Newton's, iteration for iteration."""
    form, options = bent
    monkeypatch.setattr(ipm, "SLOW", 0.0)
    gauss_newton = ipm.solve(form, options)
    exact_systems = []  # kept alive: compared by identity
    linearize, riccati = type(form).linearize, ipm.riccati

    def marking(self, it, eps, curvature=False, fresh=True):
        lin, it = linearize(self, it, eps, curvature, fresh)
        if curvature:
            exact_systems.append(lin.lqr)
        return lin, it

    def refusing(lqr, *args):
        if any(lqr is s for s in exact_systems):
            raise RiccatiError("stage 0: the LQR is not convex")
        return riccati(lqr, *args)

    monkeypatch.setattr(type(form), "linearize", marking)
    monkeypatch.setattr(ipm, "riccati", refusing)
    fallen = ipm.solve(form, dataclasses.replace(options, hessian="exact"))
    assert exact_systems and not any(h.exact for h in fallen.history)
    assert [h.kkt_error for h in fallen.history] == [h.kkt_error for h in gauss_newton.history]


def log(kkt, alpha=1.0, exact=False):
    return ipm.IterationLog(0, 0.0, kkt, 1e-4, alpha, 1.0, 0.0, 0.0, 0.0, 0.0, exact, exact)


class _Lin:
    def __init__(self, kkt):
        self.kkt_error = kkt


def test_the_exact_hessian_is_taken_where_gauss_newton_is_slow():
    """After a full step at the last barrier: when that step was exact, or when it followed a
    full Gauss-Newton step that divided the KKT error by less than 2."""
    exact = ipm.Options(barrier=1.0, barrier_update="adaptive", barrier_min=1e-4, hessian="exact")
    slow, fast = [log(10.0)], [log(100.0)]
    assert ipm._exact_next(exact, 1e-4, 1.0, 1.0, False, _Lin(6.0), slow)
    assert not ipm._exact_next(exact, 1e-4, 1.0, 1.0, False, _Lin(6.0), fast)
    assert not ipm._exact_next(exact, 1e-4, 1.0, 1.0, False, _Lin(6.0), [log(10.0, alpha=0.5)])  # not a full step
    assert not ipm._exact_next(exact, 1e-4, 1.0, 1.0, False, _Lin(6.0), [])
    assert not ipm._exact_next(exact, 1e-3, 1.0, 1.0, False, _Lin(6.0), slow)  # the barrier still falls
    assert not ipm._exact_next(exact, 1e-4, 0.9, 1.0, False, _Lin(6.0), slow)  # this step not full
    assert not ipm._exact_next(exact, 1e-4, 1.0, 0.9, True, _Lin(0.1), fast)
    assert ipm._exact_next(exact, 1e-4, 1.0, 1.0, True, _Lin(0.1), fast)  # exact and full: it stays
    gauss_newton = dataclasses.replace(exact, hessian="gauss-newton")
    assert not ipm._exact_next(gauss_newton, 1e-4, 1.0, 1.0, False, _Lin(6.0), slow)
    fixed = ipm.Options(barrier=0.1, hessian="exact")
    assert ipm._exact_next(fixed, 0.1, 1.0, 1.0, False, _Lin(6.0), slow)


def test_an_exact_iteration_reuses_the_curvature_while_the_exact_steps_are_fast():
    """The first exact iteration of a run computes the curvature; the next ones reuse it until an
    exact step divides the KKT error by less than 2."""
    assert ipm._fresh_next(False, _Lin(6.0), [log(10.0, exact=True)])  # after a Gauss-Newton step
    assert not ipm._fresh_next(True, _Lin(6.0), [log(10.0)])  # the run's first step: its outcome unknown yet
    assert not ipm._fresh_next(True, _Lin(1.0), [log(10.0, exact=True)])  # a fast exact step
    assert ipm._fresh_next(True, _Lin(6.0), [log(10.0, exact=True)])  # a slow one
    assert "exact, reused" in ipm.format_log(dataclasses.replace(log(1.0, exact=True), fresh=False))
    assert ipm.format_log(log(1.0, exact=True)).endswith("  exact")


def test_a_solve_with_the_exact_hessian_says_so_and_keeps_its_own_results_file(tmp_path, capsys, monkeypatch):
    """The problem's line names it, and its default results file does not replace Gauss-Newton's
    (this tail is fast: no iteration takes it, and nothing is compiled for it)."""
    config = write(tmp_path, TINY)
    monkeypatch.chdir(tmp_path)
    assert main(["solve", config]) == 0
    assert main(["solve", config, "--hessian", "exact"]) == 0
    out = capsys.readouterr().out
    assert "tiny: lifted, barrier 0.1, exact Hessian, compiled stages; " in out
    files = sorted(p.name for p in (tmp_path / "results").glob("*.npz"))
    assert files == ["tiny_lifted_0.1.npz", "tiny_lifted_0.1_exact.npz"]


def test_the_exact_hessian_needs_the_lifted_formulation_on_compiled_kernels(tmp_path, capsys):
    config = write(tmp_path, TINY)
    for other in (["--formulation", "nonlifted"], ["--backend", "numpy"]):
        assert main(["solve", config, "--hessian", "exact", *other]) == 2
        assert capsys.readouterr().err == (
            "liftoff: error: solver.hessian: expected gauss-newton unless the formulation is lifted and the backend "
            "compiled, got 'exact'\n"
        )
    problem = Formulation(build_problem(load_config(config)), backend="numpy")
    with pytest.raises(ValueError, match="the exact Hessian needs the lifted formulation on compiled kernels"):
        ipm.solve(problem, ipm.Options(hessian="exact"))


def test_without_a_compiler_the_exact_hessian_gives_way_to_gauss_newtons(tmp_path, capsys, monkeypatch):
    def no_compiler(*args, **kwargs):
        raise codegen.CompileError("no C compiler found")

    monkeypatch.setattr(backends, "CompiledStages", no_compiler)
    out = tmp_path / "x.npz"
    assert main(["solve", write(tmp_path, TINY), "--hessian", "exact", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "liftoff: warning: no C compiler found; using the numpy backend\n" in err
    assert "liftoff: warning: the exact Hessian needs compiled kernels; using Gauss-Newton's\n" in err
    assert load_run(out)["config"]["solver"]["hessian"] == "gauss-newton"


def test_a_curvature_kernel_that_does_not_compile_is_interpreted(bent, monkeypatch, capsys):
    form, _ = bent
    stages = CompiledStages(form.ocp, quiet=True)  # the stage kernels, from the cache

    def failing(*args, **kwargs):
        raise codegen.CompileError("compiling it failed: an error")

    monkeypatch.setattr(kernels.codegen, "load", failing)
    assert isinstance(stages._curvature_kernel("contact"), codegen.Interpreted)
    assert capsys.readouterr().err == (
        "liftoff: warning: compiling it failed: an error; the exact Hessian's contact terms interpreted\n"
    )


def test_the_solve_benchmark_counts_the_exact_iterations_and_the_curvatures_they_computed():
    from liftoff.problems.bench.solve import format_table

    def run(iterations, exact, fresh):
        split = dict.fromkeys(("kernels", "riccati", "linearize_rest", "expand_step", "other"), 1e-3)
        times = {"total_s": 0.2, "per_knot_iteration_s": 1e-4, "split_s": split}
        return {"knots": 73, "iterations": iterations, "exact_iterations": exact, "curvatures": fresh, **times}

    def row(lifted):
        croc = {"knots": 62, "iterations": 19, "total_s": 0.2, "per_knot_iteration_s": 1.7e-4}
        ratios = {"ratio_per_knot_iteration": 0.6, "ratio_total": 1.0, "nonlifted_over_lifted_per_iteration": 1.4}
        return {"gait": "bound", "lifted": lifted, "crocoddyl": croc, **ratios}

    table = format_table({"gaits": [row(run(30, 6, 2)), row(run(62, 0, 0))]})
    assert "| bound | 73, 30 (6 exact, 2 fresh) | 200.0 |" in table
    assert "| bound | 73, 62 | 200.0 |" in table
