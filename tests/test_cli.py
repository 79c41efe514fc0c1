"""The ``liftoff`` command line: what it prints and how it fails."""

import argparse
import io
import subprocess
import sys

import pytest

from liftoff.problems.cli import main
from liftoff.problems.cli.arguments import ClosableOutput
from liftoff.problems.studies.runs import load_run


def test_info_prints_the_model_dimensions(capsys):
    assert main(["info", "anymal"]) == 0
    out = capsys.readouterr().out
    assert "nq, nv   19, 18" in out
    assert "LF_HAA" in out and "free_flyer" in out


def test_info_of_a_reduced_model(capsys):
    assert main(["info", "talos", "--lock", "torso_1_joint=0.1", "torso_2_joint=0"]) == 0
    assert "nq, nv   37, 36" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["info", "nope"], "unknown robot 'nope'"),
        (["info", "anymal", "--lock", "LF_HAA"], "--lock expects JOINT=VALUE"),
        (["info", "anymal", "--lock", "LF_HAA=abc"], "is not a number"),
        (["info", "anymal", "--lock", "LF_HAX=0"], "cannot lock unknown joint 'LF_HAX'"),
        (["info", "/no/such/robot.urdf"], "URDF file not found"),
        (["bench", "constrained", "--algorithm", "foo"], "--algorithm: unknown 'foo'"),
        (["bench", "constrained", "--scaling", "--tree-sizes", "10"], "got 10 (nearest: 9 or 21)"),
        (["bench", "solve", "--gait", "crawl"], "--gait: unknown 'crawl'; choose among walk, trot, pace, bound, jump"),
        (["bench", "ddp", "/no/such/gait.yaml"], "/no/such/gait.yaml"),
        (["bench", "constrained", "--figure", "x.png"], "--figure draws the scaling study: use it with --scaling"),
        (["bench", "constrained", "--scaling", "--figure", "/"], "/"),
        (["bench", "constrained", "--tables", "--whiskers"], "are separate studies: run one at a time"),
    ],
)
def test_user_errors_exit_2_with_one_line(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.startswith("liftoff: error:") and err.count("\n") == 1


@pytest.mark.parametrize("missing", ["crocoddyl", "threadpoolctl"])
def test_solve_benchmark_without_its_extra_says_how_to_install_it(capsys, monkeypatch, missing):
    monkeypatch.setitem(__import__("sys").modules, missing, None)  # the import fails
    assert main(["bench", "solve", "--gait", "trot", "--repeat", "1"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("liftoff: error:") and err.count("\n") == 1
    assert 'pip install -e ".[bench]"' in err


def test_ddp_crosscheck_without_crocoddyl_says_how_to_install_it(capsys, monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "crocoddyl", None)
    assert main(["bench", "ddp"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("liftoff: error:") and err.count("\n") == 1
    assert 'pip install -e ".[bench]"' in err and "Crocoddyl's FDDP" in err


def test_an_interrupt_while_starting_is_one_line(capsys, monkeypatch):
    from liftoff import dynamics

    def interrupted():
        raise KeyboardInterrupt

    monkeypatch.setattr(dynamics, "retain_freed_memory", interrupted)  # the start-up, before any command runs
    assert main(["info", "anymal"]) == 130
    assert capsys.readouterr().err == "liftoff: error: interrupted\n"


def test_an_interrupt_while_compiling_starts_its_own_line(tiny, tmp_path, capsys, monkeypatch):
    from liftoff.dynamics import codegen

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setenv("LIFTOFF_CACHE", str(tmp_path / "empty"))
    monkeypatch.setattr(codegen, "_run_compiler", interrupted)
    assert main(["solve", tiny, "--out", str(tmp_path / "r.npz")]) == 130
    lines = capsys.readouterr().err.splitlines(keepends=True)
    assert lines[0].startswith("liftoff: compiling ") and lines[0].endswith(" ...\n")
    assert lines[1:] == ["liftoff: error: interrupted\n"]


def test_ctrl_c_stops_the_live_viewer_as_a_normal_end(capsys, monkeypatch):
    from liftoff.problems import viewer
    from liftoff.problems.cli import view

    class Server:
        killed = False

        def kill(self):
            self.killed = True

    class Visualizer:
        window = type("Window", (), {"server_proc": Server()})()

        def url(self):
            return "http://127.0.0.1:7000/static/"

    def ctrl_c(seconds):
        raise KeyboardInterrupt

    monkeypatch.setattr(viewer, "load", lambda path: "motion")
    monkeypatch.setattr(viewer, "show", lambda motion, speed: Visualizer())
    monkeypatch.setattr(view.time, "sleep", ctrl_c)
    assert main(["view", "run.npz"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    assert captured.out.splitlines()[-1] == "stopped the viewer"
    assert Visualizer.window.server_proc.killed


def test_a_closed_standard_output_does_not_stop_the_solve(tiny, tmp_path):
    """``liftoff solve ... | head -1``: the reader goes away after the first line; the solve
    runs to its end, saves its file and exits as it would have."""
    out = tmp_path / "r.npz"
    command = [sys.executable, "-m", "liftoff", "solve", tiny, "--out", str(out)]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().startswith("tiny: lifted")
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 0, err
    assert "error" not in err and "Traceback" not in err and "Exception" not in err, err
    assert load_run(out)["summary"]["status"] == "converged"


def test_the_standard_output_wrapper_leaves_a_stream_closed_by_its_owner_alone():
    """``main`` wraps ``sys.stdout`` for its run; the wrapper, collected after whoever passed the
    stream closed it (a caller's redirection), flushes nothing and raises nothing."""
    stream = io.TextIOWrapper(io.BytesIO())  # a file's stream: flushing it once closed raises
    wrapper = ClosableOutput(stream)
    wrapper.write("a line\n")
    stream.close()
    wrapper.close()  # what collecting it does
    assert wrapper.closed and not wrapper.closed_by_reader


@pytest.mark.parametrize(
    "argv, message",
    [
        (["report", "{tmp}/nowhere"], "{tmp}/nowhere: no such folder"),
        (["report", "{tmp}/tiny.yaml"], "{tmp}/tiny.yaml: not a folder"),
        (["view", "{tmp}/tiny.yaml", "--html", "{tmp}/x.html"], "{tmp}/tiny.yaml: not a liftoff results file"),
        (["view", "{tmp}/nowhere.npz"], "{tmp}/nowhere.npz: file not found"),
        (["view", "{tmp}", "--html", "{tmp}/x.html"], "{tmp}: a folder, not a liftoff results file"),
    ],
)
def test_a_missing_or_wrong_input_is_named(tiny, tmp_path, capsys, argv, message):
    assert main([a.format(tmp=tmp_path) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("liftoff: error:") and err.count("\n") == 1, err
    assert message.format(tmp=tmp_path) in err
    assert "pickled" not in err
    assert not (tmp_path / "x.html").exists()


def polishing(tmp_path, text):
    path = tmp_path / "polishing.yaml"
    path.write_text("task: polishing\nmpc: {horizon: 10, duration: 0.02}\nplant: {engine: liftoff}\n" + text)
    return str(path)


@pytest.mark.parametrize(
    "push, message",
    [
        (
            "arm_rigt_7_link:0,0,-20:0:0.1",
            "--push arm_rigt_7_link:0,0,-20:0:0.1: talos has no frame 'arm_rigt_7_link'; did you mean arm_right_7_link",
        ),
        ("zzz:0,0,-20:0:0.1", "--push zzz:0,0,-20:0:0.1: talos has no frame 'zzz'; its frames are its URDF's links"),
    ],
)
def test_a_push_on_an_unknown_frame_names_the_option_and_close_frames(tmp_path, capsys, monkeypatch, push, message):
    config = polishing(tmp_path, "")
    refuse_compiling(monkeypatch)
    assert main(["mpc", config, "--push", push, "--out", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("liftoff: error:") and err.count("\n") == 1, err
    assert message in err
    assert not (tmp_path / "out" / "run.npz").exists()


def test_a_push_on_an_unknown_frame_of_a_legged_robot_is_refused_before_compiling(tmp_path, capsys, monkeypatch):
    refuse_compiling(monkeypatch)
    argv = ["mpc", "configs/anymal_trot_mpc.yaml", "--push", "LF_FOTO:0,50,0:0.2:0.1", "--out", str(tmp_path)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    head = "liftoff: error: --push LF_FOTO:0,50,0:0.2:0.1: anymal has no frame 'LF_FOTO'; did you mean LF_FOOT"
    assert err.startswith(head) and err.count("\n") == 1


def refuse_compiling(monkeypatch):
    """Make a kernel or library that is compiled or loaded from here on fail the test: a run
    checks its pushes' frames before it builds anything."""
    from liftoff.dynamics import codegen

    monkeypatch.setattr(codegen, "compiler", lambda: pytest.fail("compiled before the pushes were checked"))


def test_an_unknown_controlled_joint_is_named(tmp_path, capsys):
    """Not the length of a weight vector that follows the joints."""
    config = polishing(tmp_path, "controlled: [torso_1_joint, nojoint]\n")
    assert main(["mpc", config, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"liftoff: error: {config}: controlled[1]: talos has no joint 'nojoint'; did you mean ")
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    "update, barrier, hessian, expected",
    [
        (None, None, None, {}),
        (None, 1e-3, None, {"barrier": 1e-3}),
        ("fixed", 1e-4, None, {"barrier_update": "fixed", "barrier": 1e-4}),
        ("monotone", 1e-4, None, {"barrier_update": "monotone", "barrier": 0.1, "barrier_min": 1e-4}),
        ("adaptive", None, None, {"barrier_update": "adaptive", "barrier": 1.0, "barrier_min": 1e-4}),
        (None, None, "exact", {"hessian": "exact"}),
        (
            "adaptive",
            1e-5,
            "exact",
            {"hessian": "exact", "barrier_update": "adaptive", "barrier": 1.0, "barrier_min": 1e-5},
        ),
    ],
)
def test_the_solve_benchmarks_solver_options_set_the_solvers_course(update, barrier, hessian, expected):
    from liftoff.problems.cli.bench import _solver_overrides

    assert _solver_overrides(argparse.Namespace(barrier_update=update, barrier=barrier, hessian=hessian)) == expected
