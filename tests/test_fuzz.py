"""Inputs mutated at random run through the command line in process: gait and MPC configurations
(keys dropped or renamed, values retyped, extreme or not finite, lists of the wrong length), ``--push``
strings, sweep specs, damaged results files given to ``report`` and ``view``, and URDFs given to
``info`` (inertias missing or absurd, zero masses, unknown joint types, cycles). The exit status
is 0, 1 or 2, the only output on stderr is the log or one error line, never a traceback, and a
command that fails leaves the files it would have written as they were."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_cli_solve import TINY

from liftoff.problems.cli import main

ODD_VALUES = [None, "x", "1e-4", [], {}, True, 0, -1, 1e308, -1e308, math.inf, math.nan, 1e-300, [1, 2, 3], [0.0] * 19]


def key_paths(data, prefix=()):
    """Every key path of a nested mapping (list items included)."""
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    for key, value in items:
        yield prefix + (key,)
        yield from key_paths(value, prefix + (key,))


BASE = {
    **TINY,
    "initial_state": {"q": "standing", "v": "zero"},
    "contacts": {**TINY["contacts"], "friction": 0.7, "baumgarte": {"alpha": 25.0, "beta": 25.0}},
    "costs": {"com": 1e6, "state": {"base_orientation": 2.5e5}},
    "limits": ["position", "velocity", "torque"],
    "solver": {**TINY["solver"], "backend": "numpy", "barrier": 0.1},
}
PATHS = list(key_paths(BASE))


def mutated(data, path, action, value):
    """``data`` with the key (or item) at ``path`` dropped, renamed or set to ``value``; as it
    is when an earlier edit removed the path."""
    data = yaml.safe_load(yaml.safe_dump(data))  # a deep copy
    node = data
    for key in path[:-1]:
        if isinstance(node, dict):
            inside = key in node
        else:
            inside = isinstance(node, list) and isinstance(key, int) and key < len(node)
        if inside:
            node = node[key]
        else:
            return data
    last = path[-1]
    if isinstance(node, list):
        if isinstance(last, int) and last < len(node):
            if action == "drop":
                node.pop(last)
            else:
                node[last] = value
    elif isinstance(node, dict) and last in node:
        if action == "drop":
            node.pop(last)
        elif action == "rename":
            node[f"{last}_typo"] = node.pop(last)
        else:
            node[last] = value
    return data


def runs_cleanly(status, err):
    """The invariant of every fuzzed input: exit 0, 1 or 2, no traceback, an error in one line."""
    assert status in (0, 1, 2), err
    assert "Traceback" not in err, err
    if status == 2:
        assert err.startswith("liftoff: error:") and err.count("\n") == 1, err


def edit_lists(paths, max_size):
    """Lists of edits ``(path, action, value)`` of the key ``paths`` (:func:`mutated`)."""
    edit = st.tuples(st.sampled_from(paths), st.sampled_from(["drop", "rename", "set"]), st.sampled_from(ODD_VALUES))
    return st.lists(edit, min_size=1, max_size=max_size)


def edited_file(folder, data, edits):
    """The YAML file ``fuzz.yaml`` in ``folder`` of ``data`` with ``edits`` made one after the other."""
    for path, action, value in edits:
        data = mutated(data, path, action, value)
    config = folder / "fuzz.yaml"
    config.write_text(yaml.safe_dump(data))
    return config


@pytest.mark.heavy
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=edit_lists(PATHS, 3))
def test_mutated_configurations_exit_0_1_or_2_with_one_error_line(tmp_path, capsys, edits):
    config = edited_file(tmp_path, BASE, edits)
    status = main(["solve", str(config), "--json", "--max-iterations", "2", "--out", str(tmp_path / "r.npz")])
    runs_cleanly(status, capsys.readouterr().err)


# ----------------------------------------------------------------------------- the other inputs

EXAMPLES = 25  # per input kind: each example runs the command in process, in well under a second


def unchanged(files) -> bool:
    """Whether every previous file holds what it held."""
    return all(path.read_bytes() == data for path, data in files.items())


# MPC configurations: the polishing task's, on a short horizon for a few updates
POLISHING = yaml.safe_load(
    (Path(__file__).resolve().parent.parent / "configs" / "polishing_horizontal.yaml").read_text()
)
POLISHING["mpc"].update(horizon=4, duration=0.02)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])  # a run each
@given(edits=edit_lists(list(key_paths(POLISHING)), 2))
@example(edits=[(("task",), "set", [0.0, 1.0])])  # a task that is not a name
@example(edits=[(("surface", "normal", 2), "set", -1e308)])  # a normal whose norm overflows
def test_mutated_mpc_configurations_exit_0_1_or_2_with_one_error_line(tmp_path, capsys, edits):
    config = edited_file(tmp_path, POLISHING, edits)
    status = main(["mpc", str(config), "--json", "--quiet", "--out", str(tmp_path / "out")])
    runs_cleanly(status, capsys.readouterr().err)


# --push: a frame, a force, a start and a duration; each part sometimes wrong
FRAMES = ["", "zzz", "arm_rigt_7_link", "a:b", " arm_right_7_link", "arm_right_7_link"]
FORCES = ["", "0,0", "a,b,c", "nan,0,0", "0,inf,0", "1e999,0,0", "0,0,-20,1", "0,0,-20"]
TIMES = ["", "x", "-1", "nan", "inf", "1e300", "0"]
DURATIONS = ["", "x", "0", "-0.1", "nan", "inf", "0.01"]
PUSH = st.one_of(
    st.text(st.sampled_from("arm_right7:,.-0e9nx "), max_size=30),
    st.builds(
        lambda *parts: ":".join(parts),
        st.sampled_from(FRAMES),
        st.sampled_from(FORCES),
        st.sampled_from(TIMES),
        st.sampled_from(DURATIONS),
    ),
)


@pytest.fixture(scope="module")
def polishing_run(tmp_path_factory):
    """A short polishing MPC on liftoff's plant, and the results it wrote."""
    folder = tmp_path_factory.mktemp("push")
    config = folder / "polishing.yaml"
    config.write_text("task: polishing\nmpc: {horizon: 4, duration: 0.01}\nplant: {engine: liftoff}\n")
    out = folder / "out"
    assert main(["mpc", str(config), "--out", str(out), "--quiet"]) == 0
    return str(config), out


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pushes=st.lists(PUSH, min_size=1, max_size=2))
@example(pushes=["--"])  # argparse reads --push=-- as an empty list
def test_pushes_exit_0_1_or_2_with_one_error_line(polishing_run, capsys, pushes):
    config, out = polishing_run
    previous = {path: path.read_bytes() for path in out.iterdir()}
    argv = ["mpc", config, "--out", str(out), "--quiet", "--json"]
    status = main(argv + [f"--push={push}" for push in pushes])
    runs_cleanly(status, capsys.readouterr().err)
    assert status == 0 or unchanged(previous)


