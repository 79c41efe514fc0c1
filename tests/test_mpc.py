"""The MPC loop's parts: the warm start on a later horizon, the policy between updates, a
formulation moved to another problem its kernels can evaluate, liftoff's idealized plant (pushes, passive
torques, held contact, the actuators' filter, a heavier model) and the closed loop (its period, its end on a
plant that blows up, a failed update or a stop, and its hooks)."""

from __future__ import annotations

import copy
import ctypes
import dataclasses
import pickle
import time
import warnings
from dataclasses import replace

import numpy as np
import pytest

from liftoff import dynamics
from liftoff.dynamics.codegen import CompileError
from liftoff.ocp.costs import VariableCost
from liftoff.ocp.formulation import Formulation, GroupVariables, Iterate
from liftoff.ocp.problem import SlidingFriction
from liftoff.problems.mpc import controller
from liftoff.problems.mpc.controller import MPC, PARTS, MPCError, Tick, warm_start
from liftoff.problems.mpc.disturbances import Disturbances, Push, scaled_model
from liftoff.problems.mpc.loop import closed_loop
from liftoff.problems.mpc.plants import ROW, ContactReading, Measurement, Steps
from liftoff.problems.mpc.plants.ideal import IdealPlant
from liftoff.problems.mpc.policy import CompiledPolicy, Policy, PolicyKernel
from liftoff.problems.mpc.results import timing
from liftoff.problems.tasks.config import MPC_SCHEMES, parse_config
from liftoff.problems.tasks.polishing import PolishingConfig, build_ocp, make_task
from liftoff.solvers import ipm
from liftoff.solvers.ipm import Options, solve
from liftoff.solvers.riccati import RiccatiError


@pytest.fixture(scope="module")
def task():
    return make_task(parse_config({"task": "polishing", "mpc": {"horizon": 10}}, schema=PolishingConfig))


def test_a_warm_start_matches_stages_by_start_time(task):
    """Moving the horizon 30 ms later: stage k takes stage k + 3's variables and knot k + 3's
    state; the new tail repeats the last stage; the last knot is the old last knot."""
    form = Formulation(build_ocp(task), "lifted", "numpy")
    later = form.for_problem(build_ocp(task, t0=0.03))
    K, nv = 10, 6
    knots = np.arange(K + 1, dtype=float)[:, None]
    stages = np.arange(K, dtype=float)[:, None]
    sizes = [x.shape[1] for x in form.initial_iterate(1e-3).groups[0].__dict__.values()]  # u, w, beta, s, z
    it = Iterate(
        knots * np.ones(nv),
        knots * np.ones(nv),
        knots * np.ones(18),
        (GroupVariables(*(stages * np.ones(n) for n in sizes)),),
        knots * np.ones(6),
    )
    moved = warm_start(form, 0.0, it, later, 0.03)
    np.testing.assert_array_equal(moved.q[:, 0], [3, 4, 5, 6, 7, 8, 9, 9, 9, 9, 10])
    np.testing.assert_array_equal(moved.tau[:, 0], moved.q[:, 0])
    gv = moved.groups[0]
    for x in (gv.u, gv.w, gv.beta, gv.s, gv.z):
        np.testing.assert_array_equal(x[:, 0], [3, 4, 5, 6, 7, 8, 9, 9, 9, 9])
    same = warm_start(form, 0.0, it, form, 0.0)
    np.testing.assert_array_equal(same.q, it.q)


def _random_iterate(form, rng) -> Iterate:
    start = form.initial_iterate(1e-3)
    return Iterate(
        *(rng.standard_normal(x.shape) for x in (start.q, start.v, start.lam)),
        tuple(GroupVariables(*(rng.standard_normal(x.shape) for x in vars(gv).values())) for gv in start.groups),
        rng.standard_normal(start.tau.shape),
    )


@pytest.mark.parametrize("t_new", [0.004, 0.0], ids=["within the first stage", "at its start"])
def test_a_horizon_moved_within_its_first_stage_keeps_the_iterate(task, rng, t_new):
    """An MPC's updates between two knots: the same groups, the first stage shortened, the others
    at the same times. Every stage keeps its own variables (the matching is the identity), so the
    warm start is the iterate itself, not a copy."""
    ocp = build_ocp(task)
    form = Formulation(ocp, "lifted", "numpy")
    first = ocp.stages[0]
    later = form.for_problem(replace(ocp, stages=(replace(first, dt=first.dt - t_new), *ocp.stages[1:])))
    it = _random_iterate(form, rng)
    assert warm_start(form, 0.0, it, later, t_new) is it
    shapes = tuple(controller._shapes(gv) for gv in it.groups)
    picks, source, _ = controller._matching(form, ocp.times()[:-1], shapes, later, t_new + later.ocp.times(), {})
    np.testing.assert_array_equal(source, np.arange(ocp.K + 1))
    assert [(sources, rows.tolist()) for sources, rows in picks] == [((0,), list(range(ocp.K)))]
    stretched = form.for_problem(replace(ocp, stages=(replace(first, dt=first.dt + 0.004), *ocp.stages[1:])))
    assert warm_start(form, 0.0, it, stretched, t_new - 0.004) is not it  # its other stages start later


