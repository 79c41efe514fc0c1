"""JSON Schemas of the configuration files, for editors (``liftoff schema [--task TASK]``).

Made from the dataclasses of :mod:`problems.tasks.config`, :mod:`problems.tasks.polishing` and
:mod:`problems.tasks.gait_mpc`, the one place each schema is written: each
field's type gives its JSON type, its default makes it optional, the comment beside it becomes
its description, and the closed lists of names (robots, formulations, backends, reference
frames, limits, contact models) become enumerations. Value ranges stay in the comments: the loader checks
them, with the key path in its message. A YAML file opts in with the first line
``# yaml-language-server: $schema=PATH``.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import types
import typing

from liftoff import dynamics

from . import config as cfg
from . import gait_mpc, polishing

TASKS = {"gait": cfg.GaitConfig, "polishing": polishing.PolishingConfig, "gait_mpc": gait_mpc.GaitMPCConfig}
ENUMS = {  # (section, field): the allowed names
    ("GaitConfig", "robot"): tuple(dynamics.ROBOTS),
    ("GaitMPCConfig", "robot"): tuple(dynamics.ROBOTS),
    ("GaitMPCConfig", "task"): ("gait_mpc",),
    ("PolishingConfig", "robot"): tuple(dynamics.ROBOTS),
    ("PolishingConfig", "task"): ("polishing",),
    ("PlantSettings", "engine"): cfg.ENGINES,
    ("LeggedPlantSettings", "engine"): cfg.ENGINES,
    ("PlantSettings", "contact"): cfg.CONTACT_MODELS,
    ("LeggedPlantSettings", "contact"): cfg.CONTACT_MODELS,
    ("PlantContact", "model"): cfg.CONTACT_MODELS,
    ("PlantContact", "solver"): tuple(cfg.SOLVERS),
    ("Contacts", "reference"): cfg.REFERENCES,
    ("ContactModel", "model"): polishing.CONTACT_MODELS,
    ("ContactModel", "law"): dynamics.soft_contact.LAWS,
    ("Solver", "formulation"): cfg.FORMULATIONS,
    ("Solver", "backend"): cfg.BACKENDS,
    ("Solver", "barrier_update"): cfg.BARRIER_UPDATES,
    ("Solver", "hessian"): cfg.HESSIANS,
    ("GaitMPCSettings", "scheme"): cfg.MPC_SCHEMES,
    ("MPCSettings", "scheme"): cfg.MPC_SCHEMES,
}
NUMBER = {"anyOf": [{"type": "number"}, {"type": "string", "pattern": r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$"}]}


def json_schema(task="gait") -> dict:
    """The JSON Schema (draft 2020-12) of a configuration file of ``task`` (one of ``TASKS``)."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"liftoff {task} configuration",
        **_section(TASKS[task]),
    }


def _comments(cls) -> dict:
    """``{field: comment}`` from the source lines ``name: type = default  # comment``."""
    out = {}
    for line in inspect.getsource(cls).splitlines():
        match = re.match(r"\s+(\w+):[^#]*#\s*(.+)$", line)
        if match:
            out[match.group(1)] = match.group(2).strip()
    return out


def _section(cls) -> dict:
    hints, comments = typing.get_type_hints(cls), _comments(cls)
    properties, required = {}, []
    for f in dataclasses.fields(cls):
        if f.name.startswith("_"):
            continue
        prop = _type(hints[f.name], ENUMS.get((cls.__name__, f.name)))
        if f.name == "limits":
            prop["items"] = {"enum": list(cfg.LIMITS)}
        if f.name in comments:
            prop["description"] = comments[f.name]
        properties[f.name] = prop
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            required.append(f.name)
    out = {"type": "object", "properties": properties, "additionalProperties": False}
    if cls.__doc__ and not cls.__doc__.startswith(cls.__name__ + "("):
        out["description"] = " ".join(cls.__doc__.split())
    return {**out, "required": required} if required else out


def _type(tp, enum=None) -> dict:
    if dataclasses.is_dataclass(tp):
        return _section(tp)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return {"anyOf": [_type(arm, enum if arm is str else None) for arm in args]}
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": _type(args[0])}
        return {"type": "array", "items": _type(args[0]), "minItems": len(args), "maxItems": len(args)}
    if tp is type(None):
        return {"type": "null"}
    if tp is str:
        return {"enum": list(enum)} if enum else {"type": "string"}
    if tp is bool:
        return {"type": "boolean"}
    if tp is int:
        return {"type": "integer"}
    if tp is float:
        return dict(NUMBER)
    raise TypeError(f"no JSON type for {tp!r}")