# sweep specs: a valid one mutated as the configurations are
SPEC = {
    "name": "fuzz",
    "configs": ["tiny.yaml"],
    "grid": {"contacts.baumgarte.alpha, contacts.baumgarte.beta": [10, 25], "solver.formulation": ["lifted"]},
    "cases": [{"solver.barrier": 0.1}],
    "random": {
        "seed": 0,
        "count": 1,
        "uniform": {"gait.step_height": [0.01, 0.03]},
        "choice": {"solver.init": ["static"]},
    },
    "plot": {"x": "contacts.baumgarte.alpha", "y": "iterations", "lines": "solver.formulation"},
}
SPEC_VALUES = [None, "x", [], {}, True, 0, -1, 1e308, math.nan, [1, 2], "solver.nope", "gait.phases[9].knots", 1e7]


@pytest.fixture
def in_process_pool(monkeypatch):
    """The sweep's cases solved one after the other in this process (no worker to start)."""
    from liftoff.problems.studies import sweep

    def pool(todo, out_dir, workers, scheduler):
        for case in todo:
            yield case, sweep.solve_case(case, str(sweep.results_path(out_dir, case)))

    monkeypatch.setattr(sweep, "_pool", pool)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    edits=st.lists(
        st.tuples(
            st.sampled_from(list(key_paths(SPEC))),
            st.sampled_from(["drop", "rename", "set"]),
            st.sampled_from(SPEC_VALUES),
        ),
        min_size=1,
        max_size=2,
    )
)
def test_mutated_sweep_specs_exit_0_1_or_2_with_one_error_line(tmp_path, capsys, in_process_pool, edits):
    tiny = {**BASE, "gait": {**BASE["gait"]}, "solver": {**BASE["solver"], "max_iterations": 2}}
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(tiny))
    data = SPEC
    for path, action, value in edits:
        data = mutated(data, path, action, value)
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(data))
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    previous = {out / "table.csv": b"a previous table\n"}
    (out / "table.csv").write_bytes(b"a previous table\n")
    status = main(["sweep", str(spec), "--out", str(out), "--workers", "1", "--json"])
    runs_cleanly(status, capsys.readouterr().err)
    assert status != 2 or unchanged(previous)


