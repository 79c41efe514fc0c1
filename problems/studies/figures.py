"""Figures of a comparison, drawn from results files (:func:`problems.runs.load_run`):

- :func:`kkt_figure`: KKT error against iterations, one panel per gait and barrier, the
  lifted formulation solid and the non-lifted dashed (seed 004 Fig. 1), and the baselines'
  own measures (:mod:`problems.baselines`) in styles of their own;
- :func:`time_figure`: time per iteration and total time per gait, log scale (seed 004 Fig. 2);
- :func:`forces_figure`: each foot's world-frame contact force against its friction-cone
  bound ``mu/sqrt(2) f_z`` (seed 004 Fig. 4);
- :func:`mpc_figures`: a polishing MPC run (:mod:`problems.polishing_run`): the normal force
  against its target (seed 001 Fig. 2), the tool's path against the circle in the surface
  plane (Fig. 4), and the histogram of the MPC updates' wall times;
- :func:`gait_mpc_figures`: a gait MPC run (:mod:`problems.gait_mpc_run`): base velocity
  against the command, base height, feet forces against the friction cones, update times;
- :func:`sweep_figure`: a column of a sweep's table against another (:mod:`problems.sweep`);
- :func:`constrained_scaling_figure`: seed 003 Fig. 3 from the constrained scaling benchmark.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from liftoff.dynamics.spatial import quat_to_rotation
from liftoff.problems.files import atomic

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
        for j, gait in enumerate(gaits):
            ax = axes[i, j]
            ax.set_title(f"{gait}, barrier {eps:g}" if eps > 0 else f"{gait}, exact (NLP baselines)", fontsize=9)
            ax.grid(True, which="major", alpha=0.3)
            if i == len(barriers) - 1:
                ax.set_xlabel("iteration")
            if j == 0:
                ax.set_ylabel(
                    "KKT error (l2)\nFDDP, iLQR: |(Qu, gaps)|"
                    if eps > 0
                    else "Ipopt: max(inf_pr, inf_du)\nSQP: max(step, violation)"
                )
    for row in axes:  # each barrier's methods (the baselines have a row of their own)
        row[0].legend(fontsize=8)
    fig.tight_layout()
    _save(fig, path)


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
        ax.set_yscale("log")  # the methods' times span orders of magnitude
        ax.set_ylabel(label)
        ax.grid(True, axis="y", alpha=0.3)
    ax_total.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside the bars
    fig.tight_layout()
    _save(fig, path)


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
    _save(fig, path)


def mpc_figures(results, out_dir) -> list:
    """``force.png``, ``path.png`` and ``ticks.png`` of a polishing MPC results file (as read by
    :func:`problems.polishing_run.load`) in ``out_dir``; returns their paths."""
    out_dir = Path(out_dir)
    cfg, m = results["config"], results["measures"]
    t, force = results["t"], results["force"]
    fig, ax = plt.subplots(figsize=(7, 3))
    ax.plot(t, force, color="tab:blue", label="normal force")
    ax.axhline(cfg["surface"]["force"], color="k", ls="--", lw=1, label="target")
    for push in m["disturbances"]["pushes"]:
        ax.axvspan(push["start"], push["start"] + push["duration"], color="tab:red", alpha=0.2, label="push")
    ax.set(xlabel="time [s]", ylabel="force [N]", title=f"normal force along {cfg['surface']['normal']}")
    ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    paths = [out_dir / "force.png"]
    _save(fig, paths[-1])
    axis = "xyz".index(cfg["surface"]["normal"][-1])
    i, j = (k for k in range(3) if k != axis)
    tool, ref = results["tool"], results["reference"]
    fig, ax = plt.subplots(figsize=(4, 4))
    ax.plot(1e2 * ref[:, i], 1e2 * ref[:, j], "k--", lw=1, label="reference")
    ax.plot(1e2 * tool[:, i], 1e2 * tool[:, j], color="tab:blue", lw=1, label="tool")
    ax.set(xlabel=f"{'xyz'[i]} [cm]", ylabel=f"{'xyz'[j]} [cm]", title="tool in the surface plane", aspect="equal")
    ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    paths.append(out_dir / "path.png")
    _save(fig, paths[-1])
    paths.append(_ticks_figure(results, out_dir))
    return paths


def _ticks_figure(results, out_dir) -> Path:
    """``ticks.png``: the histogram of the MPC updates' wall times against the MPC period."""
    fig, ax = plt.subplots(figsize=(5, 3))
    ax.hist(results["tick_ms"][1:], bins=40, color="tab:blue")
    ax.axvline(1e3 * results["config"]["mpc"]["period"], color="k", ls="--", lw=1, label="MPC period")
    ax.set(
        xlabel="update wall time [ms]", ylabel="updates", title=f"median {results['measures']['tick_ms_median']:.2f} ms"
    )
    ax.legend(fontsize=8)
    fig.tight_layout()
    _save(fig, Path(out_dir) / "ticks.png")
    return Path(out_dir) / "ticks.png"


