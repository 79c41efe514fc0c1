"""A lifted horizon in two compiled calls (ocp/horizon.py, group.c) against the same
formulation group by group (ocp/formulation.py's steps, each group in one compiled call): the
linearization (the LQR, the terminal stage, dx0, the KKT error, cost, norms and barrier cost,
each group's residuals and condensing), the direction and the step reached, to the last bit, on
the trot (contact and impulse groups), polishing (a torque filter, its sums past numpy's
pairwise blocks), a copy of a problem with other data and the exact Hessian with a kept
curvature; the cases it leaves to the group by group path, and what that path then reports. A
Newton step in one call (the Riccati recursion between the two) against the linearization, the
recursion and the step one after the other, and what it leaves to them."""

from __future__ import annotations

import ctypes
import dataclasses
from pathlib import Path

import numpy as np
import pytest
from test_ocp import perturbed_iterate
from test_redundant_ocp import duplicated

from liftoff.dynamics import manifold
from liftoff.ocp.formulation import Formulation, HorizonSteps, NonFiniteError
from liftoff.problems.tasks.config import load_config, parse_config
from liftoff.problems.tasks.gaits import build_problem
from liftoff.problems.tasks.polishing import PolishingConfig, build_ocp, make_task
from liftoff.solvers import ipm
from liftoff.solvers.ipm import Options, solve
from liftoff.solvers.riccati import riccati

CONFIGS = Path(__file__).resolve().parent.parent / "configs"
EPS = 1e-2


@pytest.fixture(scope="module")
def trot():
    return build_problem(load_config(CONFIGS / "anymal_trot.yaml"))


@pytest.fixture(scope="module")
def polishing():
    return build_ocp(make_task(parse_config({"task": "polishing", "mpc": {"horizon": 40}}, schema=PolishingConfig)))


def newton_step(formulation, it, curvature=False, fresh=True) -> list:
    """The numbers of a linearization at ``it`` (with the exact Hessian's ``curvature``, ``fresh``
    or kept), of the Newton direction from it and of the iterate its step reaches, copied (the
    workspaces' blocks are the next linearization's)."""
    lin, _ = formulation.linearize(it, EPS, curvature=curvature, fresh=fresh)
    lqr = [np.array(getattr(lin.lqr, name)) for name in ("A", "B", "b", "Qxx", "Qxu", "Quu", "lx", "lu", "nu")]
    terminal = [np.array(x) for x in (lin.terminal.Qxx, lin.terminal.lx, lin.dx0)]
    scalars = [lin.kkt_error, lin.cost, lin.constraint_violation, lin.infeasibility, lin.barrier_cost]
    groups = [
        np.array(x)
        for step in lin.groups
        for x in (*step.residual.values(), *step.condensed.factors, step.condensed.T, step.condensed.t)
        + (step.lifted.H, step.lifted.g, step.r_p, step.r_c)
    ]
    d = formulation.direction(it, lin, riccati(lin.lqr, lin.terminal, lin.dx0, "compiled"))
    direction = [d.dx, d.lam, *(np.array(x) for g in d.groups for x in g), np.array(d.steps)]
    new = formulation.step(it, d, *formulation.max_steps(it, d))
    stepped = [new.q, new.v, new.tau, new.lam, *(x for gv in new.groups for x in dataclasses.astuple(gv))]
    return [np.array(scalars), *lqr, *terminal, *groups, *direction, *(np.array(x) for x in stepped)]


def group_by_group(formulation) -> Formulation:
    """``formulation`` without its compiled horizon."""
    formulation._horizon = False
    return formulation


def random_iterate(formulation, seed):
    rng = np.random.default_rng(seed)
    it = perturbed_iterate(formulation, rng, EPS)
    return dataclasses.replace(it, tau=it.tau + rng.standard_normal(it.tau.shape))  # a torque filter's too


@pytest.mark.parametrize("problem", ["trot", "polishing"])
def test_the_compiled_horizon_is_the_formulation_group_by_group(problem, request):
    ocp = request.getfixturevalue(problem)
    formulation = Formulation(ocp, "lifted", "compiled", quiet=True)
    it = random_iterate(formulation, 3)
    assert isinstance(formulation.linearize(it, EPS)[0].groups, HorizonSteps)
    compiled = newton_step(formulation, it)
    steps = newton_step(group_by_group(formulation), it)
    assert not isinstance(formulation.linearize(it, EPS)[0].groups, HorizonSteps)
    assert len(compiled) == len(steps)
    for a, b in zip(compiled, steps):
        np.testing.assert_array_equal(a, b)


