"""The MPC's updates in place (:mod:`problems.mpc.receding`): a horizon that recedes by a stage
per ``rti`` update, held bitwise to the updates that build the OCP, its formulation and its warm
start; leaving it where an update does not recede, and coming back."""

from __future__ import annotations

import ctypes
import dataclasses

import numpy as np
import pytest

from liftoff.ocp.costs import VariableCost
from liftoff.problems.mpc import controller, polishing_run
from liftoff.problems.mpc.controller import MPC
from liftoff.problems.mpc.receding import RecedingHorizon
from liftoff.problems.tasks.config import parse_config
from liftoff.problems.tasks.polishing import Horizons, PolishingConfig, make_task
from liftoff.solvers import ipm
from liftoff.solvers.ipm import Options
from liftoff.solvers.riccati import compiled_address


@pytest.fixture(scope="module")
def task():
    return make_task(parse_config({"task": "polishing", "mpc": {"horizon": 10}}, schema=PolishingConfig))


def _general(build):
    """``build`` without its ``next_stage``: an MPC that builds every horizon's OCP."""
    return lambda t, q, v, tau: build(t, q, v, tau)


def _updates(task, build, times, options=Options(), read=(), scheme="rti", iterations=1):
    """The numbers of an MPC of ``build`` (its ``scheme`` and ``iterations`` per update) started
    at 0 and updated at ``times`` from random states near the task's: each policy's plan, control
    and gains, each tick's KKT error, iterations and status, and the iterate each update reached.
    ``read``: the updates after which the formulation and the result are read before the next."""
    rng = np.random.default_rng(5)
    mpc = MPC(build, options=options, iterations=iterations, first_iterations=3, scheme=scheme, quiet=True)
    mpc.start(0.0, task.q0, task.v0, task.u_pressing)
    out = []
    for k, t in enumerate(times):
        q = task.q0 + 0.01 * rng.standard_normal(task.q0.shape)
        v = 0.1 * rng.standard_normal(task.v0.shape)
        policy = mpc.update(t, q, v, task.u_pressing).policy
        tick = mpc.ticks[-1]
        out += [policy.q_plan, policy.v_plan, policy.tau_plan, policy.u, policy.K]
        out.append(np.array([tick.kkt_error, tick.iterations, tick.status == "max_iterations", tick.regularization]))
        if k in read or k == len(times) - 1:
            it = mpc.result.iterate
            out += [it.q, it.v, it.tau, it.lam, *vars(it.groups[0]).values()]
            ocp = mpc.formulation.ocp
            assert all(a is b for a, b in zip(ocp.stages, task.stages(t), strict=True))  # the task's stages at t
            out += [ocp.q0, ocp.v0, ocp.tau0, ocp.disturbance]
    return out


def _counted(monkeypatch):
    """The number of receding horizons' Newton steps, counted from now on."""
    calls, step = [], RecedingHorizon.newton_step

    def counted(self, *args):
        calls.append(1)
        return step(self, *args)

    monkeypatch.setattr(RecedingHorizon, "newton_step", counted)
    return calls


SCHEMES = [("rti", 1), ("rti", 2), ("newton", 1), ("newton", 2)]


