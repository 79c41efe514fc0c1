"""``liftoff solve``: the JSON summary, the results file, the exit codes, and one error line
naming the key path for each kind of bad configuration."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from test_config import DELETE, edit

from liftoff.problems.cli import main
from liftoff.problems.studies.runs import load_run

FEET = ["LF_FOOT", "LH_FOOT", "RF_FOOT", "RH_FOOT"]
KEYS = ("status", "formulation", "backend", "iterations", "kkt", "cost", "solve_time_s", "max_constraint_violation")

TINY = {
    "robot": "anymal",
    "contacts": {"feet": FEET},
    "gait": {
        "dt": 0.02,
        "horizon": 6,
        "step_length": 0.02,
        "step_height": 0.02,
        "phases": [
            {"contact": FEET, "knots": 2},
            {"contact": ["LH_FOOT", "RF_FOOT"], "knots": 2},
            {"contact": FEET, "knots": 2},
        ],
    },
    "solver": {"max_iterations": 30},  # converges in 6
}


def write(tmp_path, data, name="tiny.yaml") -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return str(path)


def test_json_summary_and_results_file(tmp_path, capsys):
    out_file = tmp_path / "out" / "x.npz"
    assert main(["solve", write(tmp_path, TINY), "--json", "--out", str(out_file)]) == 0
    captured = capsys.readouterr()
    assert captured.out.count("\n") == 1  # one line: the JSON object
    summary = json.loads(captured.out)
    assert isinstance(summary, dict)
    assert set(KEYS) <= set(summary)
    assert summary["status"] == "converged" and summary["formulation"] == "lifted" and summary["backend"] == "compiled"
    kkt = summary["kkt"]
    assert len(kkt) == summary["iterations"] >= 2
    assert kkt[-1] < kkt[-2]
    assert summary["kkt_error"] <= min(kkt[-1], 1e-5)
    assert summary["max_constraint_violation"] < 1e-8
    assert summary["solve_time_s"] > 0
    assert "iter" in captured.err  # the log goes to stderr
    assert summary["results_file"] == str(out_file) and out_file.is_file()
    run = load_run(out_file)
    assert run["summary"] == {k: v for k, v in summary.items() if k != "results_file"}
    assert run["q"].shape == (len(run["times"]), 19)
    assert run["config"]["gait"]["horizon"] == 6


def test_both_backends_give_the_same_solve(tmp_path, capsys):
    """The YAML's solver.backend and --backend choose how stages are evaluated, not the result."""
    numpy_config = write(tmp_path, {**TINY, "solver": {**TINY["solver"], "backend": "numpy"}}, "numpy.yaml")
    assert main(["solve", numpy_config, "--json", "--out", str(tmp_path / "a.npz")]) == 0
    by_yaml = json.loads(capsys.readouterr().out)
    assert (
        main(["solve", write(tmp_path, TINY), "--json", "--backend", "compiled", "--out", str(tmp_path / "b.npz")]) == 0
    )
    by_flag = json.loads(capsys.readouterr().out)
    assert (by_yaml["backend"], by_flag["backend"]) == ("numpy", "compiled")
    assert by_yaml["iterations"] == by_flag["iterations"]
    assert abs(by_yaml["cost"] - by_flag["cost"]) <= 1e-8 * abs(by_yaml["cost"])


