"""``liftoff compare`` and ``report`` on tiny gaits and short polishing horizons (rigid against
soft contact): what they write, and the errors found before anything is solved (every file
checked, names that would collide, a folder holding another comparison); problem errors that
name the file and suggest a frame."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
import yaml
from test_cli_solve import TINY
from test_config import edit

from liftoff import dynamics
from liftoff.problems.cli import main
from liftoff.problems.studies.compare import iteration_ratios
from liftoff.problems.studies.runs import load_run
from liftoff.problems.tasks.config import load_config, parse_config
from liftoff.problems.tasks.polishing import PolishingConfig, make_task


def write(folder, data, name):
    path = folder / name
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return str(path)


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.startswith("liftoff: error:") and err.count("\n") == 1, err
    return err


def test_compare_writes_the_table_figures_and_results_and_report_redraws_them(tmp_path, capsys):
    configs = [write(tmp_path, {**TINY, "name": n}, f"{n}.yaml") for n in ("first", "second")]
    out = tmp_path / "cmp"
    assert main(["compare", *configs, "--barrier", "0.1", "--out", str(out), "--json"]) == 0
    summaries = json.loads(capsys.readouterr().out)
    assert sorted((s["name"], s["formulation"]) for s in summaries) == sorted(
        (n, f) for n in ("first", "second") for f in ("lifted", "nonlifted")
    )
    assert all(s["status"] == "converged" for s in summaries)
    written = sorted(p.name for p in out.iterdir())
    for name in ("table.md", "table.csv", "summary.json", "kkt.png", "time.png", "forces_first.png"):
        assert name in written
    assert len([n for n in written if n.endswith(".npz")]) == 4
    assert not [n for n in written if n.startswith(".")]  # no temporary left
    (out / "kkt.png").unlink()
    assert main(["report", str(out)]) == 0
    assert (out / "kkt.png").is_file()
    assert "| first | lifted |" in capsys.readouterr().out.replace("  ", " ")


def test_every_file_is_checked_before_anything_is_solved(tmp_path, capsys):
    good = write(tmp_path, TINY, "good.yaml")
    phases = [{"contact": ["NOT_A_FRAME"], "knots": 6}]
    bad = write(tmp_path, edit(edit(TINY, "contacts.feet", ["NOT_A_FRAME"]), "gait.phases", phases), "bad.yaml")
    out = tmp_path / "cmp"
    assert main(["compare", good, bad, "--out", str(out)]) == 2
    assert f"{bad}: contacts.feet: anymal has no frame 'NOT_A_FRAME'" in one_error_line(capsys)
    assert not out.exists()


def test_configurations_with_one_name_are_refused(tmp_path, capsys):
    a, b = write(tmp_path, TINY, "a.yaml"), write(tmp_path, {**TINY, "name": "a"}, "b.yaml")
    assert main(["compare", a, b, "--out", str(tmp_path / "cmp")]) == 2
    assert "two configurations named 'a'" in one_error_line(capsys)


def test_a_folder_of_another_comparison_is_refused(tmp_path, capsys):
    out = tmp_path / "cmp"
    out.mkdir()
    (out / "walk_lifted_0.1.npz").write_bytes(b"")
    assert main(["compare", write(tmp_path, TINY, "tiny.yaml"), "--out", str(out)]) == 2
    assert "holds results of another comparison (walk_lifted_0.1.npz)" in one_error_line(capsys)


@pytest.mark.parametrize(
    "data, message",
    [
        (
            edit(
                {**TINY, "robot": "solo12", "contacts": {"feet": ["LF_FOOT"]}},
                "gait.phases",
                [{"contact": ["LF_FOOT"], "knots": 6}],
            ),
            "contacts.feet: solo12 has no frame 'LF_FOOT'; did you mean FL_FOOT",
        ),
        (
            {**TINY, "initial_state": {"q": [0.0] * 19}},
            "initial_state.q: the base orientation q[3:7] is a zero quaternion",
        ),
    ],
)
def test_problem_errors_name_the_file(tmp_path, capsys, data, message):
    path = write(tmp_path, data, "x.yaml")
    assert main(["solve", path]) == 2
    assert f"{path}: {message}" in one_error_line(capsys)


def test_quiet_compare_prints_only_the_table(tmp_path, capsys):
    config = write(tmp_path, TINY, "tiny.yaml")
    argv = ["compare", config, "--barrier", "0.1", "--formulation", "lifted", "--out", str(tmp_path / "q"), "--quiet"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    assert captured.out.startswith("|")  # the table first: no line per solve
    assert "| tiny | lifted |" in captured.out.replace("  ", " ")


def test_a_configuration_with_the_exact_hessian_compares_with_gauss_newtons_nonlifted_runs(tmp_path, capsys):
    config = write(tmp_path, edit(TINY, "solver.hessian", "exact"), "tiny.yaml")
    assert main(["compare", config, "--barrier", "0.1", "--out", str(tmp_path / "h"), "--json"]) == 0
    summaries = {s["formulation"]: s for s in json.loads(capsys.readouterr().out)}
    assert {k: s["status"] for k, s in summaries.items()} == {"lifted": "converged", "nonlifted": "converged"}
    saved = {k: load_run(tmp_path / "h" / f"tiny_{k}_0.1.npz")["config"]["solver"]["hessian"] for k in summaries}
    assert saved == {"lifted": "exact", "nonlifted": "gauss-newton"}


def test_compare_runs_each_start(tmp_path, capsys):
    config = write(tmp_path, TINY, "tiny.yaml")
    out = tmp_path / "starts"
    argv = ["compare", config, "--barrier", "0.1", "--formulation", "nonlifted", "--init", "static", "zero_torque"]
    assert main([*argv, "--out", str(out), "--json"]) == 0
    summaries = json.loads(capsys.readouterr().out)
    assert sorted(s["init"] for s in summaries) == ["static", "zero_torque"]
    assert sorted(p.name for p in out.glob("*.npz")) == ["tiny_nonlifted_0.1.npz", "tiny_nonlifted_0.1_zero_torque.npz"]
    assert "| zero_torque |" in (out / "table.md").read_text().replace("  ", " ")
    by_start = {s["init"]: s for s in summaries}
    assert abs(by_start["static"]["cost"] - by_start["zero_torque"]["cost"]) <= 1e-6 * by_start["static"]["cost"]


def test_the_iteration_ratio_pairs_lifted_with_nonlifted_runs_of_one_gait_barrier_and_start():
    def run(name, form, barrier, iterations, init="static", status="converged"):
        return {"name": name, "formulation": form, "barrier": barrier, "init": init, "iterations": iterations,
                "status": status}  # fmt: skip

    summaries = [
        run("walk", "lifted", 1e-4, 20),
        run("walk", "nonlifted", 1e-4, 50),
        run("walk", "lifted", 1e-4, 30, init="zero_torque"),
        run("walk", "nonlifted", 1e-4, 40, init="zero_torque"),
        run("walk", "lifted", 1e-1, 10),  # no non-lifted partner
        run("jump", "lifted", 1e-4, 10),
        run("jump", "nonlifted", 1e-4, 300, status="iteration limit"),
    ]
    assert iteration_ratios(summaries) == [0.4, 0.4, 0.75, 0.75, None, None, None]


def test_the_table_shows_the_ratio_of_the_solved_pair(tmp_path, capsys):
    out = tmp_path / "ratio"
    argv = ["compare", write(tmp_path, TINY, "tiny.yaml"), "--barrier", "0.1", "--out", str(out), "--json"]
    assert main(argv) == 0
    iterations = {s["formulation"]: s["iterations"] for s in json.loads(capsys.readouterr().out)}
    with open(out / "table.csv", newline="") as f:
        ratios = {row["formulation"]: float(row["iteration_ratio"]) for row in csv.DictReader(f)}
    expected = round(iterations["lifted"] / iterations["nonlifted"], 2)
    assert ratios == {"lifted": expected, "nonlifted": expected}


def test_max_iterations_overrides_every_configuration(tmp_path, capsys):
    config = write(tmp_path, TINY, "tiny.yaml")
    argv = ["compare", config, "--barrier", "0.1", "--max-iterations", "1", "--out", str(tmp_path / "m"), "--json"]
    assert main(argv) == 1  # not converged in one iteration
    summaries = json.loads(capsys.readouterr().out)
    assert [(s["status"], s["iterations"]) for s in summaries] == [("max_iterations", 1)] * 2


def test_compare_runs_the_baselines_once_on_the_exact_problem(tmp_path, capsys):
    out = tmp_path / "methods"
    argv = ["compare", write(tmp_path, TINY, "tiny.yaml"), "--barrier", "1e-4", "--methods", "ipopt", "sqp"]
    assert main([*argv, "--out", str(out), "--json"]) == 0
    summaries = {s["formulation"]: s for s in json.loads(capsys.readouterr().out)}
    assert sorted(summaries) == ["ipopt", "lifted", "nonlifted", "sqp"]
    assert (summaries["ipopt"]["barrier"], summaries["sqp"]["barrier"]) == (0.0, 0.0)
    for method in ("ipopt", "sqp"):  # the exact optimum, which the barrier 1e-4 approaches
        assert summaries[method]["status"] == "converged"
        assert summaries[method]["cost"] == pytest.approx(summaries["lifted"]["cost"], rel=1e-5)
    assert sorted(p.name for p in out.glob("*.npz")) == [
        "tiny_ipopt_0.npz",
        "tiny_lifted_0.0001.npz",
        "tiny_nonlifted_0.0001.npz",
        "tiny_sqp_0.npz",
    ]
    assert "| tiny | ipopt | 0 |" in (out / "table.md").read_text().replace("  ", " ")


def test_compare_runs_fddp_and_ilqr_at_each_barrier_with_the_ideal_relaxation(tmp_path, capsys):
    out = tmp_path / "ddp"
    argv = ["compare", write(tmp_path, TINY, "tiny.yaml"), "--barrier", "1e-1", "1e-4", "--methods", "fddp", "ilqr"]
    assert main([*argv, "nonlifted", "--out", str(out), "--json"]) == 0  # a formulation among the methods
    summaries = {(s["formulation"], s["barrier"]): s for s in json.loads(capsys.readouterr().out)}
    assert sorted(summaries) == sorted((m, eps) for m in ("fddp", "ilqr", "nonlifted") for eps in (1e-1, 1e-4))
    for (method, eps), s in summaries.items():
        assert s["status"] == "converged"
        assert s["max_constraint_violation"] <= 1e-9  # the relaxation kept the solution feasible
        assert s["cost"] == pytest.approx(summaries["nonlifted", eps]["cost"], rel=1e-5)  # the same barrier problem
        if method != "nonlifted":
            assert s["message"].startswith("relaxation ")
    rows = (out / "table.md").read_text().replace("  ", " ")
    assert "| tiny | fddp | 0.1 | static | converged |" in rows and "| tiny | ilqr | 0.0001 |" in rows


@pytest.mark.parametrize(
    "methods, labels",
    [
        ((("lifted", 0.1),), ["KKT error (l2)"]),
        ((("lifted", 0.1), ("fddp", 0.1)), ["KKT error (l2)\nFDDP: |(Qu, gaps)|"]),
        ((("ilqr", 0.1), ("ipopt", 0.0)), ["iLQR: |(Qu, gaps)|", "Ipopt: max(inf_pr, inf_du)"]),
        ((("nonlifted", 1e-4), ("sqp", 0.0)), ["KKT error (l2)", "SQP: max(step, violation)"]),
    ],
)
def test_the_kkt_figure_names_the_measures_of_the_methods_that_ran(monkeypatch, tmp_path, methods, labels):
    from liftoff.problems.studies import figures

    drawn = []
    monkeypatch.setattr(figures, "save_figure", lambda fig, path: drawn.append(fig))
    runs = [
        {"summary": {"name": "trot", "formulation": method, "barrier": barrier, "kkt": [1.0, 0.1], "kkt_error": 0.01}}
        for method, barrier in methods
    ]
    figures.kkt_figure(runs, tmp_path / "kkt.png")
    (fig,) = drawn
    figures.plt.close(fig)
    assert [ax.get_ylabel() for ax in fig.axes] == labels  # a row of panels per barrier, one gait


@pytest.mark.parametrize("seconds, scale", [((0.0, 0.0), "linear"), ((0.0, 0.02), "log")])
def test_the_time_figure_is_logarithmic_where_some_solve_took_time(monkeypatch, tmp_path, seconds, scale):
    """Solves of no iteration take no time: a logarithmic axis of only those would have no range."""
    from liftoff.problems.studies import figures

    drawn = []
    monkeypatch.setattr(figures, "save_figure", lambda fig, path: drawn.append(fig))
    runs = [
        {"summary": {"name": "trot", "formulation": form, "barrier": 0.1, "solve_time_s": t, "time_per_iteration_s": t}}
        for form, t in zip(("lifted", "nonlifted"), seconds)
    ]
    figures.time_figure(runs, tmp_path / "time.png")
    (fig,) = drawn
    figures.plt.close(fig)
    assert [ax.get_yscale() for ax in fig.axes] == [scale, scale]


def polishing_file(folder, name, **contacts) -> str:
    """``configs/polishing_horizontal.yaml`` (rigid, friction 0.3, torque filter) or, with ``contacts``,
    soft, on a horizon of 10 stages (0.1 s)."""
    with open("configs/polishing_horizontal.yaml", encoding="utf-8") as f:
        data = yaml.safe_load(f)
    data.update(name=name, mpc={**data["mpc"], "horizon": 10}, **({"contacts": contacts} if contacts else {}))
    parse_config(data, name, PolishingConfig)  # a valid polishing configuration
    return write(folder, data, f"{name}.yaml")


def test_compare_sets_the_rigid_polishing_contact_against_the_soft_one(tmp_path, capsys):
    """Each horizon from the task's initial state: the rigid contact's force variable ends at the
    target (its cost holds it there to 2e-4 N); the soft contact's spring holds the target's
    penetration (k d = 30 N within 0.05 N, as in test_soft_contact) until the last stage, where the
    terminal cost pulls the pad back toward the initial state (d = 0): the end force is the spring's
    k d + c d_dot at the solution's state, about 9 N short by its damper. The non-lifted formulation
    and the baselines that do not take an OCP are rows of status unsupported."""
    rigid = polishing_file(tmp_path, "rigid")
    soft = polishing_file(tmp_path, "soft", model="soft", stiffness=1e4, damping=300.0)
    out = tmp_path / "cmp"
    argv = ["compare", rigid, soft, "--barrier", "1e-3", "--methods", "lifted", "nonlifted", "fddp", "ipopt"]
    assert main([*argv, "--out", str(out), "--json"]) == 0  # unsupported rows do not fail the comparison
    runs = {(s["name"], s["formulation"]): s for s in json.loads(capsys.readouterr().out)}
    assert {key: s["status"] for key, s in runs.items()} == {
        ("rigid", "lifted"): "converged",
        ("rigid", "nonlifted"): "unsupported",  # sliding friction: the lifted formulation only
        ("rigid", "fddp"): "unsupported",
        ("rigid", "ipopt"): "unsupported",
        ("soft", "lifted"): "converged",
        ("soft", "nonlifted"): "converged",
        ("soft", "fddp"): "unsupported",
        ("soft", "ipopt"): "unsupported",
    }
    assert "sliding friction needs the lifted formulation" in runs["rigid", "nonlifted"]["message"]
    assert runs["soft", "fddp"]["message"] == "the baselines solve gait configurations"
    with open(out / "table.csv", newline="") as f:
        table = {(row["gait"], row["formulation"]): row for row in csv.DictReader(f)}
    assert table["rigid", "lifted"]["contact"] == "rigid" and table["soft", "lifted"]["contact"] == "soft"
    assert table["rigid", "fddp"]["end_force_N"] == ""  # nothing solved
    rigid_end = float(table["rigid", "lifted"]["end_force_N"])
    assert abs(rigid_end - 30.0) <= 1.0 and float(table["rigid", "lifted"]["target_force_N"]) == 30.0
    task = make_task(load_config(soft, PolishingConfig))
    contact = task.soft_contact()
    for form in ("lifted", "nonlifted"):
        s = runs["soft", form]
        run = load_run(out / f"soft_{form}_0.001.npz")
        state = dynamics.soft_contact_state(task.model, run["q"][-2], run["v"][-2], contact)  # the last stage
        np.testing.assert_allclose(s["end_force_N"], state.f_n, atol=1e-9)
        np.testing.assert_allclose(contact.stiffness * state.d, 30.0, atol=0.05)  # the spring holds the target
        np.testing.assert_allclose(s["end_force_N"], 30.0 + contact.damping * state.d_dot, atol=0.05)  # the damper
        assert s["end_force_N"] < 29.0  # the pad leaves the surface at the horizon's end
        np.testing.assert_allclose(s["median_force_N"], 30.0, atol=0.05)
    written = {p.name for p in out.iterdir()}
    assert {"kkt.png", "time.png", "normal_force.png", "table.md"} <= written
    assert not [n for n in written if n.startswith("forces_")]
    assert "| soft | lifted | 0.001 | static | converged |" in (out / "table.md").read_text().replace("  ", " ")


def test_compare_takes_gait_and_polishing_configurations_in_one_call(tmp_path, capsys):
    configs = [write(tmp_path, TINY, "tiny.yaml"), polishing_file(tmp_path, "rigid")]
    out = tmp_path / "mixed"
    argv = ["compare", *configs, "--barrier", "0.1", "--formulation", "lifted", "--out", str(out), "--json"]
    assert main(argv) == 0
    summaries = {s["name"]: s for s in json.loads(capsys.readouterr().out)}
    assert [s["status"] for s in summaries.values()] == ["converged", "converged"]
    assert "end_force_N" not in summaries["tiny"] and summaries["rigid"]["contact"] == "rigid"
    assert {"forces_tiny.png", "normal_force.png"} <= {p.name for p in out.iterdir()}
    assert main(["report", str(out)]) == 0
    lines = capsys.readouterr().out.replace("  ", " ").splitlines()
    assert lines[0].endswith("| contact | end_force_N | median_force_N | target_force_N |")
    assert any(line.startswith("| tiny | lifted |") and line.endswith("| | | | |") for line in lines)


def test_compare_refuses_a_gait_mpc_configuration_in_one_line(tmp_path, capsys):
    path = write(tmp_path, {"task": "gait_mpc"}, "mpc.yaml")
    assert main(["compare", write(tmp_path, TINY, "tiny.yaml"), path, "--out", str(tmp_path / "c")]) == 2
    assert "a task: gait_mpc configuration runs with liftoff mpc" in one_error_line(capsys)
    assert not (tmp_path / "c").exists()
