"""Figures of a closed-loop run, drawn from its results file (:func:`problems.mpc.results.load`):

- :func:`polishing_figures`: the normal force against its target (seed 001 Fig. 2), the tool's
  path against the circle in the surface plane (Fig. 4), and the update times;
- :func:`gait_figures`: the base velocity against the command, the base height, the feet's
  forces against the friction cones, and the update times.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from liftoff.dynamics.spatial import quat_to_rotation
from liftoff.problems.files import save_figure


def polishing_figures(results, out_dir) -> list:
    """``force.png``, ``path.png`` and ``ticks.png`` of a polishing MPC results file (as read by
    :func:`problems.mpc.results.load`) in ``out_dir``; returns their paths."""
    out_dir = Path(out_dir)
    cfg, m = results["config"], results["measures"]
    t, force = results["t"], results["force"]
    steps = max(int(round(cfg["mpc"]["period"] / cfg["plant"]["dt"])), 1)
    n = len(t) // steps * steps
    fig, ax = plt.subplots(figsize=(7, 3))
    ax.plot(t, force, color="tab:blue", lw=0.5, alpha=0.35, label="at each plant step")
    ax.plot(
        t[:n:steps], force[:n].reshape(-1, steps).mean(axis=1), color="tab:blue", lw=1.2, label="over each MPC period"
    )
    ax.axhline(cfg["surface"]["force"], color="k", ls="--", lw=1, label="target")
    for push in m["disturbances"]["pushes"]:
        ax.axvspan(push["start"], push["start"] + push["duration"], color="tab:red", alpha=0.2, label="push")
    normal = ", ".join(f"{x:.2f}" for x in cfg["surface"]["normal"])
    ax.set(xlabel="time [s]", ylabel="force [N]", title=f"normal force along ({normal}), {m['plant']['engine']}")
    ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    paths = [out_dir / "force.png"]
    save_figure(fig, paths[-1])
    plane = np.asarray(m["surface_plane"])  # (3, 2): the plane's axes e1, e2
    tool, ref = results["tool"] @ plane, results["reference"] @ plane
    fig, ax = plt.subplots(figsize=(4, 4))
    ax.plot(1e2 * ref[:, 0], 1e2 * ref[:, 1], "k--", lw=1, label="reference")
    ax.plot(1e2 * tool[:, 0], 1e2 * tool[:, 1], color="tab:blue", lw=1, label="tool")
    ax.set(xlabel="e1 [cm]", ylabel="e2 [cm]", title="tool in the surface plane", aspect="equal")
    ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    paths.append(out_dir / "path.png")
    save_figure(fig, paths[-1])
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
    save_figure(fig, Path(out_dir) / "ticks.png")
    return Path(out_dir) / "ticks.png"


def gait_figures(results, out_dir) -> list:
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
    save_figure(fig, paths[-1])
    fig, ax = plt.subplots(figsize=(7, 3))
    ground = m.get("ground_m", 0.0)
    ax.plot(t, q[:, 2] - ground, color="tab:blue", lw=1)
    ax.axhline(0.25, color="tab:red", ls="--", lw=1, label="fall")
    _pushes(ax, m)
    ax.set(xlabel="time [s]", ylabel="base height above the ground [m]")
    ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    paths.append(out_dir / "height.png")
    save_figure(fig, paths[-1])
    feet = cfg["contacts"]["feet"]
    f = results["contact_force"]
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
    save_figure(fig, paths[-1])
    paths.append(_ticks_figure(results, out_dir))
    return paths


def _pushes(ax, m):
    for push in m["disturbances"]["pushes"]:
        ax.axvspan(push["start"], push["start"] + push["duration"], color="tab:red", alpha=0.2)
