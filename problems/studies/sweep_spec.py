"""Sweep specs: base configurations and the values their keys take, expanded into cases.

A sweep spec (YAML)::

    name: baumgarte
    configs: [../seed004/anymal_trot.yaml, ../seed004/anymal_jump.yaml]   # relative to the spec
    grid:                               # every combination of the values (keys in config syntax)
      contacts.baumgarte.alpha, contacts.baumgarte.beta: [10, 25, 50]    # tied: equal values
      solver.formulation: [lifted, nonlifted]
    cases:                              # and/or explicit cases, each a set of values
      - {solver.barrier: 1.0e-3, gait.step_length: 0.2}
    random: {seed: 0, count: 4, uniform: {gait.step_height: [0.05, 0.15]}, choice: {solver.init: [static]}}
    plot: {x: contacts.baumgarte.alpha, y: iterations, lines: solver.formulation, panels: [config]}

Each base configuration is combined with every grid point, every explicit case and every
random case. A key path is a dotted path of the configuration schema (``problems.tasks.config``),
with ``[i]`` for an item of a list (``gait.phases[1].knots``); paths are checked against the
schema when the spec is loaded (:class:`problems.tasks.config.ConfigError`, one line), and every
case's configuration is validated when the cases are expanded (an invalid one becomes a row
with status ``invalid``, not an error). A case is keyed by a hash of its resolved
configuration.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import itertools
import json
import random
import typing
from dataclasses import dataclass
from pathlib import Path

import yaml

from liftoff.dynamics.model import close_names
from liftoff.problems.tasks.config import (
    ConfigError,
    GaitConfig,
    _UniqueKeyLoader,
    _yaml_problem,
    parse_config,
    to_dict,
)

OUTCOME = ("status", "iterations", "cost", "kkt_error", "max_violation", "message")  # columns of the table
TIMING = ("solve_time_s", "ms_per_iteration", "compile_s", "worker")  # ... that differ from run to run


@dataclass(frozen=True)
class Plot:
    """A figure of the table: ``y`` against ``x``, a line per value of ``lines``, a panel per
    combination of ``panels`` (columns of the table: key paths, ``config`` or outcome columns)."""

    x: str
    y: str = "iterations"
    lines: tuple = ()
    panels: tuple = ()


@dataclass(frozen=True)
class Spec:
    name: str
    configs: tuple  # paths of the base configurations
    keys: tuple  # the swept key paths, in table order
    points: tuple  # per case (config independent): a dict key path -> value
    plot: Plot | None = None


@dataclass(frozen=True)
class Case:
    index: int
    config: str  # the base configuration's name
    values: dict  # key path -> value
    data: dict  # the resolved configuration, as plain data
    digest: str
    invalid: str = ""  # why the configuration is invalid, if it is


# ----------------------------------------------------------------------------- the spec


def load_spec(path) -> Spec:
    """The :class:`Spec` of a YAML file; :class:`ConfigError` (one line) for a bad one."""
    source = str(path)
    try:
        data = yaml.load(Path(path).read_text(encoding="utf-8"), Loader=_UniqueKeyLoader)
    except FileNotFoundError:
        raise ConfigError("file not found", source=source) from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"cannot read the file ({e})", source=source) from None
    except yaml.YAMLError as e:
        raise ConfigError(_yaml_problem(e), source=source) from None
    try:
        return _spec(data, Path(path).parent, Path(path).stem)
    except ConfigError as e:
        raise e.at(source) from None


def _spec(data, folder: Path, stem: str) -> Spec:
    if not isinstance(data, dict):
        raise ConfigError("expected a mapping at the top level")
    known = ("name", "configs", "grid", "cases", "random", "plot")
    for key in data:
        if key not in known:
            raise ConfigError(f"unknown key {key!r} (expected one of: {', '.join(known)})")
    configs = data.get("configs")
    if not isinstance(configs, list) or not configs or not all(isinstance(c, str) for c in configs):
        raise ConfigError("expected a non-empty list of configuration files", "configs")
    grid = _mapping(data.get("grid", {}), "grid")
    axes = []
    for key, values in grid.items():
        paths = [p.strip() for p in str(key).split(",")]
        for p in paths:
            check_path(p, f"grid.{key}")
        if not isinstance(values, list) or not values:
            raise ConfigError("expected a non-empty list of values", f"grid.{key}")
        axes.append([{p: v for p in paths} for v in values])
    points = [dict(collections) for collections in _product(axes)] if axes else []
    for i, case in enumerate(_list(data.get("cases", []), "cases")):
        for p in _mapping(case, f"cases[{i}]"):
            check_path(p, f"cases[{i}].{p}")
        points.append(dict(case))
    points += _random(data.get("random"))
    if not points:
        points = [{}]
    keys = tuple(dict.fromkeys(k for point in points for k in point))
    plot = _plot(data["plot"], keys) if data.get("plot") is not None else None
    paths = tuple(str((folder / c).resolve()) if not Path(c).is_absolute() else c for c in configs)
    return Spec(str(data.get("name") or stem), paths, keys, tuple(points), plot)


def _product(axes):
    for combination in itertools.product(*axes):
        merged = {}
        for part in combination:
            merged.update(part)
        yield merged


def _random(section) -> list:
    if section is None:
        return []
    section = _mapping(section, "random")
    for key in section:
        if key not in ("seed", "count", "uniform", "choice"):
            raise ConfigError(f"unknown key {key!r} (expected one of: seed, count, uniform, choice)", "random")
    count, seed = section.get("count", 1), section.get("seed", 0)
    if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= 1_000_000:
        raise ConfigError(f"expected an integer in [1, 1e6], got {count!r}", "random.count")
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise ConfigError(f"expected an integer, got {seed!r}", "random.seed")
    uniform = _mapping(section.get("uniform", {}), "random.uniform")
    choice = _mapping(section.get("choice", {}), "random.choice")
    for p, bounds in uniform.items():
        check_path(p, f"random.uniform.{p}")
        ok = isinstance(bounds, list) and len(bounds) == 2 and all(is_number(b) for b in bounds)
        if not ok or float(bounds[0]) > float(bounds[1]):
            raise ConfigError(f"expected [low, high] with low <= high, got {bounds!r}", f"random.uniform.{p}")
    for p, values in choice.items():
        check_path(p, f"random.choice.{p}")
        if not isinstance(values, list) or not values:
            raise ConfigError("expected a non-empty list of values", f"random.choice.{p}")
    generator = random.Random(seed)
    out = []
    for _ in range(count):
        point = {p: generator.uniform(float(lo), float(hi)) for p, (lo, hi) in uniform.items()}
        point.update({p: generator.choice(values) for p, values in choice.items()})
        out.append(point)
    return out


def _plot(section, keys) -> Plot:
    section = _mapping(section, "plot")
    fields = [f.name for f in dataclasses.fields(Plot)]
    for key in section:
        if key not in fields:
            raise ConfigError(f"unknown key {key!r} (expected one of: {', '.join(fields)})", "plot")
    if "x" not in section:
        raise ConfigError("missing required key 'x'", "plot")
    columns = ("config", *keys, *OUTCOME, *TIMING)
    as_tuple = {k: tuple(v) if isinstance(v, list) else (v,) for k, v in section.items() if k in ("lines", "panels")}
    plot = Plot(**{**section, **as_tuple})
    for name in (plot.x, plot.y, *plot.lines, *plot.panels):
        if name not in columns:
            raise ConfigError(f"unknown column {name!r} (expected one of: {', '.join(columns)})", "plot")
    return plot


def _mapping(x, path) -> dict:
    if not isinstance(x, dict):
        raise ConfigError("expected a mapping", path)
    return x


def _list(x, path) -> list:
    if not isinstance(x, list):
        raise ConfigError("expected a list", path)
    return x


def is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def check_path(path: str, where: str) -> None:
    """:class:`ConfigError` at ``where`` unless ``path`` names a value of the configuration
    schema (:class:`problems.tasks.config.GaitConfig`)."""
    tp = GaitConfig
    for part in _parts(path, where):
        if isinstance(part, int):
            if typing.get_origin(tp) is not tuple:
                raise ConfigError(f"unknown key path {path!r}: an index of something that is not a list", where)
            tp = typing.get_args(tp)[0]
            continue
        hints = typing.get_type_hints(tp) if dataclasses.is_dataclass(tp) else {}
        if part not in hints:
            close = close_names(part, list(hints), n=1)
            names = f"did you mean {close[0]!r}?" if close else f"expected one of: {', '.join(hints) or 'nothing'}"
            raise ConfigError(f"unknown key path {path!r}: {part!r} is not a key ({names})", where)
        tp = hints[part]
        arms = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(arms) == 1 and typing.get_origin(tp) is not tuple:  # Optional[X]
            tp = arms[0]
    if dataclasses.is_dataclass(tp):
        raise ConfigError(f"unknown key path {path!r}: a section, not a value", where)


def _parts(path: str, where: str) -> list:
    """``gait.phases[1].knots`` -> ``["gait", "phases", 1, "knots"]``."""
    parts = []
    for piece in path.split("."):
        name, *indices = piece.split("[")
        if not name:
            raise ConfigError(f"unknown key path {path!r}", where)
        parts.append(name)
        for index in indices:
            if not index.endswith("]") or not index[:-1].isdigit():
                raise ConfigError(f"unknown key path {path!r}: bad index [{index}", where)
            parts.append(int(index[:-1]))
    return parts


# ----------------------------------------------------------------------------- cases


def cases(spec: Spec) -> list:
    """Every case: each base configuration with each point of the spec, resolved and validated."""
    out = []
    for path in spec.configs:
        try:
            base = yaml.load(Path(path).read_text(encoding="utf-8"), Loader=_UniqueKeyLoader)
            name = parse_config(base, path).name or Path(path).stem
        except OSError as e:
            raise ConfigError(f"cannot read the file ({e.strerror or e})", source=path) from None
        except yaml.YAMLError as e:
            raise ConfigError(_yaml_problem(e), source=path) from None
        base = {**base, "name": name}
        for point in spec.points:
            data, invalid = _resolve(base, point, path)
            digest = hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:12]
            out.append(Case(len(out), name, point, data, digest, invalid))
    return out


def _resolve(base: dict, point: dict, source: str):
    """``(configuration data, "")`` of ``base`` with the values of ``point``, or ``(data, why)``
    when the result is not a valid configuration."""
    data = copy.deepcopy(base)
    try:
        for path, value in point.items():
            _set(data, _parts(path, path), value, path)
        return to_dict(parse_config(data, source)), ""
    except ConfigError as e:
        return data, f"{e.path}: {e.problem}" if e.path else e.problem


def _set(data, parts, value, path) -> None:
    node = data
    for part, following in zip(parts, parts[1:]):
        if isinstance(part, int):
            if not isinstance(node, list) or part >= len(node):
                raise ConfigError(f"the base configuration has no item [{part}] here", path)
            node = node[part]
        else:
            if not isinstance(node, dict):
                raise ConfigError("the base configuration has no mapping here", path)
            node = node.setdefault(part, [] if isinstance(following, int) else {})
    last = parts[-1]
    if isinstance(last, int):
        if not isinstance(node, list) or last >= len(node):
            raise ConfigError(f"the base configuration has no item [{last}] here", path)
    elif not isinstance(node, dict):
        raise ConfigError("the base configuration has no mapping here", path)
    node[last] = value
