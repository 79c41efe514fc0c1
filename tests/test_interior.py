"""The interior-point terms of a lifted group (ocp/interior.py): the compiled pass equals the
numpy reference, and the reference equals the interior point's own arithmetic (ocp/pdipm.py)."""

import copy
import dataclasses
from pathlib import Path

import numpy as np
import pytest

from liftoff.ocp import interior, pdipm
from liftoff.ocp.formulation import Formulation
from liftoff.problems.tasks.config import load_config
from liftoff.problems.tasks.gaits import build_problem
from liftoff.solvers.riccati import riccati

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


@pytest.fixture(scope="module")
def evaluated():
    """Each group of the ANYmal trot (friction cones and joint limits) evaluated at a perturbed
    initial iterate, with random slacks, duals, multipliers and costates."""
    formulation = Formulation(build_problem(load_config(CONFIGS / "anymal_trot.yaml")), "lifted", "numpy")
    it = formulation.initial_iterate(0.1)
    rng = np.random.default_rng(3)
    out = []
    for group, gv in zip(formulation.groups, it.groups):
        idx = group.index
        q, v = it.q[idx], it.v[idx] + 0.1 * rng.standard_normal(it.v[idx].shape)
        u, w = gv.u + rng.standard_normal(gv.u.shape), gv.w + rng.standard_normal(gv.w.shape)
        ev = formulation.stages.evaluate(group, q, v, u, w, it.q[idx + 1], it.v[idx + 1])
        s, z = rng.uniform(0.1, 2.0, gv.s.shape), rng.uniform(0.1, 2.0, gv.z.shape)
        beta, lam, lam_next = (rng.standard_normal(x.shape) for x in (gv.beta, it.lam[idx], it.lam[idx + 1]))
        out.append((ev, s, z, beta, lam, lam_next))
    return out


def _copy(ev):
    return copy.deepcopy(ev)  # the terms write into H


def test_compiled_terms_equal_numpy(evaluated):
    assert any(ev.ineq.ng and len(ev.ineq.bounds) for ev, *_ in evaluated)  # cones and limits both met
    for ev, s, z, beta, lam, lam_next in evaluated:
        reference = interior.terms(_copy(ev), s, z, 0.01, beta, lam, lam_next, "numpy")
        compiled = interior.terms(_copy(ev), s, z, 0.01, beta, lam, lam_next, "compiled")
        for name in ("r_p", "r_c", "H", "g", "stationarity"):
            a, b = getattr(reference, name), getattr(compiled, name)
            scale = max(1.0, float(np.max(np.abs(a), initial=0.0)))
            np.testing.assert_allclose(b, a, rtol=0, atol=1e-12 * scale, err_msg=name)
        assert compiled.squares == pytest.approx(reference.squares, rel=1e-12)
        assert compiled.violation == pytest.approx(reference.violation, rel=1e-12)
        assert compiled.l1 == pytest.approx(reference.l1, rel=1e-12)


def test_compiled_expansion_equals_numpy(evaluated):
    """The slack and dual directions and the fraction-to-boundary steps of a random primal
    direction, on every group (cones, limits, impulse stages without inequalities); directions
    large enough that both steps are cut."""
    rng = np.random.default_rng(8)
    cut = [0, 0]
    for ev, s, z, *_ in evaluated:
        S, ny, nw = len(ev.g), ev.g.shape[1], ev.C.shape[1]
        dxu, dw = 30.0 * rng.standard_normal((S, ny - nw)), 30.0 * rng.standard_normal((S, nw))
        r_p, r_c = pdipm.residuals(ev.ineq.g, s, z, 0.01)
        reference = interior.expand(ev.ineq, dxu, dw, s, z, r_p, r_c, "numpy")
        compiled = interior.expand(ev.ineq, dxu, dw, s, z, r_p, r_c, "compiled", {})
        for a, b in zip(reference[:2], compiled[:2]):
            np.testing.assert_allclose(b, a, rtol=0, atol=1e-12 * max(1.0, float(np.max(np.abs(a), initial=0.0))))
        assert compiled[2] == pytest.approx(reference[2], rel=1e-12)
        cut = [c + (x < 1.0) for c, x in zip(cut, reference[2])]
        ds, dz = pdipm.expand(ev.ineq, np.concatenate((dxu, dw), axis=1), s, z, r_p, r_c)  # the arithmetic itself
        np.testing.assert_array_equal(reference[0], ds)
        np.testing.assert_array_equal(reference[1], dz)
    assert min(cut) > 0