@pytest.mark.parametrize("t_new", [0.03, 0.015], ids=["stage starts", "within stages"])
def test_a_kept_matching_moves_every_iterate_as_a_fresh_matching_does(task, rng, t_new):
    """An MPC's warm starts keep their matchings by the horizons' structure: the second iterate
    of the same structure takes its own values, as without the cache."""
    form = Formulation(build_ocp(task), "lifted", "numpy")
    later = form.for_problem(build_ocp(task, t0=t_new))
    cache = {}
    for _ in range(2):
        it = _random_iterate(form, rng)
        kept, fresh = warm_start(form, 0.0, it, later, t_new, cache), warm_start(form, 0.0, it, later, t_new)
        for a, b in ((kept.q, fresh.q), (kept.v, fresh.v), (kept.lam, fresh.lam), (kept.tau, fresh.tau)):
            np.testing.assert_array_equal(a, b)
        for a, b in zip(kept.groups, fresh.groups):
            for x, y in zip(vars(a).values(), vars(b).values()):
                np.testing.assert_array_equal(x, y)
    assert sum(1 for key in cache if key[0] != "shapes") == 1  # one structure met, matched once


def test_the_policy_is_the_plan_plus_the_gains_on_the_state_error(task):
    model = task.model
    rng = np.random.default_rng(0)
    q_plan = np.stack([task.q0, task.q0 + 0.1])
    v_plan = np.stack([np.zeros(6), np.ones(6)])
    tau_plan = np.stack([np.zeros(6), np.full(6, 2.0)])
    u, K = rng.normal(size=6), rng.normal(size=(6, 18))
    policy = Policy(model, 1.0, 0.01, q_plan, v_plan, tau_plan, u, K)
    np.testing.assert_allclose(policy(1.0, q_plan[0], v_plan[0], tau_plan[0]), u, atol=1e-12)
    on_plan = policy(1.005, task.q0 + 0.05, np.full(6, 0.5), np.ones(6))  # halfway between the knots
    np.testing.assert_allclose(on_plan, u, atol=1e-12)
    dq, dv, dtau = (rng.normal(size=6) * 1e-3 for _ in range(3))
    expected = u + K @ np.concatenate((dq, dv, dtau))
    np.testing.assert_allclose(policy(1.0, task.q0 + dq, dv, dtau), expected, atol=1e-12)
    np.testing.assert_allclose(policy(1.5, q_plan[1], v_plan[1], tau_plan[1]), u, atol=1e-12)  # held after


@pytest.mark.parametrize("robot", ["polishing", "anymal"])
def test_the_compiled_policy_is_the_reference_policy(task, robot):
    """On the manifold of a free-flyer robot and with a torque state: before, within and after
    the first stage, at states off the plan."""
    rng = np.random.default_rng(3)
    model, ntau = (task.model, task.model.nv) if robot == "polishing" else (dynamics.load("anymal"), 0)
    nu, nx = model.nv - (6 if model.has_free_flyer else 0), 2 * model.nv + ntau
    q0 = dynamics.random_configuration(model, rng)
    q_plan = np.stack([q0, dynamics.integrate(model, q0, 0.1 * rng.normal(size=model.nv))])
    v_plan, tau_plan, u, K = (rng.normal(size=n) for n in ((2, model.nv), (2, ntau), nu, (nu, nx)))
    reference = Policy(model, 1.0, 0.01, q_plan, v_plan, tau_plan, u, K)
    compiled = PolicyKernel(model, nu, ntau, quiet=True).bind(reference)
    for t in (0.99, 1.0, 1.004, 1.01, 1.2):
        q = dynamics.integrate(model, q0, 0.2 * rng.normal(size=model.nv))
        v, tau = rng.normal(size=model.nv), rng.normal(size=ntau) if ntau else None
        u = compiled(t, q, v, tau)
        np.testing.assert_allclose(u, reference(t, q, v, tau), rtol=0, atol=1e-11)
        assert compiled(t, q, v, tau) is not u  # each control its own array
    with pytest.raises(ValueError, match="not the kernel's"):
        PolicyKernel(model, nu, ntau, quiet=True).bind(replace(reference, K=reference.K[:, 1:]))


@pytest.mark.parametrize("backend", ["numpy", "compiled"])
def test_a_formulation_moved_to_another_problem_solves_it_as_a_fresh_one(task, backend):
    first = Formulation(build_ocp(task), "lifted", backend, quiet=True)
    later = build_ocp(task, t0=0.7, q0=task.q0 + 0.01, v0=np.full(6, 0.1))
    other = replace(later, stages=later.stages[:7])  # other data, fewer stages
    moved, fresh = first.for_problem(other), Formulation(other, "lifted", backend, quiet=True)
    a, b = (solve(f, Options(barrier=1e-3)) for f in (moved, fresh))
    assert a.converged and a.iterations == b.iterations
    np.testing.assert_allclose(a.iterate.q, b.iterate.q, atol=1e-12)
    assert a.cost == pytest.approx(b.cost, rel=1e-12)
    assert first.ocp is not other  # the first formulation is left as it was


def test_a_compiled_formulation_moved_to_other_problems_gives_its_kernels_a_fresh_ones_inputs(task):
    first = Formulation(build_ocp(task), "lifted", "compiled", quiet=True)
    later = build_ocp(task, t0=0.7, q0=task.q0 + 0.01, v0=np.full(6, 0.1))
    weighed = tuple(  # other weights at each stage
        replace(s, costs=tuple(replace(c, weights=(2.0 + k) * np.asarray(c.weights)) for c in s.costs))
        for k, s in enumerate(later.stages)
    )
    moved = first.for_problem(replace(later, stages=later.stages[:7]))  # other groups
    moved = moved.for_problem(replace(later, stages=weighed))  # the groups of the first problem's keys again
    fresh = Formulation(moved.ocp, "lifted", "compiled", quiet=True)
    assert moved.stages.maps.keys() == fresh.stages.maps.keys()
    for k, gm in moved.stages.maps.items():
        np.testing.assert_array_equal(gm.static, fresh.stages.maps[k].static)
        np.testing.assert_array_equal(gm.forward, fresh.stages.maps[k].forward)
        np.testing.assert_array_equal(gm.f_cols, fresh.stages.maps[k].f_cols)
    np.testing.assert_array_equal(moved.stages._terminal_static, fresh.stages._terminal_static)
    assert not np.array_equal(moved.stages.maps[0].static, first.stages.maps[0].static)  # the new data, not stale