def test_overrides_show_in_the_summary_and_the_default_path(tmp_path, capsys, monkeypatch):
    config = write(tmp_path, TINY)
    monkeypatch.chdir(tmp_path)
    assert main(["solve", config, "--json", "--formulation", "nonlifted", "--barrier", "1e-3"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["status"] == "converged"
    assert (summary["formulation"], summary["barrier"]) == ("nonlifted", 1e-3)
    default = Path("results") / "tiny_nonlifted_0.001.npz"
    assert summary["results_file"] == str(default)
    assert (tmp_path / default).is_file()
    saved = load_run(tmp_path / default)["config"]["solver"]
    assert (saved["formulation"], saved["barrier"]) == ("nonlifted", 1e-3)


def test_init_from_the_command_line(tmp_path, capsys, monkeypatch):
    """``--init zero_torque`` starts elsewhere, ends at the same optimum, names its results file."""
    config = write(tmp_path, TINY)
    monkeypatch.chdir(tmp_path)
    summaries = {}
    for init in ("static", "zero_torque"):
        assert main(["solve", config, "--json", "--formulation", "nonlifted", "--init", init]) == 0
        summaries[init] = json.loads(capsys.readouterr().out)
    assert summaries["zero_torque"]["init"] == "zero_torque"
    assert summaries["zero_torque"]["results_file"] == str(Path("results") / "tiny_nonlifted_0.1_zero_torque.npz")
    assert summaries["zero_torque"]["kkt"][0] != summaries["static"]["kkt"][0]  # another start
    assert summaries["zero_torque"]["cost"] == pytest.approx(summaries["static"]["cost"], rel=1e-6)
    assert main(["solve", config, "--init", "random"]) == 2
    assert "argument --init: invalid choice: 'random'" in capsys.readouterr().err


def test_a_decreasing_barrier_from_the_command_line(tmp_path, capsys, monkeypatch):
    """``--barrier-update adaptive`` from ``--barrier`` down to ``--barrier-min`` ends at the fixed
    barrier's optimum, says its course, and names its results file by it."""
    config = write(tmp_path, TINY)
    monkeypatch.chdir(tmp_path)
    assert main(["solve", config, "--json", "--barrier", "1e-4"]) == 0
    fixed = json.loads(capsys.readouterr().out)
    argv = ["solve", config, "--barrier", "1", "--barrier-update", "adaptive", "--barrier-min", "1e-4"]
    assert main([*argv, "--json"]) == 0
    adaptive = json.loads(capsys.readouterr().out)
    assert adaptive["status"] == "converged" and adaptive["barrier"] == pytest.approx(1e-4)
    assert adaptive["cost"] == pytest.approx(fixed["cost"], rel=1e-6)
    assert adaptive["results_file"] == str(Path("results") / "tiny_lifted_adaptive_1-0.0001.npz")
    saved = load_run(tmp_path / adaptive["results_file"])["config"]["solver"]
    assert (saved["barrier"], saved["barrier_update"], saved["barrier_min"]) == (1.0, "adaptive", 1e-4)
    assert main(argv) == 0
    assert capsys.readouterr().out.startswith("tiny: lifted, barrier 1 adaptive to 0.0001, compiled stages; ")
    assert main(["solve", config, "--barrier", "1e-5", "--barrier-update", "monotone"]) == 2
    err = capsys.readouterr().err
    assert (
        err
        == "liftoff: error: solver.barrier_min: expected at most barrier (1e-05) for a decreasing barrier, got 0.0001\n"
    )


def test_iteration_limit_exits_1(tmp_path, capsys):
    data = edit(TINY, "solver.max_iterations", 1)
    assert main(["solve", write(tmp_path, data), "--json", "--out", str(tmp_path / "x.npz")]) == 1
    summary = json.loads(capsys.readouterr().out)
    assert summary["status"] == "max_iterations"
    assert summary["iterations"] == len(summary["kkt"]) == 1


def test_text_output_names_the_status_and_the_file(tmp_path, capsys):
    out_file = tmp_path / "x.npz"
    assert main(["solve", write(tmp_path, edit(TINY, "solver.max_iterations", 1)), "--out", str(out_file)]) == 1
    captured = capsys.readouterr()
    assert [line for line in captured.err.splitlines() if not line.startswith("liftoff: compiling ")] == []
    assert "tiny: lifted, barrier 0.1" in captured.out
    assert "max_iterations:" in captured.out and f"saved {out_file}" in captured.out


def test_a_failed_solve_keeps_the_converged_results_file(tmp_path, capsys):
    """The failed run goes beside the converged one, as NAME.STATUS.npz; --replace replaces it."""
    config, out = write(tmp_path, TINY), tmp_path / "run.npz"
    assert main(["solve", config, "--out", str(out)]) == 0
    converged = out.read_bytes()
    capsys.readouterr()
    assert main(["solve", config, "--out", str(out), "--max-iterations", "1"]) == 1
    failed = tmp_path / "run.max_iterations.npz"
    assert f"saved {failed} ({out} holds a converged solve and is kept" in capsys.readouterr().out
    assert out.read_bytes() == converged
    assert load_run(failed)["summary"]["status"] == "max_iterations"
    assert main(["solve", config, "--out", str(out), "--max-iterations", "2", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["results_file"] == str(failed)
    assert load_run(failed)["summary"]["iterations"] == 2  # a failed run replaces a failed run
    assert main(["solve", config, "--out", str(out), "--max-iterations", "1", "--replace"]) == 1
    assert load_run(out)["summary"]["status"] == "max_iterations"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.max_iterations.npz", "run.npz", "tiny.yaml"]


def test_a_failed_solve_without_a_converged_one_takes_the_results_file(tmp_path, capsys):
    out = tmp_path / "run.npz"
    assert main(["solve", write(tmp_path, TINY), "--out", str(out), "--max-iterations", "1"]) == 1
    assert load_run(out)["summary"]["status"] == "max_iterations"
    assert not (tmp_path / "run.max_iterations.npz").exists()


def test_a_problem_too_large_for_the_memory_is_one_line_with_its_size(tmp_path, capsys, monkeypatch):
    from liftoff.problems.studies import runs

    def out_of_memory(*args, **kwargs):
        return np.empty((1 << 30, 1 << 20))  # numpy's own error: it cannot allocate 8 PiB

    monkeypatch.setattr(runs, "prepare", out_of_memory)
    assert main(["solve", write(tmp_path, TINY), "--out", str(tmp_path / "r.npz")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("liftoff: error: ") and err.count("\n") == 1, err
    assert "out of memory for 6 stages (gait.horizon) of anymal (it could not allocate 8.00 PiB more)" in err
    assert not (tmp_path / "r.npz").exists()


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("gait.dt", DELETE, "gait: missing required key 'dt'"),
        ("gait.horizon", "six", "gait.horizon: expected an integer, got 'six'"),
        ("gait.stride", 0.1, "gait: unknown key 'stride'"),
        ("gait.dt", -0.02, "gait.dt: expected a number > 0, got -0.02"),
        ("gait.phases[1].contact", ["LH_FOOT", "XX_FOOT"], "gait.phases[1].contact: unknown foot 'XX_FOOT'"),
        ("initial_state.q", "sitting", "initial_state.q: unknown configuration 'sitting'"),
    ],
)
def test_bad_configuration_exits_2_with_one_line(tmp_path, capsys, key, value, message):
    assert main(["solve", write(tmp_path, edit(TINY, key, value))]) == 2
    err = capsys.readouterr().err
    assert err.startswith("liftoff: error:") and err.count("\n") == 1, err
    assert message in err
    assert not (tmp_path / "results").exists()


def test_foot_unknown_to_the_robot_exits_2(tmp_path, capsys):
    phases = [{"contact": ["NOT_A_FRAME"], "knots": 6}]
    data = edit(edit(TINY, "contacts.feet", ["NOT_A_FRAME"]), "gait.phases", phases)
    assert main(["solve", write(tmp_path, data)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("liftoff: error:") and err.count("\n") == 1, err
    assert f"{tmp_path / 'tiny.yaml'}: contacts.feet: anymal has no frame 'NOT_A_FRAME'" in err


@pytest.mark.parametrize(
    "key, value, ending",
    [("gait.horizon", "six", "got 'six'\n"), ("gait.dt", DELETE, "missing required key 'dt'\n")],
)
def test_error_line_keeps_the_closing_quote(tmp_path, capsys, key, value, ending):
    assert main(["solve", write(tmp_path, edit(TINY, key, value))]) == 2
    assert capsys.readouterr().err.endswith(ending)


def test_problem_error_is_the_only_stderr_line_with_json(tmp_path, capsys):
    assert main(["solve", write(tmp_path, edit(TINY, "initial_state.q", "sitting")), "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("liftoff: error:") and captured.err.count("\n") == 1, captured.err


def test_missing_file_exits_2(tmp_path, capsys):
    missing = tmp_path / "missing.yaml"
    assert main(["solve", str(missing)]) == 2
    err = capsys.readouterr().err
    assert err == f"liftoff: error: {missing}: file not found\n"


@pytest.mark.parametrize(
    "argv, message",
    [
        (["solve", "{config}", "--barrier", "-1"], "argument --barrier: expected a positive number, got '-1'"),
        (["solve"], "the following arguments are required: CONFIG (see liftoff solve --help)"),
        (["solve", "{config}", "--formulation", "x"], "argument --formulation: invalid choice: 'x'"),
        (["frobnicate"], "argument COMMAND: invalid choice: 'frobnicate'"),
        (
            ["mpc", "{config}", "--mass-scale", "1e6"],
            "argument --mass-scale: expected a number in [0.1, 10], got '1e6'",
        ),
        (["mpc", "{config}", "--mass-scale", "0.01"], "argument --mass-scale: expected a number in [0.1, 10]"),
        (["mpc", "{config}", "--mass-scale", "nan"], "argument --mass-scale: expected a number in [0.1, 10]"),
        (["mpc", "{config}", "--scheme", "sqp"], "argument --scheme: invalid choice: 'sqp'"),
        (["bench", "mpc", "--scheme", "rtl"], "argument --scheme: invalid choice: 'rtl'"),
        ([], "the following arguments are required: COMMAND (see liftoff --help)"),
    ],
)
def test_argument_errors_are_one_line(tmp_path, capsys, argv, message):
    """No usage block: the README's one line ``liftoff: error: ...``, exit status 2."""
    config = write(tmp_path, TINY)
    assert main([a.format(config=config) for a in argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("liftoff: error: ") and captured.err.count("\n") == 1, captured.err
    assert message in captured.err


def test_console_script(tmp_path):
    """The installed ``liftoff`` entry point passes the exit code and prints the JSON."""
    script = Path(sys.executable).parent / "liftoff"
    assert script.is_file()
    config = write(tmp_path, edit(TINY, "solver.max_iterations", 1))
    done = subprocess.run(
        [str(script), "solve", config, "--json", "--out", str(tmp_path / "x.npz")],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    assert json.loads(done.stdout)["status"] == "max_iterations"


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.startswith("liftoff ")


def test_log_header_final_row_and_quiet(tmp_path, capsys):
    config = write(tmp_path, TINY)
    assert main(["solve", config, "--out", str(tmp_path / "a.npz")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "7 stages (1 impulse)" in lines[0] and "variables" in lines[0] and "inequalities" in lines[0]
    assert lines[1].split()[:3] == ["iter", "cost", "kkt"]
    final = [line for line in lines if line.rstrip().endswith("-")]
    assert len(final) == 1 and int(final[0].split()[0]) == len(lines) - 5  # header, columns, final, outcome, saved
    assert main(["solve", config, "--out", str(tmp_path / "b.npz"), "--quiet"]) == 0
    quiet = capsys.readouterr().out.splitlines()
    assert len(quiet) == 2 and quiet[0].startswith("converged") and quiet[1].startswith("saved")


def test_sizes_count_the_iterate(tmp_path):
    """Variables, equalities and inequalities as the iterate holds them (knots, u, w, slacks)."""
    from liftoff.ocp.formulation import Formulation
    from liftoff.problems.tasks.config import load_config
    from liftoff.problems.tasks.gaits import build_problem

    problem = build_problem(load_config(write(tmp_path, TINY)))
    nx = 2 * problem.model.nv
    for name in ("lifted", "nonlifted"):
        form = Formulation(problem, name, "numpy")
        it = form.initial_iterate(0.1)
        w = sum(gv.w.size for gv in it.groups) if name == "lifted" else 0
        expected = {
            "stages": problem.K,
            "impulses": sum(stage.kind == "impulse" for stage in problem.stages),
            "variables": it.q.shape[0] * nx + sum(gv.u.size for gv in it.groups) + w,
            "equalities": it.q.shape[0] * nx + w,
            "inequalities": sum(gv.s.size for gv in it.groups),
        }
        assert form.sizes() == expected


def test_iteration_limit_and_tolerance_from_the_command_line(tmp_path, capsys):
    config = write(tmp_path, TINY)
    assert main(["solve", config, "--json", "--max-iterations", "1", "--out", str(tmp_path / "a.npz")]) == 1
    limited = json.loads(capsys.readouterr().out)
    assert (limited["status"], limited["iterations"]) == ("max_iterations", 1)
    assert main(["solve", config, "--json", "--tol", "1e-1", "--out", str(tmp_path / "b.npz")]) == 0
    loose = json.loads(capsys.readouterr().out)
    assert main(["solve", config, "--json", "--out", str(tmp_path / "c.npz")]) == 0
    tight = json.loads(capsys.readouterr().out)
    assert loose["kkt_error"] <= 1e-1 and loose["iterations"] < tight["iterations"]


def test_a_task_configuration_is_sent_to_liftoff_mpc(capsys):
    assert main(["solve", "configs/polishing_horizontal.yaml"]) == 2
    err = capsys.readouterr().err
    assert (
        err
        == "liftoff: error: configs/polishing_horizontal.yaml: a task: polishing configuration runs with liftoff mpc\n"
    )
