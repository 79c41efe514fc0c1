"""Configurations mutated at random (keys dropped or renamed, values retyped, extreme or not
finite, lists of the wrong length) run through the command line in process: the exit status
is 0, 1 or 2 and the only output on stderr is the log or one error line, never a traceback."""

from __future__ import annotations

import math

import yaml
from hypothesis import HealthCheck, given, settings
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


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    edits=st.lists(
        st.tuples(st.sampled_from(PATHS), st.sampled_from(["drop", "rename", "set"]), st.sampled_from(ODD_VALUES)),
        min_size=1,
        max_size=3,
    )
)
def test_mutated_configurations_exit_0_1_or_2_with_one_error_line(tmp_path, capsys, edits):
    data = BASE
    for path, action, value in edits:
        data = mutated(data, path, action, value)
    config = tmp_path / "fuzz.yaml"
    config.write_text(yaml.safe_dump(data))
    status = main(["solve", str(config), "--json", "--max-iterations", "2", "--out", str(tmp_path / "r.npz")])
    err = capsys.readouterr().err
    assert status in (0, 1, 2)
    assert "Traceback" not in err
    if status == 2:
        assert err.startswith("liftoff: error:") and err.count("\n") == 1, err