@pytest.mark.parametrize("scheme, iterations", SCHEMES)
def test_updates_in_place_are_the_updates_that_build_their_ocps(task, monkeypatch, scheme, iterations):
    """Updates a stage apart move the horizon in place, in either scheme and with one or two
    iterations per update: the same policies, ticks, iterates and (read after them)
    formulation's OCPs as the updates that build the OCP, to the last bit, with a new disturbance
    on every row at each update; reading the formulation or the result between two updates
    changes nothing that follows."""
    disturbance = np.linspace(-0.5, 0.5, task.model.nv)

    def estimates():  # the estimate of each horizon's build, the first solve's first
        return iter(k * disturbance for k in range(100)).__next__

    times = [0.01 * k for k in range(1, 8)]
    calls = _counted(monkeypatch)
    kind = {"scheme": scheme, "iterations": iterations}
    in_place = _updates(task, Horizons(task, estimates()), times, read=(2, 3), **kind)
    assert len(calls) >= len(times) * (1 if scheme == "rti" and iterations == 1 else 2)
    moved = len(calls)
    general = _updates(task, _general(Horizons(task, estimates())), times, read=(2, 3), **kind)
    assert len(calls) == moved
    for a, b in zip(in_place, general, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    "times, options",
    [
        ([0.01, 0.02, 0.035, 0.045, 0.055, 0.065], Options()),  # 0.035: not a stage later
        ([0.01, 0.02, 0.03], Options(barrier=10.0, barrier_update="monotone", barrier_min=1e-3)),  # the barrier falls
    ],
    ids=["another time", "a barrier that falls"],
)
def test_an_update_that_does_not_recede_in_place_is_the_general_one_and_the_next_come_back(
    task, monkeypatch, times, options
):
    """An update at a time other than a stage later leaves the horizon in place for the general
    update, and the next update a stage later moves it in place again; an update whose barrier
    falls before its step (``monotone``) takes the steps one after the other from the moved
    start. Every number is the general updates'."""
    build = Horizons(task)
    calls = _counted(monkeypatch)
    in_place = _updates(task, build, times, options)
    moved = len(calls)
    general = _updates(task, _general(build), times, options)
    for a, b in zip(in_place, general, strict=True):
        np.testing.assert_array_equal(a, b)
    assert moved == (len(times) - 1 if options.barrier_update == "fixed" else len(times))


@pytest.mark.parametrize("scheme, iterations", [("rti", 1), ("newton", 1)])
def test_an_update_whose_lqr_the_call_finds_not_convex_takes_the_damped_steps_from_the_moved_start(
    task, monkeypatch, scheme, iterations
):
    """Where the compiled call's recursion finds the LQR not convex, the update in place takes the
    general update's steps (the policy's recursion, damped if need be, and the step in Python)
    from its moved start: the general updates' numbers."""
    signature = ctypes.CFUNCTYPE(ctypes.c_int, *(ctypes.c_int,) * 3, *(ctypes.c_void_p,) * 19)
    not_convex = signature(lambda *args: 1)  # liftoff_riccati's status at stage 0
    address = ctypes.cast(not_convex, ctypes.c_void_p).value
    monkeypatch.setattr(ipm, "compiled_address", lambda: address)
    monkeypatch.setattr(controller, "compiled_address", lambda: address)
    times = [0.01, 0.02, 0.03]
    calls = _counted(monkeypatch)
    in_place = _updates(task, Horizons(task), times, scheme=scheme, iterations=iterations)
    assert len(calls) == len(times)
    general = _updates(task, _general(Horizons(task)), times, scheme=scheme, iterations=iterations)
    for a, b in zip(in_place, general, strict=True):
        np.testing.assert_array_equal(a, b)


