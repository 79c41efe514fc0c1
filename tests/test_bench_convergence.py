"""``liftoff bench constrained --convergence`` (seed 000 Fig. 2) on a tiny case: the study's
function, its contact sets, its table and figure, and the command's refusals (the benchmark
itself is a command)."""

from __future__ import annotations

import numpy as np
import pytest

from liftoff import dynamics
from liftoff.problems.bench import constrained as bench
from liftoff.problems.cli import main

MUS = (1e-6, 1e-4, 1e-2)


@pytest.fixture(scope="module")
def tiny():
    """ANYmal, one state, three values of mu, proxLTL."""
    return bench.convergence_benchmark(robots=("anymal",), mus=MUS, states=1, algorithms=("proxLTL",), max_iter=200)


def rows_of(result, case):
    rows = sorted((r for r in result["results"] if r["case"] == case), key=lambda r: r["mu"])
    assert [r["mu"] for r in rows] == list(MUS)
    return rows


def test_well_posed_iterations_fall_as_mu_decreases(tiny):
    """Seed 000 Sec. III-B: the residual contracts like mu / (mu + sigma) per iteration."""
    rows = rows_of(tiny, "well_posed")
    its = [r["iterations"] for r in rows]
    assert all(r["statuses"] == {"converged": 1} for r in rows), rows
    assert np.all(np.diff(its) >= 0), its  # non-increasing as mu decreases
    assert its[-1] > its[0], its
    assert all(r["residual"] <= tiny["tol"] for r in rows)


def test_redundant_converges_and_inconsistent_ends_in_least_squares(tiny):
    well, redundant, inconsistent = (rows_of(tiny, case) for case in bench.CONVERGENCE_CASES)
    assert all(r["statuses"] == {"converged": 1} for r in redundant), redundant
    assert all(r["statuses"] == {"least_squares": 1} for r in inconsistent), inconsistent
    for w, r in zip(well, inconsistent):
        assert r["final_residual"] == r["dual_residual"] <= tiny["tol"]
        assert r["residual"] > 0.1  # the two targets cannot both be reached
        assert r["force"] < 2 * w["force"]  # bounded forces
    sets = {s["case"]: s for s in tiny["contact_sets"]}
    assert (sets["well_posed"]["m"], sets["redundant"]["m"], sets["inconsistent"]["m"]) == (12, 15, 15)
    assert sets["redundant"]["rank"] == sets["inconsistent"]["rank"] == 12


def test_the_inconsistent_targets_are_apart_and_the_redundant_ones_equal():
    model = dynamics.load("anymal")
    q = dynamics.random_configuration(model, np.random.default_rng(0), 2)
    sets = bench.convergence_contact_sets(model, q, bench.CONTACT_CASES["anymal"])
    first, copy = sets["redundant"][:2]
    np.testing.assert_array_equal(first.placement, copy.placement)
    plus, minus = sets["inconsistent"][:2]
    np.testing.assert_allclose(plus.placement - minus.placement, np.tile(2 * bench.TARGET_OFFSET, (2, 1)))


def test_table_and_figure(tiny, tmp_path):
    table = bench.format_convergence_table(tiny)
    assert "| anymal | inconsistent | 15 (12) | proxLTL |" in table and "1ls" in table
    assert table.count("| anymal |") == 6  # proxLTL and the model, per case
    bench.convergence_figure(tiny, tmp_path / "fig.png")
    assert (tmp_path / "fig.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_model_iterations_follow_the_linear_rate():
    e0, sigma = np.array([1.0]), np.array([1e-2])
    assert bench.model_iterations(e0, sigma, 1e-2, 1e-10, 1000)[0] == np.ceil(np.log(1e-10) / np.log(0.5))
    assert bench.model_iterations(e0, sigma, 1e2, 1e-10, 1000)[0] == 1000
    assert bench.model_iterations(e0, sigma, 1e-2, 10.0, 1000)[0] == 1


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--convergence", "--scaling"], "--scaling and --convergence are separate studies"),
        (["--mu", "1e-4"], "--mu is an option of --convergence"),
        (["--convergence", "--mu", "0"], "positive"),
    ],
)
def test_the_command_refuses_in_one_line(capsys, argv, message):
    assert main(["bench", "constrained", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("liftoff: error:") and err.count("\n") == 1
    assert message in err
