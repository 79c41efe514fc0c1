"""The disturbance observer's residual: zero on Pinocchio's forward dynamics with point forces
and joint friction, the compiled kernel equal to the numpy reference, and the filter's estimate."""

from dataclasses import replace
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
from conftest import load_pair

from liftoff import dynamics
from liftoff.dynamics import codegen
from liftoff.dynamics.codegen import CompileError
from liftoff.problems.mpc.observer import DisturbanceObserver
from liftoff.problems.mpc.plants import ROW, ContactReading, ContactReadings, Measurement, Steps, reading_row
from liftoff.problems.mpc.polishing_run import pad_forces
from liftoff.problems.tasks.config import load_config
from liftoff.problems.tasks.polishing import TOOL_FRAME, PolishingConfig, make_task

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
    points = np.array([dynamics.frame_placement(model, q, f)[1] + rng.uniform(-0.05, 0.05, 3) for f in frames])
    forces = 20 * rng.standard_normal((len(frames), 3))
    return q, v, _next_velocity(model, pmodel, q, v, tau, zip(frames, points, forces)), tau, points, forces


def _next_velocity(model, pmodel, q, v, tau, forces):
    """``v + dt a``, ``a`` from Pinocchio's forward dynamics under the joint torques ``tau``, the
    point forces ``forces`` ``[(frame, point, force)]`` and the joints' damping and friction
    (written out)."""
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
        q, v, v_next, tau, points, forces = _step(model, pmodel, frames, rng)
        scale = np.max(np.abs(dynamics.rnea(model, q, v, (v_next - v) / DT)))
        assert np.max(np.abs(observer.reference_residual(q, v, v_next, tau, points, forces))) < 1e-9 * scale
        assert np.max(np.abs(observer.kernel([q], [v], [v_next], [tau], [points], [forces]))) < 1e-9 * scale


def test_the_compiled_residual_equals_the_numpy_reference(case, rng):
    """Five steps the model does not explain, in one call of the kernel."""
    model, pmodel, frames, observer = case
    steps = [_step(model, pmodel, frames, rng) for _ in range(5)]
    steps = [(q, v, rng.standard_normal(model.nv), tau, *loads) for q, v, _, tau, *loads in steps]
    reference = [observer.reference_residual(*step) for step in steps]
    assert min(np.max(np.abs(r)) for r in reference) > 1.0
    np.testing.assert_allclose(observer.kernel(*map(list, zip(*steps))), reference, rtol=0, atol=1e-10)


def test_the_estimate_follows_a_constant_torque_error_through_its_filter(case, rng):
    """Both backends: a plant with a constant extra joint torque ``b`` gives residuals ``S b`` (a
    force the model misses); the estimate after ``n`` steps is ``(1 - (1 - gain)^n) S b``."""
    model, pmodel, frames, compiled = case
    q, v, _, tau, points, forces = _step(model, pmodel, frames, rng)
    bias = rng.standard_normal(len(tau))
    first = _steps(model, pmodel, frames, (q, v), tau + bias, tau, (points, forces), 5)
    second = _steps(model, pmodel, frames, (first.q[-1], first.v[-1]), tau + bias, tau, (points, forces), 5)
    numpy = DisturbanceObserver(model, DT, 0.02, WIDTH, _constant(points, forces), frames, "numpy")
    compiled.contact_forces, compiled.estimate = _constant(points, forces), np.zeros(model.nv)
    for observer in (numpy, compiled):
        for steps in (first, second):  # the steps of a period together
            observer.observe(steps)
        expected = (1 - (1 - observer.gain) ** 10) * (observer.S @ bias)
        np.testing.assert_allclose(observer.estimate, expected, rtol=0, atol=1e-9 * _scale(model, first, second))


def _scale(model, *blocks) -> float:
    """The largest inverse-dynamics torque of the steps of ``blocks`` (the residuals' round-off is relative to it)."""
    return max(
        float(np.max(np.abs(dynamics.rnea(model, b.q[j], b.v[j], (b.v[j + 1] - b.v[j]) / DT))))
        for b in blocks
        for j in range(b.size)
    )


def _steps(model, pmodel, frames, start, applied, measured, loads, n) -> Steps:
    """``n`` consecutive plant steps (Pinocchio's dynamics, :func:`_next_velocity`) from the state
    ``start`` under the joint torques ``applied``, the torques ``measured`` (a torque filter's
    state), and the point ``forces`` at ``points`` (``loads``) at ``frames``: :class:`Steps`."""
    qs, vs = [start[0]], [start[1]]
    for _ in range(n):
        vs.append(_next_velocity(model, pmodel, qs[-1], vs[-1], applied, zip(frames, *loads)))
        qs.append(dynamics.integrate(model, qs[-1], DT * vs[-1]))
    taus = np.tile(measured, (n + 1, 1))
    return Steps(DT * np.arange(n), taus[:-1], np.array(qs), np.array(vs), taus, np.zeros((n, 0, ROW)),
                 np.zeros((n, 2)), {})  # fmt: skip


def _constant(points, forces):
    """A ``contact_forces`` that gives the point ``forces`` at ``points`` at every step."""
    return lambda steps: (np.array([points] * steps.size), np.array([forces] * steps.size))


def test_forces_at_more_or_fewer_frames_than_the_kernels_are_refused(case, rng):
    model, pmodel, frames, observer = case
    q, v, v_next, tau, points, forces = _step(model, pmodel, frames, rng)
    with pytest.raises(ValueError, match=r"made for \(1, 2, 3\): forces at"):
        observer.kernel([q], [v], [v_next], [tau], [points[:1]], [forces[:1]])
    with pytest.raises(ValueError, match=r"made for \(2, 2, 3\): forces at"):
        observer.kernel([q, q], [v, v], [v_next, v_next], [tau, tau], [points] * 2, [forces])


