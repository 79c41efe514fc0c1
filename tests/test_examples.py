"""The example scripts run headless and show what they claim."""

import re
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run(script):
    done = subprocess.run([sys.executable, str(EXAMPLES / script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_dynamics_tour_torques_agree_with_mass_matrix_form():
    out = run("dynamics_tour.py")
    gap = float(re.search(r"max \|M a \+ h - tau\| = (\S+)", out).group(1))
    assert gap < 1e-9
    assert "tau: (100, 18)" in out