def test_overlapping_horizons_make_each_stage_s_kernel_inputs_once(task, monkeypatch):
    """The polishing task's horizons share all but their last stages: a shared stage keeps the
    constant inputs made for the first horizon, and the moved formulation's inputs (with another
    disturbance) are a fresh formulation's. Its checks against the model are not run again."""
    first = Formulation(build_ocp(task), "lifted", "compiled", quiet=True)
    made = {id(s): s.__dict__["_inputs"] for s in first.ocp.stages}
    checked = []
    monkeypatch.setattr(dynamics.contacts, "check", lambda model, contacts: checked.append(contacts))
    build_ocp(task, t0=0.0)
    assert not checked  # the same stages: checked when first met
    later = build_ocp(task, t0=0.02, disturbance=np.arange(6.0))
    assert checked  # new stages
    monkeypatch.undo()
    moved = first.for_problem(later)
    shared = [s for s in later.stages if id(s) in made]
    assert len(shared) == 8 and all(s.__dict__["_inputs"] is made[id(s)] for s in shared)
    fresh = Formulation(later, "lifted", "compiled", quiet=True)
    np.testing.assert_array_equal(moved.stages.maps[0].static, fresh.stages.maps[0].static)
    assert not np.array_equal(moved.stages.maps[0].static, first.stages.maps[0].static)


def test_new_stages_take_what_they_share_with_a_kept_stage_from_its_inputs(task):
    """A horizon's new stages start from the row of a stage their group keeps (else of the last
    stage of their group's kind made) and write what they do not share with it: other
    contacts' targets, another sliding friction, other cost terms, another time step; their
    inputs are a fresh formulation's."""
    d = np.array([1.0, 0.0, 0.0])
    ocp = build_ocp(task)
    sliding = tuple(replace(s, sliding=(SlidingFriction(0, 0.3 + 0.01 * k, d),)) for k, s in enumerate(ocp.stages))
    first = Formulation(replace(ocp, stages=sliding), "lifted", "compiled", quiet=True)
    last = sliding[-1]
    lower = tuple(c.with_placement(c.placement - [0.0, 0.0, 0.01]) for c in last.contacts)
    other = (replace(last.costs[0], weights=2.0 * last.costs[0].weights),) + last.costs[1:]  # a new state term
    new = (
        replace(last, dt=0.5 * last.dt),  # all else shared
        replace(last, contacts=lower),
        replace(last, sliding=(SlidingFriction(0, 0.5, d[[1, 0, 2]]),)),
        replace(last, costs=other),
        replace(last, contacts=lower, costs=other, sliding=(SlidingFriction(0, 0.5, -d),)),
    )
    horizons = [sliding[1:] + (stage,) for stage in new]
    horizons.append(tuple(replace(s, contacts=lower) for s in sliding))  # no stage kept: from the last one made
    for stages in horizons:
        later = replace(first.ocp, stages=stages)
        moved = first.for_problem(later)
        assert stages[-1].__dict__["_inputs"][0] is moved.stages._plans[stages[-1].__dict__["_key"]]
        copies = replace(later, stages=tuple(map(copy.copy, later.stages)))  # the kept rows left to the stages
        fresh = Formulation(copies, "lifted", "compiled", quiet=True)
        assert moved.stages.maps.keys() == fresh.stages.maps.keys() == {0}
        np.testing.assert_array_equal(moved.stages.maps[0].static, fresh.stages.maps[0].static)
        assert not np.array_equal(moved.stages.maps[0].static[-1], moved.stages.maps[0].static[-2])


def test_a_stage_a_formulation_has_read_pickles_and_copies_without_what_it_keeps(task):
    """What a stage keeps (its key, its check, its kernel inputs, bound to compiled calls) stays
    with it: a pickle or a copy holds its fields alone, and groups and evaluates the same."""
    first = Formulation(build_ocp(task, t0=0.3), "lifted", "compiled", quiet=True)
    stage = first.ocp.stages[0]
    assert {"_key", "_checked", "_inputs"} <= set(vars(stage))
    for twin in (pickle.loads(pickle.dumps(stage)), copy.deepcopy(stage), copy.copy(stage)):
        assert set(vars(twin)) == {f.name for f in dataclasses.fields(stage)}
        moved = first.for_problem(replace(first.ocp, stages=(twin,) + first.ocp.stages[1:]))
        np.testing.assert_array_equal(moved.stages.maps[0].static, first.stages.maps[0].static)


@pytest.mark.parametrize("bad", [-1.0, np.nan, np.inf])
def test_a_compiled_formulation_refuses_weights_that_are_negative_or_not_finite(task, bad):
    """On a term of one new stage, and on a weight array every stage shares (the value a
    builder hands them all, written once for the group)."""
    first = Formulation(build_ocp(task), "lifted", "compiled", quiet=True)
    ocp = build_ocp(task, t0=0.5)
    last = ocp.stages[-1]
    weights = np.array(last.costs[0].weights, dtype=float)
    weights[2] = bad
    one = ocp.stages[:-1] + (replace(last, costs=(replace(last.costs[0], weights=weights),) + last.costs[1:]),)
    every = tuple(replace(s, costs=(replace(s.costs[0], weights=weights),) + s.costs[1:]) for s in ocp.stages)
    for stages in (one, every):
        with pytest.raises(ValueError, match="cost weights must be finite and >= 0"):
            first.for_problem(replace(ocp, stages=stages))
        with pytest.raises(ValueError, match="cost weights must be finite and >= 0"):
            Formulation(replace(ocp, stages=stages), "lifted", "compiled", quiet=True)


