"""The YAML gait configuration: defaults, duration conversion, round trip, file loading,
and one error line naming the key path for each kind of mistake."""

from __future__ import annotations

import copy
import dataclasses
import re

import pytest
import yaml

from liftoff.problems.tasks.config import (
    Baumgarte,
    ConfigError,
    Contacts,
    Costs,
    InitialState,
    Phase,
    Solver,
    StateWeights,
    load_config,
    parse_config,
    to_dict,
    with_solver,
)

FEET = ["LF_FOOT", "LH_FOOT", "RF_FOOT", "RH_FOOT"]


@pytest.fixture
def data():
    """A valid minimal configuration: a trot step of ANYmal."""
    return {
        "robot": "anymal",
        "contacts": {"feet": list(FEET)},
        "gait": {
            "dt": 0.02,
            "horizon": 4,
            "phases": [{"contact": list(FEET), "knots": 2}, {"contact": ["LH_FOOT", "RF_FOOT"], "knots": 2}],
        },
    }


DELETE = object()


def edit(data, dotted, value):
    """``data`` with the key at ``dotted`` (``gait.phases[1].knots``) set to ``value`` or deleted."""
    data = copy.deepcopy(data)
    keys = [int(k) if k.isdigit() else k for k in re.findall(r"[^.\[\]]+", dotted)]
    node = data
    for key in keys[:-1]:
        node = node.setdefault(key, {}) if isinstance(node, dict) else node[key]
    if value is DELETE:
        del node[keys[-1]]
    else:
        node[keys[-1]] = value
    return data


# ----------------------------------------------------------------------------- valid configurations


def test_defaults_fill_omitted_sections_and_keys(data):
    config = parse_config(data)
    assert config.name == ""
    assert config.initial_state == InitialState(q="standing", v="zero")
    assert config.contacts == Contacts(
        feet=tuple(FEET), reference="LOCAL_WORLD_ALIGNED", friction=0.7, baumgarte=Baumgarte(alpha=25.0, beta=25.0)
    )
    assert config.costs.state == StateWeights(
        base_position=0.0, base_orientation=2.5e5, joint_position=1e-4, base_velocity=100.0, joint_velocity=1.0
    )
    assert config.costs.terminal_state == config.costs.state
    assert config.costs.impulse_state == StateWeights(
        base_position=1.0, base_orientation=1.0, joint_position=100.0, base_velocity=100.0, joint_velocity=100.0
    )
    assert (config.costs.control, config.costs.swing_foot, config.costs.com, config.costs.touchdown) == (
        0.1,
        1e6,
        1e6,
        1e6,
    )
    assert config.limits == ("position", "velocity", "torque")
    assert config.solver == Solver(
        formulation="lifted",
        barrier=0.1,
        barrier_update="fixed",
        barrier_min=1e-4,
        max_iterations=100,
        tol=1e-5,
        line_search=False,
    )
    gait = config.gait
    assert (gait.step_length, gait.step_height, gait.jump_length, gait.jump_height) == (0.0, 0.0, 0.0, 0.0)
    assert gait.phases[1] == Phase(contact=("LH_FOOT", "RF_FOOT"), knots=2, duration=None, step_length=None)
    assert config.phase_knots == (2, 2)


def test_partial_sections_keep_the_other_defaults(data):
    data["costs"] = {"control": 0.2, "state": {"joint_position": 3}}
    data["contacts"]["baumgarte"] = {"beta": 10}
    config = parse_config(data)
    assert config.costs == dataclasses.replace(Costs(), control=0.2, state=StateWeights(joint_position=3.0))
    assert config.contacts.baumgarte == Baumgarte(alpha=25.0, beta=10.0)
    assert isinstance(config.costs.state.joint_position, float)  # an int is read as a float


def test_durations_are_converted_to_knots(data):
    data["gait"].update(dt=0.1, horizon=5)  # 0.3 / 0.1 = 2.9999999999999996
    data["gait"]["phases"] = [
        {"contact": FEET, "duration": 0.3},
        {"contact": [], "duration": "2e-1", "step_length": 0.05},
    ]
    config = parse_config(data)
    assert config.phase_knots == (3, 2)
    assert [p.knots for p in config.gait.phases] == [3, 2]
    assert [p.duration for p in config.gait.phases] == [0.3, 0.2]  # kept as written
    assert config.gait.phases[1].contact == ()  # a flight phase
    assert config.gait.phases[1].step_length == 0.05