def test_an_update_whose_second_call_fails_takes_the_general_steps_from_its_moved_start(task, monkeypatch):
    """A ``newton`` update in place whose second call (at the iterate its first step reached)
    finds the LQR not convex: the general update runs from the update's start, not from where the
    first step went, and gives the general updates' numbers."""
    signature = ctypes.CFUNCTYPE(ctypes.c_int, *(ctypes.c_int,) * 3, *(ctypes.c_void_p,) * 19)
    recursion = signature(compiled_address())
    calls = []

    def every_second(*args):  # liftoff_riccati's status at stage 0 on every second call
        calls.append(1)
        return 1 if len(calls) % 2 == 0 else recursion(*args)

    hook = signature(every_second)
    monkeypatch.setattr(controller, "compiled_address", lambda: ctypes.cast(hook, ctypes.c_void_p).value)
    times = [0.01, 0.02, 0.03]
    in_place = _updates(task, Horizons(task), times, scheme="newton")
    assert len(calls) == 2 * len(times)
    general = _updates(task, _general(Horizons(task)), times, scheme="newton")
    for a, b in zip(in_place, general, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    "changes",
    [{"contacts": {"model": "soft"}, "mpc": {"scheme": "rti"}}, {"mpc": {"scheme": "newton"}}],
    ids=["rti, soft contact", "newton"],
)
def test_a_closed_loop_in_place_is_the_closed_loop_that_builds_its_ocps(monkeypatch, changes):
    """The polishing task's loop in MuJoCo with the disturbance observer, in either scheme (with
    the rigid or the soft contact): the same log, array by array and bit by bit, as with every
    update building its OCP; and the horizon built only for the first solve."""
    changes["mpc"]["horizon"] = 10
    config = parse_config({"task": "polishing", **changes}, schema=PolishingConfig)
    builds, call = [], Horizons.__call__

    def counted(self, *args):
        builds.append(args[0])
        return call(self, *args)

    monkeypatch.setattr(Horizons, "__call__", counted)
    in_place = polishing_run.run(config, duration=0.2, quiet=True)
    assert builds == [0.0]
    monkeypatch.setattr(RecedingHorizon, "of", classmethod(lambda cls, *args: None))
    general = polishing_run.run(config, duration=0.2, quiet=True)
    assert len(builds) == 1 + 20 and in_place.log.status == general.log.status == "completed"
    assert in_place.arrays.keys() == general.arrays.keys()
    for name, a in in_place.arrays.items():
        np.testing.assert_array_equal(a, general.arrays[name], err_msg=name)
    for a, b in zip(in_place.log.ticks, general.log.ticks, strict=True):
        assert (a.kkt_error, a.iterations, a.status) == (b.kkt_error, b.iterations, b.status)


def test_a_stage_of_another_structure_or_a_state_of_other_sizes_moves_nothing(task):
    """:meth:`RecedingHorizon.move` refuses a stage of another time step, another structure (a
    cost term less or more) or a state of other sizes, and leaves the horizon as it was."""
    mpc = MPC(Horizons(task), first_iterations=2, scheme="rti", quiet=True)
    mpc.start(0.0, task.q0, task.v0, task.u_pressing)
    r = mpc._receding
    stage = task.stages(0.01)[-1]
    extra = VariableCost("u", task.u_gravity, np.ones(task.model.nv), "extra")
    rows, stages = r.moving.rows.copy(), tuple(r.stages)
    other = [
        (dataclasses.replace(stage, dt=0.02), task.q0),
        (dataclasses.replace(stage, costs=stage.costs[:-1]), task.q0),
        (dataclasses.replace(stage, costs=(*stage.costs, extra)), task.q0),
        (stage, task.q0[:-1]),
    ]
    for bad, q in other:
        with pytest.raises(ValueError):
            r.move(bad, q, task.v0, task.u_pressing, None)
        np.testing.assert_array_equal(r.moving.rows, rows)
        assert tuple(r.stages) == stages
    r.move(stage, task.q0, task.v0, task.u_pressing, None)
    assert r.stages[-1] is stage and tuple(r.stages)[:-1] == stages[1:]
    np.testing.assert_array_equal(r.moving.rows[:-1], rows[1:])


def test_only_compiled_kernels_and_full_gauss_newton_steps_at_a_fixed_barrier_recede_in_place(task):
    """The numpy backend builds every OCP, and so do Newton steps whose barrier falls, that
    search along their line or take the exact Hessian (an ``rti`` update of one linearization
    takes no step within the update: it recedes with any barrier)."""
    adaptive = Options(barrier=1.0, barrier_update="adaptive", barrier_min=1e-3)
    others = [Options(line_search=True), Options(hessian="exact"), adaptive]
    cases = [("rti", Options(), "numpy")] + [("newton", options, "compiled") for options in others]
    for scheme, options, backend in cases + [("rti", adaptive, "compiled")]:
        mpc = MPC(Horizons(task), "lifted", backend, options, first_iterations=2, scheme=scheme, quiet=True)
        mpc.start(0.0, task.q0, task.v0, task.u_pressing)
        assert (mpc._receding is None) == ((scheme, options, backend) in cases)