def test_a_compiled_formulation_refuses_terms_its_kernels_lack(task):
    first = Formulation(build_ocp(task), "lifted", "compiled", quiet=True)
    ocp = build_ocp(task)
    extra = VariableCost("a", np.zeros(6), 1.0, "acceleration")
    stages = tuple(replace(s, costs=s.costs + (extra,)) for s in ocp.stages)
    with pytest.raises(ValueError, match="not slots"):
        first.for_problem(replace(ocp, stages=stages))
    with pytest.raises(ValueError, match="torque state"):
        first.for_problem(replace(ocp, torque_filter=None, tau0=None))


def test_an_update_needs_a_start(task):
    mpc = MPC(lambda t, q, v, tau: build_ocp(task, t, q, v, tau))
    with pytest.raises(RuntimeError, match="before MPC.start"):
        mpc.update(0.0, task.q0, task.v0)
    with pytest.raises(ValueError, match="iterations per update"):
        MPC(lambda t, q, v: None, iterations=0)


def test_an_rti_update_in_one_compiled_call_is_the_update_in_separate_calls(task, monkeypatch):
    """An ``rti`` update on compiled kernels runs its linearization, the policy's Riccati
    recursion and the step in one call (:func:`solvers.ipm.newton_step`): the same ticks,
    policies and warm starts as those calls one after the other, to the last bit, without a
    recursion of its own. Where the recursion in that call finds the LQR not convex, the update
    takes the policy's recursion from the linearization made (undamped here: the LQR is convex)."""
    recursions, riccati = [], controller.riccati

    def counted(*args):
        recursions.append(args)
        return riccati(*args)

    monkeypatch.setattr(controller, "riccati", counted)
    rng = np.random.default_rng(11)
    states = [
        (task.q0 + 0.01 * rng.standard_normal(task.q0.shape), 0.1 * rng.standard_normal(task.v0.shape))
        for _ in range(3)
    ]

    def updates() -> tuple:
        """The numbers of three updates, and the policy recursions they ran outside the one call."""
        recursions.clear()
        mpc = MPC(lambda t, q, v, tau: build_ocp(task, t, q, v, tau), first_iterations=3, scheme="rti")
        mpc.start(0.0, task.q0, task.v0, task.u_pressing)
        out = []
        for k, (q, v) in enumerate(states, start=1):
            policy = mpc.update(0.01 * k, q, v, task.u_pressing).policy
            tick, it = mpc.ticks[-1], mpc.result.iterate
            out += [np.array([tick.kkt_error, tick.iterations, tick.regularization]), policy.u, policy.K, it.q, it.lam]
            out += [x for gv in it.groups for x in dataclasses.astuple(gv)]
        return out, len(recursions) - 1  # the start's recursion aside

    fused, fused_recursions = updates()
    signature = ctypes.CFUNCTYPE(ctypes.c_int, *(ctypes.c_int,) * 3, *(ctypes.c_void_p,) * 19)
    not_convex = signature(lambda *args: 1)  # liftoff_riccati's status at stage 0
    monkeypatch.setattr(ipm, "compiled_address", lambda: ctypes.cast(not_convex, ctypes.c_void_p).value)
    refused, refused_recursions = updates()
    monkeypatch.setattr(controller, "newton_step", lambda *args: None)
    separate, separate_recursions = updates()
    assert (fused_recursions, refused_recursions, separate_recursions) == (0, 3, 3)
    for a, b, c in zip(fused, refused, separate, strict=True):
        np.testing.assert_array_equal(a, c)
        np.testing.assert_array_equal(b, c)


def test_an_update_whose_policy_gains_do_not_exist_is_an_mpc_failure(task, monkeypatch):
    """The policy's Riccati recursion at the update's last iterate failing (an indefinite
    ``Quu + B^T P B``) at every damping ends the update with :class:`MPCError`, the closed
    loop's ``diverged``."""
    mpc = MPC(lambda t, q, v, tau: build_ocp(task, t, q, v, tau), first_iterations=2)
    mpc.start(0.0, task.q0, task.v0, task.u_pressing)

    def indefinite(*args):
        raise RiccatiError("stage 0: Quu + B^T P B is not positive definite")

    monkeypatch.setattr(controller, "riccati", indefinite)
    with pytest.raises(MPCError, match=r"t = 0\.010 s failed: stage 0: Quu"):
        mpc.update(0.01, task.q0, task.v0, task.u_pressing)


