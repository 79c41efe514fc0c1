"""``liftoff schema``: the JSON Schema of a configuration file, for editors."""

from __future__ import annotations

import json


def add_parser(commands) -> None:
    p = commands.add_parser(
        "schema",
        help="the JSON Schema of a configuration file, for editors",
        description="Print the JSON Schema of a gait (problems/tasks/config.py), polishing "
        "(problems/tasks/polishing.py) or gait MPC (problems/tasks/gait_mpc.py) configuration. Save it and start "
        "a YAML file with '# yaml-language-server: $schema=PATH' to get completion and checks in editors.",
    )
    p.add_argument("--task", choices=("gait", "polishing", "gait_mpc"), default="gait", help="which configuration")
    p.set_defaults(run=run)


def run(args) -> int:
    from liftoff.problems.tasks.schema import json_schema

    print(json.dumps(json_schema(args.task), indent=2))
    return 0
