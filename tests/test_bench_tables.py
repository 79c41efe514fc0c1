"""``liftoff bench constrained --tables`` (seed 003 Table II, Fig. 2) and ``--whiskers`` (Fig. 4) on
small cases: the rows' contact sets, their agreement with Pinocchio, the split of the time, the
residuals' decrease, and the command's refusals (the benchmarks themselves are commands)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from liftoff import dynamics
from liftoff.problems.bench import tables
from liftoff.problems.bench.common import MAX_CONDITION, import_pinocchio, pinocchio_model, regular_states
from liftoff.problems.bench.constrained import contacts_of
from liftoff.problems.bench.tables import TABLE_CASES
from liftoff.problems.cli import main

ROBOTS = ("panda", "solo12", "talos_full", "g1_hands")


def test_regular_states_are_away_from_singular_configurations():
    model = dynamics.load("panda")
    contacts = contacts_of(TABLE_CASES[("panda", "H6")])
    q, v, tau = regular_states(model, contacts, 12, seed=0)
    assert q.shape == (12, model.nq) and v.shape == tau.shape == (12, model.nv)
    condition = np.linalg.cond(dynamics.delassus(model, q, contacts)[0])
    assert np.all(condition < MAX_CONDITION)
    again = regular_states(model, contacts, 12, seed=0)
    np.testing.assert_array_equal(again[0], q)  # reproducible from the seed


def paper_dimension(name):
    """The rows a set named as the paper does stands for: ``F6^2 T3^3`` is 2 x 6 + 3 x 3."""
    return sum(int(dim) * int(count or 1) for dim, count in re.findall(r"[HFT](\d)(?:\^(\d+))?", name))


def test_every_robot_has_several_contact_sets_of_the_stated_dimension():
    assert [robot for robot, _ in TABLE_CASES] == [r for r in ROBOTS for _ in range(3 if r == "g1_hands" else 2)]
    dims = {}
    for (robot, name), parts in TABLE_CASES.items():
        contacts = contacts_of(parts)
        dims[(robot, name)] = sum(c.dim for c in contacts)
        assert dims[(robot, name)] == paper_dimension(name) == tables.set_dimension(parts), (robot, name)
        assert len({c.frame for c in contacts}) == len(contacts)  # each frame once
    assert dims[("g1_hands", "F6^2 T3^6")] == 30 and dims[("talos_full", "F6^2 H6^2")] == 24


@pytest.fixture(scope="module")
def pin():
    return import_pinocchio()


@pytest.mark.parametrize("robot", ROBOTS)
def test_every_row_agrees_with_pinocchio(pin, robot):
    """``check_case`` raises beyond the tolerance; its largest errors are small."""
    model = dynamics.load(robot)
    pmodel = pinocchio_model(pin, model, robot)
    for r, name in TABLE_CASES:
        if r != robot:
            continue
        contacts = contacts_of(TABLE_CASES[(robot, name)])
        limit = tables.CONDITION.get(robot, MAX_CONDITION)
        states = regular_states(model, contacts, 2, seed=1, max_condition=limit)
        errors = tables.check_case(pin, pmodel, model, robot, name, states)
        assert set(errors) >= {*tables.ALGORITHMS, "osim[cABA-OSIM]", "osim[proxLTL]"}
        assert max(errors.values()) < (1e-3 if robot in tables.CONDITION else 1e-6), (name, errors)


def test_the_split_sums_to_the_total_and_charges_the_two_more_iterations_to_the_proximal_part(pin):
    """The split's arithmetic on measured times (their values are the benchmark's, not asserted:
    on a loaded machine one iteration may time above three)."""
    robot, name = "talos_full", "F6^2"
    model = dynamics.load(robot)
    parts = TABLE_CASES[(robot, name)]
    states = regular_states(model, contacts_of(parts), 4, seed=0)
    rows = tables.split_times(
        pin, pinocchio_model(pin, model, robot), parts, model, states, repeat=2, algorithms=("constrainedABA",)
    )
    assert [r["algorithm"] for r in rows] == ["constrainedABA", "pinocchio"]
    for r in rows:
        np.testing.assert_allclose(r["outside_us"] + r["prox_us"], r["ours_us"], rtol=1e-12)
        np.testing.assert_allclose(r["prox_us"], 1.5 * (r["ours_us"] - r["one_iteration_us"]), rtol=1e-12)
    np.testing.assert_allclose(rows[0]["ratio"], rows[0]["ours_us"] / rows[1]["ours_us"])


@pytest.fixture(scope="module")
def whiskers():
    return tables.whiskers_benchmark(states=24)


def test_the_whisker_set_is_redundant_and_its_residuals_fall(whiskers):
    assert whiskers["m"] == 21 and whiskers["rank"]["max"] == 20  # rank-deficient at every state
    assert whiskers["mu"] == 1e-6
    for algorithm, quartiles in whiskers["quartiles"].items():
        medians = np.array([s["median"] for s in quartiles])
        assert len(medians) == tables.WHISKER_ITERATIONS
        # down to the rounding floor, then flat there
        assert np.all(medians[1:] <= np.maximum(medians[:-1], 1e-12)), (algorithm, medians)
        assert medians[-1] < 1e-6 * medians[0], (algorithm, medians)
        assert medians[-1] < 1e-11, (algorithm, medians)
    # measured: proxLTL's largest final residual 4e-13 over 200 states
    assert np.max(whiskers["residuals"]["proxLTL"][-1]) < 1e-11
    # the augmented-Lagrangian algorithms refine the primal residual (seed 003 Sec. VIII-B.3)
    final = {a: whiskers["quartiles"][a][-1]["median"] for a in whiskers["algorithms"]}
    assert max(final["proxLTLs"], final["constrainedABA"]) < min(final["proxLTL"], final["proxPV"])


def test_whisker_table_and_figure(whiskers, tmp_path):
    table = tables.format_whiskers_table(whiskers)
    assert table.count("\n| ") == tables.WHISKER_ITERATIONS + 1 and "| 10 |" in table
    tables.whiskers_figure(whiskers, tmp_path / "fig4.png")
    assert (tmp_path / "fig4.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_fig2_from_a_result(tmp_path):
    """The figure and the table from a made-up result: a bar per algorithm and contact set."""
    names = ("proxLTL", "pinocchio")
    rows = [
        dict(robot="panda", contacts=c, algorithm=a, batch=4, ours_us=3.0, one_iteration_us=2.0, outside_us=1.5,
             prox_us=1.5, pinocchio_us=3.0, ratio=1.0)
        for c in ("H3", "H6") for a in names
    ]  # fmt: skip
    result = dict(
        table2=rows,
        table3=[],
        cases=[dict(robot="panda", contacts="H3", nv=7, m=3, sets=[], max_abs_error_vs_pinocchio={"x": 0.0},
                    tolerance_relative_to="each entry")],
        three_iterations=dict(mu=1e-4, max_iter=3),
        versions=dict(pinocchio="x"),
        tolerance=1e-8,
        osim_mu=1e-4,
        split="s",
    )  # fmt: skip
    tables.tables_figure(result, tmp_path / "fig2.png")
    assert (tmp_path / "fig2.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "1.5 +     1.5" in tables.format_tables(result)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--whiskers", "--tables"], "--tables and --whiskers are separate studies"),
        (["--whiskers", "--robot", "talos"], "--robot: not an option of --whiskers"),
        (["--whiskers", "--mu", "1e-4"], "--mu is an option of --convergence"),
        (["--tables", "--states", "3"], "--states is an option of --convergence and --whiskers"),
        (["--figure", "x.png"], "or seed 003's Fig. 2 with --tables, or Fig. 4 with --whiskers"),
        (["--whiskers", "--states", "0"], "positive"),
    ],
)
def test_the_command_refuses_in_one_line(capsys, argv, message):
    assert main(["bench", "constrained", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("liftoff: error:") and err.count("\n") == 1
    assert message in err
