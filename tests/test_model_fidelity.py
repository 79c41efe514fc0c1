"""The model's fidelity terms in the OCP: the URDF's joint damping and smoothed Coulomb friction,
a tool's sliding friction on a surface, an estimated disturbance. Each in the numpy reference
against finite differences, in the compiled kernels against the reference, and in the
non-lifted forward dynamics."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from conftest import pin_model_from_urdf
from test_kernels import compare_groups

from liftoff import dynamics
from liftoff.dynamics.robots import robot_urdf
from liftoff.ocp.formulation import Formulation
from liftoff.ocp.kernels import CompiledStages
from liftoff.ocp.lifted import actuation, contact_stages
from liftoff.ocp.problem import SlidingFriction
from liftoff.problems.tasks.config import parse_config
from liftoff.problems.tasks.polishing import PolishingConfig, build_ocp, make_task
from liftoff.solvers.ipm import Options, solve


@pytest.fixture(scope="module")
def task():
    data = {"task": "polishing", "mpc": {"horizon": 4}, "surface": {"normal": [0.3, -0.2, 1.0], "friction": 0.4}}
    return make_task(parse_config(data, schema=PolishingConfig))


@pytest.mark.parametrize("robot", ["talos", "anymal"])
def test_the_urdf_damping_and_friction_are_pinocchios(robot):
    model = dynamics.load(robot)
    reference = pin_model_from_urdf(robot_urdf(robot), model.has_free_flyer)
    np.testing.assert_array_equal(model.damping, np.asarray(reference.damping))
    np.testing.assert_array_equal(model.friction, np.asarray(reference.friction))
    assert robot == "anymal" or np.any(model.damping) and np.any(model.friction)
    assert pin.__version__


def test_the_passive_torque_is_damping_and_smoothed_coulomb_friction(task):
    model, rng = task.model, np.random.default_rng(0)
    v = rng.standard_normal((5, model.nv))
    width = 0.3
    expected = -model.damping * v - model.friction * np.tanh(v / width)
    np.testing.assert_allclose(dynamics.passive_torque(model, v, width), expected, rtol=1e-15)
    step = 1e-6
    numeric = (dynamics.passive_torque(model, v + step, width) - dynamics.passive_torque(model, v - step, width)) / (
        2 * step
    )
    np.testing.assert_allclose(dynamics.passive_torque_derivative(model, v, width), numeric, atol=1e-8)
    off = dynamics.keep_joint_friction(model, damping=False, coulomb=False)
    assert not dynamics.has_passive_torque(off) and dynamics.has_passive_torque(model)
    with pytest.raises(ValueError, match="width"):
        dynamics.passive_torque(model, v, 0.0)


def stage_point(task, rng, S=3):
    model = task.model
    q = dynamics.integrate(model, task.q0, 0.05 * rng.standard_normal((S, model.nv)))
    v, a = (rng.standard_normal((S, model.nv)) for _ in range(2))
    f, u = 30 + rng.standard_normal((S, 1)), rng.standard_normal((S, model.nv))
    return q, v, a, f, u


def local_residual(task, sliding, disturbance, width, q, v, a, f, u):
    """``c``: the lifted contact stage's local equalities, through :func:`contact_stages` (its
    state equation and costs are tested elsewhere)."""
    model, S, ny = task.model, len(q), 3 * task.model.nv + 1
    H, g = np.tile(np.eye(ny), (S, 1, 1)), np.zeros((S, ny))
    out = contact_stages(model, (task.contact(),), 0.01, q, v, a, f, u, q, v, H, g, None, width, sliding, disturbance)
    return out.c, out.C


def test_the_lifted_stage_with_joint_and_sliding_friction_matches_finite_differences(task):
    """``C`` is the Jacobian of ``c = (ID - S u, alpha)`` in ``y = (dq, dv, du, da, df)``, with the
    passive torques, the pad's sliding friction and a disturbance in ``ID``."""
    model, rng = task.model, np.random.default_rng(1)
    q, v, a, f, u = stage_point(task, rng)
    sliding, disturbance, width = task.sliding(0.3), rng.standard_normal(model.nv), 0.3
    assert sliding and dynamics.has_passive_torque(model)
    c, C = local_residual(task, sliding, disturbance, width, q, v, a, f, u)
    nv, step = model.nv, 1e-6
    numeric = np.zeros_like(C)
    for k in range(C.shape[2]):
        e = np.zeros(C.shape[2])
        e[k] = step
        moved = []
        for sign in (1, -1):
            d = sign * e
            dq, dv, du, da, df = np.split(d, np.cumsum([nv, nv, nv, nv]))
            point = (dynamics.integrate(model, q, np.broadcast_to(dq, q.shape)), v + dv, a + da, f + df, u + du)
            moved.append(local_residual(task, sliding, disturbance, width, *point)[0])
        numeric[:, :, k] = (moved[0] - moved[1]) / (2 * step)
    np.testing.assert_allclose(C, numeric, atol=1e-6 * max(1.0, np.abs(C).max()))
    # the terms are there: without them the residual changes by the passive torque, friction and disturbance
    plain = local_residual(task, (), None, width, q, v, a, f, u)[0]
    passive = dynamics.passive_torque(model, v, width)
    assert np.abs(c[:, :nv] - plain[:, :nv] + passive + disturbance).max() > 1e-3  # the sliding friction