# results files: truncated, keys dropped, arrays reshaped or retyped, NaN, summaries rewritten
@pytest.fixture(scope="module")
def results_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("results") / "tiny_lifted_0.1.npz"
    tiny = tmp_path_factory.mktemp("config") / "tiny.yaml"
    tiny.write_text(yaml.safe_dump(BASE))
    assert main(["solve", str(tiny), "--out", str(path), "--quiet"]) == 0
    return path


def damaged(data: bytes, arrays: dict, damage) -> bytes:
    """The results file ``data`` (its ``arrays``) damaged as ``damage`` says."""
    import io

    kind, index, value = damage
    if kind == "truncate":
        return data[: int(len(data) * value)]
    arrays = dict(arrays)
    key = sorted(arrays)[index % len(arrays)]
    if kind == "drop":
        arrays.pop(key)
    elif kind == "reshape":
        arrays[key] = np.asarray(arrays[key]).ravel()[: max(1, int(np.size(arrays[key]) * value))]
    elif kind == "nan":
        x = np.asarray(arrays[key])
        arrays[key] = np.full(x.shape, np.nan) if np.issubdtype(x.dtype, np.number) else np.asarray("nan")
    elif kind == "retype":
        arrays[key] = np.asarray(["x"] * max(1, np.size(arrays[key])))
    elif kind == "summary":
        summary = json.loads(str(arrays["summary"]))
        field = sorted(summary)[index % len(summary)]
        summary[field] = [None, "x", math.nan, -1, [], {}][int(value * 5.99)]
        arrays["summary"] = np.asarray(json.dumps(summary))
    elif kind == "config":
        config = json.loads(str(arrays["config"]))
        config.pop(sorted(config)[index % len(config)])
        arrays["config"] = np.asarray(json.dumps(config))
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


DAMAGE = st.tuples(
    st.sampled_from(["truncate", "drop", "reshape", "nan", "retype", "summary", "config"]),
    st.integers(0, 100),
    st.floats(0.0, 1.0),
)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(damage=DAMAGE, command=st.sampled_from(["report", "view"]))
@example(damage=("summary", 12, 0.5), command="report")  # a solve time that is not a number (NaN)
def test_damaged_results_files_exit_0_1_or_2_with_one_error_line(results_file, tmp_path, capsys, damage, command):
    with np.load(results_file) as data:
        arrays = {key: data[key] for key in data.files}
    folder = tmp_path / "compare"
    folder.mkdir(exist_ok=True)
    for old in folder.glob("*.npz"):
        old.unlink()
    path = folder / results_file.name
    path.write_bytes(damaged(results_file.read_bytes(), arrays, damage))
    page = tmp_path / "page.html"
    page.write_text("a previous page")
    (folder / "table.md").write_text("a previous table")
    previous = {page: b"a previous page", folder / "table.md": b"a previous table", path: path.read_bytes()}
    argv = ["report", str(folder)] if command == "report" else ["view", str(path), "--html", str(page)]
    status = main(argv)
    runs_cleanly(status, capsys.readouterr().err)
    assert status == 0 or unchanged(previous)