def test_a_policy_whose_lqr_is_not_convex_is_damped_by_the_smallest_mu_that_convexifies_it(task, monkeypatch):
    """A linearization whose first stage has an indefinite ``Quu``: the undamped recursion fails,
    :func:`controller.policy_recursion` gives the recursion of ``Quu + mu I`` for the smallest
    ``mu`` of :data:`controller.REGULARIZATIONS` that succeeds; a convex one is undamped. An
    update whose first recursion fails says its ``mu``."""
    mpc = MPC(lambda t, q, v, tau: build_ocp(task, t, q, v, tau), first_iterations=2)
    mpc.start(0.0, task.q0, task.v0, task.u_pressing)
    lin, backend = mpc.result.linearization, mpc.formulation.backend
    sol, mu = controller.policy_recursion(lin, backend)
    assert mu == 0.0
    np.testing.assert_array_equal(sol.gains, controller.riccati(lin.lqr, lin.terminal, lin.dx0, backend).gains)

    Quu = lin.lqr.Quu.copy()
    Quu[0] -= 50.0 * np.eye(len(Quu[0]))
    bent = replace(lin, lqr=replace(lin.lqr, Quu=Quu))
    with pytest.raises(RiccatiError):
        controller.riccati(bent.lqr, bent.terminal, bent.dx0, backend)
    sol, mu = controller.policy_recursion(bent, backend)
    k = controller.REGULARIZATIONS.index(mu)
    assert k > 0
    damped = controller.riccati(
        replace(bent.lqr, Quu=Quu + mu * np.eye(Quu.shape[1])), bent.terminal, bent.dx0, backend
    )
    np.testing.assert_array_equal(sol.gains, damped.gains)
    with pytest.raises(RiccatiError):  # the smallest that succeeds
        lower = replace(bent.lqr, Quu=Quu + controller.REGULARIZATIONS[k - 1] * np.eye(Quu.shape[1]))
        controller.riccati(lower, bent.terminal, bent.dx0, backend)

    calls, riccati = [], controller.riccati

    def first_fails(*args):
        calls.append(args)
        if len(calls) == 1:
            raise RiccatiError("stage 0: Quu + B^T P B is not positive definite")
        return riccati(*args)

    monkeypatch.setattr(controller, "riccati", first_fails)
    mpc.update(0.01, task.q0, task.v0, task.u_pressing)
    assert mpc.ticks[-1].regularization == controller.REGULARIZATIONS[0] and mpc.ticks[0].regularization == 0.0


def test_a_push_is_the_torque_of_its_force_at_the_frame(task):
    push = Push("arm_right_7_link", (1.0, -2.0, 3.0), 0.5, 0.1)
    plant = IdealPlant(task.model, {}, disturbances=Disturbances(pushes=(push,), torque_bias=0.5))
    rng = np.random.default_rng(1)
    q, v, tau = task.q0 + 0.1, rng.normal(size=6), np.arange(6.0)
    passive = dynamics.passive_torque(task.model, v, plant.friction_width)
    assert np.linalg.norm(passive) > 0.1  # Talos' joints have damping and friction: the passive torque shows
    np.testing.assert_allclose(plant.torque(0.4, q, v, tau), tau + 0.5 + passive, atol=1e-12)  # before the push
    np.testing.assert_allclose(plant.torque(0.55, q, v, tau, disturbed=False), tau + passive, atol=1e-12)
    # virtual work: the torque's power equals the force's power at the frame, by finite differences
    dq = rng.normal(size=6) * 1e-6
    _, p0 = dynamics.frame_placement(task.model, q, "arm_right_7_link")
    _, p1 = dynamics.frame_placement(task.model, q + dq, "arm_right_7_link")
    work = (plant.torque(0.55, q, v, tau) - plant.torque(0.4, q, v, tau)) @ dq
    assert work == pytest.approx(np.array(push.force) @ (p1 - p0), rel=1e-5)


def test_the_plant_holds_its_contact_and_steps_semi_implicitly(task):
    contact = task.contact()
    plant = IdealPlant(task.model, {"tool": contact}, dt=1e-3)
    rng = np.random.default_rng(2)
    plant.reset(task.q0, np.zeros(6))
    for k in range(300):
        m = plant.step(k * 1e-3, task.u_gravity + 3 * rng.normal(size=6))
    _, p = dynamics.frame_placement(task.model, m.q, "tool")
    offset = p - task.surface_point()
    assert abs(offset @ task.normal) < 1e-5  # on the surface after 0.3 s of random torques
    assert np.linalg.norm(offset @ task.plane) > 1e-3  # while sliding along it
    # one step: v+ = v + dt a(q, v, tau + the passive torque at v), q+ = q (+) dt v+
    v = np.ones(6)
    plant.reset(task.q0, v)
    m = plant.step(0.0, task.u_gravity)
    torque = task.u_gravity + dynamics.passive_torque(task.model, v, plant.friction_width)
    a, f = dynamics.constrained_dynamics(task.model, task.q0, v, torque, (contact,), mu=1e-8)[:2]
    np.testing.assert_allclose(m.v, v + 1e-3 * a, atol=1e-12)
    np.testing.assert_allclose(m.q, dynamics.integrate(task.model, task.q0, 1e-3 * m.v), atol=1e-12)
    reading = m.contacts["tool"]  # the force of the step, along the normal in the world axes
    assert reading.active and m.tau is None
    np.testing.assert_allclose(reading.force, f[0] * task.normal, atol=1e-9)
    np.testing.assert_allclose(reading.position, dynamics.frame_placement(task.model, m.q, "tool")[1], atol=1e-12)


def test_the_plant_actuators_filter_the_command_exactly(task):
    """``tau_dot = 2 pi f_c (w - tau)`` integrated by RK4 with a fine step over one plant step
    equals the plant's zero-order hold, and the joints receive the torques before the step."""
    plant = IdealPlant(task.model, {"tool": task.contact()}, dt=1e-3, torque_filter=5.0)
    tau, w = np.linspace(-3, 3, 6), np.linspace(4, -1, 6)
    np.testing.assert_array_equal(plant.reset(task.q0, np.zeros(6), tau).tau, tau)
    m = plant.step(0.0, w)
    x, h, omega = tau.copy(), 1e-3 / 100, 2 * np.pi * 5.0
    for _ in range(100):
        k1 = omega * (w - x)
        k2 = omega * (w - x - h / 2 * k1)
        k3 = omega * (w - x - h / 2 * k2)
        k4 = omega * (w - x - h * k3)
        x = x + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    np.testing.assert_allclose(m.tau, x, rtol=1e-12)
    a = dynamics.constrained_dynamics(task.model, task.q0, np.zeros(6), tau, (task.contact(),), mu=1e-8)[0]
    np.testing.assert_allclose(m.v, 1e-3 * a, atol=1e-12)


