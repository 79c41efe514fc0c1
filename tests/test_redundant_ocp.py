"""Redundant contacts in the OCP: a short ANYmal trot with one foot's contact
listed twice, in every stage where that foot stands and in the impulse stage, solves in both
formulations and both backends to the motion of the plain trot, the pair's forces summing to
the single contact's force and split in equal halves (the least-norm split, that of the
proximal dynamics of seed 000); stages that are not redundant keep the LU condensing.

Without friction cones the two OCPs are the same problem (the duplicate adds no cost and no
constraint on the motion): the solver takes the same Newton steps, up to roundoff, and the
tolerances are 100 times the measured differences. With cones, the duplicated foot carries
two cones, one per copy, on half the force each: the barrier ``-eps sum(log g(f / 2))`` twice is
the plain barrier with ``2 eps`` on that foot, so the optimum moves by O(eps); it is compared
at a barrier decreased to 1e-7 (measured: 5e-10 in q, 8e-8 in v, 7e-6 N in the forces)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import yaml

from liftoff.dynamics import Contact
from liftoff.ocp import condensing
from liftoff.ocp.costs import VariableCost
from liftoff.ocp.formulation import Formulation
from liftoff.problems.tasks.config import parse_config
from liftoff.problems.tasks.gaits import build_problem
from liftoff.solvers.ipm import Options, solve

CONFIG = Path(__file__).resolve().parent.parent / "configs" / "anymal_trot.yaml"
ALL = ["LF_FOOT", "LH_FOOT", "RF_FOOT", "RH_FOOT"]
FOOT = "LH_FOOT"  # the foot listed twice: it stands throughout, and lands in the impulse stage
CASES = [("lifted", "numpy"), ("lifted", "compiled"), ("nonlifted", "numpy"), ("nonlifted", "compiled")]


def short_trot(friction=True):
    """configs/anymal_trot.yaml on 11 knots: double support, one diagonal swing, a touchdown
    (an impulse stage with the four feet), double support."""
    raw = yaml.safe_load(CONFIG.read_text())
    raw["gait"]["phases"] = [
        {"contact": ALL, "knots": 2},
        {"contact": ["LH_FOOT", "RF_FOOT"], "knots": 6},
        {"contact": ALL, "knots": 3},
    ]
    raw["gait"]["horizon"] = 11
    ocp = build_problem(parse_config(raw))
    return ocp if friction else dataclasses.replace(ocp, friction=None)


def duplicated(ocp, foot=FOOT):
    """``ocp`` with ``foot``'s contact listed twice in every stage that has it."""

    def twice(stage):
        contacts = tuple(x for c in stage.contacts for x in ((c, c) if c.frame == foot else (c,)))
        return dataclasses.replace(stage, contacts=contacts)

    return dataclasses.replace(ocp, stages=tuple(twice(s) for s in ocp.stages))


def copies(form, trajectories, foot=FOOT):
    """The two copies' forces ``(f_1, f_2)`` (each ``(n, 3)``) at the stages holding ``foot``."""
    first, second = [], []
    for stage, f in zip(form.ocp.stages, trajectories["f"]):
        rows = [i for i, c in enumerate(stage.contacts) if c.frame == foot]
        if rows:
            assert len(rows) == 2
            first.append(f[3 * rows[0] : 3 * rows[0] + 3])
            second.append(f[3 * rows[1] : 3 * rows[1] + 3])
    return np.array(first), np.array(second)


def solved(ocp, name, backend, options=None):
    form = Formulation(ocp, name, backend, quiet=True)
    result = solve(form, options or Options())
    assert result.status == "converged", result.message
    return form, result, form.trajectories(result.iterate)


@pytest.fixture(scope="module")
def without_cones():
    return short_trot(friction=False)


@pytest.mark.parametrize("name, backend", CASES)
def test_duplicated_foot_reaches_the_plain_optimum(without_cones, name, backend):
    """Measured (each case): the same 16 iterations, cost equal to 1.3e-8 (of 7734), q to 6e-13,
    v to 4e-11, u to 2e-10, each foot's force to 7e-10 N, the copies equal to 1e-12 N."""
    _, plain, ref = solved(without_cones, name, backend)
    form, twice, got = solved(duplicated(without_cones), name, backend)
    assert form.backend == backend
    assert twice.iterations == plain.iterations
    np.testing.assert_allclose(twice.cost, plain.cost, rtol=1e-10)
    np.testing.assert_allclose(got["q"], ref["q"], rtol=0, atol=1e-10)
    np.testing.assert_allclose(got["v"], ref["v"], rtol=0, atol=1e-8)
    np.testing.assert_allclose(got["u"], ref["u"], rtol=0, atol=1e-7)
    for frame in ALL:  # the pair's forces (impulses) sum to the single contact's
        np.testing.assert_allclose(got["forces"][frame], ref["forces"][frame], rtol=0, atol=1e-6)
        np.testing.assert_allclose(got["impulses"][frame], ref["impulses"][frame], rtol=0, atol=1e-7)
    f1, f2 = copies(form, got)
    np.testing.assert_allclose(f1, f2, rtol=0, atol=1e-8)  # the least-norm split: equal halves
    assert np.max(np.abs(f1)) > 1.0


