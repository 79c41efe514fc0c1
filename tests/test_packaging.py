"""liftoff as a user installs it from a wheel: every subpackage, C source and header in it, and a solve
run by the installed ``liftoff`` from outside the source tree."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import yaml
from test_cli_solve import TINY

ROOT = Path(__file__).resolve().parent.parent


def test_the_wheel_holds_every_subpackage_and_solves_outside_the_source_tree(tmp_path):
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path / "wheel"), str(ROOT)],
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "wheel").glob("liftoff-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        (info,) = {n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA")}
        metadata = archive.read(f"{info}/METADATA").decode()
        license_text = archive.read(f"{info}/licenses/LICENSE")
    packages = {
        p.parent.relative_to(ROOT)
        for top in ("dynamics", "ocp", "solvers", "problems")
        for p in ROOT.glob(f"{top}/**/__init__.py")
    }
    for package in packages:
        assert f"liftoff/{package.as_posix()}/__init__.py" in names
    layers = ("dynamics", "ocp", "solvers", "problems")
    sources = [p.relative_to(ROOT).as_posix() for top in layers for p in (ROOT / top).glob("**/*.[ch]")]
    assert {"problems/mpc/plants/mujoco_readings.c", "dynamics/vectors.h"} <= set(sources)
    assert all(f"liftoff/{s}" in names for s in sources), sorted(set(sources) - {n[8:] for n in names})
    assert license_text == (ROOT / "LICENSE").read_bytes()  # the text travels with the binary, as BSD-3-Clause asks
    assert "License-File: LICENSE" in metadata.splitlines()
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"]
    assert f"License-Expression: {declared}" in metadata.splitlines()

    site = tmp_path / "site"
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site), str(wheel)],
        capture_output=True,
        text=True,
    )
    assert installed.returncode == 0, installed.stderr
    work = tmp_path / "elsewhere"
    work.mkdir()
    (work / "tiny.yaml").write_text(yaml.safe_dump(TINY), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(site)}
    where = subprocess.run(
        [sys.executable, "-c", "import liftoff.ocp, liftoff.problems.cli; print(liftoff.ocp.__file__)"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
    )
    assert Path(where.stdout.strip()).is_relative_to(site), where.stderr
    solved = subprocess.run(
        [sys.executable, "-m", "liftoff", "solve", "tiny.yaml", "--out", "tiny.npz", "--json"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
    )
    assert solved.returncode == 0, solved.stderr
    assert json.loads(solved.stdout)["status"] == "converged"
    assert (work / "tiny.npz").is_file()


def test_import_liftoff_gives_the_version_and_the_entry_points_on_first_use():
    code = (
        "import sys, importlib.metadata, liftoff\n"
        "light = not any(m.startswith('liftoff.problems') for m in sys.modules)\n"
        "names = [liftoff.load_config, liftoff.build_problem, liftoff.Formulation, liftoff.solve, liftoff.MPC]\n"
        "print(light, liftoff.__version__ == importlib.metadata.version('liftoff'), [n.__name__ for n in names])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.stdout.strip().split(maxsplit=2) == [
        "True",
        "True",
        "['load_config', 'build_problem', 'Formulation', 'solve', 'MPC']",
    ]
