"""liftoff's idealized plants: the compiled step (:mod:`liftoff.problems.mpc.plants.ideal_kernel`)
equals the numpy reference to 1e-10, step by step, on the polishing arm pressing the table and on
ANYmal lifting and putting down its feet (touchdowns, lift-offs, stance feet); without a compiler
the plants step in numpy after one warning line; a bad backend is refused."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from liftoff.problems.mpc.locomotion import GaitController
from liftoff.problems.mpc.plants.ideal import IdealPlant
from liftoff.problems.mpc.plants.ideal_kernel import NumpyStep, StepKernel
from liftoff.problems.mpc.plants.ideal_legged import IdealLeggedPlant
from liftoff.problems.mpc.polishing_run import make_plant as polishing_plant
from liftoff.problems.tasks.config import load_config
from liftoff.problems.tasks.gait_mpc import GaitMPCConfig
from liftoff.problems.tasks.polishing import PolishingConfig, make_task

CONFIGS = Path(__file__).resolve().parent.parent / "configs"
PD = (300.0, 8.0)  # joints held around the initial posture [N m/rad, N m s/rad]


def liftoff_config(name, schema):
    config = load_config(CONFIGS / name, schema)
    return replace(config, plant=replace(config.plant, engine="liftoff", contact="rigid_bilateral"))


def close(compiled, reference):
    """Every array of two steps' results equal to 1e-10 of their scale."""
    for name in ("q", "v", "a", "f", "R", "p", "velocity"):
        x, y = getattr(compiled, name), getattr(reference, name)
        np.testing.assert_allclose(x, y, rtol=0, atol=1e-10 * max(1.0, np.abs(y).max(initial=0)), err_msg=name)


@pytest.fixture
def checked(monkeypatch):
    """Every compiled step, touchdown search and impact compared with numpy's from the same
    inputs; the number of active contacts of each step, and the impacts."""
    seen = {"active": [], "impacts": 0}
    step, positions, impulse = StepKernel.__call__, StepKernel.positions, StepKernel.impulse

    def checked_step(self, q, v, torque, h, targets):
        out = step(self, q, v, torque, h, targets)
        close(out, NumpyStep(self.model, self.slots, self.mu)(q, v, torque, h, targets))
        seen["active"].append(sum(t is not None for t in targets))
        return out

    def checked_positions(self, q, v, a, h):
        out = positions(self, q, v, a, h)
        np.testing.assert_allclose(
            out, NumpyStep(self.model, self.slots, self.mu).positions(q, v, a, h), rtol=0, atol=1e-10
        )
        return out

    def checked_impulse(self, q, v, targets):
        out = impulse(self, q, v, targets)
        reference = NumpyStep(self.model, self.slots, self.mu).impulse(q, v, targets)
        np.testing.assert_allclose(out, reference, rtol=0, atol=1e-10 * max(1.0, np.abs(reference).max()))
        seen["impacts"] += 1
        return out

    monkeypatch.setattr(StepKernel, "__call__", checked_step)
    monkeypatch.setattr(StepKernel, "positions", checked_positions)
    monkeypatch.setattr(StepKernel, "impulse", checked_impulse)
    return seen


def drive(plant, q0, steps, offset):
    """``steps`` steps of ``plant`` from ``q0`` at rest, its joints PD-held at ``q0`` moved by ``offset(k)``."""
    nu = plant.model.nv - (6 if plant.model.has_free_flyer else 0)
    m = plant.reset(q0, np.zeros(plant.model.nv), None if plant.filter_gain is None else np.zeros(nu))
    assert isinstance(plant._step, StepKernel)
    for k in range(steps):
        m = plant.step(k * plant.dt, PD[0] * (q0[-nu:] + offset(k) - m.q[-nu:]) - PD[1] * m.v[-nu:])


def test_the_compiled_polishing_step_is_the_numpy_one(checked):
    config = liftoff_config("polishing_horizontal.yaml", PolishingConfig)
    task = make_task(config)
    drive(polishing_plant(config, task), task.q0, 50, lambda k: 0.05 * np.sin(0.1 * k))
    assert checked["active"] == [1] * 51


@pytest.mark.heavy
def test_the_compiled_legged_step_is_the_numpy_one_through_touchdowns(checked):
    config = liftoff_config("anymal_trot_mpc.yaml", GaitMPCConfig)
    controller = GaitController(config)
    feet, nu = controller.feet, controller.model.nv - 6

    def schedule(t):  # the left front foot released for 60 ms, then the right hind one
        return set(feet) - ({"LF_FOOT"} if 0.02 <= t < 0.08 else {"RH_FOOT"} if 0.12 <= t < 0.18 else set())

    def lift(k):  # the released leg folded for 30 ms (hip and knee flexed), then put down
        out = np.zeros(nu)
        if 20 <= k < 50:
            out[[1, 2]] = (0.3, -0.6)
        if 120 <= k < 150:
            out[[10, 11]] = (-0.3, 0.6)
        return out

    p = config.plant
    plant = IdealLeggedPlant(controller.model, feet, controller.ground, schedule, p.dt, p.kp, p.kd)
    drive(plant, controller.q0, 240, lift)
    assert min(checked["active"]) == 3 and max(checked["active"]) == 4 and checked["impacts"] >= 2


def test_a_bad_plant_backend_is_refused():
    config = liftoff_config("polishing_horizontal.yaml", PolishingConfig)
    task = make_task(config)
    with pytest.raises(ValueError, match="backend is one of compiled, numpy, got 'fortran'"):
        IdealPlant(task.model, {"tool": task.contact()}, backend="fortran")


def test_a_plant_that_cannot_be_compiled_steps_in_numpy_after_one_warning_line(monkeypatch, capsys):
    monkeypatch.setenv("CC", "")
    monkeypatch.setenv("PATH", "")  # no C compiler
    config = liftoff_config("polishing_horizontal.yaml", PolishingConfig)
    task = make_task(config)
    plant = polishing_plant(config, task)
    reading = plant.reset(task.q0, np.zeros(task.model.nv), np.zeros(task.model.nv)).contacts["tool"]
    assert type(plant._step) is NumpyStep and reading.active and np.all(np.isfinite(reading.force))
    err = capsys.readouterr().err.strip()
    assert err == "liftoff: warning: no C compiler found (set CC or install gcc); the plant steps in numpy"