def compiled_batch(kernel):
    """A C function of a compiled kernel's batch signature (``batch_t`` of ``group.c``) that runs
    the interpreted ``kernel``: what the address of a compiled kernel's stands for, without
    compiling it."""

    def batch(S, x, outputs):
        rows = np.ctypeslib.as_array(ctypes.cast(x, ctypes.POINTER(ctypes.c_double)), (S, kernel.n_in))
        out = np.ctypeslib.as_array(ctypes.cast(outputs[0], ctypes.POINTER(ctypes.c_double)), (S, kernel.sizes[0]))
        out[...] = kernel(rows)[0]
        return 0

    signature = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_long, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p))
    return signature(batch)


@pytest.mark.parametrize("problem", ["trot", "polishing"])
def test_an_exact_linearization_is_the_formulation_group_by_group(problem, request):
    """The exact Hessian: the linearizations that compute the curvature (fresh: with compiled
    curvature kernels, here the interpreted ones behind C functions) and those that add the
    curvature kept take the compiled horizon, and give the numbers of the group by group path,
    bitwise, on the trot (contact and impulse groups) and polishing (a torque filter). With
    interpreted curvature kernels a fresh one goes group by group; a copy for another problem
    adds no curvature before its own first fresh linearization."""
    ocp = request.getfixturevalue(problem)
    formulations = [Formulation(ocp, "lifted", "compiled", quiet=True) for _ in range(3)]
    interpreted, compiled, steps = formulations[0], formulations[1], group_by_group(formulations[2])
    for formulation in formulations:
        formulation.stages.compile = False  # the curvature's kernels interpreted: no compile for them
    first, later = (solve(interpreted, Options(barrier=EPS, max_iterations=n)).iterate for n in (2, 3))
    kinds = sorted({group.kind for group in compiled.groups})
    batches = [compiled_batch(compiled.stages._curvature_kernel(kind)) for kind in kinds]
    for kind, batch in zip(kinds, batches):
        compiled.stages._curvature_kernel(kind)._batch = batch
    assert interpreted._exact_horizon(fresh=False) is None
    assert isinstance(interpreted.linearize(first, EPS, curvature=True)[0].groups, tuple)
    assert isinstance(interpreted.linearize(later, EPS, curvature=True, fresh=False)[0].groups, HorizonSteps)
    assert isinstance(compiled.linearize(first, EPS, curvature=True)[0].groups, HorizonSteps)
    assert isinstance(compiled.linearize(later, EPS)[0].groups, HorizonSteps)  # Gauss-Newton's: its own calls
    steps.linearize(first, EPS, curvature=True)
    # the curvature kept from first, computed at later, kept from later
    cases = [(interpreted, later, False), (compiled, later, True), (compiled, first, False)]
    for formulation, it, fresh in cases:
        exact = newton_step(formulation, it, curvature=True, fresh=fresh)
        for a, b in zip(exact, newton_step(steps, it, curvature=True, fresh=fresh), strict=True):
            np.testing.assert_array_equal(a, b)
    assert not np.array_equal(exact[4], newton_step(compiled, first)[4])  # Qxx: the curvature is in
    copy = interpreted.for_problem(dataclasses.replace(ocp, v0=ocp.v0 + 0.1))
    assert copy._exact_horizon(fresh=False) is None
    copy.linearize(first, EPS, curvature=True)
    assert copy._exact_horizon(fresh=False) is not None and interpreted._exact_horizon(fresh=False) is None


def test_a_solve_is_the_group_by_group_solve(trot):
    """Newton iterations chained (each linearized at the iterate the last step reached, a view of
    the step's block): the same iterates, KKT errors and step sizes as group by group."""
    options = Options(barrier=1e-2, max_iterations=4)
    compiled = solve(Formulation(trot, "lifted", "compiled", quiet=True), options)
    steps = solve(group_by_group(Formulation(trot, "lifted", "compiled", quiet=True)), options)
    assert compiled.iterations == steps.iterations == 4
    numbers = ("kkt_error", "cost", "alpha_primal", "alpha_dual")
    for a, b in zip(compiled.history, steps.history):
        assert [getattr(a, n) for n in numbers] == [getattr(b, n) for n in numbers]
    for name in ("q", "v", "lam", "tau"):
        np.testing.assert_array_equal(getattr(compiled.iterate, name), getattr(steps.iterate, name))
    for a, b in zip(compiled.iterate.groups, steps.iterate.groups):
        for x, y in zip(dataclasses.astuple(a), dataclasses.astuple(b)):
            np.testing.assert_array_equal(x, y)