def test_to_dict_round_trips_through_parse_config_and_yaml(data):
    data.update(
        name="trot",
        initial_state={"q": [0, 0, 0.45, 0, 0, 0, 1] + [0.1] * 12, "v": "zero"},
        limits=["torque", "position"],
        costs={"impulse_state": {"base_position": 7}, "touchdown": 1e3},
        solver={"formulation": "nonlifted", "barrier": "1e-3", "barrier_update": "monotone", "max_iterations": 7},
    )
    data["gait"].update(step_length=0.1, step_height=0.08)
    data["gait"]["phases"][1] = {"contact": ["LH_FOOT", "RF_FOOT"], "duration": 0.04, "step_length": 0.2}
    config = parse_config(data)
    plain = to_dict(config)
    assert "knots" not in plain["gait"]["phases"][1]  # a duration phase is written by its duration
    assert isinstance(plain["limits"], list) and isinstance(plain["initial_state"]["q"], list)
    assert parse_config(plain) == config
    assert parse_config(yaml.safe_load(yaml.safe_dump(plain))) == config  # plain data: safe_dump refuses tuples
    assert config.initial_state.q[2] == 0.45 and config.limits == ("torque", "position")


def test_load_config_reads_yaml_with_exponent_floats(tmp_path):
    text = """
robot: anymal
contacts: {feet: [LF_FOOT, LH_FOOT, RF_FOOT, RH_FOOT]}
gait:
  dt: 2e-2
  horizon: 4
  phases:
    - {contact: [LF_FOOT, LH_FOOT, RF_FOOT, RH_FOOT], knots: 2}
    - {contact: [LH_FOOT, RF_FOOT], duration: 4e-2}
costs:
  state: {joint_position: 1e-4, base_orientation: 2.5e+5}
  control: 1E-3
solver: {barrier: 1e-3, barrier_min: 1e-6, tol: 1e-9, max_iterations: 20}
"""
    assert isinstance(yaml.safe_load("x: 1e-4")["x"], str)  # why strings must be read as floats
    path = tmp_path / "trot_step.yaml"
    path.write_text(text)
    config = load_config(path)
    assert config.name == "trot_step"  # the file stem
    assert config.gait.dt == 0.02 and config.phase_knots == (2, 2)
    assert config.costs.state.joint_position == 1e-4 and config.costs.state.base_orientation == 2.5e5
    assert config.costs.control == 1e-3
    assert (config.solver.barrier, config.solver.barrier_min, config.solver.tol) == (1e-3, 1e-6, 1e-9)
    assert config.solver.max_iterations == 20
    path.write_text("name: my run\n" + text)
    assert load_config(path).name == "my run"


def test_with_solver_replaces_solver_fields_and_validates(data):
    config = parse_config(data)
    changed = with_solver(config, formulation="nonlifted", barrier=1e-3, line_search=True)
    assert changed.solver == Solver(formulation="nonlifted", barrier=1e-3, line_search=True)
    assert dataclasses.replace(changed, solver=config.solver) == config  # nothing else changed
    assert config.solver == Solver()  # the original is untouched
    with pytest.raises(ConfigError, match=r"^solver\.formulation: expected lifted or nonlifted, got 'lifed'$"):
        with_solver(config, formulation="lifed")
    with pytest.raises(ConfigError, match=r"^solver\.barrier: expected a number > 0, got 0\.0$"):
        with_solver(config, barrier=0)
    with pytest.raises(
        ConfigError, match=r"^solver: unknown key 'barier' \(expected one of: formulation, backend, init, barrier,"
    ):
        with_solver(config, barier=1e-3)
    with pytest.raises(ConfigError, match=r"^solver\.backend: expected compiled or numpy, got 'c'$"):
        with_solver(config, backend="c")


def test_sections_are_frozen_and_validated_when_built_in_python(data):
    config = parse_config(data)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.solver.barrier = 1.0
    with pytest.raises(ConfigError, match=r"^tol: expected a number > 0, got -1\.0$"):
        Solver(tol=-1)
    with pytest.raises(ConfigError, match=r"^phases\[0\]\.knots: expected an integer >= 1, got 0$"):
        dataclasses.replace(config, gait=dataclasses.replace(config.gait, phases=({"contact": FEET, "knots": 0},)))


# ----------------------------------------------------------------------------- errors

SOURCE = "configs/x.yaml"