def test_a_scaled_model_is_heavier_where_asked_only(task):
    heavy = scaled_model(task.model, ["arm_right_3_joint", "arm_right_4_joint"], 1.1)
    i, j = task.model.joint_id("arm_right_3_joint"), task.model.joint_id("arm_right_4_joint")
    ratio = heavy.body_mass / task.model.body_mass
    np.testing.assert_allclose(ratio[[i, j]], 1.1)
    np.testing.assert_allclose(np.delete(ratio, [i, j]), 1.0)
    np.testing.assert_allclose(heavy.body_inertia[j], 1.1 * task.model.body_inertia[j])
    with pytest.raises(ValueError, match="mass scale"):
        scaled_model(task.model, ["arm_right_3_joint"], -1.0)


def test_without_contacts_the_plant_falls_freely(task):
    plant = IdealPlant(task.model, {}, dt=1e-3)
    assert plant.reset(task.q0, np.zeros(6)).contacts == {}
    m = plant.step(0.0, np.zeros(6))
    np.testing.assert_allclose(m.v, 1e-3 * dynamics.aba(task.model, task.q0, np.zeros(6), np.zeros(6)), atol=1e-12)
    assert m.contacts == {} and plant.contact_names == ()


def test_updates_give_compiled_policies_and_account_for_their_time(task):
    mpc = MPC(lambda t, q, v, tau: build_ocp(task, t, q, v, tau), first_iterations=5)
    policies = [mpc.start(0.0, task.q0, task.v0, task.u_pressing)]
    for k in (1, 2):
        policies.append(mpc.update(0.01 * k, task.q0, np.full(6, 0.01 * k), task.u_pressing))
    q, v = task.q0 + 0.01, np.full(6, 0.05)
    for k, policy in enumerate(policies):
        assert isinstance(policy, CompiledPolicy)
        np.testing.assert_allclose(
            policy(0.01 * k + 0.004, q, v, task.u_pressing),
            policy.policy(0.01 * k + 0.004, q, v, task.u_pressing),
            atol=1e-10,
        )
    first, *updates = mpc.ticks
    assert tuple(first.parts) == ("build", "solve", "policy") and all(tuple(u.parts) == PARTS for u in updates)
    for tick in mpc.ticks:
        assert sum(tick.parts.values()) == pytest.approx(tick.seconds, abs=1e-12) and min(tick.parts.values()) >= 0


def test_rti_with_one_more_iteration_gives_the_newton_schemes_policy(task):
    """The real-time iteration's policy comes from its last linearization: with ``n + 1``
    iterations it is the Newton scheme's with ``n`` (the same linearization points)."""
    build = lambda t, q, v, tau: build_ocp(task, t, q, v, tau)  # noqa: E731
    newton = MPC(build, backend="numpy", first_iterations=2).start(0.0, task.q0, task.v0, task.u_pressing)
    rti = MPC(build, backend="numpy", first_iterations=3, scheme="rti").start(0.0, task.q0, task.v0, task.u_pressing)
    for name in ("q_plan", "v_plan", "tau_plan", "u", "K"):
        np.testing.assert_allclose(getattr(rti, name), getattr(newton, name), rtol=1e-12, atol=1e-12)


def test_an_rti_update_linearizes_once_and_its_step_warm_starts_the_next(task, monkeypatch):
    """One linearization and one Riccati recursion per update; the policy at the measured state
    is the first control of the Newton step from the warm start; the next update starts from
    that step."""
    mpc = MPC(lambda t, q, v, tau: build_ocp(task, t, q, v, tau), backend="numpy", first_iterations=3, scheme="rti")
    mpc.start(0.0, task.q0, task.v0, task.u_pressing)
    calls = {"linearize": [], "riccati": 0}
    linearize, riccati = Formulation.linearize, controller.riccati

    def counted_linearize(self, it, eps):
        calls["linearize"].append(it)
        return linearize(self, it, eps)

    def counted_riccati(*args):
        calls["riccati"] += 1
        return riccati(*args)

    monkeypatch.setattr(Formulation, "linearize", counted_linearize)
    monkeypatch.setattr(controller, "riccati", counted_riccati)
    q, v = task.q0 + 0.002, np.full(6, 0.01)
    policy = mpc.update(0.01, q, v, task.u_pressing)
    assert len(calls["linearize"]) == 1 and calls["riccati"] == 1
    start, f = calls["linearize"][0], mpc.formulation
    lin, _ = linearize(f, start, mpc.options.barrier)
    sol = riccati(lin.lqr, lin.terminal, lin.dx0, "numpy")
    np.testing.assert_allclose(policy(0.01, q, v, task.u_pressing), start.groups[0].u[0] + sol.du[0], atol=1e-9)
    d = f.direction(start, lin, sol)
    stepped = f.step(start, d, *f.max_steps(start, d))
    np.testing.assert_allclose(mpc.result.iterate.q, stepped.q, atol=1e-12)
    np.testing.assert_allclose(mpc.result.iterate.groups[0].u, stepped.groups[0].u, atol=1e-12)
    assert mpc.ticks[-1].iterations == 1
    mpc.update(0.02, q, v, task.u_pressing)
    assert calls["linearize"][1].q[0] == pytest.approx(stepped.q[1], abs=1e-12)  # the step, moved one stage on
    with pytest.raises(ValueError, match="unknown MPC scheme 'sqp'"):
        MPC(lambda t, q, v, tau: None, scheme="sqp")
    assert controller.SCHEMES == MPC_SCHEMES  # what the configurations accept


