"""A model described in text, joint by joint (``liftoff info``), as Pinocchio prints its models."""

from __future__ import annotations

import math

from .model import Model


def describe(model: Model, source: str | None = None, locked: dict | None = None) -> str:
    """The model's name (and ``source``, the robot or file it was loaded from, when it differs),
    its base, ``locked`` joints and their values, its dimensions, frames and mass, then a table
    of its joints: type, slices of ``q`` and ``v``, position range, velocity and effort limits."""
    counts = {}
    for kind in model.frame_types:
        counts[kind] = counts.get(kind, 0) + 1
    lines = [f"robot    {model.name}" + (f"  ({source})" if source and source != model.name else "")]
    lines.append(f"base     {'floating (free flyer)' if model.has_free_flyer else 'fixed'}")
    if locked:
        lines.append("locked   " + ", ".join(f"{name}={value:g}" for name, value in locked.items()))
    lines += [
        f"nq, nv   {model.nq}, {model.nv}",
        f"njoints  {model.njoints}",
        f"nframes  {model.nframes}  (" + ", ".join(f"{n} {kind}" for kind, n in counts.items()) + ")",
        f"mass     {model.mass:.4f} kg",
        "",
    ]
    rows = [("#", "joint", "type", "q", "v", "position", "velocity", "effort")]
    for i, (name, kind) in enumerate(zip(model.joint_names, model.joint_types)):
        q, v = _range(int(model.idx_q[i]), int(model.nqs[i])), _range(int(model.idx_v[i]), int(model.nvs[i]))
        rows.append((str(i), name, kind, q, v, *_limits(model, i)))
    widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))]
    right = (0, 6, 7)
    for row in rows:
        cells = (cell.rjust(w) if c in right else cell.ljust(w) for c, (cell, w) in enumerate(zip(row, widths)))
        lines.append("  ".join(cells).rstrip())
    lines += ["", "limits: position in rad or m, velocity in rad/s or m/s, effort in N m or N ('-': none)"]
    return "\n".join(lines)


def _range(start: int, size: int) -> str:
    return str(start) if size == 1 else f"{start}:{start + size}"


def _number(x: float) -> str:
    return "-" if not math.isfinite(x) else f"{x:g}"


def _limits(model, i: int) -> tuple[str, str, str]:
    """Position range, velocity and effort limits of joint ``i`` as table cells."""
    kind = model.joint_types[i]
    iq, iv = int(model.idx_q[i]), int(model.idx_v[i])
    if kind in ("revolute", "prismatic"):
        position = f"[{_number(model.lower_position_limit[iq])}, {_number(model.upper_position_limit[iq])}]"
    elif kind == "free_flyer":
        t = model.upper_position_limit[0]
        position = f"xyz in [{_number(-t)}, {_number(t)}]"
    else:  # continuous: (cos, sin) on the circle
        position = "unbounded"
    nv = int(model.nvs[i])
    if nv == 1:
        return position, _number(model.velocity_limit[iv]), _number(model.effort_limit[iv])
    velocity, effort = model.velocity_limit[iv : iv + nv], model.effort_limit[iv : iv + nv]
    return (
        position,
        _number(velocity[0]) if len(set(velocity)) == 1 else " ".join(map(_number, velocity)),
        _number(effort[0]) if len(set(effort)) == 1 else " ".join(map(_number, effort)),
    )