ERRORS = {
    # id: (key to edit, new value, the key path, hints the message must contain)
    "missing dt": ("gait.dt", DELETE, "gait", ["missing required key 'dt'"]),
    "missing section": ("contacts", DELETE, "", ["missing required key 'contacts'"]),
    "null required": ("gait.dt", None, "gait.dt", ["expected a finite number", "got null"]),
    "string for dt": ("gait.dt", "fast", "gait.dt", ["expected a finite number", "got 'fast'"]),
    "list for control": ("costs.control", [1, 2], "costs.control", ["expected a finite number", "got a list"]),
    "bool for float": ("solver.barrier", True, "solver.barrier", ["expected a finite number", "got true"]),
    "bool for int": ("solver.max_iterations", False, "solver.max_iterations", ["expected an integer", "got false"]),
    "float for int": ("gait.horizon", 4.5, "gait.horizon", ["expected an integer", "got 4.5"]),
    "infinite float": ("costs.com", float("inf"), "costs.com", ["expected a finite number", "got inf"]),
    "string for section": ("costs", "none", "costs", ["expected a mapping", "got 'none'"]),
    "unknown top-level key": ("solvr", {}, "", ["unknown key 'solvr'", "expected one of: name, robot, initial_state"]),
    "unknown nested key": (
        "costs.state.base_orientaton",
        1.0,
        "costs.state",
        [
            "unknown key 'base_orientaton'",
            "(expected one of: base_position, base_orientation, joint_position, base_velocity, joint_velocity)",
        ],
    ),
    "negative dt": ("gait.dt", -0.02, "gait.dt", ["expected a number > 0", "got -0.02"]),
    "negative knots": ("gait.phases[1].knots", -3, "gait.phases[1].knots", ["expected an integer >= 1, got -3"]),
    "negative weight": (
        "costs.terminal_state.joint_velocity",
        -1,
        "costs.terminal_state.joint_velocity",
        ["expected a number >= 0"],
    ),
    "horizon mismatch": ("gait.horizon", 5, "gait.phases", ["gait.horizon = 5", "2 + 2 = 4"]),
    "no phases": ("gait.phases", [], "gait.phases", ["expected a non-empty list"]),
    "unknown foot": (
        "gait.phases[1].contact",
        ["LH_FOOT", "RF_FOT"],
        "gait.phases[1].contact",
        ["unknown foot 'RF_FOT'", "contacts.feet: LF_FOOT"],
    ),
    "duplicate foot": (
        "contacts.feet",
        ["LF_FOOT", "LH_FOOT", "LF_FOOT"],
        "contacts.feet[2]",
        ["no duplicates", "'LF_FOOT'"],
    ),
    "no feet": ("contacts.feet", [], "contacts.feet", ["expected a non-empty list"]),
    "bad reference": (
        "contacts.reference",
        "local",
        "contacts.reference",
        ["LOCAL or WORLD or LOCAL_WORLD_ALIGNED", "got 'local'"],
    ),
    "unknown robot": ("robot", "anymall", "robot", ["unknown robot 'anymall'", "anymal, anymal_c"]),
    "knots and duration": (
        "gait.phases[0].duration",
        0.04,
        "gait.phases[0]",
        ["exactly one of 'knots' or 'duration'", "got both"],
    ),
    "neither knots nor duration": (
        "gait.phases[0].knots",
        DELETE,
        "gait.phases[0]",
        ["exactly one of 'knots' or 'duration'", "got neither"],
    ),
    "duration not a multiple of dt": (
        "gait.phases[1]",
        {"contact": [], "duration": 0.05},
        "gait.phases[1].duration",
        ["multiple of gait.dt = 0.02"],
    ),
    "duration below dt": (
        "gait.phases[1]",
        {"contact": [], "duration": 0.005},
        "gait.phases[1].duration",
        ["at least gait.dt = 0.02"],
    ),
    "bad formulation": (
        "solver.formulation",
        "lifed",
        "solver.formulation",
        ["expected lifted or nonlifted", "got 'lifed'"],
    ),
    "bad limits entry": (
        "limits",
        ["position", "forces"],
        "limits[1]",
        ["unknown limit 'forces'", "position, velocity, torque"],
    ),
    "duplicate limit": ("limits", ["torque", "torque"], "limits[1]", ["no duplicates", "'torque'"]),
    "limits not a list": ("limits", "torque", "limits", ["expected a list of strings", "got 'torque'"]),
    "bad q entry": ("initial_state.q", [0.0, "x"], "initial_state.q[1]", ["expected a finite number", "got 'x'"]),
    "number for q": ("initial_state.q", 1.0, "initial_state.q", ["expected a string or a list of finite numbers"]),
    "bad v name": ("initial_state.v", "still", "initial_state.v", ["'zero' or the nv values", "got 'still'"]),
    # finite values beyond any physical use (they used to pass and end as a divergence or an overflow)
    "huge Baumgarte gain": (
        "contacts.baumgarte.alpha",
        1e308,
        "contacts.baumgarte.alpha",
        ["a number <= 1000", "got 1e+308"],
    ),
    "huge time step": ("gait.dt", 1e308, "gait.dt", ["a number <= 1", "got 1e+308"]),
    "huge step length": ("gait.step_length", -1e308, "gait.step_length", ["a number of magnitude <= 2"]),
    "huge friction": ("contacts.friction", 1e308, "contacts.friction", ["a number <= 10"]),
    "huge barrier": ("solver.barrier", 1e308, "solver.barrier", ["a number <= 1000"]),
    "negative relaxation": ("solver.relaxation", -0.1, "solver.relaxation", ["a number >= 0"]),
    "unknown barrier update": (
        "solver.barrier_update",
        "mehrotra",
        "solver.barrier_update",
        ["fixed or monotone or adaptive"],
    ),
    "unknown Hessian": ("solver.hessian", "bfgs", "solver.hessian", ["gauss-newton or exact", "got 'bfgs'"]),
    "huge weight": ("costs.com", 1e300, "costs.com", ["a number <= 1e+12"]),
    "unknown start": ("solver.init", "random", "solver.init", ["expected static or zero_torque", "got 'random'"]),
    "unknown swing profile": ("gait.swing_profile", "sine", "gait.swing_profile", ["expected parabola or triangle"]),
    "unknown impulse contacts": ("gait.impulse_contacts", "some", "gait.impulse_contacts", ["expected all or landing"]),
    "integrate_dt not a bool": ("costs.integrate_dt", "yes", "costs.integrate_dt", ["expected true or false"]),
    "unknown CoM origin": ("gait.com_reference", "base", "gait.com_reference", ["expected standing or feet"]),
    "unknown phase kind": (
        "costs.com_phases",
        ["swing", "flight"],
        "costs.com_phases[1]",
        ["unknown phase kind 'flight'", "stance, swing, rising, falling, landed"],
    ),
    "phase kind twice": ("costs.swing_foot_phases", ["swing", "swing"], "costs.swing_foot_phases[1]", ["twice"]),
    "phase kinds not a list": ("costs.com_phases", "swing", "costs.com_phases", ["expected a list of strings"]),
}


