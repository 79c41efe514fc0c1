"""The disturbance observer's residual: zero on Pinocchio's forward dynamics with point forces
and joint friction, the compiled kernel equal to the numpy reference, and the filter's estimate."""

from dataclasses import replace

import numpy as np
import pinocchio as pin
import pytest
from conftest import load_pair

from liftoff import dynamics
from liftoff.dynamics import codegen
from liftoff.dynamics.codegen import CompileError
from liftoff.problems.mpc.observer import DisturbanceObserver
from liftoff.problems.mpc.plants import ContactReading, Measurement

DT, WIDTH = 1e-3, 0.05
CASES = {"ur5": ("wrist_2_link", "tool0"), "solo12": ("FL_FOOT", "HR_FOOT")}


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request):
    """``(model with joint damping and friction, Pinocchio's model, frames, compiled observer)``."""
    model, pmodel = load_pair(request.param)
    rng = np.random.default_rng(7)
    model = replace(model, damping=rng.uniform(0.1, 1.0, model.nv), friction=rng.uniform(0.1, 2.0, model.nv))
    frames = CASES[request.param]
    observer = DisturbanceObserver(model, DT, 0.02, WIDTH, None, frames, "compiled", quiet=True)
    assert observer.kernel is not None
    return model, pmodel, frames, observer


def _step(model, pmodel, frames, rng):
    """A random state, torques and point forces near ``frames``, and ``v_next`` from them."""
    q = dynamics.random_configuration(model, rng, 1)[0]
    v, tau = rng.standard_normal(model.nv), rng.standard_normal(model.nv - (6 if model.has_free_flyer else 0))
    placements = {f: dynamics.frame_placement(model, q, f)[1] for f in frames}
    forces = [(f, placements[f] + rng.uniform(-0.05, 0.05, 3), 20 * rng.standard_normal(3)) for f in frames]
    return q, v, _next_velocity(model, pmodel, q, v, tau, forces), tau, forces


def _next_velocity(model, pmodel, q, v, tau, forces):
    """``v + dt a``, ``a`` from Pinocchio's forward dynamics under the joint torques ``tau``, the
    point ``forces`` and the joints' damping and friction (written out)."""
    data = pmodel.createData()
    pin.forwardKinematics(pmodel, data, q)
    fext = [pin.Force.Zero() for _ in range(pmodel.njoints)]
    for frame, point, force in forces:
        joint = pmodel.frames[pmodel.getFrameId(frame)].parentJoint
        fext[joint] += data.oMi[joint].actInv(pin.Force(force, np.cross(point, force)))  # the world wrench at 0
    passive = -model.damping * v - model.friction * np.tanh(v / WIDTH)
    generalized = np.concatenate((np.zeros(6), tau)) if model.has_free_flyer else tau
    return v + DT * pin.aba(pmodel, data, q, v, generalized + passive, fext)


def test_the_residual_of_a_step_that_follows_the_model_is_zero(case, rng):
    model, pmodel, frames, observer = case
    for _ in range(5):
        q, v, v_next, tau, forces = _step(model, pmodel, frames, rng)
        scale = np.max(np.abs(dynamics.rnea(model, q, v, (v_next - v) / DT)))
        assert np.max(np.abs(observer.reference_residual(q, v, v_next, tau, forces))) < 1e-9 * scale
        assert np.max(np.abs(observer.kernel([q], [v], [v_next], [tau], [forces]))) < 1e-9 * scale


def test_the_compiled_residual_equals_the_numpy_reference(case, rng):
    """Five steps the model does not explain, in one call of the kernel."""
    model, pmodel, frames, observer = case
    steps = [_step(model, pmodel, frames, rng) for _ in range(5)]
    steps = [(q, v, rng.standard_normal(model.nv), tau, forces) for q, v, _, tau, forces in steps]
    reference = [observer.reference_residual(*step) for step in steps]
    assert min(np.max(np.abs(r)) for r in reference) > 1.0
    np.testing.assert_allclose(observer.kernel(*map(list, zip(*steps))), reference, rtol=0, atol=1e-10)


