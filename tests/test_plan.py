"""The legged MPC's compiled horizon plan (problems/mpc/plan.c) against the controller's numpy
reference, bit for bit: the gaits' configurations, turns and a command schedule, the triangle
profile, clipped footholds, early and late touchdowns; and the reference without a compiler."""

from __future__ import annotations

import copy
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from liftoff.problems.mpc import plan
from liftoff.problems.mpc.locomotion import GaitController
from liftoff.problems.mpc.plants import ContactReading, Measurement, Steps
from liftoff.problems.tasks.config import load_config
from liftoff.problems.tasks.gait_mpc import Command, GaitMPCConfig

CONFIGS = Path(__file__).resolve().parent.parent / "configs"
FIELDS = ("dts", "stance", "footholds", "swing", "landing", "com", "q_ref", "v_ref")


def config_of(name, **mpc) -> GaitMPCConfig:
    config = load_config(CONFIGS / f"anymal_{name}_mpc.yaml", GaitMPCConfig)
    return replace(config, mpc=replace(config.mpc, **mpc)) if mpc else config


def checked_plans(monkeypatch) -> list:
    """From now on, each compiled plan compared with the reference's on a copy of the controller
    as it was: per plan, whether every array and every target set is the same, bit for bit."""
    compiled, outcomes = GaitController._plan, []

    def checked(self, t, q, v, com_now):
        twin = copy.copy(self)
        twin.feet_state = copy.deepcopy(self.feet_state)
        expected = twin.reference_plan(t, q, v, com_now)
        got = compiled(self, t, q, v, com_now)
        pairs = [(getattr(got, f), getattr(expected, f)) for f in FIELDS]
        same = all(np.array_equal(a, b) and a.dtype == b.dtype for a, b in pairs)
        targets = [(a.target, b.target) for a, b in zip(self.feet_state, twin.feet_state) if not a.stance]
        outcomes.append(same and all(np.array_equal(a, b) for a, b in targets))
        return got

    monkeypatch.setattr(GaitController, "_plan", checked)
    return outcomes


def drive(controller, seconds, rng, touch=lambda t, foot, planned: planned, period=0.005):
    """Update ``controller`` every ``period`` for ``seconds`` from states near its standing one
    (random base velocities: the footholds move with the error), each 1 ms step's contacts those
    ``touch(t, foot, planned)`` says, ``planned`` whether the controller expects the foot down."""
    nv, feet = controller.model.nv, controller.feet
    t = 0.0
    controller(t, controller.q0, np.zeros(nv))
    while t < seconds - 1e-9:
        expected = controller.holds(t)
        for k in range(int(round(period / 1e-3))):
            tk = t + k * 1e-3
            contacts = {f: ContactReading(touch(tk, f, f in expected), np.zeros(3), np.zeros(3)) for f in feet}
            m = Measurement(controller.q0, np.zeros(nv), None, contacts)
            controller.observe(Steps.one(m, tk, np.zeros(nv - 6), m, (0.0, 0.0), feet))
        t = round(t + period, 9)
        q, v = controller.q0.copy(), 0.3 * rng.standard_normal(nv)
        q[:2] += 0.3 * t * np.array([1.0, 0.2]) + 0.01 * rng.standard_normal(2)
        controller(t, q, v)


@pytest.mark.parametrize("name", ["trot", "walk", "bound"])
def test_the_compiled_plan_is_the_reference_on_each_gait(monkeypatch, name):
    outcomes = checked_plans(monkeypatch)
    controller = GaitController(config_of(name), quiet=True)
    assert controller._compiled is not None
    drive(controller, 1.2, np.random.default_rng(1))
    assert len(outcomes) >= 200 and all(outcomes)


def test_the_compiled_plan_is_the_reference_through_turns_late_and_early_feet_and_clipped_footholds(monkeypatch):
    """A command schedule that turns, the triangle profile, footholds clipped at a short
    ``max_step`` (the velocity error large), feet that touch down early (any foot touching in the
    second half of its swing) and late (the right front foot never touches for a while)."""
    commands = (Command(t=0.0, vx=0.2), Command(t=0.4, vx=0.25, vy=0.05, yaw_rate=0.4), Command(t=0.8, yaw_rate=-0.3))
    max_step = 0.1
    config = config_of("trot", command=commands)
    config = replace(config, gait=replace(config.gait, swing_profile="triangle"))
    config = replace(config, mpc=replace(config.mpc, footholds=replace(config.mpc.footholds, max_step=max_step)))
    outcomes = checked_plans(monkeypatch)
    controller = GaitController(config, quiet=True)
    clipped, foothold = [], GaitController._foothold

    def clipping(self, i, j, xy, yaw, commands, error):  # whether the reference's foothold lies max_step from the hip
        out, j = foothold(self, i, j, xy, yaw, commands, error), min(j, len(xy) - 1)
        c, s = np.cos(yaw[j]), np.sin(yaw[j])
        hip = xy[j] + np.array([[c, -s], [s, c]]) @ self.hips[i]
        clipped.append(abs(np.hypot(*(out[:2] - hip)) - max_step) < 1e-9)
        return out

    monkeypatch.setattr(GaitController, "_foothold", clipping)

    def touch(t, foot, planned):
        if foot == "RF_FOOT" and 0.5 < t < 0.7:
            return False  # late
        return planned or (t * 1e3) % 7 < 3  # early now and then

    drive(controller, 1.2, np.random.default_rng(2), touch)
    assert len(outcomes) >= 200 and all(outcomes) and any(clipped) and not all(clipped)
    assert any(t.planned != t.measured for t in controller.touchdowns)


def test_without_a_compiler_the_controller_plans_with_the_reference(monkeypatch):
    monkeypatch.setattr(plan, "compiled_library", lambda path, functions: None)
    controller = GaitController(config_of("trot"), quiet=True)
    assert controller._compiled is None
    called = []
    reference = GaitController.reference_plan
    monkeypatch.setattr(GaitController, "reference_plan", lambda self, *a: called.append(1) or reference(self, *a))
    controller(0.0, controller.q0, np.zeros(controller.model.nv))
    assert called
    config = config_of("trot")
    assert GaitController(replace(config, solver=replace(config.solver, backend="numpy")))._compiled is None
