"""Soft (spring-damper) contacts (seed 002, :mod:`dynamics.soft_contact`): the force law and its
unilateral smoothing, the derivatives of the force and of the forward dynamics with it against
finite differences, the compiled kernels against the numpy reference, an OCP whose contact is
soft solved to convergence, and the configuration's errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml
from conftest import finite_differences
from test_kernels import compare_groups

from liftoff import dynamics
from liftoff.dynamics.soft_contact import normal_force
from liftoff.ocp import symbolic_stages as sym
from liftoff.ocp.costs import FramePositionCost, PlaneDistanceCost, StageVariables, StateCost, VariableCost
from liftoff.ocp.formulation import Formulation
from liftoff.ocp.kernels import CompiledStages
from liftoff.ocp.nlp import build_nlp
from liftoff.ocp.problem import OCP, ContactStage
from liftoff.problems.cli import main
from liftoff.problems.tasks.config import ConfigError, parse_config
from liftoff.problems.tasks.polishing import PolishingConfig, build_ocp, make_task
from liftoff.solvers.ipm import Options, solve

FD_TOL = 1e-6  # relative to max(1, |derivative|)


def richardson(f, x, *fixed, **kw):
    """The one finite-difference helper at two steps, extrapolated (its O(h^2) error removed:
    the smoothed contact law has large higher derivatives)."""
    return (4 * finite_differences(f, x, *fixed, eps=5e-7, **kw) - finite_differences(f, x, *fixed, eps=1e-6, **kw)) / 3


def assert_derivative(ours, fd, tol=FD_TOL, what=""):
    np.testing.assert_allclose(ours, fd, rtol=0, atol=tol * max(1.0, float(np.max(np.abs(fd)))), err_msg=what)


def contact_near(model, q, frame, law, depth, rng):
    """A soft contact of ``frame`` against a random plane ``depth`` beneath its origin at ``q``."""
    _, p = dynamics.frame_placement(model, q, frame)
    n = rng.standard_normal(3)
    n /= np.linalg.norm(n)
    k, c = (2000.0, 30.0) if law == "linear" else (1e5, 0.5)
    return dynamics.SoftContact(frame, p + depth * n, n, k, c, law, 1.5, 0.6, 1e-3, 1.0, 0.05)


@pytest.mark.parametrize("law", ["linear", "hunt_crossley"])
@pytest.mark.parametrize("depth", [3e-3, -1e-3])  # in contact, and just out of it
def test_soft_force_and_forward_dynamics_derivatives_match_finite_differences(law, depth):
    """Solo12's foot (a floating base: q on the manifold) against a tilted plane, with friction:
    the world force, its generalized force and the forward dynamics, in q, v and tau."""
    rng = np.random.default_rng(7)
    model = dynamics.load("solo12")
    for _ in range(2):
        q = dynamics.random_configuration(model, rng=rng)
        v, tau = 0.1 * rng.standard_normal(model.nv), rng.standard_normal(model.nv)
        c = contact_near(model, q, "FL_FOOT", law, depth, rng)
        state = dynamics.soft_contact_state(model, q, v, c, derivatives=True)
        assert (state.f_n > 1.0) == (depth > 0)

        def F(q_, v_):
            return dynamics.soft_contact_state(model, q_, v_, c).F

        def generalized(q_, v_):
            return dynamics.soft_contact_forces(model, q_, v_, c)[1]

        def a(q_, v_, tau_):
            return dynamics.soft_forward_dynamics(model, q_, v_, tau_, c)

        da_dq, da_dv, da_dtau = dynamics.soft_forward_dynamics_derivatives(model, q, v, tau, c)
        checks = [
            (state.dF_dq, richardson(lambda x: F(x, v), q, model=model, wrt="configuration"), "dF_dq"),
            (state.dF_dv, richardson(lambda x: F(q, x), v), "dF_dv"),
            (state.dtau_dq, richardson(lambda x: generalized(x, v), q, model=model, wrt="configuration"), "dtau_dq"),
            (state.dtau_dv, richardson(lambda x: generalized(q, x), v), "dtau_dv"),
            (da_dq, richardson(lambda x: a(x, v, tau), q, model=model, wrt="configuration"), "da_dq"),
            (da_dv, richardson(lambda x: a(q, x, tau), v), "da_dv"),
            (da_dtau, richardson(lambda x: a(q, v, x), tau), "da_dtau"),
        ]
        for ours, fd, what in checks:
            assert_derivative(ours, fd[0], tol=FD_TOL if what[1] != "a" else 2e-6, what=f"{law}: {what}")


def test_soft_forward_dynamics_is_the_aba_with_the_contact_force_applied():
    rng = np.random.default_rng(3)
    model = dynamics.load("ur5")
    q = dynamics.random_configuration(model, rng=rng, size=4)
    v, tau = rng.standard_normal((2, 4, model.nv))
    c = contact_near(model, q[0], "tool0", "linear", 2e-3, rng)
    F, tau_c = dynamics.soft_contact_forces(model, q, v, [c])
    J = dynamics.frame_jacobian(model, q, "tool0", "LOCAL_WORLD_ALIGNED")[:, :3]
    np.testing.assert_allclose(tau_c, np.einsum("bxn,bx->bn", J, F[:, 0]), atol=1e-12)
    M, h = dynamics.crba(model, q), dynamics.nonlinear_effects(model, q, v)
    expected = np.linalg.solve(M, (tau - h + tau_c)[..., None])[..., 0]
    np.testing.assert_allclose(dynamics.soft_forward_dynamics(model, q, v, tau, c), expected, atol=1e-9)


@pytest.mark.parametrize("law", ["linear", "hunt_crossley"])
def test_the_smoothed_law_is_unilateral_and_the_exact_one_in_contact(law):
    """No force out of contact, never a pull, and the exact law (``k d + c d_dot``, ``k d^e (1 +
    c d_dot)``) within ``w^2 / (4 phi)`` once ``d >> delta``."""
    k, damping = (1e4, 50.0) if law == "linear" else (1e6, 0.8)
    c = dynamics.SoftContact("tool0", (0, 0, 0), (0, 0, 1), k, damping, law)
    d = np.array([-0.05, -2e-3, 2e-3, 5e-3, 5e-3, 1e-2])
    d_dot = np.array([1.0, 0.5, 0.0, 0.1, -10.0, -0.2])  # the fifth separates fast: the damper would pull
    f, _, _ = normal_force(c, d, d_dot)
    assert np.all(f >= 0)
    assert np.all(f[:2] < 1e-6)  # out of contact
    assert f[4] < 1e-3  # clamped: no pull
    d_in = np.maximum(d, 0.0)
    exact = k * d_in + damping * d_dot if law == "linear" else k * d_in**c.exponent * (1 + damping * d_dot)
    for i in (2, 3, 5):
        assert exact[i] > 10
        np.testing.assert_allclose(f[i], exact[i], rtol=0, atol=c.force_width**2 / (4 * exact[i]) * 1.01)


def test_bad_soft_contacts_are_refused():
    for kwargs, message in [
        (dict(stiffness=-1.0), "stiffness must be a finite number > 0"),
        (dict(stiffness=1.0, damping=-2.0), "damping must be a finite number >= 0"),
        (dict(stiffness=1.0, law="springy"), "unknown law 'springy'"),
        (dict(stiffness=1.0, normal=(0, 0, 0)), "normal must be a non-zero direction"),
        (dict(stiffness=1.0, law="hunt_crossley", exponent=0.5), "exponent must be a finite number >= 1"),
    ]:
        with pytest.raises(ValueError, match=message):
            dynamics.SoftContact("tool0", (0, 0, 0), kwargs.pop("normal", (0, 0, 1)), **kwargs)


# ----------------------------------------------------------------------------- the OCP


def ur5_soft_ocp():
    """Three stages of UR5 with two soft slots (a linear law on the tool, Hunt-Crossley on the
    wrist), present in some stages and absent from others, and the penetration cost."""
    model = dynamics.load("ur5")
    q0 = dynamics.neutral(model) + 0.3
    _, p = dynamics.frame_placement(model, q0, "tool0")
    _, p2 = dynamics.frame_placement(model, q0, "wrist_3_link")
    n = np.array([0.2, -0.1, 1.0]) / np.linalg.norm([0.2, -0.1, 1.0])
    lin = dynamics.SoftContact("tool0", p + 2e-3 * n, n, 3000.0, 40.0, friction=0.5, depth_width=1e-3, force_width=1.0)
    hc = dynamics.SoftContact(
        "wrist_3_link", p2 + [0, 0, 2e-3], (0, 0, 1), 1e5, 0.5, "hunt_crossley", 1.5, 0.3, 1e-3, 1.0, 0.05
    )
    zero = np.zeros(model.nv)
    costs = (
        StateCost(q0, zero, 1.0),
        VariableCost("u", zero, 1e-3 * np.ones(model.nv)),
        PlaneDistanceCost("tool0", lin.normal, np.array([n @ p - 0.01]), np.array([10.0]), "depth"),
        FramePositionCost("tool0", p, np.ones(3), "tool"),
    )
    stages = [
        ContactStage((), 0.01, costs, soft=(lin, hc)),
        ContactStage((), 0.01, costs, soft=(lin,)),
        ContactStage((), 0.01, costs[:2]),
    ]
    return OCP(model, q0, zero, stages, (StateCost(q0, zero, 1.0),), None), lin


def test_compiled_soft_contact_stages_equal_numpy():
    """Every output of the compiled contact, forward and terminal kernels equals the numpy
    reference to 1e-10 (test_kernels.compare_groups), with the contacts in and out of touch."""
    ocp, lin = ur5_soft_ocp()
    rng = np.random.default_rng(0)
    compiled = CompiledStages(ocp, forward=True, quiet=True)
    assert compiled.layout.soft == (("tool0", "linear"), ("wrist_3_link", "hunt_crossley"))
    assert compare_groups(ocp, compiled, rng) == ocp.K  # the forward dynamics of every stage too
    touching = dynamics.soft_contact_state(ocp.model, ocp.q0, ocp.v0, lin).f_n
    assert touching > 1.0  # the knots spread around q0: some pressing, some not


def test_a_rigid_ocp_has_no_soft_inputs():
    """A soft slot costs only when used: without soft contacts the layout has none, and the
    kernels' inputs are those of before."""
    ocp, _ = ur5_soft_ocp()
    rigid = OCP(ocp.model, ocp.q0, ocp.v0, [ContactStage((), 0.01, ocp.stages[2].costs)], ocp.terminal_costs, None)
    layout = sym.layout(rigid)
    assert layout.soft == () and sym._soft_inputs(layout) == {}
    assert sym.soft_parameters(layout, (), 3).shape == (3, 0)