def test_numpy_terms_are_the_interior_point_arithmetic(evaluated):
    """The reference against ocp.pdipm's residuals and condensation, and the stationarity of the
    lifted Lagrangian written out stage by stage."""
    ev, s, z, beta, lam, lam_next = next(e for e in evaluated if e[0].ineq.ng)
    eps, H0 = 0.01, ev.H.copy()
    t = interior.terms(_copy(ev), s, z, eps, beta, lam, lam_next, "numpy")
    G = ev.ineq.jacobian()
    np.testing.assert_array_equal(t.r_p, ev.ineq.g - s)
    np.testing.assert_array_equal(t.r_c, s * z - eps)
    for k in range(len(s)):
        d = z[k] / s[k]
        np.testing.assert_allclose(t.H[k], H0[k] + G[k].T @ (d[:, None] * G[k]), atol=1e-10)
        grad = ev.g[k] - G[k].T @ z[k]
        np.testing.assert_allclose(t.g[k], grad + G[k].T @ ((t.r_c[k] + z[k] * t.r_p[k]) / s[k]), atol=1e-10)
        st = grad + ev.C[k].T @ beta[k] + ev.A[k].T @ lam_next[k]
        st[: lam.shape[1]] -= lam[k]
        np.testing.assert_allclose(t.stationarity[k], st, atol=1e-10)
    parts = (t.stationarity, ev.b, ev.c, t.r_p, t.r_c)
    assert t.squares == pytest.approx(sum(float(np.sum(x**2)) for x in parts), rel=1e-12)
    assert t.violation == max(np.max(np.abs(ev.b)), np.max(np.abs(ev.c)), np.max(-ev.ineq.g), 0.0)
    assert pdipm.residuals(ev.ineq.g, s, z, eps)[0] is not t.r_p  # fresh arrays, not the inputs


def test_violated_inequalities_and_non_finite_residuals(evaluated):
    ev, s, z, beta, lam, lam_next = next(e for e in evaluated if e[0].ineq.ng)
    bent = _copy(ev)
    bent.ineq.g[0, 0] = -1e4  # an inequality violated by more than any equality residual
    for backend in ("numpy", "compiled"):
        assert interior.terms(_copy(bent), s, z, 0.01, beta, lam, lam_next, backend).violation == 1e4
    broken = _copy(ev)
    broken.b[0, 0] = np.nan
    for backend in ("numpy", "compiled"):
        assert not np.isfinite(interior.terms(_copy(broken), s, z, 0.01, beta, lam, lam_next, backend).squares)


def test_terms_bound_to_a_compiled_workspace_follow_its_later_evaluations():
    """The compiled backend's evaluations of a group share their arrays; the terms' call bound to
    them on the first evaluation gives the reference's terms at the next."""
    formulation = Formulation(build_problem(load_config(CONFIGS / "anymal_trot.yaml")), "lifted", quiet=True)
    it = formulation.initial_iterate(0.1)
    rng = np.random.default_rng(5)
    group, gv = formulation.groups[0], it.groups[0]
    idx = group.index
    for _ in range(2):
        u, w = gv.u + rng.standard_normal(gv.u.shape), gv.w + rng.standard_normal(gv.w.shape)
        ev = formulation.stages.evaluate(group, it.q[idx], it.v[idx], u, w, it.q[idx + 1], it.v[idx + 1])
        s, z = rng.uniform(0.1, 2.0, gv.s.shape), rng.uniform(0.1, 2.0, gv.z.shape)
        beta, lam, lam_next = (rng.standard_normal(x.shape) for x in (gv.beta, it.lam[idx], it.lam[idx + 1]))
        reference = interior.terms(_copy(dataclasses.replace(ev, calls=None)), s, z, 0.01, beta, lam, lam_next)
        compiled = interior.terms(ev, s, z, 0.01, beta, lam, lam_next, "compiled")
        for name in ("r_p", "r_c", "H", "g", "stationarity"):
            a, b = getattr(reference, name), getattr(compiled, name)
            np.testing.assert_allclose(b, a, rtol=0, atol=1e-12 * max(1.0, float(np.max(np.abs(a)))), err_msg=name)
    assert "interior" in ev.calls and ev.calls["interior"].arrays[0] is ev.H  # kept, for these blocks
    formulation.linearize(it, 0.1)  # each group's compiled steps in one call (ocp/group.c), kept with its blocks
    assert all(gm.workspace.linearize for gm in formulation.stages.maps.values())


def test_a_compiled_newton_direction_equals_numpy():
    """The trot's first Newton direction, slacks and duals included, and its fraction-to-boundary
    steps, with the compiled backend against numpy; the steps found with a direction are those
    that :meth:`Formulation.max_steps` finds for another iterate with the same values."""
    ocp = build_problem(load_config(CONFIGS / "anymal_trot.yaml"))
    directions = {}
    for backend in ("compiled", "numpy"):
        formulation = Formulation(ocp, "lifted", backend, quiet=True)
        lin, it = formulation.linearize(formulation.initial_iterate(0.1), 0.1)
        d = formulation.direction(it, lin, riccati(lin.lqr, lin.terminal, lin.dx0, backend))
        assert d.origin is it and formulation.max_steps(dataclasses.replace(it), d) == d.steps
        if backend == "compiled":  # the cones' columns by the kernels' structure: the products skip the others
            assert any(0 < len(s.ineq.columns) < s.ineq.G.shape[2] for s in lin.groups if s.ineq.ng)
        directions[backend] = d
    compiled, reference = directions["compiled"], directions["numpy"]
    assert compiled.steps == pytest.approx(reference.steps, rel=1e-9) and min(reference.steps) < 1.0
    for a, b in zip((reference.dx, *sum(reference.groups, ())), (compiled.dx, *sum(compiled.groups, ()))):
        np.testing.assert_allclose(b, a, rtol=0, atol=1e-9 * max(1.0, float(np.max(np.abs(a), initial=0.0))))
