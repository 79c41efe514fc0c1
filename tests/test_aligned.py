"""The legged MPC's updates in place between two knots (:mod:`problems.mpc.aligned`): a horizon
moved within its first stage, its numbers written into the compiled Newton step's arrays, held
bitwise to the updates that build the OCP, its formulation and its warm start; the updates
that change the horizon's structure or its knots' times going the general way in between."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from liftoff.ocp.formulation import Formulation
from liftoff.problems.mpc import aligned, controller
from liftoff.problems.mpc.aligned import within_first_stage
from liftoff.problems.mpc.controller import MPC
from liftoff.problems.mpc.in_place import HorizonInPlace, StepGather
from liftoff.problems.mpc.locomotion import GaitController
from liftoff.problems.mpc.row_gather import RowGather, inputs
from liftoff.problems.tasks.config import load_config
from liftoff.problems.tasks.gait_mpc import GaitMPCConfig, horizon_knots, horizon_numbers, horizon_ocp
from liftoff.solvers.ipm import Options

TROT = Path(__file__).resolve().parent.parent / "configs" / "anymal_trot_mpc.yaml"
PERIOD = 0.005  # the trot's MPC period: four updates per 20 ms knot


@pytest.fixture(scope="module")
def config():
    config = load_config(TROT, GaitMPCConfig)
    return replace(config, mpc=replace(config.mpc, horizon=10))


@pytest.fixture(scope="module")
def model(config):
    return GaitController(config).model


def _general(build):
    """``build`` without its ``numbers``: an MPC that builds every horizon's OCP."""
    return lambda t, q, v, tau: build(t, q, v, tau)


def _updates(config, model, general, scheme, iterations, updates=100, read=(5, 6, 50), options=Options()):
    """The numbers of a trot MPC (its builder's ``numbers`` hidden if ``general``) updated every
    period from states near the standing one, no foot ever reported on the ground (late feet
    hold the schedule, then stand where they were to land): each policy's plan, control and
    gains, each tick's numbers, and after the updates ``read`` (and the last) the formulation's
    OCP and the iterate reached."""
    controller = GaitController(config, model)
    build = _general(controller) if general else controller
    mpc = MPC(
        build, options=options, iterations=iterations, first_iterations=3, scheme=scheme, quiet=True,
        layout=controller.layout,
    )  # fmt: skip
    rng = np.random.default_rng(3)
    q0, v0 = controller.q0, np.zeros(model.nv)
    mpc.start(0.0, q0, v0)
    out = []
    for k in range(1, updates + 1):
        q, v = q0.copy(), 0.05 * rng.standard_normal(model.nv)
        q[:3] += 0.005 * rng.standard_normal(3)
        q[7:] += 0.01 * rng.standard_normal(model.nv - 6)
        policy = mpc.update(round(k * PERIOD, 9), q, v).policy
        tick = mpc.ticks[-1]
        out += [policy.q_plan, policy.v_plan, policy.tau_plan, policy.u, policy.K]
        out.append(np.array([tick.kkt_error, tick.iterations, tick.status == "max_iterations", tick.regularization]))
        if k in read or k == updates:
            it, ocp = mpc.result.iterate, mpc.formulation.ocp
            out += [it.q, it.v, it.tau, it.lam, *(x for gv in it.groups for x in vars(gv).values())]
            out += [ocp.q0, ocp.v0, ocp.times(), np.array([g.size for g in mpc.formulation.groups])]
    return out


def _counted(monkeypatch, method="renumber", owner=aligned.AlignedHorizon, record=None):
    """The calls of ``owner.method`` from now on, each one's outcome (or ``record(self, args,
    outcome)``): the aligned horizons' renumberings (``renumber``, or ``renumber_at``: those of a
    kept horizon) by default."""
    outcomes, call = [], getattr(owner, method)

    def counted(self, *args):
        out = call(self, *args)
        outcomes.append(out if record is None else record(self, args, out))
        return out

    monkeypatch.setattr(owner, method, counted)
    return outcomes


def _first_stage_retimed(horizon, args, renumbered) -> bool:
    """Whether ``horizon.renumber_at(*args)`` renumbered a kept horizon whose first stage now has
    another length than the one it was made with."""
    _, numbers = args
    return bool(renumbered) and abs(numbers.times[1] - horizon.formulation.ocp.times()[1]) > 1e-9


def test_a_horizons_numbers_make_the_inputs_and_times_of_its_ocp(config, model):
    """The numbers of a horizon (:func:`horizon_numbers`) give each group's constant inputs and
    the terminal cost's as the formulation of its OCP holds them, and the OCP's knot times, to
    the last bit, without the OCP's stages; at horizons with landings."""
    controller, v = GaitController(config, model), np.zeros(model.nv)
    f, landings = Formulation(controller.layout, quiet=True), 0
    for k in range(100):
        h = controller._horizon(round(k * PERIOD, 9), controller.q0, v)
        ocp = horizon_ocp(config, model, controller.q0, v, h, controller.parts)
        f = f.for_problem(ocp)
        times, groups = horizon_numbers(controller.parts, h, horizon_knots(controller.parts, h))
        np.testing.assert_array_equal(times, ocp.times())
        for group, numbers in zip(f.groups, groups, strict=True):
            static = f.stages.maps[int(group.index[0])].static
            np.testing.assert_array_equal(f.stages.static_inputs(group, numbers), static)
        np.testing.assert_array_equal(f.stages.terminal_constants(ocp.terminal_costs), f.stages.terminal_inputs[1])
        landings += any(stage.kind == "impulse" for stage in ocp.stages)
    assert landings >= 20