def _polishing(name):
    return make_task(load_config(Path(__file__).resolve().parents[1] / "configs" / name, PolishingConfig))


def test_the_polishing_task_models_the_pads_normal_force_and_its_sliding_friction():
    """The polishing task's modelled forces at the pad over two steps: the normal force along the
    normal, and the sliding friction against the circle's tangent at that force."""
    task = _polishing("polishing_horizontal.yaml")
    measured, at = np.array([[1.0, -2.0, 25.0], [0.5, 0.0, 10.0]]), np.array([[0.1, 0.2, 0.3], [0.0, 0.1, 0.3]])
    q, v = np.array([task.q0] * 2), np.array([task.v0] * 2)
    points, forces = task.modelled_forces(np.array([0.4, 1.0]), measured, at, q, v)
    tangents = np.array([[-np.sin(t), np.cos(t), 0.0] for t in (0.4, 1.0)])  # the circle at 1 rad/s from angle 0
    assert points.shape == forces.shape == (2, 1, 3) and np.array_equal(points[:, 0], at)
    expected = np.array([[0.0, 0.0, 25.0], [0.0, 0.0, 10.0]]) - 0.3 * np.array([25.0, 10.0])[:, None] * tangents
    np.testing.assert_allclose(forces[:, 0], expected, atol=1e-12)


def test_the_observer_reads_the_pads_forces_from_either_kind_of_readings():
    """``pad_forces`` reads the pad's force and point from a plant's steps, their readings made
    from a dict of :class:`ContactReading` or from :class:`ContactReadings` rows with other
    contacts, alike."""
    task = _polishing("polishing_horizontal.yaml")
    pad = [ContactReading(True, np.array([0.0, 0.0, f]), np.array([0.1, 0.2, 0.3 + f])) for f in (25.0, 10.0)]
    idle = reading_row(ContactReading(False, np.zeros(3), np.zeros(3)))
    rows = [ContactReadings({"other": 0, "tool": 1}, np.array([idle, reading_row(r)])) for r in pad]
    tangents = np.array([[-np.sin(t), np.cos(t), 0.0] for t in (0.4, 1.0)])  # the circle at 1 rad/s from angle 0
    expected = np.array([[0.0, 0.0, 25.0], [0.0, 0.0, 10.0]]) - 0.3 * np.array([25.0, 10.0])[:, None] * tangents
    state, u = Measurement(task.q0, task.v0), np.zeros(task.model.nv)
    for names, contacts in ((("tool",), [{"tool": r} for r in pad]), (("other", "tool"), rows)):
        afters = [Measurement(task.q0, task.v0, None, c) for c in contacts]
        steps = Steps.joined([Steps.one(state, t, u, a, (0.0, 0.0), names) for t, a in zip((0.4, 1.0), afters)])
        points, forces = pad_forces(task)(steps)
        np.testing.assert_array_equal(points[:, 0], [r.position for r in pad])
        np.testing.assert_allclose(forces[:, 0], expected, atol=1e-12)


def test_the_soft_polishing_task_models_the_friction_of_the_pads_sliding_velocity_where_it_presses(rng):
    """Soft contact: the regularized Coulomb friction ``-mu N v_t / sqrt(|v_t|^2 + w^2)`` on the
    pad's velocity along the surface at a pressing step; none at a step that pulls."""
    task = _polishing("polishing_soft.yaml")
    contact, n = task.soft_contact(), np.array([0.0, 0.0, 1.0])
    q, v = np.array([task.q0] * 2), rng.standard_normal((2, task.model.nv))
    measured, at = np.array([[0.0, 0.0, 25.0], [0.0, 0.0, -4.0]]), np.zeros((2, 3))
    _, forces = task.modelled_forces(np.array([0.4, 0.401]), measured, at, q, v)
    J = dynamics.frame_jacobian(task.model, task.q0, TOOL_FRAME, "LOCAL_WORLD_ALIGNED")[:3]
    v_t = J @ v[0] - (J @ v[0])[2] * n
    assert contact.friction == 0.3 and np.linalg.norm(v_t) > 0.1
    friction = 0.3 * 25.0 * v_t / np.sqrt(v_t @ v_t + contact.slip_width**2)
    np.testing.assert_allclose(forces[:, 0], [25.0 * n - friction, -4.0 * n], atol=1e-12)


def test_an_observer_without_a_compiler_runs_in_numpy_with_one_warning(case, rng, monkeypatch, capsys):
    model, pmodel, frames, _ = case

    def no_compiler(*args, **kwargs):
        raise CompileError("no C compiler")

    monkeypatch.setattr(codegen, "load", no_compiler)
    q, v, v_next, tau, points, forces = _step(model, pmodel, frames, rng)
    observer = DisturbanceObserver(model, DT, 0.02, WIDTH, _constant(points, forces), frames)
    err = capsys.readouterr().err
    assert observer.kernel is None and err.count("\n") == 1
    assert "no C compiler; the disturbance observer runs in numpy" in err
    observer.observe(Steps.one(Measurement(q, v, tau), 0.0, tau, Measurement(q, v_next, tau), (0.0, 0.0), ()))
    expected = observer.gain * observer.reference_residual(q, v, v_next, tau, points, forces)
    np.testing.assert_allclose(observer.estimate, expected, rtol=0, atol=1e-12)