def test_the_nlp_baseline_refuses_soft_contacts():
    ocp, _ = ur5_soft_ocp()
    with pytest.raises(ValueError, match="soft contacts is not built"):
        build_nlp(ocp)


def polishing(**contacts):
    config = parse_config(
        {
            "task": "polishing",
            "surface": {"friction": 0.3},
            "contacts": {"model": "soft", "stiffness": 1e4, "damping": 300.0, **contacts},
            "mpc": {"horizon": 20},
        },
        "<config>",
        PolishingConfig,
    )
    return make_task(config)


@pytest.mark.parametrize("formulation", ["lifted", "nonlifted"])
def test_polishing_with_a_soft_table_converges_to_the_force_of_its_penetration(formulation):
    """Talos's arm pressing 30 N on the table through a soft contact (k = 1e4 N/m, c = 300 N
    s/m, friction 0.3, regularized): both formulations converge, to one solution, and once the
    pad has settled its force is ``k d``, the target force, within 0.05 N."""
    task = polishing()
    ocp = build_ocp(task)
    result = solve(Formulation(ocp, formulation, "numpy"), Options(barrier=1e-3, tol=1e-6, max_iterations=60))
    assert result.status == "converged", result.message
    assert result.iterations <= 30
    it = result.iterate
    contact = task.soft_contact()
    state = dynamics.soft_contact_state(task.model, it.q, it.v, contact)
    settled = slice(4, ocp.K - 4)
    depth, _ = task.penetration()
    np.testing.assert_allclose(depth, 30.0 / contact.stiffness, rtol=1e-5)  # the smoothing's w^2 / (4 k d)
    np.testing.assert_allclose(state.d[settled], depth, atol=2e-5)
    np.testing.assert_allclose(contact.stiffness * state.d[settled], 30.0, atol=0.05)
    np.testing.assert_allclose(state.f_n[settled], 30.0, atol=0.05)