def test_a_structures_row_gather_makes_the_inputs_of_its_later_horizons(config, model):
    """The row gather of a horizon structure (:class:`RowGather`, made from its first horizon)
    gives each later horizon of that structure the constant inputs and the terminal cost's that
    the formulation of its OCP holds, to the last bit; over 100 updates' horizons, most of them of
    a structure met before."""
    controller, v = GaitController(config, model), np.zeros(model.nv)
    f, gathers, later = Formulation(controller.layout, quiet=True), {}, 0
    rng = np.random.default_rng(7)
    for k in range(100):
        q = controller.q0.copy()
        q[:3] += 0.01 * rng.standard_normal(3)
        numbers = controller.numbers(round(k * PERIOD, 9), q, v + 0.05 * rng.standard_normal(model.nv))
        f = f.for_problem(numbers.ocp())
        own = [f.stages.maps[int(g.index[0])].static for g in f.groups] + [f.stages.terminal_inputs[1][None]]
        if numbers.structure not in gathers:
            gathers[numbers.structure] = RowGather.of(f.stages, f.groups, numbers, inputs(f.stages, f.groups, numbers))
        else:
            later += 1
        for a, b in zip(gathers[numbers.structure](numbers.plan), own, strict=True):
            np.testing.assert_array_equal(a, b)
    assert later >= 60


def test_inputs_that_are_not_copies_of_the_plan_have_no_row_gather(config, model):
    """Numbers whose inputs are not the plan's numbers copied (numbers made of the plan doubled;
    costs weighed by the stages' time steps, which the signed probe makes negative weights) have
    no row gather: their updates make them the general way."""
    controller = GaitController(config, model)
    numbers = controller.numbers(0.0, controller.q0, np.zeros(model.nv))
    f = Formulation(controller.layout, quiet=True).for_problem(numbers.ocp())
    doubled = replace(numbers, numbers_of=lambda plan: numbers.numbers_of(2.0 * plan))
    assert RowGather.of(f.stages, f.groups, doubled, inputs(f.stages, f.groups, doubled)) is None
    assert RowGather.of(f.stages, f.groups, numbers, inputs(f.stages, f.groups, numbers)) is not None
    weighed = replace(config, costs=replace(config.costs, integrate_dt=True))
    controller = GaitController(weighed, model)
    numbers = controller.numbers(0.0, controller.q0, np.zeros(model.nv))
    f = f.for_problem(numbers.ocp())
    assert RowGather.of(f.stages, f.groups, numbers, inputs(f.stages, f.groups, numbers)) is None


@pytest.mark.parametrize("scheme, iterations", [("rti", 1), ("newton", 1), ("newton", 2)])
def test_updates_within_the_first_stage_in_place_are_the_updates_that_build_their_ocps(
    config, model, monkeypatch, scheme, iterations
):
    """Updates within the horizon's first stage renumber it in place, updates that return to a
    structure met before, with the knots it had then, renumber its kept horizon and load their
    warm start into it, and the others build it, in either scheme: the same policies, ticks,
    iterates and (read between updates) formulations' OCPs as the updates that build every OCP,
    to the last bit. Most updates are in place; a schedule held for a late foot moves the knots
    and goes the general way; some kept horizons are met again with a first stage of another
    length than they were made with; some kept horizons' warm starts take initial guesses at the
    measured state (a stage on other feet), and some, met before and all copies, are gathered
    from the last horizon's step in one call."""
    outcomes, kept = _counted(monkeypatch), _counted(monkeypatch, "renumber_at")
    retimed = _counted(monkeypatch, "renumber_at", record=_first_stage_retimed)
    guesses = _counted(monkeypatch, "from_state", Formulation)  # initial guesses' formulations at the measured state
    gathered = _counted(monkeypatch, "gather_start", HorizonInPlace)
    in_place = _updates(config, model, False, scheme, iterations)
    renumbered, refused = outcomes.count(True), outcomes.count(False)
    assert renumbered >= 50 and refused >= 1 and kept.count(True) >= 5 and len(guesses) >= 1
    assert retimed.count(True) >= 1 and len(gathered) >= 1
    met = len(kept)
    general = _updates(config, model, True, scheme, iterations)
    assert len(outcomes) == renumbered + refused and len(kept) == met
    for a, b in zip(in_place, general, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    "positions",
    [[], [4], [3, 4, 5, 9, 10, 0, 1, 2], [7, 6, 5], [2, 2, 3], list(range(10, 40)) + list(range(0, 10))],
)
def test_a_step_gather_takes_the_entries_at_its_positions(positions):
    """Runs of consecutive positions copied as slices: what indexing the block by them gives."""
    block, dst = np.arange(100.0) * 1.5, np.full(len(positions), np.nan)
    StepGather(positions)(block, dst)
    np.testing.assert_array_equal(dst, block[np.array(positions, dtype=int)])


