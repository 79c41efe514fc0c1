"""liftoff's idealized legged plant's compiled steps between two updates (``ideal_steps.c``):
equal to the bit to the policy and the plant's Python step at each step, through lift-offs made
in C and touchdowns left to Python, with torque noise and bias; stopped after a step that
diverges; a step whose dynamics break down ends them with the steps done, which the closed loop
logs; and the closed loop on them is the loop one step at a time."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from conftest import HeldPolicy

from liftoff.problems.mpc.disturbances import Disturbances, Push
from liftoff.problems.mpc.locomotion import GaitController
from liftoff.problems.mpc.loop import Divergence, closed_loop
from liftoff.problems.mpc.plants import PlantFailure
from liftoff.problems.mpc.plants.ideal_legged import IdealLeggedPlant
from liftoff.problems.mpc.policy import Policy, PolicyKernel
from liftoff.problems.tasks.config import load_config
from liftoff.problems.tasks.gait_mpc import GaitMPCConfig

CONFIG = Path(__file__).resolve().parent.parent / "configs" / "anymal_trot_mpc.yaml"
DISTURBANCES = Disturbances(torque_noise=0.5, torque_bias=np.linspace(-1.0, 1.0, 12), seed=3)


@pytest.fixture(scope="module")
def anymal():
    """ANYmal's controller (its model, feet, ground and standing posture), the plant's settings,
    and a policy that folds the left front leg and puts it down again over 0.1 s, its joints
    PD-held."""
    config = load_config(CONFIG, GaitMPCConfig)
    controller = GaitController(replace(config, plant=replace(config.plant, engine="liftoff")))
    model, q0 = controller.model, controller.q0
    folded = q0.copy()
    folded[[8, 9]] += (0.4, -0.8)  # the left front hip and knee flexed
    K = np.zeros((12, 2 * model.nv))
    K[:, 6:18], K[:, 24:36] = -300 * np.eye(12), -8 * np.eye(12)
    plan = (np.stack([folded, q0]), np.zeros((2, model.nv)), np.zeros((2, 0)))
    policy = PolicyKernel(model, 12, 0, quiet=True).bind(Policy(model, 0.0, 0.1, *plan, np.zeros(12), K))
    return controller, config.plant, policy


def schedule(t):
    """The left front foot released for 40 ms, the others held."""
    feet = {"LF_FOOT", "LH_FOOT", "RF_FOOT", "RH_FOOT"}
    return feet - {"LF_FOOT"} if 0.0 <= t < 0.04 else feet


def plant_of(anymal, disturbances=DISTURBANCES, backend="compiled") -> IdealLeggedPlant:
    c, p, _ = anymal
    return IdealLeggedPlant(c.model, c.feet, c.ground, schedule, p.dt, p.kp, p.kd, disturbances, backend=backend)


def standing(plant, controller):
    """The plant reset to the standing posture at rest."""
    return plant.reset(controller.q0, np.zeros(controller.model.nv))


def counted(plant, monkeypatch) -> list:
    """The times of the plant's steps taken in Python."""
    seen, step_under = [], plant._step_under
    monkeypatch.setattr(plant, "_step_under", lambda t, tau: seen.append(t) or step_under(t, tau))
    return seen


def test_compiled_legged_steps_are_the_plant_s_steps_one_at_a_time(anymal, monkeypatch):
    controller, _, policy = anymal
    compiled, stepped = plant_of(anymal), plant_of(anymal)
    start, measurement = standing(compiled, controller), standing(stepped, controller)
    python = counted(compiled, monkeypatch)
    divergence = Divergence(controller.model)
    steps = compiled.run(0, 150, policy, start, divergence.lower, divergence.upper)
    assert steps.size == 150 and steps.checked and not steps.diverged
    assert compiled._compiled and 1 <= len(python) <= 5  # the touchdown's steps in Python, the others compiled
    touching = []
    for j, t in enumerate(steps.t):
        command = policy(t, measurement.q, measurement.v)
        measurement = stepped.step(t, command)
        np.testing.assert_array_equal(steps.u[j], command)
        np.testing.assert_array_equal(steps.q[j + 1], measurement.q)
        np.testing.assert_array_equal(steps.v[j + 1], measurement.v)
        np.testing.assert_array_equal(steps.readings[j], measurement.contacts.rows)
        touching.append(measurement.contacts.rows[0, 0])
    assert touching[0] == 0.0 and touching[-1] == 1.0 and max(python) >= 0.04  # lifted in C, put down in Python
    assert compiled.stance.keys() == stepped.stance.keys() and np.all(np.isfinite(steps.seconds))
    lower = divergence.lower.copy()
    lower[2] = controller.q0[2] - 0.002  # the base sinks below it within the period
    plant = plant_of(anymal)
    steps = plant.run(0, 150, policy, standing(plant, controller), lower, divergence.upper)
    assert 0 < steps.size < 150 and steps.checked and steps.diverged
    assert steps.q[-1, 2] < lower[2] <= steps.q[-2, 2]