def test_the_estimate_follows_a_constant_torque_error_through_its_filter(case, rng):
    """Both backends: a plant with a constant extra joint torque ``b`` gives residuals ``S b`` (a
    force the model misses); the estimate after ``n`` steps is ``(1 - (1 - gain)^n) S b``."""
    model, pmodel, frames, compiled = case
    q, v, _, tau, forces = _step(model, pmodel, frames, rng)
    bias = rng.standard_normal(len(tau))
    v_next = _next_velocity(model, pmodel, q, v, tau + bias, forces)
    before, after = Measurement(q, v, tau), Measurement(q, v_next, tau)
    numpy = DisturbanceObserver(model, DT, 0.02, WIDTH, lambda t, m: forces, frames, "numpy")
    compiled.contact_forces, compiled.estimate = (lambda t, m: forces), np.zeros(model.nv)
    for observer in (numpy, compiled):
        for k in range(0, 10, 5):  # the steps of a period together
            observer.observe([(k + i) * DT for i in range(5)], [before] * 5, [None] * 5, [after] * 5)
        expected = (1 - (1 - observer.gain) ** 10) * (observer.S @ bias)
        np.testing.assert_allclose(observer.estimate, expected, rtol=0, atol=1e-8 * np.max(np.abs(expected)))


def test_forces_at_other_frames_than_the_kernels_are_refused(case, rng):
    model, pmodel, frames, observer = case
    q, v, v_next, tau, forces = _step(model, pmodel, frames, rng)
    with pytest.raises(ValueError, match="made for forces at"):
        observer.kernel([q], [v], [v_next], [tau], [forces[::-1]])
    with pytest.raises(ValueError, match="made for forces at"):
        observer.kernel([q, q], [v, v], [v_next, v_next], [tau, tau], [forces, forces[:1]])


def test_the_polishing_task_models_the_pads_normal_force_and_its_sliding_friction():
    """The polishing task's modelled forces at the pad: the normal force along the normal, and
    the sliding friction against the circle's tangent at that force."""
    from pathlib import Path

    from liftoff.problems.tasks.config import load_config
    from liftoff.problems.tasks.polishing import TOOL_FRAME, PolishingConfig, make_task

    config = load_config(Path(__file__).resolve().parents[1] / "configs" / "polishing_horizontal.yaml", PolishingConfig)
    task = make_task(config)
    reading = ContactReading(True, np.array([1.0, -2.0, 25.0]), np.array([0.1, 0.2, 0.3]))
    ((frame, point, force),) = task.modelled_forces(0.4, Measurement(task.q0, task.v0, None, {"tool": reading}))
    tangent = np.array([-np.sin(0.4), np.cos(0.4), 0.0])  # the circle's direction at 1 rad/s from angle 0
    assert frame == TOOL_FRAME and np.array_equal(point, reading.position)
    np.testing.assert_allclose(force, 25.0 * np.array([0.0, 0.0, 1.0]) - 0.3 * 25.0 * tangent, atol=1e-12)
    np.testing.assert_allclose(task.tangents(np.array([0.4, 1.0])), [tangent, task.tangents(1.0)], atol=1e-15)


def test_an_observer_without_a_compiler_runs_in_numpy_with_one_warning(case, rng, monkeypatch, capsys):
    model, pmodel, frames, _ = case

    def no_compiler(*args, **kwargs):
        raise CompileError("no C compiler")

    monkeypatch.setattr(codegen, "load", no_compiler)
    q, v, v_next, tau, forces = _step(model, pmodel, frames, rng)
    observer = DisturbanceObserver(model, DT, 0.02, WIDTH, lambda t, m: forces, frames)
    err = capsys.readouterr().err
    assert observer.kernel is None and err.count("\n") == 1
    assert "no C compiler; the disturbance observer runs in numpy" in err
    observer.observe([0.0], [Measurement(q, v, tau)], [None], [Measurement(q, v_next, tau)])
    expected = observer.gain * observer.reference_residual(q, v, v_next, tau, forces)
    np.testing.assert_allclose(observer.estimate, expected, rtol=0, atol=1e-12)