def test_the_sliding_friction_opposes_the_planned_sliding(task):
    """Its generalized force is that of ``-mu f_n d`` at the tool, ``d`` the circle's direction:
    its power on a motion that slides the tool along ``d`` is ``-mu f_n``."""
    model, rng = task.model, np.random.default_rng(2)
    q, v, a, f, u = stage_point(task, rng, S=1)
    for t in (0.0, 1.0, 2.5):
        (sliding,) = task.sliding(t)
        J = dynamics.frame_jacobian(model, q[0], "tool", "LOCAL_WORLD_ALIGNED")[:3]
        along = np.linalg.pinv(J) @ sliding.direction  # joint velocities sliding the tool along d at 1 m/s
        np.testing.assert_allclose(J @ along, sliding.direction, atol=1e-9)
        with_friction = local_residual(task, task.sliding(t), None, 0.3, q, v, a, f, u)[0][0, : model.nv]
        without = local_residual(task, (), None, 0.3, q, v, a, f, u)[0][0, : model.nv]
        power = -(with_friction - without) @ along  # the force's power on the robot
        assert power == pytest.approx(-sliding.mu * f[0, 0], rel=1e-9)
        circle = task.circle([t - 1e-6, t + 1e-6])
        np.testing.assert_allclose(
            sliding.direction, (circle[1] - circle[0]) / np.linalg.norm(circle[1] - circle[0]), atol=1e-6
        )


def test_compiled_kernels_carry_joint_friction_sliding_and_disturbance(task):
    rng = np.random.default_rng(3)
    ocp = build_ocp(task, disturbance=rng.standard_normal(task.model.nv))
    assert ocp.stages[0].sliding and dynamics.has_passive_torque(ocp.model)
    assert compare_groups(ocp, CompiledStages(ocp, forward=True, compile=False), rng) == ocp.K


def test_the_nonlifted_dynamics_solves_the_lifted_equalities(task):
    """With the passive torques and the disturbance (no sliding friction: the non-lifted
    formulation refuses it) the forward dynamics' ``w`` zeroes the lifted stage's ``c``."""
    rng = np.random.default_rng(4)
    frictionless = parse_config({"task": "polishing", "mpc": {"horizon": 4}}, schema=PolishingConfig)
    plain = make_task(frictionless)
    ocp = build_ocp(plain, disturbance=rng.standard_normal(plain.model.nv))
    form = Formulation(ocp, "nonlifted", "numpy")
    group = ocp.groups()[0]
    q, v, _, _, u = stage_point(plain, rng, S=group.size)
    w = form.stages.dynamics(group, q, v, u)
    nv = plain.model.nv
    c, _ = local_residual(plain, (), ocp.disturbance, ocp.joint_friction_width, q, v, w[:, :nv], w[:, nv:], u)
    np.testing.assert_allclose(c, 0.0, atol=1e-7)
    with pytest.raises(ValueError, match="sliding friction needs the lifted formulation"):
        Formulation(build_ocp(task), "nonlifted", "numpy")


def test_both_formulations_reach_one_optimum_with_joint_friction():
    config = parse_config(
        {"task": "polishing", "mpc": {"horizon": 8}, "solver": {"barrier": 1e-3}}, schema=PolishingConfig
    )
    task = make_task(config)
    ocp = build_ocp(task, disturbance=np.linspace(-1, 1, task.model.nv))
    results = [
        solve(Formulation(ocp, name, "numpy"), Options(barrier=1e-3, max_iterations=60))
        for name in ("lifted", "nonlifted")
    ]
    assert all(r.converged for r in results)
    assert abs(results[0].cost - results[1].cost) <= 1e-6 * abs(results[0].cost)


def test_a_sliding_friction_needs_a_unit_direction_and_a_friction_coefficient(task):
    with pytest.raises(ValueError, match="unit vector"):
        SlidingFriction(0, 0.3, np.ones(3))
    with pytest.raises(ValueError, match="mu >= 0"):
        SlidingFriction(0, -0.3, np.eye(3)[0])
    assert actuation(task.model).shape == (task.model.nv, task.model.nv)