def test_a_policy_that_cannot_be_compiled_runs_in_numpy(task, monkeypatch, capsys):
    def no_compiler(*args, **kwargs):
        raise CompileError("no C compiler")

    monkeypatch.setattr("liftoff.problems.mpc.controller.PolicyKernel", no_compiler)
    mpc = MPC(lambda t, q, v, tau: build_ocp(task, t, q, v, tau), first_iterations=2)
    policy = mpc.start(0.0, task.q0, task.v0, task.u_pressing)
    assert type(policy) is Policy and np.all(np.isfinite(policy(0.0, task.q0, task.v0, task.u_pressing)))
    assert "no C compiler; the policy runs in numpy" in capsys.readouterr().err


def test_the_mpc_period_must_be_a_multiple_of_the_plant_step(task):
    mpc = MPC(lambda t, q, v, tau: build_ocp(task, t, q, v, tau))
    with pytest.raises(ValueError, match="not a multiple"):
        closed_loop(mpc, IdealPlant(task.model, {}, dt=0.003), task.model, task.q0, task.v0, 0.1, 0.01)
    assert mpc.ticks == []  # refused before the first solve


class StubMPC:
    """An MPC without a solve: its policy commands the time of its update on every joint; an
    update at ``fail_at`` or later fails as a singular problem would."""

    def __init__(self, fail_at=np.inf):
        self.fail_at, self.ticks = fail_at, []

    def start(self, t, q, v, tau=None):
        return self.update(t, q, v, tau)

    def update(self, t, q, v, tau=None):
        if t >= self.fail_at - 1e-12:
            raise MPCError(f"the MPC update at t = {t:.3f} s failed: singular")
        self.ticks.append(Tick(t, 0.0, 1, 0.0, "converged"))
        return lambda t_now, q, v, tau=None: np.full(6, t)


class StubPlant:
    """A plant of Talos' upper body whose state moves by ``dt`` times the command each step,
    with a pad whose force is the step's count; from step ``bad`` on, its state is
    ``blow_up(q)`` (computed with numpy warnings raised, as a blown-up simulation would)."""

    dt, engine, description, contact_names = 1e-3, "stub", "a stub plant", ("pad",)

    def __init__(self, bad=None, blow_up=None):
        self.bad, self.blow_up = bad, blow_up

    def reset(self, q, v, tau=None):
        self.k, self.q, self.v = 0, np.array(q, dtype=float), np.array(v, dtype=float)
        return self._measure()

    def step(self, t, command):
        self.k += 1
        self.q, self.v = self.q + self.dt * np.asarray(command), self.v + 1.0
        if self.bad is not None and self.k >= self.bad:
            self.q = self.blow_up(self.q)
        return self._measure()

    def _measure(self):
        reading = ContactReading(True, np.array([0.0, 0.0, float(self.k)]), np.zeros(3))
        return Measurement(self.q.copy(), self.v.copy(), None, {"pad": reading})


@pytest.mark.parametrize(
    "blow_up, message",
    [
        (lambda q: q / np.zeros_like(q), "the simulated state is not finite"),  # inf and nan, with warnings
        (lambda q: q + np.array([0, 0, 2.0, 0, 0, 0]), "configuration coordinate 2 is"),  # 2 rad beyond a limit
    ],
    ids=["not finite", "beyond a limit"],
)
def test_a_plant_that_blows_up_ends_the_run_as_diverged_with_its_log(task, capsys, blow_up, message):
    q0 = task.q0.copy()
    q0[2] = task.model.upper_position_limit[2] - 0.1  # near its limit: 2 rad more is 1.9 beyond it
    plant = StubPlant(bad=25, blow_up=blow_up)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning would raise here
        log = closed_loop(StubMPC(), plant, task.model, q0, task.v0, 0.05, 0.01)
    assert (log.status, log.end_time) == ("diverged", pytest.approx(0.025)) and message in log.message
    assert capsys.readouterr() == ("", "")  # nothing printed
    a = log.arrays()
    assert len(a["t"]) == 25 and np.all(np.isfinite(a["q"]))  # the steps up to the bad one
    np.testing.assert_allclose(a["t"], 1e-3 * np.arange(25))
    assert [tick.t for tick in log.ticks] == pytest.approx([0.0, 0.01, 0.02])
    assert a["contact_force"].shape == (25, 1, 3) and a["contact_force"][-1, 0, 2] == 25.0


def test_a_plant_whose_dynamics_break_down_ends_the_run_with_the_steps_before_logged(task):
    plant = StubPlant(bad=25, blow_up=lambda q: np.linalg.solve(np.zeros((2, 2)), q[:2]))  # singular
    log = closed_loop(StubMPC(), plant, task.model, task.q0, task.v0, 0.05, 0.01)
    assert (log.status, log.end_time) == ("diverged", pytest.approx(0.024)) and len(log.t) == 24
    assert log.message.startswith("the plant failed at t = 0.024 s: Singular matrix")
    assert [tick.t for tick in log.ticks] == pytest.approx([0.0, 0.01, 0.02])  # no update after it


def test_a_failed_update_or_a_stop_ends_the_run_with_its_status(task):
    log = closed_loop(StubMPC(fail_at=0.02), StubPlant(), task.model, task.q0, task.v0, 0.05, 0.01)
    assert (log.status, log.end_time, len(log.t)) == ("diverged", pytest.approx(0.02), 20)
    assert "failed: singular" in log.message
    stop = lambda m: "fell" if m.v[0] >= 15 else None  # noqa: E731 (after the 15th step)
    log = closed_loop(StubMPC(), StubPlant(), task.model, task.q0, task.v0, 0.05, 0.01, stop=stop)
    assert (log.status, log.end_time, len(log.t)) == ("fell", pytest.approx(0.015), 15)
    log = closed_loop(StubMPC(), StubPlant(), task.model, task.q0, task.v0, 0.05, 0.01)
    assert (log.status, log.end_time, len(log.t), log.message) == ("completed", pytest.approx(0.05), 50, "")


