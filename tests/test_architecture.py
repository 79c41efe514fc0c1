"""The house rules of docs/architecture.md, read from the source: every import (at module level
or inside a function) goes to ``liftoff.*``, points down the floors, and no module imports
itself through others."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ("dynamics", "ocp", "solvers", "problems")  # bottom to top
PROBLEMS_FLOORS = {"files": 0, "tasks": 1, "mpc": 2, "studies": 2, "viewer": 3, "bench": 3, "cli": 4}


def _module_name(path: Path) -> str:
    """The installed name of a source file: ``ocp/stages.py`` -> ``liftoff.ocp.stages``."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts if parts[0] == "liftoff" else ["liftoff", *parts])


def _sources() -> dict:
    files = [p for top in ("liftoff", *LAYERS) for p in (ROOT / top).rglob("*.py")]
    return {_module_name(p): p for p in files}


SOURCES = _sources()


def _imports(name: str, path: Path) -> set:
    """The liftoff modules ``name`` imports (a ``from package import x`` names module ``x`` when
    there is one), and the bare top-level names it imports as ``("bare", name)``."""
    is_package = path.name == "__init__.py"
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")[: len(name.split(".")) - node.level + is_package]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            targets = [
                f"{module}.{alias.name}" if f"{module}.{alias.name}" in SOURCES else module for alias in node.names
            ]
        else:
            continue
        for target in targets:
            top = target.split(".")[0]
            if top in LAYERS:
                found.add(("bare", target))
            elif top == "liftoff":
                while target not in SOURCES:
                    target = target.rsplit(".", 1)[0]
                if target != name:
                    found.add(target)
    return found


GRAPH = {name: _imports(name, path) for name, path in SOURCES.items()}


def _layer(name: str) -> int:
    parts = name.split(".")
    return LAYERS.index(parts[1]) if len(parts) > 1 and parts[1] in LAYERS else len(LAYERS)


def test_nothing_imports_the_bare_layer_names():
    scripts = [p for folder in ("tests", "examples") for p in (ROOT / folder).rglob("*.py")]
    bare = [f"{name}: {t[1]}" for name, targets in GRAPH.items() for t in targets if isinstance(t, tuple)]
    for path in scripts:
        bare += [f"{path.name}: {t[1]}" for t in _imports("script", path) if isinstance(t, tuple)]
    assert bare == []


def test_layers_import_only_the_layers_below():
    upward = [
        f"{name} -> {target}"
        for name, targets in GRAPH.items()
        for target in targets
        if isinstance(target, str) and _layer(target) > _layer(name)
    ]
    assert upward == []


def _floor(name: str) -> int | None:
    parts = name.split(".")
    if parts[:2] != ["liftoff", "problems"] or len(parts) < 3:
        return None
    return PROBLEMS_FLOORS[parts[2]]


def test_problems_floors_import_only_downward():
    assert set(PROBLEMS_FLOORS) == {
        p.stem for p in (ROOT / "problems").iterdir() if p.name != "__init__.py" and p.suffix in ("", ".py")
    } - {"__pycache__"}
    wrong = []
    for name, targets in GRAPH.items():
        here = _floor(name)
        for target in targets:
            there = _floor(target) if isinstance(target, str) else None
            if here is None or there is None or name.split(".")[2] == target.split(".")[2]:
                continue
            if there >= here:
                wrong.append(f"{name} (floor {here}) -> {target} (floor {there})")
    assert wrong == []


def test_no_import_cycle():
    """Tarjan's strongly connected components of the module graph are all single modules."""
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in (t for t in GRAPH[v] if isinstance(t, str)):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in GRAPH:
        if v not in index:
            visit(v)
    assert cycles == []


def test_problems_holds_few_modules_and_a_docstring_per_subpackage():
    top = [p for p in (ROOT / "problems").glob("*.py")]
    assert len(top) <= 8
    for package in [p for p in (ROOT / "problems").iterdir() if p.is_dir() and p.name != "__pycache__"]:
        docstring = ast.get_docstring(ast.parse((package / "__init__.py").read_text(encoding="utf-8")))
        assert docstring and "Imports" in docstring, package.name


COMMAND_MODULES = sorted(p.stem for p in (ROOT / "problems" / "cli").glob("*.py") if p.stem != "arguments")


@pytest.mark.parametrize("command", COMMAND_MODULES)
def test_cli_modules_parse_and_call(command):
    """A command's module defines the parser of its command and functions that call the floors
    below; it holds no classes (but errors) and no loops over data. (``arguments`` is what they
    share: the parser class, the argument types and the standard output.)"""
    tree = ast.parse((ROOT / "problems" / "cli" / f"{command}.py").read_text(encoding="utf-8"))
    classes = [n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and not n.name.endswith("Error")]
    assert classes == []
    loops = [n for n in ast.walk(tree) if isinstance(n, (ast.For, ast.While))]
    assert len(loops) <= 1, f"{command}: {len(loops)} loops"