@pytest.mark.parametrize(("key", "value", "path", "hints"), ERRORS.values(), ids=ERRORS.keys())
def test_errors_name_the_key_path_and_what_was_expected(data, key, value, path, hints):
    with pytest.raises(ConfigError) as error:
        parse_config(edit(data, key, value), SOURCE)
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith(f"{SOURCE}: {path}: " if path else f"{SOURCE}: ")
    assert error.value.path == path
    for hint in hints:
        assert hint in message


def test_top_level_must_be_a_mapping():
    with pytest.raises(ConfigError, match=r"^<config>: expected a mapping, got a list \[1, 2\]$"):
        parse_config([1, 2])
    assert issubclass(ConfigError, ValueError)


FILE_ERRORS = {
    # id: (file text or None for no file, hints the message must contain)
    "bad YAML syntax": ("robot: anymal\ngait: {dt: 0.02\n", ["invalid YAML at line 3"]),
    "tab indentation": ("robot: anymal\ngait:\n\tdt: 0.02\n", ["invalid YAML at line 3, column 1"]),
    "duplicate key": ("robot: anymal\nrobot: hyq\n", ["invalid YAML at line 2, column 1: duplicate key 'robot'"]),
    "empty file": ("# nothing\n", ["expected a mapping at the top level, got an empty document"]),
    "top-level list": ("- robot: anymal\n", ["expected a mapping, got a list"]),
    "missing file": (None, ["file not found"]),
}


@pytest.mark.parametrize(("text", "hints"), FILE_ERRORS.values(), ids=FILE_ERRORS.keys())
def test_file_errors_name_the_file(tmp_path, text, hints):
    path = tmp_path / "run.yaml"
    if text is not None:
        path.write_text(text)
    with pytest.raises(ConfigError) as error:
        load_config(path)
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: ")
    for hint in hints:
        assert hint in message


def test_yaml_merge_keys_may_be_overridden(tmp_path, data):
    """The duplicate-key check leaves YAML merges alone: a key given after ``<<`` wins."""
    path = tmp_path / "merge.yaml"
    gait = yaml.safe_dump({"gait": data["gait"]})
    path.write_text(gait + "<<: {robot: hyq, contacts: {feet: [LF_FOOT, LH_FOOT, RF_FOOT, RH_FOOT]}}\nrobot: anymal\n")
    config = load_config(path)
    assert config.robot == "anymal" and config.contacts.feet == tuple(FEET)