def test_polishing_soft_compiled_solve_is_the_numpy_one():
    task = polishing(law="hunt_crossley", stiffness=5e5, damping=10.0)
    ocp = build_ocp(task)
    options = Options(barrier=1e-3, tol=1e-5, max_iterations=60)  # above the roundoff floor (1e-6) of both
    results = [solve(Formulation(ocp, "lifted", backend, quiet=True), options) for backend in ("numpy", "compiled")]
    assert [r.status for r in results] == ["converged", "converged"]
    assert results[0].iterations == results[1].iterations
    for name in ("q", "v", "tau"):
        np.testing.assert_allclose(getattr(results[1].iterate, name), getattr(results[0].iterate, name), atol=1e-8)
    state = dynamics.soft_contact_state(task.model, results[1].iterate.q, results[1].iterate.v, task.soft_contact())
    np.testing.assert_allclose(state.f_n[4:-4], 30.0, atol=0.05)  # k d^1.5 at rest


@pytest.mark.parametrize(
    "contacts, message",
    [
        ({"stiffness": -1e4}, "<config>: contacts.stiffness: expected a number > 0, got -10000.0"),
        ({"damping": 0}, "<config>: contacts.damping: expected a number > 0, got 0.0"),
        ({"model": "spongy"}, "<config>: contacts.model: expected rigid or soft, got 'spongy'"),
        ({"law": "hertz"}, "<config>: contacts.law: expected linear or hunt_crossley, got 'hertz'"),
        ({"exponent": 5}, "<config>: contacts.exponent: expected a number <= 3, got 5.0"),
        ({"stiff": 1}, None),
    ],
)
def test_a_bad_soft_contact_configuration_is_one_line_with_its_key_path(contacts, message):
    with pytest.raises(ConfigError) as error:
        parse_config({"task": "polishing", "contacts": {"model": "soft", **contacts}}, "<config>", PolishingConfig)
    text = str(error.value)
    assert "\n" not in text and text.startswith("<config>: contacts")
    if message is not None:
        assert text == message


