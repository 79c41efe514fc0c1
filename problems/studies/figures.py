"""Figures of a comparison, drawn from results files (:func:`problems.studies.runs.load_run`), and of a sweep:

- :func:`kkt_figure`: KKT error against iterations, one panel per gait and barrier, the
  lifted formulation solid and the non-lifted dashed (seed 004 Fig. 1), and the baselines'
  own measures (:mod:`problems.studies.baselines`) in styles of their own;
- :func:`time_figure`: time per iteration and total time per gait, log scale (seed 004 Fig. 2);
- :func:`forces_figure`: each foot's world-frame contact force against its friction-cone
  bound ``mu/sqrt(2) f_z`` (seed 004 Fig. 4);
- :func:`normal_force_figure`: the normal force of polishing runs over their horizon, rigid
  or soft, against the target;
- :func:`sweep_figure`: a column of a sweep's table against another (:mod:`problems.studies.sweep`).
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from liftoff.problems.files import save_figure
from liftoff.problems.tasks.polishing import TOOL_FRAME

STYLES = {"lifted": "-", "nonlifted": "--", "fddp": (0, (6, 2)), "ilqr": (0, (1, 1)), "ipopt": ":", "sqp": "-."}
COLORS = {
    "lifted": "tab:blue",
    "nonlifted": "tab:orange",
    "fddp": "tab:olive",
    "ilqr": "tab:cyan",
    "ipopt": "tab:purple",
    "sqp": "tab:brown",
}
INIT_COLORS = {"lifted": "tab:green", "nonlifted": "tab:red"}  # runs from the zero-torque start


def _by_gait(runs):
    gaits = list(dict.fromkeys(r["summary"]["name"] for r in runs))
    barriers = sorted({r["summary"]["barrier"] for r in runs}, reverse=True)
    return gaits, barriers


def kkt_figure(runs, path):
    gaits, barriers = _by_gait(runs)
    fig, axes = plt.subplots(
        len(barriers), len(gaits), figsize=(3.2 * len(gaits), 2.8 * len(barriers)), squeeze=False, sharey=True
    )
    for r in runs:
        s = r["summary"]
        ax = axes[barriers.index(s["barrier"]), gaits.index(s["name"])]
        kkt = np.array(s["kkt"] + [s["kkt_error"]])
        init = s.get("init", "static")
        label = s["formulation"] + ("" if init == "static" else f", {init} start")
        color = COLORS[s["formulation"]] if init == "static" else INIT_COLORS.get(s["formulation"], "tab:gray")
        ax.semilogy(kkt, linestyle=STYLES[s["formulation"]], color=color, label=label)
    for i, eps in enumerate(barriers):
        ran = {r["summary"]["formulation"] for r in runs if r["summary"]["barrier"] == eps}
        for j, gait in enumerate(gaits):
            ax = axes[i, j]
            ax.set_title(f"{gait}, barrier {eps:g}" if eps > 0 else f"{gait}, exact (NLP baselines)", fontsize=9)
            ax.grid(True, which="major", alpha=0.3)
            if i == len(barriers) - 1:
                ax.set_xlabel("iteration")
            if j == 0:
                ax.set_ylabel(kkt_label(ran))
    for row in axes:  # each barrier's methods (the baselines have a row of their own)
        row[0].legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path)


MEASURES = {  # what the KKT figure draws of each method, by the methods of a row of panels
    "interior point": ("KKT error (l2)", {"lifted", "nonlifted"}),
    "ddp": ("|(Qu, gaps)|", {"fddp", "ilqr"}),
    "ipopt": ("Ipopt: max(inf_pr, inf_du)", {"ipopt"}),
    "sqp": ("SQP: max(step, violation)", {"sqp"}),
}
DDP_NAMES = {"fddp": "FDDP", "ilqr": "iLQR"}


def kkt_label(methods) -> str:
    """The y-label of a row of the KKT figure: the measure of each of the ``methods`` that ran there."""
    lines = []
    for kind, (measure, members) in MEASURES.items():
        if methods & members:
            if kind == "ddp":
                measure = ", ".join(DDP_NAMES[m] for m in DDP_NAMES if m in methods) + ": " + measure
            lines.append(measure)
    return "\n".join(lines)


def time_figure(runs, path):
    gaits, barriers = _by_gait(runs)
    present = {(r["summary"]["formulation"], r["summary"]["barrier"]) for r in runs}
    series = [(f, eps) for eps in barriers for f in COLORS if (f, eps) in present]
    fig, (ax_it, ax_total) = plt.subplots(1, 2, figsize=(12.5, 3.6))
    width = 0.8 / len(series)
    for n, (form, eps) in enumerate(series):
        per_it, total = [], []
        for gait in gaits:
            match = [
                r["summary"]
                for r in runs
                if (r["summary"]["name"], r["summary"]["formulation"], r["summary"]["barrier"]) == (gait, form, eps)
            ]
            per_it.append(1e3 * match[0]["time_per_iteration_s"] if match else np.nan)
            total.append(match[0]["solve_time_s"] if match else np.nan)
        x = np.arange(len(gaits)) + (n - (len(series) - 1) / 2) * width
        hatch = "" if eps == barriers[0] else "//"
        for ax, values in ((ax_it, per_it), (ax_total, total)):
            ax.bar(
                x,
                values,
                width,
                color=COLORS[form],
                hatch=hatch,
                edgecolor="black",
                linewidth=0.4,
                label=f"{form}, {eps:g}",
            )
    for ax, label in ((ax_it, "time per iteration [ms]"), (ax_total, "total time [s]")):
        ax.set_xticks(np.arange(len(gaits)), gaits, fontsize=8)
        if any(patch.get_height() > 0 for patch in ax.patches):  # none: solves of no iteration, no time
            ax.set_yscale("log")  # the methods' times span orders of magnitude
        ax.set_ylabel(label)
        ax.grid(True, axis="y", alpha=0.3)
    ax_total.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside the bars
    fig.tight_layout()
    save_figure(fig, path)


def forces_figure(run, path):
    """Per foot: ``f_z`` and the tangential components against ``mu/sqrt(2) f_z``."""
    mu = run["config"]["contacts"]["friction"]
    contact = run["kinds"] == "contact"
    t = run["times"][:-1][contact]
    feet = list(run["forces"])
    fig, axes = plt.subplots(len(feet), 1, figsize=(7, 1.9 * len(feet)), sharex=True, squeeze=False)
    for ax, foot in zip(axes[:, 0], feet):
        f = run["forces"][foot][contact]
        bound = mu / np.sqrt(2.0) * f[:, 2]
        ax.plot(t, f[:, 2], color="black", label="$f_z$")
        ax.plot(t, f[:, 0], color="tab:red", label="$f_x$")
        ax.plot(t, f[:, 1], color="tab:green", label="$f_y$")
        ax.fill_between(t, -bound, bound, color="tab:gray", alpha=0.25, label=r"$\pm \mu f_z / \sqrt{2}$")
        ax.set_ylabel(f"{foot} [N]", fontsize=8)
        ax.grid(True, alpha=0.3)
    axes[0, 0].legend(fontsize=7, ncol=4, loc="upper right")
    axes[-1, 0].set_xlabel("time [s]")
    s = run["summary"]
    fig.suptitle(
        f"{s['name']}: contact forces in the world frame ({s['formulation']}, barrier {s['barrier']:g})", fontsize=9
    )
    fig.tight_layout()
    save_figure(fig, path)


def normal_force_figure(runs, path):
    """The surface's normal force on the pad (``force/tool`` along ``surface.normal``) at each
    stage of the polishing ``runs``, one line each, and their targets ``surface.force`` dotted."""
    fig, ax = plt.subplots(figsize=(7, 3))
    for r in runs:
        s, surface = r["summary"], r["config"]["surface"]
        force = r["forces"][TOOL_FRAME] @ np.asarray(surface["normal"], dtype=float)
        ax.plot(r["times"][:-1], force, label=f"{s['name']} ({s.get('contact', 'rigid')}, {s['formulation']})")
    for target in {r["config"]["surface"]["force"] for r in runs}:
        ax.axhline(target, color="tab:gray", linestyle=":", linewidth=1)
    ax.set_xlabel("time [s]")
    ax.set_ylabel("normal force [N]")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path)


def sweep_figure(rows, plot, path, columns=5):
    """``plot.y`` against ``plot.x`` over the converged rows of a sweep's table, a line per value
    of ``plot.lines`` and a panel per combination of ``plot.panels`` (a :class:`problems.studies.sweep_spec.Plot`),
    panels in the table's order, ``columns`` to a row."""
    rows = [r for r in rows if r["status"] == "converged"]
    panels = list(dict.fromkeys(tuple(r[k] for k in plot.panels) for r in rows)) or [()]
    ncols = min(columns, len(panels))
    nrows = -(-len(panels) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.2 * ncols, 2.8 * nrows), squeeze=False, sharey=True)
    for ax, panel in zip(axes.flat, panels):
        inside = [r for r in rows if tuple(r[k] for k in plot.panels) == panel]
        for line in dict.fromkeys(tuple(r[k] for k in plot.lines) for r in inside):
            points = sorted((r[plot.x], r[plot.y]) for r in inside if tuple(r[k] for k in plot.lines) == line)
            x, y = zip(*points)
            ax.plot(x, y, "o-", label=", ".join(map(str, line)) or plot.y)
        ax.set_title(", ".join(map(str, panel)), fontsize=9)
        ax.set_xlabel(plot.x, fontsize=8)
        ax.grid(True, alpha=0.3)
    for ax in axes.flat[len(panels) :]:
        ax.set_visible(False)
    for ax in axes[:, 0]:
        ax.set_ylabel(plot.y)
    if axes[0, 0].get_legend_handles_labels()[0]:  # a first panel without a finished case has nothing to name
        axes[0, 0].legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path)