def gait_mpc_figures(results, out_dir) -> list:
    """``velocity.png`` (the base's forward velocity against the command), ``height.png`` (the
    base's height), ``forces.png`` (each foot's normal force and tangential force against the
    friction pyramid's bound) and ``ticks.png`` of a gait MPC results file."""
    out_dir, m, cfg = Path(out_dir), results["measures"], results["config"]
    t, q, v = results["t"], results["q"], results["v"]
    R = quat_to_rotation(q[:, 3:7].T).transpose(2, 0, 1)
    forward = np.einsum("sij,sj->si", R, v[:, :3])[:, 0]  # the base's linear velocity in the world
    fig, ax = plt.subplots(figsize=(7, 3))
    ax.plot(t, forward, color="tab:blue", lw=1, label="base")
    ax.axhline(m["command_velocity_mps"], color="k", ls="--", lw=1, label="command")
    _pushes(ax, m)
    ax.set(xlabel="time [s]", ylabel="forward velocity [m/s]")
    ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    paths = [out_dir / "velocity.png"]
    _save(fig, paths[-1])
    fig, ax = plt.subplots(figsize=(7, 3))
    ax.plot(t, q[:, 2], color="tab:blue", lw=1)
    ax.axhline(0.25, color="tab:red", ls="--", lw=1, label="fall")
    _pushes(ax, m)
    ax.set(xlabel="time [s]", ylabel="base height [m]")
    ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    paths.append(out_dir / "height.png")
    _save(fig, paths[-1])
    feet = cfg["contacts"]["feet"]
    f = results["f"].reshape(len(t), len(feet), 3)
    bound = cfg["contacts"]["friction"] / np.sqrt(2)
    fig, axes = plt.subplots(len(feet), 1, figsize=(7, 1.6 * len(feet)), sharex=True, squeeze=False)
    for i, (ax, foot) in enumerate(zip(axes[:, 0], feet)):
        ax.fill_between(t, -bound * f[:, i, 2], bound * f[:, i, 2], color="0.85", label="cone bound")
        ax.plot(t, f[:, i, 2], color="tab:blue", lw=1, label="f_z")
        ax.plot(t, f[:, i, 0], color="tab:orange", lw=1, label="f_x")
        ax.plot(t, f[:, i, 1], color="tab:green", lw=1, label="f_y")
        ax.set_ylabel(f"{foot} [N]", fontsize=8)
    axes[0, 0].legend(fontsize=7, ncol=4)
    axes[-1, 0].set_xlabel("time [s]")
    fig.tight_layout()
    paths.append(out_dir / "forces.png")
    _save(fig, paths[-1])
    paths.append(_ticks_figure(results, out_dir))
    return paths


def _pushes(ax, m):
    for push in m["disturbances"]["pushes"]:
        ax.axvspan(push["start"], push["start"] + push["duration"], color="tab:red", alpha=0.2)


def sweep_figure(rows, plot, path, columns=5):
    """``plot.y`` against ``plot.x`` over the converged rows of a sweep's table, a line per value
    of ``plot.lines`` and a panel per combination of ``plot.panels`` (a :class:`problems.sweep_spec.Plot`),
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
    axes[0, 0].legend(fontsize=8)
    fig.tight_layout()
    _save(fig, path)


def constrained_scaling_figure(result, path):
    """Seed 003 Fig. 3 from ``liftoff bench constrained --scaling``: µs per state against the
    number of links, one panel per mechanism, a line per algorithm and Pinocchio's."""
    rows = result["results"]
    mechanisms = list(dict.fromkeys(r["mechanism"] for r in rows))
    fig, axes = plt.subplots(1, len(mechanisms), figsize=(5.5 * len(mechanisms), 3.8), squeeze=False)
    for ax, mechanism in zip(axes[0], mechanisms):
        mine = [r for r in rows if r["mechanism"] == mechanism]
        n = [r["n"] for r in mine]
        for algorithm in result["algorithms"]:
            ax.loglog(n, [r["ours_us_per_state"][algorithm] for r in mine], "o-", label=algorithm)
        ax.loglog(n, [r["pinocchio_us_per_state"] for r in mine], "k--", label="Pinocchio constraintDynamics")
        ax.set_title(f"{mechanism}: constrained dynamics, B = {result['batch']}", fontsize=9)
        ax.set_xlabel("links n")
        ax.set_ylabel("µs per state")
        ax.grid(True, which="both", alpha=0.3)
    axes[0, 0].legend(fontsize=7)
    fig.tight_layout()
    _save(fig, path)


def _save(fig, path):
    """Write the figure whole (a temporary file renamed into place) and close it."""
    try:
        with atomic(path) as f:
            fig.savefig(f, format=Path(path).suffix.lstrip(".") or "png", dpi=120)
    finally:
        plt.close(fig)
