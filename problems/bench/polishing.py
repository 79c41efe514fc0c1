"""``liftoff bench polishing``: the polishing MPC against MuJoCo, scenario by scenario (seed 001).

Every scenario runs a configuration of ``configs/`` (the horizontal table, the vertical board,
the board tilted 30 degrees from vertical), changed as the scenario says, for ``duration``
simulated seconds on MuJoCo's default contact with the URDF's joint damping and friction, and
reports the measures of :mod:`problems.mpc.polishing_run`:

- ``surfaces``: each surface frictionless and at friction 0.3;
- ``disturbances``: on the frictionless table, a 20 N push on the tool for 0.1 s into the
  surface and one along it, and the arm's links 10% heavier (``--mass-scale 1.1``), also at
  friction 0.3;
- ``fidelity``: on the frictionless table, the controller without the URDF's joint damping and
  friction in its model, without its disturbance observer, or both (the surfaces group has both);
- ``feedback`` (seed 001's force-feedback MPC): on compliant tables (MuJoCo's contact time
  constants 0.02 s and 0.005 s, frictionless), the torques as a filtered state measured by the
  MPC against the torques as controls; :func:`feedback_figure` draws the normal forces as seed
  001 Fig. 2.

The scenarios run on a pool of ``workers`` processes, one BLAS thread each.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import yaml

from liftoff.problems.files import save_figure

from .scenarios import merge, run_all

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
SURFACES = {"table": "polishing_horizontal.yaml", "board": "polishing_vertical.yaml", "tilted": "polishing_tilted.yaml"}
GROUPS = ("surfaces", "disturbances", "fidelity", "feedback")


@dataclass(frozen=True)
class Scenario:
    """A run: ``surface`` (a key of :data:`SURFACES`), ``changes`` to its configuration (nested
    dicts of YAML keys), ``pushes`` (``FRAME:FX,FY,FZ:T0:DT`` strings) and ``mass_scale``."""

    name: str
    group: str
    surface: str
    changes: dict = field(default_factory=dict)
    pushes: tuple = ()
    mass_scale: float = 1.0


def scenarios(groups=GROUPS) -> list:
    """The scenarios of ``groups`` (module docstring)."""
    out = []
    if "surfaces" in groups:
        for surface in SURFACES:
            for friction in (0.0, 0.3):
                out.append(Scenario(f"{surface}, friction {friction:g}", "surfaces", surface, _friction(friction)))
    if "disturbances" in groups:
        smooth = _friction(0.0)
        out += [
            Scenario("push 20 N into the table", "disturbances", "table", smooth, ("tool:0,0,-20:3:0.1",)),
            Scenario("push 20 N along the table", "disturbances", "table", smooth, ("tool:20,0,0:3:0.1",)),
            Scenario("arm 10% heavier", "disturbances", "table", smooth, mass_scale=1.1),
            Scenario("arm 10% heavier, friction 0.3", "disturbances", "table", _friction(0.3), mass_scale=1.1),
        ]
    if "fidelity" in groups:
        smooth = _friction(0.0)
        plain = {"joint_friction": {"damping": False, "coulomb": False}, "observer": {"time_constant": 0.0}}
        out += [
            Scenario("no joint friction model, no observer", "fidelity", "table", merge(smooth, plain)),
            Scenario(
                "joint friction model, no observer",
                "fidelity",
                "table",
                merge(smooth, {"observer": {"time_constant": 0.0}}),
            ),
            Scenario(
                "no joint friction model, observer",
                "fidelity",
                "table",
                merge(smooth, {"joint_friction": plain["joint_friction"]}),
            ),
        ]
    if "feedback" in groups:
        for time_constant in (0.02, 0.005):
            for filtered in (True, False):
                changes = merge(_friction(0.0), {"plant": {"contact": {"solref": [time_constant, 1.0]}}})
                if not filtered:
                    changes["torque_filter"] = None
                way = "torque state" if filtered else "torque control"
                out.append(Scenario(f"{way}, contact {time_constant:g} s", "feedback", "table", changes))
    return out


def _friction(mu) -> dict:
    return {"surface": {"friction": mu}}


def run_scenario(scenario: Scenario, duration: float) -> dict:
    """One scenario's measures and its period-averaged normal force (for the figure)."""
    from liftoff.problems.mpc import polishing_run
    from liftoff.problems.mpc.disturbances import Push
    from liftoff.problems.tasks.config import parse_config
    from liftoff.problems.tasks.polishing import PolishingConfig

    path = CONFIGS / SURFACES[scenario.surface]
    data = merge(yaml.safe_load(path.read_text(encoding="utf-8")), scenario.changes)
    config = parse_config(data, str(path), PolishingConfig)
    pushes = [Push.parse(text) for text in scenario.pushes]
    run = polishing_run.run(config, duration, pushes, scenario.mass_scale, quiet=True)
    measures = polishing_run.measures(run)
    steps = int(round(config.mpc.period / config.plant.dt))
    force = run.arrays["force"]
    n = len(force) // steps * steps
    return {
        "name": scenario.name,
        "group": scenario.group,
        "measures": measures,
        "t": run.arrays["t"][:n:steps].tolist(),
        "force": force[:n].reshape(-1, steps).mean(axis=1).tolist(),
        "target": config.surface.force,
    }