def test_steps_are_rows_of_consecutive_steps_joined_cut_and_read_back():
    """``Steps``: a step made from two measurements holds them as its knots; blocks joined keep
    the first block's start and every block's steps; a head keeps its rows, and the divergence of
    the last step only if it keeps that step; a step's measurement after it reads its readings by
    name, in either of the plant's forms."""
    pad = ContactReading(True, np.array([0.0, 0.0, 7.0]), np.array([0.1, 0.2, 0.3]), 0.01, np.array([1.0, 0.0, 0.0]))
    states = [Measurement(np.full(2, float(k)), np.full(2, 10.0 + k), None, {"pad": pad}) for k in range(4)]
    pairs = enumerate(zip(states, states[1:]))
    blocks = [Steps.one(a, 0.1 * k, [k, -k], b, (1e-6, 2e-6), ("pad",)) for k, (a, b) in pairs]
    steps = Steps.joined(blocks)
    assert steps.size == 3 and not steps.checked and steps.tau.shape == (4, 0)
    np.testing.assert_array_equal(steps.q[:, 0], [0, 1, 2, 3])  # the first block's start, then each step's end
    np.testing.assert_array_equal(steps.v[:, 0], [10, 11, 12, 13])
    np.testing.assert_array_equal(steps.u, [[0, 0], [1, -1], [2, -2]])
    np.testing.assert_array_equal(steps.t, [0.0, 0.1, 0.2])
    assert steps.seconds.shape == (3, 2) and steps.readings.shape == (3, 1, ROW)
    after = steps.after(1)
    assert after.tau is None and np.array_equal(after.q, states[2].q)
    reading = after.contacts["pad"]
    assert (reading.active, reading.depth) == (True, 0.01) and np.array_equal(reading.velocity, pad.velocity)
    diverged = steps._replace(checked=True, diverged=True)
    assert diverged.head(3).diverged and not diverged.head(2).diverged
    head = diverged.head(2)
    assert head.size == 2 and len(head.q) == 3 and np.array_equal(head.u, steps.u[:2])
    assert Steps.joined([steps]) is steps


def test_the_observe_hook_sees_every_step_a_period_at_a_time_and_progress_every_update(task):
    seen, calls, updates = [], [], []

    def observe(steps):
        calls.append(len(updates))  # the updates before this call
        seen.extend((steps.t[j], steps.q[j], steps.u[j], steps.after(j)) for j in range(steps.size))

    log = closed_loop(
        StubMPC(),
        StubPlant(),
        task.model,
        task.q0,
        task.v0,
        0.03,
        0.01,
        progress=updates.append,
        observe=observe,
    )
    a = log.arrays()
    assert len(seen) == len(a["t"]) == 30 and calls == [0, 1, 2]  # once per period, before its update
    np.testing.assert_allclose([t for t, *_ in seen], a["t"], atol=1e-15)
    for k, (t, before, command, after) in enumerate(seen):
        np.testing.assert_array_equal(before, a["q"][k])  # the state the policy read
        np.testing.assert_array_equal(command, a["u"][k])
        np.testing.assert_allclose(command, np.floor(t / 0.01 + 1e-9) * 0.01)  # the policy of the last update
        assert after.contacts["pad"].force[2] == k + 1
        if k + 1 < len(seen):
            np.testing.assert_array_equal(seen[k + 1][1], after.q)  # the next step starts from this one's state
    assert updates == pytest.approx([0.01, 0.02, 0.03])


def test_the_loops_time_counts_the_estimator_with_the_controller_and_everything_in_the_loop(task):
    """An estimator that takes 2 ms a step is the controller's time; the loop's wall time holds
    the plant's, the controller's and the rest."""
    observe = lambda steps: time.sleep(2e-3 * steps.size)  # noqa: E731
    log = closed_loop(StubMPC(), StubPlant(), task.model, task.q0, task.v0, 0.02, 0.01, observe=observe)
    assert log.control_seconds >= 20 * 2e-3
    assert log.loop_seconds >= log.control_seconds + log.plant_seconds
    assert timing(log, 0.02)["real_time_factor"] == pytest.approx(0.02 / log.loop_seconds)


def test_the_timing_of_several_runs_pools_their_updates_and_totals(task):
    logs = [closed_loop(StubMPC(), StubPlant(), task.model, task.q0, task.v0, d, 0.01) for d in (0.03, 0.05)]
    for log, seconds in zip(logs, ([1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0, 8.0])):
        log.ticks = [replace(tick, seconds=s * 1e-3) for tick, s in zip(log.ticks, seconds)]
    pooled = timing(logs, 0.08)
    assert pooled["updates"] == 3 + 5 and pooled["tick_ms_median"] == pytest.approx(5.5)  # of 2, 3, 5, 6, 7, 8
    assert pooled["tick_ms_max"] == pytest.approx(8.0)
    assert pooled["tick_p95_ratio"] == pytest.approx((2.95 / 2.5 + 7.85 / 6.5) / 2)  # each run's, not the pool's
    assert pooled["tick_ms_fastest_run"] == pytest.approx(2.5)  # the lower of the runs' medians, 2.5 and 6.5
    assert timing(logs[1], 0.05)["tick_ms_fastest_run"] == pytest.approx(6.5)  # one run: its median
    assert pooled["real_time_factor"] == pytest.approx(0.08 / (logs[0].loop_seconds + logs[1].loop_seconds))
    assert pooled["plant_ms_per_step"] == pytest.approx(1e3 * (logs[0].plant_seconds + logs[1].plant_seconds) / 80)
