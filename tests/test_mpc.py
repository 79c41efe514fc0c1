"""The MPC loop's parts: the warm start on a later horizon, the policy between updates, a
formulation moved to another problem its kernels can evaluate, and the simulated plant (pushes, held contact, a
heavier model)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from liftoff import dynamics
from liftoff.ocp.costs import VariableCost
from liftoff.ocp.formulation import Formulation, GroupVariables, Iterate
from liftoff.problems.mpc.controller import MPC, Policy, warm_start
from liftoff.problems.mpc.plant import Disturbances, Plant, Push, closed_loop, scaled_model
from liftoff.problems.tasks.config import parse_config
from liftoff.problems.tasks.polishing import PolishingConfig, build_ocp, make_task
from liftoff.solvers.ipm import Options, solve


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


def test_a_push_is_the_torque_of_its_force_at_the_frame(task):
    push = Push("arm_right_7_link", (1.0, -2.0, 3.0), 0.5, 0.1)
    plant = Plant(task.model, (), disturbances=Disturbances(pushes=(push,), torque_bias=0.5))
    q, tau = task.q0 + 0.1, np.arange(6.0)
    np.testing.assert_allclose(plant.torque(0.4, q, tau), tau + 0.5)
    # virtual work: the torque's power equals the force's power at the frame, by finite differences
    dq = np.random.default_rng(1).normal(size=6) * 1e-6
    _, p0 = dynamics.frame_placement(task.model, q, "arm_right_7_link")
    _, p1 = dynamics.frame_placement(task.model, q + dq, "arm_right_7_link")
    work = (plant.torque(0.55, q, tau) - tau - 0.5) @ dq
    assert work == pytest.approx(np.array(push.force) @ (p1 - p0), rel=1e-5)


def test_the_plant_holds_its_contact_and_steps_semi_implicitly(task):
    plant = Plant(task.model, (task.contact(),), dt=1e-3)
    rng = np.random.default_rng(2)
    q, v = task.q0.copy(), np.zeros(6)
    for k in range(300):
        q, v, _, _ = plant.step(k * 1e-3, q, v, task.u_gravity + rng.normal(size=6))
    _, p = dynamics.frame_placement(task.model, q, "arm_right_7_link")
    assert abs(p[2] - task.p0[2]) < 1e-5  # on the surface after 0.3 s of random torques
    assert np.linalg.norm(p[:2] - task.p0[:2]) > 1e-3  # while sliding along it
    q1, v1, _, _ = plant.step(0.0, task.q0, np.ones(6), task.u_gravity)
    a, _ = dynamics.constrained_dynamics(task.model, task.q0, np.ones(6), task.u_gravity, (task.contact(),), mu=1e-8)[
        :2
    ]
    np.testing.assert_allclose(v1, np.ones(6) + 1e-3 * a, atol=1e-12)
    np.testing.assert_allclose(q1, dynamics.integrate(task.model, task.q0, 1e-3 * v1), atol=1e-12)


def test_the_plant_actuators_filter_the_command_exactly(task):
    """``tau_dot = 2 pi f_c (w - tau)`` integrated by RK4 with a fine step over one plant step
    equals the plant's zero-order hold, and the joints receive the torques before the step."""
    plant = Plant(task.model, (task.contact(),), dt=1e-3, torque_filter=5.0)
    tau, w = np.linspace(-3, 3, 6), np.linspace(4, -1, 6)
    *_, tau_next = plant.step(0.0, task.q0, np.zeros(6), w, tau)
    x, h, omega = tau.copy(), 1e-3 / 100, 2 * np.pi * 5.0
    for _ in range(100):
        k1 = omega * (w - x)
        k2 = omega * (w - x - h / 2 * k1)
        k3 = omega * (w - x - h / 2 * k2)
        k4 = omega * (w - x - h * k3)
        x = x + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    np.testing.assert_allclose(tau_next, x, rtol=1e-12)
    _, v1, _, _ = plant.step(0.0, task.q0, np.zeros(6), w, tau)
    a = dynamics.constrained_dynamics(task.model, task.q0, np.zeros(6), tau, (task.contact(),), mu=1e-8)[0]
    np.testing.assert_allclose(v1, 1e-3 * a, atol=1e-12)


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
    q, v, f, _ = Plant(task.model, (), dt=1e-3).step(0.0, task.q0, np.zeros(6), np.zeros(6))
    np.testing.assert_allclose(v, 1e-3 * dynamics.aba(task.model, task.q0, np.zeros(6), np.zeros(6)), atol=1e-12)
    assert f.shape == (0,)


def test_the_mpc_period_must_be_a_multiple_of_the_plant_step(task):
    mpc = MPC(lambda t, q, v, tau: build_ocp(task, t, q, v, tau))
    with pytest.raises(ValueError, match="not a multiple"):
        closed_loop(mpc, Plant(task.model, (), dt=0.003), task.q0, task.v0, 0.1, 0.01)