# URDFs: inertias missing or absurd, zero masses, unknown joint types, cycles, missing links
LINKS = ["base", "a", "b", "c"]
MASSES = [None, "1", "0", "-1", "nan", "inf", "x"]
INERTIAS = [None, 'ixx="0.1" iyy="0.1" izz="0.1"', 'ixx="nan"', 'ixx="-1" iyy="1" izz="1"', 'ixx="x"', ""]
JOINT_TYPES = ["revolute", "continuous", "prismatic", "fixed", "floating", "planar", "weird", None]
AXES = [None, "0 0 1", "0 0 0", "1 0", "nan 0 0", "x y z"]
LIMITS = [None, 'lower="-1" upper="1" effort="10" velocity="5"', 'lower="1" upper="-1"', 'lower="nan"', 'effort="x"']
MATERIALS = ["", '<material name="m"><color rgba="1 0 0 1"/></material>', '<material name="m"><color/></material>']


def link_xml(name, mass, inertia):
    inside = ""
    if mass is not None or inertia is not None:
        inside = "<inertial>"
        inside += "" if mass is None else f'<mass value="{mass}"/>'
        inside += "" if inertia is None else f"<inertia {inertia}/>"
        inside += "</inertial>"
    return f'<link name="{name}">{inside}</link>'


def joint_xml(name, kind, parent, child, axis, limit):
    name = "" if name is None else f' name="{name}"'
    kind = "" if kind is None else f' type="{kind}"'
    axis = "" if axis is None else f'<axis xyz="{axis}"/>'
    limit = "" if limit is None else f"<limit {limit}/>"
    return f'<joint{name}{kind}><parent link="{parent}"/><child link="{child}"/>{axis}{limit}</joint>'


URDF = st.tuples(
    st.lists(st.tuples(st.sampled_from(LINKS), st.sampled_from(MASSES), st.sampled_from(INERTIAS)), max_size=4),
    st.lists(
        st.tuples(
            st.sampled_from(["j1", "j2", "j3", None]),
            st.sampled_from(JOINT_TYPES),
            st.sampled_from(LINKS + ["ghost"]),
            st.sampled_from(LINKS + ["ghost"]),
            st.sampled_from(AXES),
            st.sampled_from(LIMITS),
        ),
        max_size=4,
    ),
    st.sampled_from(MATERIALS),
    st.floats(0.0, 1.0),  # where the text is cut (1: whole)
)


@settings(max_examples=3 * EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(urdf=URDF, base=st.sampled_from([[], ["--fixed-base"], ["--floating-base"]]))
def test_urdfs_exit_0_or_2_with_one_error_line(tmp_path, capsys, urdf, base):
    links, joints, material, cut = urdf
    text = f'<robot name="fuzz">{material}' + "".join(link_xml(*link) for link in links)
    text += "".join(joint_xml(*joint) for joint in joints) + "</robot>"
    path = tmp_path / "fuzz.urdf"
    path.write_text(text[: int(len(text) * cut)] if cut < 0.98 else text)
    status = main(["info", str(path), *base])
    captured = capsys.readouterr()
    runs_cleanly(status, captured.err)
    assert status in (0, 2)
    if status == 0:  # a model of finite, non-negative mass
        mass = float(re.search(r"^mass +(\S+) kg$", captured.out, re.MULTILINE).group(1))
        assert math.isfinite(mass) and mass >= 0, captured.out