def test_an_mpc_that_keeps_few_structures_starts_over_and_updates_alike(config, model, monkeypatch):
    """An MPC that meets more structures than it keeps (:data:`controller.KEPT`, here 4) drops its
    kept horizons and row gathers and keeps on: every number is still the general updates'."""
    monkeypatch.setattr(controller, "KEPT", 4)
    kept = _counted(monkeypatch, "renumber_at")
    in_place = _updates(config, model, False, "rti", 1, updates=60, read=(5,))
    assert kept.count(True) >= 1
    general = _updates(config, model, True, "rti", 1, updates=60, read=(5,))
    for a, b in zip(in_place, general, strict=True):
        np.testing.assert_array_equal(a, b)


def test_updates_without_row_gathers_are_the_updates_that_build_their_ocps(config, model, monkeypatch):
    """Costs weighed by the stages' time steps have no row gather: the updates renumber the horizon
    in place with the inputs made from the numbers, and every number is still the general
    updates'."""
    weighed = replace(config, costs=replace(config.costs, integrate_dt=True))
    outcomes, gathers = _counted(monkeypatch), _counted(monkeypatch, "of", RowGather)
    in_place = _updates(weighed, model, False, "rti", 1, updates=40, read=(5,))
    assert outcomes.count(True) >= 20 and gathers and all(g is None for g in gathers)
    general = _updates(weighed, model, True, "rti", 1, updates=40, read=(5,))
    for a, b in zip(in_place, general, strict=True):
        np.testing.assert_array_equal(a, b)


def test_an_rti_update_whose_barrier_falls_takes_the_general_steps_from_the_same_start(config, model, monkeypatch):
    """An ``rti`` update renumbers the horizon with any barrier; where a monotone barrier falls
    before the step, the update takes the steps one after the other from the iterate it started
    from, and every number is still the general updates'."""
    options = Options(barrier=1e4, barrier_update="monotone", barrier_min=1e-3)
    calls, solve = [], MPC._solve

    def counted(self, *args):
        calls.append(1)
        return solve(self, *args)

    monkeypatch.setattr(MPC, "_solve", counted)
    outcomes = _counted(monkeypatch)
    in_place = _updates(config, model, False, "rti", 1, updates=12, read=(3,), options=options)
    assert (
        outcomes.count(True) >= 6 and len(calls) >= 3
    )  # the start, and renumbered updates whose steps went the general way
    general = _updates(config, model, True, "rti", 1, updates=12, read=(3,), options=options)
    for a, b in zip(in_place, general, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    "backend, options",
    [("compiled", Options(barrier=1.0, barrier_update="adaptive", barrier_min=1e-3)), ("numpy", Options())],
)
def test_newton_steps_of_a_moving_barrier_and_the_numpy_backend_build_every_ocp(
    config, model, monkeypatch, backend, options
):
    """Newton steps whose barrier moves are not taken in place, and the numpy backend has no
    compiled horizon: no renumbering, and the updates are made."""
    outcomes = _counted(monkeypatch)
    controller = GaitController(config, model)
    mpc = MPC(controller, backend=backend, options=options, first_iterations=2, quiet=True, layout=controller.layout)
    mpc.start(0.0, controller.q0, np.zeros(model.nv))
    for k in range(1, 4):
        mpc.update(k * PERIOD, controller.q0, np.zeros(model.nv))
    assert outcomes == [] and len(mpc.ticks) == 4 and all(np.isfinite(t.kkt_error) for t in mpc.ticks)


@pytest.mark.parametrize(
    "new, expected",
    [
        ([0.005, 0.02, 0.04, 0.04, 0.06], True),  # moved within the first stage (an impulse at 0.04)
        ([0.0, 0.02, 0.04, 0.04, 0.06], True),  # not moved
        ([0.02, 0.04, 0.04, 0.06, 0.08], False),  # moved by a stage
        ([0.005, 0.025, 0.045, 0.045, 0.065], False),  # every knot moved (a held schedule)
        ([0.005, 0.02, 0.04, 0.06, 0.08], False),  # the impulse moved
        ([0.005, 0.02, 0.04, 0.04], False),  # a knot less
    ],
)
def test_a_horizon_moved_within_its_first_stage_is_one_whose_other_knots_start_as_before(new, expected):
    old = np.array([0.0, 0.02, 0.04, 0.04, 0.06])
    assert within_first_stage(old, np.array(new), "contact", 0.02) is expected
    assert within_first_stage(old, np.array(new), "impulse", 0.0) is (expected and new[0] == 0.0)
