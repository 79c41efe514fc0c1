"""``liftoff bench solve --scaling``'s report: each point's time per knot beside its time per
iteration (the benchmark itself is a command)."""

from __future__ import annotations

import re

from liftoff.problems.bench.solve import format_scaling


def test_the_scaling_report_gives_each_point_its_time_per_knot():
    points = [
        {"scale": 1, "knots": 59, "per_iteration_s": 2.5e-3},
        {"scale": 8, "knots": 458, "per_iteration_s": 22.9e-3},
    ]
    report = format_scaling({"points": points, "fixed_s": -1e-3, "per_knot_s": 50e-6, "max_relative_fit_error": 0.5})
    lines = [line for line in report.splitlines() if re.match(r"\| \d", line)]
    rows = [[cell.strip() for cell in line.split("|")[1:-1]] for line in lines]
    assert rows == [["1", "59", "2.50", "42.4"], ["8", "458", "22.90", "50.0"]]
