"""The JSON Schema of the configuration (``liftoff schema``) accepts the shipped configurations
and rejects what the loader rejects for structure: unknown keys, wrong types, unknown names."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml
from test_config import DELETE, edit

from problems.cli import main

CONFIGS = sorted((Path(__file__).resolve().parent.parent / "configs").glob("*.yaml"))


@pytest.fixture(scope="module")
def validator():
    from problems.schema import json_schema

    schema = json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_the_command_prints_the_schema(capsys):
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["title"] == "liftoff gait configuration"
    assert "description" in schema["properties"]["gait"]["properties"]["dt"]


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_the_shipped_configurations_are_valid(validator, path):
    assert list(validator.iter_errors(yaml.safe_load(path.read_text()))) == []


@pytest.mark.parametrize(
    "key, value",
    [
        ("gait.dtt", 0.02),  # unknown key
        ("gait.dt", [0.02]),  # wrong type
        ("robot", "anymall"),  # unknown robot
        ("solver.backend", "gpu"),  # unknown backend
        ("limits", ["forces"]),  # unknown limit
        ("gait.horizon", DELETE),  # required key
        ("gait.phases", [{"contact": ["LF_FOOT"], "knots": "two"}]),  # wrong item type
    ],
)
def test_structural_errors_are_schema_errors(validator, key, value):
    data = yaml.safe_load(CONFIGS[0].read_text())
    assert list(validator.iter_errors(edit(data, key, value)))
