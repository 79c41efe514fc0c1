"""Seed 004's headline on its own gait problems (configs/seed004): from the authors' start
(zero torques, a quarter of the weight on each foot), at barrier 1e-4, the lifted formulation
needs at most 0.6 times the Newton iterations of the non-lifted one, and both reach the same
optimum with every constraint satisfied. Measured ratios: 0.26 (trot) to 0.50 (bound)."""

from __future__ import annotations

from pathlib import Path

import pytest

from liftoff.problems.studies.runs import solve_config
from liftoff.problems.tasks.config import load_config

SEED004 = Path(__file__).resolve().parent.parent / "configs" / "seed004"


@pytest.mark.parametrize("gait", ["walk", "trot", "pace", "bound", "jump"])
def test_lifting_takes_at_most_six_tenths_of_the_iterations_from_the_authors_start(gait):
    config = load_config(SEED004 / f"anymal_{gait}.yaml")
    runs = {form: solve_config(config, form, 1e-4, init="zero_torque").result for form in ("lifted", "nonlifted")}
    for form, result in runs.items():
        assert result.status == "converged", (form, result.status)
        assert result.max_constraint_violation < 1e-8, form
    lifted, nonlifted = runs["lifted"], runs["nonlifted"]
    assert lifted.cost == pytest.approx(nonlifted.cost, rel=1e-6)
    assert lifted.iterations <= 0.6 * nonlifted.iterations