def test_the_step_made_with_the_direction_serves_only_its_own_sizes(trot):
    """The stepped iterate a compiled direction carries is returned for its step sizes from its
    iterate; other sizes (a line search's halved step) are stepped anew, as group by group."""
    formulation = Formulation(trot, "lifted", "compiled", quiet=True)
    it = random_iterate(formulation, 4)
    lin, _ = formulation.linearize(it, EPS)
    d = formulation.direction(it, lin, riccati(lin.lqr, lin.terminal, lin.dx0, "compiled"))
    assert d.stepped is not None and formulation.step(it, d, *d.steps) is d.stepped
    half = formulation.step(it, d, 0.5 * d.steps[0], d.steps[1])
    reference = dataclasses.replace(d, stepped=None)
    expected = formulation.step(it, reference, 0.5 * d.steps[0], d.steps[1])
    assert half is not d.stepped
    np.testing.assert_array_equal(half.q, expected.q)
    np.testing.assert_array_equal(half.groups[0].u, expected.groups[0].u)


def test_a_copy_for_other_data_shares_the_structure_and_has_its_own_numbers(polishing):
    """An MPC's next horizon: the same groups, another initial state and torques. Its compiled
    horizon is the first one's structure, and its knot arrays (kept by value) with its own other
    arrays, and its numbers are its own, those of its group by group path."""
    formulation = Formulation(polishing, "lifted", "compiled", quiet=True)
    it = random_iterate(formulation, 5)
    formulation.linearize(it, EPS)
    rng = np.random.default_rng(6)
    moved = dataclasses.replace(polishing, v0=polishing.v0 + 0.1 * rng.standard_normal(polishing.v0.shape))
    copy = formulation.for_problem(moved)
    structure = formulation.compiled_horizon().structure
    assert copy.compiled_horizon().structure is structure
    assert copy.compiled_horizon()._knots is formulation.compiled_horizon()._knots  # the same knots, kept
    shifted = [g.index + 1 for g in polishing.groups()]  # other knots: their own arrays
    arrays, pointers = structure.knots(shifted)
    assert pointers is not formulation.compiled_horizon()._knots
    assert [a.dtype for a in arrays] == [np.intc] * len(shifted)
    for a, b in zip(arrays, shifted, strict=True):
        np.testing.assert_array_equal(a, b)
    assert structure.knots([s.copy() for s in shifted])[1] is pointers  # kept by value
    compiled = newton_step(copy, it)
    assert not np.array_equal(compiled[1 + 9 + 2], newton_step(formulation, it)[1 + 9 + 2])  # dx0 differs
    steps = newton_step(group_by_group(copy), it)
    for a, b in zip(compiled, steps):
        np.testing.assert_array_equal(a, b)


def test_a_structure_refuses_groups_that_share_a_workspace(trot):
    """The linearization runs every group's kernel before reading any group's outputs: two groups
    of one workspace (one would overwrite the other's) are refused."""
    formulation = Formulation(trot, "lifted", "compiled", quiet=True)
    s = formulation.compiled_horizon().structure
    args = (s.K, formulation.model, trot.ntau, trot.nu, formulation.stages.terminal_inputs[0])
    assert type(s)(list(s.calls), *args).calls == s.calls
    with pytest.raises(ValueError, match="workspaces of their own"):
        type(s)([*s.calls, s.calls[0]], *args)


def test_a_value_not_finite_is_reported_where_the_group_by_group_path_finds_it(trot):
    """A non-finite control: the compiled horizon leaves the linearization to the group by
    group path, which names the quantity and the stage, and keeps to it afterwards."""
    formulation = Formulation(trot, "lifted", "compiled", quiet=True)
    it = random_iterate(formulation, 7)
    g = next(i for i, group in enumerate(formulation.groups) if group.kind == "contact" and i > 0)
    groups = list(it.groups)
    groups[g] = dataclasses.replace(groups[g], u=np.full_like(groups[g].u, np.inf))
    bad = dataclasses.replace(it, groups=tuple(groups))
    with pytest.raises(NonFiniteError) as compiled:
        formulation.linearize(bad, EPS)
    assert formulation._horizon is False
    with pytest.raises(NonFiniteError) as steps:
        group_by_group(Formulation(trot, "lifted", "compiled", quiet=True)).linearize(bad, EPS)
    assert str(compiled.value) == str(steps.value)
    assert str(compiled.value).endswith(f"at stage {formulation.groups[g].index[0]}")


@pytest.mark.parametrize("case", ["redundant", "numpy", "nonlifted", "no manifold library"])
def test_the_horizon_is_compiled_only_where_every_group_is(trot, case, monkeypatch):
    """Redundant contacts (their own condensing), the numpy backend, the non-lifted
    formulation and a configuration manifold in numpy (manifold.c not compiled) go group by group."""
    ocp, name, backend = trot, "lifted", "compiled"
    if case == "redundant":
        ocp = duplicated(trot)
    elif case == "numpy":
        backend = "numpy"
    elif case == "nonlifted":
        name = "nonlifted"
    else:
        monkeypatch.setattr(manifold, "compiled", lambda model: None)
    formulation = Formulation(ocp, name, backend, quiet=True)
    lin, _ = formulation.linearize(formulation.initial_iterate(EPS), EPS)
    assert formulation.compiled_horizon() is None
    assert isinstance(lin.groups, tuple)