def test_a_step_that_breaks_down_ends_the_steps_with_those_done_logged(anymal, monkeypatch):
    """A step taken in Python that raises (a singular contact system): the plant's run raises
    :class:`PlantFailure` with the steps before it, which the closed loop logs before it ends."""
    controller, _, policy = anymal
    plant = plant_of(anymal)
    step_under = plant._step_under

    def breaking(t, tau):
        if t > 0.04:
            raise np.linalg.LinAlgError("singular contact system")
        return step_under(t, tau)

    monkeypatch.setattr(plant, "_step_under", breaking)
    start, divergence = standing(plant, controller), Divergence(controller.model)
    with pytest.raises(PlantFailure, match="the plant failed at t = 0.120 s: singular") as failure:
        plant.run(0, 150, policy, start, divergence.lower, divergence.upper)
    done = failure.value.steps
    assert done.size == 120 and done.checked and done.t[-1] == pytest.approx((done.size - 1) * 1e-3)
    rest = np.zeros(controller.model.nv)
    log = closed_loop(HeldPolicy(policy), plant, controller.model, controller.q0, rest, 0.2, 0.007)
    assert log.status == "diverged" and "singular contact system" in log.message
    assert len(log.t) == done.size and log.end_time == pytest.approx(failure.value.t)


def test_a_closed_loop_on_compiled_legged_steps_is_the_loop_one_step_at_a_time(anymal):
    """The log and what the estimator sees, the periods' steps in compiled calls and one at a
    time: the same, to the bit; a push within a period, or the numpy policy, leave its steps to
    the loop."""
    controller, _, policy = anymal
    push = Push("base", (0.0, 40.0, 0.0), 0.052, 0.01)
    runs = []
    for compiled in (True, False):
        plant, seen = plant_of(anymal, replace(DISTURBANCES, pushes=(push,))), []
        plant._compiled = None if compiled else False
        log = closed_loop(
            HeldPolicy(policy), plant, controller.model, controller.q0, np.zeros(controller.model.nv), 0.1, 0.005,
            observe=seen.append,
        )  # fmt: skip
        runs.append((log, seen, plant))
    (log, seen, plant), (log_, seen_, _) = runs
    assert log.status == log_.status == "completed" and plant._compiled
    for name, array in log.arrays().items():
        np.testing.assert_array_equal(array, log_.arrays()[name])
    for steps, steps_ in zip(seen, seen_, strict=True):
        for name in ("t", "u", "q", "v", "readings"):
            np.testing.assert_array_equal(getattr(steps, name), getattr(steps_, name))
    start = standing(plant, controller)
    limits = Divergence(controller.model).lower, Divergence(controller.model).upper
    assert plant.run(50, 5, policy, start, *limits) is None  # the push acts within
    assert plant.run(0, 5, policy.policy, start, *limits) is None  # the numpy policy


def test_a_plant_stepping_in_numpy_leaves_its_steps_to_the_loop(anymal):
    """Without a compiled step (the numpy backend, or no C compiler), ``run`` declines and the
    closed loop steps the plant one at a time."""
    controller, _, policy = anymal
    plant = plant_of(anymal, backend="numpy")
    start, divergence = standing(plant, controller), Divergence(controller.model)
    assert plant.run(0, 5, policy, start, divergence.lower, divergence.upper) is None
    rest = np.zeros(controller.model.nv)
    log = closed_loop(HeldPolicy(policy), plant, controller.model, controller.q0, rest, 0.01, 0.005)
    assert log.status == "completed" and len(log.t) == 10