def test_duplicated_foot_with_friction_cones():
    """At the trot's barrier (0.1) the duplicate's two cones weigh that foot's barrier twice: both
    formulations solve to the same (other) optimum with equal halves. At a barrier decreased to
    1e-7 (measured: 5e-10 in q, 8e-8 in v, 1.3e-6 in u, 7e-6 N in the forces, 6e-7 in the cost;
    ten times as much at 1e-6: O(eps)) the motion is the plain one."""
    ocp = short_trot()
    twice = duplicated(ocp)
    lifted, _, got = solved(twice, "lifted", "numpy")
    _, _, other = solved(twice, "nonlifted", "numpy")
    np.testing.assert_allclose(got["q"], other["q"], rtol=0, atol=1e-8)
    f1, f2 = copies(lifted, got)
    np.testing.assert_allclose(f1, f2, rtol=0, atol=1e-8)
    small = Options(barrier_update="adaptive", barrier_min=1e-7, tol=1e-7, max_iterations=100)
    _, plain, ref = solved(ocp, "lifted", "numpy", small)
    form, result, got = solved(twice, "lifted", "numpy", small)
    np.testing.assert_allclose(result.cost, plain.cost, rtol=1e-9)
    np.testing.assert_allclose(got["q"], ref["q"], rtol=0, atol=1e-8)
    np.testing.assert_allclose(got["v"], ref["v"], rtol=0, atol=1e-6)
    for frame in ALL:
        np.testing.assert_allclose(got["forces"][frame], ref["forces"][frame], rtol=0, atol=1e-4)
    f1, f2 = copies(form, got)
    np.testing.assert_allclose(f1, f2, rtol=0, atol=1e-6)


def test_only_redundant_groups_leave_the_lu_condensing(without_cones):
    plain = Formulation(without_cones, "lifted", "numpy")
    assert not any(plain.redundant(g) for g in plain.groups)
    twice = Formulation(duplicated(without_cones), "lifted", "numpy")
    assert all(twice.redundant(g) == any(c.frame == FOOT for c in g.contacts) for g in twice.groups)
    # redundant without a repeated contact: a 3D point inside a 6D contact of the same frame
    group = twice.groups[0]
    extra = (Contact(FOOT, "6D", "LOCAL"), Contact(FOOT, "3D", "LOCAL"))
    stage = dataclasses.replace(group.stages[0], contacts=extra)
    assert twice.redundant(dataclasses.replace(group, stages=(stage,), index=group.index[:1]))


def test_redundant_condensing_is_the_lu_one_on_independent_contacts(without_cones):
    """The pseudo-inverse path on a nonsingular ``Cw`` is the LU path (null space empty)."""
    form = Formulation(without_cones, "lifted", "numpy")
    it = form.initial_iterate(0.1)
    lin, _ = form.linearize(it, 0.1)
    for step in lin.groups:
        st = step.lifted
        lu, svd = condensing.condense(st), condensing.condense_redundant(st)
        for name in ("T", "t", "A", "B", "b", "Q", "l"):
            x, y = getattr(lu, name), getattr(svd, name)
            np.testing.assert_allclose(y, x, rtol=0, atol=1e-8 * max(1.0, np.max(np.abs(x), initial=0.0)))
        rng = np.random.default_rng(0)
        S = len(st.H)
        z, lam = rng.standard_normal((S, st.nx + st.nu)), rng.standard_normal((S, st.nx))
        for x, y in zip(condensing.expand(st, lu, z, lam), condensing.expand(st, svd, z, lam)):
            np.testing.assert_allclose(y, x, rtol=0, atol=1e-8 * max(1.0, np.max(np.abs(x), initial=0.0)))


def test_compiled_backend_refuses_a_force_cost_on_a_duplicated_contact(without_cones):
    stages = list(duplicated(without_cones).stages)
    m = sum(c.dim for c in stages[0].contacts)
    stages[0] = dataclasses.replace(stages[0], costs=stages[0].costs + (VariableCost("f", np.zeros(m), 1e-3, "force"),))
    ocp = dataclasses.replace(without_cones, stages=tuple(stages))
    with pytest.raises(ValueError, match="forces of a contact listed twice"):
        Formulation(ocp, "lifted", "compiled", quiet=True)
    assert solve(Formulation(ocp, "lifted", "numpy"), Options()).status == "converged"


def test_inconsistent_duplicate(without_cones):
    """LH_FOOT held twice toward targets 1 cm apart: the non-lifted formulation (numpy) converges
    to the least-squares motion of its dynamics; the lifted one has no feasible point and says
    so by its status; the compiled backend refuses the OCP before compiling."""

    def apart(stage):
        contacts = []
        for c in stage.contacts:
            contacts.append(c)
            if c.frame == FOOT:
                contacts.append(dataclasses.replace(c, placement=np.asarray(c.placement) + [0.0, 0.0, 0.01]))
        return dataclasses.replace(stage, contacts=tuple(contacts))

    ocp = dataclasses.replace(without_cones, stages=tuple(apart(s) for s in without_cones.stages))
    with pytest.raises(ValueError, match="inconsistent"):
        Formulation(ocp, "lifted", "compiled", quiet=True)
    assert solve(Formulation(ocp, "nonlifted", "numpy"), Options()).status == "converged"
    assert solve(Formulation(ocp, "lifted", "numpy"), Options(max_iterations=10)).status == "max_iterations"