def separate_calls(formulation, it, options) -> tuple:
    """What :func:`solvers.ipm.newton_step` gives, from a solve without iterations, the Riccati
    recursion and the step one after the other."""
    result = solve(formulation, options, warm_start=it)
    lin = result.linearization
    sol = riccati(lin.lqr, lin.terminal, lin.dx0, "compiled")
    d = formulation.direction(it, lin, sol)
    return result, sol, formulation.step(it, d, *formulation.max_steps(it, d))


def numbers(result, sol, stepped) -> list:
    """The numbers of a Newton step: the result's, the Riccati solution's, the iterate reached."""
    scalars = [result.kkt_error, result.cost, result.max_constraint_violation, result.iterations, result.barrier]
    recursion = [sol.dx, sol.lam, sol.P, sol.p, sol.nu, sol.controls, sol.gains, sol.feedforward]
    knots = [stepped.q, stepped.v, stepped.tau, stepped.lam]
    variables = [x for gv in stepped.groups for x in dataclasses.astuple(gv)]
    return [np.array(scalars), *(np.array(x) for x in recursion + knots + variables)]


@pytest.mark.parametrize("problem", ["trot", "polishing"])
def test_a_newton_step_in_one_call_is_the_linearization_the_recursion_and_the_step(problem, request):
    """:func:`solvers.ipm.newton_step` (one compiled call) gives the status, the numbers and the
    linearization of a solve without iterations, the Riccati recursion of its LQR and the iterate
    its step reaches, bitwise; twice from one formulation, as an MPC's updates do."""
    formulation = Formulation(request.getfixturevalue(problem), "lifted", "compiled", quiet=True)
    options = Options(barrier=EPS, max_iterations=0)
    for seed in (8, 9):
        it = random_iterate(formulation, seed)
        result, sol, stepped = ipm.newton_step(formulation, options, it)
        assert (result.status, result.history, result.iterations) == ("max_iterations", [], 0) and result.iterate is it
        assert result.message.startswith("KKT error") and isinstance(result.linearization.groups, HorizonSteps)
        expected = separate_calls(formulation, it, options)
        assert result.status == expected[0].status and result.message == expected[0].message
        for a, b in zip(numbers(result, sol, stepped), numbers(*expected), strict=True):
            np.testing.assert_array_equal(a, b)


def test_a_newton_step_leaves_to_the_separate_calls_what_it_cannot_take(trot, monkeypatch):
    """None (the caller then runs the calls one after the other): after iterations, without a
    compiled horizon, on a value not finite (the solve then reports it), where a monotone barrier
    falls before the step. A recursion that finds the LQR not convex leaves the linearization
    made, the recursion and the step to the caller."""
    options = Options(barrier=EPS, max_iterations=0)
    formulation = Formulation(trot, "lifted", "compiled", quiet=True)
    it = random_iterate(formulation, 10)
    assert ipm.newton_step(formulation, dataclasses.replace(options, max_iterations=1), it) is None
    assert ipm.newton_step(Formulation(trot, "lifted", "numpy", quiet=True), options, it) is None
    assert ipm.newton_step(group_by_group(Formulation(trot, "lifted", "compiled", quiet=True)), options, it) is None
    bad = dataclasses.replace(it, v=np.full_like(it.v, np.nan))
    assert ipm.newton_step(formulation, options, bad) is None
    assert solve(formulation, options, warm_start=bad).status == "diverged"
    monotone = dataclasses.replace(options, barrier_update="monotone", barrier_min=EPS / 10)
    with monkeypatch.context() as m:
        m.setattr(ipm, "barrier_falls", lambda options, eps, kkt_error: options.barrier_update == "monotone")
        assert ipm.newton_step(formulation, monotone, it) is None
        assert ipm.newton_step(formulation, options, it) is not None

    signature = ctypes.CFUNCTYPE(ctypes.c_int, *(ctypes.c_int,) * 3, *(ctypes.c_void_p,) * 19)
    not_convex = signature(lambda *args: 1)  # liftoff_riccati's status at stage 0
    monkeypatch.setattr(ipm, "compiled_address", lambda: ctypes.cast(not_convex, ctypes.c_void_p).value)
    formulation = Formulation(trot, "lifted", "compiled", quiet=True)
    result, sol, stepped = ipm.newton_step(formulation, options, it)
    assert sol is None and stepped is None
    expected = solve(formulation, options, warm_start=it)
    assert (result.kkt_error, result.cost, result.status) == (expected.kkt_error, expected.cost, expected.status)
    np.testing.assert_array_equal(result.linearization.lqr.Quu, expected.linearization.lqr.Quu)