def polishing_benchmark(groups=GROUPS, duration=10.0, workers=None, progress=None) -> dict:
    """The measures of every scenario of ``groups`` (module docstring)."""
    say = progress or (lambda line: None)

    def report(result):
        say(f"{result['name']}: force RMS {result['measures']['force_rms_error_N']:.2f} N")

    return {"duration_s": duration, "results": run_all(run_scenario, scenarios(groups), duration, workers, report)}


COLUMNS = (
    ("force RMS (per period)", "force_rms_error_N", "{:.2f} N"),
    ("largest", "force_max_error_N", "{:.2f} N"),
    ("force RMS (per step)", "force_step_rms_error_N", "{:.2f} N"),
    ("no contact (steps)", "contact_lost_fraction", "{:.1%}"),
    ("circle RMS", "circle_rms_error_m", "{:.4f} m"),
    ("settling", "force_settling_s", "{:.2f} s"),
    ("update median", "tick_ms_median", "{:.1f} ms"),
)


def format_table(result: dict) -> str:
    """A markdown table of the scenarios' measures."""
    head = "| scenario | status | " + " | ".join(title for title, _, _ in COLUMNS) + " |"
    lines = [head, "|" + "---|" * (len(COLUMNS) + 2)]
    for r in result["results"]:
        m = r["measures"]
        cells = [fmt.format(m[key]) for _, key, fmt in COLUMNS]
        lines.append(f"| {r['name']} | {m['status']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def feedback_figure(result: dict, path) -> Path:
    """Seed 001 Fig. 2: the period-averaged normal force against its target in the force-feedback
    scenarios, a panel per contact time constant, the torque state against torque control."""
    runs = [r for r in result["results"] if r["group"] == "feedback"]
    contacts = sorted({r["name"].split(", ")[1] for r in runs}, reverse=True)
    fig, axes = plt.subplots(len(contacts), 1, figsize=(7, 2.6 * len(contacts)), sharex=True, squeeze=False)
    for ax, contact in zip(axes[:, 0], contacts):
        for r in (r for r in runs if r["name"].endswith(contact)):
            ax.plot(r["t"], r["force"], lw=1, label=r["name"].split(", ")[0])
        ax.axhline(runs[0]["target"], color="k", ls="--", lw=1, label="target")
        ax.set(ylabel="normal force [N]", title=f"MuJoCo, {contact}")
        ax.grid(True, alpha=0.3)
    axes[0, 0].legend(fontsize=8)
    axes[-1, 0].set_xlabel("time [s]")
    fig.tight_layout()
    return save_figure(fig, path)
