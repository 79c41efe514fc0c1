"""``liftoff bench legged``: the legged MPC against MuJoCo, scenario by scenario.

Every scenario runs a gait MPC configuration of ``configs/`` (the trot, the walk, the bound),
changed as the scenario says, on MuJoCo's default contact and ground of friction 0.5, and
reports the measures of :mod:`problems.mpc.gait_run`:

- ``gaits``: each gait at its command for ``duration`` seconds;
- ``pushes``: pushes of 50 N and 100 N on the base for 0.1 s, lateral (to the left) and
  forward, at 8 phases of the gait cycle from 3 s on, each run until 2 s after its push; the
  table gives, per gait and direction, the largest push survived at every phase;
- ``robustness``: each gait with its base 10% heavier (the controller not told), and on
  ground of friction 0.4 (the controller's cones stay at its own coefficient);
- ``commands``: the trot and the walk under a schedule with a stop and a turn
  (:data:`SCHEDULE`): how long the base takes to stop, and the yaw rate of the turn.

The scenarios run on a pool of ``workers`` processes, one BLAS thread each.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .scenarios import merge, run_all

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
GAITS = {"trot": "anymal_trot_mpc.yaml", "walk": "anymal_walk_mpc.yaml", "bound": "anymal_bound_mpc.yaml"}
GROUPS = ("gaits", "pushes", "robustness", "commands")
PUSHES_N = (50.0, 100.0)
DIRECTIONS = {"lateral": (0.0, 1.0, 0.0), "forward": (1.0, 0.0, 0.0)}
PHASES = 8
PUSH_START_S, PUSH_S, AFTER_PUSH_S = 3.0, 0.1, 2.0
STRIKE_MPS = 3.0  # an impact faster than this is a strike (a plain trot's feet land at 0.4 m/s, at most 0.6)
#: The command schedule of the ``commands`` group: forward, stop, turn in place, forward again.
SCHEDULE = {
    "trot": [{"t": 0.0, "vx": 0.3}, {"t": 4.0, "vx": 0.0}, {"t": 6.0, "yaw_rate": 0.3}, {"t": 8.5, "vx": 0.2}],
    "walk": [{"t": 0.0, "vx": 0.15}, {"t": 4.0, "vx": 0.0}, {"t": 6.0, "yaw_rate": 0.2}, {"t": 8.5, "vx": 0.1}],
}


@dataclass(frozen=True)
class Scenario:
    """A run: ``gait`` (a key of :data:`GAITS`), ``changes`` to its configuration (nested dicts
    of YAML keys), ``pushes`` (``FRAME:FX,FY,FZ:T0:DT`` strings), ``mass_scale`` and its own
    ``duration`` (None: the benchmark's)."""

    name: str
    group: str
    gait: str
    changes: dict = field(default_factory=dict)
    pushes: tuple = ()
    mass_scale: float = 1.0
    duration: float | None = None
    push: dict = field(default_factory=dict)


def scenarios(groups=GROUPS, gaits=tuple(GAITS)) -> list:
    """The scenarios of ``groups`` for ``gaits`` (module docstring)."""
    out = []
    for gait in gaits:
        if "gaits" in groups:
            out.append(Scenario(gait, "gaits", gait))
        if "pushes" in groups:
            cycle = _cycle_s(gait)
            for direction, axis in DIRECTIONS.items():
                for force in PUSHES_N:
                    for k in range(PHASES):
                        start = PUSH_START_S + k * cycle / PHASES
                        vector = ",".join(f"{force * a:g}" for a in axis)
                        out.append(
                            Scenario(
                                f"{gait}, {force:g} N {direction} at phase {k}/{PHASES}",
                                "pushes",
                                gait,
                                pushes=(f"base:{vector}:{start:g}:{PUSH_S:g}",),
                                duration=start + PUSH_S + AFTER_PUSH_S,
                                push={"direction": direction, "force": force, "phase": k},
                            )
                        )
        if "robustness" in groups:
            out.append(Scenario(f"{gait}, base 10% heavier", "robustness", gait, mass_scale=1.1))
            out.append(Scenario(f"{gait}, ground friction 0.4", "robustness", gait, {"plant": {"friction": 0.4}}))
        if "commands" in groups and gait in SCHEDULE:
            changes = {"mpc": {"command": SCHEDULE[gait]}}
            out.append(Scenario(f"{gait}, stop and turn", "commands", gait, changes))
    return out


def _document(gait) -> dict:
    return yaml.safe_load((CONFIGS / GAITS[gait]).read_text(encoding="utf-8"))


def _cycle_s(gait) -> float:
    data = _document(gait)
    start = data["mpc"].get("cycle_start", 1)
    return sum(p["knots"] for p in data["gait"]["phases"][start:]) * data["gait"]["dt"]


def run_scenario(scenario: Scenario, duration: float) -> dict:
    """One scenario's measures."""
    from liftoff.problems.mpc import gait_run
    from liftoff.problems.mpc.disturbances import Push
    from liftoff.problems.tasks.config import parse_config
    from liftoff.problems.tasks.gait_mpc import GaitMPCConfig

    path = CONFIGS / GAITS[scenario.gait]
    config = parse_config(merge(_document(scenario.gait), scenario.changes), str(path), GaitMPCConfig)
    pushes = [Push.parse(text) for text in scenario.pushes]
    length = scenario.duration if scenario.duration is not None else duration
    run = gait_run.run(config, length, pushes, scenario.mass_scale, quiet=True)
    m = gait_run.measures(run)
    return {"name": scenario.name, "group": scenario.group, "gait": scenario.gait, "push": scenario.push, "measures": m}


def legged_benchmark(groups=GROUPS, gaits=tuple(GAITS), duration=10.0, workers=None, progress=None) -> dict:
    """The measures of every scenario of ``groups`` for ``gaits`` (module docstring)."""
    say = progress or (lambda line: None)

    def report(result):
        m = result["measures"]
        fell = f"FELL at {m['end_time_s']:.2f} s" if m["fell"] else m["status"]
        say(f"{result['name']}: {fell}, {m['mean_forward_velocity_mps']:.3f} m/s")

    results = run_all(run_scenario, scenarios(groups, gaits), duration, workers, report)
    return {"duration_s": duration, "results": results, "largest_pushes": largest_pushes(results)}


def largest_pushes(results) -> list:
    """Per gait and direction of the pushes: the largest push survived at every phase (0 if
    none), how many phases each magnitude survived (by the magnitude in N as text, as in the
    JSON), how many of its runs had a foot strike the ground faster than :data:`STRIKE_MPS`, and
    the fastest impact and deepest penetration of all its runs."""
    out = []
    runs = [r for r in results if r["group"] == "pushes"]
    for gait in dict.fromkeys(r["gait"] for r in runs):
        for direction in DIRECTIONS:
            survived = {}
            for force in PUSHES_N:
                these = [
                    r
                    for r in runs
                    if (r["gait"], r["push"]["direction"], r["push"]["force"]) == (gait, direction, force)
                ]
                survived[f"{force:g}"] = sum(
                    not r["measures"]["fell"] and r["measures"]["status"] == "completed" for r in these
                )
            largest = max((f for f in PUSHES_N if survived[f"{f:g}"] == PHASES), default=0.0)
            measures = [r["measures"] for r in runs if (r["gait"], r["push"]["direction"]) == (gait, direction)]
            out.append(
                {
                    "gait": gait,
                    "direction": direction,
                    "largest_N": largest,
                    "phases_survived": survived,
                    "fastest_impact_mps": max(m["impact_speed_mps"]["max"] for m in measures),
                    "runs_striking": sum(m["impact_speed_mps"]["max"] > STRIKE_MPS for m in measures),
                    "deepest_penetration_m": max(m["max_penetration_m"] for m in measures),
                }
            )
    return out


def _pair(key, fmt, scale=1.0):
    """A cell of the median and the max of the measure ``key``."""
    return lambda m: f"{fmt.format(scale * m[key]['median'])}, {fmt.format(scale * m[key]['max'])}"


COLUMNS = (  # (title, the cell of a run's measures)
    ("forward velocity", lambda m: f"{m['mean_forward_velocity_mps']:.3f} m/s"),
    ("slip / stance (median, max)", _pair("slip_per_stance_m", "{:.1f} mm", 1e3)),
    ("touchdown error (median, max)", _pair("touchdown_error_ms", "{:.1f} ms")),
    ("impact speed (median, max)", _pair("impact_speed_mps", "{:.2f} m/s")),
    ("impacts / touchdowns", lambda m: f"{m['impact_speed_mps']['count']} / {m['touchdowns']}"),
    ("deepest penetration", lambda m: f"{1e3 * m['max_penetration_m']:.1f} mm"),
    ("update median", lambda m: f"{m['tick_ms_median']:.1f} ms"),
    ("real-time factor", lambda m: f"{m['real_time_factor']:.2f}"),
)


def format_table(result: dict) -> str:
    """Markdown tables: the runs (pushes summarized per gait and direction), and the commands."""
    head = "| scenario | status | command | " + " | ".join(c[0] for c in COLUMNS) + " |"
    lines = [head, "|" + "---|" * (len(COLUMNS) + 3)]
    for r in result["results"]:
        if r["group"] == "pushes":
            continue
        m = r["measures"]
        status = f"fell at {m['end_time_s']:.2f} s" if m["fell"] else m["status"]
        cells = [cell(m) for _, cell in COLUMNS]
        lines.append(f"| {r['name']} | {status} | {m['command_velocity_mps']:.2f} m/s | " + " | ".join(cells) + " |")
    if result["largest_pushes"]:
        lines += [
            "",
            "| gait | push | largest survived at all 8 phases | phases survived (50 N, 100 N) "
            f"| runs with a strike (> {STRIKE_MPS:g} m/s) | fastest impact | deepest penetration |",
            "|---|---|---|---|---|---|---|",
        ]
        for p in result["largest_pushes"]:
            counts = ", ".join(str(p["phases_survived"][f"{f:g}"]) for f in PUSHES_N)
            runs = len(PUSHES_N) * PHASES
            worst = f"{p['runs_striking']} of {runs} | {p['fastest_impact_mps']:.2f} m/s | "
            worst += f"{1e3 * p['deepest_penetration_m']:.1f} mm"
            lines.append(f"| {p['gait']} | {p['direction']} | {p['largest_N']:g} N | {counts} | {worst} |")
    schedules = [r for r in result["results"] if r["group"] == "commands"]
    if schedules:
        lines += ["", "| run | from | command (vx, vy, yaw rate) | measured | stop time |", "|---|---|---|---|---|"]
        for r in schedules:
            for c in r["measures"]["commands"]:
                cmd, got = c["command"], c["measured"]
                stop = (
                    ""
                    if "stop_time_s" not in c
                    else ("did not stop" if c["stop_time_s"] is None else f"{c['stop_time_s']:.2f} s")
                )
                lines.append(
                    f"| {r['name']} | {c['t']:g} s | {cmd['vx']:g}, {cmd['vy']:g}, {cmd['yaw_rate']:g} | "
                    f"{got['vx']:.3f}, {got['vy']:.3f}, {got['yaw_rate']:.3f} | {stop} |"
                )
    return "\n".join(lines)
