"""The JSON Schema of the configuration (``liftoff schema``) accepts the shipped configurations
and rejects what the loader rejects for structure: unknown keys, wrong types, unknown names."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml
from test_config import DELETE, edit

from liftoff.problems.cli import main

CONFIGS = sorted((Path(__file__).resolve().parent.parent / "configs").glob("*.yaml"))


def validator_of(task):
    from liftoff.problems.tasks.schema import json_schema

    schema = json_schema(task)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.fixture(scope="module")
def validator():
    return validator_of("gait")


def test_the_command_prints_the_schema(capsys):
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["title"] == "liftoff gait configuration"
    assert "description" in schema["properties"]["gait"]["properties"]["dt"]


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_the_shipped_configurations_are_valid(path):
    data = yaml.safe_load(path.read_text())
    assert list(validator_of(data.get("task", "gait")).iter_errors(data)) == []


def test_the_polishing_schema_rejects_what_its_loader_rejects(capsys):
    assert main(["schema", "--task", "polishing"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["title"] == "liftoff polishing configuration"
    check = jsonschema.Draft202012Validator(schema)
    good = {"task": "polishing", "surface": {"normal": [0, -1, 0]}, "plant": {"engine": "liftoff"}}
    assert list(check.iter_errors(good)) == []
    bad_cases = (
        {"task": "sanding"},
        {"task": "polishing", "surface": {"normal": "up"}},
        {"task": "polishing", "surface": {"normal": [0, 1]}},
        {"task": "polishing", "plant": {"engine": "bullet"}},
        {"task": "polishing", "mpc": {"scheme": "sqp"}},
        {"task": "polishing", "x": 1},
    )
    for bad in bad_cases:
        assert list(check.iter_errors(bad)), bad


@pytest.mark.parametrize(
    "key, value",
    [
        ("gait.dtt", 0.02),  # unknown key
        ("gait.dt", [0.02]),  # wrong type
        ("robot", "anymall"),  # unknown robot
        ("solver.backend", "gpu"),  # unknown backend
        ("solver.barrier_update", "mehrotra"),  # unknown barrier strategy
        ("limits", ["forces"]),  # unknown limit
        ("gait.horizon", DELETE),  # required key
        ("gait.phases", [{"contact": ["LF_FOOT"], "knots": "two"}]),  # wrong item type
    ],
)
def test_structural_errors_are_schema_errors(validator, key, value):
    data = yaml.safe_load(CONFIGS[0].read_text())
    assert list(validator.iter_errors(edit(data, key, value)))
