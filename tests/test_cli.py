"""The ``liftoff`` command line: what it prints and how it fails."""

import pytest

from liftoff.problems.cli import main


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
