"""The example scripts run headless and show what they claim."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run(script, *args, cwd=None):
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args], capture_output=True, text=True, timeout=120, cwd=cwd
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_dynamics_tour_torques_agree_with_mass_matrix_form():
    out = run("dynamics_tour.py")
    gap = float(re.search(r"max \|M a \+ h - tau\| = (\S+)", out).group(1))
    assert gap < 1e-9
    assert "tau: (100, 18)" in out


@pytest.mark.heavy
def test_trot_example_solves_both_formulations_to_the_same_cost(tmp_path):
    out = run("trot.py", "--plot", cwd=tmp_path)
    costs = [float(c) for c in re.findall(r"converged in \d+ iterations, cost (\S+),", out)]
    assert len(costs) == 2
    assert abs(costs[0] - costs[1]) <= 1e-8 * abs(costs[0])
    assert float(re.search(r"base moved (\S+) m forward", out).group(1)) > 0.1
    assert [p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")] == ["results", "results/trot_forces.png"]


@pytest.mark.heavy
def test_polishing_example_holds_the_force_outside_the_push():
    """On MuJoCo's table of friction 0.3 the sliding pad chatters: its force is read over each MPC
    period, and it never leaves the table for a whole one."""
    out = run("polishing_mpc.py")
    assert "MuJoCo" in out and ": completed" in out
    found = re.search(r"normal force \(10 ms means\) (\S+) to (\S+) N outside the push, RMS error (\S+) N", out)
    low, high, rms = (float(x) for x in found.groups())
    assert 15.0 < low <= high < 45.0 and rms < 4.0
    assert float(re.search(r"during the push: down to (\S+) N", out).group(1)) < 22.0
    assert ", 0 MPC periods" in out  # without contact
    assert "200 MPC updates" in out


@pytest.mark.heavy
def test_anymal_mpc_example_trots_through_the_push():
    out = run("anymal_mpc.py")
    assert "MuJoCo" in out and ": completed after 2 s" in out
    assert float(re.search(r"base moved (\S+) m forward", out).group(1)) > 0.35
    low = float(re.search(r"base height (\S+) to", out).group(1))
    assert low > 0.4  # standing through the push
    assert int(re.search(r"(\d+) touchdowns", out).group(1)) >= 10
    assert float(re.search(r"touchdowns, (\S+) ms off the plan", out).group(1)) < 20.0
    assert "400 MPC updates" in out