def test_the_penetration_cost_residual_and_its_jacobian():
    """``PlaneDistanceCost``: ``n . p(q) - reference`` and its Jacobian in ``dq`` by finite
    differences on the manifold (a floating base)."""
    rng = np.random.default_rng(5)
    model = dynamics.load("solo12")
    q = dynamics.random_configuration(model, rng=rng, size=3)
    n = np.array([[0.0, 0.0, 1.0], [0.6, 0.0, 0.8], [0.0, -0.6, 0.8]])
    term = PlaneDistanceCost("FL_FOOT", n, np.array([[0.1], [0.0], [-0.2]]), np.ones(1))

    def residual(q_):
        z = StageVariables(q_, np.zeros((len(q_), model.nv)), *(np.zeros((len(q_), 0)),) * 3)
        return term.residual(model, z)

    r, R = residual(q)
    _, p = dynamics.frame_placement(model, q, "FL_FOOT")
    np.testing.assert_allclose(r[:, 0], np.sum(n * p, axis=1) - [0.1, 0.0, -0.2], atol=1e-14)
    for i in range(3):
        single = PlaneDistanceCost("FL_FOOT", n[i], np.array([0.0]), np.ones(1))

        def distance(x, single=single):
            z = StageVariables(x, np.zeros((len(x), model.nv)), *(np.zeros((len(x), 0)),) * 3)
            return single.residual(model, z)[0]

        fd = finite_differences(distance, q[i], model=model, wrt="configuration")[0]
        assert_derivative(R[i, :, : model.nv], fd, tol=1e-8, what="d(n . p)/dq")


def test_liftoff_mpc_runs_a_soft_polishing_configuration_and_solve_refuses_it(tmp_path, capsys):
    """The soft table through ``liftoff mpc`` (0.3 s against liftoff's plant with the same soft
    contact: the model is right, the force is held); ``liftoff solve`` takes gait configurations
    only and refuses it in one line (``liftoff compare`` takes it: tests/test_cli_compare.py)."""
    path = tmp_path / "soft.yaml"
    soft = {"model": "soft", "stiffness": 1e4, "damping": 300.0}
    data = {
        "task": "polishing",
        "contacts": soft,
        "mpc": {"horizon": 20, "duration": 0.3},
        "plant": {"engine": "liftoff", "contact": soft},
    }
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    assert main(["mpc", str(path), "--out", str(tmp_path / "out"), "--json"]) == 0
    m = json.loads(capsys.readouterr().out)
    assert m["status"] == "completed" and m["contact_lost_fraction"] == 0
    assert m["force_rms_error_N"] < 1.0  # 0.31 N measured (the circle still starting: 19 mm)
    assert main(["solve", str(path), "--out", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "a task: polishing configuration runs with liftoff mpc" in err
