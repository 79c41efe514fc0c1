"""``liftoff info ROBOT``: a robot's model, joint by joint."""

from __future__ import annotations

import math

from .arguments import UserError


def add_parser(commands) -> None:
    p = commands.add_parser("info", help="describe a robot model", description="Load a robot and describe its model.")
    p.add_argument(
        "robot", metavar="ROBOT", help="a robot of example-robot-data (anymal, talos, ur5, ...) or a URDF path"
    )
    base = p.add_mutually_exclusive_group()
    base.add_argument(
        "--fixed-base", dest="floating_base", action="store_false", default=None, help="no free-flyer root"
    )
    base.add_argument("--floating-base", dest="floating_base", action="store_true", help="add a free-flyer root")
    p.add_argument(
        "--lock",
        metavar="JOINT=VALUE",
        nargs="+",
        action="extend",
        help="lock joints at the given positions (reduced model)",
    )
    p.set_defaults(run=run)


def lock(text: str) -> tuple[str, float]:
    """``JOINT=VALUE`` -> ``(joint, value)``."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise UserError(f"--lock expects JOINT=VALUE, got {text!r}")
    try:
        number = float(value)
    except ValueError:
        raise UserError(f"--lock {text}: {value!r} is not a number") from None
    if not math.isfinite(number):
        raise UserError(f"--lock {text}: the value must be finite")
    return name.strip(), number


def run(args) -> int:
    from liftoff import dynamics

    locked = dict(lock(item) for item in args.lock or ())
    model = dynamics.load(args.robot, floating_base=args.floating_base, locked_joints=locked or None)
    print(dynamics.describe(model, args.robot, locked))
    return 0
