"""Robots of the ``example-robot-data`` package by name, or any URDF by path."""

from __future__ import annotations

import importlib.metadata
from functools import lru_cache
from pathlib import Path
from xml.etree import ElementTree

from .errors import ModelError
from .model import Model, build_model
from .urdf import parse_urdf, parse_urdf_string

# name -> (URDF path inside the package's robots folder, floating base by default)
ROBOTS = {
    "anymal": ("anymal_b_simple_description/robots/anymal.urdf", True),
    "anymal_c": ("anymal_c_simple_description/urdf/anymal.urdf", True),
    "hyq": ("hyq_description/robots/hyq_no_sensors.urdf", True),
    "icub": ("icub_description/robots/icub.urdf", True),
    "solo12": ("solo_description/robots/solo12.urdf", True),
    "talos": ("talos_data/robots/talos_reduced.urdf", True),
    "talos_full": ("talos_data/robots/talos_full_v2.urdf", True),
    "ur5": ("ur_description/urdf/ur5_robot.urdf", False),
    "panda": ("panda_description/urdf/panda.urdf", False),
    "g1_hands": ("g1_description/urdf/g1_29dof_with_hand_rev_1_0.urdf", True),
    "double_pendulum": ("double_pendulum_description/urdf/double_pendulum.urdf", False),
    "double_pendulum_continuous": ("double_pendulum_description/urdf/double_pendulum_continuous.urdf", False),
}


# name -> (SDF path inside the robots folder, root link): robots with closed kinematic loops,
# loaded by :func:`dynamics.load_sdf` with their loop closures
SDF_ROBOTS = {"cassie": ("cassie_description/robots/cassie_v2.sdf", "pelvis")}


# name -> SRDF file (named configurations: group states) inside the robots folder
SRDF = {
    "anymal": "anymal_b_simple_description/srdf/anymal.srdf",
    "talos": "talos_data/srdf/talos.srdf",
    "talos_full": "talos_data/srdf/talos.srdf",
}


@lru_cache(maxsize=1)
def robots_dir() -> Path:
    """The ``robots`` folder installed by ``example-robot-data``."""
    try:
        dist = importlib.metadata.distribution("example-robot-data")
    except importlib.metadata.PackageNotFoundError:
        raise ModelError("example-robot-data is not installed (pip install example-robot-data)") from None
    path = Path(dist.locate_file("cmeel.prefix/share/example-robot-data/robots"))
    if not path.is_dir():
        raise ModelError(f"example-robot-data is installed but its robots folder is missing: {path}")
    return path


def robot_urdf(name: str) -> Path:
    """The URDF file of a robot of example-robot-data known to liftoff."""
    if name not in ROBOTS:
        raise ModelError(
            f"unknown robot {name!r}; known robots: {', '.join(sorted(ROBOTS))} (or give a path to a URDF file)"
        )
    return robots_dir() / ROBOTS[name][0]


def mesh_path(filename: str) -> Path:
    """The file of a URDF mesh name (``package://example-robot-data/...``, another package of
    example-robot-data's robots, or a path)."""
    if filename.startswith("package://"):
        package, _, inner = filename[len("package://") :].partition("/")
        return (robots_dir().parent if package == "example-robot-data" else robots_dir()) / inner
    return Path(filename)


def named_configuration(robot: str, name: str) -> dict:
    """The joint positions of the group state ``name`` (e.g. ``"half_sitting"``) of the SRDF
    of a registry robot: ``{joint name: value}`` for its one-dof joints (the root joint left out)."""
    if robot not in SRDF:
        raise ModelError(f"robot {robot!r} has no named configurations (known for: {', '.join(sorted(SRDF))})")
    root = ElementTree.parse(robots_dir() / SRDF[robot]).getroot()
    states = {state.get("name"): state for state in root.iter("group_state")}
    if name not in states:
        raise ModelError(f"{robot} has no configuration {name!r} (known: {', '.join(sorted(states))})")
    values = {}
    for joint in states[name].iter("joint"):
        numbers = joint.get("value", "").split()
        if len(numbers) == 1:
            values[joint.get("name")] = float(numbers[0])
    return values


def load(robot: str | Path, floating_base: bool | None = None, locked_joints=None) -> Model:
    """Load a robot by example-robot-data name (``"anymal"``, ``"talos"``, ...) or URDF path.

    ``floating_base`` adds a free-flyer root joint (default: True for the legged robots
    of the registry, False for arms and for URDF paths). ``locked_joints`` maps joint names
    to the positions they are locked at (a list locks them at 0), giving the reduced model.
    """
    robot_str = str(robot)
    if robot_str in ROBOTS:
        path, default_floating = robot_urdf(robot_str), ROBOTS[robot_str][1]
        name = robot_str
    elif robot_str.endswith(".urdf") or Path(robot_str).is_file():
        path, default_floating, name = Path(robot_str), False, None
    else:
        raise ModelError(
            f"unknown robot {robot_str!r}; known robots: {', '.join(sorted(ROBOTS))} (or give a path to a URDF file)"
        )
    floating = default_floating if floating_base is None else bool(floating_base)
    return build_model(parse_urdf(path), floating, locked_joints, name=name)


def load_urdf_string(text: str, floating_base: bool = False, locked_joints=None) -> Model:
    """A model from URDF text (for models built in code: chains, trees, test mechanisms)."""
    return build_model(parse_urdf_string(text), bool(floating_base), locked_joints)
