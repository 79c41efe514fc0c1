"""``liftoff sweep``: the spec (grid, tied keys, explicit and random cases, key paths checked
against the schema), rows for cases that fail, the same table on the local pool and on a Dask
LocalCluster, and an interrupted sweep that a rerun continues without recomputing or reading
a half-written file."""

from __future__ import annotations

import csv
import json

import pyarrow.parquet as pq
import pytest
import yaml
from test_cli_solve import TINY

from liftoff.problems.cli import main
from liftoff.problems.studies import runs, sweep
from liftoff.problems.studies.sweep import results_path, run_sweep, solve_case
from liftoff.problems.studies.sweep_spec import TIMING, cases, load_spec
from liftoff.problems.tasks.config import ConfigError

GRID = {"contacts.baumgarte.alpha, contacts.baumgarte.beta": [10, 25], "solver.formulation": ["lifted", "nonlifted"]}


def write_spec(folder, **spec):
    (folder / "tiny.yaml").write_text(yaml.safe_dump(TINY), encoding="utf-8")
    path = folder / "spec.yaml"
    path.write_text(yaml.safe_dump({"configs": ["tiny.yaml"], **spec}, sort_keys=False), encoding="utf-8")
    return path


def test_the_grid_is_every_combination_and_tied_keys_move_together(tmp_path):
    spec = load_spec(write_spec(tmp_path, grid=GRID, cases=[{"solver.barrier": 1e-3}]))
    assert spec.keys == ("contacts.baumgarte.alpha", "contacts.baumgarte.beta", "solver.formulation", "solver.barrier")
    found = [(c.values, c.data["contacts"]["baumgarte"], c.data["solver"]["formulation"]) for c in cases(spec)]
    tied = {"contacts.baumgarte.alpha": 10, "contacts.baumgarte.beta": 10}
    expected = [
        ({**{k: a for k in tied}, "solver.formulation": f}, {"alpha": a, "beta": a}, f)
        for a in (10, 25)
        for f in ("lifted", "nonlifted")
    ]
    assert found[:4] == expected
    assert found[4][0] == {"solver.barrier": 1e-3} and cases(spec)[4].data["solver"]["barrier"] == 1e-3
    assert len({c.digest for c in cases(spec)}) == 5  # one results file per case


def test_random_cases_are_drawn_from_the_seed(tmp_path):
    section = {
        "seed": 3,
        "count": 6,
        "uniform": {"gait.step_height": [0.01, 0.03]},
        "choice": {"solver.init": ["zero_torque"]},
    }
    points = load_spec(write_spec(tmp_path, random=section)).points
    assert points == load_spec(write_spec(tmp_path, random=section)).points  # the same draw again
    heights = [p["gait.step_height"] for p in points]
    assert len(set(heights)) == 6 and all(0.01 <= h <= 0.03 for h in heights)
    assert {p["solver.init"] for p in points} == {"zero_torque"}
    other = load_spec(write_spec(tmp_path, random={**section, "seed": 4})).points
    assert [p["gait.step_height"] for p in other] != heights


@pytest.mark.parametrize(
    "spec, where, message",
    [
        ({"grid": {"contacts.baumgart.alpha": [1]}}, "grid.contacts.baumgart.alpha", "'baumgart' is not a key"),
        ({"grid": {"solver.barrier.x": [1]}}, "grid.solver.barrier.x", "'x' is not a key (expected one of: nothing)"),
        ({"grid": {"contacts": [1]}}, "grid.contacts", "a section, not a value"),
        ({"grid": {"solver.barrier[0]": [1]}}, "grid.solver.barrier[0]", "an index of something that is not a list"),
        ({"grid": {"solver.barrier": []}}, "grid.solver.barrier", "expected a non-empty list of values"),
        ({"cases": [{"gait.phases[x].knots": 2}]}, "cases[0].gait.phases[x].knots", "bad index [x]"),
        ({"random": {"uniform": {"gait.dt": [0.2, 0.1]}}}, "random.uniform.gait.dt", "low <= high"),
        ({"plot": {"x": "solver.barrier"}}, "plot", "unknown column 'solver.barrier'"),
        ({"grids": {}}, "", "unknown key 'grids'"),
    ],
)
def test_bad_specs_are_one_line_naming_the_key(tmp_path, spec, where, message):
    path = write_spec(tmp_path, **spec)
    with pytest.raises(ConfigError) as error:
        load_spec(path)
    assert error.value.path == where
    assert message in str(error.value) and "\n" not in str(error.value)


def test_a_bad_key_path_exits_2_before_anything_runs(tmp_path, capsys):
    path = write_spec(tmp_path, grid={"gait.step_lenght": [0.1]})
    assert main(["sweep", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "grid.gait.step_lenght: unknown key path" in err
    assert not (tmp_path / "out").exists()


def columns_but_timing(rows):
    return [{k: v for k, v in row.items() if k not in TIMING} for row in rows]


def test_failing_cases_are_rows_with_their_status(tmp_path, capsys, monkeypatch):
    """An invalid combination (phases no longer sum to the horizon), an iteration limit and an
    exception in the solve each give a row; the sweep goes on and exits 1."""
    spec = write_spec(tmp_path, cases=[{}, {"gait.horizon": 7}, {"solver.max_iterations": 1}])
    assert main(["sweep", str(spec), "--out", str(tmp_path / "out"), "--workers", "1", "--json"]) == 1
    rows = json.loads(capsys.readouterr().out)
    assert [r["status"] for r in rows] == ["converged", "invalid", "max_iterations"]
    assert "gait.phases: expected knots summing to gait.horizon = 7" in rows[1]["message"]
    assert rows[1]["results_file"] == "" and rows[2]["iterations"] == 1
    with open(tmp_path / "out" / "table.csv", newline="") as f:
        assert [r["status"] for r in csv.DictReader(f)] == ["converged", "invalid", "max_iterations"]

    def broken(config):
        raise RuntimeError("out of memory")

    monkeypatch.setattr(runs, "solve_config", broken)  # solve_case imports it when it runs
    outcome = solve_case(cases(load_spec(spec))[0], str(tmp_path / "x.npz"))
    assert outcome["status"] == "error" and outcome["message"] == "RuntimeError: out of memory"


def test_the_local_pool_and_a_dask_local_cluster_give_the_same_table(tmp_path):
    spec = load_spec(write_spec(tmp_path, grid=GRID))
    pool = run_sweep(spec, tmp_path / "pool", workers=2)
    dask = run_sweep(spec, tmp_path / "dask", workers=2, scheduler="local")
    assert [r["status"] for r in pool] == ["converged"] * 4
    assert columns_but_timing(pool) == columns_but_timing(dask)
    assert all(r["worker"] not in ("", "reused") for r in dask)
    parquet = pq.read_table(tmp_path / "dask" / "table.parquet").to_pylist()
    assert columns_but_timing(parquet) == columns_but_timing(dask)


def test_an_interrupted_sweep_continues_without_recomputing_or_reading_a_half_written_file(tmp_path):
    spec = load_spec(write_spec(tmp_path, grid=GRID))
    out = tmp_path / "out"

    def interrupt(row):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep(spec, out, workers=1, progress=interrupt)
    all_cases = cases(spec)
    done = [c for c in all_cases if results_path(out, c).is_file()]
    assert 1 <= len(done) < len(all_cases)
    assert not (out / "table.csv").exists()
    stamps = {c.index: results_path(out, c).stat().st_mtime_ns for c in done}
    pending = next(c for c in all_cases if c not in done)
    results_path(out, pending).write_bytes(b"PK\x03\x04 half a file")  # as a non-atomic writer would leave it
    (out / "cases" / f".{results_path(out, pending).name}.x.tmp").write_bytes(b"")  # a temporary left behind
    rows = run_sweep(spec, out, workers=1)
    assert [r["status"] for r in rows] == ["converged"] * 4
    for c in done:
        assert rows[c.index]["worker"] == "reused"
        assert results_path(out, c).stat().st_mtime_ns == stamps[c.index]
    assert rows[pending.index]["worker"] != "reused"  # the damaged file was solved again
    again = run_sweep(spec, out, workers=1)
    assert {r["worker"] for r in again} == {"reused"}
    assert columns_but_timing(again) == columns_but_timing(rows)


def test_an_interrupt_is_one_line_that_says_how_to_continue(tmp_path, capsys, monkeypatch):
    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(sweep, "run_sweep", interrupted)
    assert main(["sweep", str(write_spec(tmp_path)), "--out", str(tmp_path / "out")]) == 130
    err = capsys.readouterr().err
    assert err == "liftoff: error: interrupted; the cases solved so far are kept: rerun the same command to continue\n"


def test_the_outcome_line_counts_cases_in_the_singular_and_the_plural():
    one = sweep.outcome_line([{"status": "converged"}], "out")
    assert one.startswith("1 case (1 converged); table in out")
    two = sweep.outcome_line([{"status": "converged"}, {"status": "invalid"}], "out")
    assert two.startswith("2 cases (1 converged, 1 invalid); table in out")
